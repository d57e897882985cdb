"""The virtual devices: e1000 (emulated), enhanced vmxnet (vmxnet2), vmxnet3 (paravirtual).

Each class states what the device can do; its costs and register-access counts are parameters
(``configs/vnic/<model>.yaml``), priced per access by the hypervisor for the guest's mode.

- ``E1000``: the hypervisor emulates an Intel 82545EM in full, so an unmodified driver touches
  device registers as it would on hardware: the transmit tail register for every packet, the
  interrupt cause/mask registers for every interrupt, the receive tail as buffers are returned
  (002, DEV-why: "each transmit or receive call causes access to a number of virtual device
  registers"). It cannot know that the backend is already polling, so it never skips a
  doorbell. One queue each way. TSO and jumbo frames are parameters (``tso``,
  ``max_mtu_bytes``): in ESX 3.5 both were enhanced-vmxnet features (000: "support for jumbo
  frames and TSO for Enhanced VMXNET devices"; 002 lists them as what enhanced vmxnet adds), so
  the e1000 profile turns them off; later hypervisors' e1000 does TSO (override ``vnic.tso``).
- ``Vmxnet2`` (enhanced vmxnet): shared-memory rings, a doorbell per batch and none while the
  backend polls, no register access on receive; TSO and jumbo frames; one queue each way.
- ``Vmxnet3``: the same paravirtual design with several TX and RX queues into one vNIC (each
  RX queue interrupts its own vCPU; several hardware queues feed them only where the
  hypervisor supports it, vSphere 6.0, claim V6-vnic-rx) and LRO aggregates into the guest.
Units: as ``models.vnic.base``.
"""
from __future__ import annotations

import simpy

from models.base import Stats
from models.vnic.base import DEVICES, VirtualNic, VnicParams


class E1000(VirtualNic):
    """Emulated Intel e1000: every register access of the unmodified driver leaves the guest."""

    doorbell_suppression = False
    tso_capable = True           # the 82545EM has TSO; whether the emulation offers it is a param
    mtu_ceiling_bytes = 16110    # the 82545EM's largest frame (16128) less Ethernet overhead


class Vmxnet2(VirtualNic):
    """Enhanced vmxnet: shared rings, a doorbell per batch, TSO and jumbo frames."""


class Vmxnet3(VirtualNic):
    """vmxnet3: multi-queue (up to 8 each way, as the Linux and Windows drivers), LRO, TSO."""

    max_queues = 8
    lro_capable = True


DEVICES.update({"e1000": E1000, "vmxnet2": Vmxnet2, "vmxnet3": Vmxnet3})


def make_vnic(env: simpy.Environment, name: str, params: VnicParams, stats: Stats,
              **wiring) -> VirtualNic:
    return DEVICES[params.model](env, name, params, stats, **wiring)
