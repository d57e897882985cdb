"""Workloads: what the VMs and the peers run. A ``Workload`` base and one subclass per kind.

Every workload is built from the same arguments (VMs, the peer behind each VM's port, the MSS
and largest segment each side may send, a random stream), keeps cumulative counters, and
reports them through three hooks the recorder (``sim.metrics``) calls: ``flows()`` (one record
per flow: its VM and the counters goodput, RTT and retransmissions come from),
``summary(d, window_s)`` and ``tables(d, window_s)`` for what only this kind measures (given the
counter differences ``d`` over the window; plain dicts and records, no pandas here).
``WORKLOADS`` maps ``workload.kind`` to its class.

TCP_STREAM, modelled: ``sessions_per_vm`` concurrent netperf TCP_STREAM connections per VM, each with
``socket_bytes`` sockets (receive buffer ``socket_bytes``; send buffer ``sndbuf_scale`` x
``socket_bytes``, as Linux doubles SO_SNDBUF) and ``message_bytes`` per send()/recv() call. Direction
``tx``: the VM sends, the peer's netserver receives; ``rx``: the reverse. The sender calls
``send()`` in a loop (each call pays its fixed cost once and copies its message, blocking while
the send buffer is full); the receiver calls ``recv()`` for up to one message per call whenever
data is readable. Back-to-back calls are one CPU task (their cycles add up exactly) of at most
``MAX_CALLS_PER_TASK`` calls, which keeps the event count independent of the message size for
all but tiny messages. With ``rate_limit_mbps`` > 0 each sender
paces itself (a paced netperf, or an application with less to say): it writes one message when
``written / rate`` says it is due, so the load is set by the application, not by the path.
Connections start at a random offset within ``start_jitter_us`` (the workload's only randomness;
service-time jitter and the RSS salt are the CPU's and the NIC's).
Left out: connection set-up and teardown, netperf's own CPU measurement.
Units: bytes, microseconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from models import units
from models.base import CycleCost, check
from models.guest import StackHost
from models.tcp import TcpReceiver, TcpSender

DIRECTIONS = ("tx", "rx")


@dataclass(frozen=True)
class RrParams:
    """netperf TCP_RR (``kind: tcp_rr``, ``models.workload_rr``): request and response sizes,
    and how many per-transaction latencies are kept for the percentiles (a ring buffer)."""

    request_bytes: int = 1
    response_bytes: int = 1
    latency_sample_capacity: int = 65536

    def __post_init__(self):
        check(1 <= self.request_bytes <= 16 * 2**20, "request_bytes", self.request_bytes,
              "in 1..16777216")
        check(1 <= self.response_bytes <= 16 * 2**20, "response_bytes", self.response_bytes,
              "in 1..16777216")
        check(100 <= self.latency_sample_capacity <= 2**24, "latency_sample_capacity",
              self.latency_sample_capacity, "in 100..16777216")


@dataclass(frozen=True)
class HttpParams:
    """HTTP bulk (``kind: http``, ``models.http``): object and message sizes, server cost."""

    object_bytes: int = 1 << 20
    request_bytes: int = 300
    response_header_bytes: int = 300
    # Apache 2.2 per request (parse, URL to file, stat, log line): ~20 us on a 2.7 GHz core.
    server_request_cycles: float = 50000.0
    think_time_us: float = 0.0

    def __post_init__(self):
        check(1 <= self.object_bytes <= 1 << 30, "object_bytes", self.object_bytes,
              "in 1..1073741824")
        check(self.request_bytes >= 1, "request_bytes", self.request_bytes, ">= 1")
        check(self.response_header_bytes >= 1, "response_header_bytes",
              self.response_header_bytes, ">= 1")
        check(self.server_request_cycles >= 0, "server_request_cycles",
              self.server_request_cycles, ">= 0")
        check(self.think_time_us >= 0, "think_time_us", self.think_time_us, ">= 0")



@dataclass(frozen=True)
class MulticastWorkloadParams:
    """UDP multicast (``kind: udp_multicast``, ``models.multicast``): the streams and the
    receivers' socket accounting and per-datagram work."""

    packet_bytes: int = 800          # UDP payload per datagram
    packet_rate_pps: float = 40000.0  # per group (each receiver's rate)
    groups: int = 1
    burst_interval_us: float = 100.0
    # Linux 2.6.32 charges a datagram's skb truesize: a 2KB receive buffer plus the sk_buff.
    skb_truesize_bytes: int = 2304
    # The receiving tool's own work per datagram (sequence check, counters): a prior.
    app: CycleCost = field(default_factory=lambda: CycleCost(0.0, 1000.0, 0.0))

    def __post_init__(self):
        check(1 <= self.packet_bytes <= 8972, "packet_bytes", self.packet_bytes, "in 1..8972")
        check(0 < self.packet_rate_pps <= 1e7, "packet_rate_pps", self.packet_rate_pps,
              "in (0, 1e7]")
        check(1 <= self.groups <= 1024, "groups", self.groups, "in 1..1024")
        check(1 <= self.burst_interval_us <= 1e5, "burst_interval_us", self.burst_interval_us,
              "in 1..100000")
        check(self.skb_truesize_bytes >= 1, "skb_truesize_bytes", self.skb_truesize_bytes,
              ">= 1")


@dataclass(frozen=True)
class WorkloadParams:
    """What runs: ``kind`` picks the workload; the fields below are shared by the kinds (kinds
    with parameters of their own add a nested section)."""

    kind: str = "tcp_stream"
    vms: int = 1
    sessions_per_vm: int = 5
    socket_bytes: int = 65536
    message_bytes: int = 16384
    direction: str = "tx"
    start_jitter_us: float = 100.0
    rr: RrParams = field(default_factory=RrParams)
    # TCP_STREAM: each session's sender paces its send() calls to this rate (0: as fast as
    # the buffer allows), for low-load studies (004: ~700 Mbps over many VMs).
    rate_limit_mbps: float = 0.0
    http: HttpParams = field(default_factory=HttpParams)
    multicast: MulticastWorkloadParams = field(default_factory=MulticastWorkloadParams)

    def __post_init__(self):
        check(self.kind in WORKLOADS, "kind", self.kind, f"one of {sorted(WORKLOADS)}")
        check(1 <= self.vms <= 512, "vms", self.vms, "in 1..512")
        check(1 <= self.sessions_per_vm <= 1024, "sessions_per_vm", self.sessions_per_vm,
              "in 1..1024")
        check(self.socket_bytes >= 1, "socket_bytes", self.socket_bytes, ">= 1")
        check(1 <= self.message_bytes <= 16 * 2**20, "message_bytes", self.message_bytes,
              "in 1..16777216")
        check(self.direction in DIRECTIONS, "direction", self.direction, f"one of {DIRECTIONS}")
        check(self.start_jitter_us >= 0, "start_jitter_us", self.start_jitter_us, ">= 0")
        check(self.rate_limit_mbps >= 0, "rate_limit_mbps", self.rate_limit_mbps, ">= 0")


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


class TcpStream(Workload):
    """Opens the connections and starts one sender and one receiver process for each."""

    def __init__(self, env: simpy.Environment, params: WorkloadParams, vms: list[StackHost],
                 peers: list[StackHost], *, mss_bytes: int, seg_max: dict[str, int],
                 rng: np.random.Generator):
        super().__init__(env, params, vms, peers, mss_bytes=mss_bytes, seg_max=seg_max, rng=rng)
        self.connections: list[Connection] = []
        for v, vm in enumerate(vms):
            peer = peers[v]
            for s in range(params.sessions_per_vm):
                flow = v * params.sessions_per_vm + s
                src, dst = (vm, peer) if params.direction == "tx" else (peer, vm)
                src_side = "vm" if params.direction == "tx" else "peer"
                sender, receiver = open_connection(src, dst, flow, mss_bytes=mss_bytes,
                                                   seg_max_bytes=seg_max[src_side],
                                                   socket_bytes=params.socket_bytes)
                self.connections.append(Connection(flow, v, sender, receiver))
                start_s = units.us_to_s(rng.uniform(0, params.start_jitter_us))
                env.process(self._send_loop(src, sender, start_s))
                env.process(self._recv_loop(dst, receiver))

    def flows(self) -> list[dict]:
        return [{"flow": c.flow, "vm": c.vm, "bytes_read": c.receiver.bytes_read,
                 "rtt_sum_s": c.sender.rtt_sum_s, "rtt_samples": c.sender.rtt_samples,
                 "retransmits": c.sender.retransmits, "timeouts": c.sender.timeouts}
                for c in self.connections]

    def _send_loop(self, host: StackHost, tcp: TcpSender, start_s: float):
        """send() calls back to back (``write_some``); paced, one message when it is due."""
        yield self.env.timeout(start_s)
        msg = self.params.message_bytes
        rate_bytes_per_s = units.mbps_to_bytes_per_s(self.params.rate_limit_mbps)
        written, t0 = 0, self.env.now
        while True:
            if rate_bytes_per_s:  # paced: one message when the schedule says it is due
                due_s = t0 + written / rate_bytes_per_s
                if due_s > self.env.now:
                    yield self.env.timeout(due_s - self.env.now)
            rest = msg - written % msg  # the current message's bytes not yet written
            written += yield from write_some(host, tcp, rest if rate_bytes_per_s else None,
                                             msg, offset=written,
                                             need=min(wake_bytes(tcp), rest))

    def _recv_loop(self, host: StackHost, tcp: TcpReceiver):
        """recv() of up to one message per call; one task takes everything readable."""
        while True:
            yield from read_some(host, tcp, None, self.params.message_bytes)


# -- what every TCP workload's applications do -------------------------------------------------
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
        yield host.app_context(tcp.flow).execute(host.stack.send_call.cycles(0, n, calls),
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
        yield host.app_context(tcp.flow).execute(host.stack.recv_call.cycles(0, n, -(-n // msg)),
                                                 n_bytes=n)
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


WORKLOADS: dict[str, type[Workload]] = {"tcp_stream": TcpStream}

import models.workload_rr  # noqa: E402,F401  (registers tcp_rr; imports this module's base)
import models.http  # noqa: E402,F401  (registers http)
import models.multicast  # noqa: E402,F401  (registers udp_multicast)
