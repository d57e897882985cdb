"""ICMP echo, ping(8) (``kind: ping``): round-trip times through the whole path, no TCP.

::

    pinger's app: sendto() + ICMP output --> device path --wire--> the other host's
      receive path (interrupt, driver, icmp_rcv): the kernel answers there (icmp_echo),
      reply output --> device path --wire--> the pinger's receive path: RTT sample

Modelled: ``sessions_per_vm`` pingers per VM (each its own ICMP identifier, the flow id
``v * sessions_per_vm + s``), on the VM for ``direction: tx`` (the VM pings the peer) or on the
peer behind its port for ``rx`` (the peer pings the VM). A pinger sends one echo request of
``ping.size_bytes`` payload bytes (ping's ``-s``: 56 by default, an 84-byte IP packet) every
``ping.interval_us`` after a start offset in ``[0, start_jitter_us)``, whether or not the last
reply has come (as ping does). Each send is one task on the pinger's application context:
``send_call`` (sendto on the raw socket, with its copy) and ``icmp_tx`` (building the echo and
its IP output). The other end takes the request in its receive path (``icmp_rx``, in the
softirq of a native host or the vCPU's pass over its vNIC ring) and its kernel answers at once
(``icmp_tx``; ``models.guest.StackHost``): no application, no TCP, no ACK. The reply crosses
the path back and the pinger's receive path takes it (``icmp_rx``); the ping process then reads
it (``recv_call``, a task on its context, not part of the RTT).
RTT: from the start of the sendto() task (ping takes its timestamp in user space just before
sendto) to the end of the receive pass that takes the reply (ping reads the kernel's receive
timestamp, SO_TIMESTAMP): so it holds every hop of both directions (exits, vNIC rings, NIC and
virtual interrupt coalescing, vector and vCPU passes, halt wake-ups, wire) and none of the
ping process's read. Samples go to a ``LatencySample`` ring of
``ping.latency_sample_capacity``; the summary takes those completed inside the window:
``ping_rtt_mean_us``, ``ping_rtt_p50_us``, ``ping_rtt_p90_us``, ``ping_rtt_p99_us``, with
``ping_sent_per_s`` and ``ping_loss_ratio`` (requests sent in the window whose replies did not
come back in it, over requests sent; a reply straddling an edge counts on its own side).
Default interval 1000 us (ping's default is 1 s, too slow for windows of tens of ms; the
interval is long next to any RTT here, so echoes do not queue behind one another; ``ping -i``
below 0.2 s needs root).
Left out: ICMP rate limiting (Linux limits only errors, not echo replies), the guest's timer
interrupt that wakes the pinger (no halt wake-up is charged for it: only received packets'
virtual interrupts wake a halted vCPU), IP fragmentation (a request must fit one frame; the
config check says so), ping's own output (one line per reply).
Units: bytes, seconds inside, microseconds in the results.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import simpy

from models import costs, units
from models.base import ECHO, Burst, check
from models.guest import StackHost
from models.workloads.base import LatencySample, Workload, latency_summary

if TYPE_CHECKING:
    from models.workloads import WorkloadParams

ICMP_IP_HEADER_BYTES = units.IP_HEADER_BYTES + units.ICMP_HEADER_BYTES


@dataclass(frozen=True)
class PingParams:
    """``workload.ping``: the echo size and interval, and how many RTTs are kept."""

    size_bytes: int = 56            # ICMP payload per echo (ping -s)
    interval_us: float = 1000.0     # between a pinger's requests (ping -i)
    latency_sample_capacity: int = 65536

    def __post_init__(self):
        check(1 <= self.size_bytes <= 65507, "size_bytes", self.size_bytes,
              "in 1..65507 (one frame at the guests' MTU: checked with the MTU)")
        check(1 <= self.interval_us <= 1e7, "interval_us", self.interval_us,
              "in 1..10000000 (microseconds)")
        check(100 <= self.latency_sample_capacity <= 2**24, "latency_sample_capacity",
              self.latency_sample_capacity, "in 100..16777216")


class Pinger:
    """One ping process: sends echoes on a timer, takes the replies its host hands it."""

    def __init__(self, env: simpy.Environment, flow: int, vm: int, host: StackHost, target: int,
                 params: PingParams, rtts: LatencySample, start_s: float):
        self.env, self.flow, self.vm, self.host, self.target = env, flow, vm, host, target
        self.params, self.rtts = params, rtts
        self.ctx = host.app_context(flow)  # placed before the run starts
        self.sent = self.received = self.bytes_read = 0
        self.rtt_sum_s = 0.0
        host.icmp_sockets[flow] = self
        env.process(self._send_loop(start_s))

    def _send_loop(self, start_s: float):
        """Every interval from the start (no drift: the k-th request at start + k intervals)."""
        env, interval_s = self.env, units.us_to_s(self.params.interval_us)
        yield env.timeout(start_s)
        t0, k = env.now, 0
        while True:
            self._send()
            k += 1
            yield env.timeout(t0 + k * interval_s - env.now)

    def _send(self) -> None:
        st, size = self.host.stack, self.params.size_bytes
        burst = Burst(ECHO, self.flow, size, 1, 1, ICMP_IP_HEADER_BYTES, size, seq=self.sent,
                      sent_s=self.env.now, dst=self.target, src=self.host.endpoint)
        self.sent += 1
        self.host.send_down(burst, {costs.APP_SEND: st.send_call.cycles(0, size, 1),
                                    costs.STACK_ICMP_TX: st.icmp_tx.cycles(1, size, 0)})

    def on_reply(self, burst: Burst) -> None:
        """The reply, at the end of the receive pass that took it: the RTT sample; then the
        ping process reads it (a task on its context)."""
        rtt_s = self.env.now - burst.sent_s
        self.rtts.add(self.env.now, rtt_s)
        self.rtt_sum_s += rtt_s
        self.received += 1
        self.bytes_read += burst.payload_bytes
        self.ctx.then({costs.APP_RECV: self.host.stack.recv_call.cycles(
            0, burst.payload_bytes, 1)}, _nothing, packets=1, n_bytes=burst.payload_bytes)


def _nothing() -> None:
    """Nothing waits for the ping process's read."""


class Ping(Workload):
    """Pingers on the VMs (``direction: tx``) or on their peers (``rx``)."""

    def __init__(self, env: simpy.Environment, params: WorkloadParams, vms: list[StackHost],
                 peers: list[StackHost], *, mss_bytes: int, seg_max: dict[str, int],
                 rng: np.random.Generator):
        super().__init__(env, params, vms, peers, mss_bytes=mss_bytes, seg_max=seg_max, rng=rng)
        self.rtts = LatencySample(params.ping.latency_sample_capacity)
        self.pingers: list[Pinger] = []
        for v, vm in enumerate(vms):
            for s in range(params.sessions_per_vm):
                flow = v * params.sessions_per_vm + s
                src, dst = (vm, peers[v]) if params.direction == "tx" else (peers[v], vm)
                start_s = units.us_to_s(rng.uniform(0, params.start_jitter_us))
                self.pingers.append(Pinger(env, flow, v, src, dst.endpoint, params.ping,
                                           self.rtts, start_s))

    # -- what the recorder asks -------------------------------------------------------------
    def flows(self) -> list[dict]:
        return [{"flow": p.flow, "vm": p.vm, "bytes_read": p.bytes_read,
                 "rtt_sum_s": p.rtt_sum_s, "rtt_samples": p.received, "retransmits": 0,
                 "timeouts": 0} for p in self.pingers]

    def counters(self) -> dict[str, float]:
        return {"ping.sent": sum(p.sent for p in self.pingers),
                "ping.received": sum(p.received for p in self.pingers)}

    def summary(self, d: dict[str, float], window_s: float) -> dict[str, float]:
        """Called at the window's end: RTTs of the replies taken inside it."""
        sent, received = d["ping.sent"], d["ping.received"]
        return {**latency_summary("ping_rtt", self.rtts, self.env.now - window_s),
                "ping_sent_per_s": sent / window_s,
                "ping_loss_ratio": max(0.0, sent - received) / sent if sent else 0.0}
