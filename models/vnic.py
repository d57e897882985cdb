"""Virtual NICs: a ``VirtualNic`` base that owns rings, batching and counters; devices as hooks.

Modelled: the guest driver posts transmit bursts into a TX ring (full: dropped, reason
``vnic_tx_ring_full``); the hypervisor backend, a networking context, takes everything posted per
pass (one doorbell per batch), pays the device's backend cost plus the vswitch's, and hands the
bursts to the vswitch. On receive the backend (running in the NIC's handler context, which pays
``rx_backend_cycles``) fills the RX ring (full: ``vnic_rx_ring_full``) and raises a virtual
interrupt; the guest driver then drains the ring on the vCPU, paying ``rx_guest_cycles`` plus
the OS stack's receive cost, and polls again before re-enabling the interrupt.

A device is a subclass that answers a few hooks: how many register accesses (VM exits or
binary-translation traps) a transmit, a receive and an interrupt cost; whether it offers TSO,
jumbo frames, LRO into the guest. ``Vmxnet2`` (enhanced vmxnet: shared rings, a doorbell per
batch) is the first; e1000 and vmxnet3 subclass the same base.
Units: cycles, packets, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import simpy

from models.base import Burst, CycleCost, Ring, Stats, check
from models.cpu import Context


@dataclass(frozen=True)
class VnicParams:
    """Device costs. ``guest_*`` run on the vCPU, ``backend_*`` on a hypervisor context."""

    model: str = "vmxnet2"
    tx_ring_slots: int = 512
    rx_ring_slots: int = 512
    # Priors: a virtual interrupt costs the guest its ISR plus the VMM's injection and EOI
    # (~3K cycles); each receive descriptor (buffer refill, skb set-up) ~1.2K cycles.
    guest_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 300.0, 0.0))
    guest_rx: CycleCost = field(default_factory=lambda: CycleCost(3000.0, 1200.0, 0.0))
    backend_tx: CycleCost = field(default_factory=lambda: CycleCost(1500.0, 800.0, 0.0))
    backend_rx: CycleCost = field(default_factory=lambda: CycleCost(1500.0, 500.0, 0.0))
    exit_cycles: float = 1500.0  # one register access that leaves the guest

    def __post_init__(self):
        check(self.model in DEVICES, "model", self.model, f"one of {sorted(DEVICES)}")
        check(self.tx_ring_slots >= 1, "tx_ring_slots", self.tx_ring_slots, ">= 1")
        check(self.rx_ring_slots >= 1, "rx_ring_slots", self.rx_ring_slots, ">= 1")
        check(self.exit_cycles >= 0, "exit_cycles", self.exit_cycles, ">= 0")


class VirtualNic:
    """Rings, batching and counters shared by every virtual device. Subclasses set the hooks."""

    tso = True
    max_mtu_bytes = 9000
    lro_into_guest = False

    def __init__(self, env: simpy.Environment, name: str, params: VnicParams, stats: Stats, *,
                 backend: Context, vcpu: Context, transmit: Callable[[Burst], None],
                 backend_extra_cycles: Callable[[int, int], float] = lambda p, b: 0.0):
        self.env, self.name, self.params = env, name, params
        self.backend, self.vcpu, self._transmit = backend, vcpu, transmit
        self._backend_extra = backend_extra_cycles  # e.g. the vswitch's cost, same context
        self.tx_ring = Ring(f"{name}.tx_ring", params.tx_ring_slots, stats, unit="packets",
                            drop_reason="vnic_tx_ring_full")
        self.rx_ring = Ring(f"{name}.rx_ring", params.rx_ring_slots, stats, unit="frames",
                            drop_reason="vnic_rx_ring_full")
        self.guest_rx_cost: Callable[[list[Burst]], float] = lambda batch: 0.0
        self.guest_rx_deliver: Callable[[list[Burst]], None] = lambda batch: None
        self.exits = 0.0
        self.virtual_interrupts = 0
        self._tx_busy = self._rx_polling = False

    # -- hooks: a device answers these ------------------------------------------------------
    def tx_exits(self, packets: int, batches: int) -> float:
        """Register accesses that trap for ``packets`` sent in ``batches`` doorbells."""
        raise NotImplementedError

    def rx_exits(self, packets: int, interrupts: int) -> float:
        """Register accesses that trap while the guest takes ``interrupts`` and ``packets``."""
        raise NotImplementedError

    # -- guest side -------------------------------------------------------------------------
    def tx_guest_cycles(self, burst: Burst) -> float:
        """vCPU cycles of the driver's transmit of one burst (exits included).

        The doorbell is rung only when the backend is idle: a busy backend polls the ring."""
        exits = self.tx_exits(burst.packets, 0 if self._tx_busy else 1)
        self.exits += exits
        return self.params.guest_tx.cycles(burst.packets, burst.payload_bytes, 0) + \
            exits * self.params.exit_cycles

    def guest_send(self, burst: Burst) -> None:
        """The guest driver posts a burst (after its cycles were paid on the vCPU)."""
        if self.tx_ring.offer(burst) is not None and not self._tx_busy:
            self._tx_pass()

    def _tx_pass(self) -> None:
        batch = self.tx_ring.claim_all()
        if not batch:
            self._tx_busy = False
            return
        self._tx_busy = True
        packets = sum(b.packets for b in batch)
        n_bytes = sum(b.payload_bytes for b in batch)
        cycles = (self.params.backend_tx.cycles(packets, n_bytes)
                  + self._backend_extra(packets, n_bytes))
        self.backend.then(cycles, lambda: self._tx_done(batch))

    def _tx_done(self, batch: list[Burst]) -> None:
        self.tx_ring.release(batch)
        for burst in batch:
            self._transmit(burst)
        self._tx_pass()

    # -- receive side -----------------------------------------------------------------------
    def rx_backend_cycles(self, packets: int, n_bytes: int) -> float:
        """Hypervisor cycles to copy ``packets`` into the guest and post a virtual interrupt."""
        return self.params.backend_rx.cycles(packets, n_bytes)

    def deliver(self, batch: list[Burst]) -> None:
        """From the vswitch (handler context already paid): fill the ring, interrupt the guest."""
        accepted = [a for a in (self.rx_ring.offer(b) for b in batch) if a is not None]
        if accepted and not self._rx_polling:
            self.virtual_interrupts += 1
            self._rx_poll(is_interrupt=True)

    def _rx_poll(self, is_interrupt: bool) -> None:
        batch = self.rx_ring.claim_all()
        if not batch:
            self._rx_polling = False
            return
        self._rx_polling = True
        packets = sum(b.packets for b in batch)
        n_bytes = sum(b.payload_bytes for b in batch)
        exits = self.rx_exits(packets, int(is_interrupt))
        self.exits += exits
        cycles = (self.params.guest_rx.cycles(packets, n_bytes, int(is_interrupt))
                  + exits * self.params.exit_cycles + self.guest_rx_cost(batch))
        self.vcpu.then(cycles, lambda: self._rx_done(batch))

    def _rx_done(self, batch: list[Burst]) -> None:
        self.rx_ring.release(batch)
        self.guest_rx_deliver(batch)
        self._rx_poll(is_interrupt=False)


class Vmxnet2(VirtualNic):
    """Enhanced vmxnet: shared-memory rings; one doorbell exit per transmit batch, none on receive
    (the virtual interrupt is injected without a register access); TSO and jumbo frames."""

    def tx_exits(self, packets: int, batches: int) -> float:
        return float(batches)

    def rx_exits(self, packets: int, interrupts: int) -> float:
        return 0.0


DEVICES: dict[str, type[VirtualNic]] = {"vmxnet2": Vmxnet2}


def make_vnic(env: simpy.Environment, name: str, params: VnicParams, stats: Stats,
              **wiring) -> VirtualNic:
    return DEVICES[params.model](env, name, params, stats, **wiring)
