"""Linux's delayed-ACK rule (``guest.stack.ack_rule: rcv_mss``, RHEL6).

Linux 2.6.32 ACKs at once when more than ``rcv_mss`` bytes arrived since its last ACK
(``__tcp_ack_snd_check``); ``rcv_mss`` follows the length of the segments received
(``tcp_measure_rcv_mss``: ``gso_size`` if set, else the skb's length). The vmxnet3 driver of
that era hands up an LRO aggregate without ``gso_size``, so ``rcv_mss`` grows to an
aggregate's length and the guest ACKs about every second aggregate (001: ~240K packets/s into
the guests, ~120K ACKs/s). PSH does not make an ACK; a reader that empties the queue sends a
pending ACK after a short segment unless the connection is in pingpong mode (``tcp_cleanup_rbuf``).
A device that hands aggregates up with ``gso_size`` (virtio-net: ``rx_gso_size``) keeps
``rcv_mss`` at one MSS, and every aggregate is ACKed.
The ``frames`` rule (one ACK per aggregate, at once for PSH) is the other stacks'.

::

    peer --(aggregates of 3-4 frames)--> receiver --ACK every ~2nd--> peer
"""
import pytest
import simpy

from models.base import DATA, Burst
from models.tcp import TcpParams, TcpReceiver

MSS = 1448


def _receiver(rule: str, acks: list, gso: bool = False) -> tuple[simpy.Environment, TcpReceiver]:
    env = simpy.Environment()
    r = TcpReceiver(env, 0, TcpParams(), mss_bytes=MSS, rcvbuf_bytes=1 << 20, src=0, dst=-1,
                    emit=acks.append, ack_rule=rule, rx_gso_size=gso)
    return env, r


def _feed(r: TcpReceiver, bursts: list[list[int]], psh: bool) -> int:
    """Deliver LRO bursts (each a list of its aggregates' frame counts; the model splits a
    burst's frames evenly, the longer aggregates first), reading everything after each;
    returns the number of aggregates."""
    seq = 0
    for group in bursts:
        frames = sum(group)
        r.on_data(Burst(DATA, 0, frames * MSS, frames, len(group), 52, MSS, seq=seq, psh=psh))
        seq += frames * MSS
        r.read(r.readable)
    return sum(len(g) for g in bursts)


def _acks(rule: str, psh: bool, pingpong: bool,
          bursts: list[list[int]] = [[4, 3, 3]] * 100, gso: bool = False) -> tuple[int, int]:
    acks: list = []
    env, r = _receiver(rule, acks, gso)
    r.interactive = pingpong
    n = _feed(r, bursts, psh=psh)
    return sum(a.packets for a in acks), n


def test_linux_acks_every_second_aggregate_without_gso_size():
    """Aggregates of 3-4 frames, three per delivery: the ``frames`` rule ACKs each aggregate
    (pushed); Linux's about every second one (rcv_mss = the longest aggregate), PSH or not,
    in pingpong mode (a keep-alive server)."""
    frames_acks, n = _acks("frames", psh=True, pingpong=False)
    assert frames_acks >= n
    for psh in (True, False):
        linux_acks, n = _acks("rcv_mss", psh=psh, pingpong=True)
        assert 0.4 * n <= linux_acks <= 0.6 * n


def test_linux_acks_every_aggregate_that_comes_with_its_gso_size():
    """A device that hands aggregates up with gso_size (virtio-net): rcv_mss stays one MSS,
    so every aggregate of more than one MSS is ACKed on arrival, in pingpong mode too; single
    frames still every second one."""
    for psh in (True, False):
        acks, n = _acks("rcv_mss", psh=psh, pingpong=True, gso=True)
        assert acks == n
    env, r = _receiver("rcv_mss", [], gso=True)
    _feed(r, [[4, 3, 3]] * 3, psh=False)
    assert r.rcv_mss == MSS
    singles, n = _acks("rcv_mss", psh=False, pingpong=True, bursts=[[1]] * 100, gso=True)
    assert 0.4 * n <= singles <= 0.6 * n


def test_linux_reader_acks_a_short_leftover_outside_pingpong():
    """Outside pingpong mode (a netperf receiver), a read that empties the queue after a
    segment shorter than rcv_mss sends the pending ACK (tcp_cleanup_rbuf, ICSK_ACK_PUSHED):
    more ACKs than in pingpong mode, never more than one per aggregate."""
    bursts = [[4, 4], [2]] * 100   # a short aggregate alone, then read
    bulk, n = _acks("rcv_mss", psh=False, pingpong=False, bursts=bursts)
    keep_alive, _ = _acks("rcv_mss", psh=False, pingpong=True, bursts=bursts)
    assert keep_alive < bulk <= n


def test_rcv_mss_follows_the_segments():
    """rcv_mss rises to the longest segment and falls to a shorter length seen twice in a
    row (tcp_measure_rcv_mss)."""
    env, r = _receiver("rcv_mss", [])
    assert r.rcv_mss == 536                    # tcp_initialize_rcv_mss
    _feed(r, [[4]], psh=False)
    assert r.rcv_mss == 4 * MSS
    _feed_from = r.rcv_nxt
    r.on_data(Burst(DATA, 0, 2 * MSS, 2, 1, 52, MSS, seq=_feed_from))
    assert r.rcv_mss == 4 * MSS                # one shorter segment: kept
    r.on_data(Burst(DATA, 0, 2 * MSS, 2, 1, 52, MSS, seq=_feed_from + 2 * MSS))
    assert r.rcv_mss == 2 * MSS                # the same shorter length twice: lowered


def test_g80_guests_ack_about_every_second_aggregate(compose):
    """End to end (one g80_receive port, 20 ms after 30): with RHEL6's rule the VMs send about
    one ACK per two packets they take in; with the ``frames`` rule more than one per packet
    (each aggregate, plus a window update per read)."""
    from sim.builder import build

    def ratio(rule: str) -> float:
        cfg = compose(["experiment=g80_receive", "host.nic_ports=1",
                       "workload.sessions_per_vm=20", f"guest.stack.ack_rule={rule}"])
        model = build(cfg, 0)
        model.env.run(until=0.03)
        vms = model.vms
        a0 = sum(r.acks_sent for vm in vms for r in vm.receivers.values())
        p0 = sum(vm.vnic.counters()["rx_packets"] for vm in vms)
        model.env.run(until=0.05)
        acks = sum(r.acks_sent for vm in vms for r in vm.receivers.values()) - a0
        packets = sum(vm.vnic.counters()["rx_packets"] for vm in vms) - p0
        return acks / packets

    assert 0.4 <= ratio("rcv_mss") <= 0.65
    assert ratio("frames") >= 0.9


def test_fluid_window_of_one_aggregate_goes_round_as_its_whole_mss():
    """A 64KB window through KVM to an LRO peer (kvm_vhost_net_tx, one session): under
    Linux's rule the peer does not ACK its one 45-frame aggregate on arrival (65160 bytes,
    not more than rcv_mss), only by the read's window update, which frees the flight and
    reopens the window together: the sender sends 45 MSS and Nagle holds the 376-byte rest,
    every round. The fluid engine goes round with that window, one ACK per segment (DES,
    0.05 s: 2.38 Gbps, 4560 ACKs and 4560 segments/s; fluid 2.33); under the ``frames`` rule
    the peer ACKs on arrival and the window goes round whole in two pieces."""
    from sim import fluid
    from sim.compose import compose_checked

    def flow(rule: str):
        cfg = compose_checked("configs", [
            "experiment=kvm_vhost_net_tx", "workload.sessions_per_vm=1",
            "workload.socket_bytes=65536", f"peer.stack.ack_rule={rule}"])
        net = fluid.describe_network(cfg)
        fill, st, _ = fluid._solve_net(net)
        q = st.quantities[0]
        return net.flows[0], fill.rates[0], q

    fl, rate, q = flow("rcv_mss")
    assert (fl.window, fl.seg, fl.chunk) == (45 * MSS, 45 * MSS, 45 * MSS)
    assert q[fluid.A] == pytest.approx(q[fluid.S])   # one ACK per segment
    assert q[fluid.VIA] == pytest.approx(q[fluid.S])  # each wakes the sender
    assert 2.2e9 <= rate * 8 <= 2.5e9
    fr, rate_frames, _ = flow("frames")
    assert fr.window == 65536 and fr.chunk == 65536 / 2 and rate_frames * 8 > 2.6e9


@pytest.mark.parametrize("gso", [True, False])
def test_a_virtio_guest_acks_each_aggregate_in_both_engines(compose, monkeypatch, gso):
    """One virtio-net RHEL6 receiver (hw_25g_rx, one session): virtio hands the guest its
    aggregates with gso_size, so the DES guest ACKs about one per aggregate and the fluid
    engine prices one ACK per stack packet; without it (the flag off: vmxnet3's way) both
    fall to about one per two."""
    from models.vnic.devices import VirtioNet
    from sim import fluid
    from sim.builder import build
    monkeypatch.setattr(VirtioNet, "rx_gso_size", gso)
    cfg = compose(["experiment=hw_25g_rx", "workload.sessions_per_vm=1"])
    model = build(cfg, 0)
    model.env.run(until=0.02)
    vm = model.vms[0]
    a0, p0 = sum(r.acks_sent for r in vm.receivers.values()), vm.vnic.counters()["rx_packets"]
    model.env.run(until=0.04)
    des = (sum(r.acks_sent for r in vm.receivers.values()) - a0) / (
        vm.vnic.counters()["rx_packets"] - p0)
    fl = fluid.describe_network(cfg).flows[0]
    fl_ratio = fl.per_g[fluid.A_DATA] / fl.per_g[fluid.STACK_PK]
    if gso:
        assert des >= 0.85 and fl_ratio == pytest.approx(1.0)
    else:
        assert des <= 0.65 and fl_ratio == pytest.approx(0.5)
