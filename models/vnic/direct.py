"""Direct devices: a physical NIC (DirectPath I/O) or an SR-IOV virtual function owned by a
guest, and the native (bare-metal) host that drives its NIC the same way.

Modelled: the guest runs the physical NIC's driver on its vCPUs; there is no vNIC backend, no
vswitch and no hypervisor networking context. Transmit: the driver's work per packet
(``guest_tx``) on the vCPU, then the burst goes straight into the NIC TX ring of its queue
(the doorbell is a write to the device's BAR, mapped into the guest: no exit); a ring that is
full holds the rest in the guest's transmit queue (the qdisc, ``tx_ring_slots`` packets: Linux
``txqueuelen``; full: dropped, reason ``qdisc_full``), drained as the NIC frees slots. Receive:
the NIC's RX queues (their coalescing, DMA and hardware LRO as for the hypervisor) interrupt
the vCPU that owns them (queue ``k`` -> vCPU ``k mod vcpus``), whose pass pays the driver
(``guest_rx``: per interrupt, per frame) and the stack. A physical interrupt of an assigned
device still reaches the hypervisor first: ``rx_register_accesses_per_interrupt`` exits (the
external-interrupt exit that injects the virtual interrupt, the guest's EOI to its virtual
APIC), priced at ``exit_cycles``; none with posted interrupts (``features.posted_interrupts``)
or on bare metal. An interrupt that finds the vCPU halted pays the wake-up
(``vcpu_halt_wakeup_cycles``; 0 on bare metal).
SR-IOV (``Sriov``): each VM's virtual function is one queue pair of a shared port: the NIC's
layer-2 sorter (VMDq pools: pool 0 the physical function's, VM ``i`` pool ``i + 1``) picks it
by destination, and the port's TX round-robin shares the wire between the VFs
(``port_params``). Passthrough (``Passthrough``) owns all the port's queues (one VM per port).
Left out: the IOMMU's translation cost (IOTLB misses), interrupt remapping, the VF driver's
mailbox to the PF, VF anti-spoofing and rate limits, live migration (which passthrough
forbids), several queue pairs per VF.
Units: cycles, packets, bytes.
"""
from __future__ import annotations

from dataclasses import replace

import simpy

from models import costs
from models.base import Burst, Ring, Stats
from models.cpu import Context
from models.nic import NicParams, NicPort, TxBacklog
from models.vnic.base import DEVICES, GuestDevice, VnicParams


class DirectNic(GuestDevice):
    """A NIC (or VF) whose driver runs in the guest: the interface of ``VirtualNic`` that the
    VM, the recorder and the declared path use, without backends or vNIC rings."""

    direct = True
    max_queues = 1          # the vNIC's own queue counts are unused: the NIC's queues count
    max_ring_slots = 4096   # the vNIC ring keys are unused too (the NIC's rings count)
    tso_capable = True      # the NIC's TSO (``nic.tso``)
    lro_capable = False     # LRO aggregates come from the NIC's hardware LRO (``nic.lro``)
    mtu_ceiling_bytes = 9000
    one_vm_per_port = True

    def __init__(self, env: simpy.Environment, name: str, params: VnicParams, stats: Stats, *,
                 nic: NicPort, queues: list[int], vcpus: list[Context], exit_cycles: float,
                 wakeup_cycles: float, posted_interrupts: bool, bare_metal: bool):
        """``queues``: the NIC RX queues this guest owns; ``exit_cycles`` the price of one
        exit for the guest's mode; ``wakeup_cycles`` of waking a halted vCPU."""
        self.env, self.name, self.params, self.nic, self.vcpus = env, name, params, nic, vcpus
        self.exit_cycles = 0.0 if bare_metal else exit_cycles
        self.wakeup_cycles = 0.0 if bare_metal else wakeup_cycles
        # Exits per physical interrupt: none when the interrupt is posted into the running
        # vCPU, none without a hypervisor.
        self.interrupt_exits = (0.0 if posted_interrupts or bare_metal
                                else params.rx_register_accesses_per_interrupt)
        self.bare_metal = bare_metal
        self.qdisc = Ring(f"{name}.qdisc", params.tx_ring_slots, stats, unit="packets",
                          drop_reason="qdisc_full")
        self._backlog = TxBacklog(self.qdisc, nic)
        self.queues = queues
        for j, k in enumerate(queues):
            q = nic.rx_queues[k]
            vcpu = vcpus[j % len(vcpus)]
            q.context, q.prepare = vcpu, None
            q.cost = lambda batch, irq, vcpu=vcpu: self._rx_cost(batch, irq, vcpu)
            q.deliver = self._rx_deliver
        self._init_guest_side()

    # -- what the VM and the recorder use (as ``VirtualNic``) ------------------------------
    @property
    def takes_aggregates(self) -> bool:
        """No software LRO on this path (the hypervisor never sees the packets)."""
        return False

    @property
    def memory_home(self):
        return self.vcpus[0].home_node

    def rx_vcpu(self, queue: int) -> Context:
        """The vCPU NIC RX queue ``queue`` interrupts."""
        return self.nic.rx_queues[queue].context

    # -- the declared data path (``sim.path``) ---------------------------------------------
    def guest_charges(self, direction: str) -> list[costs.Charge]:
        """What the guest's NIC driver charges its vCPU (as ``tx_guest_terms`` and
        ``_rx_cost`` price it)."""
        p = self.params
        if direction == "tx":
            return [costs.Charge.of(costs.GUEST_DRIVER_TX, p.guest_tx)]
        return [costs.Charge.of(costs.GUEST_DRIVER_RX, p.guest_rx, unit="frame",
                                per="interrupt"),
                costs.Charge(costs.EXITS, self.interrupt_exits * self.exit_cycles, 0.0, 0.0,
                             per="interrupt"),
                costs.Charge(costs.HALT_WAKEUP, self.wakeup_cycles, 0.0, 0.0,
                             per="virtual interrupt that finds the vCPU halted")]

    def backend_charges(self, direction: str, copy: bool = True) -> list[costs.Charge]:
        return []  # no backend

    # -- transmit ---------------------------------------------------------------------------
    def tx_guest_terms(self, burst: Burst) -> dict:
        """vCPU cycles of the driver's transmit of one burst (no exit: the doorbell is a write
        to the device's own registers)."""
        return {costs.GUEST_DRIVER_TX: self.params.guest_tx.cycles(burst.packets,
                                                                   burst.payload_bytes, 0)}

    def guest_send(self, burst: Burst, vcpu: Context) -> None:
        """Post to the NIC TX ring, or wait in the qdisc while the ring (or the qdisc) is
        non-empty and full."""
        self._backlog.send(burst)

    # -- receive ----------------------------------------------------------------------------
    def _rx_cost(self, batch: list[Burst], is_interrupt: bool, vcpu: Context) -> dict:
        """The vCPU's pass over its NIC RX queue: the driver per frame (per interrupt), the
        exits and wake-up of an interrupt, the stack's work (priced when the pass is queued)."""
        frames = n_bytes = 0
        for b in batch:
            frames += b.frames
            n_bytes += b.payload_bytes
        irq = int(is_interrupt)
        terms = {costs.GUEST_DRIVER_RX: self.params.guest_rx.cycles(frames, n_bytes, irq)}
        if irq:
            if not self.bare_metal:
                self.virtual_interrupts += 1
            exits = self.interrupt_exits
            self.exits += exits
            costs.add(terms, costs.EXITS, exits * self.exit_cycles)
            if self.wakeup_cycles and vcpu.idle:
                self.halt_wakeups += 1
                costs.add(terms, costs.HALT_WAKEUP, self.wakeup_cycles)
        return costs.merge(terms, self.guest_rx_cost(batch))

    def _rx_deliver(self, batch: list[Burst]):
        self.rx_frames += sum(b.frames for b in batch)
        self.rx_packets += sum(b.packets for b in batch)
        return self.guest_rx_deliver(batch)


class Passthrough(DirectNic):
    """DirectPath I/O: the whole port (all its queues) assigned to one VM."""


class Sriov(DirectNic):
    """An SR-IOV virtual function: one queue pair of a port shared with other VMs' VFs."""

    one_vm_per_port = False


DIRECT = {"passthrough": Passthrough, "sriov": Sriov}
DEVICES.update(DIRECT)


def is_direct(model: str) -> bool:
    return model in DIRECT


def port_params(nic: NicParams, model: str, vms: int) -> NicParams:
    """The NIC port as a direct device uses it: unchanged for passthrough (the guest owns its
    queues); for SR-IOV one TX and one RX queue per VM plus the physical function's (pool 0),
    sorted by destination (VMDq pools: VM ``i`` -> RX queue ``i + 1``). Transmit queues are
    picked as for any port (``NicPort.tx_queue``), so two VFs may share one; the wire is shared
    anyway."""
    if model != "sriov":
        return nic
    return replace(nic, rx_queues=vms + 1, tx_queues=vms + 1, rx_sort="vmdq")


def owned_queues(model: str, vm: int, nic: NicParams) -> list[int]:
    """The RX queues of the port VM ``vm`` owns: its VF's (``vm + 1``), or all of them."""
    return [vm + 1] if model == "sriov" else list(range(nic.rx_queues))
