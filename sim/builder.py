"""Turns a ``Config`` into a runnable model: places contexts on cores and wires the data path.

::

    VM vCPU --vNIC TX ring--> VM net context (backend + vswitch + uplink driver)
        --pending TX--> NIC TX ring --wire--> peer NIC --> peer softirq / apps
    peer --wire--> NIC RX ring --coalescing--> handler on irq_core (driver + vswitch + backend)
        --vNIC RX ring--> virtual interrupt --> VM vCPU (driver + TCP + recv)

Placement (DESIGN: contexts with affinity): ``sim.placement`` (``host.placement``: pinned,
spread, numa_io). Pinned: cores are handed out in order, skipping the NIC's vector core while
others are free: VM i's vCPUs, then its networking context; the interrupt vector sits on
``host.irq_core`` (000 pins the VM and the vector to adjoining cores). With more contexts than
cores they share cores and pay the world-switch cost. Every context gets its NUMA home node(s)
and numa_io starts its monitor (``sim.placement.make_plan``, ``start_numa_io``).
Teaming (``host.teaming``, ``models.teaming``): ports grouped into teams, one vswitch per
team and a physical switch between the team and one peer (``_build_teams``).
PCIe: ports are grouped into cards of ``host.ports_per_card``, each with one ``PcieLink``.
Randomness: one ``SeedSequence(seed)`` per run; each component draws from its own stream keyed
by (replication, component name), so adding a component shifts nobody else's numbers.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace

import numpy as np
import simpy

from models import units
from models.base import Stats
from models.cpu import Context, Cpu
from models.guest import Vm
from models.hypervisor import HypervisorRx
from models.nic import NicPort
from models.numa import NumaIoScheduler
from models.pcie import PcieLink
from models.polling import PollingContext
from models.peer import PeerHost
from models.teaming import Team, TeamedVswitch, TeamSwitch, peer_link
from models.vnic import VirtualNic, is_direct, make_vnic
from models.vnic.direct import DIRECT, owned_queues, port_params
from models.vswitch import Vswitch
from models.vxlan import Vtep, inner_mtu_bytes
from models.workloads import WORKLOADS
from models.workloads.base import Workload
from sim.config import Config
from sim.placement import Plan, make_plan, start_numa_io, vector_name, vm_context_names


def stream(seed: int, replication: int, name: str) -> np.random.Generator:
    """The random stream of component ``name`` in ``replication``: stable across processes."""
    key = zlib.crc32(name.encode())
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(replication, key)))


@dataclass
class Model:
    """Everything one replication built, for the runner and the recorder."""

    cfg: Config
    env: simpy.Environment
    stats: Stats
    cpu: Cpu
    nics: list[NicPort] = field(default_factory=list)
    vswitches: list[Vswitch] = field(default_factory=list)
    peers: list[PeerHost] = field(default_factory=list)
    vms: list[Vm] = field(default_factory=list)
    vnics: list[VirtualNic] = field(default_factory=list)
    hv_rx: list[HypervisorRx] = field(default_factory=list)  # per port: driver, LRO, vswitch
    contexts: list[Context] = field(default_factory=list)
    workload: Workload | None = None
    cards: list[PcieLink] = field(default_factory=list)  # one PCIe link per NIC card
    numa_io: NumaIoScheduler | None = None
    prefix: str = ""  # of the host's component names: "" for the host under test
    remote: "Model | None" = None  # topology.kind=remote_host: the partner VMs' host
    teams: list[Team] = field(default_factory=list)          # per vswitch, with teaming only
    switches: list[TeamSwitch] = field(default_factory=list)  # per team: the physical switch

    def port_of(self, vm: int) -> int:
        """The NIC port of VM ``vm`` (``models.topology``); with teaming, the port of its first
        flow (every flow's, but with IP-hash teaming: ``port_of_flow``)."""
        if self.teams:
            return self.port_of_flow(vm, vm * self.cfg.workload.sessions_per_vm)
        return self.cfg.topology.port_of(vm, self.cfg.workload.vms, len(self.nics))

    def team_of(self, vm: int) -> int:
        """The vswitch (and peer) of VM ``vm``: its team, or its port without teaming."""
        return vm % len(self.vswitches) if self.teams else self.port_of(vm)

    def port_of_flow(self, vm: int, flow: int) -> int:
        """The NIC port flow ``flow`` of VM ``vm`` leaves and arrives on."""
        if not self.teams:
            return self.port_of(vm)
        t = self.team_of(vm)
        return t * self.cfg.host.teaming.ports_per_team + self.teams[t].member(vm, flow)

    def vswitch_of(self, vm: int) -> Vswitch:
        return self.vswitches[self.team_of(vm)]

    def peer_of(self, vm: int) -> PeerHost:
        return self.peers[self.team_of(vm)]

    def hosts(self) -> list[Model]:
        """The virtualized hosts: this one, and the remote host if there is one."""
        return [self] if self.remote is None else [self, self.remote]


def build(cfg: Config, replication: int = 0, declare_only: bool = False) -> Model:
    """The model of ``cfg``'s replication ``replication``. ``declare_only``: a model that is
    read, never run (the fluid engine, ``sim.fluid``): a workload that can
    (``Workload.DECLARES``) opens its flows without their TCP state and starts no process
    (``models.workloads.base.declare_connection``); every component, context and placement is
    the same as in a model built to run."""
    env = simpy.Environment()
    stats = Stats()
    rng = lambda name: stream(cfg.run.seed, replication, name)  # noqa: E731
    quantum_s = units.us_to_s(cfg.hypervisor.sched_quantum_us)  # the scheduler's time slice
    model = Model(cfg, env, stats, Cpu(env, cfg.host.cpu, cfg.host.numa, quantum_s))
    topo, n = cfg.topology, cfg.workload.vms
    plan = make_plan(cfg)
    _build_host(model, plan, rng, range(topo.host_vms(n)), native_peers=not topo.vm_partner)
    model.numa_io = start_numa_io(model, plan)
    if topo.kind == "remote_host":  # the same host again, its VMs the partners n .. 2n-1
        remote = Model(cfg, env, stats, Cpu(env, cfg.host.cpu, cfg.host.numa, quantum_s),
                       prefix="remote.")
        _build_host(remote, plan, rng, range(n, 2 * n), native_peers=False)
        for a, b in zip(model.nics, remote.nics):
            _wire_cable(a, b)
        model.remote = remote
        partners = remote.vms
    elif topo.vm_partner:
        for a, b in topo.cables(len(model.nics)):
            _wire_cable(model.nics[a], model.nics[b])
        partners = model.vms[n:]
    else:
        partners = [model.peer_of(i) for i in range(n)]
    mss = _mss(cfg)
    seg_max = {"vm": _seg_max(model.vnics[0].tso and cfg.nic.tso, cfg, mss)}
    seg_max["peer"] = seg_max["vm"] if topo.vm_partner else _seg_max(cfg.nic.tso, cfg, mss)
    kind = WORKLOADS[cfg.workload.kind]
    model.workload = kind(env, cfg.workload, model.vms[:n], partners, mss_bytes=mss,
                          seg_max=seg_max, rng=rng("workload"),
                          **({"declare_only": True} if declare_only and kind.DECLARES else {}))
    model.workload.attach_network(model.vswitch_of, stats)
    return model


def _mss(cfg: Config) -> int:
    """The guests' MSS: with VXLAN their MTU leaves room for the tunnel."""
    return units.mss_bytes(inner_mtu_bytes(cfg.hypervisor.vswitch.vxlan, cfg.nic.link.mtu_bytes),
                           cfg.tcp.timestamps)


def _build_host(model: Model, plan: Plan, rng, vms: range, native_peers: bool) -> None:
    """One virtualized host into ``model``: its PCIe cards, NIC ports with a vswitch each (and,
    with ``native_peers``, a native client cabled to each port), the VMs ``vms`` and the RX
    vectors. A remote host's contexts take the slots of the plan's VMs ``0, 1, ...`` in turn
    (the same layout as the host under test)."""
    cfg, env, stats, pre = model.cfg, model.env, model.stats, model.prefix
    vxlan = cfg.hypervisor.vswitch.vxlan
    mss = _mss(cfg)
    model.cards = [PcieLink(env, f"{pre}card{c}", cfg.pcie, node=cfg.host.card_node(c))
                   for c in range(cfg.host.n_cards)]
    direct = is_direct(cfg.vnic.model)  # the guest drives the NIC: no vswitch path, no vectors
    nic_params = port_params(_nic_params(cfg), cfg.vnic.model, cfg.workload.vms)
    for p in range(cfg.host.nic_ports):
        nic = NicPort(env, f"{pre}nic{p}", nic_params, stats,
                      rss_salt=int(rng(f"{pre}nic{p}.rss").integers(2**31)),
                      pcie=model.cards[p // cfg.host.ports_per_card],
                      rss_to_vnic=cfg.hypervisor.features.vnic_rss and cfg.vnic.rx_queues > 1
                      and cfg.hypervisor.features.netqueue)
        model.nics.append(nic)
        if cfg.host.teaming.enabled:
            continue  # the teams' vswitches and peers follow (``_build_teams``)
        model.vswitches.append(Vswitch(f"{pre}vswitch{p}", cfg.hypervisor.vswitch, nic, stats,
                                       mss_bytes=mss))
        if native_peers:
            peer = PeerHost(env, f"peer{p}", cfg.peer, cfg.nic, cfg.tcp, stats, rng)
            peer.vtep = Vtep(vxlan, mss) if vxlan.enabled else None
            model.peers.append(peer)
            _wire_cable(nic, peer.nic)
    if cfg.host.teaming.enabled:
        _build_teams(model, mss, rng)
    for k, i in enumerate(vms):
        (_build_direct_vm if direct else _build_vm)(model, i, plan, rng, slot_vm=k)
    for p, nic in enumerate([] if direct else model.nics):
        vectors = [_context(model, plan, vector_name(p, k), rng, poll=cfg.hypervisor.poll_mode)
                   for k in range(cfg.nic.rx_queues)]
        model.contexts.extend(vectors)
        _wire_receive(model, p, vectors)


def _build_teams(model: Model, mss: int, rng) -> None:
    """Teaming: one vswitch per team of ``ports_per_team`` consecutive ports, and behind
    the team a physical switch with one link to a peer of the team's rate
    (``models.teaming``). A VM's MAC (for ``mac_hash``) is drawn from its own stream."""
    cfg, env, stats = model.cfg, model.env, model.stats
    tp, vxlan = cfg.host.teaming, cfg.hypervisor.vswitch.vxlan
    k = tp.ports_per_team
    n_teams = cfg.host.nic_ports // k
    peer_nic = replace(cfg.nic, link=peer_link(tp, cfg.nic.link))
    for t in range(n_teams):
        members = model.nics[t * k:(t + 1) * k]
        team = Team(tp, [i for i in range(cfg.workload.vms) if i % n_teams == t],
                    cfg.workload.sessions_per_vm,
                    lambda vm: int(rng(f"vm{vm}.mac").integers(256)))
        model.teams.append(team)
        model.vswitches.append(TeamedVswitch(f"vswitch{t}", cfg.hypervisor.vswitch, members,
                                             stats, team, tp.uplink_hash, mss_bytes=mss))
        peer = PeerHost(env, f"peer{t}", cfg.peer, peer_nic, cfg.tcp, stats, rng)
        peer.vtep = Vtep(vxlan, mss) if vxlan.enabled else None
        model.peers.append(peer)
        model.switches.append(TeamSwitch(env, f"switch{t}", tp, members, peer.nic, team, stats))


def _seg_max(tso: bool, cfg: Config, mss: int) -> int:
    """Largest segment a side hands its device: a TSO segment, or one MSS without TSO."""
    hdr = units.tcp_header_bytes(cfg.tcp.timestamps)
    return units.tso_segment_payload_bytes(cfg.nic.tso_max_bytes, mss, hdr) if tso else mss


def _wire_cable(host_nic: NicPort, peer_nic: NicPort) -> None:
    host_nic.tx_link.deliver = peer_nic.receive
    peer_nic.tx_link.deliver = host_nic.receive


def _context(model: Model, plan: Plan, name: str, rng, slot: str | None = None,
             poll: bool = False) -> Context:
    """Context ``name`` (with the host's prefix) on the core and with the home the plan gives
    the context ``slot`` (default: ``name``); ``poll``: a poll-mode thread
    (``models.polling``)."""
    slot = name if slot is None else slot
    name = model.prefix + name if name.startswith("nic") else name
    cls = PollingContext if poll else Context
    return cls(model.env, name, model.cpu.core(plan.core(slot)), rng=rng(name),
               home=plan.home(slot))


def _nic_params(cfg: Config):
    """The NIC as the host drives it: a poll-mode vswitch takes frames as they land (no
    interrupt moderation: a zero static timer), otherwise as configured."""
    if not cfg.hypervisor.poll_mode:
        return cfg.nic
    return replace(cfg.nic, coalescing=replace(cfg.nic.coalescing, mode="static", timer_us=0.0))


def _build_vm(model: Model, i: int, plan: Plan, rng, slot_vm: int) -> None:
    """VM ``i``, its contexts placed where the plan puts VM ``slot_vm``'s."""
    cfg, env = model.cfg, model.env
    vswitch = model.vswitch_of(i)
    vcpu_names, net_names = vm_context_names(cfg, i)  # nets: one per vNIC TX queue served
    slots = [*vm_context_names(cfg, slot_vm)[0], *vm_context_names(cfg, slot_vm)[1]]
    hv = cfg.hypervisor
    ctxs = [_context(model, plan, name, rng, slot, poll=hv.poll_mode and name in net_names)
            for name, slot in zip([*vcpu_names, *net_names], slots)]
    vcpus, nets = ctxs[:len(vcpu_names)], ctxs[len(vcpu_names):]
    vm = Vm(env, i, cfg.guest, cfg.tcp, vcpus)
    # Latency sensitivity (vSphere 5.5): no virtual interrupt coalescing nor LRO into the vNIC,
    # and the vCPU never halts (its core is its own), so no wake-up; the core is the plan's.
    ls = cfg.guest.latency_sensitive
    vnic = make_vnic(env, f"vm{i}.vnic", replace(cfg.vnic, rx_interrupt_delay_us=0.0, lro=False)
                     if ls else cfg.vnic, model.stats, backends=nets, vcpus=vcpus,
                     transmit=vswitch.transmit,
                     exit_cycles=hv.exit_cycles(cfg.guest.virtualization),
                     wakeup_cycles=0.0 if ls else hv.vcpu_halt_wakeup_cycles,
                     backend_extra_terms=lambda batch: vswitch.tx_terms(
                         batch, hv.tx_driver_terms))
    vm.attach(vnic)
    vswitch.connect(i, vnic)
    model.vms.append(vm)
    model.vnics.append(vnic)
    model.contexts.extend([*vcpus, *nets])


def _build_direct_vm(model: Model, i: int, plan: Plan, rng, slot_vm: int) -> None:
    """VM ``i`` (or, on bare metal, the host's OS) driving its NIC port or VF itself
    (``models.vnic.direct``): its vCPUs only, no networking context; placed, and given the
    VF, of VM ``slot_vm`` (the same on a remote host)."""
    cfg, env = model.cfg, model.env
    nic = model.nics[model.port_of(i)]
    vcpu_names, _ = vm_context_names(cfg, i)
    vcpus = [_context(model, plan, name, rng, slot)
             for name, slot in zip(vcpu_names, vm_context_names(cfg, slot_vm)[0])]
    hv = cfg.hypervisor
    vm = Vm(env, i, cfg.guest, cfg.tcp, vcpus)
    vnic = DIRECT[cfg.vnic.model](
        env, f"vm{i}.{cfg.vnic.model}", cfg.vnic, model.stats, nic=nic, vcpus=vcpus,
        queues=owned_queues(cfg.vnic.model, slot_vm, nic.params),
        exit_cycles=hv.exit_cycles(cfg.guest.virtualization),
        wakeup_cycles=0.0 if cfg.guest.latency_sensitive else hv.vcpu_halt_wakeup_cycles,
        posted_interrupts=hv.features.posted_interrupts, bare_metal=hv.bare_metal)
    vm.attach(vnic)
    model.vms.append(vm)
    model.vnics.append(vnic)
    model.contexts.extend(vcpus)


def _wire_receive(model: Model, port: int, vectors: list[Context]) -> None:
    """Each RX vector pays driver (+ software LRO) + vswitch + each destination vNIC's backend
    and the NUMA penalty of copying into its memory (``models.hypervisor.HypervisorRx``)."""
    rx = HypervisorRx(model.cfg.hypervisor,
                      model.vswitches[port // model.cfg.host.teaming.ports_per_team],
                      model.nics[port])
    model.hv_rx.append(rx)
    model.nics[port].wire_rx(vectors, rx.cost, rx.deliver, prepare=rx.prepare)
