"""HTTP bulk (``kind: http``, 001): many keep-alive connections per VM, each moving 1 MB objects.

::

    GET  (direction tx: the VM sends)        POST (direction rx: the VM receives)
    client (peer)        server (VM)          client (peer)            server (VM)
      request  ------------->                   request + object -------->
                <------- header + object                  <------------ response

Modelled: ``sessions_per_vm`` connections per VM (001: 100 per VM, 200 per port), each one flow
id with a TCP sender and receiver in each direction (as TCP_RR: the two halves of a connection
share its 4-tuple, hence its RSS and vNIC queue; ACKs travel on their own, not piggy-backed).
The client (the peer: 001's Ixia) sends a request and waits for the whole reply, then starts the
next object after ``think_time_us``; the server (the VM's Apache) reads the request, spends
``server_request_cycles`` on it (parse, map the URL, log) and writes the reply. Writes and reads
go through the same socket calls as netperf (``send_call``/``recv_call`` per ``message_bytes``,
the writer waking when a third of the buffer is free), so the costs are the OS profile's.
Sizes: ``object_bytes`` (1 MB), ``request_bytes`` (a GET's request line and headers, or a POST's
headers before the body), ``response_header_bytes`` (a status line and headers: before a GET's
body, or a POST's whole response). Connections start at a random offset within
``start_jitter_us``. The server's request work is charged as the cost term ``app``, the socket
calls as ``app_send``/``app_recv`` (``models.costs``).
Reported: objects completed per second (counted by the client when the reply is complete),
object goodput, mean time per object.
Left out: connection set-up and teardown (keep-alive), Apache's sendfile (its zero-copy write is
priced as an ordinary send() copy), HTTP parsing on the client, TCP data/ACK piggy-backing.
Units: bytes, microseconds, cycles.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from models import costs, units
from models.base import check
from models.workloads.base import (Workload, declare_connection, open_connection, read,
                                   write)


@dataclass(frozen=True)
class HttpParams:
    """``workload.http``: object and message sizes, server cost."""

    object_bytes: int = 1 << 20
    request_bytes: int = 300
    response_header_bytes: int = 300
    # Apache 2.2 per request (parse, URL to file, stat, log line): ~20 us on a 2.7 GHz core.
    server_request_cycles: float = 50000.0
    think_time_us: float = 0.0
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(1 <= self.object_bytes <= 1 << 30, "object_bytes", self.object_bytes,
              "in 1..1073741824")
        check(self.request_bytes >= 1, "request_bytes", self.request_bytes, ">= 1")
        check(self.response_header_bytes >= 1, "response_header_bytes",
              self.response_header_bytes, ">= 1")
        check(self.server_request_cycles >= 0, "server_request_cycles",
              self.server_request_cycles, ">= 0")
        check(self.think_time_us >= 0, "think_time_us", self.think_time_us, ">= 0")


class HttpConnection:
    """One keep-alive connection: its two TCP flows and what it has done."""

    def __init__(self, index: int, vm: int, up, down):
        self.index, self.vm = index, vm
        self.up, self.down = up, down   # (sender, receiver) client->server, server->client
        self.flow = index
        self.objects = 0
        self.object_time_sum_s = 0.0


class Http(Workload):
    """Opens the connections and runs a client process and a server process for each.
    ``declare_only`` (``sim.builder.build``, for the fluid engine): each connection's flow and
    application contexts only (``declare_connection``), no TCP state, no process; ``flows()``
    then lists the flows with zero counters, and the model cannot run."""

    DECLARES = True

    def __init__(self, env: simpy.Environment, params, vms: list, peers: list, *,
                 mss_bytes: int, seg_max: dict[str, int], rng: np.random.Generator,
                 declare_only: bool = False):
        super().__init__(env, params, vms, peers, mss_bytes=mss_bytes, seg_max=seg_max, rng=rng)
        self.http: HttpParams = params.http
        self.get = params.direction == "tx"  # GET: the VM (server) sends the objects
        self.connections: list[HttpConnection] = []
        self.declared = declare_only
        sock = params.socket_bytes
        for v, vm in enumerate(vms):
            peer = peers[v]
            for c in range(params.sessions_per_vm):
                k = v * params.sessions_per_vm + c
                if declare_only:   # the calls open_connection makes, in its order
                    declare_connection(peer, vm, k, mss_bytes=mss_bytes, socket_bytes=sock)
                    declare_connection(vm, peer, k, mss_bytes=mss_bytes, socket_bytes=sock)
                    self.connections.append(HttpConnection(k, v, None, None))
                    continue
                up = open_connection(peer, vm, k, mss_bytes=mss_bytes,
                                     seg_max_bytes=seg_max["peer"], socket_bytes=sock)
                down = open_connection(vm, peer, k, mss_bytes=mss_bytes,
                                       seg_max_bytes=seg_max["vm"], socket_bytes=sock)
                conn = HttpConnection(k, v, up, down)
                self.connections.append(conn)
                start_s = units.us_to_s(rng.uniform(0, params.start_jitter_us))
                env.process(self._client(peer, conn, start_s))
                env.process(self._server(vm, conn))

    # -- the two ends ---------------------------------------------------------------------
    def _sizes(self) -> tuple[int, int]:
        """(client -> server bytes, server -> client bytes) of one object."""
        h = self.http
        if self.get:
            return h.request_bytes, h.response_header_bytes + h.object_bytes
        return h.request_bytes + h.object_bytes, h.response_header_bytes

    def _client(self, host, conn: HttpConnection, start_s: float):
        up_bytes, down_bytes = self._sizes()
        think_s = units.us_to_s(self.http.think_time_us)
        yield self.env.timeout(start_s)
        while True:
            t0 = self.env.now
            yield from self._write(host, conn.up[0], up_bytes)
            yield from self._read(host, conn.down[1], down_bytes)
            conn.objects += 1
            conn.object_time_sum_s += self.env.now - t0
            if think_s > 0:
                yield self.env.timeout(think_s)

    def _server(self, host, conn: HttpConnection):
        up_bytes, down_bytes = self._sizes()
        ctx = host.app_context(conn.down[0].flow)
        while True:
            yield from self._read(host, conn.up[1], up_bytes)
            yield ctx.execute({costs.APP: self.http.server_request_cycles})
            yield from self._write(host, conn.down[0], down_bytes)

    # -- socket calls (``models.workloads.base.write``/``read``, as TcpStream) -------------
    def _write(self, host, tcp, n_bytes: int):
        return write(host, tcp, n_bytes, self.params.message_bytes)

    def _read(self, host, tcp, n_bytes: int):
        return read(host, tcp, n_bytes, self.params.message_bytes)

    # -- recorder hooks -------------------------------------------------------------------
    def flows(self) -> list[dict]:
        """One record per connection, both directions summed (they share the flow id)."""
        if self.declared:   # no TCP state (``declare_only``): the flows, nothing counted
            return [{"flow": c.flow, "vm": c.vm, "bytes_read": 0, "rtt_sum_s": 0.0,
                     "rtt_samples": 0, "retransmits": 0, "timeouts": 0}
                    for c in self.connections]
        out = []
        for c in self.connections:
            (s_up, r_up), (s_down, r_down) = c.up, c.down
            out.append({"flow": c.flow, "vm": c.vm,
                        "bytes_read": r_up.bytes_read + r_down.bytes_read,
                        "rtt_sum_s": s_up.rtt_sum_s + s_down.rtt_sum_s,
                        "rtt_samples": s_up.rtt_samples + s_down.rtt_samples,
                        "retransmits": s_up.retransmits + s_down.retransmits,
                        "timeouts": s_up.timeouts + s_down.timeouts})
        return out

    def counters(self) -> dict[str, float]:
        c: dict[str, float] = {}
        for conn in self.connections:
            c[f"http.{conn.index}.objects"] = conn.objects
            c[f"http.{conn.index}.object_time_s"] = conn.object_time_sum_s
        return c

    def tables(self, d: dict[str, float], window_s: float) -> dict[str, list[dict]]:
        per_vm: dict[int, list[float]] = {}
        for conn in self.connections:
            acc = per_vm.setdefault(conn.vm, [0.0, 0.0])
            acc[0] += d[f"http.{conn.index}.objects"]
            acc[1] += d[f"http.{conn.index}.object_time_s"]
        size = self.http.object_bytes
        return {"http": [{"vm": v, "objects": n, "objects_per_s": n / window_s,
                          "object_gbps": units.bytes_per_s_to_gbps(n * size / window_s),
                          "mean_object_ms": units.s_to_ms(t / n) if n else float("nan")}
                         for v, (n, t) in sorted(per_vm.items())]}

    def summary(self, d: dict[str, float], window_s: float) -> dict[str, float]:
        rows = self.tables(d, window_s)["http"]
        n = sum(r["objects"] for r in rows)
        t = sum(d[f"http.{c.index}.object_time_s"] for c in self.connections)
        return {"http_objects_per_s": n / window_s,
                "http_object_gbps": sum(r["object_gbps"] for r in rows),
                "http_mean_object_ms": units.s_to_ms(t / n) if n else float("nan")}
