"""The NIC's TX FIFO drains frame by frame (models.nic.NicPort._fifo_level).

A TSO segment larger than the card's TX FIFO streams through it: the card fetches the next
segment once its first frame fits in what the wire has not yet sent, so back-to-back segments
leave with no gap on the wire. Counted in whole segments (the FIFO freed only when a segment's
last bit has left), each segment after the first would wait for the fetch of its first frame:
002's 1GbE card (16 KB TX FIFO, PCI-X 133) lost ~0.6% of its line rate to it with TSO.
"""
import simpy
import pytest

from models import units
from models.base import DATA, Burst, Stats
from models.nic import NicParams, NicPort
from models.pcie import PcieLink, PcieParams
from models.wire import LinkParams


def tso_segment(frames: int) -> Burst:
    return Burst(DATA, 0, frames * 1448, frames, 1, 52, 1448)


def _pcix_port(env, fifo_bytes):
    params = NicParams(link=LinkParams(line_rate_gbps=1.0, propagation_ns=0.0),
                       tx_ring_slots=64, tx_desc_per_packet=0, tx_fifo_bytes=fifo_bytes)
    return NicPort(env, "p", params, Stats(),
                   pcie=PcieLink(env, "card", PcieParams(kind="pcix", pcix_rate_mtps=133.0,
                                                         max_payload_bytes=512,
                                                         max_read_request_bytes=512,
                                                         tlp_overhead_bytes=32,
                                                         descriptor_bytes=16)))


def test_the_fifo_level_is_the_unsent_share_of_the_fetched_bytes():
    """A burst on the wire holds the share of its fetched (DMA) bytes that its wire time has
    still to send: half way through, half of them. Counting the wire's backlog in wire bytes
    (preamble, gap, each frame's headers) would overstate it (~6% for a TSO segment)."""
    from models.pcie import tx_dma_bytes
    env = simpy.Environment()
    nic = _pcix_port(env, 1 << 20)
    seg = tso_segment(23)
    nic.send(seg)
    (end, _, _, size, _), = nic._sent
    assert size == tx_dma_bytes(seg) < seg.wire_bytes
    wire_s = units.transmit_time_s(seg.wire_bytes, 1.0)
    half = end - wire_s / 2
    assert nic._fifo_level(half) == pytest.approx(size / 2, rel=1e-9)
    assert nic._room_at(size / 2) == pytest.approx(half, rel=1e-9)
    assert nic._fifo_level(end) == 0


@pytest.mark.parametrize("fifo_bytes", [16384, 4096])
def test_tso_segments_larger_than_the_tx_fifo_leave_back_to_back(fifo_bytes):
    """20 segments of 23 frames (33 KB) through a 16 KB (and a 4 KB) FIFO on a 1GbE port
    behind PCI-X 133: the wire is busy without a break from the first bit to the last."""
    env = simpy.Environment()
    nic = _pcix_port(env, fifo_bytes)
    arrivals = []
    nic.tx_link.deliver = lambda b: arrivals.append(env.now)
    for _ in range(20):
        nic.send(tso_segment(23))
    env.run()
    assert nic.tx_packets == 20
    wire_s = units.transmit_time_s(nic.tx_wire_bytes, 1.0)
    first_start = arrivals[0] - units.transmit_time_s(tso_segment(23).wire_bytes, 1.0)
    # Busy from the first segment's start to the last one's end: no gap between segments.
    assert arrivals[-1] - first_start == pytest.approx(wire_s, rel=1e-6)


def test_vmxnet_tso_fills_the_1g_link(compose):
    """002, 64-bit guest, vmxnet (TSO) sending with 64 KB sockets over 1GbE: the port is busy
    all the time (it was 99.5% with the FIFO counted in whole segments)."""
    from sim.builder import build
    cfg = compose(["experiment=dev_vmxnet_64_1g_stream", "run.measure_s=0.03",
                   "run.warmup_s=0.02", "run.replications=1"], short=False)
    model = build(cfg)
    model.env.run(until=0.02)
    nic = model.nics[0]
    busy = nic.tx_link.busy_s
    model.env.run(until=0.05)
    assert (nic.tx_link.busy_s - busy) / 0.03 >= 0.999
