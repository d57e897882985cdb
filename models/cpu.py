"""CPU cores, NUMA nodes and schedulable contexts with exact busy-time accounting.

Modelled: each core runs one context at a time (a SimPy resource of capacity 1, FIFO among the
contexts that want it). A *context* is a serial worker (a VM's vCPU, a hypervisor networking
context, an interrupt handler, a native process): it executes tasks of a given number of cycles
one after another on the core it is placed on. Service time = cycles / clock x NUMA factor x
jitter. When a core switches from one context to another it pays ``context_switch_cycles``
(world switch plus cache refill): the cost that grows with consolidation.
Left out: preemption inside a task, hyper-threading, frequency scaling, migration between cores
after placement (placement is decided when the model is built).
Units: clock in Hz, work in cycles, time in seconds.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np
import simpy

from models import units
from models.base import check


@dataclass(frozen=True)
class CpuParams:
    """A host's processors: sockets (= NUMA nodes) x cores, one clock."""

    sockets: int = 1
    cores_per_socket: int = 4
    clock_hz: float = 2.93e9
    context_switch_cycles: float = 0.0
    jitter_cv: float = 0.0  # coefficient of variation of service time (gamma), 0 = none

    def __post_init__(self):
        check(self.sockets >= 1, "sockets", self.sockets, ">= 1")
        check(self.cores_per_socket >= 1, "cores_per_socket", self.cores_per_socket, ">= 1")
        check(self.clock_hz > 0, "clock_hz", self.clock_hz, "> 0")
        check(self.context_switch_cycles >= 0, "context_switch_cycles",
              self.context_switch_cycles, ">= 0")
        check(0 <= self.jitter_cv <= 1, "jitter_cv", self.jitter_cv, "in [0, 1]")

    @property
    def n_cores(self) -> int:
        return self.sockets * self.cores_per_socket


class Core:
    """One physical core: a resource of capacity 1 with busy-time accounting."""

    def __init__(self, env: simpy.Environment, index: int, node: int, params: CpuParams):
        self.env, self.index, self.node, self.params = env, index, node, params
        self.name = f"core{index}"
        self.resource = simpy.Resource(env, capacity=1)
        self.busy_s = 0.0
        self.switches = 0
        self.n_contexts = 0  # contexts placed here; with one, no arbitration is needed
        self._last_context: "Context | None" = None
        self._busy_since: float | None = None

    def switch_cycles(self, ctx: "Context") -> float:
        """World-switch cost when ``ctx`` follows a different context on this core."""
        if self._last_context is not None and self._last_context is not ctx:
            self.switches += 1
            self._last_context = ctx
            return self.params.context_switch_cycles
        self._last_context = ctx
        return 0.0

    def start(self) -> None:
        assert self._busy_since is None, f"{self.name}: two contexts running at once"
        self._busy_since = self.env.now

    def stop(self) -> None:
        self.busy_s += self.env.now - self._busy_since
        self._busy_since = None

    def busy_time_s(self) -> float:
        """Busy time so far, including the task in service (exact at any instant)."""
        running = self.env.now - self._busy_since if self._busy_since is not None else 0.0
        return self.busy_s + running


class Cpu:
    """All cores of one host, grouped into NUMA nodes (one per socket)."""

    def __init__(self, env: simpy.Environment, params: CpuParams):
        self.params = params
        self.cores = [Core(env, i, i // params.cores_per_socket, params)
                      for i in range(params.n_cores)]

    def core(self, index: int) -> Core:
        return self.cores[index % len(self.cores)]


class Context:
    """A serial worker placed on one core; ``execute(cycles)`` returns an event fired when done.

    ``numa_factor`` multiplies service time when the context works on memory of another node.
    """

    def __init__(self, env: simpy.Environment, name: str, core: Core, *,
                 rng: np.random.Generator, numa_factor: float = 1.0):
        check(numa_factor >= 1.0, f"{name}.numa_factor", numa_factor, ">= 1")
        self.env, self.name, self.core, self.numa_factor = env, name, core, numa_factor
        self.busy_s = 0.0
        self.cycles = 0.0
        self.tasks = 0
        self._queue: deque[tuple[float, simpy.Event]] = deque()
        self._wakeup: simpy.Event | None = None
        self._busy_since: float | None = None
        self._jitter = _JitterStream(rng, core.params.jitter_cv)
        assert env.now == 0, "contexts are placed before the run starts"
        core.n_contexts += 1
        env.process(self._serve())

    def execute(self, cycles: float) -> simpy.Event:
        """Queue ``cycles`` of work; the returned event succeeds when they have run."""
        done = self.env.event()
        self._queue.append((cycles, done))
        if self._wakeup is not None and not self._wakeup.triggered:
            self._wakeup.succeed()
        return done

    def then(self, cycles: float, callback: Callable[[], None]) -> None:
        """Run ``cycles`` of work, then call ``callback()``."""
        self.execute(cycles).callbacks.append(lambda _ev: callback())

    @property
    def backlog(self) -> int:
        return len(self._queue)

    def busy_time_s(self) -> float:
        running = self.env.now - self._busy_since if self._busy_since is not None else 0.0
        return self.busy_s + running

    def _serve(self):
        env, core = self.env, self.core
        while True:
            if not self._queue:
                self._wakeup = env.event()
                yield self._wakeup
                self._wakeup = None
            cycles, done = self._queue.popleft()
            if core.n_contexts == 1:  # a core of its own: no arbitration events needed
                yield from self._run(cycles)
            else:
                with core.resource.request() as req:
                    yield req
                    yield from self._run(cycles + core.switch_cycles(self))
            done.succeed()

    def _run(self, cycles: float):
        env, core, clock = self.env, self.core, self.core.params.clock_hz
        dt = units.cycles_to_s(cycles, clock) * self.numa_factor * self._jitter.next()
        core.start()
        self._busy_since = env.now
        yield env.timeout(dt)
        core.stop()
        self.busy_s += env.now - self._busy_since
        self._busy_since = None
        self.cycles += dt * clock
        self.tasks += 1


class _JitterStream:
    """Multiplicative service-time noise, mean 1, drawn in blocks (gamma, shape 1/cv^2)."""

    BLOCK = 4096

    def __init__(self, rng: np.random.Generator, cv: float):
        self.rng, self.cv = rng, cv
        self._buf: np.ndarray = np.empty(0)
        self._i = 0

    def next(self) -> float:
        if self.cv == 0:
            return 1.0
        if self._i >= len(self._buf):
            shape = 1.0 / self.cv ** 2
            self._buf = self.rng.gamma(shape, 1.0 / shape, self.BLOCK)
            self._i = 0
        self._i += 1
        return float(self._buf[self._i - 1])
