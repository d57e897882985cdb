"""What every model shares: the burst record, the cycle-cost formula, rings, counters.

A *burst* is the unit that moves through the simulation (DESIGN.md, granularity): a TSO segment
on transmit, an interrupt's worth of frames on receive, a train of ACKs. It carries its frame and
packet counts and bytes; per-frame costs and wire time are computed from the counts, never by an
event per frame. A buffer that has room for part of a burst keeps its first whole packets
(``fit``, one rule for rings and the NIC's DMA stages).

Units: bytes, frames, packets, cycles; time in seconds (SimPy).
"""
from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

from models import units

DATA = "data"
ACK = "ack"
UDP = "udp"
ECHO = "echo"              # an ICMP echo request (ping)
ECHO_REPLY = "echo_reply"  # an ICMP echo reply, sent by the kernel that took the request


def check(cond: bool, name: str, value, allowed: str) -> None:
    """Raise a ValueError naming the parameter, its value and what is allowed."""
    if not cond:
        raise ValueError(f"{name}={value!r}: must be {allowed}")


@dataclass(frozen=True)
class CycleCost:
    """Cycles charged by one processing stage: fixed + per packet + per byte.

    ``fixed_cycles`` is paid once per invocation (a call, an interrupt, a batch). VM exits and
    binary-translation traps are counted by the device and priced by the hypervisor profile.
    """

    fixed_cycles: float = 0.0
    per_packet_cycles: float = 0.0
    per_byte_cycles: float = 0.0

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            check(v >= 0, f.name, v, ">= 0")

    def cycles(self, packets: float = 0, n_bytes: float = 0, invocations: float = 1) -> float:
        return (self.fixed_cycles * invocations + self.per_packet_cycles * packets
                + self.per_byte_cycles * n_bytes)

    def scaled(self, factor: float) -> "CycleCost":
        return CycleCost(self.fixed_cycles * factor, self.per_packet_cycles * factor,
                         self.per_byte_cycles * factor)


class Burst:
    """A group of frames of one flow moving together.

    ``frames`` is what the wire and the receive rings see; ``packets`` is what the host stack sees
    (a TSO segment is one packet of many frames; an LRO aggregate likewise). ``payload_bytes`` is
    transport payload; ``header_bytes`` is IP+transport header per frame. ``wire_bytes`` (framing
    and padding included, ``units.burst_wire_bytes``) is a plain field computed from the counts
    when the burst is made; the counts are not changed afterwards (``_copy`` makes a new burst).

    A plain class with ``__slots__`` (it was a dataclass): bursts are made and copied several
    times per hop. Constructor, field names and field-wise ``==`` are the dataclass's.
    """

    __slots__ = ("kind", "flow", "payload_bytes", "frames", "packets", "header_bytes",
                 "frame_payload_bytes", "seq", "ack", "window_bytes", "sack_edge", "psh", "dup",
                 "sent_s", "echo_s", "retransmit", "dst", "src", "encap_bytes", "piggyback",
                 "spread_s", "wire_bytes")
    __hash__ = None  # mutable, compared field by field (as the dataclass was)

    def __init__(self, kind: str, flow: int, payload_bytes: int, frames: int, packets: int,
                 header_bytes: int, frame_payload_bytes: int,
                 seq: int = 0,             # first payload byte (TCP data)
                 ack: int = 0,             # cumulative ACK (TCP ACK)
                 window_bytes: int = 0,    # advertised receive window (TCP ACK)
                 sack_edge: int = 0,       # first byte held out of order above ``ack`` (0: none)
                 psh: bool = False,
                 dup: bool = False,        # a duplicate ACK train
                 sent_s: float = 0.0,      # when the sender emitted it (RTT samples)
                 echo_s: float = -1.0,     # the sent_s echoed back by an ACK (timestamp option)
                 retransmit: bool = False,
                 dst: int = 0,             # destination endpoint id (VM index, or -1: the peer)
                 src: int = 0,             # source endpoint id (same numbering)
                 encap_bytes: int = 0,     # tunnel headers per frame in header_bytes (VXLAN: 50)
                 piggyback: "Burst | None" = None,  # a reverse-direction ACK riding on data
                 # the time its frames took to arrive, interleaved frame by frame with other
                 # flows' frames on the wire (0: back to back; ``models.peer``)
                 spread_s: float = 0.0):
        self.kind = kind
        self.flow = flow
        self.payload_bytes = payload_bytes
        self.frames = frames
        self.packets = packets
        self.header_bytes = header_bytes
        self.frame_payload_bytes = frame_payload_bytes
        self.seq = seq
        self.ack = ack
        self.window_bytes = window_bytes
        self.sack_edge = sack_edge
        self.psh = psh
        self.dup = dup
        self.sent_s = sent_s
        self.echo_s = echo_s
        self.retransmit = retransmit
        self.dst = dst
        self.src = src
        self.encap_bytes = encap_bytes
        self.piggyback = piggyback
        self.spread_s = spread_s
        self.wire_bytes = units.burst_wire_bytes(payload_bytes, frames, header_bytes,
                                                 frame_payload_bytes)

    def _clone(self) -> "Burst":
        """A shallow copy, ``wire_bytes`` included (for changes that keep the counts)."""
        new = _new_object(Burst)
        new.kind = self.kind
        new.flow = self.flow
        new.payload_bytes = self.payload_bytes
        new.frames = self.frames
        new.packets = self.packets
        new.header_bytes = self.header_bytes
        new.frame_payload_bytes = self.frame_payload_bytes
        new.seq = self.seq
        new.ack = self.ack
        new.window_bytes = self.window_bytes
        new.sack_edge = self.sack_edge
        new.psh = self.psh
        new.dup = self.dup
        new.sent_s = self.sent_s
        new.echo_s = self.echo_s
        new.retransmit = self.retransmit
        new.dst = self.dst
        new.src = self.src
        new.encap_bytes = self.encap_bytes
        new.piggyback = self.piggyback
        new.spread_s = self.spread_s
        new.wire_bytes = self.wire_bytes
        return new

    def _copy(self, **changes) -> "Burst":
        """A shallow copy with ``changes`` (field name -> value); ``wire_bytes`` follows."""
        new = self._clone()
        for name, value in changes.items():
            setattr(new, name, value)
        if not _COUNTS.isdisjoint(changes):
            new.wire_bytes = units.burst_wire_bytes(new.payload_bytes, new.frames,
                                                    new.header_bytes, new.frame_payload_bytes)
        return new

    @property
    def ip_bytes(self) -> int:
        return self.payload_bytes + self.frames * self.header_bytes

    @property
    def frames_per_packet(self) -> int:
        """Frames of one packet: 1 for plain frames, more for a TSO segment or LRO aggregate
        (the last of several aggregates may be shorter; this is the longest)."""
        return -(-self.frames // self.packets)

    def head(self, n_packets: int) -> "Burst":
        """The first ``n_packets`` whole packets (what a ring with that much room accepts)."""
        assert 0 < n_packets < self.packets
        n_frames = n_packets * -(-self.frames // self.packets)
        payload = min(self.payload_bytes, n_frames * self.frame_payload_bytes)
        new = self._clone()
        new.frames, new.packets, new.payload_bytes = n_frames, n_packets, payload
        new.wire_bytes = units.burst_wire_bytes(payload, n_frames, self.header_bytes,
                                                self.frame_payload_bytes)
        return new

    def aggregated(self, max_bytes: int, pieces: int = 1) -> "Burst":
        """After LRO: consecutive data frames merged into aggregates of up to ``max_bytes``;
        with ``pieces`` > 1 its frames reached the merger in that many near-equal parts (polls),
        each merged on its own (an LRO flushes what it holds at the end of a poll)."""
        if self.kind != DATA or max_bytes <= 0:
            return self
        per = max(1, max_bytes // self.frame_payload_bytes)
        new = self._clone()
        frames = self.frames
        if pieces <= 1:
            new.packets = -(-frames // per)
        else:
            p = min(pieces, frames)
            q, r = divmod(frames, p)  # r parts of q + 1 frames, p - r parts of q
            new.packets = r * -(-(q + 1) // per) + (p - r) * -(-q // per)
        return new

    def as_frames(self) -> "Burst":
        """The same burst after the wire: every frame is a packet to the receiver."""
        if self.packets == self.frames:
            return self
        new = self._clone()
        new.packets = self.frames
        return new

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other):
        if other.__class__ is not Burst:
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return "Burst(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in _FIELDS) + ")"


_new_object = object.__new__
_FIELDS = Burst.__slots__[:-1]  # the constructor's arguments, in order (wire_bytes is derived)
_COUNTS = frozenset(("payload_bytes", "frames", "header_bytes", "frame_payload_bytes"))


def fit(burst: Burst, room: float, size: float, size_of: Callable[[Burst], float],
        stage: "StageStats", reason: str) -> Burst | None:
    """What of ``burst`` (``size`` in room's unit, as ``size_of`` measures a burst) fits in
    ``room``: all of it, or its first whole packets (tail drop: per frame for plain frames, per
    aggregate for LRO aggregates; a TSO segment, one packet of many frames, is kept whole or not
    at all), or None. The part cut off is counted in ``stage`` as dropped for ``reason`` (frames
    and wire bytes). The one cutting rule of every buffer: rings (``Ring.offer``, in frames or
    packets) and the NIC's DMA stages (``models.pcie.RxDma``, in descriptors and FIFO bytes).

    The number of packets kept is estimated in proportion to ``room`` and lowered until the head
    fits (exact at once for frame and packet counts, where a packet's size is fixed)."""
    if size <= room:
        return burst
    kept = None
    packets = burst.packets
    if room > 0 and packets > 1:
        n = min(packets - 1, int(room * packets // size))
        while n > 0:
            head = burst.head(n)
            if size_of(head) <= room:
                kept = head
                break
            n -= 1
    if kept is None:
        stage.drop(reason, burst.frames, burst.wire_bytes)
    else:
        stage.drop(reason, burst.frames - kept.frames, burst.wire_bytes - kept.wire_bytes)
    return kept


def frames_of(burst: Burst) -> int:
    return burst.frames


def packets_of(burst: Burst) -> int:
    return burst.packets


def sums_by_dst(batch: Iterable[Burst]) -> dict[int, tuple[int, int]]:
    """Per destination endpoint (``Burst.dst``): (packets, payload bytes) of ``batch``."""
    sums: dict[int, tuple[int, int]] = {}
    for b in batch:
        s = sums.get(b.dst)
        sums[b.dst] = ((b.packets, b.payload_bytes) if s is None
                       else (s[0] + b.packets, s[1] + b.payload_bytes))
    return sums


@dataclass(slots=True)
class StageStats:
    """Frame/byte counters of one buffering stage, drops by named reason.

    Conservation: arrived = departed + dropped + queued, for frames and for bytes.
    """

    name: str
    arrived_frames: int = 0
    arrived_bytes: int = 0
    departed_frames: int = 0
    departed_bytes: int = 0
    queued_frames: int = 0
    queued_bytes: int = 0
    dropped_frames: dict = field(default_factory=dict)
    dropped_bytes: dict = field(default_factory=dict)

    def arrive(self, frames: int, n_bytes: int) -> None:
        self.arrived_frames += frames
        self.arrived_bytes += n_bytes
        self.queued_frames += frames
        self.queued_bytes += n_bytes

    def depart(self, frames: int, n_bytes: int) -> None:
        self.departed_frames += frames
        self.departed_bytes += n_bytes
        self.queued_frames -= frames
        self.queued_bytes -= n_bytes

    def drop(self, reason: str, frames: int, n_bytes: int) -> None:
        self.arrived_frames += frames
        self.arrived_bytes += n_bytes
        self.dropped_frames[reason] = self.dropped_frames.get(reason, 0) + frames
        self.dropped_bytes[reason] = self.dropped_bytes.get(reason, 0) + n_bytes

    def total_dropped_frames(self) -> int:
        return sum(self.dropped_frames.values())

    def conservation_error(self) -> tuple[int, int]:
        """(frames, bytes) unaccounted for; (0, 0) when conserved."""
        dropped_b = sum(self.dropped_bytes.values())
        return (self.arrived_frames - self.departed_frames - self.total_dropped_frames()
                - self.queued_frames,
                self.arrived_bytes - self.departed_bytes - dropped_b - self.queued_bytes)


class Stats:
    """Registry of counters a run collects: stage stats and named scalar counters.

    The engine creates one per replication and hands it to every component.
    """

    def __init__(self):
        self.stages: dict[str, StageStats] = {}
        self.counters: dict[str, float] = {}

    def stage(self, name: str) -> StageStats:
        assert name not in self.stages, f"duplicate stage {name}"
        self.stages[name] = StageStats(name)
        return self.stages[name]

    def drops(self) -> dict[tuple[str, str], int]:
        """Cumulative frames dropped, by (stage, reason)."""
        return {(name, reason): n for name, st in self.stages.items()
                for reason, n in st.dropped_frames.items()}

    def add(self, name: str, value: float = 1.0) -> None:
        self.counters[name] = self.counters.get(name, 0.0) + value


class Ring:
    """A bounded buffer of bursts counted in ``unit`` ('frames', 'packets' or 'descriptors').

    Descriptor-ring semantics: a burst occupies slots from ``offer`` until ``release``, even while
    it is being processed (``claim`` hands it to the consumer without freeing). A burst that finds
    too little room is cut to the whole packets that fit (tail drop): per frame for plain frames,
    per aggregate for LRO aggregates; a packet of many frames (a TSO segment) that does not fit
    is dropped whole (``fit``, the rule the NIC's DMA stages use too). ``on_space`` callbacks
    run when slots are freed. With ``unit='descriptors'`` a burst takes ``size_of(burst)``
    slots (a driver's descriptors per packet and per buffer: ``models.nic.tx_descriptors``).
    """

    def __init__(self, name: str, capacity: int, stats: Stats, unit: str = "frames",
                 drop_reason: str = "ring_full",
                 size_of: Callable[[Burst], int] | None = None):
        check(capacity >= 1, f"{name}.capacity", capacity, ">= 1")
        check(unit in ("frames", "packets", "descriptors"), f"{name}.unit", unit,
              "'frames', 'packets' or 'descriptors'")
        check((unit == "descriptors") == (size_of is not None), f"{name}.size_of", size_of,
              "given exactly when unit='descriptors'")
        self.name, self.capacity, self.unit, self.drop_reason = name, capacity, unit, drop_reason
        self.stats = stats.stage(name)
        self.used = 0
        self._pending: deque[Burst] = deque()
        self.on_space: list[Callable[[], None]] = []

        self._by_frames = unit == "frames"
        self._by_desc = size_of is not None
        self._size = size_of if self._by_desc else frames_of if self._by_frames else packets_of

    def size_of(self, burst: Burst) -> int:
        """Slots ``burst`` takes in this ring."""
        return self._size(burst)

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def __len__(self) -> int:
        return len(self._pending)

    def offer(self, burst: Burst) -> Burst | None:
        """Enqueue what fits; count the rest as dropped (``fit``). Returns the accepted part or
        None."""
        size = self._size(burst) if self._by_desc else \
            burst.frames if self._by_frames else burst.packets
        if size > self.capacity - self.used:
            burst = fit(burst, self.capacity - self.used, size, self._size, self.stats,
                        self.drop_reason)
            if burst is None:
                return None
            size = self._size(burst)
        self.used += size
        st, frames, wire = self.stats, burst.frames, burst.wire_bytes  # st.arrive, inlined
        st.arrived_frames += frames
        st.arrived_bytes += wire
        st.queued_frames += frames
        st.queued_bytes += wire
        self._pending.append(burst)
        return burst

    def peek(self) -> Burst:
        return self._pending[0]

    def claim(self) -> Burst:
        return self._pending.popleft()

    def claim_all(self) -> list[Burst]:
        batch = list(self._pending)
        self._pending.clear()
        return batch

    def release(self, bursts: Iterable[Burst]) -> None:
        """Free the slots of ``bursts`` (claimed earlier), then run the ``on_space`` callbacks."""
        frames = packets = n_bytes = 0
        desc = self._size if self._by_desc else None
        for b in bursts:
            frames += b.frames
            packets += b.packets if desc is None else desc(b)
            n_bytes += b.wire_bytes
        self.used -= frames if self._by_frames else packets
        st = self.stats  # st.depart, inlined
        st.departed_frames += frames
        st.departed_bytes += n_bytes
        st.queued_frames -= frames
        st.queued_bytes -= n_bytes
        for cb in list(self.on_space):
            cb()

    def release_one(self, burst: Burst) -> None:
        """``release([burst])`` without the list."""
        frames, wire = burst.frames, burst.wire_bytes
        self.used -= self._size(burst) if self._by_desc else \
            frames if self._by_frames else burst.packets
        st = self.stats  # st.depart, inlined
        st.departed_frames += frames
        st.departed_bytes += wire
        st.queued_frames -= frames
        st.queued_bytes -= wire
        if self.on_space:
            for cb in list(self.on_space):
                cb()


class RingPoller:
    """Drains a ring in passes on one context, NAPI style: a pass claims everything the ring
    holds, pays ``cost_fn(batch, is_interrupt) -> (terms, packets, n_bytes)`` on ``context``
    (``terms``: cycles by named term, ``models.costs``; the counts price NUMA and are what the
    terms are divided by), then frees the slots, hands the batch to ``deliver_fn(batch)`` and
    polls again (not an interrupt); an empty ring ends the passes. ``busy`` is True from the
    first pass until the ring is found empty (a producer need not kick, nor ring a doorbell,
    while it is). ``context`` may be set after construction (before the first kick).
    ``deliver_fn`` may return a callable, run once the next pass is queued: a host's woken
    applications (``models.guest.StackHost.deliver``), which queue behind the handler's next
    poll as a woken process runs after the softirq that woke it.
    ``take(batch)``, if given, is what the consumer makes of the claimed bursts before paying
    for them (e.g. LRO merging); cost and delivery see its result, the ring frees what it gave."""

    def __init__(self, ring: Ring, context, cost_fn: Callable[[list[Burst], bool], tuple],
                 deliver_fn: Callable[[list[Burst]], Callable[[], None] | None],
                 take: Callable[[list[Burst]], list[Burst]] | None = None):
        self.ring, self.context, self.cost_fn, self.deliver_fn = ring, context, cost_fn, deliver_fn
        self.take = take
        self.busy = False
        self.polls = 0  # passes that found work

    def kick(self, is_interrupt: bool = True) -> None:
        """Start passes unless they are running (an interrupt, a doorbell, a hand-off)."""
        if not self.busy:
            self._poll(is_interrupt)

    def _poll(self, is_interrupt: bool) -> None:
        batch = self.ring.claim_all()
        if not batch:
            self.busy = False
            return
        self.busy = True
        self.polls += 1
        taken = self.take(batch) if self.take is not None else batch
        terms, packets, n_bytes = self.cost_fn(taken, is_interrupt)
        self.context.then(terms, lambda: self._done(batch, taken), packets=packets,
                          n_bytes=n_bytes)

    def _done(self, batch: list[Burst], taken: list[Burst]) -> None:
        self.ring.release(batch)
        after = self.deliver_fn(taken)
        self._poll(is_interrupt=False)
        if after is not None:
            after()
