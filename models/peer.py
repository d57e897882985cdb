"""The native client on the other end of the wire (netperf/netserver host, traffic generator).

Modelled: a native host with its own cores and OS stack profile. Its NIC's receive interrupt runs
the driver and the TCP/IP receive path (and the ACKs it generates) in a softirq context; with
``rx_queues`` > 1 the NIC spreads flows over that many queues by an RSS hash, each with its own
softirq context on cores 0..rx_queues-1 (a flow's ACKs leave from its queue's context). The
receive interrupt is the port's own coalescing (``rx_coalescing: nic``) or the client driver's
interval throttle (``throttle``, ``rx_throttle_us``: at most one interrupt per interval, which
takes everything the ring holds; 000's RHEL5 client's ixgbe 1.1.18 runs one queue at 8K/s:
``peer.rx_queues=1 peer.rx_coalescing=throttle``, neither the default yet,
configs/peer/dl380_g5_rhel5 says why). Each
connection's application (netperf or netserver process, with its send()/recv() copies and
segment output) runs on its own core, round-robin over the cores the softirqs leave free. It
can be the bottleneck, as in the sources (claim E35-client-limit).
LRO (``lro_max_bytes``) merges received data frames before the stack, so the stack pays per
aggregate while the driver pays per frame; tunnelled frames too (``lro_tunnelled``).
VXLAN: with a ``vtep`` (set by the builder when the vswitch tunnels) the peer is the other tunnel
endpoint: it encapsulates what it sends and pays the same encapsulation and decapsulation cycles
as the host (``models.vxlan``).
Left out: the client's own PCIe and NUMA, its qdisc (a full TX ring drops, reason
``tx_ring_full``; the default ring is large enough that TCP never fills it), its driver's
descriptor use (its TX ring counts packets whatever the host NIC's ``tx_desc_per_packet``).
Units: cycles, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import simpy

from models import costs
from models import units, vxlan
from models.base import ACK, DATA, ECHO_REPLY, Burst, CycleCost, Stats, check
from models.cpu import Context, Cpu, CpuParams
from models.guest import OsStackParams, StackHost
from models.nic import NicParams, NicPort
from models.tcp import TcpParams

PEER_DST = -1  # the endpoint id of a peer in Burst.src / Burst.dst


@dataclass(frozen=True)
class PeerParams:
    cpu: CpuParams = field(default_factory=lambda: CpuParams(2, 4, 2.66e9, 0.0, 0.05, 0.0))
    stack: OsStackParams = field(default_factory=lambda: OsStackParams("rhel5_64_native"))
    driver_rx: CycleCost = field(default_factory=lambda: CycleCost(2000.0, 400.0, 0.0))
    driver_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 400.0, 0.0))
    tx_ring_slots: int = 4096
    rx_ring_slots: int = 1024  # the client driver's receive ring; 0: the port's own (nic.*)
    rx_queues: int = 8  # receive queues (RSS over > 1), each with a softirq context on its core
    # The client NIC's receive interrupt moderation: "nic" = the port's own (``nic.coalescing``);
    # "throttle" = an interval throttle (the 82598's EITR) of ``rx_throttle_us``: a batch per
    # interval, bounded by the ring only (no frame-count threshold)
    rx_coalescing: str = "nic"
    rx_throttle_us: float = 125.0
    lro_max_bytes: int = 0  # LRO on the client's NIC driver; 0 = off (RHEL5's 2.6.18 has none)
    # With VXLAN the peer is the far tunnel endpoint (in 003 another ESX host), whose software
    # LRO merges the frames after decapsulation.
    lro_tunnelled: bool = True
    # Transmit interleaving: the client's NIC sends frame by frame, round-robin, from up to
    # this many TX queues (one per core, each holding another connection's segment), so a
    # segment's frames spread over the wire among the others'; 1: segments back to back.
    tx_interleave_queues: int = 1
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(self.tx_ring_slots >= 1, "tx_ring_slots", self.tx_ring_slots, ">= 1")
        check(self.rx_ring_slots >= 0, "rx_ring_slots", self.rx_ring_slots, ">= 0 (0: the port's)")
        check(1 <= self.rx_queues <= self.cpu.sockets * self.cpu.cores_per_socket,
              "rx_queues", self.rx_queues, "in 1..the client's cores")
        check(self.rx_coalescing in ("nic", "throttle"), "rx_coalescing", self.rx_coalescing,
              "nic or throttle")
        check(self.rx_throttle_us >= 0, "rx_throttle_us", self.rx_throttle_us, ">= 0")
        check(self.lro_max_bytes == 0 or 1500 <= self.lro_max_bytes <= 262144, "lro_max_bytes",
              self.lro_max_bytes, "0 (off) or in 1500..262144")
        check(1 <= self.tx_interleave_queues <= self.cpu.sockets * self.cpu.cores_per_socket,
              "tx_interleave_queues", self.tx_interleave_queues, "in 1..the client's cores")


class PeerHost(StackHost):
    """The client machine: cores, a NIC port, an OS stack."""

    def __init__(self, env: simpy.Environment, name: str, params: PeerParams, nic: NicParams,
                 tcp: TcpParams, stats: Stats, rng: Callable[[str], np.random.Generator]):
        super().__init__(env, name, PEER_DST, params.stack, tcp)
        self.params = params
        self.cpu = Cpu(env, params.cpu)
        lro = params.lro_max_bytes > 0
        nq = params.rx_queues
        coalescing, rx_slots = nic.coalescing, params.rx_ring_slots or nic.rx_ring_slots
        if params.rx_coalescing == "throttle":  # one batch per interval, as many as the ring holds
            coalescing = replace(coalescing, mode="throttle", timer_us=params.rx_throttle_us,
                                 max_frames=rx_slots)
        self.nic = NicPort(env, f"{name}.nic", replace(
            nic, tx_queues=1, rx_queues=nq, rx_sort="rss" if nq > 1 else "single",
            tx_ring_slots=params.tx_ring_slots, tx_desc_per_packet=0,  # packets (left out)
            rx_ring_slots=rx_slots, coalescing=coalescing,
            lro=lro, lro_max_bytes=params.lro_max_bytes if lro else nic.lro_max_bytes,
            lro_tunnelled=params.lro_tunnelled), stats)
        # Every context has its own named stream: a new connection shifts nobody's jitter.
        self.irqs = [Context(env, f"{name}.softirq" + (f"{k}" if k else ""), self.cpu.core(k),
                             rng=rng(f"{name}.softirq" + (f"{k}" if k else "")))
                     for k in range(nq)]
        self.irq = self.irqs[0]
        self._apps: dict[int, Context] = {}
        self._rng = rng  # name -> numpy Generator
        self.vtep = None  # a models.vxlan.Vtep when the peer is the other VXLAN tunnel endpoint
        self.nic.wire_rx(self.irqs if nq > 1 else self.irq, self._rx_cost, self.deliver)

    @property
    def tso(self) -> bool:
        return self.nic.params.tso

    def irq_of(self, flow: int) -> Context:
        """The softirq context of the queue ``flow`` hashes to (its ACKs leave from there)."""
        if len(self.irqs) == 1:
            return self.irq
        return self.nic.rx_queues[self.nic.rss_queue(flow)].context

    def app_context(self, flow: int) -> Context:
        if flow not in self._apps:
            n, first = len(self.cpu.cores), len(self.irqs)
            core = (self.cpu.core(first + len(self._apps) % (n - first)) if n > first
                    else self.cpu.core(len(self._apps) % n))
            name = f"{self.name}.app{flow}"   # its stream made at its first draw
            self._apps[flow] = Context(self.env, name, core, rng=lambda: self._rng(name))
        return self._apps[flow]

    def contexts(self) -> list[Context]:
        return [*self.irqs, *self._apps.values()]

    def driver_charges(self, direction: str) -> list[costs.Charge]:
        """The client's NIC driver on ``direction`` (``sim.path``), and as the far tunnel
        endpoint (``vtep``) its VXLAN work."""
        tunnel = vxlan.charges(self.vtep.params, direction) if self.vtep is not None else []
        if direction == "rx":
            return [costs.Charge.of(costs.DRIVER_RX, self.params.driver_rx, unit="frame",
                                    per="interrupt"), *tunnel]
        return [*tunnel, costs.Charge.of(costs.DRIVER_TX, self.params.driver_tx)]

    def _rx_cost(self, batch: list[Burst], is_interrupt: bool) -> dict:
        """Driver per frame; the stack per packet (an LRO aggregate when LRO is on)."""
        frames = n_bytes = 0
        for b in batch:
            frames += b.frames
            n_bytes += b.payload_bytes
        terms = {costs.DRIVER_RX: self.params.driver_rx.cycles(frames, n_bytes,
                                                              int(is_interrupt))}
        costs.merge(terms, self.rx_terms(batch))
        if self.vtep is not None:
            costs.add(terms, costs.VXLAN, self.vtep.rx_batch_cycles(batch))
        return terms

    def send_down(self, burst: Burst, terms: dict) -> None:
        if self.vtep is not None:  # the other tunnel endpoint: same work as the host's
            costs.add(terms, costs.VXLAN, self.vtep.tx_cycles(burst.packets, burst.payload_bytes))
            burst = self.vtep.encap(burst)
        costs.add(terms, costs.DRIVER_TX,
                  self.params.driver_tx.cycles(burst.packets, burst.payload_bytes, 0))
        # ACKs and echo replies leave from the softirq that made them; the rest from the app
        ctx = self.irq_of(burst.flow) if burst.kind in (ACK, ECHO_REPLY) \
            else self.app_context(burst.flow)
        ctx.then(terms, lambda: self._post(burst), packets=burst.packets,
                 n_bytes=burst.payload_bytes)

    def _post(self, burst: Burst) -> None:
        """Post ``burst`` to the NIC. With ``tx_interleave_queues`` = Q > 1 a data segment
        goes out frame by frame beside the segments of up to Q - 1 other connections still on
        the wire ahead of it (``NicPort.backlog_flows``): its frames spread over that many
        times its own wire time (``Burst.spread_s``; the receiver's LRO sees it in pieces)."""
        q = self.params.tx_interleave_queues
        if q > 1 and burst.kind == DATA and burst.frames > 1:
            others = self.nic.backlog_flows(q - 1, burst.flow)
            if others:
                wire_s = units.transmit_time_s(burst.wire_bytes,
                                               self.nic.params.link.line_rate_gbps)
                burst = burst._copy(spread_s=(1 + others) * wire_s)
        self.nic.send(burst)
