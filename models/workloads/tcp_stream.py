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
the load is set by the application, not by the path.
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
from models.workloads.base import (Connection, Workload, open_connection, read_some,
                                   wake_bytes, write_some)

if TYPE_CHECKING:
    from models.workloads import WorkloadParams


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
