"""models.base: the cycle-cost formula, the burst record, rings (tail drop, TSO drop), counters.

CycleCost: cycles = fixed x invocations + per_packet x packets + per_byte x bytes.
Ring: a burst occupies slots from offer() to release(); what does not fit is dropped per whole
packet (tail drop): per frame for plain frames, per aggregate for LRO aggregates; a TSO segment
(one packet of many frames) that does not fit is dropped whole.
"""
import pytest

from models.base import ACK, DATA, Burst, CycleCost, Ring, Stats

MSS, HDR = 1448, 52


def data(frames: int, payload: int | None = None, packets: int | None = None) -> Burst:
    payload = frames * MSS if payload is None else payload
    return Burst(DATA, 0, payload, frames, frames if packets is None else packets, HDR, MSS)


def test_cycle_cost():
    cost = CycleCost(fixed_cycles=100, per_packet_cycles=10, per_byte_cycles=0.5)
    assert cost.cycles(packets=3, n_bytes=1000, invocations=2) == 200 + 30 + 500
    assert cost.cycles() == 100
    assert cost.cycles(packets=3, invocations=0) == 30
    assert cost.scaled(2).cycles(packets=3, n_bytes=1000) == 2 * (100 + 30 + 500)


def test_cycle_cost_rejects_negative_prices_naming_the_field():
    with pytest.raises(ValueError, match="per_byte_cycles=-1"):
        CycleCost(per_byte_cycles=-1)


def test_burst_wire_and_ip_bytes():
    b = data(3, payload=2 * MSS + 100)
    assert b.wire_bytes == 2 * 1538 + (100 + HDR + 38)
    assert b.ip_bytes == 2 * MSS + 100 + 3 * HDR


def test_burst_head_keeps_the_first_frames():
    b = data(4, payload=3 * MSS + 100)
    h = b.head(2)
    assert (h.frames, h.packets, h.payload_bytes) == (2, 2, 2 * MSS)
    assert h.wire_bytes == 2 * 1538
    assert (b.frames, b.payload_bytes) == (4, 3 * MSS + 100)  # the original is untouched
    assert b.head(3).wire_bytes == 3 * 1538


def test_burst_aggregated_merges_data_frames_for_lro():
    b = data(100)
    assert b.aggregated(65536).packets == 3  # 45 frames of 1448 bytes per 64KB aggregate
    assert b.aggregated(65536).frames == 100
    assert b.aggregated(65536).wire_bytes == b.wire_bytes
    assert b.aggregated(0) is b
    ack = Burst(ACK, 0, 0, 4, 4, HDR, MSS)
    assert ack.aggregated(65536).packets == 4


def test_as_frames_makes_every_frame_a_packet():
    tso = data(45, packets=1)
    assert tso.as_frames().packets == 45
    assert tso.as_frames().wire_bytes == tso.wire_bytes


def test_ring_tail_drop_keeps_what_fits():
    stats = Stats()
    ring = Ring("r", 5, stats)
    assert ring.offer(data(3)).frames == 3
    kept = ring.offer(data(4))
    assert kept.frames == 2 and ring.free == 0 and len(ring) == 2
    st = stats.stages["r"]
    assert st.arrived_frames == 7
    assert st.dropped_frames == {"ring_full": 2}
    assert st.dropped_bytes == {"ring_full": 2 * 1538}
    assert st.queued_frames == 5
    assert st.conservation_error() == (0, 0)
    assert ring.offer(data(1)) is None
    assert st.dropped_frames == {"ring_full": 3}


def test_ring_drops_a_tso_segment_whole():
    stats = Stats()
    ring = Ring("r", 10, stats, drop_reason="full")
    assert ring.offer(data(45, packets=1)) is None   # 45 frames, room for 10: all or nothing
    assert stats.stages["r"].dropped_frames == {"full": 45}
    assert ring.used == 0
    pkts = Ring("p", 2, stats, unit="packets")
    assert pkts.offer(data(45, packets=1)) is not None
    assert pkts.offer(data(45, packets=1)) is not None
    assert pkts.offer(data(45, packets=1)) is None
    assert stats.stages["p"].dropped_frames == {"ring_full": 45}
    assert stats.stages["p"].conservation_error() == (0, 0)


def test_ring_cuts_lro_aggregates_at_whole_aggregates():
    stats = Stats()
    ring = Ring("r", 30, stats)
    agg = data(44, packets=4)           # four aggregates of 11 frames
    assert agg.frames_per_packet == 11
    kept = ring.offer(agg)              # room for 30 frames: two whole aggregates
    assert (kept.frames, kept.packets, kept.payload_bytes) == (22, 2, 22 * MSS)
    assert ring.used == 22
    assert stats.stages["r"].dropped_frames == {"ring_full": 22}
    assert ring.offer(data(11, packets=1)) is None   # 8 slots left: the aggregate is dropped
    assert ring.offer(data(8)).frames == 8           # plain frames still fill the rest
    assert stats.stages["r"].conservation_error() == (0, 0)
    pkts = Ring("p", 3, stats, unit="packets")
    assert pkts.offer(agg).packets == 3              # a packet ring keeps whole aggregates too


def test_ring_slot_is_held_until_release_and_release_calls_back():
    stats = Stats()
    ring = Ring("r", 2, stats)
    calls = []
    ring.on_space.append(lambda: calls.append(ring.free))
    ring.offer(data(1))
    ring.offer(data(1))
    b = ring.claim()
    assert ring.free == 0 and len(ring) == 1   # claimed but still occupying its slot
    assert ring.offer(data(1)) is None
    ring.release([b])
    assert calls == [1]
    st = stats.stages["r"]
    assert (st.departed_frames, st.queued_frames) == (1, 1)
    assert st.departed_bytes == 1538
    assert st.conservation_error() == (0, 0)


def test_ring_validates_capacity_and_unit():
    with pytest.raises(ValueError, match="capacity"):
        Ring("r", 0, Stats())
    with pytest.raises(ValueError, match="unit"):
        Ring("r", 1, Stats(), unit="bytes")


def test_stage_conservation_error_detects_a_lost_frame():
    stats = Stats()
    st = stats.stage("s")
    st.arrive(3, 300)
    st.depart(2, 200)
    st.drop("x", 1, 100)
    assert st.conservation_error() == (0, 0)   # drop() counts its own arrival
    st.queued_frames -= 1                      # a frame that vanished without a trace
    assert st.conservation_error() == (1, 0)
    with pytest.raises(AssertionError):
        stats.stage("s")                       # stage names are unique


def test_ring_poller_drains_in_passes_and_stops_on_an_empty_ring():
    import simpy

    from models.base import RingPoller
    from models.cpu import Context, Core, CpuParams
    env, stats = simpy.Environment(), Stats()
    ring = Ring("r", 100, stats)
    ideal = CpuParams(1, 1, 1e9, context_switch_cycles=0.0, jitter_cv=0.0)
    ctx = Context(env, "c", Core(env, 0, 0, ideal), rng=None)
    got, irqs = [], []

    def cost(batch, irq):
        irqs.append(irq)
        return 1000.0, len(batch), 0

    poller = RingPoller(ring, ctx, cost, got.append)
    ring.offer(data(2))
    poller.kick()
    ring.offer(data(3))   # arrives during the first pass: taken by the re-poll
    poller.kick()         # no effect while busy
    assert poller.busy
    env.run()
    assert [sum(b.frames for b in batch) for batch in got] == [2, 3]
    assert irqs == [True, False] and not poller.busy and ring.used == 0 and poller.polls == 2


def test_burst_is_a_lean_record_with_the_dataclass_interface():
    from models import units
    b = Burst(DATA, 3, 2 * MSS + 100, 3, 1, HDR, MSS, seq=7, dst=2, src=-1)
    assert not hasattr(b, "__dict__")                      # __slots__
    assert (b.kind, b.flow, b.seq, b.dst, b.src, b.echo_s, b.piggyback) == \
        (DATA, 3, 7, 2, -1, -1.0, None)
    assert Burst(kind=DATA, flow=3, payload_bytes=2 * MSS + 100, frames=3, packets=1,
                 header_bytes=HDR, frame_payload_bytes=MSS, seq=7, dst=2, src=-1) == b
    assert b != b._copy(seq=8) and b == b._copy()
    assert "seq=7" in repr(b)
    for payload, frames, hdr in [(0, 4, HDR), (MSS, 1, HDR), (45 * MSS, 45, HDR), (100, 3, 102),
                                 (10 * MSS + 1, 11, HDR)]:
        x = Burst(ACK, 0, payload, frames, frames, hdr, MSS)
        assert x.wire_bytes == units.burst_wire_bytes(payload, frames, hdr, MSS)


def test_burst_copies_recompute_wire_bytes_only_when_the_counts_change():
    b = data(4, payload=3 * MSS + 100)
    enc = b._copy(header_bytes=HDR + 50, encap_bytes=50)
    assert enc.wire_bytes == b.wire_bytes + 4 * 50 and b.header_bytes == HDR
    assert b._copy(dst=5).wire_bytes == b.wire_bytes and b._copy(dst=5).dst == 5
    tso = data(45, packets=1)
    assert tso.as_frames().packets == 45 and tso.as_frames().wire_bytes == tso.wire_bytes
    assert tso.as_frames() is not tso and tso.packets == 1
    agg = data(100).aggregated(65536)
    assert (agg.packets, agg.wire_bytes) == (3, data(100).wire_bytes)


def test_fit_is_the_one_cutting_rule_for_frames_packets_and_bytes():
    """base.fit: the whole burst, its first whole packets, or nothing; the rest dropped."""
    from models.base import fit, frames_of, packets_of
    from models.pcie import rx_dma_bytes
    st = Stats().stage("s")
    b = data(10)
    assert fit(b, 10, 10, frames_of, st, "x") is b and st.arrived_frames == 0
    assert fit(b, 4, 10, frames_of, st, "x").frames == 4                   # per frame
    assert fit(data(44, packets=4), 30, 44, frames_of, st, "x").frames == 22  # per aggregate
    assert fit(data(45, packets=1), 44, 45, frames_of, st, "x") is None    # a TSO segment
    assert fit(data(44, packets=4), 3, 4, packets_of, st, "x").packets == 3
    # FIFO bytes: 1514 bytes per full frame in host memory; 5000 bytes hold 3 frames
    kept = fit(b, 5000, rx_dma_bytes(b), rx_dma_bytes, st, "fifo")
    assert kept.frames == 3 and rx_dma_bytes(kept) == 3 * 1514
    assert fit(b, 1000, rx_dma_bytes(b), rx_dma_bytes, st, "fifo") is None
    assert st.dropped_frames == {"x": 6 + 22 + 45 + 11, "fifo": 7 + 10}
    assert st.dropped_bytes["fifo"] == 17 * 1538
    assert st.conservation_error() == (0, 0)
