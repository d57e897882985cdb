"""Multicast: replication counts in one context vs split (models.replication), and loss
accounting of the udp_multicast workload (models.workloads.multicast) end to end.

::

    peer --wire--> NIC ring --> RX vector: driver + vswitch + copies (default) / hand-offs (split)
                                  |--> vNIC ring --> vCPU --> socket --> app      (x receivers)

Conservation, per receiver, once the sender has stopped and the pipeline drained:
sent = received + drops before replication (shared by all) + drops after it (its own).
"""
import numpy as np
import pytest
import simpy

from models.base import UDP, Burst, CycleCost, Stats
from models.cpu import Context, Cpu, CpuParams
from models.replication import ReplicationParams, Replicator, group_dst, is_group

COPY = CycleCost(0.0, 800.0, 1.0)
HANDOFF = CycleCost(500.0, 150.0, 0.0)
BACKEND = CycleCost(1500.0, 500.0, 0.0)


class FakeVnic:
    """What the replicator needs of a vNIC: deliver, the backend price, a backend context."""

    def __init__(self, ctx=None):
        self.batches: list[list[Burst]] = []
        self.net_context = ctx
        self.rx_data_nodes: dict[int, object] = {}  # flow -> node where its copy sits

    def deliver(self, batch):
        self.batches.append(batch)

    def rx_backend_cycles(self, packets, n_bytes):
        return BACKEND.cycles(packets, n_bytes)


def datagrams(n, seq=0, g=0, size=800):
    return Burst(UDP, 1 << 20, n * size, n, n, 28, size, seq=seq, dst=group_dst(g))


def test_group_ids_sit_below_the_peer():
    assert group_dst(0) == -2 and group_dst(3) == -5
    assert is_group(-2) and is_group(-9) and not is_group(-1) and not is_group(0)


def test_default_mode_makes_every_copy_in_the_receiving_context():
    stats = Stats()
    rep = Replicator("vs.mcast", ReplicationParams(copy=COPY), stats)
    vnics = [FakeVnic() for _ in range(5)]
    for port, v in enumerate(vnics):
        rep.join(group_dst(0), port, v)
    batch = [datagrams(4, seq=0), datagrams(3, seq=4)]
    # cost charged in the receiving context: per member, copy + backend for all 7 packets
    per_member = COPY.cycles(7, 7 * 800) + BACKEND.cycles(7, 7 * 800)
    assert sum(rep.terms(batch).values()) == pytest.approx(5 * per_member)
    assert rep.terms(batch)["backend_rx"] == pytest.approx(5 * BACKEND.cycles(7, 7 * 800))
    rep.deliver(batch)
    assert rep.copies == 5 * 7                      # copies = receivers x packets
    for port, v in enumerate(vnics):                # one delivery per receiver per pass
        assert len(v.batches) == 1
        assert [(b.seq, b.packets, b.dst) for b in v.batches[0]] == [(0, 4, port), (4, 3, port)]


def test_split_mode_hands_off_in_one_context_and_copies_in_each_members_own():
    env, stats = simpy.Environment(), Stats()
    cpu = Cpu(env, CpuParams(1, 4, 1e9, context_switch_cycles=0.0, jitter_cv=0.0))
    ctxs = [Context(env, f"vm{i}.net", cpu.core(i), rng=np.random.default_rng(0))
            for i in range(3)]
    rep = Replicator("vs.mcast", ReplicationParams(split_rx_mode=True, copy=COPY,
                                                   handoff=HANDOFF), stats)
    vnics = [FakeVnic(c) for c in ctxs]
    for port, v in enumerate(vnics):
        rep.join(group_dst(0), port, v)
    batch = [datagrams(4)]
    assert rep.terms(batch) == pytest.approx({"replication": 3 * HANDOFF.cycles(4, 0)})
    rep.deliver(batch)
    assert rep.copies == 3 * 4
    assert all(v.batches == [] for v in vnics)      # the copies wait for their own contexts
    env.run(until=1e-3)
    copy_s = (COPY.cycles(4, 3200) + BACKEND.cycles(4, 3200)) / 1e9
    for c, v in zip(ctxs, vnics):
        assert c.tasks == 1 and c.busy_s == pytest.approx(copy_s)
        assert [b.packets for b in v.batches[0]] == [4]


def test_split_queue_drops_what_does_not_fit():
    env, stats = simpy.Environment(), Stats()
    cpu = Cpu(env, CpuParams(1, 1, 1e9, context_switch_cycles=0.0, jitter_cv=0.0))
    ctx = Context(env, "vm0.net", cpu.core(0), rng=np.random.default_rng(0))
    rep = Replicator("vs.mcast", ReplicationParams(split_rx_mode=True, split_queue_packets=5),
                     stats)
    m = rep.join(group_dst(0), 0, FakeVnic(ctx))
    # Ring semantics: the 4 being copied keep their slots until the copy is done.
    rep.deliver([datagrams(4)])         # taken by the member's context, 4 slots held
    rep.deliver([datagrams(4, seq=4)])  # 1 fits, 3 dropped
    rep.deliver([datagrams(4, seq=8)])  # none fits
    assert m.split_drops == 7
    env.run(until=1e-3)
    assert m.queue.used == 0 and m.queue.stats.conservation_error() == (0, 0)
