"""Ethernet links: line rate, MTU, framing, propagation delay.

Modelled: one direction of a full-duplex link. A burst's frames leave back to back at line rate
(38 bytes of framing per frame, minimum frame padding, see ``models.units``) and arrive after the
propagation delay. The link is a FIFO server kept in virtual time: ``transmit`` books a burst
from the instant the link frees up (or a later instant the sender gives) and returns when its
last bit leaves; the only SimPy event is the burst's arrival at the far end (one per burst, none
per frame). What happens when the last bit has left (a TX descriptor freed) is the sender's
business (``models.nic``).
Left out: bit errors, pause frames, switches between the hosts (the sources use crossover cables).
Units: rate in Gbps, delay in ns, sizes in bytes; time in seconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import simpy
from simpy.events import Timeout

from models import units
from models.base import Burst, Stats, check

MIN_MTU_BYTES = 576
MAX_MTU_BYTES = 9216


@dataclass(frozen=True)
class LinkParams:
    line_rate_gbps: float = 10.0
    mtu_bytes: int = 1500
    propagation_ns: float = 50.0  # ~10 m of cable at 0.66 c

    def __post_init__(self):
        check(self.line_rate_gbps > 0, "line_rate_gbps", self.line_rate_gbps, "> 0")
        check(MIN_MTU_BYTES <= self.mtu_bytes <= MAX_MTU_BYTES, "mtu_bytes", self.mtu_bytes,
              f"in {MIN_MTU_BYTES}..{MAX_MTU_BYTES}")
        check(self.propagation_ns >= 0, "propagation_ns", self.propagation_ns, ">= 0")


class Link:
    """One direction of a cable: serialises bursts at line rate, delivers after propagation.

    ``deliver(burst)`` gets each burst at the far end, as frames (``Burst.as_frames``). Stage
    counters: a burst arrives at the link when it is booked and departs when it is delivered, so
    bursts booked but not yet delivered (waiting for the wire, on it, propagating) are 'queued'.
    """

    def __init__(self, env: simpy.Environment, name: str, params: LinkParams, stats: Stats):
        self.env, self.name, self.params = env, name, params
        self.stats = stats.stage(name)
        self.deliver: Callable[[Burst], None] = lambda burst: None
        self.free_at_s = 0.0   # when the last booked bit leaves
        self.busy_s = 0.0      # serialisation time booked so far
        self._rate_gbps = params.line_rate_gbps
        self._propagation_s = units.ns_to_s(params.propagation_ns)

    def transmit(self, burst: Burst, not_before_s: float | None = None) -> float:
        """Book ``burst`` on the link from when it frees up, and no earlier than
        ``not_before_s`` (default: now; not in the past); returns the instant its last bit
        leaves. Its arrival, ``propagation_ns`` later, is scheduled now."""
        env = self.env
        now = env.now
        start = now if not_before_s is None or not_before_s < now else not_before_s
        if self.free_at_s > start:
            start = self.free_at_s
        wire = burst.wire_bytes
        dt = units.transmit_time_s(wire, self._rate_gbps)
        end = start + dt
        self.free_at_s = end
        self.busy_s += dt
        self.stats.arrive(burst.frames, wire)
        Timeout(env, end + self._propagation_s - now, burst).callbacks.append(self._arrive)
        return end

    def _arrive(self, event: Timeout) -> None:
        burst = event.value
        self.stats.depart(burst.frames, burst.wire_bytes)
        self.deliver(burst.as_frames())
