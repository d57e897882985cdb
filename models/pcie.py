"""PCI Express (or PCI-X) between a NIC card and the host, and a NIC port's DMA stages.

::

    host memory / root complex
        |  downstream (host -> card): TX frame data (read completions), TX and RX descriptors
        |                             fetched by the card (read completions), doorbells (the
        |                             driver's MMIO writes of a ring's tail register)
        |  upstream   (card -> host): RX frame data (memory writes), descriptor write-backs
        |                             (RX: one per received frame; TX: one per sent packet),
        v                             read requests for TX data and descriptors (header-only TLPs)
    NIC card: ``ports_per_card`` ports share its one link, per direction
        port: TX queues --fetch (DMA)--> TX FIFO --> wire       wire --> RX FIFO --DMA--> RX ring

Modelled:
- Bandwidth of one direction: GT/s per lane x lanes x encoding (8b/10b for gens 1-2, 128b/130b
  for gens 3-5), ``models.units.pcie_link_gbps``. Every transfer is cut into TLPs of at most
  ``max_payload_bytes`` (read completions likewise), each paying ``tlp_overhead_bytes`` (header,
  sequence number, LCRC, framing; ~24 bytes with 64-bit addresses); a read request is a
  header-only TLP per ``max_read_request_bytes``. Descriptors are ``descriptor_bytes`` each,
  fetched and written back in one transfer per burst; one doorbell per burst and direction.
- PCI-X (``kind: pcix``): a 64-bit bus at ``pcix_rate_mtps``, *half duplex*: both directions
  share one channel; ``tlp_overhead_bytes`` then stands for the address/attribute phases and
  turnaround of a burst transaction and ``max_payload_bytes`` for its byte count.
- A direction is a FIFO server of link bytes kept in virtual time (the instant it frees up):
  a transfer is booked arithmetically, one SimPy event per burst and stage at most. A burst
  arriving from the wire was arriving for its serialisation time, so its DMA may have started
  then: the channel fills with the bytes of every port at its own rate (a fluid interleaving of
  the ports), and a burst is in host memory when the channel has carried its bytes and no
  earlier than one frame's DMA after its last bit arrived.
- RX: a frame needs a free descriptor in its host ring (none: dropped before the DMA,
  ``rx_ring_full``, as with DROP_EN) and room in the port's on-card RX FIFO of ``rx_fifo_bytes``
  while it waits for the link (none: ``rx_fifo_overflow``): the FIFO fills when PCIe cannot keep
  up with the wire. A frame occupies the FIFO from arrival until its DMA completes.
- TX: the card fetches the next burst (round-robin over TX queues, ``models.nic``) as soon as the
  port's TX FIFO of ``tx_fifo_bytes`` has room, so fetching overlaps transmission; the wire
  starts a burst once its first frame is in the FIFO and cannot finish it before the DMA has
  delivered its last frame. A TSO segment crosses PCIe once (payload + one header), the wire
  sees every frame's headers.
Left out: flow-control credits, replay, ACK/NAK and flow-control DLLPs (fold them into
``tlp_overhead_bytes``), MSI-X messages (~28 bytes per interrupt), read-completion boundaries,
memory and root-complex latency, DMA across the socket interconnect.
Units: bytes, Gbps, seconds.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import simpy

from models import units
from models.base import Burst, Stats, check

KINDS = ("pcie", "pcix")
LANES = (1, 2, 4, 8, 16)
PAYLOAD_SIZES = (128, 256, 512, 1024, 2048, 4096)
PCIX_RATES_MTPS = (66.0, 100.0, 133.0, 266.0, 533.0)


@dataclass(frozen=True)
class PcieParams:
    """The link of one NIC card as trained (the lower of card's and slot's generation/width)."""

    kind: str = "pcie"
    gen: int = 1
    lanes: int = 8
    pcix_rate_mtps: float = 133.0  # kind=pcix only
    max_payload_bytes: int = 256
    max_read_request_bytes: int = 512
    tlp_overhead_bytes: int = 24
    descriptor_bytes: int = 16
    doorbell_bytes: int = 4

    def __post_init__(self):
        check(self.kind in KINDS, "kind", self.kind, f"one of {KINDS}")
        check(self.gen in units.PCIE_GT_PER_S, "gen", self.gen, "in 1..5")
        check(self.lanes in LANES, "lanes", self.lanes, f"one of {LANES}")
        check(self.pcix_rate_mtps in PCIX_RATES_MTPS, "pcix_rate_mtps", self.pcix_rate_mtps,
              f"one of {PCIX_RATES_MTPS}")
        check(self.max_payload_bytes in PAYLOAD_SIZES, "max_payload_bytes",
              self.max_payload_bytes, f"one of {PAYLOAD_SIZES}")
        check(self.max_read_request_bytes in PAYLOAD_SIZES, "max_read_request_bytes",
              self.max_read_request_bytes, f"one of {PAYLOAD_SIZES}")
        check(0 <= self.tlp_overhead_bytes <= 64, "tlp_overhead_bytes", self.tlp_overhead_bytes,
              "in 0..64")
        check(1 <= self.descriptor_bytes <= 64, "descriptor_bytes", self.descriptor_bytes,
              "in 1..64")
        check(0 <= self.doorbell_bytes <= 64, "doorbell_bytes", self.doorbell_bytes, "in 0..64")

    @property
    def link_gbps(self) -> float:
        """Bits per second of one direction (of the bus, for PCI-X) after line encoding."""
        if self.kind == "pcix":
            return units.pcix_bus_gbps(self.pcix_rate_mtps)
        return units.pcie_link_gbps(self.gen, self.lanes)

    @property
    def data_gbps(self) -> float:
        """Payload bits per second of one direction in full-size TLPs (256/280 of the link)."""
        mps = self.max_payload_bytes
        return self.link_gbps * mps / (mps + self.tlp_overhead_bytes)


class PcieChannel:
    """One direction of a link: a FIFO server of link bytes, kept in virtual time."""

    def __init__(self, env: simpy.Environment, name: str, rate_gbps: float):
        self.env, self.name, self.rate_gbps = env, name, rate_gbps
        self.free_at_s = 0.0
        self.link_bytes = 0.0
        self._busy_s = 0.0

    def book(self, link_bytes: float, not_before_s: float | None = None) -> tuple[float, float]:
        """Reserve the channel for ``link_bytes`` from ``not_before_s`` on (now, or an instant
        in the past: bytes that were arriving may have been moving); returns when they start
        and finish. Booked work is contiguous from now on, which keeps ``busy_time_s`` exact."""
        now = self.env.now if not_before_s is None else not_before_s
        assert now <= self.env.now, f"{self.name}: a transfer cannot be booked for the future"
        dt = units.transmit_time_s(link_bytes, self.rate_gbps)
        start = max(self.free_at_s, now)
        self.free_at_s = start + dt
        self._busy_s += dt
        self.link_bytes += link_bytes
        return start, start + dt

    def busy_time_s(self) -> float:
        """Busy time up to now: work booked beyond now is not done yet."""
        return self._busy_s - max(0.0, self.free_at_s - self.env.now)


class PcieLink:
    """The link of one card, shared by its ports: ``up`` (card -> host) and ``down``."""

    def __init__(self, env: simpy.Environment, name: str, params: PcieParams, node: int = 0):
        self.env, self.name, self.params, self.node = env, name, params, node
        self.up = PcieChannel(env, f"{name}.up", params.link_gbps)
        # PCI-X is one half-duplex bus: both directions queue on the same channel.
        self.down = self.up if params.kind == "pcix" else PcieChannel(env, f"{name}.down",
                                                                      params.link_gbps)

    def tlp(self, payload_bytes: float) -> float:
        p = self.params
        return units.tlp_bytes(payload_bytes, p.max_payload_bytes, p.tlp_overhead_bytes)

    def read_requests(self, payload_bytes: float) -> float:
        """Link bytes of the header-only requests that read ``payload_bytes``."""
        p = self.params
        return math.ceil(payload_bytes / p.max_read_request_bytes) * p.tlp_overhead_bytes

    def rx_traffic(self, burst: Burst) -> tuple[float, float]:
        """(upstream, downstream) link bytes of receiving ``burst``: frames written up, one
        descriptor per frame fetched (read request up, completion down) and written back, one
        doorbell (the driver's refill) down."""
        desc = burst.frames * self.params.descriptor_bytes
        up = frames_tlp_bytes(burst, self) + self.tlp(desc) + self.read_requests(desc)
        down = self.tlp(desc) + self.tlp(self.params.doorbell_bytes)
        return up, down

    def tx_traffic(self, burst: Burst) -> tuple[float, float]:
        """(downstream, upstream) link bytes of sending ``burst``: its packets read once each
        (payload + one set of headers: TSO cuts frames on the card), one descriptor per packet
        fetched and written back, one doorbell."""
        data = tx_dma_bytes(burst)
        desc = burst.packets * self.params.descriptor_bytes
        down = self.tlp(data) + self.tlp(desc) + self.tlp(self.params.doorbell_bytes)
        up = self.read_requests(data) + self.read_requests(desc) + self.tlp(desc)
        return down, up


def rx_dma_bytes(burst: Burst) -> int:
    """Bytes of ``burst``'s frames in host memory (what the RX FIFO holds)."""
    return units.rx_dma_bytes(burst.payload_bytes, burst.frames, burst.header_bytes)


def tx_dma_bytes(burst: Burst) -> int:
    """Bytes the card reads to send ``burst`` (``units.tx_dma_bytes``)."""
    return units.tx_dma_bytes(burst.payload_bytes, burst.packets, burst.header_bytes)


def frames_tlp_bytes(burst: Burst, link: PcieLink) -> float:
    """Link bytes of writing ``burst``'s frames one by one (full frames, then a tail frame)."""
    return units.sum_over_frames(burst.payload_bytes, burst.frames, burst.header_bytes,
                                 burst.frame_payload_bytes,
                                 lambda ip_bytes: link.tlp(units.frame_l2_bytes(ip_bytes)))


class RxDma:
    """A port's receive side of the card: descriptor check, RX FIFO, upstream DMA to the ring.

    ``receive(burst, queue)`` takes a burst from the wire for ``queue`` (an object with ``ring``
    and ``receive(burst)``, ``models.nic.RxQueue``), which gets what was DMA'd."""

    def __init__(self, env: simpy.Environment, name: str, link: PcieLink, fifo_bytes: int,
                 line_rate_gbps: float, stats: Stats):
        check(fifo_bytes >= 1, f"{name}.rx_fifo_bytes", fifo_bytes, ">= 1")
        self.env, self.link, self.fifo_bytes, self.line_rate_gbps = env, link, fifo_bytes, \
            line_rate_gbps
        self.fifo = stats.stage(f"{name}.rx_fifo")
        self.used_bytes = 0
        self._inflight: dict[int, int] = {}  # frames being DMA'd, per queue (by id)

    def receive(self, burst: Burst, queue) -> None:
        key = id(queue)
        burst = self._admit(burst, queue.ring.free - self._inflight.get(key, 0),
                            queue.ring.stats, queue.ring.drop_reason, lambda b: b.frames)
        if burst is None:
            return
        burst = self._admit(burst, self.fifo_bytes - self.used_bytes, self.fifo,
                            "rx_fifo_overflow", rx_dma_bytes)
        if burst is None:
            return
        size = rx_dma_bytes(burst)
        self.used_bytes += size
        self.fifo.arrive(burst.frames, burst.wire_bytes)
        self._inflight[key] = self._inflight.get(key, 0) + burst.frames
        now = self.env.now
        up, down = self.link.rx_traffic(burst)
        arriving_since = now - units.transmit_time_s(burst.wire_bytes, self.line_rate_gbps)
        _, end = self.link.up.book(up, arriving_since)
        self.link.down.book(down)
        last_frame = units.transmit_time_s(self.link.tlp(units.frame_l2_bytes(
            burst.header_bytes + min(burst.frame_payload_bytes, burst.payload_bytes))),
            self.link.up.rate_gbps)
        done = self.env.timeout(max(end, now + last_frame) - now)
        done.callbacks.append(lambda _e: self._done(burst, queue, size))

    def _admit(self, burst: Burst, room: int, stage, reason: str, size_of) -> Burst | None:
        """What of ``burst`` fits in ``room`` (frames kept from the head, as a ring does); the
        rest is counted as dropped in ``stage``. A burst of merged packets is kept or not."""
        size = size_of(burst)
        if size <= room:
            return burst
        kept = None
        if room > 0 and burst.packets == burst.frames and burst.frames > 1:
            n = min(burst.frames - 1, room * burst.frames // size)
            while n > 0 and size_of(burst.head(n)) > room:
                n -= 1
            kept = burst.head(n) if n > 0 else None
        stage.drop(reason, burst.frames - (kept.frames if kept else 0),
                   burst.wire_bytes - (kept.wire_bytes if kept else 0))
        return kept

    def _done(self, burst: Burst, queue, size: int) -> None:
        self.used_bytes -= size
        self.fifo.depart(burst.frames, burst.wire_bytes)
        self._inflight[id(queue)] -= burst.frames
        queue.receive(burst)


class TxDma:
    """A port's transmit side of the card: fetch into the TX FIFO, then the wire.

    ``port`` is the ``models.nic.NicPort`` (its ``tx_link``, ``tx_done(queue, burst)``); its
    transmit loop calls ``fetch(queue)`` for the queue whose turn it is."""

    def __init__(self, env: simpy.Environment, port, link: PcieLink, fifo_bytes: int):
        check(fifo_bytes >= 1, f"{port.name}.tx_fifo_bytes", fifo_bytes, ">= 1")
        self.env, self.port, self.link, self.fifo_bytes = env, port, link, fifo_bytes
        self.used_bytes = 0
        self._ready: deque[tuple] = deque()
        self._room: simpy.Event | None = None
        self._wake: simpy.Event | None = None
        env.process(self._wire_loop())

    def fetch(self, queue):
        """Wait for FIFO room for ``queue``'s head burst, claim it and book its DMA."""
        burst = queue.peek()
        size = tx_dma_bytes(burst)
        while self.used_bytes > 0 and self.used_bytes + size > self.fifo_bytes:
            self._room = self.env.event()
            yield self._room
        queue.claim()
        self.used_bytes += size
        down, up = self.link.tx_traffic(burst)
        start, end = self.link.down.book(down)
        self.link.up.book(up)
        rate = self.port.tx_link.params.line_rate_gbps
        wire_s = units.transmit_time_s(burst.wire_bytes, rate)
        last_frame_wire_s = units.transmit_time_s(units.frame_wire_bytes(
            burst.header_bytes + min(burst.frame_payload_bytes, burst.payload_bytes)), rate)
        first_frame_s = (end - start) / burst.frames
        ready = max(start + first_frame_s, end + last_frame_wire_s - wire_s)
        self._ready.append((queue, burst, size, ready))
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def _wire_loop(self):
        env = self.env
        while True:
            if not self._ready:
                self._wake = env.event()
                yield self._wake
                self._wake = None
                continue
            queue, burst, size, ready = self._ready.popleft()
            if ready > env.now:
                yield env.timeout(ready - env.now)
            yield self.port.tx_link.transmit(burst)
            self.used_bytes -= size
            if self._room is not None:
                room, self._room = self._room, None
                room.succeed()
            self.port.tx_done(queue, burst)
