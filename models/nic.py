"""A physical NIC port: TX queues served round-robin onto the wire, RX queues drained by
coalesced MSI-X interrupts.

Modelled:
- TX: ``tx_queues`` descriptor rings counted in packets (a TSO segment is one packet); a burst
  goes to the queue of its source (``src mod tx_queues``); the port's transmitter takes one burst
  from each non-empty queue in turn (round-robin, as VMDq transmit does for fairness) and puts it
  on its link; a slot is freed when the burst has left, and ``on_tx_space`` callbacks let the
  driver refill. TSO: the NIC cuts a segment of up to ``tso_max_bytes`` into MTU frames on the
  wire (arithmetically, ``models.wire``).
- RX: ``rx_queues`` rings of ``rx_ring_slots`` frame descriptors. The sorter picks the queue:
  ``single`` (queue 0), ``vmdq`` (a layer-2 sorter: the VM with index i gets queue i+1 while
  queues last, every other VM shares the default queue 0), ``rss`` (a hash of the flow, salted
  per port, over all queues). A frame that finds its ring full is dropped (``rx_ring_full``).
  Each queue has its own coalescing and MSI-X vector; the vector's handler (a context on some
  core) takes everything in the ring, pays the cost its owner supplies, frees the descriptors and
  passes the batch up; it polls again before re-enabling the interrupt (NAPI).
- Hardware LRO (``lro``): received data frames of a flow are merged into aggregates of up to
  ``lro_max_bytes`` before the host sees them (per-packet costs then apply per aggregate). The
  merge happens after the FIFO and the ring admitted the frames one by one (a full ring drops
  frames, not a whole aggregate), when the handler takes the batch. VXLAN-tunnelled frames are
  merged only with ``lro_tunnelled`` (a NIC or driver that parses the inner headers).
- PCIe (when the port is given its card's ``PcieLink``): RX frames wait in an on-card RX FIFO
  of ``rx_fifo_bytes`` for their DMA (overflow: ``rx_fifo_overflow``); TX bursts are fetched
  into a TX FIFO of ``tx_fifo_bytes`` ahead of the wire (``models.pcie``). Without a link the
  bus is ideal (the peer's NIC).
Left out: pause frames, flow director.
Units: slots, bytes, cycles.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable

import simpy

from models.base import Burst, Ring, RingPoller, Stats, check
from models.coalescing import CoalescingParams, make_coalescer
from models.cpu import Context
from models.pcie import PcieLink, RxDma, TxDma
from models.wire import Link, LinkParams

RX_SORTS = ("single", "vmdq", "rss")


@dataclass(frozen=True)
class NicParams:
    link: LinkParams = field(default_factory=LinkParams)
    tx_queues: int = 1
    rx_queues: int = 1
    rx_sort: str = "single"
    tx_ring_slots: int = 512
    rx_ring_slots: int = 512
    tso: bool = True
    tso_max_bytes: int = 65536
    lro: bool = False
    lro_max_bytes: int = 65536
    lro_tunnelled: bool = False  # LRO also merges VXLAN frames (by their inner headers)
    rx_fifo_bytes: int = 524288  # on-card packet buffers (82598/82599: 512 KB RX, 160 KB TX)
    tx_fifo_bytes: int = 163840
    coalescing: CoalescingParams = field(default_factory=CoalescingParams)

    def __post_init__(self):
        check(1 <= self.tx_queues <= 128, "tx_queues", self.tx_queues, "in 1..128")
        check(1 <= self.rx_queues <= 128, "rx_queues", self.rx_queues, "in 1..128")
        check(self.rx_sort in RX_SORTS, "rx_sort", self.rx_sort, f"one of {RX_SORTS}")
        check(self.tx_ring_slots >= 1, "tx_ring_slots", self.tx_ring_slots, ">= 1")
        check(self.rx_ring_slots >= 1, "rx_ring_slots", self.rx_ring_slots, ">= 1")
        check(1500 <= self.tso_max_bytes <= 262144, "tso_max_bytes", self.tso_max_bytes,
              "in 1500..262144")
        check(1500 <= self.lro_max_bytes <= 262144, "lro_max_bytes", self.lro_max_bytes,
              "in 1500..262144")
        check(self.rx_fifo_bytes >= 2048, "rx_fifo_bytes", self.rx_fifo_bytes, ">= 2048")
        check(self.tx_fifo_bytes >= 2048, "tx_fifo_bytes", self.tx_fifo_bytes, ">= 2048")


RxCost = Callable[[list[Burst], bool], float]  # (batch, is_interrupt) -> cycles


class RxQueue:
    """One receive queue: ring, coalescer, and the handler its MSI-X vector runs.

    The owner sets ``context`` (where the vector's handler runs), ``cost`` and ``deliver``.
    """

    def __init__(self, env: simpy.Environment, name: str, params: NicParams, stats: Stats):
        self.name = name
        self.ring = Ring(f"{name}.rx_ring", params.rx_ring_slots, stats, unit="frames",
                         drop_reason="rx_ring_full")
        self.coalescer = make_coalescer(env, params.coalescing, self._interrupt)
        self.cost: RxCost = lambda batch, irq: 0.0
        self.deliver: Callable[[list[Burst]], None] = lambda batch: None
        # The vector's handler: takes everything in the ring, polls again before re-enabling.
        # Hardware LRO merges what the ring admitted (frame by frame), as the handler takes it.
        lro_max = params.lro_max_bytes if params.lro else 0
        self.poller = RingPoller(self.ring, None, self._pass_cost, lambda b: self.deliver(b),
                                 take=self._lro if lro_max else None)
        self._lro_max, self._lro_tunnelled = lro_max, params.lro_tunnelled

    def _lro(self, batch: list[Burst]) -> list[Burst]:
        """Hardware LRO of a handler's batch; tunnelled (VXLAN) frames only with
        ``lro_tunnelled`` (otherwise the NIC sees outer UDP headers and cannot merge)."""
        return [b if b.encap_bytes and not self._lro_tunnelled else b.aggregated(self._lro_max)
                for b in batch]

    @property
    def context(self) -> Context | None:
        """Where the vector's handler runs."""
        return self.poller.context

    @context.setter
    def context(self, ctx: Context | None) -> None:
        self.poller.context = ctx

    @property
    def polls(self) -> int:
        return self.poller.polls

    def receive(self, burst: Burst) -> None:
        accepted = self.ring.offer(burst)
        if accepted is not None and not self.poller.busy:
            self.coalescer.notify(accepted.frames)

    def _interrupt(self) -> None:
        self.poller.kick(is_interrupt=True)

    def _pass_cost(self, batch: list[Burst], is_interrupt: bool) -> tuple[float, int, int]:
        frames, n_bytes = sum(b.frames for b in batch), sum(b.ip_bytes for b in batch)
        self.coalescer.account(frames, n_bytes)
        # NUMA: the handler reads frames in buffers homed on the card's node (its home).
        return self.cost(batch, is_interrupt), frames, n_bytes


class NicPort:
    """One port of a NIC: its link out, its TX queues, its RX queues."""

    def __init__(self, env: simpy.Environment, name: str, params: NicParams, stats: Stats,
                 rss_salt: int = 0, pcie: PcieLink | None = None):
        self.env, self.name, self.params, self.pcie = env, name, params, pcie
        self.tx_link = Link(env, f"{name}.wire_tx", params.link, stats)
        self.tx_queues = [Ring(f"{name}.txq{k}.tx_ring", params.tx_ring_slots, stats,
                               unit="packets", drop_reason="tx_ring_full")
                          for k in range(params.tx_queues)]
        self.rx_queues = [RxQueue(env, f"{name}.rxq{k}", params, stats)
                          for k in range(params.rx_queues)]
        self.rss_salt = rss_salt
        self.tx_packets = self.tx_frames = self.rx_frames = 0
        self.tx_wire_bytes = self.rx_wire_bytes = 0
        self._rr = 0
        self._tx_wakeup: simpy.Event | None = None
        self.rx_dma = self.tx_dma = None
        if pcie is not None:
            self.rx_dma = RxDma(env, name, pcie, params.rx_fifo_bytes, params.link.line_rate_gbps,
                                stats)
            self.tx_dma = TxDma(env, self, pcie, params.tx_fifo_bytes)
        env.process(self._tx_loop())

    # -- transmit -------------------------------------------------------------------------
    def tx_queue(self, burst: Burst) -> Ring:
        return self.tx_queues[burst.src % len(self.tx_queues)]

    def send(self, burst: Burst) -> Burst | None:
        """Post a burst to its TX queue; returns what was accepted (None: ring full)."""
        accepted = self.tx_queue(burst).offer(burst)
        if accepted is not None and self._tx_wakeup is not None and not self._tx_wakeup.triggered:
            self._tx_wakeup.succeed()
        return accepted

    def on_tx_space(self, callback: Callable[[], None]) -> None:
        for q in self.tx_queues:
            q.on_space.append(callback)

    def _next_tx_queue(self) -> Ring | None:
        n = len(self.tx_queues)
        for i in range(n):
            q = self.tx_queues[(self._rr + i) % n]
            if len(q):
                self._rr = (self._rr + i + 1) % n
                return q
        return None

    def _tx_loop(self):
        while True:
            q = self._next_tx_queue()
            if q is None:
                self._tx_wakeup = self.env.event()
                yield self._tx_wakeup
                self._tx_wakeup = None
                continue
            if self.tx_dma is not None:  # fetched over PCIe; the DMA stage feeds the wire
                yield from self.tx_dma.fetch(q)
                continue
            burst = q.claim()
            yield self.tx_link.transmit(burst)
            self.tx_done(q, burst)

    def tx_done(self, q: Ring, burst: Burst) -> None:
        """``burst`` has left on the wire: count it and free its descriptor."""
        self.tx_packets += burst.packets
        self.tx_frames += burst.frames
        self.tx_wire_bytes += burst.wire_bytes
        q.release([burst])

    # -- receive --------------------------------------------------------------------------
    def rx_queue_index(self, burst: Burst) -> int:
        n, sort = len(self.rx_queues), self.params.rx_sort
        if n == 1 or sort == "single":
            return 0
        if sort == "vmdq":
            return burst.dst + 1 if 0 <= burst.dst < n - 1 else 0
        return zlib.crc32(f"{self.rss_salt}:{burst.flow}".encode()) % n  # rss

    def receive(self, burst: Burst) -> None:
        """A burst arrives from the wire."""
        self.rx_frames += burst.frames
        self.rx_wire_bytes += burst.wire_bytes
        q = self.rx_queues[self.rx_queue_index(burst)]
        if self.rx_dma is not None:
            self.rx_dma.receive(burst, q)
        else:
            q.receive(burst)

    def wire_rx(self, context: Context | list[Context], cost: RxCost,
                deliver: Callable[[list[Burst]], None]) -> None:
        """Give every RX queue its handler: one context for all, or one per queue."""
        contexts = context if isinstance(context, list) else [context] * len(self.rx_queues)
        for q, ctx in zip(self.rx_queues, contexts):
            q.context, q.cost, q.deliver = ctx, cost, deliver

    @property
    def interrupts(self) -> int:
        return sum(q.coalescer.interrupts for q in self.rx_queues)

    @property
    def rx_delivered_frames(self) -> int:
        return sum(q.ring.stats.departed_frames for q in self.rx_queues)
