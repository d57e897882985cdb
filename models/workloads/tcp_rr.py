"""netperf TCP_RR (``kind: tcp_rr``): request/response ping-pong over the same path as TCP_STREAM.

Modelled: ``sessions_per_vm`` sessions per VM. Each session is one TCP connection, i.e. one
``TcpSender``/``TcpReceiver`` pair per direction sharing one flow id (as a real connection's two
halves share its 4-tuple: the same RSS queue and vNIC queue both ways). The client (the VM for
``direction: tx``, the peer for ``rx``, as netperf and netserver swap in 002's receive tests)
writes ``rr.request_bytes`` with one ``send()``, reads ``rr.response_bytes`` with ``recv()``
calls, and starts the next transaction at once: one transaction in flight per session. The server
reads the request and writes the response. Each call pays the stack's call cost on the session's
application context; segments, ACKs, exits, interrupts and context hand-offs pay what they pay
in TCP_STREAM, so the latency is whatever the path makes it. Client and server are callbacks
(``models.workloads.base.Writer``/``Reader``), not SimPy processes: no event beyond their
tasks and the start offset.
ACKs: both receivers run in interactive mode (``TcpReceiver.interactive``): the ACK of a pushed
request is held (delayed-ACK timer) and leaves on the response as a piggy-back, and the ACK of
the response on the next request, as TCP does with a request/response pattern. Approximation:
the piggy-backed ACK costs nothing on either stack (no ACK segment is built or parsed), and a
multi-segment response is ACKed by the usual every-second-segment rule.
Measured: transactions per second (``transactions_per_s``) and the client's per-transaction
latency (from the start of its ``send()`` to the end of the ``recv()`` that completes the
response) as percentiles ``rr_latency_p50_us`` / ``p90`` / ``p99`` and the mean. Latencies are
kept with their completion time in a preallocated ring buffer of ``rr.latency_sample_capacity``
(no list grows per event); the summary takes the samples that completed inside the measurement
window (with more transactions in the window than the capacity, the most recent ones).
Left out: connection set-up, netperf's burst mode (``-b``), TCP_NODELAY (Nagle applies, which
matters only for responses longer than one MSS).
Units: bytes, seconds inside, microseconds in results.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import simpy

from models import units
from models.base import check
from models.guest import StackHost
from models.tcp import TcpReceiver, TcpSender
from models.workloads.base import (LatencySample, Reader, Workload, Writer, latency_summary,
                                   open_connection)

if TYPE_CHECKING:
    from models.workloads import WorkloadParams


@dataclass(frozen=True)
class RrParams:
    """``workload.rr``: request and response sizes, and how many per-transaction latencies are
    kept for the percentiles (a ring buffer)."""

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


class _Session:
    def __init__(self, flow: int, vm: int, client: tuple[TcpSender, TcpReceiver],
                 server: tuple[TcpSender, TcpReceiver]):
        self.flow, self.vm, self.client, self.server = flow, vm, client, server
        self.transactions = 0


class TcpRr(Workload):
    """Opens one connection per session and runs a netperf client and a netserver on it."""

    def __init__(self, env: simpy.Environment, params: WorkloadParams, vms: list[StackHost],
                 peers: list[StackHost], *, mss_bytes: int, seg_max: dict[str, int],
                 rng: np.random.Generator):
        super().__init__(env, params, vms, peers, mss_bytes=mss_bytes, seg_max=seg_max, rng=rng)
        self.sessions: list[_Session] = []
        self.latencies = LatencySample(params.rr.latency_sample_capacity)
        for v, vm in enumerate(vms):
            for s in range(params.sessions_per_vm):
                flow = v * params.sessions_per_vm + s
                if params.direction == "tx":
                    (client, c_side), (server, s_side) = (vm, "vm"), (peers[v], "peer")
                else:
                    (client, c_side), (server, s_side) = (peers[v], "peer"), (vm, "vm")
                c_snd, s_rcv = open_connection(client, server, flow, mss_bytes=mss_bytes,
                                               seg_max_bytes=seg_max[c_side],
                                               socket_bytes=params.socket_bytes)
                s_snd, c_rcv = open_connection(server, client, flow, mss_bytes=mss_bytes,
                                               seg_max_bytes=seg_max[s_side],
                                               socket_bytes=params.socket_bytes)
                session = _Session(flow, v, _join(c_snd, c_rcv), _join(s_snd, s_rcv))
                self.sessions.append(session)
                start_s = units.us_to_s(rng.uniform(0, params.start_jitter_us))
                _Client(env, client, session, params.rr, self.latencies, start_s)
                _Server(server, session, params.rr)

    # -- what the recorder asks -------------------------------------------------------------
    def flows(self) -> list[dict]:
        rows = []
        for s in self.sessions:
            halves = (s.client, s.server)
            rows.append({"flow": s.flow, "vm": s.vm,
                         "bytes_read": sum(r.bytes_read for _, r in halves),
                         "rtt_sum_s": sum(t.rtt_sum_s for t, _ in halves),
                         "rtt_samples": sum(t.rtt_samples for t, _ in halves),
                         "retransmits": sum(t.retransmits for t, _ in halves),
                         "timeouts": sum(t.timeouts for t, _ in halves)})
        return rows

    def counters(self) -> dict[str, float]:
        c = {f"session.{s.flow}.transactions": s.transactions for s in self.sessions}
        c["transactions"] = sum(s.transactions for s in self.sessions)
        return c

    def summary(self, d: dict[str, float], window_s: float) -> dict[str, float]:
        """Called at the window's end: latencies are those that completed inside it."""
        return {"transactions_per_s": d["transactions"] / window_s,
                **latency_summary("rr_latency", self.latencies, self.env.now - window_s)}

    def tables(self, d: dict[str, float], window_s: float) -> dict[str, list[dict]]:
        return {"rr_sessions": [{"flow": s.flow, "vm": s.vm, "transactions_per_s":
                                 d[f"session.{s.flow}.transactions"] / window_s}
                                for s in self.sessions]}


class _Client:
    """netperf's side: write the request (one send() call of ``request_bytes``, blocking while
    the send buffer lacks room: it goes on as soon as any byte is free), read the response
    (recv() calls until it is all read, one per wake-up), count the transaction and its
    latency, start the next. Callbacks (``Writer``, ``Reader``): no process, no event."""

    def __init__(self, env: simpy.Environment, host: StackHost, session: _Session,
                 rr: RrParams, latencies: LatencySample, start_s: float):
        self.env, self.session, self.rr, self.latencies = env, session, rr, latencies
        snd, rcv = session.client
        self.writer = Writer(host, snd, rr.request_bytes)
        self.reader = Reader(host, rcv, rr.response_bytes)
        self.t0 = 0.0
        self._sent_cb, self._done_cb = self._sent, self._done
        env.timeout(start_s).callbacks.append(lambda _event: self._transaction())

    def _transaction(self) -> None:
        self.t0 = self.env.now
        self.writer.write(self.rr.request_bytes, 1, self._sent_cb)

    def _sent(self, _n_bytes: int) -> None:
        self.reader.read(self.rr.response_bytes, self._done_cb)

    def _done(self, _n_bytes: int) -> None:
        self.session.transactions += 1
        now = self.env.now
        self.latencies.add(now, now - self.t0)
        self._transaction()


class _Server:
    """netserver's side: read the request, write the response (as the client does), repeat."""

    def __init__(self, host: StackHost, session: _Session, rr: RrParams):
        self.rr = rr
        snd, rcv = session.server
        self.writer = Writer(host, snd, rr.response_bytes)
        self.reader = Reader(host, rcv, rr.request_bytes)
        self._got_cb, self._sent_cb = self._got, self._sent
        self._sent(0)

    def _got(self, _n_bytes: int) -> None:
        self.writer.write(self.rr.response_bytes, 1, self._sent_cb)

    def _sent(self, _n_bytes: int) -> None:
        self.reader.read(self.rr.request_bytes, self._got_cb)


def _join(snd: TcpSender, rcv: TcpReceiver) -> tuple[TcpSender, TcpReceiver]:
    """One host's half of the connection, piggy-backing joined: its receiver holds the ACK of
    a pushed burst, its sender carries it."""
    rcv.interactive = True
    snd.ack_source = rcv.take_ack
    return snd, rcv
