"""Hypervisor profile: one generation's features and prices, and its receive path per NIC port.

Modelled:
- Features of the generation (``HypervisorFeatures``): NetQueue (VMDq sorting), the vmxnet3
  device, software LRO, several hardware queues into one vNIC (vmxnet3 RSS, vSphere 6.0).
- The physical-NIC driver: ``driver_rx`` per interrupt / frame / byte, charged in the NIC
  vector's context, and ``driver_tx`` per packet, charged in the VM's networking context. A
  ``linux_compat`` driver (vmklinux: a Linux driver run through a shim) also pays ``compat_rx``
  / ``compat_tx`` per packet for converting between the Linux socket buffer and the
  hypervisor's packet handle; a ``native`` driver (vSphere 6.0's Mellanox driver) does not
  (claim V6-driver: "Native APIs remove the extra CPU overheads of data structure conversion").
- Software LRO (``HypervisorRx``): after the driver, consecutive data frames of a flow in one
  poll are merged into aggregates of up to ``software_lro_max_bytes`` for vNICs whose device and
  guest take them; the driver pays per frame (per packet the NIC delivers: a hardware-LRO
  aggregate is one), the vswitch and the vNIC backend per aggregate,
  and the guest per aggregate (claim G80-rx-pps: 800K frames/s become ~240K packets/s).
  The merging itself is not free: ``software_lro_cost`` (term ``lro``) per data packet the
  driver hands to LRO for such a vNIC (a frame; a hardware-LRO aggregate is one), whether it
  is merged or flushed alone (the flow lookup, header checks, appending it to the aggregate).
- The NAPI poll budget: a receive handler's pass takes its ring's packets in poll calls of at
  most ``napi_budget_packets`` (Linux's NAPI weight, 64; vmklinux's too), each paying
  ``driver_poll`` (its fixed part): a pass over N packets pays ceil(N / budget) polls. A busy
  handler's long passes (``models.nic``: it polls again before re-enabling its interrupt) pay
  one poll per budget's worth of packets however few interrupts it takes.
- The price of one guest register access that leaves the guest: ``vm_exit_cycles`` under
  hardware virtualization (a VM exit, the emulation and the VM entry), ``bt_trap_cycles`` under
  binary translation (the translated access calls the emulation without a hardware exit).
- ``vcpu_halt_wakeup_cycles``: an idle guest halts its vCPU (HLT leaves the guest and the
  VMkernel deschedules the vCPU's world); a virtual interrupt that finds it halted wakes it (an
  IPI to its core, the scheduler, a world switch, the VM entry and the injection). Charged on
  the vCPU once per interrupt that finds it idle (``models.vnic.base``).
- ``tx_contexts_per_vnic``: how many networking contexts serve one vNIC's transmit queues.
- Direct devices (``models.vnic.direct``): whether the generation can assign a NIC
  (``passthrough``) or a virtual function (``sriov``) to a VM, and whether a device interrupt
  reaches a running vCPU without an exit (``posted_interrupts``). ``bare_metal``: the native
  host mode, no hypervisor (exits, virtual interrupts and halt wake-ups cost nothing).
- ``poll_mode``: the networking contexts and RX vectors are poll-mode threads (a userspace
  vswitch with vhost-user, ``models.polling``): always busy, never interrupted or kicked.
Left out: Dynamic NetQueue (queue counts are fixed per run), the vmklinux shim's locking,
generation-specific vswitch costs (every generation uses the same vswitch prices unless its
profile says otherwise).
Units: cycles, bytes.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from models import costs
from models.base import DATA, Burst, CycleCost, check, sums_by_dst
from models.vswitch import Vswitch, VswitchParams

DRIVER_KINDS = ("linux_compat", "native")
# How long a handler's passes are remembered for spread bursts (longer than any spread: a
# 64KB segment among 15 others takes ~0.9 ms of 10GbE, ~9 ms of 1GbE).
PASS_MEMORY_S = 0.02
VIRTUALIZATION_MODES = ("hw", "bt")


@dataclass(frozen=True)
class HypervisorFeatures:
    """What a hypervisor generation can do (the experiments' configs are checked against it)."""

    netqueue: bool = True        # VMDq / NetQueue receive queues per VM (ESX 3.5 on)
    vmxnet3: bool = False        # the vmxnet3 device (ESX 4.0 on)
    software_lro: bool = False   # LRO in the hypervisor for vNICs that take aggregates
    vnic_rss: bool = False       # several hardware queues into one vNIC (vSphere 6.0)
    split_rx_mode: bool = False  # multicast copies split across contexts (vSphere 5.0)
    vxlan: bool = False          # VXLAN tunnel endpoints in the vswitch (vSphere 5.1)
    passthrough: bool = False    # DirectPath I/O: a NIC assigned to one VM (ESX 4.0, VT-d)
    sriov: bool = False          # SR-IOV virtual functions assigned to VMs (vSphere 5.1)
    posted_interrupts: bool = False  # exitless interrupts into a running vCPU (APICv + VT-d PI)
    vmxnet: bool = True          # VMware's paravirtual devices (vmxnet2; vmxnet3 as above)
    virtio_net: bool = False     # the virtio-net device (KVM)
    latency_sensitivity: bool = False  # guest.latency_sensitivity=high (vSphere 5.5)


@dataclass(frozen=True)
class HypervisorParams:
    name: str = "esx35"
    features: HypervisorFeatures = field(default_factory=HypervisorFeatures)
    driver_kind: str = "linux_compat"
    driver_rx: CycleCost = field(default_factory=lambda: CycleCost(1500.0, 450.0, 0.0))
    driver_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 450.0, 0.0))
    compat_rx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 250.0, 0.0))
    compat_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 250.0, 0.0))
    # One driver poll call (fixed part only); a pass pays one per napi_budget_packets packets.
    driver_poll: CycleCost = field(default_factory=lambda: CycleCost(1500.0, 0.0, 0.0))
    napi_budget_packets: int = 64
    software_lro_max_bytes: int = 32000
    # Software LRO's own work per data packet it takes (per packet and per byte only).
    software_lro_cost: CycleCost = field(default_factory=lambda: CycleCost(0.0, 250.0, 0.0))
    vm_exit_cycles: float = 4000.0
    bt_trap_cycles: float = 1500.0
    vcpu_halt_wakeup_cycles: float = 20000.0
    # The CPU scheduler's time slice on a shared core (``models.cpu``): 0 = hand over per task.
    sched_quantum_us: float = 0.0
    tx_contexts_per_vnic: int = 1
    # The OS runs on the host's cores and drives the NIC itself (``models.vnic.direct``).
    bare_metal: bool = False  # no hypervisor at all (hypervisor=native): the overhead baseline
    # The vswitch and vNIC backends run as poll-mode threads (vhost-user with OVS-DPDK,
    # ``models.polling``): their cores spin at 100%, no host interrupts, no guest kicks.
    poll_mode: bool = False
    vswitch: VswitchParams = field(default_factory=VswitchParams)
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(self.driver_kind in DRIVER_KINDS, "driver_kind", self.driver_kind,
              f"one of {DRIVER_KINDS}")
        check(1500 <= self.software_lro_max_bytes <= 65535, "software_lro_max_bytes",
              self.software_lro_max_bytes, "in 1500..65535 (an IP packet)")
        check(self.driver_poll.per_packet_cycles == 0 and self.driver_poll.per_byte_cycles == 0,
              "driver_poll", self.driver_poll, "a fixed cost per poll call only")
        check(1 <= self.napi_budget_packets <= 4096, "napi_budget_packets",
              self.napi_budget_packets, "in 1..4096")
        check(self.software_lro_cost.fixed_cycles == 0, "software_lro_cost.fixed_cycles",
              self.software_lro_cost.fixed_cycles, "0 (LRO is priced per packet and per byte)")
        check(self.vm_exit_cycles >= 0, "vm_exit_cycles", self.vm_exit_cycles, ">= 0")
        check(self.bt_trap_cycles >= 0, "bt_trap_cycles", self.bt_trap_cycles, ">= 0")
        check(self.vcpu_halt_wakeup_cycles >= 0, "vcpu_halt_wakeup_cycles",
              self.vcpu_halt_wakeup_cycles, ">= 0")
        check(self.sched_quantum_us >= 0, "sched_quantum_us", self.sched_quantum_us, ">= 0")
        check(1 <= self.tx_contexts_per_vnic <= 64, "tx_contexts_per_vnic",
              self.tx_contexts_per_vnic, "in 1..64")

    def exit_cycles(self, virtualization: str) -> float:
        """Price of one guest register access that leaves the guest, for the guest's mode."""
        check(virtualization in VIRTUALIZATION_MODES, "guest.virtualization", virtualization,
              f"one of {VIRTUALIZATION_MODES}")
        return self.vm_exit_cycles if virtualization == "hw" else self.bt_trap_cycles

    def driver_charges(self, direction: str) -> list[costs.Charge]:
        """The uplink driver's declared charges on ``direction`` 'tx' or 'rx' (``sim.path``)."""
        if direction == "rx":
            out = [costs.Charge.of(costs.DRIVER_RX, self.driver_rx, unit="NIC packet",
                                   per="interrupt")]
            if self.driver_poll.fixed_cycles:
                # ceil(N / budget) polls per pass over N packets, declared as its two parts:
                # the budget's share per packet, and the poll each pass pays beyond it
                # (``sim.fluid``: max(passes, packets / budget) polls)
                out.append(costs.Charge(costs.DRIVER_POLL, self.driver_poll.fixed_cycles,
                                        self.driver_poll.fixed_cycles / self.napi_budget_packets,
                                        0.0, unit="NIC packet", per="poll beyond budget"))
            if self.driver_kind == "linux_compat":
                out.append(costs.Charge.of(costs.COMPAT_RX, self.compat_rx, unit="NIC packet"))
            return out
        out = [costs.Charge.of(costs.DRIVER_TX, self.driver_tx)]
        if self.driver_kind == "linux_compat":
            out.append(costs.Charge.of(costs.COMPAT_TX, self.compat_tx))
        return out

    def lro_charges(self, takes_aggregates: bool) -> list[costs.Charge]:
        """Software LRO's declared charge in a receive handler whose packets go to a vNIC that
        does (``takes_aggregates``) or does not take aggregates (``sim.path``): per data packet
        the driver hands up (``HypervisorRx.cost``); none without the feature."""
        if not (self.features.software_lro and takes_aggregates):
            return []
        return [costs.Charge.of(costs.LRO, self.software_lro_cost, unit="LRO packet")]

    def rx_driver_terms(self, packets: int, n_bytes: int, interrupts: int) -> dict:
        """Uplink driver receive cost by term for one pass over ``packets`` (the compat shim
        for a Linux-compat driver; ceil(packets / napi_budget_packets) poll calls)."""
        terms = {costs.DRIVER_RX: self.driver_rx.cycles(packets, n_bytes, interrupts)}
        if packets:
            costs.add(terms, costs.DRIVER_POLL, self.driver_poll.fixed_cycles
                      * -(-packets // self.napi_budget_packets))
        if self.driver_kind == "linux_compat":
            costs.add(terms, costs.COMPAT_RX, self.compat_rx.cycles(packets, n_bytes, 0))
        return terms

    def tx_driver_terms(self, packets: int, n_bytes: int) -> dict:
        """Uplink driver transmit cost per batch by term (compat shim for Linux-compat)."""
        terms = {costs.DRIVER_TX: self.driver_tx.cycles(packets, n_bytes, 0)}
        if self.driver_kind == "linux_compat":
            costs.add(terms, costs.COMPAT_TX, self.compat_tx.cycles(packets, n_bytes, 0))
        return terms


def software_lro(batch: list[Burst], max_bytes: int,
                 takes_aggregates: Callable[[int], bool],
                 pieces: Callable[[float], int] | None = None) -> list[Burst]:
    """The batch after software LRO: data bursts for vNICs that take aggregates are merged
    into aggregates of up to ``max_bytes`` (a burst is one flow's frames). A burst whose frames
    were spread over the wire (``spread_s`` > 0) reached the handler in ``pieces(spread_s)``
    polls, each merged on its own (None: always whole)."""
    return [b.aggregated(max_bytes, pieces(b.spread_s) if pieces and b.spread_s > 0 else 1)
            if b.kind == DATA and b.packets == b.frames > 1 and takes_aggregates(b.dst) else b
            for b in batch]


@dataclass
class RxPass:
    """One poll of an RX vector: the batch as the NIC delivered it, after software LRO
    (what the vswitch switches), and the handler's context (it prices the NUMA copy)."""

    batch: list[Burst]
    switched: list[Burst]
    context: object


class HypervisorRx:
    """The hypervisor's receive path for one NIC port: what a vector's handler pays and does.

    ::

        NIC RX queue --batch of frames--> driver (per frame) --software LRO--> vswitch
            (per packet) --> vNIC backend (per packet, per destination vNIC) --> vNIC RX rings

    A burst's destination vNIC is the vswitch port its ``dst`` names (a port only receives for
    its own VMs). The NIC's RX queue calls ``prepare``, then ``cost``, then ``deliver`` on the
    ``RxPass`` ``prepare`` made.
    """

    def __init__(self, params: HypervisorParams, vswitch: Vswitch, nic=None):
        """``nic``: the port whose queues this handles (``models.nic.NicPort``); it tells which
        queues the host must sort in software (``sw_sort``; None: none)."""
        self.params, self.vswitch, self.nic = params, vswitch, nic
        self._sorts: dict[int, bool] = {}  # id(handler context) -> its queue is sorted here
        # Each handler context's recent passes (times), for the pieces a spread burst came in.
        self._passes: dict[int, deque] = {}
        self._mapped: dict[tuple, bool] = {}  # (id(handler context), dst) -> guest-mapped
        self.driver_packets = 0    # packets the driver took from the NIC (frames without HW LRO)
        self.switched_packets = 0  # packets (aggregates count one) the vswitch forwarded

    def _vnic(self, dst: int):
        """The vNIC on this port's vswitch that endpoint ``dst`` names (None: a group or a
        peer)."""
        return self.vswitch.ports.get(dst)

    def _takes_aggregates(self, dst: int) -> bool:
        vnic = self._vnic(dst)
        return vnic is not None and vnic.takes_aggregates

    def sorts(self, context) -> bool:
        """Whether the queue ``context`` handles is one the NIC did not dedicate to one vNIC
        port, so that its frames are classified in software (decided when first asked: every
        port is connected by then)."""
        key = id(context)
        v = self._sorts.get(key)
        if v is None:
            nic = self.nic
            shared = nic.shared_queues(self.vswitch.ports) if nic is not None else set()
            v = self._sorts[key] = any(q.context is context for k, q in
                                       enumerate(nic.rx_queues) if k in shared) \
                if shared else False
        return v

    def guest_mapped(self, context, dst: int) -> bool:
        """Whether ``dst``'s frames reach the handler on ``context`` through the NetQueue queue
        mapped to its guest's memory (no backend copy: ``models.nic.NicPort.guest_mapped``)."""
        key = (id(context), dst)
        v = self._mapped.get(key)
        if v is None:
            nic = self.nic
            v = self._mapped[key] = nic is not None and context is not None and any(
                q.context is context and nic.guest_mapped(k, dst, self.vswitch.ports)
                for k, q in enumerate(nic.rx_queues))
        return v

    def prepare(self, batch: list[Burst], context) -> RxPass:
        """Software LRO of one poll's batch (where the hypervisor has it). A burst whose frames
        arrived interleaved with other flows' over ``spread_s`` (``models.peer``) was taken by
        this handler's earlier passes within that time too: it is merged in as many pieces as
        passes saw it (this one and those in the last ``spread_s``)."""
        switched = batch
        if self.params.features.software_lro:
            pieces = None
            if context is not None:
                now = context.env.now
                passes = self._passes.get(id(context))
                if passes is None:
                    passes = self._passes[id(context)] = deque()
                if any(b.spread_s > 0 for b in batch):
                    def pieces(spread_s: float) -> int:
                        n = 1
                        for t in reversed(passes):
                            if t <= now - spread_s:
                                break
                            n += 1
                        return n
                while passes and passes[0] < now - PASS_MEMORY_S:
                    passes.popleft()
                switched = software_lro(batch, self.params.software_lro_max_bytes,
                                        self._takes_aggregates, pieces)
                passes.append(now)
            else:
                switched = software_lro(batch, self.params.software_lro_max_bytes,
                                        self._takes_aggregates)
        return RxPass(batch, switched, context)

    def cost(self, rx: RxPass, is_interrupt: bool) -> dict:
        """Cycles by term for one poll: the driver per packet the NIC delivered (a frame, or a
        hardware-LRO aggregate), software LRO per such data packet for a vNIC that takes
        aggregates (``lro``), the rest per packet after software LRO; the NUMA penalty of
        writing each VM's packets into its memory when that is on another node than the
        handler's core (``numa_copy``): per packet written (an LRO aggregate is one: its
        descriptor and headers are partial-line stores that need the line from the remote
        home first), nothing per byte: full-line payload stores are posted, the core does not
        wait for them, and the remote transfer is paid by whoever reads the data next (the
        guest's copy to user, ``rx_data_nodes``; ``docs/models.md``, NUMA)."""
        lro = self.params.features.software_lro  # LRO's work on each data packet it takes
        nic_packets = n_bytes = lro_packets = lro_bytes = 0
        for b in rx.batch:
            nic_packets += b.packets
            n_bytes += b.payload_bytes
            if lro and b.kind == DATA and self._takes_aggregates(b.dst):
                lro_packets += b.packets
                lro_bytes += b.payload_bytes
        terms = self.params.rx_driver_terms(nic_packets, n_bytes, int(is_interrupt))
        if lro:
            costs.add(terms, costs.LRO,
                      self.params.software_lro_cost.cycles(lro_packets, lro_bytes, 0))
        packets = sum(b.packets for b in rx.switched)
        costs.add(terms, costs.VSWITCH, self.vswitch.cycles(packets, n_bytes))
        ctx = rx.context
        if ctx is not None and self.sorts(ctx):  # a queue the NIC did not sort by VM
            costs.add(terms, costs.SW_SORT, self.vswitch.sort_cycles(packets, n_bytes))
        costs.merge(terms, self.vswitch.rx_extra_terms(rx.batch, ctx))  # VXLAN, multicast copies
        switched = sums_by_dst(rx.switched)
        for dst, (p, nb) in switched.items():
            vnic = self._vnic(dst)
            if vnic is not None:
                copied = 0 if self.guest_mapped(ctx, dst) else nb  # a guest-mapped queue: none
                costs.add(terms, costs.BACKEND_RX, vnic.rx_backend_cycles(p, copied))
        if ctx is not None:  # per packet written into the guest (after software LRO)
            for dst, (p, _) in switched.items():
                vnic = self._vnic(dst)
                if vnic is not None:
                    costs.add(terms, costs.NUMA_COPY,
                              ctx.remote_penalty_cycles(p, 0, vnic.memory_home))
        return terms

    def deliver(self, rx: RxPass) -> None:
        """After the handler's cycles: switch the batch as ``prepare`` aggregated it."""
        self.driver_packets += sum(b.packets for b in rx.batch)
        self.switched_packets += sum(b.packets for b in rx.switched)
        node = None
        if rx.context is not None:  # the data now sit in the cache of the handler's node
            node = rx.context.core.node
            for b in rx.switched:
                vnic = self._vnic(b.dst)
                if vnic is not None:
                    vnic.rx_data_nodes[b.flow] = node
        self.vswitch.receive(rx.switched, node)
