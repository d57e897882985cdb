"""Virtual NICs: a ``VirtualNic`` base that owns queues, rings, batching and counters.

Modelled: a device has ``tx_queues`` transmit and ``rx_queues`` receive queues (one each for
e1000 and vmxnet2; several for vmxnet3). A burst goes to the queue of its flow (``flow mod n``,
the device's RSS hash). Transmit: the guest driver posts bursts into its queue's TX ring (full:
dropped, reason ``vnic_tx_ring_full``); the hypervisor backend serving that queue (a networking
context) takes everything posted per pass, pays the device's backend cost plus the vswitch's and
the uplink driver's, and hands the bursts to the vswitch. Receive: the backend (running in the
NIC vector's context, which pays ``rx_backend_cycles``) fills the queue's RX ring (full:
``vnic_rx_ring_full``) and raises a virtual interrupt on the queue's vCPU (queue ``q`` ->
vCPU ``q mod vcpus``); the guest driver drains the ring there, paying ``guest_rx`` plus the OS
stack's receive cost, and polls again before re-enabling the interrupt.

Register accesses that leave the guest (each a VM exit under hardware virtualization or a
binary-translation trap; the hypervisor prices one, ``exit_cycles``, for the guest's mode) are
counted by one formula for every device from its configured counts:
``tx = per_packet x packets + per_doorbell x doorbells`` and
``rx = per_packet x packets + per_interrupt x interrupts``. What differs between devices is
structure, answered by the class: whether the driver skips the doorbell while the backend is
still polling the ring (paravirtual devices do, an emulated e1000 cannot know), how many queues,
whether it can do TSO, jumbo frames, and take LRO aggregates. A device module (``devices.py``)
registers each class in ``DEVICES``.
Left out: transmit-completion interrupts (their cost is folded into the per-packet transmit
counts), guest-side interrupt moderation, the vNIC's own MAC filtering.
Units: cycles, packets, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import simpy

from models import costs
from models.base import Burst, CycleCost, Ring, RingPoller, Stats, check
from models.coalescing import Coalescer, CoalescingParams
from models.cpu import Context

DEVICES: dict[str, type["VirtualNic"]] = {}  # filled by models.vnic.devices


@dataclass(frozen=True)
class VnicParams:
    """Device costs and counts. ``guest_*`` run on a vCPU, ``backend_*`` on a hypervisor context.

    ``*_register_accesses_*`` are counts of accesses that leave the guest (exits or traps); the
    hypervisor profile prices one (``vm_exit_cycles`` / ``bt_trap_cycles``).
    """

    model: str = "vmxnet2"
    tx_queues: int = 1
    rx_queues: int = 1
    tx_ring_slots: int = 512
    rx_ring_slots: int = 512
    tso: bool = True
    lro: bool = False  # the device takes LRO aggregates from the hypervisor into the guest
    max_mtu_bytes: int = 9000
    # Priors: a virtual interrupt costs the guest its ISR plus the VMM's injection and EOI
    # (~3K cycles); each receive descriptor (buffer refill, skb set-up) ~1.2K cycles.
    guest_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 300.0, 0.0))
    guest_rx: CycleCost = field(default_factory=lambda: CycleCost(3000.0, 1200.0, 0.0))
    backend_tx: CycleCost = field(default_factory=lambda: CycleCost(1500.0, 800.0, 0.0))
    # per byte: the copy into guest memory, at the host processor's copy rate (vmxnet2.yaml
    # reads host.cpu.copy_per_byte_cycles; the default host's X7350: 1.37)
    backend_rx: CycleCost = field(default_factory=lambda: CycleCost(1500.0, 500.0, 1.37))
    tx_register_accesses_per_packet: float = 0.0
    tx_register_accesses_per_doorbell: float = 1.0
    rx_register_accesses_per_packet: float = 0.0
    rx_register_accesses_per_interrupt: float = 0.0
    # Virtual interrupt coalescing by the device emulation: a virtual interrupt is raised this
    # long after the first frame that finds the guest not polling (0: at once). Fewer
    # interrupts, fewer exits, more latency (002: "attempts to minimize this performance hit
    # can introduce latencies in the I/O path").
    rx_interrupt_delay_us: float = 0.0
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(self.model in DEVICES, "model", self.model, f"one of {sorted(DEVICES)}")
        device = DEVICES[self.model]
        many = (f"in 1..{device.max_queues} for {self.model}" if device.max_queues > 1 else
                f"1: {self.model} has one queue each way (several queues with RSS and MSI-X "
                f"per queue: vmxnet3, virtio_net)")
        check(1 <= self.tx_queues <= device.max_queues, "tx_queues", self.tx_queues, many)
        check(1 <= self.rx_queues <= device.max_queues, "rx_queues", self.rx_queues, many)
        most = device.max_ring_slots
        check(1 <= self.tx_ring_slots <= most, "tx_ring_slots", self.tx_ring_slots,
              f"in 1..{most} for {self.model}")
        check(1 <= self.rx_ring_slots <= most, "rx_ring_slots", self.rx_ring_slots,
              f"in 1..{most} for {self.model}")
        check(not self.tso or device.tso_capable, "tso", self.tso,
              f"false: {self.model} has no TSO")
        check(not self.lro or device.lro_capable, "lro", self.lro,
              f"false: {self.model} takes no LRO aggregates (LRO into the guest: vmxnet3, "
              f"virtio_net)")
        check(1500 <= self.max_mtu_bytes <= device.mtu_ceiling_bytes, "max_mtu_bytes",
              self.max_mtu_bytes, f"in 1500..{device.mtu_ceiling_bytes} for {self.model}")
        for name in ("tx_register_accesses_per_packet", "tx_register_accesses_per_doorbell",
                     "rx_register_accesses_per_packet", "rx_register_accesses_per_interrupt"):
            check(getattr(self, name) >= 0, name, getattr(self, name), ">= 0")
        check(0 <= self.rx_interrupt_delay_us <= 10000, "rx_interrupt_delay_us",
              self.rx_interrupt_delay_us, "in 0..10000 (microseconds; 0: no coalescing)")


class _TxQueue:
    """One transmit queue: its ring and the backend context that serves it (``poller``)."""

    def __init__(self, name: str, slots: int, stats: Stats, backend: Context):
        self.ring = Ring(f"{name}.tx_ring", slots, stats, unit="packets",
                         drop_reason="vnic_tx_ring_full")
        self.backend = backend
        self.poller: RingPoller | None = None  # set by the device

    @property
    def busy(self) -> bool:
        """The backend is in a pass (it will poll the ring again)."""
        return self.poller.busy


class _RxQueue:
    """One receive queue: its ring, the vCPU its virtual interrupt runs on (``poller``) and
    the emulation's interrupt coalescer (``coalescer``: fires the virtual interrupt)."""

    def __init__(self, name: str, slots: int, stats: Stats, vcpu: Context):
        self.ring = Ring(f"{name}.rx_ring", slots, stats, unit="frames",
                         drop_reason="vnic_rx_ring_full")
        self.vcpu = vcpu
        self.poller: RingPoller | None = None  # set by the device
        self.coalescer: Coalescer | None = None  # set by the device

    @property
    def polling(self) -> bool:
        return self.poller.busy


class GuestDevice:
    """What every device a guest drives shares (a ``VirtualNic``, a passed-through NIC or VF):
    its guest-side receive hooks, its counters and its TSO flag. Subclasses set ``params`` and
    call ``_init_guest_side`` in their constructor."""

    params: VnicParams
    # Whether an LRO aggregate reaches the guest's stack with its segment size (Linux's
    # skb_shinfo(skb)->gso_size): the stack's receive-MSS estimate then stays one MSS
    # (2.6.32 tcp_measure_rcv_mss: len = gso_size ?: skb->len), so Linux's delayed-ACK rule
    # ACKs every aggregate of more than one MSS (``models.tcp.TcpReceiver``).
    rx_gso_size = False

    def _init_guest_side(self) -> None:
        self.guest_rx_cost: Callable[[list[Burst]], dict] = lambda batch: {}  # stack terms
        self.guest_rx_deliver: Callable[[list[Burst]], object] = lambda batch: None
        self.guest_lro = False  # set by the VM: its driver accepts LRO aggregates
        self.exits = 0.0
        self.virtual_interrupts = 0
        self.halt_wakeups = 0  # virtual interrupts that found their vCPU halted
        self.rx_frames = self.rx_packets = 0  # into the guest (packets: LRO aggregates count 1)
        # Per flow, the NUMA node whose cache holds the received data the guest reads next:
        # the node of the core that last wrote the flow's data into guest memory (the vNIC
        # backend's copy, in the RX vector's context: ``models.hypervisor.HypervisorRx.deliver``;
        # a multicast copy: ``models.replication``); absent: where the hardware put it, the
        # guest memory's home (a direct device DMAs into it).
        self.rx_data_nodes: dict[int, int] = {}

    def attach_guest(self, rx_terms: Callable[[list[Burst]], dict],
                     deliver: Callable[[list[Burst]], None], lro: bool) -> None:
        """The guest's side of the receive path: its stack's cost of a delivered batch (by
        term), where the batch goes after that, and whether its driver accepts LRO
        aggregates."""
        self.guest_rx_cost, self.guest_rx_deliver, self.guest_lro = rx_terms, deliver, lro

    def counters(self) -> dict[str, float]:
        """Cumulative: register accesses that left the guest, virtual interrupts (and those
        that found the vCPU halted), and what entered the guest (frames; packets: an LRO
        aggregate counts one)."""
        return {"exits": self.exits, "virtual_interrupts": self.virtual_interrupts,
                "halt_wakeups": self.halt_wakeups,
                "rx_frames": self.rx_frames, "rx_packets": self.rx_packets}

    @property
    def tso(self) -> bool:
        return self.params.tso


class VirtualNic(GuestDevice):
    """Queues, batching and counters shared by every virtual device.

    Class attributes say what the device can do; subclasses set them and may override the
    hooks (``tx_doorbells``, ``tx_exits``, ``rx_exits``, the queue choice).
    """

    max_queues = 1
    max_ring_slots = 4096  # the largest ring the device's drivers accept (ethtool -G)
    tso_capable = True
    lro_capable = False
    mtu_ceiling_bytes = 9000
    doorbell_suppression = True  # no doorbell while the backend is still polling the ring

    def __init__(self, env: simpy.Environment, name: str, params: VnicParams, stats: Stats, *,
                 backends: list[Context], vcpus: list[Context],
                 transmit: Callable[[Burst, Context], None],
                 exit_cycles: float,
                 wakeup_cycles: float = 0.0,
                 backend_extra_terms: Callable[[list[Burst]], dict] = lambda batch: {}):
        check(exit_cycles >= 0, f"{name}.exit_cycles", exit_cycles, ">= 0")
        self.env, self.name, self.params = env, name, params
        self.exit_cycles = exit_cycles  # price of one access that leaves the guest
        check(wakeup_cycles >= 0, f"{name}.wakeup_cycles", wakeup_cycles, ">= 0")
        self.wakeup_cycles = wakeup_cycles  # an interrupt that finds its vCPU halted
        self._transmit = transmit
        # What else the backend's pass pays for a batch, by term (the vswitch, the uplink
        # driver).
        self._backend_extra = backend_extra_terms
        one = params.tx_queues == 1 and params.rx_queues == 1
        qname = (lambda k: name) if one else (lambda k: f"{name}.q{k}")
        self.txq = [_TxQueue(qname(k), params.tx_ring_slots, stats, backends[k % len(backends)])
                    for k in range(params.tx_queues)]
        self.rxq = [_RxQueue(qname(k), params.rx_ring_slots, stats, vcpus[k % len(vcpus)])
                    for k in range(params.rx_queues)]
        for q in self.txq:
            q.poller = RingPoller(q.ring, q.backend, self._tx_pass_cost,
                                  lambda batch, q=q: self._tx_deliver(batch, q.backend))
        for q in self.rxq:
            q.poller = RingPoller(q.ring, q.vcpu,
                                  lambda batch, irq, q=q: self._rx_pass_cost(batch, irq, q.vcpu),
                                  self._rx_deliver)
            # A static timer and no frame threshold (the emulation waits out its delay); 0: a
            # virtual interrupt at once, no event.
            q.coalescer = Coalescer(env, CoalescingParams(timer_us=params.rx_interrupt_delay_us,
                                                          max_frames=1 << 30),
                                    lambda q=q: self._interrupt(q))
        self._init_guest_side()

    # -- capabilities -----------------------------------------------------------------------
    @property
    def memory_home(self):
        """The NUMA node of the guest memory the backend copies received packets into (the
        home of the VM's first vCPU)."""
        return self.rxq[0].vcpu.home_node

    @property
    def net_context(self) -> Context:
        """The VM's (first) networking context: it serves transmit queue 0 and, in multicast
        split mode, makes this vNIC's copies."""
        return self.txq[0].backend

    @property
    def takes_aggregates(self) -> bool:
        """Whether the hypervisor may hand this vNIC LRO aggregates (device and guest agree)."""
        return self.params.lro and self.guest_lro

    # -- the declared data path (``sim.path``) ---------------------------------------------
    def guest_charges(self, direction: str) -> list[costs.Charge]:
        """What the guest driver charges its vCPU on ``direction`` 'tx' or 'rx' (the same
        parameters ``tx_guest_terms``, ``guest_send`` and ``_rx_pass_cost`` price)."""
        p, x = self.params, self.exit_cycles
        if direction == "tx":
            return [costs.Charge.of(costs.GUEST_DRIVER_TX, p.guest_tx),
                    costs.Charge(costs.EXITS, p.tx_register_accesses_per_doorbell * x,
                                 p.tx_register_accesses_per_packet * x, 0.0, per="doorbell")]
        return [costs.Charge.of(costs.GUEST_DRIVER_RX, p.guest_rx, per="virtual interrupt"),
                costs.Charge(costs.EXITS, p.rx_register_accesses_per_interrupt * x,
                             p.rx_register_accesses_per_packet * x, 0.0,
                             per="virtual interrupt"),
                costs.Charge(costs.HALT_WAKEUP, self.wakeup_cycles, 0.0, 0.0,
                             per="virtual interrupt that finds the vCPU halted")]

    def backend_charges(self, direction: str, copy: bool = True) -> list[costs.Charge]:
        """What the hypervisor's backend of this device charges on ``direction``; on receive
        without ``copy`` (a guest-mapped queue, ``rx_backend_cycles``) nothing per byte."""
        cost = self.params.backend_tx if direction == "tx" else self.params.backend_rx
        if not copy:
            cost = replace(cost, per_byte_cycles=0.0)
        return [costs.Charge.of(costs.BACKEND_TX if direction == "tx" else costs.BACKEND_RX,
                                cost)]

    # -- hooks ------------------------------------------------------------------------------
    def tx_doorbells(self, queue: _TxQueue) -> int:
        """Doorbells rung for one transmit: none while a paravirtual backend still polls."""
        return 0 if self.doorbell_suppression and queue.busy else 1

    def tx_exits(self, packets: int, doorbells: int) -> float:
        """Register accesses that trap for ``packets`` sent with ``doorbells`` doorbells."""
        p = self.params
        return (p.tx_register_accesses_per_packet * packets
                + p.tx_register_accesses_per_doorbell * doorbells)

    def rx_exits(self, packets: int, interrupts: int) -> float:
        """Register accesses that trap while the guest takes ``interrupts`` and ``packets``."""
        p = self.params
        return (p.rx_register_accesses_per_packet * packets
                + p.rx_register_accesses_per_interrupt * interrupts)

    def tx_queue_of(self, burst: Burst) -> _TxQueue:
        return self.txq[burst.flow % len(self.txq)]

    def rx_queue_of(self, burst: Burst) -> _RxQueue:
        return self.rxq[burst.flow % len(self.rxq)]

    # -- guest side -------------------------------------------------------------------------
    def tx_guest_terms(self, burst: Burst) -> dict:
        """vCPU cycles by term of the driver's transmit of one burst: its work and the
        per-packet exits. The doorbell is not in here: whether one is rung is decided when the
        burst is posted (``guest_send``), after these cycles ran."""
        exits = self.tx_exits(burst.packets, 0)
        self.exits += exits
        terms = {costs.GUEST_DRIVER_TX: self.params.guest_tx.cycles(burst.packets,
                                                                     burst.payload_bytes, 0)}
        return costs.add(terms, costs.EXITS, exits * self.exit_cycles)

    def guest_send(self, burst: Burst, vcpu: Context) -> None:
        """The guest driver on ``vcpu`` posts a burst (after its cycles were paid there).
        A doorbell is rung unless the backend is still polling the queue (decided now, at
        post time); its exits are charged on ``vcpu`` as work nobody waits for
        (``Context.charge``: no event), in the vCPU's FIFO order behind the post (the backend
        is woken at once; the exit delays the vCPU's next work)."""
        q = self.tx_queue_of(burst)
        doorbell_exits = self.tx_exits(0, self.tx_doorbells(q))
        if doorbell_exits:
            self.exits += doorbell_exits
            vcpu.charge({costs.EXITS: doorbell_exits * self.exit_cycles})
        if q.ring.offer(burst) is not None:
            q.poller.kick()

    def _tx_pass_cost(self, batch: list[Burst], is_interrupt: bool) -> tuple[dict, int, int]:
        packets = n_bytes = 0
        for b in batch:
            packets += b.packets
            n_bytes += b.payload_bytes
        terms = {costs.BACKEND_TX: self.params.backend_tx.cycles(packets, n_bytes)}
        costs.merge(terms, self._backend_extra(batch))
        # NUMA: the backend touches descriptors and headers, not the payload (zero copy).
        return terms, packets, 0

    def _tx_deliver(self, batch: list[Burst], backend: Context) -> None:
        for burst in batch:  # the vswitch runs on the backend's context (local delivery pays)
            self._transmit(burst, backend)

    # -- receive side -----------------------------------------------------------------------
    def rx_backend_cycles(self, packets: int, n_bytes: int) -> float:
        """Hypervisor cycles to copy ``packets`` (``n_bytes``) into the guest and post a virtual
        interrupt. The per-byte part is the copy into guest memory, at the host processor's
        copy rate; packets already in guest memory (a NetQueue queue mapped to the guest,
        ``models.nic.NicPort.guest_mapped``) are passed with 0 bytes copied."""
        return self.params.backend_rx.cycles(packets, n_bytes)

    def deliver(self, batch: list[Burst]) -> None:
        """From the vswitch (handler context already paid): fill the rings, interrupt the guest."""
        touched: list[_RxQueue] = []
        for burst in batch:
            q = self.rx_queue_of(burst)
            if q.ring.offer(burst) is not None and q not in touched:
                touched.append(q)
        for q in touched:
            if not q.polling:
                q.coalescer.notify(1)

    def _interrupt(self, q: _RxQueue) -> None:
        """The emulation raises the queue's virtual interrupt (unless the guest is polling by
        now: its poll takes the frames)."""
        if not q.polling:
            self.virtual_interrupts += 1
            q.poller.kick(is_interrupt=True)

    def _rx_pass_cost(self, batch: list[Burst], is_interrupt: bool,
                      vcpu: Context | None = None) -> tuple[dict, int, int]:
        """The guest's pass over its RX ring (priced when it is queued: for an interrupt, at
        the instant it is raised, when ``vcpu`` may be halted and has to be woken first)."""
        packets = n_bytes = 0
        for b in batch:
            packets += b.packets
            n_bytes += b.payload_bytes
        exits = self.rx_exits(packets, int(is_interrupt))
        self.exits += exits
        terms = {costs.GUEST_DRIVER_RX: self.params.guest_rx.cycles(packets, n_bytes,
                                                                    int(is_interrupt))}
        costs.add(terms, costs.EXITS, exits * self.exit_cycles)
        if is_interrupt and self.wakeup_cycles and vcpu is not None and vcpu.idle:
            self.halt_wakeups += 1
            costs.add(terms, costs.HALT_WAKEUP, self.wakeup_cycles)
        costs.merge(terms, self.guest_rx_cost(batch))
        return terms, packets, n_bytes

    def _rx_deliver(self, batch: list[Burst]):
        """Into the guest's stack; returns what it returns (its woken applications, for the
        poller to run once its next pass is queued)."""
        self.rx_frames += sum(b.frames for b in batch)
        self.rx_packets += sum(b.packets for b in batch)
        return self.guest_rx_deliver(batch)
