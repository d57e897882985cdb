"""Who talks to whom: the other end of each VM's connections (``topology.kind``).

- ``native_peer`` (the sources' set-up): each VM talks to a native client host behind its NIC
  port (``models.peer.PeerHost``).
- ``same_vswitch``: each of the ``workload.vms`` VMs talks to a partner VM on the same vswitch
  of the same host. Nothing touches a NIC or a wire: the sender's networking context switches
  the burst and pays the partner vNIC's backend receive cost, then the partner's vCPU takes it
  (``models.vswitch.Vswitch.transmit``).
- ``cross_vswitch``: the partner VM sits on another vswitch of the same host (port ``2k + 1``
  for a VM on port ``2k``); traffic leaves through one uplink and comes back in through the
  other, both cabled to one physical switch (modelled as a cable: the switch's own latency is
  left out).
- ``remote_host``: the partner VM runs on a second host built by the same builder from the same
  config (its own cores, NICs, vswitches, vNICs, contexts): VM-to-VM across the wire,
  symmetric. Host port ``p`` is cabled to the remote host's port ``p``.

The partner of VM ``i`` (of ``n = workload.vms``) is the VM with index and endpoint id
``n + i``: endpoint ids (``Burst.src``/``dst``) are unique over the whole simulated system, so a
vswitch delivers locally exactly the bursts addressed to one of its own ports.
A native host mode for the host under test is a hypervisor profile (``docs/topologies.md``).
"""
from __future__ import annotations

from dataclasses import dataclass

from models.base import check

KINDS = ("native_peer", "same_vswitch", "cross_vswitch", "remote_host")
VM_PARTNERS = ("same_vswitch", "cross_vswitch", "remote_host")  # the partner is a VM


@dataclass(frozen=True)
class TopologyParams:
    kind: str = "native_peer"

    def __post_init__(self):
        check(self.kind in KINDS, "kind", self.kind, f"one of {KINDS}")

    @property
    def vm_partner(self) -> bool:
        return self.kind in VM_PARTNERS

    def host_vms(self, n: int) -> int:
        """VMs on the host under test for ``n`` measured VMs (their partners too, when they
        run on the same host)."""
        return 2 * n if self.kind in ("same_vswitch", "cross_vswitch") else n

    def port_of(self, vm: int, n: int, ports: int) -> int:
        """The NIC port (and vswitch) of VM ``vm`` of the host under test, ``n`` measured VMs.
        ``remote_host``'s partners (``vm >= n``) sit on port ``(vm - n) mod ports`` of their
        own host."""
        if self.kind == "native_peer":
            return vm % ports
        i, partner = vm % n, vm >= n
        if self.kind == "cross_vswitch":
            return 2 * (i % (ports // 2)) + int(partner)
        return i % ports

    def cables(self, ports: int) -> list[tuple[int, int]]:
        """``cross_vswitch``: the port pairs one physical switch joins."""
        return [(2 * k, 2 * k + 1) for k in range(ports // 2)] \
            if self.kind == "cross_vswitch" else []
