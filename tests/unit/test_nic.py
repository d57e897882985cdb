"""models.nic.NicPort: coalesced RX with NAPI re-polling, round-robin TX queues, ring drops.

RX: frames wait in the ring until the coalescing timer fires; the handler context pays the
owner's cost, then delivers the batch and polls again before re-enabling the interrupt, so
frames that arrived meanwhile are taken without a new interrupt. TX: one burst per non-empty
queue in turn, each serialised at line rate. Exact (event, env.now) sequences.
Rings here count packets (``tx_desc_per_packet=0``); ixgbe's descriptors: test_tx_descriptors.
"""
import numpy as np
import pytest
import simpy

from models.base import DATA, Burst, Stats
from models.coalescing import CoalescingParams
from models.cpu import Context, Core, CpuParams
from models.nic import NicParams, NicPort
from models.wire import LinkParams

US = 1e-6
T_FRAME_US = 1.2304  # a 1500-byte frame at 10 Gbps


def frame(src=0, frames=1, packets=None, flow=0):
    return Burst(DATA, flow, frames * 1448, frames, frames if packets is None else packets, 52,
                 1448, src=src)


def port(env, **nic):
    params = NicParams(link=LinkParams(line_rate_gbps=10.0, mtu_bytes=1500, propagation_ns=0.0),
                       coalescing=CoalescingParams(timer_us=10, max_frames=64),
                       **{"tx_desc_per_packet": 0, **nic})
    return NicPort(env, "p", params, Stats())


def handler(env):
    core = Core(env, 0, 0, CpuParams(sockets=1, cores_per_socket=1, clock_hz=1e9,
                                      context_switch_cycles=0.0, jitter_cv=0.0))
    return Context(env, "irq", core, rng=np.random.default_rng())


def test_rx_interrupt_after_the_timer_and_napi_repoll():
    env = simpy.Environment()
    nic = port(env)
    log = []
    nic.wire_rx(handler(env), lambda batch, irq: 1000.0 * (2 if irq else 1),    # 2 us / 1 us
                lambda batch: log.append((round(env.now / US, 6), sum(b.frames for b in batch))))

    def arrivals():
        for t_us, n in ((0, 1), (3, 2), (11, 4), (30, 1)):
            yield env.timeout(t_us * US - env.now)
            nic.receive(frame(frames=n))
    env.process(arrivals())
    env.run(until=100 * US)
    # 0: arms the timer; 10: interrupt takes 3 frames (2 us); 11: arrives while polling;
    # 12: delivered, re-poll takes 4 (1 us, no interrupt); 30: timer again -> 40 + 2.
    assert log == [(12.0, 3), (13.0, 4), (42.0, 1)]
    assert nic.interrupts == 2
    assert nic.rx_frames == 8 and nic.rx_delivered_frames == 8


def test_rx_ring_full_drops_frames():
    env = simpy.Environment()
    nic = port(env, rx_ring_slots=4)
    nic.wire_rx(handler(env), lambda b, i: 0.0, lambda b: None)
    nic.receive(frame(frames=6))
    st = nic.rx_queues[0].ring.stats
    assert st.dropped_frames == {"rx_ring_full": 2}
    env.run(until=100 * US)
    assert st.departed_frames == 4 and st.conservation_error() == (0, 0)


def test_tx_serialises_and_serves_queues_round_robin():
    env = simpy.Environment()
    nic = port(env, tx_queues=2)
    log = []
    nic.tx_link.deliver = lambda b: log.append((round(env.now / US, 4), b.src))
    for src in (0, 0, 0, 1, 1):
        nic.send(frame(src=src))
    env.run(until=100 * US)
    order = [src for _, src in log]
    assert order == [0, 1, 0, 1, 0]
    assert [t for t, _ in log] == [pytest.approx(T_FRAME_US * k, abs=1e-4) for k in range(1, 6)]
    assert nic.tx_frames == 5 and nic.tx_wire_bytes == 5 * 1538


def test_tx_ring_counts_a_tso_segment_as_one_slot():
    env = simpy.Environment()
    nic = port(env, tx_ring_slots=2)
    assert nic.send(frame(frames=45, packets=1)) is not None
    assert nic.send(frame(frames=45, packets=1)) is not None
    assert nic.send(frame(frames=45, packets=1)) is None    # third TSO segment: ring full
    env.run(until=1e-3)
    assert nic.tx_frames == 90 and nic.tx_packets == 2


def test_hardware_lro_merges_after_the_ring_admitted_frames_one_by_one():
    """A 45-frame TSO train into a 10-slot ring: 10 frames are admitted (was: the 45-frame
    aggregate was dropped whole), and the handler gets them merged (one aggregate)."""
    env = simpy.Environment()
    p = port(env, lro=True, rx_ring_slots=10)
    got = []
    p.wire_rx(handler(env), lambda batch, irq: 100.0, got.extend)
    p.receive(frame(frames=45))
    env.run(until=1e-3)
    assert [(b.frames, b.packets) for b in got] == [(10, 1)]
    assert p.rx_queues[0].ring.stats.dropped_frames == {"rx_ring_full": 35}


@pytest.mark.parametrize("tunnelled, packets", [(False, 10), (True, 1)])
def test_hardware_lro_leaves_vxlan_frames_alone_unless_it_parses_the_tunnel(tunnelled, packets):
    env = simpy.Environment()
    p = port(env, lro=True, lro_tunnelled=tunnelled)
    got = []
    p.wire_rx(handler(env), lambda batch, irq: 100.0, got.extend)
    p.receive(frame(frames=10)._copy(header_bytes=102, encap_bytes=50))
    env.run(until=1e-3)
    assert [(b.frames, b.packets) for b in got] == [(10, packets)]


# -- the transmit path in virtual time ------------------------------------------------------
def _run_counting(env, until=None) -> int:
    """Process events (up to ``until``), returning how many."""
    n = 0
    while env.peek() < (float("inf") if until is None else until):
        env.step()
        n += 1
    return n


def test_a_port_starts_no_process():
    env = simpy.Environment()
    port(env)
    assert len(env._queue) == 0   # nothing scheduled until a burst is posted


def test_tx_slot_is_freed_when_the_last_bit_leaves_and_the_driver_refills_then():
    """on_space runs at the end of serialisation (k x 1.2304 us), not at arrival (+50 ns);
    the frames arrive propagation_ns later."""
    env = simpy.Environment()
    params = NicParams(link=LinkParams(line_rate_gbps=10.0, mtu_bytes=1500, propagation_ns=50.0),
                       tx_ring_slots=2, tx_desc_per_packet=0)
    nic = NicPort(env, "p", params, Stats())
    freed, arrived = [], []
    todo = [frame() for _ in range(3)]

    def refill():
        freed.append((round(env.now / US, 4), nic.tx_queues[0].free))
        if todo:
            assert nic.send(todo.pop()) is not None
    nic.on_tx_space(refill)
    nic.tx_link.deliver = lambda b: arrived.append(round(env.now / US, 4))
    assert nic.send(frame()) is not None and nic.send(frame()) is not None
    assert nic.send(frame()) is None          # two slots: the third is dropped (tx_ring_full)
    env.run()
    assert freed == [(round(T_FRAME_US * k, 4), 1 if k < 5 else 2) for k in range(1, 6)]
    assert arrived == [round(T_FRAME_US * k + 0.05, 4) for k in range(1, 6)]
    st = nic.tx_queues[0].stats
    assert st.dropped_frames == {"tx_ring_full": 1} and st.conservation_error() == (0, 0)
    assert (st.queued_frames, nic.tx_frames) == (0, 5)


def test_tx_counters_are_exact_between_events():
    """Without on_space callbacks a burst's departure is settled lazily; the counters still
    count exactly the bursts whose last bit has left, and the wire bytes the share of the
    burst still leaving that its wire time has sent."""
    env = simpy.Environment()
    nic = port(env)
    seg = frame(frames=45, packets=1)
    nic.send(seg)
    nic.send(seg)
    wire = 45 * T_FRAME_US * US
    env.run(until=1.5 * wire)
    assert (nic.tx_packets, nic.tx_frames) == (1, 45)
    assert nic.tx_wire_bytes == pytest.approx(1.5 * 45 * 1538, rel=1e-9)
    env.run(until=3 * wire)
    assert (nic.tx_packets, nic.tx_frames, nic.tx_wire_bytes) == (2, 90, 90 * 1538)
    nic.send(frame())                       # a post settles the departures: slots freed
    st = nic.tx_queues[0].stats
    assert (st.departed_frames, st.queued_frames, nic.tx_queues[0].used) == (90, 1, 1)


@pytest.mark.parametrize("callbacks, events_per_burst", [(False, 1), (True, 2)])
def test_one_link_event_per_burst_and_a_departure_event_only_for_a_refilling_driver(
        callbacks, events_per_burst):
    """N bursts posted to an idle port (ideal bus, one queue): N arrival events; a departure
    event per burst only when on_space callbacks are registered (they run at that instant)."""
    env = simpy.Environment()
    nic = port(env, tx_ring_slots=100)
    got = []
    nic.tx_link.deliver = got.append
    if callbacks:
        nic.on_tx_space(lambda: None)
    for k in range(20):
        nic.send(Burst(DATA, 0, 45 * 1448, 45, 1, 52, 1448, seq=k))
    assert _run_counting(env) == 20 * events_per_burst
    assert [b.seq for b in got] == list(range(20)) and nic.tx_packets == 20


def test_pcie_backlog_costs_at_most_a_departure_event_per_burst():
    """Twenty TSO segments behind a 160KB TX FIFO: each waits for the room a departure frees;
    no process, no zero-delay hand-offs: at most arrival + departure per burst."""
    from models.pcie import PcieLink, PcieParams
    env = simpy.Environment()
    params = NicParams(link=LinkParams(line_rate_gbps=10.0, propagation_ns=50.0),
                       tx_ring_slots=100, tx_desc_per_packet=0)
    nic = NicPort(env, "p", params, Stats(), pcie=PcieLink(env, "card", PcieParams(gen=2)))
    for k in range(20):
        nic.send(frame(frames=45, packets=1))
    events = _run_counting(env)
    assert 20 < events <= 40 and nic.tx_packets == 20


def test_tx_line_rate_on_an_ideal_bus():
    """Back-to-back TSO segments leave at exactly the line rate (wire bytes, framing included)."""
    env = simpy.Environment()
    nic = port(env, tx_ring_slots=1000)
    last = []
    nic.tx_link.deliver = lambda b: last.append(env.now)
    for _ in range(100):
        nic.send(frame(frames=45, packets=1))
    env.run()
    assert nic.tx_wire_bytes == 100 * 45 * 1538
    assert units_gbps(nic.tx_wire_bytes, last[-1]) == pytest.approx(10.0, rel=1e-9)


def units_gbps(n_bytes, seconds):
    from models import units
    return units.bytes_per_s_to_gbps(n_bytes / seconds)


def test_conservation_at_every_stage_port_to_port_with_drops():
    """Two ports cabled together, one behind PCIe with small rings and FIFOs, traffic both
    ways: every stage conserves frames and bytes, the cable delivers what it carried, and each
    frame that reached a port was delivered up, is held, or was dropped there."""
    from models.pcie import PcieLink, PcieParams
    env = simpy.Environment()
    stats = Stats()
    link = LinkParams(line_rate_gbps=10.0, propagation_ns=50.0)
    host = NicPort(env, "host", NicParams(link=link, tx_queues=2, rx_queues=2, rx_sort="rss",
                                          tx_ring_slots=3, tx_desc_per_packet=0,
                                          rx_ring_slots=40, rx_fifo_bytes=8192,
                                          tx_fifo_bytes=4096),
                   stats, pcie=PcieLink(env, "card", PcieParams(gen=1, lanes=1)))
    peer = NicPort(env, "peer", NicParams(link=link, rx_ring_slots=30, tx_desc_per_packet=0),
                   stats)
    host.tx_link.deliver, peer.tx_link.deliver = peer.receive, host.receive
    host.wire_rx(handler(env), lambda b, i: 3000.0, lambda b: None)
    core = Core(env, 1, 0, CpuParams(sockets=1, cores_per_socket=2, clock_hz=1e9))
    peer.wire_rx(Context(env, "peer.irq", core, rng=np.random.default_rng(1)),
                 lambda b, i: 5000.0, lambda b: None)

    def traffic():
        for k in range(300):
            host.send(frame(src=k % 3, frames=1 + k % 45, packets=1, flow=k % 7))
            peer.send(frame(frames=1 + k % 20, flow=k % 5))
            yield env.timeout(2 * US)
    env.process(traffic())
    env.run(until=0.01)
    errors = {n: st.conservation_error() for n, st in stats.stages.items()}
    assert errors == {n: (0, 0) for n in stats.stages}
    dropped = {n: st.total_dropped_frames() for n, st in stats.stages.items()
               if st.total_dropped_frames()}
    assert {"host.txq0.tx_ring", "peer.rxq0.rx_ring"} <= set(dropped), dropped
    for src, dst in ((host, peer), (peer, host)):
        assert src.tx_link.stats.departed_frames == dst.rx_frames
        assert src.tx_link.stats.departed_bytes == dst.rx_wire_bytes
        held = sum(st.queued_frames + st.total_dropped_frames()
                   for n, st in stats.stages.items() if n.startswith(dst.name + ".rx"))
        assert dst.rx_frames == dst.rx_delivered_frames + held
    assert host.tx_frames == host.tx_link.stats.arrived_frames   # all have left by now
