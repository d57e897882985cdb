"""VXLAN: the hypervisor's tunnel endpoint (VTEP) on the uplink, with or without NIC offload.

Modelled:
- Wire: every frame that leaves or enters the host's uplink carries ``units.VXLAN_OVERHEAD_BYTES``
  (50) more: outer IPv4 20 + outer UDP 8 + VXLAN 8 + the inner Ethernet header 14 carried as
  payload. Encapsulation adds them to the burst's per-frame ``header_bytes``, so wire time, ring
  bytes and PCIe bytes all see them through the one framing formula (``units.burst_wire_bytes``).
- MTU: the inner (guest) MTU is ``inner_mtu_bytes`` when the physical MTU (``nic.link.mtu_bytes``)
  has room for the 50 bytes, else it shrinks to physical - 50. VMware requires a physical MTU of
  at least 1600 for VXLAN; the 003 experiments set 1600 and keep the guest at 1500 (MSS 1448), so
  only the wire overhead and the CPU cost differ from the no-VXLAN runs.
- CPU, charged where the vswitch runs (the VM's networking context on transmit, the RX vector's
  context on receive): ``encap`` per packet handed to the uplink (outer headers, VTEP table
  lookup) and ``decap`` per packet received. With ``offload`` the NIC understands the
  encapsulation: it still segments a 64KB TSO packet and fills the inner and outer checksums,
  and verifies checksums on receive. Without it the host segments in software before the uplink
  (``sw_segment`` per frame and per byte: building each frame's headers and the inner TCP
  checksum) and the uplink then gets one packet per frame (more descriptors, pending-TX slots);
  on receive the host verifies the inner checksum (``sw_rx_checksum`` per byte).
- The peer is the other VTEP: its frames are encapsulated (and its costs charged) the same way,
  and its LRO merges them after decapsulation (``peer.lro_tunnelled``). The host's hardware LRO
  leaves tunnelled frames alone unless ``nic.lro_tunnelled``.
Left out: the VMDq sorter and RSS seeing only outer headers without offload (all tunnelled
traffic from one VTEP would share a queue), ARP/multicast
learning of the VTEP table, IPv6 underlays.
Units: bytes, cycles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from models import costs, units
from models.base import Burst, CycleCost, check


@dataclass(frozen=True)
class VxlanParams:
    """Config: ``hypervisor.vswitch.vxlan``. Costs are priors, not fitted."""

    enabled: bool = False
    offload: bool = True            # the NIC does TSO and checksums on encapsulated traffic
    inner_mtu_bytes: int = 1500     # the guests' MTU (capped at physical MTU - 50)
    # Priors: outer headers from a per-VTEP template plus a hash lookup of the destination VTEP
    # ~300-500 cycles; stripping them and checking the VNI ~300.
    encap: CycleCost = field(default_factory=lambda: CycleCost(0.0, 400.0, 0.0))
    decap: CycleCost = field(default_factory=lambda: CycleCost(0.0, 300.0, 0.0))
    # Without offload: per frame, copying the headers and fixing lengths/sequence numbers (~400);
    # per byte, the inner TCP checksum (~0.5 cycle/byte with 2012 csum_partial).
    sw_segment: CycleCost = field(default_factory=lambda: CycleCost(0.0, 400.0, 0.5))
    sw_rx_checksum: CycleCost = field(default_factory=lambda: CycleCost(0.0, 0.0, 0.5))
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(576 <= self.inner_mtu_bytes <= 9000, "inner_mtu_bytes", self.inner_mtu_bytes,
              "in 576..9000")


def inner_mtu_bytes(params: VxlanParams, physical_mtu_bytes: int) -> int:
    """The MTU the guests use: the physical one without VXLAN, else room left for the tunnel."""
    if not params.enabled:
        return physical_mtu_bytes
    return min(params.inner_mtu_bytes, physical_mtu_bytes - units.VXLAN_OVERHEAD_BYTES)


def charges(params: VxlanParams, direction: str) -> list[costs.Charge]:
    """A tunnel endpoint's work on ``direction`` 'tx' (encapsulation, per packet handed to the
    uplink; without offload software segmentation per frame) or 'rx' (decapsulation and,
    without offload, the inner checksum, per frame), as ``Vtep.tx_cycles`` / ``rx_cycles``
    price them (``sim.path``); none when the tunnel is off."""
    if not params.enabled:
        return []
    if direction == "tx":
        out = [costs.Charge.of(costs.VXLAN, params.encap)]
        if not params.offload:
            out.append(costs.Charge.of(costs.VXLAN, params.sw_segment, unit="frame"))
        return out
    out = [costs.Charge.of(costs.VXLAN, params.decap, unit="frame")]
    if not params.offload:
        out.append(costs.Charge.of(costs.VXLAN, params.sw_rx_checksum, unit="frame"))
    return out


class Vtep:
    """Encapsulates what leaves through the uplink, decapsulates what arrives, prices both.

    ``mss_bytes`` (the inner MSS) turns a batch's payload bytes into frames for the software
    segmentation cost: the vNIC backend's cost hook sees a batch's packets and bytes, not its
    bursts, so frames are taken as max(packets, ceil(bytes / MSS)) -- exact for full TSO
    segments and for single-frame packets, at most one frame per packet short otherwise.
    """

    def __init__(self, params: VxlanParams, mss_bytes: int):
        check(mss_bytes >= 1, "mss_bytes", mss_bytes, ">= 1")
        self.params, self.mss_bytes = params, mss_bytes
        self.encapsulated_frames = 0
        self.decapsulated_frames = 0

    @property
    def enabled(self) -> bool:
        return self.params.enabled

    def encap(self, burst: Burst) -> Burst:
        """The burst as the uplink carries it: 50 more header bytes per frame; without offload
        a TSO segment arrives at the NIC already cut into one packet per frame."""
        if not self.params.enabled:
            return burst
        self.encapsulated_frames += burst.frames
        if burst.encap_bytes:
            return burst
        changes = {"header_bytes": burst.header_bytes + units.VXLAN_OVERHEAD_BYTES,
                   "encap_bytes": units.VXLAN_OVERHEAD_BYTES}
        if not self.params.offload and burst.packets != burst.frames:
            changes["packets"] = burst.frames
        return burst._copy(**changes)

    def decap(self, burst: Burst) -> Burst:
        """The inner burst handed to the vswitch's ports."""
        if not burst.encap_bytes:
            return burst
        self.decapsulated_frames += burst.frames
        return burst._copy(header_bytes=burst.header_bytes - burst.encap_bytes, encap_bytes=0)

    def uplink_packets(self, packets: int, n_bytes: int) -> int:
        """Packets the uplink gets for a batch of ``packets`` packets of ``n_bytes`` payload:
        the same without software segmentation, else one per frame (what ``encap`` does to
        each burst, estimated from the batch's counts as the class docstring says)."""
        p = self.params
        if not p.enabled or p.offload or packets <= 0:
            return packets
        return max(packets, math.ceil(n_bytes / self.mss_bytes))

    def tx_cycles(self, packets: int, n_bytes: int) -> float:
        """Cycles to encapsulate ``packets`` packets of ``n_bytes`` payload (one batch)."""
        p = self.params
        if not p.enabled or packets <= 0:
            return 0.0
        if p.offload:  # the NIC replicates the outer headers into each frame it cuts
            return p.encap.cycles(packets, n_bytes, 0)
        frames = self.uplink_packets(packets, n_bytes)
        return p.encap.cycles(frames, n_bytes, 0) + p.sw_segment.cycles(frames, n_bytes, 0)

    def rx_batch_cycles(self, batch: list[Burst]) -> float:
        """Decapsulation of the tunnelled bursts of a received ``batch``, per frame: hardware
        LRO does not merge tunnelled frames (left out), so each one is decapsulated."""
        tunnelled = [b for b in batch if b.encap_bytes]
        if not tunnelled:
            return 0.0
        return self.rx_cycles(sum(b.frames for b in tunnelled),
                              sum(b.payload_bytes for b in tunnelled))

    def rx_cycles(self, packets: int, n_bytes: int) -> float:
        """Cycles to decapsulate ``packets`` received packets of ``n_bytes`` payload."""
        p = self.params
        if not p.enabled or packets <= 0:
            return 0.0
        cycles = p.decap.cycles(packets, n_bytes, 0)
        if not p.offload:
            cycles += p.sw_rx_checksum.cycles(packets, n_bytes, 0)
        return cycles
