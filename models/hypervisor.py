"""Hypervisor profile: the uplink NIC driver's costs and the virtual switch it runs.

Modelled: the cycles the hypervisor's physical-NIC driver spends per interrupt, per packet and per
byte on receive (``driver_rx``, charged in the NIC's handler context together with the vswitch and
the vNIC backend) and per packet on transmit (``driver_tx``, charged in the VM's networking
context with the vswitch and the backend), and the vswitch parameters.
Left out (next models): generations' feature sets, software LRO, native vs Linux-compat drivers,
several networking contexts per vNIC.
Units: cycles.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models.base import CycleCost
from models.vswitch import VswitchParams


@dataclass(frozen=True)
class HypervisorParams:
    name: str = "esx35"
    driver_rx: CycleCost = field(default_factory=lambda: CycleCost(3000.0, 700.0, 0.0))
    driver_tx: CycleCost = field(default_factory=lambda: CycleCost(0.0, 700.0, 0.0))
    vswitch: VswitchParams = field(default_factory=VswitchParams)
