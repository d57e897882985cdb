"""UDP multicast (``kind: udp_multicast``, 003): a sender on the peer, every VM a receiver
of its group's stream.

::

    peer app --sendto() x n every burst_interval--> peer NIC --wire--> host NIC RX queue
      --> RX vector context: driver + vswitch + replication (models.replication)
      --> each member's vNIC RX ring --> vCPU: driver + UDP receive (stack.rx_udp)
      --> socket buffer (full: socket_full) --> app: recvfrom() per datagram + app work

Modelled: ``multicast.groups`` groups, each a stream of ``packet_bytes``-byte UDP datagrams at
``packet_rate_pps`` (003: 800 bytes at 30K or 40K/s); VM ``v`` joins group ``v mod groups``.
The sender (the peer behind each port with receivers; 003's was a 2-vCPU VM on another host)
wakes every ``burst_interval_us`` and sends the datagrams due since its last wake-up back to back:
one burst per group per interval, never an event per packet. The interval is also how the
stream is batched downstream (a 100 us interval at 40K/s puts 4 datagrams in each interrupt, so
per-interrupt costs are shared by 4); ``burst_interval_us=25`` sends each datagram on its own.
Each datagram costs the sender one ``send_call`` (sendto, with its copy) and one
``tx_segment`` (IP output).
Receivers: the guest's UDP receive (``stack.rx_udp``, after the vNIC driver) queues datagrams
in the socket buffer of ``workload.socket_bytes`` (SO_RCVBUF), each charged
``skb_truesize_bytes`` (Linux charges a datagram's buffer and sk_buff, not its payload); a
datagram that finds it full is dropped (``socket_full``). The app reads everything queued in one
task: one ``recv_call`` per datagram plus ``app`` per datagram (the test tool's own work),
charged as the cost terms ``app_recv`` and ``app`` (``models.costs``).
Loss, per receiver, is what the tools of the sources measure: sequence gaps. Each datagram
carries its stream sequence number; ``expected`` is one past the highest sequence read, ``lost``
= expected - received; it includes losses at every queue (peer ring, NIC ring, split queue,
vNIC ring, socket), which are also reported by place.
Left out: IGMP and its timers, IP fragmentation (a datagram must fit one frame), receive-side
priority of softirqs over the app (both run FIFO on the vCPU), a sender on the host.
Units: bytes, packets, packets/s, microseconds, cycles.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import simpy

from models import costs, units
from models.base import UDP, Burst, CycleCost, check
from models.replication import group_dst
from models.workloads.base import Workload

MCAST_FLOW_BASE = 1 << 20  # group g is flow MCAST_FLOW_BASE + g (apart from TCP flow ids)
UDP_IP_HEADER_BYTES = units.IP_HEADER_BYTES + units.UDP_HEADER_BYTES


@dataclass(frozen=True)
class MulticastWorkloadParams:
    """``workload.multicast``: the streams and the receivers' socket accounting and
    per-datagram work."""

    packet_bytes: int = 800          # UDP payload per datagram
    packet_rate_pps: float = 40000.0  # per group (each receiver's rate)
    groups: int = 1
    burst_interval_us: float = 25.0
    # Linux 2.6.32 charges a datagram's skb truesize: a 2KB receive buffer plus the sk_buff.
    skb_truesize_bytes: int = 2304
    # The receiving tool's own work per datagram (sequence check, counters): a prior.
    app: CycleCost = field(default_factory=lambda: CycleCost(0.0, 1000.0, 0.0))
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(1 <= self.packet_bytes <= 8972, "packet_bytes", self.packet_bytes, "in 1..8972")
        check(0 < self.packet_rate_pps <= 1e7, "packet_rate_pps", self.packet_rate_pps,
              "in (0, 1e7]")
        check(1 <= self.groups <= 1024, "groups", self.groups, "in 1..1024")
        check(1 <= self.burst_interval_us <= 1e5, "burst_interval_us", self.burst_interval_us,
              "in 1..100000")
        check(self.skb_truesize_bytes >= 1, "skb_truesize_bytes", self.skb_truesize_bytes,
              ">= 1")


class Stream:
    """One sender's datagrams to one group out of one peer."""

    def __init__(self, index: int, peer, group: int):
        self.index, self.peer, self.group = index, peer, group
        self.flow = MCAST_FLOW_BASE + group
        self.sent = 0  # datagrams the app sent (the next sequence number)


class UdpSocket:
    """A bound UDP socket: a buffer counted in truesize bytes and the app that drains it."""

    def __init__(self, env: simpy.Environment, host, flow: int, rcvbuf_bytes: int,
                 params: MulticastWorkloadParams):
        self.env, self.host, self.flow, self.params = env, host, flow, params
        self.rcvbuf_bytes = rcvbuf_bytes
        self.used_bytes = 0
        self.queue: deque[Burst] = deque()
        self.next_seq = 0  # one past the highest sequence number read
        self.received = self.bytes_read = self.socket_full = 0
        self.stage = None  # StageStats (datagrams, payload bytes), set when the model is wired
        self._reader: simpy.Event | None = None
        host.udp_sockets[flow] = self
        env.process(self._read_loop(host.app_context(flow)))

    def on_data(self, burst: Burst) -> None:
        """Datagrams from the stack: queue what the buffer takes, drop the rest (tail)."""
        truesize = self.params.skb_truesize_bytes
        room = max(0, -(-(self.rcvbuf_bytes - self.used_bytes) // truesize))
        take = min(burst.packets, room)
        self.socket_full += burst.packets - take
        if take < burst.packets:
            kept = burst.head(take) if take else None
            # The stack counted these frames as delivered (StackHost.deliver); they are dropped
            # here instead, so loss ratios must not count them twice (delivered and dropped).
            self.host.frames_delivered -= burst.frames - (kept.frames if kept else 0)
            if self.stage is not None:
                self.stage.drop("socket_full", burst.packets - take,
                                burst.payload_bytes - take * burst.frame_payload_bytes)
            if kept is None:
                return
            burst = kept
        if self.stage is not None:
            self.stage.arrive(take, burst.payload_bytes)
        self.used_bytes += take * truesize
        self.queue.append(burst)
        if self._reader is not None and not self._reader.triggered:
            self._reader.succeed()

    def _read_loop(self, ctx):
        call, app = self.host.stack.recv_call, self.params.app
        while True:
            if not self.queue:
                self._reader = self.env.event()
                yield self._reader
                self._reader = None
            batch = list(self.queue)
            self.queue.clear()
            n = sum(b.packets for b in batch)
            n_bytes = sum(b.payload_bytes for b in batch)
            yield ctx.execute({costs.APP_RECV: call.cycles(0, n_bytes, n),
                               costs.APP: app.cycles(n, n_bytes, 0)},
                              packets=n, n_bytes=n_bytes,  # counts price the NUMA penalty
                              home=self.host.rx_data_home(self.flow))  # where the copy sits
            self.used_bytes -= n * self.params.skb_truesize_bytes
            if self.stage is not None:
                self.stage.depart(n, n_bytes)
            self.received += n
            self.bytes_read += n_bytes
            last = batch[-1]
            self.next_seq = max(self.next_seq, last.seq + last.packets)

    @property
    def lost(self) -> int:
        return self.next_seq - self.received


class Receiver:
    """One receiving VM: its socket, its stream, and its place in the vswitch's group."""

    def __init__(self, index: int, vm, stream: Stream, socket: UdpSocket):
        self.index, self.vm, self.stream, self.socket = index, vm, stream, socket
        self.member = None  # set when the workload joins the group on the VM's vswitch

    def vnic_drops(self) -> int:
        return sum(q.ring.stats.total_dropped_frames() for q in self.vm.vnic.rxq)


class UdpMulticast(Workload):
    """Streams from the peers, a socket and an app on every VM, loss by sequence gaps."""

    def __init__(self, env: simpy.Environment, params, vms: list, peers: list, *,
                 mss_bytes: int, seg_max: dict[str, int], rng: np.random.Generator):
        super().__init__(env, params, vms, peers, mss_bytes=mss_bytes, seg_max=seg_max, rng=rng)
        mc = params.multicast
        self.mc = mc
        self.streams: list[Stream] = []
        by_key: dict[tuple[int, int], Stream] = {}
        self.receivers: list[Receiver] = []
        for v, vm in enumerate(vms):
            g = v % mc.groups
            key = (id(peers[v]), g)
            if key not in by_key:
                by_key[key] = Stream(len(self.streams), peers[v], g)
                self.streams.append(by_key[key])
            stream = by_key[key]
            sock = UdpSocket(env, vm, stream.flow, params.socket_bytes, mc)
            self.receivers.append(Receiver(v, vm, stream, sock))
        for s in self.streams:
            s.peer.app_context(s.flow)  # placed before the run starts
            start_s = units.us_to_s(rng.uniform(0, params.start_jitter_us))
            env.process(self._send_loop(s, start_s))
        self._stopped = False

    def attach_network(self, vswitch_of_vm, stats) -> None:
        """Each receiver joins its group on its VM's vswitch (IGMP join -> vNIC filter); its
        socket buffer's counters join the run's stages (``vmN.udpG.socket``)."""
        for r in self.receivers:
            r.member = vswitch_of_vm(r.index).join(group_dst(r.stream.group), r.index, r.vm.vnic)
            r.socket.stage = stats.stage(f"{r.vm.name}.udp{r.stream.group}.socket")

    def stop_sending(self) -> None:
        """Stop every stream after its current burst (tests drain the pipeline this way)."""
        self._stopped = True

    # -- sender ---------------------------------------------------------------------------
    def _send_loop(self, s: Stream, start_s: float):
        """Every interval, the datagrams due since the start (integer arithmetic of the rate:
        no drift), sent back to back as one burst."""
        env, mc = self.env, self.mc
        interval_s = units.us_to_s(mc.burst_interval_us)
        yield env.timeout(start_s)
        t0, k = env.now, 0
        while not self._stopped:
            k += 1
            yield env.timeout(t0 + k * interval_s - env.now)
            due = math.floor(mc.packet_rate_pps * k * interval_s + 1e-9)
            if due > s.sent and not self._stopped:
                self._emit(s, due - s.sent)

    def _emit(self, s: Stream, n: int) -> None:
        peer, pb = s.peer, self.mc.packet_bytes
        burst = Burst(UDP, s.flow, n * pb, n, n, UDP_IP_HEADER_BYTES, pb, seq=s.sent,
                      sent_s=self.env.now, dst=group_dst(s.group), src=peer.endpoint)
        s.sent += n
        peer.send_down(burst, {costs.APP_SEND: peer.stack.send_call.cycles(0, n * pb, n),
                               costs.STACK_TX: peer.stack.tx_segment.cycles(n, n * pb, n)})

    # -- recorder hooks -------------------------------------------------------------------
    def flows(self) -> list[dict]:
        return [{"flow": r.index, "vm": r.index, "bytes_read": r.socket.bytes_read,
                 "rtt_sum_s": 0.0, "rtt_samples": 0, "retransmits": 0, "timeouts": 0}
                for r in self.receivers]

    def counters(self) -> dict[str, float]:
        c: dict[str, float] = {}
        for s in self.streams:
            c[f"mc.stream{s.index}.sent"] = s.sent
        for r in self.receivers:
            m = r.member
            c[f"mc.{r.index}.expected"] = r.socket.next_seq
            c[f"mc.{r.index}.received"] = r.socket.received
            c[f"mc.{r.index}.socket_full"] = r.socket.socket_full
            c[f"mc.{r.index}.vnic_rx_ring_full"] = r.vnic_drops()
            c[f"mc.{r.index}.split_queue_full"] = m.split_drops if m is not None else 0
            c[f"mc.{r.index}.copies"] = m.copies if m is not None else 0
        return c

    def tables(self, d: dict[str, float], window_s: float) -> dict[str, list[dict]]:
        rows = []
        for r in self.receivers:
            i = r.index
            expected, received = d[f"mc.{i}.expected"], d[f"mc.{i}.received"]
            lost = expected - received
            rows.append({
                "vm": i, "group": r.stream.group, "expected_packets": expected,
                "received_packets": received, "lost_packets": lost,
                "loss_ratio": lost / expected if expected > 0 else 0.0,
                "received_pps": received / window_s,
                "copies_per_s": d[f"mc.{i}.copies"] / window_s,
                "drops_socket_full": d[f"mc.{i}.socket_full"],
                "drops_vnic_rx_ring_full": d[f"mc.{i}.vnic_rx_ring_full"],
                "drops_split_queue_full": d[f"mc.{i}.split_queue_full"]})
        return {"multicast": rows}

    def summary(self, d: dict[str, float], window_s: float) -> dict[str, float]:
        rows = self.tables(d, window_s)["multicast"]
        expected = sum(r["expected_packets"] for r in rows)
        lost = sum(r["lost_packets"] for r in rows)
        return {
            "multicast_sent_pps": sum(d[f"mc.stream{s.index}.sent"]
                                      for s in self.streams) / window_s,
            "multicast_received_pps": sum(r["received_packets"] for r in rows) / window_s,
            "multicast_copies_per_s": sum(r["copies_per_s"] for r in rows),
            "multicast_loss_ratio": lost / expected if expected > 0 else 0.0,
            "multicast_max_receiver_loss_ratio": max(r["loss_ratio"] for r in rows),
            # the sources' threshold: "less than 0.01% packet loss"
            "multicast_lossy_receivers": float(sum(r["loss_ratio"] > 1e-4 for r in rows)),
        }
