"""models.nic.NicPort: coalesced RX with NAPI re-polling, round-robin TX queues, ring drops.

RX: frames wait in the ring until the coalescing timer fires; the handler context pays the
owner's cost, then delivers the batch and polls again before re-enabling the interrupt, so
frames that arrived meanwhile are taken without a new interrupt. TX: one burst per non-empty
queue in turn, each serialised at line rate. Exact (event, env.now) sequences.
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
                       coalescing=CoalescingParams(timer_us=10, max_frames=64), **nic)
    return NicPort(env, "p", params, Stats())


def handler(env):
    core = Core(env, 0, 0, CpuParams(sockets=1, cores_per_socket=1, clock_hz=1e9))
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
