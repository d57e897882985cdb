"""netperf TCP_STREAM (``kind: tcp_stream``): bulk transfer, one direction per connection.

Modelled: ``sessions_per_vm`` concurrent netperf TCP_STREAM connections per VM, each with
``socket_bytes`` sockets (receive buffer ``socket_bytes``; send buffer ``sndbuf_scale`` x
``socket_bytes``, as Linux doubles SO_SNDBUF) and ``message_bytes`` per send()/recv() call.
Direction ``tx``: the VM sends, the peer's netserver receives; ``rx``: the reverse. The sender
calls ``send()`` in a loop (each call pays its fixed cost once and copies its message, blocking
while the send buffer is full); the receiver calls ``recv()`` for up to one message per call
whenever data is readable (``models.workloads.base``: tasks of at most ``MAX_CALLS_PER_TASK``
calls). With ``rate_limit_mbps`` > 0 each sender paces itself (a paced netperf, or an
application with less to say): it writes one message when ``written / rate`` says it is due, so
the load is set by the application, not by the path. Both applications are callbacks (a
``Writer`` and a ``Reader``), not SimPy processes: no event beyond their tasks, the start
offset and the pacing timeouts.
Connections start at a random offset within ``start_jitter_us`` (the workload's only randomness;
service-time jitter and the RSS salt are the CPU's and the NIC's).
Its parameters are the shared ones of ``WorkloadParams`` (no section of its own).
Left out: connection set-up and teardown, netperf's own CPU measurement.
Units: bytes, microseconds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import simpy

from models import units
from models.guest import StackHost
from models.tcp import TcpReceiver, TcpSender
from models.workloads.base import (Connection, DeclaredSender, Reader, Workload, Writer,
                                   declare_connection, open_connection, wake_bytes)

if TYPE_CHECKING:
    from models.workloads import WorkloadParams


class TcpStream(Workload):
    """Opens the connections and starts one sender and one receiver process for each.
    ``declare_only`` (``sim.builder.build``, for the fluid engine): each connection's flow,
    application contexts and the sender's send buffer only (``declare_connection``,
    ``DeclaredSender``), no TCP state, no process, no draw of a start offset; ``flows()``
    then lists the flows with zero counters, and the model cannot run."""

    DECLARES = True

    def __init__(self, env: simpy.Environment, params: WorkloadParams, vms: list[StackHost],
                 peers: list[StackHost], *, mss_bytes: int, seg_max: dict[str, int],
                 rng: np.random.Generator, declare_only: bool = False):
        super().__init__(env, params, vms, peers, mss_bytes=mss_bytes, seg_max=seg_max, rng=rng)
        self.connections: list[Connection] = []
        self.declared = declare_only
        for v, vm in enumerate(vms):
            peer = peers[v]
            for s in range(params.sessions_per_vm):
                flow = v * params.sessions_per_vm + s
                src, dst = (vm, peer) if params.direction == "tx" else (peer, vm)
                src_side = "vm" if params.direction == "tx" else "peer"
                if declare_only:   # the calls open_connection makes, in its order
                    declare_connection(src, dst, flow, mss_bytes=mss_bytes,
                                       socket_bytes=params.socket_bytes)
                    self.connections.append(Connection(flow, v, DeclaredSender(
                        int(params.socket_bytes * src.stack.sndbuf_scale)), None))
                    continue
                sender, receiver = open_connection(src, dst, flow, mss_bytes=mss_bytes,
                                                   seg_max_bytes=seg_max[src_side],
                                                   socket_bytes=params.socket_bytes)
                self.connections.append(Connection(flow, v, sender, receiver))
                start_s = units.us_to_s(rng.uniform(0, params.start_jitter_us))
                _Sender(env, src, sender, params.message_bytes,
                        units.mbps_to_bytes_per_s(params.rate_limit_mbps), start_s)
                _Receiver(dst, receiver, params.message_bytes)

    def flows(self) -> list[dict]:
        if self.declared:   # no TCP state (``declare_only``): the flows, nothing counted
            return [{"flow": c.flow, "vm": c.vm, "bytes_read": 0, "rtt_sum_s": 0.0,
                     "rtt_samples": 0, "retransmits": 0, "timeouts": 0}
                    for c in self.connections]
        return [{"flow": c.flow, "vm": c.vm, "bytes_read": c.receiver.bytes_read,
                 "rtt_sum_s": c.sender.rtt_sum_s, "rtt_samples": c.sender.rtt_samples,
                 "retransmits": c.sender.retransmits, "timeouts": c.sender.timeouts}
                for c in self.connections]



class _Sender:
    """A netperf sender: send() calls back to back (``Writer.write_some``: each wake-up writes
    all the free space); paced, one message when ``written / rate`` says it is due. Callbacks
    only: the start offset and the pacing are timeouts, the rest the writer's tasks."""

    def __init__(self, env: simpy.Environment, host: StackHost, tcp: TcpSender, msg: int,
                 rate_bytes_per_s: float, start_s: float):
        self.env, self.tcp, self.msg, self.rate = env, tcp, msg, rate_bytes_per_s
        self.writer = Writer(host, tcp, msg)
        self.written, self.t0 = 0, 0.0
        self._wrote_cb = self._wrote
        env.timeout(start_s).callbacks.append(self._start)

    def _start(self, _event) -> None:
        self.t0 = self.env.now
        self._next()

    def _next(self) -> None:
        if self.rate:  # paced: one message when the schedule says it is due
            due_s = self.t0 + self.written / self.rate
            if due_s > self.env.now:
                self.env.timeout(due_s - self.env.now).callbacks.append(self._due)
                return
        self._write()

    def _due(self, _event) -> None:
        self._write()

    def _write(self) -> None:
        rest = self.msg - self.written % self.msg  # the current message's bytes not yet written
        self.writer.write_some(rest if self.rate else None, self.written,
                               min(wake_bytes(self.tcp), rest), self._wrote_cb)

    def _wrote(self, n_bytes: int) -> None:
        self.written += n_bytes
        self._next()


class _Receiver:
    """A netserver receiver: recv() of up to one message per call whenever data is readable;
    one wake-up takes everything readable (``Reader.read_some``)."""

    def __init__(self, host: StackHost, tcp: TcpReceiver, msg: int):
        self.reader = Reader(host, tcp, msg)
        self._again_cb = self._again
        self.reader.read_some(None, self._again_cb)

    def _again(self, _n_bytes: int) -> None:
        self.reader.read_some(None, self._again_cb)
