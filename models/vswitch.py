"""The hypervisor's virtual switch: per-packet and per-byte switching cost, uplink pending queue.

Modelled: a layer-2 switch with one port per vNIC (keyed by the VM index carried in ``Burst.dst``)
and one uplink to a physical NIC port. Its cycles are charged on whichever networking context
runs it (the VM's transmit context, or the NIC's receive handler); ``cycles()`` gives them.
Transmit to the uplink goes straight into the NIC TX ring when it has room; otherwise into the
pending-TX queue of ``pending_tx_limit_packets`` (200 in ESX by default, 500 in 000's multi-VM
runs); a packet that finds that queue full is dropped (reason ``pending_tx_full``). Freed NIC
slots drain the pending queue in FIFO order.
Software sort (``sort``, term ``sw_sort``): frames that come in on an RX queue the NIC did not
dedicate to one vNIC port (the one queue without NetQueue, VMDq's default queue, any RSS queue of
a switch with several ports) are classified by destination MAC in software, per packet, on the
handler's core; a VMDq queue's frames all go to the port its filter names, and skip it (004:
"the hypervisor's virtual switch merely reroutes the packets"). ``HypervisorRx`` decides.
Multicast: bursts addressed to a group (``models.replication``) are copied to every member
port, in the receiving context or split across the members' contexts (``multicast``).
VXLAN: with ``vxlan.enabled`` the uplink side is a tunnel endpoint (``models.vxlan``): bursts
leaving through the uplink are encapsulated, bursts arriving are decapsulated, and both cost
cycles in the context that runs the vswitch (``tx_terms``, ``rx_extra_terms``).
VM-to-VM on one vswitch (``topology.kind=same_vswitch``): a burst for another local port never
reaches the uplink; the sender's networking context pays the destination backend's receive
cost. Several uplinks (NIC teaming): ``models.teaming.TeamedVswitch``.
Left out: VLANs, the software segmentation of a TSO segment for a vNIC that takes no large
packets beyond its per-frame backend cost.
Units: cycles, packets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from models import costs
from models.base import Burst, CycleCost, Ring, Stats, check
from models.nic import NicPort, TxBacklog
from models.replication import ReplicationParams, Replicator, is_group
from models import vxlan
from models.vxlan import Vtep, VxlanParams


@dataclass(frozen=True)
class VswitchParams:
    cost: CycleCost = field(default_factory=lambda: CycleCost(0.0, 600.0, 0.0))
    # Classifying a frame by destination when its RX queue did not (see the module docstring).
    sort: CycleCost = field(default_factory=lambda: CycleCost(0.0, 350.0, 0.0))
    pending_tx_limit_packets: int = 200
    multicast: ReplicationParams = field(default_factory=ReplicationParams)
    vxlan: VxlanParams = field(default_factory=VxlanParams)
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(self.pending_tx_limit_packets >= 1, "pending_tx_limit_packets",
              self.pending_tx_limit_packets, ">= 1")


class Vswitch:
    """Switches bursts between vNIC ports and one uplink NIC port."""

    def __init__(self, name: str, params: VswitchParams, uplink: NicPort, stats: Stats, *,
                 mss_bytes: int = 1448):
        """``mss_bytes``: the guests' MSS (prices VXLAN software segmentation per frame)."""
        self.name, self.params, self.uplink = name, params, uplink
        self.replicator = Replicator(f"{name}.mcast", params.multicast, stats)
        self.vtep = Vtep(params.vxlan, mss_bytes)
        self.ports: dict[int, object] = {}  # port id -> its vNIC (``connect``)
        self.pending = Ring(f"{name}.pending_tx", params.pending_tx_limit_packets, stats,
                            unit="packets", drop_reason="pending_tx_full")
        self._backlog = TxBacklog(self.pending, uplink)

    def connect(self, port_id: int, vnic) -> None:
        """Port ``port_id`` leads to ``vnic``: an object with ``deliver(batch)`` and
        ``rx_backend_cycles(packets, n_bytes)`` (``models.vnic.VirtualNic``)."""
        self.ports[port_id] = vnic

    def pending_of(self, burst: Burst) -> Ring:
        """The pending-TX queue ``burst`` would wait in (one uplink: the only one)."""
        return self.pending

    def join(self, group_dst: int, port_id: int, vnic):
        """Port ``port_id`` (its vNIC ``vnic``) receives the group ``group_dst``."""
        return self.replicator.join(group_dst, port_id, vnic)

    def cycles(self, packets: int, n_bytes: int) -> float:
        """Switching cost of ``packets`` packets of ``n_bytes`` in all (one invocation)."""
        return self.params.cost.cycles(packets, n_bytes)

    def sort_cycles(self, packets: int, n_bytes: int) -> float:
        """Software sort of ``packets`` packets a NIC queue did not sort (one invocation)."""
        return self.params.sort.cycles(packets, n_bytes)

    def charges(self, direction: str, uplink: bool = True,
                sort: bool = False) -> list[costs.Charge]:
        """Switching and (with VXLAN) tunnel work on ``direction`` 'tx' (to the uplink) or
        'rx' (from it), as ``tx_terms`` / ``rx_extra_terms`` price them (``sim.path``);
        ``uplink=False``: between two local ports (switching only); ``sort``: received on a
        queue the NIC did not dedicate to one port (``sw_sort``)."""
        out = [costs.Charge.of(costs.VSWITCH, self.params.cost)]
        if sort:
            out.append(costs.Charge.of(costs.SW_SORT, self.params.sort))
        if uplink:
            out.extend(vxlan.charges(self.params.vxlan, direction))
        return out

    def is_local(self, burst: Burst) -> bool:
        """Whether ``burst`` goes to another vNIC port of this switch (not out of the uplink)."""
        return burst.dst >= 0 and burst.dst in self.ports

    def tx_terms(self, batch: list[Burst],
                 driver_terms: Callable[[int, int], dict] = lambda p, b: {}) -> dict:
        """What a vNIC's backend context pays, by term, to send ``batch``: switching for every
        packet; for the packets leaving through the uplink only, encapsulation and the uplink
        driver's ``driver_terms(packets handed to it, bytes)`` (one per frame when VXLAN
        segments in software, ``Vtep.uplink_packets``)."""
        packets = n_bytes = up_packets = up_bytes = 0
        for b in batch:
            packets += b.packets
            n_bytes += b.payload_bytes
            if not self.is_local(b):
                up_packets += b.packets
                up_bytes += b.payload_bytes
        terms = costs.add({}, costs.VSWITCH, self.cycles(packets, n_bytes))
        if up_packets:
            costs.add(terms, costs.VXLAN, self.vtep.tx_cycles(up_packets, up_bytes))
            costs.merge(terms, driver_terms(self.vtep.uplink_packets(up_packets, up_bytes),
                                            up_bytes))
        return terms

    def rx_extra_terms(self, batch: list[Burst], context=None) -> dict:
        """Beyond ``cycles``, what the receiving ``context`` pays for ``batch`` as the NIC
        delivered it: decapsulation and multicast copies (or hand-offs in split mode)."""
        terms = self.replicator.terms(batch, context)
        return costs.add(terms, costs.VXLAN, self.vtep.rx_batch_cycles(batch))

    def transmit(self, burst: Burst, context=None) -> None:
        """From a vNIC: to another local port, or out of the uplink. ``context`` is the one
        running this pass (the sender's networking context): a local delivery first pays the
        destination vNIC's backend receive cost there, as the uplink's RX handler does for
        traffic from outside."""
        if self.is_local(burst):
            vnic = self.ports[burst.dst]
            # A TSO segment stays whole into a vNIC that takes large packets (vmxnet3 with a
            # Linux guest: LRO aggregates); any other is handed one frame per packet.
            burst = burst if vnic.takes_aggregates else burst.as_frames()
            if context is not None:
                context.then({costs.BACKEND_RX: vnic.rx_backend_cycles(
                    burst.packets, burst.payload_bytes)}, lambda: vnic.deliver([burst]),
                    packets=burst.packets, n_bytes=burst.payload_bytes)
            else:
                vnic.deliver([burst])
            return
        self._backlog.send(self.vtep.encap(burst))

    def receive(self, batch: list[Burst], node=None) -> None:
        """From the uplink: hand each vNIC port its part of the batch, in arrival order
        (``node``: the receiving context's NUMA node, for the multicast copies it made)."""
        by_port: dict[int, list[Burst]] = {}
        groups: list[Burst] = []
        for burst in batch:
            burst = self.vtep.decap(burst)
            if is_group(burst.dst):
                groups.append(burst)
            else:
                by_port.setdefault(burst.dst, []).append(burst)
        for port_id, bursts in by_port.items():
            self.ports[port_id].deliver(bursts)
        if groups:
            self.replicator.deliver(groups, node)
