"""models.pcie: link bandwidth per generation and width, TLP overhead, descriptor traffic, the
RX FIFO that overflows when PCIe cannot keep up, TX fetch overlapping the wire, and claim
G80-pcie (a dual-port 10GbE card needs at least Gen2 x8).

PCIe bandwidth of one direction = GT/s per lane x lanes x encoding (8b/10b for gens 1-2,
128b/130b for gens 3-5): Gen1 x8 = 16 Gbps, Gen2 x8 = 32 Gbps, Gen3 x8 = 63.0 Gbps; data in
256-byte TLPs with 24 bytes of overhead each get 256/280 of that.
"""
import numpy as np
import pytest
import simpy

from models import units
from models.base import ACK, DATA, Burst, Stats
from models.coalescing import CoalescingParams
from models.cpu import Context, Core, CpuParams
from models.nic import NicParams, NicPort
from models.pcie import PcieChannel, PcieLink, PcieParams, rx_dma_bytes, tx_dma_bytes
from models.wire import LinkParams

MSS, HDR = 1448, 52


@pytest.mark.parametrize("gen, lanes, gbps", [
    (1, 1, 2.0), (1, 8, 16.0), (2, 8, 32.0), (2, 4, 16.0), (3, 8, 8 * 8 * 128 / 130),
    (3, 16, 8 * 16 * 128 / 130), (4, 8, 16 * 8 * 128 / 130), (5, 16, 32 * 16 * 128 / 130)])
def test_link_bandwidth_per_generation_and_width(gen, lanes, gbps):
    assert units.pcie_link_gbps(gen, lanes) == pytest.approx(gbps)
    assert PcieParams(gen=gen, lanes=lanes).link_gbps == pytest.approx(gbps)


def test_gen3_x8_is_about_63_gbps_and_doubles_gen2_x8():
    assert units.pcie_link_gbps(3, 8) == pytest.approx(63.015, abs=1e-3)
    assert 1.9 < units.pcie_link_gbps(3, 8) / units.pcie_link_gbps(2, 8) < 2.0  # 001: "doubles"


def test_tlp_efficiency_256_of_280():
    p = PcieParams(gen=2, lanes=8, max_payload_bytes=256, tlp_overhead_bytes=24)
    assert p.data_gbps == pytest.approx(32 * 256 / 280)
    assert PcieParams(gen=2, lanes=8, max_payload_bytes=128).data_gbps == \
        pytest.approx(32 * 128 / 152)


def test_tlp_bytes_cut_at_max_payload():
    assert units.tlp_bytes(0, 256, 24) == 0
    assert units.tlp_bytes(256, 256, 24) == 280
    assert units.tlp_bytes(257, 256, 24) == 257 + 48
    assert units.tlp_bytes(1514, 256, 24) == 1514 + 6 * 24


def test_pcix_is_one_half_duplex_bus():
    p = PcieParams(kind="pcix", pcix_rate_mtps=266.0)
    assert p.link_gbps == pytest.approx(266e6 * 64 / 1e9)
    link = PcieLink(simpy.Environment(), "card", p)
    assert link.up is link.down
    assert PcieLink(simpy.Environment(), "card", PcieParams()).up is not \
        PcieLink(simpy.Environment(), "card", PcieParams()).down


@pytest.mark.parametrize("key, value", [("gen", 6), ("lanes", 3), ("kind", "pci"),
                                        ("max_payload_bytes", 300), ("pcix_rate_mtps", 200.0)])
def test_bad_parameters_name_the_key(key, value):
    with pytest.raises(ValueError, match=f"{key}="):
        PcieParams(**{key: value})


def test_channel_is_a_fifo_server_in_virtual_time():
    env = simpy.Environment()
    ch = PcieChannel(env, "up", rate_gbps=8.0)  # 1 byte per ns
    assert ch.book(1000) == (0.0, pytest.approx(1e-6))
    assert ch.book(500) == (pytest.approx(1e-6), pytest.approx(1.5e-6))  # queued behind
    env.run(until=1.2e-6)
    assert ch.busy_time_s() == pytest.approx(1.2e-6)  # booked work beyond now is not done yet
    env.run(until=10e-6)
    assert ch.busy_time_s() == pytest.approx(1.5e-6)
    # bytes that were arriving since 9 us may have been moving since then: the channel was idle
    assert ch.book(100, not_before_s=9e-6) == (pytest.approx(9e-6), pytest.approx(9.1e-6))
    assert ch.busy_time_s() == pytest.approx(1.6e-6)
    assert ch.link_bytes == 1600


def test_descriptor_and_doorbell_traffic_per_burst():
    link = PcieLink(simpy.Environment(), "card", PcieParams(gen=2, lanes=8))
    tso = Burst(DATA, 0, 45 * MSS, 45, 1, HDR, MSS)     # one 64KB-class TSO segment
    data = 45 * MSS + (HDR + 14)                          # read once: payload + one header
    assert tx_dma_bytes(tso) == data
    down, up = link.tx_traffic(tso)
    assert down == units.tlp_bytes(data, 256, 24) + 16 + 24 + 4 + 24   # data, 1 desc, doorbell
    assert up == -(-data // 512) * 24 + 24 + (16 + 24)    # read requests, desc request, write-back
    frames = Burst(DATA, 0, 4 * MSS, 4, 4, HDR, MSS)    # 4 full frames received
    assert rx_dma_bytes(frames) == 4 * 1514
    up, down = link.rx_traffic(frames)
    assert up == 4 * (1514 + 6 * 24) + (64 + 24) + 24    # frames, write-backs, desc request
    assert down == (64 + 24) + (4 + 24)                  # descriptor fetch, doorbell
    acks = Burst(ACK, 0, 0, 3, 3, HDR, MSS)
    assert rx_dma_bytes(acks) == 3 * 66
    assert link.rx_traffic(acks)[0] == 3 * (66 + 24) + (48 + 24) + 24


def _port(env, pcie: PcieParams | None, **nic):
    params = NicParams(link=LinkParams(line_rate_gbps=10.0, mtu_bytes=1500, propagation_ns=0.0),
                       coalescing=CoalescingParams(timer_us=0, max_frames=1), **nic)
    stats = Stats()
    link = PcieLink(env, "card", pcie) if pcie is not None else None
    return NicPort(env, "p", params, stats, pcie=link), stats, link


def _handler(env):
    core = Core(env, 0, 0, CpuParams(sockets=1, cores_per_socket=1, clock_hz=1e9))
    return Context(env, "irq", core, rng=np.random.default_rng(0))


def _feed_rx(env, nic, bursts: int, frames: int):
    """``bursts`` bursts of ``frames`` full frames arriving back to back at 10 Gbps."""
    def src():
        for _ in range(bursts):
            b = Burst(DATA, 0, frames * MSS, frames, frames, HDR, MSS)
            yield env.timeout(units.transmit_time_s(b.wire_bytes, 10.0))
            nic.receive(b)
    env.process(src())


def test_rx_fifo_overflows_when_pcie_is_slower_than_the_wire():
    env = simpy.Environment()
    nic, stats, link = _port(env, PcieParams(gen=1, lanes=2), rx_fifo_bytes=65536,
                             rx_ring_slots=100000)   # 4 Gbps < 10 Gbps of frames
    got = []
    nic.wire_rx(_handler(env), lambda batch, irq: 0.0,
                lambda batch: got.append(sum(b.frames for b in batch)))
    _feed_rx(env, nic, bursts=200, frames=10)
    env.run(until=0.01)
    fifo = stats.stages["p.rx_fifo"]
    dropped = fifo.dropped_frames.get("rx_fifo_overflow", 0)
    assert dropped > 0 and sum(got) + dropped == 2000
    assert fifo.conservation_error() == (0, 0)
    # what got through is what the link carried while frames arrived, plus the full FIFO
    arrivals_s = 200 * units.transmit_time_s(10 * 1538, 10.0)
    per_frame = link.rx_traffic(Burst(DATA, 0, 10 * MSS, 10, 10, HDR, MSS))[0] / 10
    carried = units.gbps_to_bytes_per_s(4.0) * arrivals_s / per_frame
    assert sum(got) == pytest.approx(carried + 65536 / 1514, rel=0.03)


def test_rx_fast_link_drops_nothing_and_adds_about_one_frame_of_latency():
    env = simpy.Environment()
    nic, stats, _ = _port(env, PcieParams(gen=2, lanes=8))
    times = []
    nic.wire_rx(_handler(env), lambda batch, irq: 0.0, lambda batch: times.append(env.now))
    _feed_rx(env, nic, bursts=1, frames=10)
    env.run(until=0.01)
    arrival = units.transmit_time_s(10 * 1538, 10.0)
    one_frame_dma = units.transmit_time_s(1514 + 6 * 24, 32.0)
    assert times == [pytest.approx(arrival + one_frame_dma)]
    assert stats.stages["p.rx_fifo"].total_dropped_frames() == 0


def test_rx_fifo_smaller_than_a_burst_holds_it_when_the_bus_outruns_the_wire():
    """A TSO burst of 45 frames (68 KB) arrives frame by frame; a bus faster than the wire
    takes each frame up as it comes, so a 16 KB FIFO never fills. Behind a bus slower than the
    wire the same burst overflows it."""
    for pcie, dropped in ((PcieParams(gen=2, lanes=8), False), (PcieParams(gen=1, lanes=2), True)):
        env = simpy.Environment()
        nic, stats, _ = _port(env, pcie, rx_fifo_bytes=16384, rx_ring_slots=100000)
        got = []
        nic.wire_rx(_handler(env), lambda batch, irq: 0.0,
                    lambda batch: got.append(sum(b.frames for b in batch)))
        _feed_rx(env, nic, bursts=20, frames=45)
        env.run(until=0.01)
        lost = stats.stages["p.rx_fifo"].total_dropped_frames()
        assert (lost > 0) is dropped and sum(got) + lost == 900


def test_tx_fetch_overlaps_the_wire_on_a_fast_link():
    env = simpy.Environment()
    nic, _, _ = _port(env, PcieParams(gen=2, lanes=8), tx_ring_slots=1000)
    done = []
    nic.tx_queues[0].on_space.append(lambda: done.append(env.now))
    seg = Burst(DATA, 0, 45 * MSS, 45, 1, HDR, MSS)
    for _ in range(20):
        nic.send(seg)
    env.run(until=1.0)
    wire = units.transmit_time_s(seg.wire_bytes, 10.0)
    # the first segment waits one frame's DMA; after it the wire never starves
    first_frame = units.transmit_time_s(link_tx_down(seg, 32.0), 32.0) / 45
    assert done[-1] == pytest.approx(first_frame + 20 * wire, rel=1e-6)


def test_tx_slow_link_limits_the_wire_to_the_dma_rate():
    env = simpy.Environment()
    nic, _, link = _port(env, PcieParams(gen=1, lanes=4), tx_ring_slots=1000)  # 8 Gbps
    done = []
    nic.tx_queues[0].on_space.append(lambda: done.append(env.now))
    seg = Burst(DATA, 0, 45 * MSS, 45, 1, HDR, MSS)
    for _ in range(20):
        nic.send(seg)
    env.run(until=1.0)
    dma = units.transmit_time_s(link_tx_down(seg, 8.0), 8.0)
    last_frame_wire = units.transmit_time_s(1538, 10.0)
    assert done[-1] == pytest.approx(20 * dma + last_frame_wire, rel=1e-6)
    assert link.down.busy_time_s() == pytest.approx(20 * dma, rel=1e-9)


def link_tx_down(seg: Burst, gbps: float) -> float:
    """Downstream link bytes of one TX segment (Gen-any, 256/24 TLPs)."""
    return PcieLink(simpy.Environment(), "x", PcieParams()).tx_traffic(seg)[0]


def test_dma_framing_lives_in_units_and_shares_the_frame_split():
    from models import units
    from models.pcie import frames_tlp_bytes
    b = Burst(DATA, 0, 2 * 1448 + 100, 3, 3, 52, 1448)
    assert units.frame_l2_bytes(40) == 60 and units.frame_l2_bytes(1500) == 1514
    assert rx_dma_bytes(b) == units.rx_dma_bytes(b.payload_bytes, 3, 52) == 2996 + 3 * 66
    assert tx_dma_bytes(b) == units.tx_dma_bytes(b.payload_bytes, 3, 52)
    link = PcieLink(simpy.Environment(), "card", PcieParams())
    assert frames_tlp_bytes(b, link) == pytest.approx(
        2 * link.tlp(1514) + link.tlp(units.frame_l2_bytes(152)))
    assert units.sum_over_frames(b.payload_bytes, 3, 52, 1448, units.frame_wire_bytes) == \
        b.wire_bytes


def test_rx_dma_is_one_event_per_burst_and_its_completion_is_the_ring_arrival():
    env = simpy.Environment()
    nic, stats, _ = _port(env, PcieParams(gen=2, lanes=8), rx_ring_slots=1000)
    nic.wire_rx(_handler(env), lambda batch, irq: 0.0, lambda batch: None)
    for _ in range(10):
        nic.receive(Burst(DATA, 0, 4 * MSS, 4, 4, HDR, MSS))
    ring = nic.rx_queues[0].ring
    assert len(env._queue) == 10 and ring.used == 0          # DMA in flight, ring not yet
    assert stats.stages["p.rx_fifo"].queued_frames == 40
    env.step()
    assert ring.stats.arrived_frames == 4 and stats.stages["p.rx_fifo"].queued_frames == 36


def test_a_transfer_dated_in_the_past_goes_ahead_of_work_booked_since():
    # A burst that was arriving since 4 us is booked at 10 us, after a 64-byte read request
    # booked at 10 us: it takes the idle time from 4 us on (not a place behind the request),
    # and what runs past the idle time goes after the request, which keeps its booking.
    env = simpy.Environment()
    ch = PcieChannel(env, "up", rate_gbps=8.0)  # 1 byte per ns
    env.run(until=10e-6)
    assert ch.book(64) == (pytest.approx(10e-6), pytest.approx(10.064e-6))
    assert ch.book(1000, not_before_s=4e-6) == (pytest.approx(4e-6), pytest.approx(5e-6))
    # the gap left before it is used by the next burst dated in the past, then the time
    # after everything booked (6 us idle from 5 us to the request, 0.5 us after it)
    assert ch.book(6500, not_before_s=3e-6) == (pytest.approx(3e-6), pytest.approx(10.564e-6))
    assert ch.free_at_s == pytest.approx(10.564e-6)
    assert ch.idle_s(0.0) == pytest.approx(3e-6)  # only the 3 us before the earliest date
    env.run(until=10.2e-6)
    # busy time is what was carried by now: 7 us before 10 us, then 0.2 us
    assert ch.busy_time_s() == pytest.approx(7.2e-6)
    env.run(until=20e-6)
    assert ch.busy_time_s() == pytest.approx((64 + 1000 + 6500) * 1e-9)
