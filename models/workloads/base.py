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
``write_some``/``write`` are send() calls, ``read_some``/``read`` recv() calls. Back-to-back calls
are one CPU task on the flow's application context (their cycles add up exactly: each call
pays its fixed cost once, every byte its copy) of at most ``MAX_CALLS_PER_TASK`` calls, which
keeps the event count independent of the message size for all but tiny messages. The cycles are
charged as the cost terms ``app_send`` and ``app_recv`` (``models.costs``).
Units: bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import simpy

from models import costs
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


def wake_bytes(tcp: TcpSender) -> int:
    """Free send-buffer space that wakes a blocked writer (Linux's sk_stream rule: a third of
    the buffer, at least an MSS)."""
    return min(tcp.sndbuf, max(tcp.mss, tcp.sndbuf // 3))


# Back-to-back send()/recv() calls are one CPU task, and the bytes reach TCP (or leave the socket)
# when it ends; at most this many calls per task bound that delay (~100 us for 1-byte calls),
# while large messages still move a whole buffer in one task.
MAX_CALLS_PER_TASK = 64


def write_some(host: StackHost, tcp: TcpSender, want: int | None, msg: int, *, offset: int,
               need: int):
    """One wake-up of a writer (a generator; returns the bytes written): block until ``need``
    bytes are free, then back-to-back send() calls of up to ``msg`` bytes covering
    ``min(free space, want)`` (``want`` None: all the free space), in tasks of at most
    ``MAX_CALLS_PER_TASK`` calls. ``offset`` is the writer's position in its stream (a call
    starts at each multiple of ``msg``); each call pays its fixed cost, every byte its copy."""
    if tcp.space() < need:
        yield tcp.wait_space(need)
    target = tcp.space() if want is None else min(tcp.space(), want)
    done = 0
    while done < target:
        n = min(target - done, tcp.space(), MAX_CALLS_PER_TASK * msg)
        if n <= 0:
            break
        calls = _starts(offset + done + n, msg) - _starts(offset + done, msg)
        yield host.app_context(tcp.flow).execute(
            {costs.APP_SEND: host.stack.send_call.cycles(0, n, calls)},
            n_bytes=n)  # n: bytes copied (NUMA)
        tcp.write(n)
        done += n
    return done


def write(host: StackHost, tcp: TcpSender, n_bytes: int, msg: int, *, wake: int | None = None):
    """send() calls of up to ``msg`` bytes until ``n_bytes`` are in the send buffer (a
    generator): one task per wake-up; the writer wakes at ``wake`` free bytes (default
    ``wake_bytes``) or when the rest fits. ``msg = n_bytes`` is one send() call."""
    wake = wake_bytes(tcp) if wake is None else wake
    done = 0
    while done < n_bytes:
        done += yield from write_some(host, tcp, n_bytes - done, msg, offset=done,
                                      need=min(wake, n_bytes - done))


def read_some(host: StackHost, tcp: TcpReceiver, want: int | None, msg: int):
    """One wake-up of a reader (a generator; returns the bytes read): wait until data is
    readable, then recv() calls of up to ``msg`` bytes taking ``min(readable, want)`` (``want``
    None: everything readable), in tasks of at most ``MAX_CALLS_PER_TASK`` calls."""
    yield tcp.wait_readable()
    target = tcp.readable if want is None else min(tcp.readable, want)
    got = 0
    while got < target:
        n = min(target - got, MAX_CALLS_PER_TASK * msg)
        yield host.app_context(tcp.flow).execute(
            {costs.APP_RECV: host.stack.recv_call.cycles(0, n, -(-n // msg))}, n_bytes=n)
        got += tcp.read(n)
    return got


def read(host: StackHost, tcp: TcpReceiver, n_bytes: int, msg: int):
    """recv() calls of up to ``msg`` bytes until ``n_bytes`` have been read (a generator)."""
    got = 0
    while got < n_bytes:
        got += yield from read_some(host, tcp, n_bytes - got, msg)


def _starts(offset: int, msg: int) -> int:
    """Messages begun before byte ``offset`` of the stream (a call starts at each multiple)."""
    return -(-offset // msg)
