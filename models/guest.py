"""Operating-system network stacks and the virtual machines that run them.

Modelled: an OS stack profile prices, in cycles, each thing a TCP/IP stack does: a ``send()`` or
``recv()`` call (fixed + per byte copied), the output of a segment (fixed per segment, per frame,
per byte), the receive of data (per pass, per packet, per byte) and of ACKs, and the generation
of ACK trains. ``StackHost`` owns the TCP endpoints of one machine and demultiplexes what its
device delivers; a ``Vm`` is a StackHost whose device is a virtual NIC and whose processors are
vCPU contexts (connection ``i`` runs on vCPU ``i mod n``; vNIC receive queue ``q`` interrupts
vCPU ``q mod n``). The peer (``models.peer``) is a StackHost on a native NIC.
ICMP: an echo request is answered by the kernel in its receive path (``icmp_rx`` in, the reply
out with ``icmp_tx`` as a task of its own: on a VM on the vCPU of the echo's flow,
``app_context(flow)``, on the peer on its softirq); a reply goes
to the pinger of its identifier (``models.workloads.ping``).
Latency sensitivity (``GuestParams.latency_sensitivity``, vSphere 5.5): the builder and the
placement apply it (an exclusive core per vCPU, no virtual interrupt coalescing nor LRO into
the vNIC, no halt).
Receive-window behaviour is part of the OS profile: a stack without RFC 1323 window scaling
(``window_scaling: false``, Windows Server 2003 as configured here) cannot advertise more than
65535 bytes whatever its socket size, and a connection uses scaling only when both ends do.
A VM is virtualized in hardware (``hw``: Intel VT, VM exits) or by binary translation (``bt``:
32-bit guests on the sources' hosts); the hypervisor prices a register access for that mode.
Left out: memory size, guest scheduling inside the VM, binary translation's slow-down of guest
kernel code other than device accesses.
Units: cycles, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import simpy

from models import costs, units
from models.base import ACK, DATA, ECHO, ECHO_REPLY, UDP, Burst, CycleCost, check
from models.cpu import Context
from models.hypervisor import VIRTUALIZATION_MODES
from models.tcp import ACK_RULES, CONGESTION, TcpParams, TcpReceiver, TcpSender
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
    # One UDP datagram in (IP, UDP, socket lookup and enqueue): ~2.5K cycles, less than a TCP
    # data packet (no ACK clock, no reassembly queue). Prior, not fitted.
    rx_udp: CycleCost = field(default_factory=lambda: CycleCost(0.0, 2500.0, 0.0))
    # An ICMP message in (IP input, icmp_rcv and, for a reply, the raw socket's queue) and out
    # (building an echo or echo reply and its IP output): ~1.5K cycles each, less than a TCP
    # data packet (no connection state). Priors, not fitted.
    icmp_rx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 1500.0, 0.0))
    icmp_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 1500.0, 0.0))
    window_scaling: bool = True  # RFC 1323 window scale option (False: window <= 65535 bytes)
    # Payload a send buffer holds per byte of SO_SNDBUF. Linux doubles the value an application
    # sets (sk_sndbuf = 2 x SO_SNDBUF, socket(7)), so with an 8KB socket the writer keeps data
    # queued beyond the 8KB window and the window stays full; Windows holds what it was given.
    sndbuf_scale: float = 2.0
    # TSO deferral (Linux tcp_tso_should_defer, sysctl tcp_tso_win_divisor): a window-cut TSO
    # segment waits until 1/divisor of the window is open. 0: none (RHEL5's 2.6.18 code never
    # starts one; configs/guest/stack/*.yaml).
    tso_win_divisor: int = 0
    # The kernel's timer frequency (CONFIG_HZ): a TSO deferral ends after more than one tick
    # since the last decision to defer (``models.tcp``). 0: no tick limit.
    timer_hz: float = 1000.0
    # When a receiver ACKs (``models.tcp.ACK_RULES``): ``frames``, one ACK per two frames and
    # at most one per segment (an LRO aggregate), at once for PSH; ``rcv_mss``, Linux's
    # delayed-ACK rule (tcp_measure_rcv_mss, __tcp_ack_snd_check, tcp_cleanup_rbuf), under
    # which an LRO aggregate handed up without gso_size counts as one long segment.
    ack_rule: str = "frames"
    # An ACK train (a Burst of n ACKs) taken one ACK at a time, the stack trying to send after
    # each (Linux: tcp_ack then tcp_data_snd_check per packet); False: as one cumulative ACK.
    ack_by_ack: bool = False
    # CUBIC's HyStart (Linux 2.6.29-2.6.38 tcp_cubic.c, module parameter hystart_low_window):
    # slow start may end by ACK-train or delay detection once cwnd holds this many segments.
    # 0: off (plain slow start to the first loss).
    hystart_low_window: int = 0
    # Congestion control (``models.tcp.CONGESTION``): ``reno``, or ``cubic`` (Linux 2.6.32
    # tcp_cubic.c: beta 717/1024, fast convergence, the cubic curve and its TCP-friendly floor,
    # and tcp_is_cwnd_limited: no growth unless the window is used).
    congestion: str = "reno"
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(1.0 <= self.sndbuf_scale <= 4.0, "sndbuf_scale", self.sndbuf_scale, "in 1..4")
        check(0 <= self.tso_win_divisor <= 64, "tso_win_divisor", self.tso_win_divisor,
              "an integer in 0..64 (0: no TSO deferral)")
        check(0 <= self.hystart_low_window <= 1000, "hystart_low_window", self.hystart_low_window,
              "in 0..1000 segments (0: no HyStart)")
        check(not self.hystart_low_window or self.timer_hz > 0, "timer_hz", self.timer_hz,
              "> 0 with hystart_low_window (HyStart counts jiffies)")
        check(0 <= self.timer_hz <= 10000, "timer_hz", self.timer_hz,
              "in 0..10000 Hz (0: no tick limit on TSO deferral)")
        check(self.ack_rule in ACK_RULES, "ack_rule", self.ack_rule, f"one of {ACK_RULES}")
        check(self.congestion in CONGESTION, "congestion", self.congestion,
              f"one of {CONGESTION}")
        check(self.congestion != "cubic" or self.timer_hz > 0, "timer_hz", self.timer_hz,
              "> 0 with congestion cubic (CUBIC counts jiffies)")

    def max_window_bytes(self, peer_scales: bool = True) -> int | None:
        """The largest window a receiver may advertise (None: its socket size)."""
        return None if self.window_scaling and peer_scales else units.TCP_MAX_UNSCALED_WINDOW_BYTES


class StackHost:
    """A machine's TCP endpoints and its stack's costs; subclasses supply the device path."""

    def __init__(self, env: simpy.Environment, name: str, endpoint: int, stack: OsStackParams,
                 tcp: TcpParams):
        self.env, self.name, self.stack, self.tcp = env, name, stack, tcp
        self.endpoint = endpoint  # the id bursts carry in src/dst: a VM's index, -1 for a peer
        self.senders: dict[int, TcpSender] = {}
        self.receivers: dict[int, TcpReceiver] = {}
        self.udp_sockets: dict = {}  # flow -> a bound UDP socket (``on_data(burst)``)
        self.icmp_sockets: dict = {}  # flow (echo identifier) -> a pinger (``on_reply(burst)``)
        self.frames_delivered = 0  # frames that reached this host's stack (for loss ratios)
        # While the stack takes in a delivered batch (``deliver``; a depth), the application
        # wake-ups it causes are held (``notify``) and handed back to the device's poller.
        self._delivering = 0
        self._held_wakeups: list[Callable[[], None]] = []

    def counters(self) -> dict[str, float]:
        """Cumulative: frames that reached this host's stack (loss ratios divide by them)."""
        return {"frames_delivered": self.frames_delivered}

    # -- what a subclass provides --------------------------------------------------------
    def app_context(self, flow: int) -> Context:
        raise NotImplementedError

    def rx_data_home(self, flow: int):
        """The NUMA node (or None: the reading context's own home) where the data received
        on ``flow`` sit when its application copies them (``Reader``)."""
        return None

    def app_woken(self, ctx: Context) -> None:
        """An application on ``ctx`` is woken (``Reader``/``Writer``), before its calls are
        queued: a host with a price for waking another CPU charges it here (``Vm``)."""

    def send_down(self, burst: Burst, terms: dict) -> None:
        """Run the stack work ``terms`` (cycles by term) for ``burst``, then hand it to the
        device."""
        raise NotImplementedError

    @property
    def tso(self) -> bool:
        raise NotImplementedError

    @property
    def rx_gso_size(self) -> bool:
        """Whether the device hands an LRO aggregate to the stack with its segment size
        (``models.vnic.base.GuestDevice.rx_gso_size``); a peer's native driver: not modelled
        (False)."""
        return False

    # -- application wake-ups ----------------------------------------------------------------
    def notify(self, wake: Callable[[], None]) -> None:
        """Run an application wake-up (a blocked writer's or reader's callback, handed over by
        its socket): at once, except while the stack takes in a delivered batch (``deliver``),
        which holds it and returns it to its caller."""
        if self._delivering:
            self._held_wakeups.append(wake)
        else:
            wake()

    def _wake_held(self) -> None:
        held, self._held_wakeups = self._held_wakeups, []
        for wake in held:
            wake()

    # -- endpoints ------------------------------------------------------------------------
    def open_sender(self, flow: int, dst: int, *, mss_bytes: int, seg_max_bytes: int,
                    sndbuf_bytes: int, peer_window_bytes: int) -> TcpSender:
        """``sndbuf_bytes`` is the socket size the application asked for (SO_SNDBUF);
        ``peer_window_bytes`` the window the receiver advertised in its SYN-ACK (use
        ``models.workloads.base.open_connection``, which opens both halves)."""
        s = TcpSender(self.env, flow, self.tcp, mss_bytes=mss_bytes, seg_max_bytes=seg_max_bytes,
                      sndbuf_bytes=int(sndbuf_bytes * self.stack.sndbuf_scale), tso=self.tso,
                      src=self.endpoint, dst=dst, emit=self._emit,
                      peer_window_bytes=peer_window_bytes, notify=self.notify,
                      tso_win_divisor=self.stack.tso_win_divisor,
                      timer_hz=self.stack.timer_hz, ack_by_ack=self.stack.ack_by_ack,
                      hystart_low_window=self.stack.hystart_low_window,
                      congestion=self.stack.congestion)
        self.senders[flow] = s
        self.app_context(flow)  # placed now: a context must exist before the run starts
        return s

    def open_receiver(self, flow: int, dst: int, *, mss_bytes: int, rcvbuf_bytes: int,
                      peer_scales: bool = True) -> TcpReceiver:
        """``peer_scales``: whether the other end does window scaling (both must)."""
        r = TcpReceiver(self.env, flow, self.tcp, mss_bytes=mss_bytes, rcvbuf_bytes=rcvbuf_bytes,
                        src=self.endpoint, dst=dst, emit=self._emit,
                        max_window_bytes=self.stack.max_window_bytes(peer_scales),
                        notify=self.notify, ack_rule=self.stack.ack_rule,
                        rx_gso_size=self.rx_gso_size)
        self.receivers[flow] = r
        self.app_context(flow)
        return r

    def _emit(self, burst: Burst) -> None:
        if burst.kind == ACK:
            terms = {costs.STACK_ACK_TX: self.stack.tx_ack.cycles(burst.packets, 0)}
        else:
            terms = {costs.STACK_TX: self.stack.tx_segment.cycles(burst.frames,
                                                                  burst.payload_bytes)}
            receiver = self.receivers.get(burst.flow)  # the connection's other half
            if receiver is not None:
                receiver.data_sent()
        self.send_down(burst, terms)

    def charges(self, role: str) -> list[costs.Charge]:
        """The stack's declared charges (``sim.path``) as the data ``sender`` or ``receiver``
        of a TCP connection, or a ``udp_receiver``; the same parameters ``_emit`` and
        ``rx_terms`` price."""
        st = self.stack
        if role == "sender":
            return [costs.Charge.of(costs.APP_SEND, st.send_call, per="send() call"),
                    costs.Charge.of(costs.STACK_TX, st.tx_segment, unit="frame", per="segment"),
                    costs.Charge.of(costs.STACK_ACK_RX, st.rx_ack, unit="ACK")]
        if role == "icmp":  # an echo in and the kernel's reply out, or a ping's send and reply
            return [costs.Charge.of(costs.STACK_ICMP_RX, st.icmp_rx, unit="ICMP message"),
                    costs.Charge.of(costs.STACK_ICMP_TX, st.icmp_tx, unit="ICMP message"),
                    costs.Charge.of(costs.APP_SEND, st.send_call, per="sendto() call"),
                    costs.Charge.of(costs.APP_RECV, st.recv_call, per="recvmsg() call")]
        if role == "udp_receiver":
            return [costs.Charge.of(costs.STACK_UDP_RX, st.rx_udp, unit="datagram"),
                    costs.Charge.of(costs.APP_RECV, st.recv_call, per="recv() call")]
        return [costs.Charge.of(costs.STACK_RX, st.rx_data, unit="packet (aggregate)"),
                costs.Charge.of(costs.STACK_ACK_TX, st.tx_ack, unit="ACK", per="ACK train"),
                costs.Charge.of(costs.APP_RECV, st.recv_call, per="recv() call")]

    # -- receive --------------------------------------------------------------------------
    def rx_terms(self, batch: list[Burst]) -> dict:
        """Stack cycles by term to take in a batch the device delivered (one pass)."""
        data_pk = data_b = ack_pk = udp_pk = udp_b = icmp_pk = icmp_b = 0
        for b in batch:
            if b.kind == DATA:
                data_pk += b.packets
                data_b += b.payload_bytes
            elif b.kind == ACK:
                ack_pk += b.packets
            elif b.kind == UDP:
                udp_pk += b.packets
                udp_b += b.payload_bytes
            elif b.kind in (ECHO, ECHO_REPLY):
                icmp_pk += b.packets
                icmp_b += b.payload_bytes
        terms: dict = {}
        if data_pk:
            terms[costs.STACK_RX] = self.stack.rx_data.cycles(data_pk, data_b, 1)
        if ack_pk:
            costs.add(terms, costs.STACK_ACK_RX, self.stack.rx_ack.cycles(ack_pk, 0, 0))
        if udp_pk:
            costs.add(terms, costs.STACK_UDP_RX, self.stack.rx_udp.cycles(udp_pk, udp_b, 1))
        if icmp_pk:
            costs.add(terms, costs.STACK_ICMP_RX, self.stack.icmp_rx.cycles(icmp_pk, icmp_b, 1))
        return terms

    def deliver(self, batch: list[Burst]) -> Callable[[], None] | None:
        """Take in a batch the device delivered (its cycles already ran, ``rx_terms``): ACKs to
        the senders, data to the receivers and UDP sockets, each emitting what it emits (ACK
        trains, segments: a task each, ``send_down``). Returns the application wake-ups this
        caused (a callable; None if none) instead of running them: the device's poller
        (``models.base.RingPoller``) runs them once its next pass is queued, so a woken
        send()/recv() queues behind the stack's output and the handler's next poll, as a
        process woken by a softirq runs after it."""
        self._delivering += 1
        for burst in batch:
            self.frames_delivered += burst.frames
            if burst.piggyback is not None:  # an ACK riding on data (TCP_RR): ACK first
                sender = self.senders.get(burst.flow)
                if sender is not None:
                    sender.on_ack(burst.piggyback)
            if burst.kind == ACK:
                sender = self.senders.get(burst.flow)
                if sender is not None:
                    sender.on_ack(burst)
            elif burst.kind == DATA:
                receiver = self.receivers.get(burst.flow)
                if receiver is not None:
                    receiver.on_data(burst)
            elif burst.kind == UDP:
                sock = self.udp_sockets.get(burst.flow)
                if sock is not None:
                    sock.on_data(burst)
            elif burst.kind in (ECHO, ECHO_REPLY):
                self._icmp_in(burst)
        self._delivering -= 1
        if self._delivering or not self._held_wakeups:
            return None
        return self._wake_held

    def _icmp_in(self, burst: Burst) -> None:
        """An echo request is answered by the kernel in its receive path (icmp_echo: no
        application), the reply a task of its own (``send_down``), carrying the request's
        payload and so its sender's timestamp (``sent_s``); a reply goes to the pinger whose
        identifier (flow) it carries."""
        if burst.kind == ECHO:
            reply = burst._copy(kind=ECHO_REPLY, dst=burst.src, src=self.endpoint)
            self.send_down(reply, {costs.STACK_ICMP_TX: self.stack.icmp_tx.cycles(
                reply.packets, reply.payload_bytes, 0)})
            return
        pinger = self.icmp_sockets.get(burst.flow)
        if pinger is not None:
            pinger.on_reply(burst)


LATENCY_SENSITIVITY = ("normal", "high")


@dataclass(frozen=True)
class GuestParams:
    """A VM's size, how it is virtualized, its driver's LRO support and the OS stack it runs."""

    vcpus: int = 1
    virtualization: str = "hw"  # hw: hardware-assisted (VM exits); bt: binary translation
    lro: bool = True            # the guest's vNIC driver takes LRO aggregates (Linux vmxnet3)
    # vSphere 5.5's sched.cpu.latencySensitivity: high gives each vCPU a core of its own, turns
    # the vNIC's virtual interrupt coalescing and LRO off, and the vCPU never halts (no wake-up)
    latency_sensitivity: str = "normal"
    stack: OsStackParams = field(default_factory=OsStackParams)

    def __post_init__(self):
        check(1 <= self.vcpus <= 64, "vcpus", self.vcpus, "in 1..64")
        check(self.virtualization in VIRTUALIZATION_MODES, "virtualization",
              self.virtualization, f"one of {VIRTUALIZATION_MODES}")
        check(self.latency_sensitivity in LATENCY_SENSITIVITY, "latency_sensitivity",
              self.latency_sensitivity, f"one of {LATENCY_SENSITIVITY}")

    @property
    def latency_sensitive(self) -> bool:
        """``latency_sensitivity: high`` (``docs/latency.md``)."""
        return self.latency_sensitivity == "high"


class Vm(StackHost):
    """A virtual machine: vCPU contexts, an OS stack, one vNIC."""

    def __init__(self, env: simpy.Environment, index: int, params: GuestParams, tcp: TcpParams,
                 vcpus: list[Context]):
        super().__init__(env, f"vm{index}", index, params.stack, tcp)
        self.index, self.params, self.vcpus = index, params, vcpus
        self.vnic: VirtualNic | None = None

    def attach(self, vnic: VirtualNic) -> None:
        self.vnic = vnic
        vnic.attach_guest(self.rx_terms, self.deliver, lro=self.params.lro)

    @property
    def tso(self) -> bool:
        return self.vnic.tso

    @property
    def rx_gso_size(self) -> bool:
        return self.vnic.rx_gso_size

    def app_context(self, flow: int) -> Context:
        return self.vcpus[flow % len(self.vcpus)]

    def rx_data_home(self, flow: int):
        """Where the vNIC's writer left the received data (its core's node; None before any,
        or for a device the NIC writes into directly: the VM's memory home)."""
        return self.vnic.rx_data_nodes.get(flow) if self.vnic is not None else None

    # -- cross-vCPU wake-ups (reschedule IPIs) ----------------------------------------------
    def deliver(self, batch: list[Burst]):
        """As ``StackHost.deliver``; the wake-ups it returns run knowing which vCPU took the
        batch in (the one its RX queue interrupts), for ``app_woken``. One vCPU takes
        everything in and wakes nobody else: nothing to track (the common, hot case)."""
        if len(self.vcpus) == 1 or not batch or not hasattr(self.vnic, "rx_queue_of"):
            return super().deliver(batch)
        waker = self.vnic.rx_queue_of(batch[0]).vcpu
        outer, self._stack_vcpu = self._stack_vcpu, waker
        try:
            after = super().deliver(batch)
        finally:
            self._stack_vcpu = outer  # a nested delivery leaves the outer one's vCPU
        if after is None:
            return None

        def run() -> None:
            self._waker = waker
            after()
            self._waker = None
        return run

    _waker: Context | None = None       # the vCPU whose stack pass woke the applications
    _stack_vcpu: Context | None = None  # the vCPU taking a delivered batch in, meanwhile
    ipi_wakeups = 0  # woken applications whose halted vCPU another vCPU had to wake

    def app_woken(self, ctx: Context) -> None:
        """The guest's stack on one vCPU woke an application whose vCPU is halted: the
        scheduler sends it a reschedule IPI. Under hardware virtualization without APIC
        virtualization (every hypervisor profile here: none models APICv) the IPI is a
        write to the APIC's ICR, an exit on the sending vCPU
        (``exit_cycles``, term ``exits``), and the target vCPU is woken from its halt as by a
        virtual interrupt (``wakeup_cycles``, term ``halt_wakeup``). A vCPU that is running
        needs neither; nor does a wake-up on the vCPU that took the data in."""
        waker = self._waker
        if waker is None or waker is ctx or not ctx.idle:
            return
        vnic = self.vnic
        self.ipi_wakeups += 1
        vnic.exits += 1
        waker.charge({costs.EXITS: vnic.exit_cycles})
        if vnic.wakeup_cycles:
            vnic.halt_wakeups += 1
            ctx.charge({costs.HALT_WAKEUP: vnic.wakeup_cycles})

    def send_down(self, burst: Burst, terms: dict) -> None:
        costs.merge(terms, self.vnic.tx_guest_terms(burst))  # the doorbell: at the post
        # What the stack emits while taking in a batch (its ACKs, and data segments the ACKs
        # it took in let out) leaves from the vCPU that took it in (the softirq's CPU); the
        # rest from the flow's application vCPU. ``sim.path`` still declares it all on the
        # application vCPU, and the fluid engine prices no reschedule IPIs (docs/status.md).
        vcpu = self._stack_vcpu or self.app_context(burst.flow)
        vcpu.then(terms, lambda: self.vnic.guest_send(burst, vcpu),
                  packets=burst.packets, n_bytes=burst.payload_bytes)
