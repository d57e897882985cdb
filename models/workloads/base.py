"""What every workload is, and what the applications of every TCP workload do.

Every workload is built from the same arguments (VMs, the peer behind each VM's port, the MSS
and largest segment each side may send, a random stream), keeps cumulative counters, and
reports them through three hooks the recorder (``sim.metrics``) calls: ``flows()`` (one record
per flow: its VM and the counters goodput, RTT and retransmissions come from),
``summary(d, window_s)`` and ``tables(d, window_s)`` for what only this kind measures (given the
counter differences ``d`` over the window; plain dicts and records, no pandas here).
The kinds are the other modules of this package; ``models.workloads.WORKLOADS`` maps
``workload.kind`` to its class. This module imports none of them.

The socket calls of the TCP kinds: ``open_connection`` opens one direction of a connection;
a ``Writer`` makes send() calls, a ``Reader`` recv() calls. Back-to-back calls are one CPU task
on the flow's application context (their cycles add up exactly: each call pays its fixed cost
once, every byte its copy: ``send_terms``, ``recv_terms``) of at most ``MAX_CALLS_PER_TASK``
calls, which keeps the event count independent of the message size for all but tiny messages.
The cycles are charged as the cost terms ``app_send`` and ``app_recv`` (``models.costs``).
Writers and readers are callbacks: a blocked one is registered on its socket (``on_space``,
``on_readable``) and woken through its host's ``notify`` (once the output of the stack pass
that woke it and the handler's next poll are queued); its calls run as ``Context.then`` tasks,
so an application costs no SimPy event beyond its tasks' completions. ``write_some``/``write``/``read_some``/``read`` are
the same operations as generators (one event per operation) for application loops written as
SimPy processes.
Units: bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
import simpy

from models import costs, units
from models.base import check
from models.guest import StackHost
from models.tcp import TcpReceiver, TcpSender

if TYPE_CHECKING:  # the package's __init__ imports this module: no import back at run time
    from models.workloads import WorkloadParams


@dataclass
class Connection:
    flow: int
    vm: int
    sender: TcpSender
    receiver: TcpReceiver


class Workload:
    """Base of every workload: the constructor opens endpoints and starts processes."""

    # Whether the constructor takes ``declare_only=True`` (``sim.builder.build``): a model
    # that is read, never run; the flows opened without their TCP state, no process started.
    DECLARES = False

    def __init__(self, env: simpy.Environment, params: WorkloadParams, vms: list[StackHost],
                 peers: list[StackHost], *, mss_bytes: int, seg_max: dict[str, int],
                 rng: np.random.Generator):
        """``peers[i]`` is the client VM ``i`` talks to (the one behind its NIC port);
        ``seg_max['vm'|'peer']`` the largest segment each side may hand its device."""
        self.env, self.params = env, params

    def flows(self) -> list[dict]:
        """Per flow: ``flow``, ``vm`` and cumulative ``bytes_read`` (application payload
        received), ``rtt_sum_s``, ``rtt_samples``, ``retransmits``, ``timeouts``."""
        raise NotImplementedError

    def counters(self) -> dict[str, float]:
        """Cumulative counters of this kind beyond the per-flow ones (name -> value); the
        recorder hands their differences over the window back to ``summary`` and ``tables``."""
        return {}

    def summary(self, d: dict[str, float], window_s: float) -> dict[str, float]:
        """Extra summary metrics of this kind, from counter differences ``d``."""
        return {}

    def tables(self, d: dict[str, float], window_s: float) -> dict[str, list[dict]]:
        """Extra tables of this kind, as lists of records."""
        return {}

    def attach_network(self, vswitch_of_vm, stats) -> None:
        """Called once the model is wired, before the run: ``vswitch_of_vm(i)`` is VM ``i``'s
        vswitch (a multicast receiver joins its group there); ``stats`` the run's counter
        registry (for buffers of the kind's own, e.g. UDP socket buffers, so their drops are
        in the ``drops`` table). Most kinds need nothing."""


class LatencySample:
    """A bounded record of (completion time, latency) pairs: preallocated, overwritten in turn
    (no list grows per event). Used by ``tcp_rr`` and ``ping``."""

    def __init__(self, capacity: int):
        self.t_s = np.zeros(capacity)
        self.latency_s = np.zeros(capacity)
        self.count = 0  # samples ever recorded

    def add(self, t_s: float, latency_s: float) -> None:
        i = self.count % len(self.t_s)
        self.t_s[i], self.latency_s[i] = t_s, latency_s
        self.count += 1

    def since(self, t0_s: float) -> np.ndarray:
        """Latencies of the kept samples that completed at or after ``t0_s``."""
        n = min(self.count, len(self.t_s))
        return self.latency_s[:n][self.t_s[:n] >= t0_s]


def latency_summary(prefix: str, sample: LatencySample, t0_s: float) -> dict[str, float]:
    """``{prefix}_mean_us``, ``_p50_us``, ``_p90_us``, ``_p99_us`` of the samples that completed
    at or after ``t0_s`` (NaN when there are none)."""
    lat_us = units.s_to_us(sample.since(t0_s))
    pct = np.percentile(lat_us, [50, 90, 99]) if len(lat_us) else [np.nan] * 3
    return {f"{prefix}_mean_us": float(lat_us.mean()) if len(lat_us) else float("nan"),
            f"{prefix}_p50_us": float(pct[0]), f"{prefix}_p90_us": float(pct[1]),
            f"{prefix}_p99_us": float(pct[2])}


# -- what every TCP workload's applications do ---------------------------------------------
def open_connection(src: StackHost, dst: StackHost, flow: int, *, mss_bytes: int,
                    seg_max_bytes: int, socket_bytes: int) -> tuple[TcpSender, TcpReceiver]:
    """Open the ``src`` -> ``dst`` direction of connection ``flow``: ``dst``'s receiver, then
    ``src``'s sender, which starts from the window the receiver advertises (its SYN-ACK), not
    from its own (larger: ``sndbuf_scale``) send buffer. Both get ``socket_bytes`` sockets."""
    receiver = dst.open_receiver(flow, src.endpoint, mss_bytes=mss_bytes,
                                 rcvbuf_bytes=socket_bytes, peer_scales=src.stack.window_scaling)
    sender = src.open_sender(flow, dst.endpoint, mss_bytes=mss_bytes, seg_max_bytes=seg_max_bytes,
                             sndbuf_bytes=socket_bytes,
                             peer_window_bytes=receiver.rcv_nxt + receiver.window())
    return sender, receiver


@dataclass(frozen=True)
class DeclaredSender:
    """A declared connection's sender (``declare_only``): what the fluid engine reads of a
    ``TcpSender``, its send buffer (``sndbuf``: ``sndbuf_scale`` x the socket, as
    ``StackHost.open_sender`` makes it)."""
    sndbuf: int


def declare_connection(src: StackHost, dst: StackHost, flow: int, *, mss_bytes: int,
                       socket_bytes: int) -> None:
    """What ``open_connection`` leaves in the hosts for a model that is read, never run
    (``declare_only``, the fluid engine): the flow's application contexts, placed in the same
    order (``dst``'s, then ``src``'s: a peer places them round robin as they are asked for), and
    the same checks of the socket sizes; no ``TcpSender`` or ``TcpReceiver``."""
    check(socket_bytes >= mss_bytes, "socket_bytes", socket_bytes,
          f">= one MSS ({mss_bytes} bytes)")
    window = dst.stack.max_window_bytes(src.stack.window_scaling)
    check(window is None or window >= mss_bytes, "max_window_bytes", window,
          f"None or >= one MSS ({mss_bytes} bytes)")
    sndbuf = int(socket_bytes * src.stack.sndbuf_scale)
    check(sndbuf >= mss_bytes, "socket_bytes", sndbuf, f">= one MSS ({mss_bytes} bytes)")
    dst.app_context(flow)
    src.app_context(flow)


def wake_bytes(tcp: TcpSender) -> int:
    """Free send-buffer space that wakes a blocked writer (Linux's sk_stream rule: a third of
    the buffer, at least an MSS)."""
    return min(tcp.sndbuf, max(tcp.mss, tcp.sndbuf // 3))


# Back-to-back send()/recv() calls are one CPU task, and the bytes reach TCP (or leave the socket)
# when it ends; at most this many calls per task bound that delay (~100 us for 1-byte calls),
# while large messages still move a whole buffer in one task.
MAX_CALLS_PER_TASK = 64


def send_terms(stack, offset: int, n_bytes: int, msg: int) -> dict:
    """Cycles by term of back-to-back send() calls moving bytes ``offset .. offset + n_bytes``
    of a stream written in ``msg``-byte messages: a call starts at each multiple of ``msg`` and
    pays its fixed cost once, every byte its copy (the one call-cost rule)."""
    calls = _starts(offset + n_bytes, msg) - _starts(offset, msg)
    return {costs.APP_SEND: stack.send_call.cycles(0, n_bytes, calls)}


def recv_terms(stack, n_bytes: int, msg: int) -> dict:
    """Cycles by term of recv() calls of up to ``msg`` bytes taking ``n_bytes``."""
    return {costs.APP_RECV: stack.recv_call.cycles(0, n_bytes, -(-n_bytes // msg))}


class Writer:
    """A writer's send() calls on one socket, as callbacks (no SimPy event, no process): it
    waits for send-buffer space as a callback registered on the socket (``TcpSender.on_space``)
    and runs its calls as tasks on the flow's application context (``Context.then``)."""

    __slots__ = ("host", "tcp", "msg", "ctx", "_want", "_offset", "_done_cb", "_target",
                 "_done", "_n", "_woken_cb", "_after_cb")

    def __init__(self, host: StackHost, tcp: TcpSender, msg: int):
        self.host, self.tcp, self.msg = host, tcp, msg
        self.ctx = host.app_context(tcp.flow)
        self._want: int | None = None
        self._offset = self._target = self._done = self._n = 0
        self._done_cb: Callable[[int], None] | None = None
        self._woken_cb, self._after_cb = self._woken, self._after

    def write_some(self, want: int | None, offset: int, need: int,
                   done: Callable[[int], None]) -> None:
        """One wake-up of the writer: once ``need`` bytes are free, back-to-back send() calls
        of up to ``msg`` bytes covering ``min(free space, want)`` (``want`` None: all the free
        space), in tasks of at most ``MAX_CALLS_PER_TASK`` calls; then ``done(bytes written)``.
        ``offset`` is the writer's position in its stream (``send_terms``)."""
        self._want, self._offset, self._done_cb = want, offset, done
        self.tcp.on_space(need, self._woken_cb)

    def write(self, n_bytes: int, wake: int | None, done: Callable[[int], None]) -> None:
        """send() calls until ``n_bytes`` are in the send buffer, then ``done(n_bytes)``: one
        wake-up at a time, the writer waking at ``wake`` free bytes (None: ``wake_bytes``) or
        when the rest fits. ``msg = n_bytes`` is one send() call."""
        wake = wake_bytes(self.tcp) if wake is None else wake
        written = 0

        def step(n: int) -> None:
            nonlocal written
            written += n
            if written < n_bytes:
                rest = n_bytes - written
                self.write_some(rest, written, min(wake, rest), step)
            else:
                done(written)
        step(0)

    def _woken(self) -> None:
        self.host.app_woken(self.ctx)
        space = self.tcp.space()
        self._target = space if self._want is None else min(space, self._want)
        self._done = 0
        self._next()

    def _next(self) -> None:
        n = min(self._target - self._done, self.tcp.space(), MAX_CALLS_PER_TASK * self.msg)
        if n <= 0:
            self._finish()
            return
        self._n = n
        self.ctx.then(send_terms(self.host.stack, self._offset + self._done, n, self.msg),
                      self._after_cb, n_bytes=n)  # n: bytes copied (NUMA)

    def _after(self) -> None:
        n = self._n
        self.tcp.write(n)
        self._done += n
        if self._done < self._target:
            self._next()
        else:
            self._finish()

    def _finish(self) -> None:
        done, self._done_cb = self._done_cb, None
        done(self._done)


class Reader:
    """A reader's recv() calls on one socket, as callbacks: it waits for data as a callback
    registered on the socket (``TcpReceiver.on_readable``) and runs its calls as tasks on the
    flow's application context."""

    __slots__ = ("host", "tcp", "msg", "ctx", "_want", "_done_cb", "_target", "_got", "_n",
                 "_woken_cb", "_after_cb")

    def __init__(self, host: StackHost, tcp: TcpReceiver, msg: int):
        self.host, self.tcp, self.msg = host, tcp, msg
        self.ctx = host.app_context(tcp.flow)
        self._want: int | None = None
        self._target = self._got = self._n = 0
        self._done_cb: Callable[[int], None] | None = None
        self._woken_cb, self._after_cb = self._woken, self._after

    def read_some(self, want: int | None, done: Callable[[int], None]) -> None:
        """One wake-up of the reader: once data is readable, recv() calls of up to ``msg``
        bytes taking ``min(readable, want)`` (``want`` None: everything readable), in tasks of
        at most ``MAX_CALLS_PER_TASK`` calls; then ``done(bytes read)``."""
        self._want, self._done_cb = want, done
        self.tcp.on_readable(self._woken_cb)

    def read(self, n_bytes: int, done: Callable[[int], None]) -> None:
        """recv() calls until ``n_bytes`` have been read, then ``done(n_bytes)``."""
        got = 0

        def step(n: int) -> None:
            nonlocal got
            got += n
            if got < n_bytes:
                self.read_some(n_bytes - got, step)
            else:
                done(got)
        step(0)

    def _woken(self) -> None:
        self.host.app_woken(self.ctx)
        readable = self.tcp.readable
        self._target = readable if self._want is None else min(readable, self._want)
        self._got = 0
        self._next()

    def _next(self) -> None:
        n = min(self._target - self._got, MAX_CALLS_PER_TASK * self.msg)
        if n <= 0:
            self._finish()
            return
        self._n = n
        # The copy reads the data where their last writer left them (NUMA: ``rx_data_home``).
        self.ctx.then(recv_terms(self.host.stack, n, self.msg), self._after_cb, n_bytes=n,
                      home=self.host.rx_data_home(self.tcp.flow))

    def _after(self) -> None:
        self._got += self.tcp.read(self._n)
        if self._got < self._target:
            self._next()
        else:
            self._finish()

    def _finish(self) -> None:
        done, self._done_cb = self._done_cb, None
        done(self._got)


# -- generator variants (for application loops written as SimPy processes) ----------------
# Each runs the callback form above and yields one event for the whole operation.
def write_some(host: StackHost, tcp: TcpSender, want: int | None, msg: int, *, offset: int,
               need: int):
    """``Writer.write_some`` as a generator (returns the bytes written)."""
    ev = simpy.Event(tcp.env)
    Writer(host, tcp, msg).write_some(want, offset, need, ev.succeed)
    return (yield ev)


def write(host: StackHost, tcp: TcpSender, n_bytes: int, msg: int, *, wake: int | None = None):
    """``Writer.write`` as a generator (returns ``n_bytes``)."""
    ev = simpy.Event(tcp.env)
    Writer(host, tcp, msg).write(n_bytes, wake, ev.succeed)
    return (yield ev)


def read_some(host: StackHost, tcp: TcpReceiver, want: int | None, msg: int):
    """``Reader.read_some`` as a generator (returns the bytes read)."""
    ev = simpy.Event(tcp.env)
    Reader(host, tcp, msg).read_some(want, ev.succeed)
    return (yield ev)


def read(host: StackHost, tcp: TcpReceiver, n_bytes: int, msg: int):
    """``Reader.read`` as a generator (returns ``n_bytes``)."""
    ev = simpy.Event(tcp.env)
    Reader(host, tcp, msg).read(n_bytes, ev.succeed)
    return (yield ev)


def _starts(offset: int, msg: int) -> int:
    """Messages begun before byte ``offset`` of the stream (a call starts at each multiple)."""
    return -(-offset // msg)
