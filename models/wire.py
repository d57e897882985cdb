"""Ethernet links: line rate, MTU, framing, propagation delay.

Modelled: one direction of a full-duplex link. A burst's frames leave back to back at line rate
(38 bytes of framing per frame, minimum frame padding, see ``models.units``) and arrive after the
propagation delay. No event per frame: one timeout per burst for serialisation, one callback for
arrival.
Left out: bit errors, pause frames, switches between the hosts (the sources use crossover cables).
Units: rate in Gbps, delay in ns, sizes in bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import simpy

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
    """One direction of a cable: serialises bursts at line rate, delivers after propagation."""

    def __init__(self, env: simpy.Environment, name: str, params: LinkParams, stats: Stats):
        self.env, self.name, self.params = env, name, params
        self.stats = stats.stage(name)  # bytes in flight on the cable are 'queued'
        self.deliver: Callable[[Burst], None] = lambda burst: None
        self.busy_s = 0.0

    def transmit(self, burst: Burst) -> simpy.Event:
        """Serialise ``burst``; the event fires when its last bit has left."""
        wire = burst.wire_bytes
        dt = units.transmit_time_s(wire, self.params.line_rate_gbps)
        self.busy_s += dt
        self.stats.arrive(burst.frames, wire)
        ev = self.env.timeout(dt)
        ev.callbacks.append(lambda _e: self._propagate(burst))
        return ev

    def _propagate(self, burst: Burst) -> None:
        arrival = self.env.timeout(units.ns_to_s(self.params.propagation_ns))
        arrival.callbacks.append(lambda _e: self._arrive(burst))

    def _arrive(self, burst: Burst) -> None:
        self.stats.depart(burst.frames, burst.wire_bytes)
        self.deliver(burst.as_frames())
