"""Turns a ``Config`` into a runnable model: places contexts on cores and wires the data path.

::

    VM vCPU --vNIC TX ring--> VM net context (backend + vswitch + uplink driver)
        --pending TX--> NIC TX ring --wire--> peer NIC --> peer softirq / apps
    peer --wire--> NIC RX ring --coalescing--> handler on irq_core (driver + vswitch + backend)
        --vNIC RX ring--> virtual interrupt --> VM vCPU (driver + TCP + recv)

Placement (DESIGN: contexts with affinity): cores are handed out in order, skipping the NIC's
vector core while others are free: VM i's vCPUs, then its networking context; the interrupt
vector sits on ``host.irq_core`` (000 pins the VM and the vector to adjoining cores). With more
contexts than cores they share cores and pay the world-switch cost.
Randomness: one ``SeedSequence(seed)`` per run; each component draws from its own stream keyed
by (replication, component name), so adding a component shifts nobody else's numbers.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import simpy

from models import units
from models.base import Burst, Stats
from models.cpu import Context, Cpu
from models.guest import Vm
from models.nic import NicPort
from models.peer import PEER_DST, PeerHost
from models.vnic import VirtualNic, make_vnic
from models.vswitch import Vswitch
from models.workloads import WORKLOADS, Workload
from sim.config import Config


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
    contexts: list[Context] = field(default_factory=list)
    workload: Workload | None = None

    def port_of(self, vm: int) -> int:
        return vm % len(self.nics)


class _Placer:
    """Hands out host cores: the vector cores are set aside (from ``irq_core`` on); VM contexts
    take the other cores in order, then every core round again (sharing, with world switches)."""

    def __init__(self, n_cores: int, irq_core: int, n_vectors: int):
        self.n_cores = n_cores
        self.vector_cores = [(irq_core + j) % n_cores for j in range(n_vectors)]
        reserved = set(self.vector_cores)
        self._free = [c for c in range(n_cores) if c not in reserved]
        self._i = 0

    def next(self) -> int:
        i, self._i = self._i, self._i + 1
        return self._free[i] if i < len(self._free) else (i - len(self._free)) % self.n_cores


def build(cfg: Config, replication: int = 0) -> Model:
    env = simpy.Environment()
    stats = Stats()
    rng = lambda name: stream(cfg.run.seed, replication, name)  # noqa: E731
    model = Model(cfg, env, stats, Cpu(env, cfg.host.cpu))
    ports = cfg.host.nic_ports
    placer = _Placer(len(model.cpu.cores), cfg.host.irq_core, ports * cfg.nic.rx_queues)
    for p in range(ports):
        nic = NicPort(env, f"nic{p}", cfg.nic, stats,
                      rss_salt=int(rng(f"nic{p}.rss").integers(2**31)))
        model.nics.append(nic)
        model.vswitches.append(Vswitch(f"vswitch{p}", cfg.hypervisor.vswitch, nic, stats))
        peer = PeerHost(env, f"peer{p}", cfg.peer, cfg.nic, cfg.tcp, stats, rng(f"peer{p}"))
        model.peers.append(peer)
        _wire_cable(nic, peer.nic)
    for i in range(cfg.workload.vms):
        _build_vm(model, i, placer, rng)
    for p, nic in enumerate(model.nics):
        vectors = [Context(env, f"{nic.name}.rxq{k}.irq",
                           model.cpu.core(placer.vector_cores[p * cfg.nic.rx_queues + k]),
                           rng=rng(f"{nic.name}.rxq{k}.irq"))
                   for k in range(cfg.nic.rx_queues)]
        model.contexts.extend(vectors)
        _wire_receive(model, p, vectors)

    mss = units.mss_bytes(cfg.nic.link.mtu_bytes, cfg.tcp.timestamps)
    seg_max = {"vm": _seg_max(model.vnics[0].tso and cfg.nic.tso, cfg, mss),
               "peer": _seg_max(cfg.nic.tso, cfg, mss)}
    model.workload = WORKLOADS[cfg.workload.kind](env, cfg.workload, model.vms,
                               [model.peers[model.port_of(i)] for i in range(len(model.vms))],
                               mss_bytes=mss, seg_max=seg_max, rng=rng("workload"))
    return model


def _seg_max(tso: bool, cfg: Config, mss: int) -> int:
    return cfg.nic.tso_max_bytes if tso else mss


def _wire_cable(host_nic: NicPort, peer_nic: NicPort) -> None:
    host_nic.tx_link.deliver = peer_nic.receive
    peer_nic.tx_link.deliver = host_nic.receive


def _build_vm(model: Model, i: int, placer: _Placer, rng) -> None:
    cfg, env = model.cfg, model.env
    vswitch = model.vswitches[model.port_of(i)]
    vcpus = [Context(env, f"vm{i}.vcpu{k}", model.cpu.core(placer.next()), rng=rng(f"vm{i}.vcpu{k}"))
             for k in range(cfg.guest.vcpus)]
    net = Context(env, f"vm{i}.net", model.cpu.core(placer.next()), rng=rng(f"vm{i}.net"))
    vm = Vm(env, i, cfg.guest, cfg.tcp, vcpus)
    driver_tx = cfg.hypervisor.driver_tx
    vnic = make_vnic(env, f"vm{i}.vnic", cfg.vnic, model.stats, backend=net, vcpu=vcpus[0],
                     transmit=vswitch.transmit,
                     backend_extra_cycles=lambda p, b: vswitch.cycles(p, b)
                     + driver_tx.cycles(p, b, 0))
    vm.attach(vnic)
    vswitch.connect(i, vnic.deliver)
    model.vms.append(vm)
    model.vnics.append(vnic)
    model.contexts.extend([*vcpus, net])


def _wire_receive(model: Model, port: int, vectors: list[Context]) -> None:
    """Each RX vector pays driver + vswitch + each destination vNIC's backend cost."""
    hv, vnics, vswitch = model.cfg.hypervisor, model.vnics, model.vswitches[port]

    def cost(batch: list[Burst], is_interrupt: bool) -> float:
        packets = sum(b.packets for b in batch)
        n_bytes = sum(b.payload_bytes for b in batch)
        cycles = hv.driver_rx.cycles(packets, n_bytes, int(is_interrupt))
        cycles += vswitch.cycles(packets, n_bytes)
        for dst in {b.dst for b in batch}:
            if dst != PEER_DST and 0 <= dst < len(vnics):
                part = [b for b in batch if b.dst == dst]
                cycles += vnics[dst].rx_backend_cycles(sum(b.packets for b in part),
                                                       sum(b.payload_bytes for b in part))
        return cycles

    model.nics[port].wire_rx(vectors, cost, vswitch.receive)
