"""CPU cores, NUMA nodes and schedulable contexts with exact busy-time accounting.

Modelled: each core runs one context at a time (a SimPy resource of capacity 1, FIFO among the
contexts that want it). A *context* is a serial worker (a VM's vCPU, a hypervisor networking
context, an interrupt handler, a native process): it executes tasks of a given number of cycles
one after another on the core it is placed on. Service time = cycles / clock x NUMA factor x
jitter. When a core switches from one context to another it pays ``context_switch_cycles``
(world switch plus cache refill): the cost that grows with consolidation.

NUMA: sockets are NUMA nodes (``Core.node``). Every context has a *home*: the node (or nodes)
whose memory its work touches (a NIC's buffers live on the card's node, a VM's memory on the
node it was placed on). A task submitted with ``packets``/``n_bytes`` pays, for each home that
is not the node of the core it runs on, ``remote_per_packet_cycles`` per packet and
``remote_per_byte_cycles`` per byte (``NumaParams``): cache misses that cross the socket
interconnect. The penalty is priced when the task starts, on the core it starts on.
Migration: ``Context.move_to(core)`` re-places a context between two of its tasks, never inside
one; a context arriving on a core where a task is running (even one that began on the
single-context fast path) waits for it, so a core never runs two tasks at once.
Left out: preemption inside a task, hyper-threading, frequency scaling, the cost of a migration
itself (beyond the world switch it causes), memory bandwidth limits.
Units: clock in Hz, work in cycles, time in seconds.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import simpy

from models import units
from models.base import check
from models.costs import JITTER, NUMA, UNATTRIBUTED, WORLD_SWITCH


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


@dataclass(frozen=True)
class NumaParams:
    """Remote-memory penalties and the node each NIC card hangs off.

    Card ``c`` hangs off node ``(card_node + c * card_node_stride) mod sockets``: stride 0 puts
    every card on one node, stride 1 deals them round the sockets. Penalties are zero on
    front-side-bus (UMA) hosts, where every socket reaches memory through the same chipset.
    """

    remote_per_packet_cycles: float = 0.0
    remote_per_byte_cycles: float = 0.0
    card_node: int = 0
    card_node_stride: int = 0

    def __post_init__(self):
        check(self.remote_per_packet_cycles >= 0, "remote_per_packet_cycles",
              self.remote_per_packet_cycles, ">= 0")
        check(self.remote_per_byte_cycles >= 0, "remote_per_byte_cycles",
              self.remote_per_byte_cycles, ">= 0")
        check(self.card_node >= 0, "card_node", self.card_node, ">= 0")
        check(self.card_node_stride >= 0, "card_node_stride", self.card_node_stride, ">= 0")

    def card_node_of(self, card: int, sockets: int) -> int:
        return (self.card_node + card * self.card_node_stride) % sockets


class Core:
    """One physical core: a resource of capacity 1 with busy-time accounting."""

    def __init__(self, env: simpy.Environment, index: int, node: int, params: CpuParams,
                 numa: NumaParams | None = None):
        self.env, self.index, self.node, self.params = env, index, node, params
        self.numa = numa if numa is not None else NumaParams()
        self.name = f"core{index}"
        self.resource = simpy.Resource(env, capacity=1)
        self.busy_s = 0.0
        self.switches = 0
        self.n_contexts = 0  # contexts placed here; with one, no arbitration is needed
        self._last_context: "Context | None" = None
        self._busy_since: float | None = None
        self._idle: simpy.Event | None = None

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
        if self._idle is not None:
            idle, self._idle = self._idle, None
            idle.succeed()

    @property
    def running(self) -> bool:
        return self._busy_since is not None

    def idle(self) -> simpy.Event:
        """An event that fires when the task now running stops (a migrated-in context waits on
        it: that task may have started on the fast path, without holding the resource)."""
        if self._idle is None:
            self._idle = self.env.event()
        return self._idle

    def busy_time_s(self) -> float:
        """Busy time so far, including the task in service (exact at any instant)."""
        running = self.env.now - self._busy_since if self._busy_since is not None else 0.0
        return self.busy_s + running


class Cpu:
    """All cores of one host, grouped into NUMA nodes (one per socket)."""

    def __init__(self, env: simpy.Environment, params: CpuParams, numa: NumaParams | None = None):
        self.params = params
        self.numa = numa if numa is not None else NumaParams()
        self.cores = [Core(env, i, i // params.cores_per_socket, params, self.numa)
                      for i in range(params.n_cores)]

    def core(self, index: int) -> Core:
        return self.cores[index % len(self.cores)]

    def node_cores(self, node: int) -> list[Core]:
        return [c for c in self.cores if c.node == node]


class Context:
    """A serial worker placed on one core; ``execute(cycles)`` returns an event fired when done.

    ``home_node``: the node (or tuple of nodes) whose memory this context's work touches; by
    default the node of the core it is first placed on. Remote work pays the per-packet and
    per-byte penalty of ``NumaParams`` (the one NUMA mechanism).
    """

    def __init__(self, env: simpy.Environment, name: str, core: Core, *,
                 rng: np.random.Generator, home=None):
        self.env, self.name, self.core = env, name, core
        self.home_node = core.node if home is None else home
        self.busy_s = 0.0
        self.cycles = 0.0
        self.remote_cycles = 0.0  # NUMA penalty paid so far (before jitter)
        # Cycles charged so far by named term (``models.costs``): the terms of every task,
        # plus the NUMA penalty, world switches and jitter; they add up to ``cycles``.
        self.term_cycles: dict[str, float] = {}
        self.packets = 0.0  # packets and bytes the tasks declared (what terms are divided by)
        self.bytes = 0.0
        self.tasks = 0
        self.moves = 0
        self._queue: deque[tuple] = deque()
        self._wakeup: simpy.Event | None = None
        self._busy_since: float | None = None
        self._move_to: Core | None = None
        self._jitter = _JitterStream(rng, core.params.jitter_cv)
        assert env.now == 0, "contexts are placed before the run starts"
        core.n_contexts += 1
        env.process(self._serve())

    def execute(self, work: "float | Mapping[str, float]", packets: float = 0,
                n_bytes: float = 0, home=None) -> simpy.Event:
        """Queue ``work`` on ``packets`` packets and ``n_bytes`` bytes homed on ``home``
        (default: this context's home); the returned event succeeds when it has run.
        ``work`` is the local cost as named terms (term -> cycles, ``models.costs``) or a bare
        number of cycles (charged to the term ``unattributed``). The counts price the NUMA
        penalty and are what the recorder divides the terms by (cycles per packet, per byte)."""
        done = self.env.event()
        terms = work if isinstance(work, Mapping) else {UNATTRIBUTED: work}
        self._queue.append((terms, packets, n_bytes, home, done))
        if self._wakeup is not None and not self._wakeup.triggered:
            self._wakeup.succeed()
        return done

    def then(self, work: "float | Mapping[str, float]", callback: Callable[[], None],
             packets: float = 0, n_bytes: float = 0, home=None) -> None:
        """Run ``work`` (see ``execute``), then call ``callback()``."""
        self.execute(work, packets, n_bytes, home).callbacks.append(lambda _ev: callback())

    def remote_penalty_cycles(self, packets: float, n_bytes: float, home=None) -> float:
        """NUMA penalty of touching ``packets``/``n_bytes`` homed on ``home`` (default: this
        context's home) from the core it is on now: once per home node that is not that core's."""
        homes = self.home_node if home is None else home
        node = self.core.node
        if isinstance(homes, tuple):
            remote = sum(1 for h in homes if h != node)
        else:
            remote = 1 if homes != node else 0
        if not remote:
            return 0.0
        numa = self.core.numa
        return remote * (numa.remote_per_packet_cycles * packets
                         + numa.remote_per_byte_cycles * n_bytes)

    def move_to(self, core: Core) -> None:
        """Re-place this context on ``core``: now if it is idle, else after its current task."""
        self._move_to = core
        if self._wakeup is not None:  # waiting for work: nothing is running or queued
            self._apply_move()

    @property
    def backlog(self) -> int:
        return len(self._queue)

    def busy_time_s(self) -> float:
        running = self.env.now - self._busy_since if self._busy_since is not None else 0.0
        return self.busy_s + running

    def _apply_move(self) -> None:
        new, self._move_to = self._move_to, None
        if new is None or new is self.core:
            return
        self.core.n_contexts -= 1
        new.n_contexts += 1
        self.core = new
        self.moves += 1

    def _serve(self):
        env = self.env
        while True:
            if not self._queue:
                self._wakeup = env.event()
                yield self._wakeup
                self._wakeup = None
            if self._move_to is not None:  # between tasks: the only safe moment to move
                self._apply_move()
            core = self.core
            terms, packets, n_bytes, home, done = self._queue.popleft()
            self.packets += packets
            self.bytes += n_bytes
            acc = self.term_cycles
            cycles = 0.0
            for term, c in terms.items():
                acc[term] = acc.get(term, 0.0) + c
                cycles += c
            if packets or n_bytes:
                remote = self.remote_penalty_cycles(packets, n_bytes, home)
                if remote:
                    self.remote_cycles += remote
                    acc[NUMA] = acc.get(NUMA, 0.0) + remote
                    cycles += remote
            if core.n_contexts == 1:  # a core of its own: no arbitration events needed
                core._last_context = self  # so a context moving in later pays its switch
                yield from self._run(cycles)
            else:
                with core.resource.request() as req:
                    yield req
                    if core.running:  # a fast-path task begun before this context arrived
                        yield core.idle()
                    switch = core.switch_cycles(self)
                    if switch:
                        acc[WORLD_SWITCH] = acc.get(WORLD_SWITCH, 0.0) + switch
                    yield from self._run(cycles + switch)
            done.succeed()

    def _run(self, cycles: float):
        env, core, clock = self.env, self.core, self.core.params.clock_hz
        dt = units.cycles_to_s(cycles, clock) * self._jitter.next()
        core.start()
        self._busy_since = env.now
        yield env.timeout(dt)
        core.stop()
        self.busy_s += env.now - self._busy_since
        self._busy_since = None
        charged = units.s_to_cycles(dt, clock)
        if charged != cycles:  # service-time jitter: its own term, so the terms add up
            self.term_cycles[JITTER] = self.term_cycles.get(JITTER, 0.0) + charged - cycles
        self.cycles += charged
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
