"""NIC teaming: several physical ports as one vswitch uplink, and the physical switch they
are cabled to.

Modelled (``host.teaming``; ``docs/teaming.md``):
- a team of ``ports_per_team`` ports serves one vswitch (``TeamedVswitch``); each member has
  its own TX rings, pending-TX queue, RX queues and vectors, as a port alone does;
- the vswitch picks the member a packet leaves on by ``policy`` (``Team.member``), as vSphere's
  load-balancing policies do (vSphere Networking guide, "Load Balancing Algorithms Available
  for Virtual Switches"): ``port_id`` (originating virtual port: the VM's port id modulo the
  members, fixed for the VM), ``mac_hash`` (source MAC: the last byte of the vNIC's MAC modulo
  the members, fixed for the VM; the MACs are drawn at random, as vCenter assigns them, so
  two VMs can share a member) or ``ip_hash`` (the last octets of source and destination IP,
  XORed, modulo the members: per IP pair, so one TCP flow stays on one member and the sessions
  of one VM spread only over distinct peer addresses, ``peer_addresses``). The hash policies
  compute the member per packet and pay ``uplink_hash`` cycles for it (term ``teaming``);
  ``port_id`` computes it once per VM;
- the peer side is a physical switch (``TeamSwitch``): the members are cabled to it and it has
  one link to the peer host, of ``peer_link_gbps`` (0: the team's aggregate rate). Towards the
  host it sends a VM's traffic down the member the VM's MAC was learned on (``port_id``,
  ``mac_hash``), or by the same IP hash (``ip_hash``: a static EtherChannel hashing on source
  and destination IP like the vswitch). Each egress link has a buffer of
  ``switch_buffer_bytes``; a frame that finds it full is dropped (``switch_buffer_full``).
Left out: failover and beacon probing, load-based teaming (vDS "physical NIC load"), LACP
negotiation, a switch hash that differs from the vswitch's, multicast over a team (refused by
``sim.config``), the switch's own forwarding latency: a burst is stored and forwarded whole,
so each egress link adds one burst's serialisation at its rate and its propagation.
Units: bytes, Gbps, cycles; time in seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import simpy

from models import costs, units
from models.base import Burst, CycleCost, Ring, Stats, check, fit
from models.nic import NicPort, TxBacklog
from models.vswitch import Vswitch, VswitchParams
from models.wire import Link, LinkParams

POLICIES = ("port_id", "mac_hash", "ip_hash")
HASH_POLICIES = ("mac_hash", "ip_hash")  # computed per packet
# The address plan of the model (assumed): VM v's IPv4 address ends in VM_OCTET_BASE + v, the
# peer's k-th address in PEER_OCTET_BASE + k (only the last octets enter the IP hash).
VM_OCTET_BASE = 100
PEER_OCTET_BASE = 1


@dataclass(frozen=True)
class TeamingParams:
    """``ports_per_team`` 1: no teaming (one vswitch and one peer per port, cabled directly)."""

    ports_per_team: int = 1
    policy: str = "port_id"
    # cycles to pick the member of one packet under a hash policy (VM's TX context)
    uplink_hash: CycleCost = field(default_factory=lambda: CycleCost(0.0, 50.0, 0.0))
    peer_link_gbps: float = 0.0      # the switch's link to the peer; 0: the team's aggregate
    switch_buffer_bytes: int = 1048576  # per egress link of the physical switch
    peer_addresses: int = 1          # IP addresses the peer answers on; session s uses s mod it
    provenance: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        check(1 <= self.ports_per_team <= 8, "ports_per_team", self.ports_per_team,
              "in 1..8 (1: no teaming)")
        check(self.policy in POLICIES, "policy", self.policy, f"one of {POLICIES}")
        check(self.peer_link_gbps >= 0, "peer_link_gbps", self.peer_link_gbps,
              ">= 0 (0: the team's aggregate rate)")
        check(self.switch_buffer_bytes >= 9216, "switch_buffer_bytes", self.switch_buffer_bytes,
              ">= 9216 (one jumbo frame)")
        check(1 <= self.peer_addresses <= 255, "peer_addresses", self.peer_addresses,
              "in 1..255")

    @property
    def enabled(self) -> bool:
        return self.ports_per_team > 1


class Team:
    """Which member each VM's packets use: ``member(vm, flow)``, the same answer for the
    vswitch (transmit) and the physical switch (receive)."""

    def __init__(self, params: TeamingParams, vm_ids: list[int], sessions_per_vm: int,
                 mac_low_byte: Callable[[int], int]):
        """``vm_ids``: the VMs on this team's vswitch in port order (port id = position);
        ``mac_low_byte(vm)``: the last byte of the VM's vNIC MAC."""
        self.params, self.k = params, params.ports_per_team
        self.sessions = sessions_per_vm
        self._fixed = {}
        for port_id, vm in enumerate(vm_ids):
            self._fixed[vm] = (port_id % self.k if params.policy == "port_id"
                               else mac_low_byte(vm) % self.k)

    def member(self, vm: int, flow: int) -> int:
        if self.params.policy != "ip_hash":
            return self._fixed[vm]
        vm_octet = (VM_OCTET_BASE + vm) % 256
        peer_octet = PEER_OCTET_BASE + (flow % self.sessions) % self.params.peer_addresses
        return (vm_octet ^ peer_octet) % self.k

    @property
    def per_packet(self) -> bool:
        return self.params.policy in HASH_POLICIES


class TeamedVswitch(Vswitch):
    """A vswitch whose uplink is a team: a pending-TX queue per member, the member picked by
    ``team.member`` for each burst leaving through the uplink."""

    def __init__(self, name: str, params: VswitchParams, members: list[NicPort], stats: Stats,
                 team: Team, hash_cost: CycleCost, *, mss_bytes: int = 1448):
        super().__init__(name, params, members[0], stats, mss_bytes=mss_bytes)
        self.members, self.team, self.hash_cost = members, team, hash_cost
        self.backlogs = [self._backlog] + [
            TxBacklog(Ring(f"{name}.pending_tx{m}", params.pending_tx_limit_packets, stats,
                           unit="packets", drop_reason="pending_tx_full"), members[m])
            for m in range(1, len(members))]
        self.pendings = [b.ring for b in self.backlogs]

    def member_of(self, burst: Burst) -> int:
        return self.team.member(burst.src, burst.flow)

    def pending_of(self, burst: Burst) -> Ring:
        return self.pendings[self.member_of(burst)]

    def charges(self, direction: str, uplink: bool = True,
                sort: bool = False) -> list[costs.Charge]:
        out = super().charges(direction, uplink, sort)
        if direction == "tx" and uplink and self.team.per_packet:
            out.append(costs.Charge.of(costs.TEAMING, self.hash_cost))
        return out

    def tx_terms(self, batch: list[Burst], driver_terms=lambda p, b: {}) -> dict:
        terms = super().tx_terms(batch, driver_terms)
        if self.team.per_packet:
            up = [b for b in batch if not self.is_local(b)]
            if up:
                costs.add(terms, costs.TEAMING, self.hash_cost.cycles(
                    sum(b.packets for b in up), sum(b.payload_bytes for b in up)))
        return terms

    def transmit(self, burst: Burst, context=None) -> None:
        if self.is_local(burst):
            super().transmit(burst, context)
            return
        self.backlogs[self.member_of(burst)].send(self.vtep.encap(burst))


class TeamSwitch:
    """The physical switch between a team's members and the peer host: an egress link towards
    the peer and one towards each member, each with a tail-drop buffer."""

    def __init__(self, env: simpy.Environment, name: str, params: TeamingParams,
                 members: list[NicPort], peer_nic: NicPort, team: Team, stats: Stats):
        self.env, self.name, self.params, self.team = env, name, params, team
        self.members = members
        member_link = members[0].params.link
        self.to_peer = Link(env, f"{name}.to_peer", peer_nic.params.link, stats)
        self.to_member = [Link(env, f"{name}.to_{nic.name}", member_link, stats)
                          for nic in members]
        self.to_peer.deliver = peer_nic.receive
        for nic, link in zip(members, self.to_member):
            nic.tx_link.deliver = self.from_host
            link.deliver = nic.receive
        peer_nic.tx_link.deliver = self.from_peer

    def member_of(self, burst: Burst) -> int:
        """Where the switch sends a burst for VM ``burst.dst``: the member its MAC was learned
        on, or (IP hash) the member the hash of its IP pair gives."""
        return self.team.member(burst.dst, burst.flow)

    def from_host(self, burst: Burst) -> None:
        self._forward(self.to_peer, burst)

    def from_peer(self, burst: Burst) -> None:
        self._forward(self.to_member[self.member_of(burst)], burst)

    def _forward(self, link: Link, burst: Burst) -> None:
        """Store the burst in the egress buffer (what fits, frame by frame) and book it."""
        backlog = max(0.0, link.free_at_s - self.env.now) * units.gbps_to_bytes_per_s(
            link.params.line_rate_gbps)
        kept = fit(burst, self.params.switch_buffer_bytes - backlog, burst.wire_bytes,
                   _wire_bytes, link.stats, "switch_buffer_full")
        if kept is not None:
            link.transmit(kept)


def _wire_bytes(burst: Burst) -> int:
    return burst.wire_bytes


def peer_link(params: TeamingParams, member: LinkParams) -> LinkParams:
    """The switch's link to the peer: ``peer_link_gbps``, or the team's aggregate rate."""
    rate = params.peer_link_gbps or member.line_rate_gbps * params.ports_per_team
    return replace(member, line_rate_gbps=rate)
