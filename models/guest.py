"""Operating-system network stacks and the virtual machines that run them.

Modelled: an OS stack profile prices, in cycles, each thing a TCP/IP stack does: a ``send()`` or
``recv()`` call (fixed + per byte copied), the output of a segment (fixed per segment, per frame,
per byte), the receive of data (per pass, per packet, per byte) and of ACKs, and the generation
of ACK trains. ``StackHost`` owns the TCP endpoints of one machine and demultiplexes what its
device delivers; a ``Vm`` is a StackHost whose device is a virtual NIC and whose processors are
vCPU contexts (connection ``i`` runs on vCPU ``i mod n``; the vNIC interrupts vCPU 0). The peer
(``models.peer``) is a StackHost on a native NIC.
Left out: memory size, guest scheduling inside the VM, receive-side scaling inside the guest.
Units: cycles, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from models.base import ACK, DATA, Burst, CycleCost, check
from models.cpu import Context
from models.tcp import TcpParams, TcpReceiver, TcpSender
from models.vnic import VirtualNic


@dataclass(frozen=True)
class OsStackParams:
    """Cycle prices of one OS's TCP/IP stack (defaults: a 64-bit Linux 2.6 guest)."""

    name: str = "rhel5_64"
    # Priors, not fitted (calibration is its own step): a 2.9 GHz core of 2008 copies ~3 GB/s
    # (1 cycle/byte); a Linux 2.6 TCP segment output ~2.5K cycles; taking in one data packet
    # (skb, IP, TCP, socket queue) ~4K cycles; a pure ACK ~1.5K cycles (Linux 2.6 profiles).
    send_call: CycleCost = field(default_factory=lambda: CycleCost(2000.0, 0.0, 1.0))
    recv_call: CycleCost = field(default_factory=lambda: CycleCost(2000.0, 0.0, 1.0))
    tx_segment: CycleCost = field(default_factory=lambda: CycleCost(2500.0, 200.0, 0.0))
    rx_data: CycleCost = field(default_factory=lambda: CycleCost(0.0, 4000.0, 0.0))
    rx_ack: CycleCost = field(default_factory=lambda: CycleCost(0.0, 1500.0, 0.0))
    tx_ack: CycleCost = field(default_factory=lambda: CycleCost(800.0, 1200.0, 0.0))


class StackHost:
    """A machine's TCP endpoints and its stack's costs; subclasses supply the device path."""

    def __init__(self, env: simpy.Environment, name: str, endpoint: int, stack: OsStackParams,
                 tcp: TcpParams):
        self.env, self.name, self.stack, self.tcp = env, name, stack, tcp
        self.endpoint = endpoint  # the id bursts carry in src/dst: a VM's index, -1 for a peer
        self.senders: dict[int, TcpSender] = {}
        self.receivers: dict[int, TcpReceiver] = {}
        self.frames_delivered = 0  # frames that reached this host's stack (for loss ratios)

    # -- what a subclass provides --------------------------------------------------------
    def app_context(self, flow: int) -> Context:
        raise NotImplementedError

    def send_down(self, burst: Burst, cycles: float) -> None:
        """Run ``cycles`` of stack work for ``burst``, then hand it to the device."""
        raise NotImplementedError

    @property
    def tso(self) -> bool:
        raise NotImplementedError

    # -- endpoints ------------------------------------------------------------------------
    def open_sender(self, flow: int, dst: int, *, mss_bytes: int, seg_max_bytes: int,
                    sndbuf_bytes: int) -> TcpSender:
        s = TcpSender(self.env, flow, self.tcp, mss_bytes=mss_bytes, seg_max_bytes=seg_max_bytes,
                      sndbuf_bytes=sndbuf_bytes, tso=self.tso, src=self.endpoint, dst=dst,
                      emit=self._emit)
        self.senders[flow] = s
        self.app_context(flow)  # placed now: a context must exist before the run starts
        return s

    def open_receiver(self, flow: int, dst: int, *, mss_bytes: int,
                      rcvbuf_bytes: int) -> TcpReceiver:
        r = TcpReceiver(self.env, flow, self.tcp, mss_bytes=mss_bytes, rcvbuf_bytes=rcvbuf_bytes,
                        src=self.endpoint, dst=dst, emit=self._emit)
        self.receivers[flow] = r
        self.app_context(flow)
        return r

    def _emit(self, burst: Burst) -> None:
        if burst.kind == ACK:
            cycles = self.stack.tx_ack.cycles(burst.packets, 0)
        else:
            cycles = self.stack.tx_segment.cycles(burst.frames, burst.payload_bytes)
        self.send_down(burst, cycles)

    # -- receive --------------------------------------------------------------------------
    def rx_cycles(self, batch: list[Burst]) -> float:
        """Stack cycles to take in a batch the device delivered (one pass)."""
        data_pk = sum(b.packets for b in batch if b.kind == DATA)
        data_b = sum(b.payload_bytes for b in batch if b.kind == DATA)
        ack_pk = sum(b.packets for b in batch if b.kind == ACK)
        return (self.stack.rx_data.cycles(data_pk, data_b, 1 if data_pk else 0)
                + self.stack.rx_ack.cycles(ack_pk, 0, 0))

    def deliver(self, batch: list[Burst]) -> None:
        for burst in batch:
            self.frames_delivered += burst.frames
            if burst.kind == ACK:
                sender = self.senders.get(burst.flow)
                if sender is not None:
                    sender.on_ack(burst)
            elif burst.kind == DATA:
                receiver = self.receivers.get(burst.flow)
                if receiver is not None:
                    receiver.on_data(burst)


@dataclass(frozen=True)
class GuestParams:
    """A VM's size and the OS stack it runs."""

    vcpus: int = 1
    stack: OsStackParams = field(default_factory=OsStackParams)

    def __post_init__(self):
        check(1 <= self.vcpus <= 64, "vcpus", self.vcpus, "in 1..64")


class Vm(StackHost):
    """A virtual machine: vCPU contexts, an OS stack, one vNIC."""

    def __init__(self, env: simpy.Environment, index: int, params: GuestParams, tcp: TcpParams,
                 vcpus: list[Context]):
        super().__init__(env, f"vm{index}", index, params.stack, tcp)
        self.index, self.params, self.vcpus = index, params, vcpus
        self.vnic: VirtualNic | None = None

    def attach(self, vnic: VirtualNic) -> None:
        self.vnic = vnic
        vnic.guest_rx_cost = self.rx_cycles
        vnic.guest_rx_deliver = self.deliver

    @property
    def tso(self) -> bool:
        return self.vnic.tso

    def app_context(self, flow: int) -> Context:
        return self.vcpus[flow % len(self.vcpus)]

    def send_down(self, burst: Burst, cycles: float) -> None:
        cycles += self.vnic.tx_guest_cycles(burst)
        self.app_context(burst.flow).then(cycles, lambda: self.vnic.guest_send(burst))
