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
- ``VirtioNet`` (KVM): virtio-net over shared virtqueues (the same paravirtual shape as
  vmxnet: descriptors in shared memory, a kick per batch). A kick is a write to the queue's
  notify address that KVM turns into an ioeventfd signal (an exit, priced by the hypervisor);
  the guest skips it while the backend is still processing the queue (the backend keeps
  VRING_USED_F_NO_NOTIFY set, or with VIRTIO_RING_F_EVENT_IDX leaves avail_event behind), and
  never rings it to a poll-mode backend (a vhost-user PMD never re-enables notification).
  Interrupts come in through irqfd (an injection; exitless with posted interrupts/APICv, so
  no register access leaves the guest on receive). Several queue pairs (virtio-net
  multiqueue), guest TSO/GSO (host TSO) and GSO/GRO aggregates into the guest (guest TSO with
  mergeable RX buffers, taken as LRO aggregates). ``virtio_net_user`` is the same device with
  a vhost-user backend (a userspace vswitch's PMD thread: ``models.polling``).
Units: as ``models.vnic.base``.
"""
from __future__ import annotations

import simpy

from models import costs
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
    """vmxnet3: multi-queue (up to 8 each way, as the Linux and Windows drivers), LRO, TSO.
    Rings up to 4096 (the Linux driver's VMXNET3_RX_RING_MAX_SIZE / TX_RING_MAX_SIZE)."""

    max_queues = 8
    lro_capable = True
    # rx_gso_size stays False: the Linux driver of the RHEL6 era (vmxnet3_rq_rx_complete, still
    # in Linux 3.6) hands an LRO aggregate to netif_receive_skb without gso_size


class VirtioNet(VirtualNic):
    """virtio-net with a vhost-net backend (a kernel thread per queue pair)."""

    max_queues = 8           # queue pairs used per vNIC here (virtio-net multiqueue)
    max_ring_slots = 1024    # QEMU rx_queue_size / tx_queue_size: 256 by default, at most 1024
    lro_capable = True       # guest TSO/GSO packets with mergeable RX buffers
    # virtio_net_hdr carries gso_size with each GSO packet into the guest (virtio 1.x spec,
    # 5.1.6.4; Linux drivers/net/virtio_net.c receive_buf -> skb_shinfo(skb)->gso_size)
    rx_gso_size = True
    mtu_ceiling_bytes = 9000  # jumbo frames as the vswitch carries them (VIRTIO_NET_F_MTU)

    def tx_doorbells(self, queue) -> int:
        """No kick while the backend works the queue; none ever to a poll-mode backend."""
        if getattr(queue.backend, "poll_mode", False):
            return 0
        return super().tx_doorbells(queue)

    def guest_charges(self, direction: str) -> list[costs.Charge]:
        """As the base's, without the kick's exits when a poll-mode backend serves the queues
        (the declared path then shows none, as the DES charges none)."""
        out = super().guest_charges(direction)
        if direction == "tx" and getattr(self.txq[0].backend, "poll_mode", False):
            out = [c for c in out if c.term != costs.EXITS]
        return out


class VirtioNetUser(VirtioNet):
    """virtio-net with a vhost-user backend (a userspace vswitch's poll-mode thread)."""


DEVICES.update({"e1000": E1000, "vmxnet2": Vmxnet2, "vmxnet3": Vmxnet3,
                "virtio_net": VirtioNet, "virtio_net_user": VirtioNetUser})


def make_vnic(env: simpy.Environment, name: str, params: VnicParams, stats: Stats,
              **wiring) -> VirtualNic:
    return DEVICES[params.model](env, name, params, stats, **wiring)
