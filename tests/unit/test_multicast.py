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
from sim.builder import build

COPY = CycleCost(0.0, 800.0, 1.0)
HANDOFF = CycleCost(500.0, 150.0, 0.0)
BACKEND = CycleCost(1500.0, 500.0, 0.0)


class FakeVnic:
    """What the replicator needs of a vNIC: deliver, the backend price, a backend context."""

    def __init__(self, ctx=None):
        self.batches: list[list[Burst]] = []
        self.net_context = ctx

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


def _multicast_model(compose, n_vms, *extra):
    cfg = compose(["experiment=mc_default_40k", f"workload.vms={n_vms}", *extra], short=False)
    return build(cfg)


def _conservation(model):
    """Per receiver: sent == received + its own drops + the drops before replication."""
    wl = model.workload
    wl.stop_sending()
    model.env.run(until=model.env.now + 0.2)          # drain: nothing left in flight
    (stream,) = wl.streams
    own = {r.index: r.socket.socket_full + r.vnic_drops() +
           (r.member.split_drops if r.member else 0) for r in wl.receivers}
    receiver_stages = {n for n in model.stats.stages if n.startswith("vm") or "split_queue" in n}
    shared = sum(st.total_dropped_frames() for n, st in model.stats.stages.items()
                 if n not in receiver_stages)
    for r in wl.receivers:
        assert stream.sent == r.socket.received + own[r.index] + shared, r.index
        assert r.socket.lost <= stream.sent - r.socket.received
    return shared, own


def test_loss_is_conserved_per_receiver_in_default_mode(compose):
    # An expensive copy saturates the one replicating context with 4 receivers (NIC ring drops,
    # shared by all); a small socket adds each receiver's own drops.
    model = _multicast_model(compose, 4,
                             "hypervisor.vswitch.multicast.copy.per_packet_cycles=30000",
                             "workload.socket_bytes=8192")
    model.env.run(until=0.05)
    shared, own = _conservation(model)
    assert shared > 0 and any(own.values())


def test_loss_is_conserved_per_receiver_in_split_mode(compose):
    model = _multicast_model(compose, 3, "hypervisor.vswitch.multicast.split_rx_mode=true",
                             "hypervisor.vswitch.multicast.copy.per_packet_cycles=80000",
                             "hypervisor.vswitch.multicast.split_queue_packets=16")
    model.env.run(until=0.05)
    _, own = _conservation(model)
    assert all(r.member.split_drops > 0 for r in model.workload.receivers)


def test_split_mode_moves_the_knee(compose, run_one):
    """The mechanism of MC-default-40k / MC-split-40k, scaled down: with copies that cost ~21K
    cycles, one context saturates near 3 receivers at 40K/s; split across the members'
    contexts, 6 receivers see no loss."""
    over = ["hypervisor.vswitch.multicast.copy.per_packet_cycles=20000", "workload.vms=6",
            "run.warmup_s=0.03", "run.measure_s=0.05"]
    _, default, _ = run_one(compose(["experiment=mc_default_40k", *over], short=False))
    _, split, _ = run_one(compose(["experiment=mc_split_40k", *over], short=False))
    assert default["multicast_loss_ratio"] > 0.1
    assert split["multicast_loss_ratio"] == 0.0
    assert split["multicast_received_pps"] == pytest.approx(6 * 40000, rel=0.02)


def test_sender_bursts_carry_the_packets_due(compose):
    model = _multicast_model(compose, 1, "workload.start_jitter_us=0")
    model.env.run(until=0.01 + 1e-9)                  # 100 bursts of 4 at 40K/s
    (stream,) = model.workload.streams
    assert stream.sent == 400


def test_loss_ratio_counts_a_socket_drop_once(compose, run_one):
    """A datagram the socket drops reached the stack but was not delivered: the host-wide
    loss_ratio (drops / (drops + delivered)) must agree with multicast_loss_ratio."""
    cfg = compose(["workload=udp_multicast", "workload.socket_bytes=1448", "workload.vms=2",
                   "run.warmup_s=0.02", "run.measure_s=0.05"], short=False)
    _, summary, tables = run_one(cfg)
    assert tables["multicast"]["drops_socket_full"].sum() > 0
    assert summary["multicast_loss_ratio"] > 0.5
    assert summary["loss_ratio"] == pytest.approx(summary["multicast_loss_ratio"], abs=0.01)


def test_split_mode_counts_only_the_copies_its_queue_accepts(compose, run_one):
    """copies_per_s is what reached each member: received + the socket's drops, not offered."""
    cfg = compose(["experiment=mc_split_40k", "workload.vms=2", "workload.socket_bytes=4608",
                   "hypervisor.vswitch.multicast.split_queue_packets=1",
                   "run.warmup_s=0.02", "run.measure_s=0.05"], short=False)
    _, _, tables = run_one(cfg)
    mc = tables["multicast"]
    assert (mc["drops_split_queue_full"] > 0).all() and (mc["drops_vnic_rx_ring_full"] == 0).all()
    window = 0.05
    reached = (mc["received_packets"] + mc["drops_socket_full"]) / window
    assert mc["copies_per_s"].to_numpy() == pytest.approx(reached.to_numpy(), rel=0.01, abs=100)
