"""CPU cores, NUMA nodes and schedulable contexts with exact busy-time accounting.

Modelled: a *context* is a serial worker (a VM's vCPU, a hypervisor networking context, an
interrupt handler, a native process): a FIFO server in virtual time that executes tasks of a
given number of cycles one after another on the core it is placed on. Service time =
cycles / clock x jitter, where cycles = the task's work + its NUMA penalty + a world switch.
A task is one timeout whose callback completes it: it credits the context's counters, hands the
core on, takes the context's next task and calls the submitter back at the completion instant
(``then``: no other event; ``execute`` returns an event that succeeds then, for generator
callers; ``charge``: work nobody waits for, e.g. a doorbell's exit, booked without an event
when the context has its core to itself: the context and the core are busy until it ends and
their next task starts then, its cycles credited when booked). Each core runs one task at a
time: a context that finds its core running another context's task books the core and waits
in the core's FIFO booking queue (FIFO by the instant of asking, ties in call order); when the
task ends the core passes at once to the first booked context, and the finishing context's
next task queues behind it, so contexts that share a core alternate (on a shared core a charge
is an ordinary task, so that this order stays as it is). When a core switches from one
context to another it pays ``context_switch_cycles`` (world switch plus cache refill): the cost
that grows with consolidation. A context that is the only one on its core pays none and needs
no arbitration.

Cost terms: a task's work is ``{term: cycles}`` (``models.costs``) or bare cycles (term
``unattributed``); the context adds ``numa`` (the remote penalty), ``world_switch`` and
``jitter`` (charged minus nominal cycles). A task's terms, packets, bytes, cycles and NUMA
penalty are credited together when it completes (a charge's when it is booked), so at any
instant ``term_cycles`` adds up to ``cycles``; busy time (``busy_time_s``, per context and per
core) counts the task in service up to the present instant, and a charge's part already run.
Jitter: a gamma variate of mean 1 and CV ``jitter_cv`` per task, from the context's own stream,
drawn when the task starts (one draw per task, a charge's when booked, in start order).

NUMA: sockets are NUMA nodes (``Core.node``). Every context has a *home*: the node (or nodes)
whose memory its work touches (a NIC's buffers live on the card's node, a VM's memory on the
node it was placed on). A task submitted with ``packets``/``n_bytes`` pays, for each home that
is not the node of the core it runs on, ``remote_per_packet_cycles`` per packet and
``remote_per_byte_cycles`` per byte (``NumaParams``): cache misses that cross the socket
interconnect. The penalty is priced when the context takes the task, on the core it will run on.
Migration: ``Context.move_to(core)`` re-places a context at once if it is idle, else when it
takes its next task, never inside one nor while it waits for a core; a context arriving on a
core where a task is running (even the task of a context that had the core to itself) books
the core and waits for it, so a core never runs two tasks at once.
Time slices (``Cpu(quantum_s=...)``, the hypervisor's scheduler quantum, 0 = none): a
context that ends a task on a shared core keeps the core, while contexts are booked for it, as
long as it has more work (queued, or submitted by the task's own callback: the next pass of a
poll loop) and its slice, counted from when it took the core from another context, has not run
``quantum_s``: a world runs until it blocks or its quantum expires. Then the core goes to the
first booked context. With no quantum a core hands over after every task (processor sharing at
task granularity).
Left out: preemption inside a task, priorities among contexts (a woken world with less CPU
consumed does not preempt the running one), hyper-threading, frequency scaling, the cost of a
migration itself (beyond the world switch it causes), memory bandwidth limits.
Units: clock in Hz, work in cycles, time in seconds.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping as _Mapping  # isinstance: faster than typing's
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import simpy
from simpy.events import NORMAL, Event, Timeout

from models.base import check
from models.costs import JITTER, NUMA, UNATTRIBUTED, WORLD_SWITCH


@dataclass(frozen=True)
class CpuParams:
    """A host's processors: sockets (= NUMA nodes) x cores, one clock."""

    sockets: int = 4
    cores_per_socket: int = 4
    clock_hz: float = 2.93e9
    context_switch_cycles: float = 3000.0
    jitter_cv: float = 0.05  # coefficient of variation of service time (gamma), 0 = none
    # Cycles per byte of a copy of cache-cold data on this processor (its line misses in flight
    # over their latency): what the hypervisor's vNIC backend pays to copy a received packet
    # into guest memory (vnic.backend_rx.per_byte_cycles reads it). The default: the X7350's.
    copy_per_byte_cycles: float = 1.37
    # Where each cost comes from, {field: "tag: reason"} (configs/ only; sim.config checks it).
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(self.sockets >= 1, "sockets", self.sockets, ">= 1")
        check(self.cores_per_socket >= 1, "cores_per_socket", self.cores_per_socket, ">= 1")
        check(self.clock_hz > 0, "clock_hz", self.clock_hz, "> 0")
        check(self.context_switch_cycles >= 0, "context_switch_cycles",
              self.context_switch_cycles, ">= 0")
        check(0 <= self.jitter_cv <= 1, "jitter_cv", self.jitter_cv, "in [0, 1]")
        check(self.copy_per_byte_cycles >= 0, "copy_per_byte_cycles", self.copy_per_byte_cycles,
              ">= 0")

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
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

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
    """One physical core: runs one context's task at a time, with busy-time accounting.

    Contexts that want the core while it is running a task wait in its booking queue (FIFO by
    the instant they asked, ties in call order); when the task ends the core goes to the first
    of them at once. A core with a single context never has anyone waiting.
    """

    def __init__(self, env: simpy.Environment, index: int, node: int, params: CpuParams,
                 numa: NumaParams | None = None, quantum_s: float = 0.0):
        self.env, self.index, self.node, self.params = env, index, node, params
        # The scheduler's time slice (see the module docstring): 0 hands over after each task.
        self.quantum_s = quantum_s
        self._slice_owner: "Context | None" = None  # the context whose slice is running
        self._slice_from = 0.0  # when it took the core from another context
        self._kept: "Context | None" = None  # keeps the core through its task's callback
        self.slice_keeps = 0  # tasks after which a slice kept the core from booked contexts
        self.numa = numa if numa is not None else NumaParams()
        self.name = f"core{index}"
        self.busy_s = 0.0
        self.switches = 0
        self.n_contexts = 0  # contexts placed here; with one, no world switch is charged
        self._last_context: "Context | None" = None
        self._busy_since: float | None = None
        self._holder: "Context | None" = None  # the context whose task is in service
        self._waiting: deque["Context"] = deque()  # contexts booked for the core, FIFO
        # The end of the cycles booked here without an event (``Context.charge``): the next
        # task on this core starts then at the earliest.
        self._free_at = 0.0
        # Set when a poll-mode context (``models.polling``) is placed here: the core spins from
        # then on and is busy whatever the load.
        self.polled_from_s: float | None = None

    def switch_cycles(self, ctx: "Context") -> float:
        """World-switch cost when ``ctx`` follows a different context on this core."""
        if self._last_context is not None and self._last_context is not ctx:
            self.switches += 1
            self._last_context = ctx
            return self.params.context_switch_cycles
        self._last_context = ctx
        return 0.0

    @property
    def running(self) -> bool:
        return self._holder is not None

    @property
    def waiting(self) -> int:
        """Contexts booked for the core behind the task in service."""
        return len(self._waiting)

    def busy_time_s(self) -> float:
        """Busy time so far, including the task in service (exact at any instant); a core
        a poll-mode context spins on is busy all the time since it began."""
        if self.polled_from_s is not None:
            return self.env.now - self.polled_from_s
        return _busy_time(self.busy_s, self._busy_since, self._free_at, self.env.now)

    def counters(self) -> dict[str, float]:
        """Cumulative counters (the recorder differences them over its window)."""
        return {"busy_s": self.busy_time_s(), "switches": self.switches}


class Cpu:
    """All cores of one host, grouped into NUMA nodes (one per socket)."""

    def __init__(self, env: simpy.Environment, params: CpuParams, numa: NumaParams | None = None,
                 quantum_s: float = 0.0):
        check(quantum_s >= 0, "quantum_s", quantum_s, ">= 0")
        self.params = params
        self.numa = numa if numa is not None else NumaParams()
        self.cores = [Core(env, i, i // params.cores_per_socket, params, self.numa, quantum_s)
                      for i in range(params.n_cores)]

    def core(self, index: int) -> Core:
        return self.cores[index % len(self.cores)]

    def node_cores(self, node: int) -> list[Core]:
        return [c for c in self.cores if c.node == node]


def _busy_time(busy_s: float, since: float | None, free_at: float, now: float) -> float:
    """Busy time at ``now`` of a core or context: ``busy_s`` (completed tasks, and charges in
    full from when they were booked), plus the task in service since ``since`` (which may lie
    ahead, behind a charge), minus the part of the charges not yet run (they end at
    ``free_at`` and are contiguous up to it)."""
    if since is not None and now > since:
        busy_s += now - since
    if free_at > now:
        busy_s -= free_at - now
    return busy_s


def _nothing() -> None:
    """The callback of a charge that has to wait for its core (an ordinary task)."""


_CHARGE = object()  # marks a queued charge (``Context.charge``) in a context's queue


class _Completion(Timeout):
    """A task's completion: a timeout whose only callback is the context's ``_complete``."""

    def __init__(self, env: simpy.Environment, delay: float, callback):
        self.env = env
        self.callbacks = [callback]
        self._value = None
        self._delay = delay
        self._ok = True
        env.schedule(self, NORMAL, delay)


class Context:
    """A serial worker placed on one core: a FIFO server in virtual time.

    ``then(work, callback)`` runs ``work`` and calls ``callback()`` at the instant it completes
    (no event beyond the completion's timeout); ``execute(work)`` returns an event that succeeds
    then (for generator callers that ``yield`` it). ``home_node``: the node (or tuple of nodes)
    whose memory this context's work touches; by default the node of the core it is first placed
    on. Remote work pays the per-packet and per-byte penalty of ``NumaParams`` (the one NUMA
    mechanism).
    """

    def __init__(self, env: simpy.Environment, name: str, core: Core, *,
                 rng: np.random.Generator | Callable[[], np.random.Generator], home=None):
        self.env, self.name, self.core = env, name, core
        self.home_node = core.node if home is None else home
        self.busy_s = 0.0
        self.cycles = 0.0
        # Cycles charged so far by named term (``models.costs``): the terms of every task,
        # plus the NUMA penalty, world switches and jitter; they add up to ``cycles``.
        self.term_cycles: dict[str, float] = {}
        self.packets = 0.0  # packets and bytes the tasks declared (what terms are divided by)
        self.bytes = 0.0
        self.tasks = 0
        self.moves = 0
        self._queue: deque[tuple] = deque()  # tasks submitted behind the current one
        self._busy_since: float | None = None
        self._move_to: Core | None = None
        self._jitter = _JitterStream(rng, core.params.jitter_cv)
        # The current task, from the moment the context takes it (when it books the core) to
        # its completion; ``_active`` is False when the context is idle (nothing queued).
        self._active = False
        self._work: Mapping[str, float] | None = None  # its terms (None: bare cycles)
        self._bare = 0.0  # its bare cycles, when given as a number
        self._packets = self._bytes = 0.0
        self._remote = 0.0  # its NUMA penalty, priced when taken
        self._shared = False  # taken when the core had other contexts: world switches apply
        self._switch = 0.0
        self._nominal = 0.0  # its cycles before jitter (work + NUMA + world switch)
        self._dt = 0.0
        self._callback: Callable[[], None] | None = None
        self._done: simpy.Event | None = None
        self._complete_cb = self._complete
        self._free_at = 0.0  # the end of this context's last charge (``charge``)
        core.n_contexts += 1

    def execute(self, work: "float | Mapping[str, float]", packets: float = 0,
                n_bytes: float = 0, home=None) -> simpy.Event:
        """Queue ``work`` on ``packets`` packets and ``n_bytes`` bytes homed on ``home``
        (default: this context's home); the returned event succeeds when it has run.
        ``work`` is the local cost as named terms (term -> cycles, ``models.costs``) or a bare
        number of cycles (charged to the term ``unattributed``). The counts price the NUMA
        penalty and are what the recorder divides the terms by (cycles per packet, per byte)."""
        done = Event(self.env)
        if self._active:
            self._queue.append((work, packets, n_bytes, home, None, done))
        else:
            self._take(work, packets, n_bytes, home, None, done)
        return done

    def then(self, work: "float | Mapping[str, float]", callback: Callable[[], None],
             packets: float = 0, n_bytes: float = 0, home=None) -> None:
        """Run ``work`` (see ``execute``), then call ``callback()`` at the completion instant."""
        if self._active:
            self._queue.append((work, packets, n_bytes, home, callback, None))
        else:
            self._take(work, packets, n_bytes, home, callback, None)

    def charge(self, work: "float | Mapping[str, float]", packets: float = 0,
               n_bytes: float = 0, home=None) -> None:
        """Run ``work`` (see ``execute``) that nobody waits for, without an event: a task in
        this context's FIFO order whose end is only booked. When the context takes it on a core
        of its own that is free, the context and the core are busy until it ends
        (``_free_at``) and whatever task either takes next starts then; its terms, counts and
        cycles are credited when it is booked (busy time stays exact: ``_busy_time``). On a
        core shared with other contexts it is an ordinary task (one event), so the core's
        booking order and the alternation it gives stay those of ``then``."""
        if self._active:
            self._queue.append((work, packets, n_bytes, home, _CHARGE, None))
        else:
            self._take(work, packets, n_bytes, home, _CHARGE, None)

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
        """Re-place this context on ``core``: now if it is idle, else when it takes its next
        task (never inside one, nor while it waits for its current core)."""
        self._move_to = core
        if not self._active:
            self._apply_move()

    @property
    def remote_cycles(self) -> float:
        """NUMA penalty paid so far (before jitter): the ``numa`` term."""
        return self.term_cycles.get(NUMA, 0.0)

    @property
    def idle(self) -> bool:
        """Nothing queued, in service or booked: a vCPU in this state has halted (HLT)."""
        return not self._active and self._free_at <= self.env.now

    @property
    def backlog(self) -> int:
        """Tasks submitted and not yet taken (the one in service or booking is not counted)."""
        return len(self._queue)

    def busy_time_s(self) -> float:
        return _busy_time(self.busy_s, self._busy_since, self._free_at, self.env.now)

    def counters(self) -> dict[str, float]:
        """Cumulative counters: busy time, tasks, moves, cycles charged, the packets and bytes
        its tasks declared, and cycles by term as ``term.<name>`` (``models.costs``)."""
        c = {"busy_s": self.busy_time_s(), "tasks": self.tasks, "moves": self.moves,
             "cycles": self.cycles, "packets": self.packets, "bytes": self.bytes}
        for term, cycles in self.term_cycles.items():
            c[f"term.{term}"] = cycles
        return c

    def _apply_move(self) -> None:
        new, self._move_to = self._move_to, None
        if new is None or new is self.core:
            return
        self.core.n_contexts -= 1
        new.n_contexts += 1
        self.core = new
        self.moves += 1

    def _take(self, work, packets, n_bytes, home, callback, done) -> None:
        """Take the next task: apply a pending move, price NUMA on the core it will run on,
        then start it, or book the core if another context's task is in service there."""
        self._active = True
        if self._move_to is not None:  # between tasks: the only safe moment to move
            self._apply_move()
        core = self.core
        if type(work) is dict or isinstance(work, _Mapping):
            cycles = 0.0
            for c in work.values():
                cycles += c
            self._work = work
        else:  # bare cycles: the term 'unattributed'
            cycles = 0.0 + work
            self._work, self._bare = None, cycles
        remote = 0.0
        if packets or n_bytes:
            remote = self.remote_penalty_cycles(packets, n_bytes, home)
            cycles += remote
        self._packets, self._bytes, self._remote = packets, n_bytes, remote
        self._nominal, self._callback, self._done = cycles, callback, done
        self._shared = core.n_contexts != 1
        if core._holder is None and (core._kept is None or core._kept is self):
            if callback is _CHARGE:
                if not self._shared:
                    self._book(core)
                    return
                self._callback = _nothing  # a shared core: a plain task (see ``charge``)
            self._start(core)
        else:  # another context's task is in service here: book the core, FIFO
            if callback is _CHARGE:  # a charge that must wait for the core: a plain task
                self._callback = _nothing
            core._waiting.append(self)

    def _price(self, core: Core) -> float:
        """The taken task's world switch (on a shared core) and service time."""
        if self._shared:
            switch = core.switch_cycles(self)
            self._switch = switch
            self._nominal += switch
        else:  # a core of its own: no world switch; a context moving in later pays one
            core._last_context = self
            self._switch = 0.0
        dt = self._nominal / core.params.clock_hz
        jitter = self._jitter
        if jitter.cv:
            dt *= jitter.next()
        self._dt = dt
        return dt

    def _book(self, core: Core) -> None:
        """Run the taken charge on ``core`` (free now) without an event: from the end of what
        is booked on the core or this context, credited at once; then take the next task."""
        dt = self._price(core)
        now = self.env.now
        start = now
        if core._free_at > start:
            start = core._free_at
        if self._free_at > start:
            start = self._free_at
        core._free_at = self._free_at = start + dt
        core.busy_s += dt
        self.busy_s += dt
        self._credit(core)
        self._callback = self._done = self._work = None
        if self._queue:
            self._take(*self._queue.popleft())
        else:
            self._active = False

    def _start(self, core: Core) -> None:
        """Run the taken task on ``core`` from now, or from the end of the charges booked on
        the core or this context: one timeout, ``_complete`` its callback."""
        dt = self._price(core)
        env = self.env
        now = start = env.now
        if core._free_at > start:
            start = core._free_at
        if self._free_at > start:
            start = self._free_at
        core._holder = self
        core._busy_since = start
        self._busy_since = start
        if core._slice_owner is not self:  # a new slice: taken from another context
            core._slice_owner, core._slice_from = self, start
        _Completion(env, start - now + dt, self._complete_cb)

    def _complete(self, _event) -> None:
        """The task ends: credit it, hand the core on, take the next task, call back."""
        core = self.core
        now = self.env.now
        core.busy_s += now - core._busy_since
        core._busy_since = None
        core._holder = None
        self.busy_s += now - self._busy_since
        self._busy_since = None
        self._credit(core)
        callback, done = self._callback, self._done
        self._callback = self._done = self._work = None
        # Within its time slice the context keeps the core for its next task, whether queued
        # or submitted by the callback; else the core goes to the context booked first.
        keep = bool(core._waiting) and core.quantum_s > 0 \
            and now - core._slice_from < core.quantum_s
        if keep:
            core._kept = self
        elif core._waiting:  # the core goes to the context that booked it first
            core._waiting.popleft()._start(core)
        if done is not None:
            done.succeed()
        if self._queue:  # this context takes its next task (behind any booked one)
            self._take(*self._queue.popleft())
        else:
            self._active = False
        if callback is not None:  # last: it may submit work to this context or any other
            callback()
        if keep:
            core._kept = None
            if core._holder is None:  # no more work: blocked, the slice ends
                if core._waiting:
                    core._waiting.popleft()._start(core)
            else:
                core.slice_keeps += 1

    def _credit(self, core: Core) -> None:
        """Credit the task's counts and its cycles by term (they add up to ``cycles``)."""
        acc = self.term_cycles
        work = self._work
        if work is not None:
            for term, c in work.items():
                acc[term] = acc.get(term, 0.0) + c
        else:
            acc[UNATTRIBUTED] = acc.get(UNATTRIBUTED, 0.0) + self._bare
        self.packets += self._packets
        self.bytes += self._bytes
        remote = self._remote
        if remote:
            acc[NUMA] = acc.get(NUMA, 0.0) + remote
        switch = self._switch
        if switch:
            acc[WORLD_SWITCH] = acc.get(WORLD_SWITCH, 0.0) + switch
        nominal = self._nominal
        charged = self._dt * core.params.clock_hz
        if charged != nominal:  # service-time jitter: its own term, so the terms add up
            acc[JITTER] = acc.get(JITTER, 0.0) + charged - nominal
        self.cycles += charged
        self.tasks += 1


class _JitterStream:
    """Multiplicative service-time noise, mean 1, drawn in blocks (gamma, shape 1/cv^2).
    ``rng``: the context's generator, or a function that makes it at the first draw (a
    component's stream is keyed by its name, ``sim.builder.stream``: the same numbers whenever
    it is made; a model the fluid engine only reads never makes it)."""

    BLOCK = 4096

    def __init__(self, rng: np.random.Generator | Callable[[], np.random.Generator], cv: float):
        self.rng, self.cv = rng, cv
        self._buf: np.ndarray = np.empty(0)
        self._i = 0

    def next(self) -> float:
        if self.cv == 0:
            return 1.0
        if self._i >= len(self._buf):
            if not isinstance(self.rng, np.random.Generator):
                self.rng = self.rng()
            shape = 1.0 / self.cv ** 2
            self._buf = self.rng.gamma(shape, 1.0 / shape, self.BLOCK)
            self._i = 0
        self._i += 1
        return float(self._buf[self._i - 1])
