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
- A direction is a work-conserving server of link bytes kept in virtual time (the instant it
  frees up and the idle gaps it left, ``PcieChannel``): a transfer is booked arithmetically,
  with no SimPy event of its own, into the channel's idle time from its date on. A burst
  arriving from the wire was arriving for its serialisation time, so its DMA is dated from
  then and may use the time the link was idle since, ahead of work booked meanwhile (a read
  request, another port's burst): the channel fills with the bytes of every port at its own
  rate (a fluid interleaving of the ports), and a burst is in host memory when the channel has
  carried its bytes and no earlier than one frame's DMA after its last bit arrived.
- RX: a frame needs a free descriptor in its host ring (none: dropped before the DMA,
  ``rx_ring_full``, as with DROP_EN) and room in the port's on-card RX FIFO of ``rx_fifo_bytes``
  while it waits for the link (none: ``rx_fifo_overflow``): the FIFO fills when PCIe cannot keep
  up with the wire. A frame occupies the FIFO from arrival until its DMA completes: one SimPy
  event per burst (the DMA completion, which is the burst's arrival in its ring). What of a
  burst fits (descriptors, FIFO bytes) is cut by ``models.base.fit``, the rule of every ring.
- TX: the card fetches the next burst (round-robin over TX queues, ``models.nic``) as soon as the
  port's TX FIFO of ``tx_fifo_bytes`` has room for its first frame (the FIFO drains frame by
  frame as the wire sends, so a TSO segment larger than the FIFO streams through it), so
  fetching overlaps transmission; the wire
  starts a burst once its first frame is in the FIFO and cannot finish it before the DMA has
  delivered its last frame. A TSO segment crosses PCIe once (payload + one header), the wire
  sees every frame's headers. ``TxDma.fetch`` is only the bus arithmetic of a fetch (no events);
  the port's one transmit path (``models.nic.NicPort``) keeps the FIFO and books the wire, and
  without a ``PcieLink`` it is the same path with a free, instantaneous fetch.
Left out: flow-control credits, replay, ACK/NAK and flow-control DLLPs (fold them into
``tlp_overhead_bytes``), MSI-X messages (~28 bytes per interrupt), read-completion boundaries,
memory and root-complex latency, DMA across the socket interconnect.
Units: bytes, Gbps, seconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import simpy
from simpy.events import Timeout

from models import units
from models.base import Burst, Stats, check, fit, frames_of

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
    """One direction of a link: a work-conserving server of link bytes, kept in virtual time.

    A transfer is booked arithmetically (no SimPy event) and may be dated in the past
    (``not_before_s``: bytes that were arriving from the wire may have been moving since). It
    takes the channel's idle time from ``not_before_s`` on, earliest first: the idle gaps left
    between earlier bookings, then the time after ``free_at_s``. So a transfer dated earlier is
    not held back behind work booked since but dated later (a 64-byte read request booked at
    now does not push a burst's DMA that was arriving before it to after itself): it goes
    ahead of that work in the only way that leaves what is already booked (and the completion
    events computed from it) unchanged, by using the time that work left idle, cut across as
    many gaps as it needs (TLPs of different transfers interleave on a link). Work from now on
    stays one contiguous backlog up to ``free_at_s`` (every booking is dated at or before now),
    so the gaps all lie in the past and ``busy_time_s`` stays exact. Gaps older than the
    longest look-back seen so far are forgotten (a longer one later treats them as busy)."""

    _EPS_S = 1e-15  # gaps shorter than this (float dust of splitting) are dropped

    def __init__(self, env: simpy.Environment, name: str, rate_gbps: float):
        self.env, self.name, self.rate_gbps = env, name, rate_gbps
        self.free_at_s = 0.0
        self.link_bytes = 0.0
        self._busy_s = 0.0
        self._gaps: list[list[float]] = []  # idle [start, end] before free_at_s, sorted
        self._lookback_s = 0.0               # the longest now - not_before_s seen

    def book(self, link_bytes: float, not_before_s: float | None = None) -> tuple[float, float]:
        """Reserve ``link_bytes`` of channel time in its idle time from ``not_before_s`` on
        (now, or an instant in the past); returns when they start and finish."""
        now = self.env.now
        t0 = now if not_before_s is None else not_before_s
        assert t0 <= now, f"{self.name}: a transfer cannot be booked for the future"
        dt = units.transmit_time_s(link_bytes, self.rate_gbps)
        self._busy_s += dt
        self.link_bytes += link_bytes
        if now - t0 > self._lookback_s:
            self._lookback_s = now - t0
        gaps, eps = self._gaps, self._EPS_S
        horizon = now - self._lookback_s
        while gaps and gaps[0][1] <= horizon:
            del gaps[0]
        start, left, i = None, dt, 0
        while i < len(gaps) and left > 0.0:
            g0, g1 = gaps[i]
            if g1 <= t0:
                i += 1
                continue
            s = max(g0, t0)
            take = min(g1 - s, left)
            if start is None:
                start = s
            left -= take
            pieces = [p for p in ([g0, s], [s + take, g1]) if p[1] - p[0] > eps]
            gaps[i:i + 1] = pieces
            i += len(pieces)
            if left <= 0.0:
                return start, s + take
        s = max(self.free_at_s, t0)
        if s - self.free_at_s > eps:
            gaps.append([self.free_at_s, s])  # idle until this transfer (all before now)
        self.free_at_s = s + left
        return (s if start is None else start), self.free_at_s

    def idle_s(self, since_s: float) -> float:
        """Idle time of the channel between ``since_s`` and now (what a transfer dated
        ``since_s`` could use before now)."""
        now = self.env.now
        idle = sum(max(0.0, min(g1, now) - max(g0, since_s)) for g0, g1 in self._gaps)
        return idle + max(0.0, now - max(self.free_at_s, since_s))

    def busy_time_s(self) -> float:
        """Busy time up to now: work booked beyond now is not done yet."""
        return self._busy_s - max(0.0, self.free_at_s - self.env.now)

    def counters(self) -> dict[str, float]:
        return {"busy_s": self.busy_time_s(), "link_bytes": self.link_bytes}


class PcieLink:
    """The link of one card, shared by its ports: ``up`` (card -> host) and ``down``."""

    def __init__(self, env: simpy.Environment, name: str, params: PcieParams, node: int = 0):
        self.env, self.name, self.params, self.node = env, name, params, node
        self.up = PcieChannel(env, f"{name}.up", params.link_gbps)
        # PCI-X is one half-duplex bus: both directions queue on the same channel.
        self.down = self.up if params.kind == "pcix" else PcieChannel(env, f"{name}.down",
                                                                      params.link_gbps)

    def channels(self) -> dict[str, PcieChannel]:
        """The two directions (one bus twice for PCI-X)."""
        return {"up": self.up, "down": self.down}

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
    and ``receive(burst)``, ``models.nic.RxQueue``), which gets what was DMA'd: one SimPy event
    per burst, its DMA completion, whose callback is the ring arrival."""

    def __init__(self, env: simpy.Environment, name: str, link: PcieLink, fifo_bytes: int,
                 line_rate_gbps: float, stats: Stats):
        check(fifo_bytes >= 1, f"{name}.rx_fifo_bytes", fifo_bytes, ">= 1")
        self.env, self.link, self.fifo_bytes, self.line_rate_gbps = env, link, fifo_bytes, \
            line_rate_gbps
        self.fifo = stats.stage(f"{name}.rx_fifo")
        self.used_bytes = 0
        self._inflight: dict[object, int] = {}  # frames being DMA'd, per queue
        self._shapes: dict[tuple, tuple] = {}   # per burst shape: (up, down, wire s, frame s)

    def receive(self, burst: Burst, queue) -> None:
        # A free descriptor per frame (counting those being DMA'd), then FIFO room (base.fit).
        ring = queue.ring
        inflight = self._inflight.get(queue, 0)
        room = ring.capacity - ring.used - inflight
        if burst.frames > room:
            burst = fit(burst, room, burst.frames, frames_of, ring.stats, ring.drop_reason)
            if burst is None:
                return
        size = self._resident(burst)
        room = self.fifo_bytes - self.used_bytes
        if size > room:
            burst = fit(burst, room, size, self._resident, self.fifo, "rx_fifo_overflow")
            if burst is None:
                return
            size = self._resident(burst)
        self.used_bytes += size
        self.fifo.arrive(burst.frames, burst.wire_bytes)
        self._inflight[queue] = inflight + burst.frames
        env, link = self.env, self.link
        now = env.now
        up, down, wire_s, last_frame_s = self._shape(burst)
        _, end = link.up.book(up, now - wire_s)  # arriving since: its DMA may have started
        link.down.book(down)
        done = max(end, now + last_frame_s)
        Timeout(env, done - now, (burst, queue, size)).callbacks.append(self._done)

    def _shape(self, burst: Burst) -> tuple:
        """(upstream bytes, downstream bytes, wire time, the last frame's DMA time) of a burst
        of this shape, computed once per shape (bursts repeat shapes)."""
        key = (burst.payload_bytes, burst.frames, burst.header_bytes, burst.frame_payload_bytes)
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) > 4096:
                self._shapes.clear()
            link = self.link
            shape = self._shapes[key] = (
                *link.rx_traffic(burst),
                units.transmit_time_s(burst.wire_bytes, self.line_rate_gbps),
                units.transmit_time_s(link.tlp(units.frame_l2_bytes(
                    burst.header_bytes + min(burst.frame_payload_bytes, burst.payload_bytes))),
                    link.up.rate_gbps))
        return shape

    def _resident(self, burst: Burst) -> int:
        """The FIFO bytes ``burst`` holds when its last frame has arrived. Its frames came in
        over the wire during the last ``wire_s`` and the DMA took them up as the link allowed:
        with an idle link all but the last frame are gone (a burst larger than the FIFO fits
        when the bus outruns the wire); with a backlog that reaches past now, all of it stays."""
        size = rx_dma_bytes(burst)
        if burst.frames <= 1:
            return size
        up = self.link.up
        up_bytes, _, wire_s, _ = self._shape(burst)
        moved_s = up.idle_s(self.env.now - wire_s)  # DMA time it could have had before now
        if moved_s <= 0:
            return size
        # the upstream bytes its DMA books (TLP headers, descriptor write-backs), not its data
        dma_s = units.transmit_time_s(up_bytes, up.rate_gbps)
        frame = -(-size // burst.frames)
        return int(max(frame, size * (1 - min(1.0, moved_s / max(dma_s, wire_s)))))

    def _done(self, event: Timeout) -> None:
        """The DMA of a burst is complete: it leaves the FIFO and arrives in its ring."""
        burst, queue, size = event.value
        self.used_bytes -= size
        self.fifo.depart(burst.frames, burst.wire_bytes)
        self._inflight[queue] -= burst.frames
        queue.receive(burst)


class TxDma:
    """A port's transmit side of the card: the bus work of fetching a burst into its TX FIFO.

    The port's transmitter (``models.nic.NicPort``: round-robin over TX queues, the FIFO's room,
    the wire) calls ``fetch(burst)`` when it takes a burst; no events here."""

    def __init__(self, name: str, link: PcieLink, fifo_bytes: int, line_rate_gbps: float):
        check(fifo_bytes >= 1, f"{name}.tx_fifo_bytes", fifo_bytes, ">= 1")
        self.link, self.fifo_bytes, self.line_rate_gbps = link, fifo_bytes, line_rate_gbps
        self._shapes: dict[tuple, tuple] = {}  # per burst shape: (down, up, wire s - last frame)

    def fetch(self, burst: Burst) -> float:
        """Book the DMA of ``burst`` (read requests up, data and descriptor down, now) and return
        when the wire may start it: once its first frame is in the FIFO, and late enough that
        it does not finish before the DMA has delivered its last frame."""
        link = self.link
        key = (burst.payload_bytes, burst.frames, burst.packets, burst.header_bytes,
               burst.frame_payload_bytes)
        shape = self._shapes.get(key)
        if shape is None:  # the arithmetic of a burst of this shape (bursts repeat shapes)
            if len(self._shapes) > 4096:
                self._shapes.clear()
            rate = self.line_rate_gbps
            wire_s = units.transmit_time_s(burst.wire_bytes, rate)
            last_frame_wire_s = units.transmit_time_s(units.frame_wire_bytes(
                burst.header_bytes + min(burst.frame_payload_bytes, burst.payload_bytes)), rate)
            shape = self._shapes[key] = (*link.tx_traffic(burst), last_frame_wire_s - wire_s)
        down, up, lead_s = shape
        start, end = link.down.book(down)
        link.up.book(up)
        return max(start + (end - start) / burst.frames, end + lead_s)
