"""Interrupt coalescing: a timer and a frame-count threshold per receive queue, static or adaptive.

Modelled (static coalescing, as ``ethtool -C rx-usecs / rx-frames``): the first frame after an
interrupt arms a timer of ``timer_us``; the interrupt fires when the timer expires or when
``max_frames`` frames are pending, whichever comes first. While the handler is still processing
an earlier batch, new frames wait (NAPI keeps interrupts masked while it polls).

Adaptive (``mode: adaptive``), the rule of Intel's ixgbe driver (``ixgbe_update_itr`` and
``ixgbe_set_itr``, dynamic ITR): at every interrupt the queue's throughput since the previous one,
``bytes / elapsed_us`` (bytes per microsecond = MB/s), moves it between three latency classes
with hysteresis:

    lowest  --(> low_bytes_per_us)-->  low  --(> bulk_bytes_per_us)-->  bulk
    lowest <--(<= low_bytes_per_us)--  low <--(<= bulk_bytes_per_us)--  bulk

whose timers are ``adaptive_lowest_timer_us`` (10 us: 100K interrupts/s), ``adaptive_low_timer_us``
(50 us: 20K/s) and ``adaptive_bulk_timer_us`` (125 us: 8K/s). The interrupt rate then moves
towards the class's rate smoothly, as ixgbe does: ``new = 10 target cur / (9 target + cur)`` in
interrupts/s, i.e. ``timer = 0.9 timer + 0.1 target`` per interrupt (slow to speed up, quicker
to slow down). It starts in ``low`` at its timer (ixgbe's initial 20K interrupts/s).
Bytes are counted as the handler takes them (``account``), like the driver's cleaned bytes.
``max_frames`` still caps a batch in both modes.
Throttle (``mode: throttle``): an interval throttle, as Intel's EITR on the 82598 with the ixgbe
of its era (1.1.18: a fixed 8K interrupts/s): at most one interrupt per ``timer_us``, counted from
the previous interrupt. A frame that arrives when the interval since the last interrupt has
already passed raises one at once; otherwise the interrupt is raised when the interval ends (or
at ``max_frames``). Unlike ``static`` it adds no wait after a quiet period.
Events: one SimPy timeout per armed timer (none per frame); an interrupt fired by the frame
threshold leaves its timer's event in the queue, where it expires unused.
Left out: ixgbe's per-packet-size refinements of later versions, TX-side ITR.
Units: microseconds, frames, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import simpy
from simpy.events import Timeout

from models import units
from models.base import check

MODES = ("static", "adaptive", "throttle")
LOWEST, LOW, BULK = 0, 1, 2


@dataclass(frozen=True)
class CoalescingParams:
    mode: str = "static"
    timer_us: float = 10.0
    max_frames: int = 64
    adaptive_lowest_timer_us: float = 10.0
    adaptive_low_timer_us: float = 50.0
    adaptive_bulk_timer_us: float = 125.0
    adaptive_low_bytes_per_us: float = 10.0
    adaptive_bulk_bytes_per_us: float = 20.0

    def __post_init__(self):
        check(self.mode in MODES, "mode", self.mode, f"one of {MODES}")
        check(self.timer_us >= 0, "timer_us", self.timer_us, ">= 0")
        check(self.max_frames >= 1, "max_frames", self.max_frames, ">= 1")
        check(0 < self.adaptive_lowest_timer_us <= self.adaptive_low_timer_us
              <= self.adaptive_bulk_timer_us, "adaptive_*_timer_us",
              (self.adaptive_lowest_timer_us, self.adaptive_low_timer_us,
               self.adaptive_bulk_timer_us), "0 < lowest <= low <= bulk")
        check(0 <= self.adaptive_low_bytes_per_us <= self.adaptive_bulk_bytes_per_us,
              "adaptive_*_bytes_per_us",
              (self.adaptive_low_bytes_per_us, self.adaptive_bulk_bytes_per_us),
              "0 <= low <= bulk")


class Coalescer:
    """Decides when a receive queue raises its interrupt; calls ``fire()`` then."""

    def __init__(self, env: simpy.Environment, params: CoalescingParams, fire: Callable[[], None]):
        self.env, self.params, self.fire = env, params, fire
        self.timer_us = params.timer_us
        self.pending_frames = 0
        self.interrupts = 0
        self._timer_gen = 0
        self._armed = False

    def notify(self, frames: int) -> None:
        """``frames`` new frames are waiting in the ring."""
        self.pending_frames += frames
        if self.pending_frames >= self.params.max_frames or self.timer_us == 0:
            self._fire()
        elif not self._armed:
            self._armed = True
            Timeout(self.env, units.us_to_s(self.timer_us), self._timer_gen).callbacks.append(
                self._expire)

    def account(self, frames: int, n_bytes: int) -> None:
        """The handler took ``frames`` frames of ``n_bytes`` bytes (what adaptive modes see)."""

    def _expire(self, event: Timeout) -> None:
        """The timer armed in generation ``event.value`` expires (ignored if an interrupt has
        fired since: the timer was disarmed, but its SimPy event cannot be withdrawn)."""
        if event.value == self._timer_gen and self._armed:
            self._fire()

    def _fire(self) -> None:
        self._timer_gen += 1
        self._armed = False
        self.pending_frames = 0
        self.interrupts += 1
        self._on_interrupt()
        self.fire()

    def _on_interrupt(self) -> None:
        """Hook: adapt the timer (static: nothing)."""


class AdaptiveCoalescer(Coalescer):
    """ixgbe's dynamic interrupt throttling (see the module docstring)."""

    def __init__(self, env: simpy.Environment, params: CoalescingParams, fire: Callable[[], None]):
        super().__init__(env, params, fire)
        self.latency_class = LOW
        self.timer_us = params.adaptive_low_timer_us
        self._bytes = 0
        self._since_s = env.now

    def account(self, frames: int, n_bytes: int) -> None:
        self._bytes += n_bytes

    def _on_interrupt(self) -> None:
        elapsed_us = units.s_to_us(self.env.now - self._since_s)
        if elapsed_us <= 0:
            return
        self.latency_class = next_class(self.latency_class, self._bytes / elapsed_us, self.params)
        self.timer_us = smoothed_timer_us(self.timer_us, class_timer_us(self.latency_class,
                                                                        self.params))
        self._bytes = 0
        self._since_s = self.env.now


class ThrottleCoalescer(Coalescer):
    """An interval throttle (EITR): at most one interrupt per ``timer_us`` (module docstring)."""

    def __init__(self, env: simpy.Environment, params: CoalescingParams, fire: Callable[[], None]):
        super().__init__(env, params, fire)
        self._last_s = -float("inf")

    def notify(self, frames: int) -> None:
        self.pending_frames += frames
        due_s = self._last_s + units.us_to_s(self.timer_us)
        if self.pending_frames >= self.params.max_frames or self.env.now >= due_s:
            self._fire()
        elif not self._armed:
            self._armed = True
            Timeout(self.env, due_s - self.env.now, self._timer_gen).callbacks.append(
                self._expire)

    def _on_interrupt(self) -> None:
        self._last_s = self.env.now


def next_class(current: int, bytes_per_us: float, p: CoalescingParams) -> int:
    """ixgbe_update_itr: the latency class after a period at ``bytes_per_us``."""
    if current == LOWEST:
        return LOW if bytes_per_us > p.adaptive_low_bytes_per_us else LOWEST
    if current == LOW:
        if bytes_per_us > p.adaptive_bulk_bytes_per_us:
            return BULK
        return LOWEST if bytes_per_us <= p.adaptive_low_bytes_per_us else LOW
    return LOW if bytes_per_us <= p.adaptive_bulk_bytes_per_us else BULK


def steady_class(bytes_per_us: float, p: CoalescingParams) -> int:
    """The latency class a queue settles in at a constant ``bytes_per_us`` (the fixed point of
    ``next_class`` from any class: its hysteresis only matters while the rate moves)."""
    c = LOW
    for _ in range(3):
        c = next_class(c, bytes_per_us, p)
    return c


def steady_timer_us(bytes_per_us: float, p: CoalescingParams) -> float:
    """The timer an adaptive queue settles at for a constant ``bytes_per_us`` (the steady-state
    engines' reading of ``AdaptiveCoalescer``)."""
    return class_timer_us(steady_class(bytes_per_us, p), p)


def class_timer_us(latency_class: int, p: CoalescingParams) -> float:
    return (p.adaptive_lowest_timer_us, p.adaptive_low_timer_us,
            p.adaptive_bulk_timer_us)[latency_class]


def smoothed_timer_us(current_us: float, target_us: float) -> float:
    """ixgbe_set_itr: ``new = 10 target cur / (9 target + cur)`` in interrupts per second, which
    in timer terms is ``0.9 current + 0.1 target``."""
    return 0.9 * current_us + 0.1 * target_us


def make_coalescer(env: simpy.Environment, params: CoalescingParams,
                   fire: Callable[[], None]) -> Coalescer:
    kind = {"adaptive": AdaptiveCoalescer, "throttle": ThrottleCoalescer}.get(params.mode,
                                                                             Coalescer)
    return kind(env, params, fire)
