"""What every model shares: the burst record, the cycle-cost formula, rings, counters.

A *burst* is the unit that moves through the simulation (DESIGN.md, granularity): a TSO segment
on transmit, an interrupt's worth of frames on receive, a train of ACKs. It carries its frame and
packet counts and bytes; per-frame costs and wire time are computed from the counts, never by an
event per frame.

Units: bytes, frames, packets, cycles; time in seconds (SimPy).
"""
from __future__ import annotations

import copy
import dataclasses
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

from models import units

DATA = "data"
ACK = "ack"
UDP = "udp"


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


@dataclass
class Burst:
    """A group of frames of one flow moving together.

    ``frames`` is what the wire and the receive rings see; ``packets`` is what the host stack sees
    (a TSO segment is one packet of many frames; an LRO aggregate likewise). ``payload_bytes`` is
    transport payload; ``header_bytes`` is IP+transport header per frame.
    """

    kind: str
    flow: int
    payload_bytes: int
    frames: int
    packets: int
    header_bytes: int
    frame_payload_bytes: int
    seq: int = 0            # first payload byte (TCP data)
    ack: int = 0            # cumulative ACK (TCP ACK)
    window_bytes: int = 0   # advertised receive window (TCP ACK)
    sack_edge: int = 0      # first byte held out of order above ``ack`` (0: none)
    psh: bool = False
    dup: bool = False       # a duplicate ACK train
    sent_s: float = 0.0     # when the sender emitted it (RTT samples)
    echo_s: float = -1.0    # the sent_s echoed back by an ACK (timestamp option)
    retransmit: bool = False
    dst: int = 0            # destination endpoint id (VM index, or -1: the peer)
    src: int = 0            # source endpoint id (same numbering)
    encap_bytes: int = 0    # tunnel headers per frame included in header_bytes (VXLAN: 50)
    piggyback: "Burst | None" = None  # an ACK of the reverse direction riding on data (TCP_RR)

    @property
    def wire_bytes(self) -> int:
        # Cached: asked for at every ring and link; reset by _copy when the counts change.
        wb = self.__dict__.get("_wire_bytes")
        if wb is None:
            wb = self.__dict__["_wire_bytes"] = units.burst_wire_bytes(
                self.payload_bytes, self.frames, self.header_bytes, self.frame_payload_bytes)
        return wb

    def _copy(self, **changes) -> "Burst":
        """A shallow copy with ``changes`` (dataclasses.replace is several times slower)."""
        new = copy.copy(self)
        new.__dict__.update(changes)
        if "frames" in changes or "payload_bytes" in changes or "header_bytes" in changes:
            new.__dict__.pop("_wire_bytes", None)
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
        n_frames = n_packets * self.frames_per_packet
        payload = min(self.payload_bytes, n_frames * self.frame_payload_bytes)
        return self._copy(frames=n_frames, packets=n_packets, payload_bytes=payload)

    def aggregated(self, max_bytes: int) -> "Burst":
        """After LRO: consecutive data frames merged into aggregates of up to ``max_bytes``."""
        if self.kind != DATA or max_bytes <= 0:
            return self
        per_aggregate = max(1, max_bytes // self.frame_payload_bytes)
        return self._copy(packets=-(-self.frames // per_aggregate))

    def as_frames(self) -> "Burst":
        """The same burst after the wire: every frame is a packet to the receiver."""
        return self if self.packets == self.frames else self._copy(packets=self.frames)


def sums_by_dst(batch: Iterable[Burst]) -> dict[int, tuple[int, int]]:
    """Per destination endpoint (``Burst.dst``): (packets, payload bytes) of ``batch``."""
    sums: dict[int, tuple[int, int]] = {}
    for b in batch:
        packets, n_bytes = sums.get(b.dst, (0, 0))
        sums[b.dst] = (packets + b.packets, n_bytes + b.payload_bytes)
    return sums


@dataclass
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

    def add(self, name: str, value: float = 1.0) -> None:
        self.counters[name] = self.counters.get(name, 0.0) + value


class Ring:
    """A bounded buffer of bursts counted in ``unit`` ('frames' or 'packets').

    Descriptor-ring semantics: a burst occupies slots from ``offer`` until ``release``, even while
    it is being processed (``claim`` hands it to the consumer without freeing). A burst that finds
    too little room is cut to the whole packets that fit (tail drop): per frame for plain frames,
    per aggregate for LRO aggregates; a packet of many frames (a TSO segment) that does not fit
    is dropped whole. ``on_space`` callbacks run when slots are freed.
    """

    def __init__(self, name: str, capacity: int, stats: Stats, unit: str = "frames",
                 drop_reason: str = "ring_full"):
        check(capacity >= 1, f"{name}.capacity", capacity, ">= 1")
        check(unit in ("frames", "packets"), f"{name}.unit", unit, "'frames' or 'packets'")
        self.name, self.capacity, self.unit, self.drop_reason = name, capacity, unit, drop_reason
        self.stats = stats.stage(name)
        self.used = 0
        self._pending: deque[Burst] = deque()
        self.on_space: list[Callable[[], None]] = []

    def _size(self, burst: Burst) -> int:
        return burst.frames if self.unit == "frames" else burst.packets

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def __len__(self) -> int:
        return len(self._pending)

    def offer(self, burst: Burst) -> Burst | None:
        """Enqueue what fits; count the rest as dropped. Returns the accepted part or None."""
        size, room = self._size(burst), self.free
        accepted = burst
        if size > room:
            fit = room // burst.frames_per_packet if self.unit == "frames" else room
            accepted = burst.head(fit) if fit > 0 else None
            kept_frames = accepted.frames if accepted else 0
            kept_bytes = accepted.wire_bytes if accepted else 0
            self.stats.drop(self.drop_reason, burst.frames - kept_frames,
                            burst.wire_bytes - kept_bytes)
        if accepted is not None:
            self.used += self._size(accepted)
            self.stats.arrive(accepted.frames, accepted.wire_bytes)
            self._pending.append(accepted)
        return accepted

    def peek(self) -> Burst:
        return self._pending[0]

    def claim(self) -> Burst:
        return self._pending.popleft()

    def claim_all(self) -> list[Burst]:
        batch = list(self._pending)
        self._pending.clear()
        return batch

    def release(self, bursts: Iterable[Burst]) -> None:
        for b in bursts:
            self.used -= self._size(b)
            self.stats.depart(b.frames, b.wire_bytes)
        for cb in list(self.on_space):
            cb()


class RingPoller:
    """Drains a ring in passes on one context, NAPI style: a pass claims everything the ring
    holds, pays ``cost_fn(batch, is_interrupt) -> (cycles, packets, n_bytes)`` on ``context``
    (the counts price NUMA), then frees the slots, hands the batch to ``deliver_fn(batch)`` and
    polls again (not an interrupt); an empty ring ends the passes. ``busy`` is True from the
    first pass until the ring is found empty (a producer need not kick, nor ring a doorbell,
    while it is). ``context`` may be set after construction (before the first kick).
    ``take(batch)``, if given, is what the consumer makes of the claimed bursts before paying
    for them (e.g. LRO merging); cost and delivery see its result, the ring frees what it gave."""

    def __init__(self, ring: Ring, context, cost_fn: Callable[[list[Burst], bool], tuple],
                 deliver_fn: Callable[[list[Burst]], None],
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
        cycles, packets, n_bytes = self.cost_fn(taken, is_interrupt)
        self.context.then(cycles, lambda: self._done(batch, taken), packets=packets,
                          n_bytes=n_bytes)

    def _done(self, batch: list[Burst], taken: list[Burst]) -> None:
        self.ring.release(batch)
        self.deliver_fn(taken)
        self._poll(is_interrupt=False)
