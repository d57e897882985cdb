"""Multicast replication in the virtual switch: one copy per member port, in one context or split.

::

    default (one context)                          splitRxMode
    RX vector context:                             RX vector context:
      driver + vswitch + for each member:            driver + vswitch + for each member:
        copy + vNIC backend  --> vNIC RX ring          hand-off --> member's split queue
                                                   member's own context (its vNIC backend):
                                                     copy + vNIC backend --> vNIC RX ring

Modelled: a group is a destination id below the peer's (``group_dst(g)`` = -2 - g); receivers
join a group on their vswitch (the guest's IGMP join programming the vNIC's multicast filter).
By default every copy of every packet is made in the context that took the packets from the NIC
(ESX before 5.0, and 5.0 without splitRxMode): copies/s = members x packet rate, all on one
core, so past some member count that context saturates, the NIC ring fills and every member
loses the same packets. That context writes each copy into its member's memory: a member whose
memory is on another NUMA node than the context's core costs the remote penalty per copy
(``numa_copy``, the host's ``numa.remote_per_packet_cycles`` per copy: the stores are posted,
and the member's reader pays per byte to fetch the copy from the context's node, as on the
unicast receive path, ``models.hypervisor``). With ``split_rx_mode`` (``ethernetX.emuRxMode = 1``, a vmxnet3 feature
of 5.0, set here for every port of the vswitch) the receiving context only hands each member a
reference (``handoff``: queue it and wake the member's context) and the member's own context --
its vNIC backend, the VM's networking context -- makes the copy and fills the vNIC ring; the
hand-offs are the "slight increase in CPU consumption" of 003. The split queue is bounded
(``split_queue_packets``; full: ``split_queue_full``). The member's copy sits on its context's
node, where the member's reader fetches it (``rx_data_nodes``, as default mode's copies sit on the
receiving context's node).
Granularity: one burst per member per pass, never an event per copy.
Left out: IGMP snooping state and timeouts, multicast from a VM (the sender is the peer),
splitRxMode on only some ports, broadcast.
Units: cycles, packets, bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models import costs
from models.base import Burst, CycleCost, Ring, RingPoller, Stats, check

FIRST_GROUP_DST = -2  # Burst.dst of group 0; -1 is the peer, >= 0 are VMs


def group_dst(group: int) -> int:
    return FIRST_GROUP_DST - group


def is_group(dst: int) -> bool:
    return dst <= FIRST_GROUP_DST


@dataclass(frozen=True)
class ReplicationParams:
    """Config: ``hypervisor.vswitch.multicast``. Costs are priors, not fitted."""

    split_rx_mode: bool = False
    # Per copy: a packet handle and header clone, the port's filter check (~800 cycles) and the
    # payload copied into a private buffer (1 cycle/byte, the copy rate of the guests' stacks).
    copy: CycleCost = field(default_factory=lambda: CycleCost(0.0, 800.0, 1.0))
    # splitRxMode, per member and pass: enqueue references (~150/packet) and wake the member's
    # context (~500: an IPI-less wakeup of a kernel world).
    handoff: CycleCost = field(default_factory=lambda: CycleCost(500.0, 150.0, 0.0))
    split_queue_packets: int = 512
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(self.split_queue_packets >= 1, "split_queue_packets", self.split_queue_packets,
              ">= 1")


class Member:
    """One port in one group: the vNIC it delivers to and, in split mode, its queue."""

    def __init__(self, port_id: int, vnic, queue: Ring | None):
        self.port_id, self.vnic, self.queue = port_id, vnic, queue
        # splitRxMode's per-vNIC context: the vNIC's (first) backend, the VM's networking context
        self.context = vnic.net_context if queue is not None else None
        # Packets this member gets a copy of, in both modes the copies the vswitch makes: made at
        # once (default) or accepted into the split queue for the member's context to make (a
        # split-queue drop is no copy). Drops further on (the vNIC ring) count there.
        self.copies = 0
        self.poller: RingPoller | None = None  # split mode: the member's context drains queue

    @property
    def split_drops(self) -> int:
        return self.queue.stats.total_dropped_frames() if self.queue is not None else 0


class Replicator:
    """The vswitch's multicast table and copy engine.

    ``vnic`` objects need ``deliver(batch)``, ``rx_backend_cycles(packets, bytes)``,
    ``rx_data_nodes`` (flow -> node where its received data sit) and, for split mode,
    ``net_context`` (the context that runs the member's copies).
    """

    def __init__(self, name: str, params: ReplicationParams, stats: Stats):
        self.name, self.params, self.stats = name, params, stats
        self.groups: dict[int, list[Member]] = {}
        self.copies = 0

    def join(self, dst: int, port_id: int, vnic) -> Member:
        check(is_group(dst), "group dst", dst, f"<= {FIRST_GROUP_DST}")
        queue = None
        if self.params.split_rx_mode:
            queue = Ring(f"{self.name}.g{FIRST_GROUP_DST - dst}.port{port_id}.split_queue",
                         self.params.split_queue_packets, self.stats, unit="packets",
                         drop_reason="split_queue_full")
        member = Member(port_id, vnic, queue)
        if queue is not None:  # the member's context copies what its queue holds, then fills
            member.poller = RingPoller(queue, member.context,   # its vNIC
                                       lambda batch, _irq: self._split_cost(member, batch),
                                       lambda batch: self._split_deliver(member, batch))
        self.groups.setdefault(dst, []).append(member)
        return member

    def charges(self) -> list[costs.Charge]:
        """The receiving context's replication work per member (``sim.path``)."""
        p = self.params
        if p.split_rx_mode:
            return [costs.Charge.of(costs.REPLICATION, p.handoff, per="member and pass")]
        return [costs.Charge.of(costs.REPLICATION, p.copy, unit="copy")]

    def numa_charges(self, vnic, context) -> list[costs.Charge]:
        """Default mode: the receiving ``context``'s NUMA penalty per copy written into
        ``vnic``'s memory (none when that memory is on the context's node, or in split mode)
        (``sim.path``, and the fluid engine through it)."""
        if self.params.split_rx_mode:
            return []
        home = vnic.memory_home
        per_copy = context.remote_penalty_cycles(1, 0, home)
        if not per_copy:
            return []
        return [costs.Charge(costs.NUMA_COPY, 0.0, per_copy, 0.0, unit="copy")]

    def _by_group(self, batch: list[Burst]) -> dict[int, list[Burst]]:
        out: dict[int, list[Burst]] = {}
        for b in batch:
            if is_group(b.dst):
                out.setdefault(b.dst, []).append(b)
        return out

    def terms(self, batch: list[Burst], context=None) -> dict:
        """Cycles by term the receiving context spends on the group packets of ``batch``: the
        hand-offs (split mode) or the copies and each member's vNIC backend work, and, when
        ``context`` (the receiving context) is given, the NUMA penalty of each copy written into
        a member's memory on another node (``numa_copy``)."""
        p, terms = self.params, {}
        for dst, bursts in self._by_group(batch).items():
            members = self.groups.get(dst, ())
            packets = sum(b.packets for b in bursts)
            n_bytes = sum(b.payload_bytes for b in bursts)
            if p.split_rx_mode:
                costs.add(terms, costs.REPLICATION, len(members) * p.handoff.cycles(packets, 0))
            else:
                for m in members:
                    costs.merge(terms, self._copy_terms(m, packets, n_bytes))
                    if context is not None:  # per copy written: stores are posted
                        costs.add(terms, costs.NUMA_COPY, context.remote_penalty_cycles(
                            packets, 0, m.vnic.memory_home))
        return terms

    def _copy_terms(self, member: Member, packets: int, n_bytes: int) -> dict:
        return {costs.REPLICATION: self.params.copy.cycles(packets, n_bytes),
                costs.BACKEND_RX: member.vnic.rx_backend_cycles(packets, n_bytes)}

    def deliver(self, bursts: list[Burst], node=None) -> None:
        """After the receiving context paid: a copy of each group burst to each member.
        ``node``: the receiving context's NUMA node, where default mode's copies now sit
        (the member's reader pays to fetch them from there: ``rx_data_nodes``)."""
        for dst, group_bursts in self._by_group(bursts).items():
            for m in self.groups.get(dst, ()):
                if m.queue is None and node is not None:
                    for b in group_bursts:
                        m.vnic.rx_data_nodes[b.flow] = node
                copies = [b._copy(dst=m.port_id) for b in group_bursts]
                if m.queue is not None:  # split mode: count what the member's queue accepts
                    copies = [a for a in map(m.queue.offer, copies) if a is not None]
                n = sum(b.packets for b in copies)
                m.copies += n
                self.copies += n
                if m.queue is None:
                    m.vnic.deliver(copies)
                else:
                    m.poller.kick()

    def _split_deliver(self, m: Member, batch: list[Burst]) -> None:
        """splitRxMode, after the member's context paid: its copies now sit on the node of
        that context's core (the reader pays to fetch them from there: ``rx_data_nodes``)."""
        node = m.context.core.node
        for b in batch:
            m.vnic.rx_data_nodes[b.flow] = node
        m.vnic.deliver(batch)

    def _split_cost(self, m: Member, batch: list[Burst]) -> tuple[dict, int, int]:
        """splitRxMode, one pass of the member's context: copy and vNIC backend work."""
        packets = sum(b.packets for b in batch)
        n_bytes = sum(b.payload_bytes for b in batch)
        return self._copy_terms(m, packets, n_bytes), packets, n_bytes
