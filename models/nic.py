"""A physical NIC port: TX queues served round-robin onto the wire, RX queues drained by
coalesced MSI-X interrupts.

Modelled:
- TX: ``tx_queues`` descriptor rings of ``tx_ring_slots``; a burst
  goes to the queue of its source (``src mod tx_queues``); the port's transmitter takes one burst
  from each non-empty queue in turn (round-robin, as VMDq transmit does for fairness) and puts it
  on its link; a slot is freed when the burst has left, and ``on_tx_space`` callbacks let the
  driver refill. TSO: the NIC cuts a segment of up to ``tso_max_bytes`` into MTU frames on the
  wire (arithmetically, ``models.wire``).
- TX descriptors (``tx_desc_per_packet`` > 0): a packet takes the driver's descriptors, not one
  slot: ``tx_desc_per_packet`` for the packet (ixgbe: a context descriptor for the TSO or
  checksum offload, and one for the linear header) plus one per buffer of its payload, a buffer
  being at most ``tx_desc_buffer_bytes`` (a page fragment of the skb: 4 KB), so a 64 KB TSO
  segment takes 18 of ixgbe's 512 and an ACK 2 (``tx_descriptors``). 0: one slot per packet
  (drivers whose descriptor use is not sourced yet).
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
  into a TX FIFO of ``tx_fifo_bytes`` ahead of the wire (``models.pcie``). The TX FIFO holds
  the fetched bytes the wire has still to send, each burst draining with its wire time: a
  burst is fetched once its
  first frame fits (the card segments on the fly, so a TSO segment larger than the FIFO
  streams through it and the next follows it on the wire without a gap). Without a link the
  bus is ideal (the peer's NIC): a fetch is free and instantaneous, and the FIFO holds only the
  burst on the wire (so the round-robin turn is taken when the wire frees; with one TX queue
  there is no turn to take, and a burst is booked on the wire as soon as it is posted).
- Transmit is one path for both buses, kept in virtual time: a fetch and the wire are booked
  arithmetically when a burst is taken (``TxDma.fetch``, ``Link.transmit``), not by processes
  waking each other. SimPy events per burst: its arrival at the far end (``models.wire``), plus
  a departure event when its last bit leaves if something must happen at that instant: the
  ring has ``on_space`` callbacks to run (a driver that refills, ``on_tx_space``), or a posted
  burst waits for the FIFO room the departure frees. Otherwise the departure (descriptor freed,
  FIFO room, ``tx_*`` counters) is settled lazily: the counters are exact at any instant, a
  ring's slots are freed before the port's next post or fetch. RX: with PCIe one event per
  burst (its DMA completion, ``models.pcie.RxDma``), none without.
Left out: pause frames, flow director.
Units: slots, bytes, cycles; time in seconds.
"""
from __future__ import annotations

import math
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import simpy
from simpy.events import Timeout

from models import units
from models.base import DATA, Burst, Ring, RingPoller, Stats, check
from models.coalescing import CoalescingParams, make_coalescer
from models.cpu import Context
from models.pcie import PcieLink, RxDma, TxDma, tx_dma_bytes
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
    # TX descriptors per packet besides its payload buffers (ixgbe, the default 82598: a context
    # descriptor and the header; 0: the TX ring counts packets) and the payload one buffer
    # descriptor carries (``tx_descriptors``).
    tx_desc_per_packet: int = 2
    tx_desc_buffer_bytes: int = 4096
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
        check(0 <= self.tx_desc_per_packet <= 8, "tx_desc_per_packet", self.tx_desc_per_packet,
              "in 0..8 (0: the TX ring counts packets)")
        check(self.tx_desc_buffer_bytes >= 256, "tx_desc_buffer_bytes",
              self.tx_desc_buffer_bytes, ">= 256")
        check(self.tx_desc_per_packet == 0 or self.tx_ring_slots >= tx_descriptors(
            self.tso_max_bytes, 1, self.tx_desc_per_packet, self.tx_desc_buffer_bytes),
            "tx_ring_slots", self.tx_ring_slots, "enough descriptors for one largest TSO segment")
        check(1500 <= self.tso_max_bytes <= 262144, "tso_max_bytes", self.tso_max_bytes,
              "in 1500..262144")
        check(1500 <= self.lro_max_bytes <= 262144, "lro_max_bytes", self.lro_max_bytes,
              "in 1500..262144")
        check(self.rx_fifo_bytes >= 2048, "rx_fifo_bytes", self.rx_fifo_bytes, ">= 2048")
        check(self.tx_fifo_bytes >= 2048, "tx_fifo_bytes", self.tx_fifo_bytes, ">= 2048")


RxCost = Callable[[list[Burst], bool], dict]  # (batch, is_interrupt) -> {term: cycles}


def tx_descriptors(payload_bytes: int, packets: int, per_packet: int, buffer_bytes: int) -> int:
    """TX descriptors of ``packets`` packets carrying ``payload_bytes`` between them (spread
    evenly): ``per_packet`` each (ixgbe_xmit_frame_ring: a context descriptor and one for the
    linear header, ``TXD_USE_COUNT(skb_headlen)``) plus one per payload buffer of at most
    ``buffer_bytes`` (``TXD_USE_COUNT`` of each page fragment)."""
    per = -(-payload_bytes // packets)
    return packets * (per_packet + -(-per // buffer_bytes))


def _descriptor_counter(params: NicParams) -> Callable[[Burst], int] | None:
    """The TX ring's ``size_of`` (None: the ring counts packets)."""
    per_packet, buffer_bytes = params.tx_desc_per_packet, params.tx_desc_buffer_bytes
    if not per_packet:
        return None
    return lambda b: tx_descriptors(b.payload_bytes, b.packets, per_packet, buffer_bytes)


def _vmdq_queue(dst: int, n: int) -> int:
    """VMDq's layer-2 sorter: endpoint ``dst`` gets queue ``dst + 1`` while queues last; the
    others share the default queue 0."""
    return dst + 1 if 0 <= dst < n - 1 else 0


class RxQueue:
    """One receive queue: ring, coalescer, and the handler its MSI-X vector runs.

    The owner sets ``context`` (where the vector's handler runs), ``cost`` and ``deliver``.
    """

    def __init__(self, env: simpy.Environment, name: str, params: NicParams, stats: Stats):
        self.name = name
        self.ring = Ring(f"{name}.rx_ring", params.rx_ring_slots, stats, unit="frames",
                         drop_reason="rx_ring_full")
        self.coalescer = make_coalescer(env, params.coalescing, self._interrupt)
        self.cost: RxCost = lambda batch, irq: {}
        self.deliver: Callable[[list[Burst]], None] = lambda batch: None
        # What the owner makes of a batch before paying for it (software LRO, say): its result
        # is what ``cost`` and ``deliver`` get; it is given the handler's context.
        self.prepare: Callable[[list[Burst], Context], object] | None = None
        # The vector's handler: takes everything in the ring, polls again before re-enabling.
        # Hardware LRO merges what the ring admitted (frame by frame), as the handler takes it.
        self._lro_max = params.lro_max_bytes if params.lro else 0
        self._lro_tunnelled = params.lro_tunnelled
        self.poller = RingPoller(self.ring, None, self._pass_cost, lambda t: self.deliver(t[0]),
                                 take=self._take)

    def _take(self, batch: list[Burst]) -> tuple[object, int, int]:
        """Hardware LRO (tunnelled VXLAN frames only with ``lro_tunnelled``: otherwise the NIC
        sees outer UDP headers and cannot merge), the coalescer's byte count, then the owner's
        ``prepare``. Returns (what the owner gets, frames, IP bytes)."""
        if self._lro_max:
            batch = [b if b.encap_bytes and not self._lro_tunnelled
                     else b.aggregated(self._lro_max) for b in batch]
        frames = n_bytes = 0
        for b in batch:
            frames += b.frames
            n_bytes += b.ip_bytes
        self.coalescer.account(frames, n_bytes)
        taken = batch if self.prepare is None else self.prepare(batch, self.poller.context)
        return taken, frames, n_bytes

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

    def counters(self) -> dict[str, float]:
        """Cumulative: interrupts raised, frames the handler took from the ring."""
        return {"interrupts": self.coalescer.interrupts,
                "frames": self.ring.stats.departed_frames}

    def receive(self, burst: Burst) -> None:
        accepted = self.ring.offer(burst)
        if accepted is not None and not self.poller.busy:
            self.coalescer.notify(accepted.frames)

    def _interrupt(self) -> None:
        self.poller.kick(is_interrupt=True)

    def _pass_cost(self, taken: tuple, is_interrupt: bool) -> tuple[dict, int, int]:
        # NUMA: the handler reads frames in buffers homed on the card's node (its home).
        return self.cost(taken[0], is_interrupt), taken[1], taken[2]


class TxBacklog:
    """A software queue in front of a port's TX rings: the vswitch's pending-TX queue (one per
    team member), a guest qdisc. A burst goes straight into its TX ring when nothing waits and
    the ring has room; otherwise it waits in ``ring`` (a ``Ring`` of packets; full: dropped for
    the ring's reason); slots the port frees drain it in FIFO order. A burst of more packets
    than a TX ring holds waits for an empty ring only, and the ring then drops what does not
    fit (``tx_ring_full``) instead of stalling the port for ever."""

    __slots__ = ("ring", "nic")

    def __init__(self, ring: Ring, nic: "NicPort"):
        self.ring, self.nic = ring, nic
        nic.on_tx_space(self.drain)

    def send(self, burst: Burst) -> None:
        if not len(self.ring) and self._fits(burst):
            self.nic.send(burst)
        else:
            self.ring.offer(burst)

    def _fits(self, burst: Burst) -> bool:
        ring = self.nic.tx_queue(burst)
        return ring.free >= min(ring.size_of(burst), ring.capacity)

    def drain(self) -> None:
        ring = self.ring
        while len(ring) and self._fits(ring.peek()):
            burst = ring.claim()
            ring.release_one(burst)
            self.nic.send(burst)


class NicPort:
    """One port of a NIC: its link out, its TX queues, its RX queues.

    Transmit is one path whatever the bus (module docstring): ``send`` posts a burst to its
    ring; the port takes bursts round-robin while its TX FIFO has room, books each fetch on the
    bus (``TxDma.fetch``; free and instantaneous without a ``PcieLink``) and the wire
    (``Link.transmit``), and frees the slot when the last bit has left."""

    def __init__(self, env: simpy.Environment, name: str, params: NicParams, stats: Stats,
                 rss_salt: int = 0, pcie: PcieLink | None = None, rss_to_vnic: bool = False):
        """``rss_to_vnic``: the RSS queues are the set a vNIC asked for through NetQueue
        (vSphere 6.0's vmxnet3 RSS, ``guest_mapped``), not a hash over every endpoint's flows
        into the host's memory (KVM's multiqueue virtio-net: vhost-net copies)."""
        self.env, self.name, self.params, self.pcie = env, name, params, pcie
        self.rss_to_vnic = rss_to_vnic
        self.tx_link = Link(env, f"{name}.wire_tx", params.link, stats)
        desc = _descriptor_counter(params)
        self.tx_queues = [Ring(f"{name}.txq{k}.tx_ring", params.tx_ring_slots, stats,
                               unit="packets" if desc is None else "descriptors",
                               drop_reason="tx_ring_full", size_of=desc)
                          for k in range(params.tx_queues)]
        self.rx_queues = [RxQueue(env, f"{name}.rxq{k}", params, stats)
                          for k in range(params.rx_queues)]
        self.rss_salt = rss_salt
        self._rss: dict[int, int] = {}  # flow -> RX queue (the salted hash, computed once)
        self.rx_frames = self.rx_wire_bytes = 0
        self.rx_dma = self.tx_dma = None
        if pcie is not None:
            self.rx_dma = RxDma(env, name, pcie, params.rx_fifo_bytes, params.link.line_rate_gbps,
                                stats)
            self.tx_dma = TxDma(name, pcie, params.tx_fifo_bytes, params.link.line_rate_gbps)
            self._fifo_bytes = params.tx_fifo_bytes
        else:
            # The ideal bus. With several queues the FIFO holds only the burst on the wire, so
            # the round-robin turn is taken when the wire frees; with one queue there is no turn
            # to take and a burst can be booked when it is posted (the same wire times).
            self._fifo_bytes = math.inf if params.tx_queues == 1 else 0
        self._fifo_used = 0
        self._room_timer = False    # a wake-up for FIFO room (before the next departure)
        # Fetched bursts until their last bit has left: (end_s, queue, burst, FIFO bytes, eager).
        # An eager one has on_space callbacks to run then: a departure event is scheduled for
        # it. The others leave lazily (the next send, fetch or departure event settles them).
        self._sent: deque[tuple] = deque()
        self._eager = 0             # eager entries in _sent
        self._blocked = False       # a posted burst waits for FIFO room
        self._timer = False         # a departure event is scheduled
        self._departing = False     # inside a departure: sends only post (the fetch follows)
        self._rr = 0
        self._tx_packets = self._tx_frames = self._tx_wire_bytes = 0  # of settled departures

    # -- transmit -------------------------------------------------------------------------
    def tx_queue(self, burst: Burst) -> Ring:
        return self.tx_queues[burst.src % len(self.tx_queues)]

    def send(self, burst: Burst) -> Burst | None:
        """Post a burst to its TX queue; returns what was accepted (None: ring full)."""
        q = self.tx_queues[burst.src % len(self.tx_queues)]
        if self._departing:
            return q.offer(burst)
        # Free the slots (and FIFO room) of bursts that have left, then take what fits; a
        # single queue that already waits for FIFO room only gets longer.
        settled = self._settle(self.env.now, eager=False) if self._sent else False
        accepted = q.offer(burst)
        if accepted is not None and (settled or not self._blocked or len(self.tx_queues) > 1):
            self._pump()
        return accepted

    def on_tx_space(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever a TX slot is freed (a burst has left the wire)."""
        for q in self.tx_queues:
            q.on_space.append(callback)

    @property
    def tx_packets(self) -> int:
        """Packets whose last bit has left (a TSO segment is one)."""
        now = self.env.now
        return self._tx_packets + sum(e[2].packets for e in self._sent if e[0] <= now)

    @property
    def tx_frames(self) -> int:
        now = self.env.now
        return self._tx_frames + sum(e[2].frames for e in self._sent if e[0] <= now)

    @property
    def tx_wire_bytes(self) -> float:
        """Bytes on the wire up to now: a burst still leaving counts the share its wire time
        has sent (a TSO burst straddling the end of a measurement window would otherwise count
        whole and put the port above its line rate)."""
        now = self.env.now
        total = self._tx_wire_bytes
        for end, _, burst, _, _ in self._sent:
            if end <= now:
                total += burst.wire_bytes
            else:
                wire_s = self._wire_s(burst)
                total += burst.wire_bytes * max(0.0, 1.0 - (end - now) / wire_s)
        return total

    def backlog_flows(self, limit: int, exclude: int, scan: int = 64) -> int:
        """Distinct flows other than ``exclude`` among the last data bursts booked on the wire
        whose last bit has not left yet (the newest first; at most ``limit``, looking at no
        more than ``scan`` bursts): the segments a burst posted now goes out beside."""
        now, seen = self.env.now, set()
        for k, (end, _, burst, _, _) in enumerate(reversed(self._sent)):
            if end <= now or k >= scan:
                break
            if burst.kind == DATA and burst.flow != exclude:
                seen.add(burst.flow)
                if len(seen) >= limit:
                    break
        return len(seen)

    def _next_tx_queue(self) -> Ring | None:
        """The first non-empty queue from the round-robin pointer (its turn; not taken yet)."""
        queues = self.tx_queues
        n = len(queues)
        if n == 1:
            return queues[0] if len(queues[0]) else None
        for i in range(n):
            q = queues[(self._rr + i) % n]
            if len(q):
                return q
        return None

    def _wire_s(self, burst: Burst) -> float:
        return units.transmit_time_s(burst.wire_bytes, self.params.link.line_rate_gbps)

    def _fifo_level(self, now: float) -> float:
        """Bytes in the TX FIFO at ``now``: those fetched and not yet on the wire. The FIFO
        drains frame by frame as the wire sends (a TSO segment larger than the FIFO streams
        through it): a burst on the wire holds the share of its fetched bytes that its wire
        time has still to send (DMA bytes, as the FIFO counts them; its wire time also covers
        preamble, gap and every frame's headers)."""
        level = 0.0
        for end, _, burst, size, _ in reversed(self._sent):   # wire order: ends increase
            if end <= now:
                break
            left = (end - now) / self._wire_s(burst)
            level += size if left >= 1.0 else size * left
        return level

    def _room_at(self, target: float) -> float:
        """When the FIFO's level falls to ``target`` bytes (``_fifo_level`` solved for the
        time, burst by burst from the last one booked)."""
        tail = 0.0
        for end, _, burst, size, _ in reversed(self._sent):
            if tail + size > target:
                return end - self._wire_s(burst) * (target - tail) / size
            tail += size
        return self.env.now

    def _pump(self) -> None:
        """Take bursts, the queue whose turn it is first, while the TX FIFO has room (an empty
        FIFO takes any burst); book each one's fetch on the bus and its time on the wire.
        With a bus the card fetches a burst frame by frame as room frees (segmentation is done
        on the fly), so a burst is taken once its first frame fits in what the wire has not
        yet drained; without one the FIFO is counted in whole bursts."""
        env, dma, link, sent = self.env, self.tx_dma, self.tx_link, self._sent
        self._blocked = False
        need = 0.0
        while True:
            q = self._next_tx_queue()
            if q is None:
                break
            burst = q.peek()
            size = 1 if dma is None else tx_dma_bytes(burst)
            if dma is None:
                used, need = self._fifo_used, size
            else:
                used = self._fifo_level(env.now)
                need = min(size, units.frame_l2_bytes(
                    burst.header_bytes + min(burst.frame_payload_bytes, burst.payload_bytes)))
            if used > 0 and used + need > self._fifo_bytes + 0.5:
                self._blocked = True
                break
            q.claim()
            if len(self.tx_queues) > 1:
                self._rr = (self.tx_queues.index(q) + 1) % len(self.tx_queues)
            self._fifo_used += size
            end = link.transmit(burst, None if dma is None else dma.fetch(burst))
            eager = bool(q.on_space)
            self._eager += eager
            sent.append((end, q, burst, size, eager))
        if not self._timer and sent and (self._eager or (self._blocked and dma is None)):
            self._timer = True
            end = sent[0][0]
            Timeout(env, end - env.now, end).callbacks.append(self._departure)
        if self._blocked and dma is not None and not self._room_timer:
            # Room for the waiting burst's first frame: when the wire's backlog has drained to
            # the FIFO's size less that frame.
            at = self._room_at(self._fifo_bytes - need)
            self._room_timer = True
            # (never at once: a wake-up that found no room again must not spin in place)
            Timeout(env, max(at - env.now, 1e-12), at).callbacks.append(self._room)

    def _room(self, event: Timeout) -> None:
        """The FIFO has room for the waiting burst's first frame: settle what has left (as a
        departure does) and take what fits."""
        self._room_timer = False
        self._departing = True
        self._settle(self.env.now, eager=True)
        self._departing = False
        self._pump()

    def _departure(self, event: Timeout) -> None:
        """The first burst on the wire has left: settle it (and any other that has), then take
        what the freed FIFO room and refilled rings allow."""
        self._timer = False
        self._departing = True
        self._settle(max(event.value, self.env.now), eager=True)
        self._departing = False
        self._pump()

    def _settle(self, until_s: float, eager: bool) -> bool:
        """Bursts whose last bit left by ``until_s``, in wire order: count them, free their FIFO
        room and their descriptor (running on_space callbacks). Without ``eager``, stop at the
        first burst with callbacks (its departure event runs them). True if any was settled."""
        sent = self._sent
        settled = False
        while sent and sent[0][0] <= until_s:
            if sent[0][4]:
                if not eager:
                    break
                self._eager -= 1
            _, q, burst, size, _ = sent.popleft()
            self._fifo_used -= size
            self._tx_packets += burst.packets
            self._tx_frames += burst.frames
            self._tx_wire_bytes += burst.wire_bytes
            q.release_one(burst)
            settled = True
        return settled

    # -- receive --------------------------------------------------------------------------
    def rx_queue_index(self, burst: Burst) -> int:
        n, sort = len(self.rx_queues), self.params.rx_sort
        if n == 1 or sort == "single":
            return 0
        if sort == "vmdq":
            return _vmdq_queue(burst.dst, n)
        return self.rss_queue(burst.flow)

    def shared_queues(self, dsts) -> set[int]:
        """The RX queues whose frames can be for more than one of the endpoints ``dsts`` (the
        vNIC ports behind this port): those the sorter did not dedicate to one destination,
        where the host must classify frames in software. RSS hashes every endpoint's flows
        over all queues."""
        dsts = list(dsts)
        n, sort = len(self.rx_queues), self.params.rx_sort
        if len(dsts) < 2:
            return set()
        if n == 1 or sort == "single" or sort == "rss":
            return set(range(n))
        seen: dict[int, int] = {}
        for d in dsts:
            k = _vmdq_queue(d, n)
            seen[k] = seen.get(k, 0) + 1
        return {k for k, c in seen.items() if c > 1}

    def guest_mapped(self, k: int, dst: int, dsts=()) -> bool:
        """Whether RX queue ``k`` is assigned to endpoint ``dst``'s vNIC, so that NetQueue maps
        its buffers into that VM's memory ("Receive queues can be assigned to each virtual NIC
        and mapped to guest memory to avoid a copy", 004): the NIC's DMA fills the guest's
        buffers and the vNIC backend copies nothing. Such a queue is the one VMDq's sorter
        dedicates to ``dst``, or, with ``rss_to_vnic``, one of the RSS queues ``dst``'s vNIC
        requested (003: "the vNIC has to request more queues"; vSphere 6.0 lets "multiple
        hardware queues ... push data to vNICs simultaneously") while no other endpoint of
        ``dsts`` (the vNIC ports behind this port) shares them (``shared_queues``)."""
        n = len(self.rx_queues)
        if self.params.rx_sort == "rss":
            return self.rss_to_vnic and n > 1 and k not in self.shared_queues(dsts)
        return self.params.rx_sort == "vmdq" and n > 1 and k >= 1 and _vmdq_queue(dst, n) == k

    def rss_queue(self, flow: int) -> int:
        """The RX queue RSS hashes ``flow`` to (a salted CRC of the flow, computed once)."""
        k = self._rss.get(flow)
        if k is None:
            k = self._rss[flow] = zlib.crc32(f"{self.rss_salt}:{flow}".encode()) % len(
                self.rx_queues)
        return k

    def receive(self, burst: Burst) -> None:
        """A burst arrives from the wire."""
        self.rx_frames += burst.frames
        self.rx_wire_bytes += burst.wire_bytes
        q = self.rx_queues[0] if len(self.rx_queues) == 1 else \
            self.rx_queues[self.rx_queue_index(burst)]
        if self.rx_dma is not None:
            self.rx_dma.receive(burst, q)
        else:
            q.receive(burst)

    def wire_rx(self, context: Context | list[Context], cost: RxCost,
                deliver: Callable[[list[Burst]], None], prepare=None) -> None:
        """Give every RX queue its handler: one context for all, or one per queue; the handler
        pays ``cost(taken, is_interrupt)`` and calls ``deliver(taken)``, where ``taken`` is
        ``prepare(batch, context)`` (default: the batch after hardware LRO)."""
        contexts = context if isinstance(context, list) else [context] * len(self.rx_queues)
        for q, ctx in zip(self.rx_queues, contexts):
            q.context, q.cost, q.deliver, q.prepare = ctx, cost, deliver, prepare

    @property
    def interrupts(self) -> int:
        return sum(q.coalescer.interrupts for q in self.rx_queues)

    @property
    def rx_delivered_frames(self) -> int:
        return sum(q.ring.stats.departed_frames for q in self.rx_queues)

    def counters(self) -> dict[str, float]:
        """Cumulative: what left on the wire (packets: TSO segments count one), what arrived
        and what the RX handlers took, interrupts."""
        return {"tx_packets": self.tx_packets, "tx_frames": self.tx_frames,
                "tx_wire_bytes": self.tx_wire_bytes, "rx_frames": self.rx_frames,
                "rx_wire_bytes": self.rx_wire_bytes,
                "rx_delivered_frames": self.rx_delivered_frames, "interrupts": self.interrupts}
