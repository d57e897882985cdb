"""A multi-queue sender interleaves its connections frame by frame (``peer.tx_interleave_queues``).

001's Ixia sends 200 connections' data into each host port. Sent from several TX queues that the
NIC serves round-robin, a segment's frames reach the host among the other queues' frames, over
several of the host's receive passes; the hypervisor's software LRO flushes at the end of each
pass, so it merges a segment in as many pieces as passes saw it (``models.hypervisor``), where
back-to-back segments were merged whole (up to ``software_lro_max_bytes``).
"""
from models.base import DATA, Burst

MSS = 1448


def test_a_segment_seen_in_pieces_is_merged_piece_by_piece():
    """45 frames, 22 per aggregate (32000 bytes): whole, 3 aggregates; in 8 pieces of 5-6
    frames, 8; in more pieces than frames, one aggregate per frame."""
    seg = Burst(DATA, 0, 45 * MSS, 45, 45, 52, MSS)
    assert seg.aggregated(32000).packets == 3
    assert seg.aggregated(32000, pieces=8).packets == 8
    assert seg.aggregated(32000, pieces=2).packets == 3   # 23 + 22 frames: 2 + 1 aggregates
    assert seg.aggregated(32000, pieces=60).packets == 45


def _lro_ratio(compose, queues: int) -> float:
    """Frames per packet after software LRO on one g80_receive port (20 ms after 30)."""
    from sim.builder import build
    cfg = compose(["experiment=g80_receive", "host.nic_ports=1", "workload.sessions_per_vm=20",
                   f"peer.tx_interleave_queues={queues}"])
    model = build(cfg, 0)
    model.env.run(until=0.03)
    rx = model.hv_rx[0]
    d0, s0 = rx.driver_packets, rx.switched_packets
    model.env.run(until=0.05)
    return (rx.driver_packets - d0) / max(1, rx.switched_packets - s0)


def test_interleaved_segments_reach_the_guest_in_smaller_aggregates(compose):
    """With the Ixia's 8 queues interleaving, the guests get aggregates of under half the
    frames they get from back-to-back segments (which software LRO merges ~15 frames at a
    time); with one queue the spread is off and nothing changes."""
    whole = _lro_ratio(compose, 1)
    spread = _lro_ratio(compose, 8)
    assert whole > 10
    assert spread < 0.5 * whole
