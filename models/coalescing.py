"""Interrupt coalescing: a timer and a frame-count threshold per receive queue.

Modelled (static coalescing, as ``ethtool -C rx-usecs / rx-frames``): the first frame after an
interrupt arms a timer of ``timer_us``; the interrupt fires when the timer expires or when
``max_frames`` frames are pending, whichever comes first. While the handler is still processing
an earlier batch, new frames wait (NAPI keeps interrupts masked while it polls).
Left out: adaptive (rate-based) coalescing, which comes with the multi-queue NIC models.
Units: microseconds, frames.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import simpy

from models import units
from models.base import check


@dataclass(frozen=True)
class CoalescingParams:
    timer_us: float = 10.0
    max_frames: int = 64

    def __post_init__(self):
        check(self.timer_us >= 0, "timer_us", self.timer_us, ">= 0")
        check(self.max_frames >= 1, "max_frames", self.max_frames, ">= 1")


class Coalescer:
    """Decides when a receive queue raises its interrupt; calls ``fire()`` then."""

    def __init__(self, env: simpy.Environment, params: CoalescingParams, fire: Callable[[], None]):
        self.env, self.params, self.fire = env, params, fire
        self.pending_frames = 0
        self.interrupts = 0
        self._timer_gen = 0
        self._armed = False

    def notify(self, frames: int) -> None:
        """``frames`` new frames are waiting in the ring."""
        self.pending_frames += frames
        if self.pending_frames >= self.params.max_frames or self.params.timer_us == 0:
            self._fire()
        elif not self._armed:
            self._armed = True
            gen = self._timer_gen
            t = self.env.timeout(units.us_to_s(self.params.timer_us))
            t.callbacks.append(lambda _e: self._expire(gen))

    def _expire(self, gen: int) -> None:
        if gen == self._timer_gen and self._armed:
            self._fire()

    def _fire(self) -> None:
        self._timer_gen += 1
        self._armed = False
        self.pending_frames = 0
        self.interrupts += 1
        self.fire()
