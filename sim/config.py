"""The configuration schema and its validation: a plain mapping in, frozen dataclasses out.

The schema is the tree of parameter dataclasses the models define (``models.*Params``) under one
``Config``. ``to_config`` walks a mapping (Hydra's composed config, or a dict in a notebook)
against it: unknown keys, wrong types and out-of-range values raise ``ConfigError`` with a
one-line message naming the key, the value and what is allowed. Cross-field rules (socket buffer
>= one MSS, MTU within what the vNIC supports) are checked here after the fields. Models never
see a DictConfig.

One source: parameter values live in ``configs/``; a dataclass default equals the value of the
default composition (``Config()`` is the default run; ``tests/config/test_one_source.py``).

Provenance: every cost (a ``CycleCost`` field, a number whose name ends in ``_cycles``, and
``jitter_cv``: ``cost_fields``) is tagged in the ``provenance`` mapping of the parameters that
hold it, ``{field: "TAG: reason"}`` with TAG one of ``PROVENANCE_TAGS`` (source: a published
figure, cite it; derived: computed from other figures, say how; assumed: a prior, say what it
rests on; fitted: say on which targets). ``_build`` checks a mapping that is present (keys are
that section's costs, tags known, a reason given); that every cost of every config file has one
is ``tests/config/test_provenance.py``'s check. Provenance is metadata: it never enters equality.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from models import units
from models.base import CycleCost, check
from models.cpu import CpuParams, NumaParams
from models.guest import GuestParams
from models.hypervisor import HypervisorParams
from models.nic import NicParams, tx_descriptors
from models.pcie import PcieParams
from models.peer import PeerParams
from models.tcp import TcpParams
from models.teaming import TeamingParams
from models.topology import TopologyParams
from models.vnic import VnicParams, is_direct
from models.vxlan import inner_mtu_bytes
from models.workloads import WorkloadParams
from sim.placement import POLICIES, vector_cores


class ConfigError(ValueError):
    """A configuration problem, reported to the user as one line."""


PROVENANCE_TAGS = ("source", "derived", "assumed", "fitted")

# Limits that keep a run finite and its model within memory (a bad value would otherwise look
# like a slow run): simulated seconds per window, cores per host, TCP sessions in all.
MAX_WINDOW_S = 1000.0
MAX_SOCKETS = 64
MAX_CORES = 256
MAX_SESSIONS = 4096

# The size estimate (``estimate_size``), checked before the model is built. Bytes per object of
# a built model, measured once with the real builder: tracemalloc around ``sim.builder.build``
# of the default experiment, one count varied at a time (1 -> 1001 sessions, 1 -> 401 VMs,
# 1 -> 64 ports, 4 -> 256 cores, 1 -> 8 vCPUs; 2026-11-23, CPython 3.11). A TCP_STREAM session
# (two sockets, their TCP state, the app) 6.5 KB; a TCP_RR session (two connections) 11.3 KB;
# a VM beyond its sessions (guest, vNIC, its networking context) 11.2 KB; a further context (a
# vCPU, a TX context, an RX queue's vector) 2.2 KB; a NIC port with its vswitch and peer host
# 28.8 KB; a core 1.0 KB; a latency sample 16 B. Ring descriptors are not preallocated
# (nic.rx_ring_slots=1000100 built in the same bytes as 100). A run holds its model plus what is
# in flight: 64 VMs x 64 sessions built 30 MB and ran at a high-water mark 54 MB over the bare
# process (x1.8), so ``RUN_FACTOR`` 3 leaves room. Build time (same runs): 0.41 ms per session.
BYTES_PER_SESSION = {"tcp_rr": 11300}  # any other workload kind: BYTES_PER_SESSION_DEFAULT
BYTES_PER_SESSION_DEFAULT = 6500
BYTES_PER_VM = 11200
BYTES_PER_CONTEXT = 2200
BYTES_PER_PORT = 28800
BYTES_PER_CORE = 1024
BYTES_PER_LATENCY_SAMPLE = 16
RUN_FACTOR = 3.0
MEMORY_SHARE = 0.5  # a run may use at most this share of the memory available
MEMORY_ENV = "VNETSIM_MEMORY_BYTES"  # overrides the memory the check takes as available


def cost_fields(cls) -> tuple[str, ...]:
    """The fields of parameter class ``cls`` that are costs and carry a provenance tag: every
    ``CycleCost``, every number whose name ends in ``_cycles``, and ``jitter_cv``."""
    hints = typing.get_type_hints(cls)
    return tuple(f.name for f in dataclasses.fields(cls)
                 if hints[f.name] is CycleCost or f.name == "jitter_cv"
                 or (f.name.endswith("_cycles") and hints[f.name] in (int, float)))


def _check_provenance(cls, provenance: Mapping[str, str], path: str) -> None:
    costs = cost_fields(cls)
    for key, text in provenance.items():
        full = f"{path}provenance.{key}"
        if key not in costs:
            raise ConfigError(f"unknown key '{full}': not a cost of "
                              f"'{path.rstrip('.') or 'the top level'}'; its costs: "
                              f"{', '.join(costs) or 'none'}")
        tag, sep, reason = text.partition(":")
        if not sep or tag.strip() not in PROVENANCE_TAGS or not reason.strip():
            raise ConfigError(f"{full}={text!r}: must be 'TAG: reason' with TAG one of "
                              f"{', '.join(PROVENANCE_TAGS)} and a reason after the colon")


@dataclass(frozen=True)
class MetaParams:
    """The experiment a run reproduces. Defaults: the default experiment's (e35_tx_single_vm)."""

    name: str = "e35_tx_single_vm"
    description: str = ("000: one 1-vCPU RHEL5 VM transmits over 10GbE, 5 sessions, 64KB "
                        "sockets, 16KB messages")
    source: str = "E35-tx-std"  # the claim ids or study this experiment reproduces


@dataclass(frozen=True)
class CalibrationParams:
    """The fitted values a run uses: ``calibration=<name>`` picks ``configs/calibration/<name>
    .yaml`` (written by ``python -m sim calibrate``; ``none``: the priors alone). A profile file
    reads a calibrated parameter as ``${oc.select:calibration.values.<profile>.<param>,<prior>}``,
    so a value the calibration does not give falls back on the prior, and a user's override of
    the profile's key wins over both. ``fitted_on``: the target ids of
    ``validation/targets.yaml`` the values were fitted on; ``residuals``: each training check's
    relative error after the fit."""

    name: str = "none"
    date: str = ""
    fitted_on: str = ""
    # Not compared: the values live on in the profile fields that read them (Config is hashed).
    values: dict[str, dict[str, float]] = field(default_factory=dict, compare=False)
    residuals: dict[str, float] = field(default_factory=dict, compare=False)


ENGINES = ("des", "fluid")
FLUID_KINDS = ("tcp_stream", "http", "udp_multicast", "tcp_rr", "ping")  # what sim/fluid.py solves


@dataclass(frozen=True)
class RunParams:
    seed: int = 1
    warmup_s: float = 0.1
    measure_s: float = 0.5
    replications: int = 3
    # des: bursts through SimPy (loss, latency, transients); fluid: the steady state solved
    # from the same declared path (sim/fluid.py; TCP_STREAM only so far)
    engine: str = "des"

    def __post_init__(self):
        check(self.engine in ENGINES, "engine", self.engine, f"one of {ENGINES}")
        check(self.seed >= 0, "seed", self.seed, ">= 0")
        check(0 <= self.warmup_s <= MAX_WINDOW_S, "warmup_s", self.warmup_s,
              f"in 0..{MAX_WINDOW_S:g} (simulated seconds)")
        check(0 < self.measure_s <= MAX_WINDOW_S, "measure_s", self.measure_s,
              f"> 0 and <= {MAX_WINDOW_S:g} (simulated seconds)")
        check(1 <= self.replications <= 1000, "replications", self.replications, "in 1..1000")


@dataclass(frozen=True)
class HostParams:
    """The server under test: its processors, its NIC ports, where the vectors run.

    Vector ``j`` (over all ports' RX queues, port-major) runs on core ``irq_core + j`` (mod the
    core count); VMs take the other cores in order. VM ``i`` uses port ``i mod nic_ports``.
    Ports are grouped into cards of ``ports_per_card`` (port ``p`` on card
    ``p // ports_per_card``), each card with its own PCIe link, on node ``card_node(c)``.
    ``placement``: pinned | spread | numa_io (``sim.placement``); NUMA I/O applies while a card's
    networking contexts use less than ``numa_io_threshold_pct`` of a core (0 = off), measured
    every ``numa_io_period_ms``. ``teaming``: ports grouped into teams of ``ports_per_team``
    (ports ``t*k .. t*k+k-1`` are team ``t``), one vswitch each (``models.teaming``); VM ``i``
    then uses team ``i mod (nic_ports / ports_per_team)``.
    """

    name: str = "dl580_g5"
    cpu: CpuParams = field(default_factory=CpuParams)
    numa: NumaParams = field(default_factory=NumaParams)
    irq_core: int = 1
    nic_ports: int = 1
    ports_per_card: int = 2
    placement: str = "pinned"
    numa_io_threshold_pct: float = 0.0
    numa_io_period_ms: float = 10.0
    teaming: TeamingParams = field(default_factory=TeamingParams)

    def __post_init__(self):
        _check_cores(self.cpu, "cpu.")
        check(1 <= self.nic_ports <= 64, "nic_ports", self.nic_ports, "in 1..64")
        k = self.teaming.ports_per_team
        check(self.nic_ports % k == 0, "nic_ports", self.nic_ports,
              f"a multiple of teaming.ports_per_team={k} (whole teams)")
        check(0 <= self.irq_core < self.cpu.n_cores, "irq_core", self.irq_core,
                 f"in 0..{self.cpu.n_cores - 1} (the host's cores)")
        check(1 <= self.ports_per_card <= 8, "ports_per_card", self.ports_per_card, "in 1..8")
        check(self.placement in POLICIES, "placement", self.placement, f"one of {POLICIES}")
        check(0 <= self.numa_io_threshold_pct <= 200, "numa_io_threshold_pct",
                 self.numa_io_threshold_pct, "in 0..200 (percent of one core)")
        check(self.numa_io_period_ms > 0, "numa_io_period_ms", self.numa_io_period_ms, "> 0")
        check(self.numa.card_node < self.cpu.sockets, "numa.card_node", self.numa.card_node,
                 f"in 0..{self.cpu.sockets - 1} (cpu.sockets={self.cpu.sockets})")

    @property
    def n_cards(self) -> int:
        return -(-self.nic_ports // self.ports_per_card)

    def card_node(self, card: int) -> int:
        """The NUMA node card ``card`` hangs off."""
        return self.numa.card_node_of(card, self.cpu.sockets)


@dataclass(frozen=True)
class Config:
    meta: MetaParams = field(default_factory=MetaParams)
    run: RunParams = field(default_factory=RunParams)
    host: HostParams = field(default_factory=HostParams)
    nic: NicParams = field(default_factory=NicParams)
    pcie: PcieParams = field(default_factory=PcieParams)
    hypervisor: HypervisorParams = field(default_factory=HypervisorParams)
    vnic: VnicParams = field(default_factory=VnicParams)
    guest: GuestParams = field(default_factory=GuestParams)
    peer: PeerParams = field(default_factory=PeerParams)
    tcp: TcpParams = field(default_factory=TcpParams)
    workload: WorkloadParams = field(default_factory=WorkloadParams)
    topology: TopologyParams = field(default_factory=TopologyParams)
    calibration: CalibrationParams = field(default_factory=CalibrationParams)
    report: bool = False  # also write report.html beside results.json (sim/report.py) [bool]


def _check_cores(cpu: CpuParams, path: str) -> None:
    """A host of real hardware: at most ``MAX_SOCKETS`` sockets and ``MAX_CORES`` cores."""
    check(cpu.sockets <= MAX_SOCKETS, f"{path}sockets", cpu.sockets, f"in 1..{MAX_SOCKETS}")
    most = MAX_CORES // cpu.sockets
    check(cpu.cores_per_socket <= most, f"{path}cores_per_socket", cpu.cores_per_socket,
          f"in 1..{most} ({cpu.sockets} sockets: at most {MAX_CORES} cores in all)")


def to_config(mapping: Mapping[str, Any], cross_checks: bool = True) -> Config:
    """Validate ``mapping`` against the schema and build the frozen ``Config``
    (``cross_checks=False``: each field on its own, not the rules between groups).

    ``nic.max_queues`` (each ``configs/nic/*.yaml`` states it: the queues per direction the
    card has) is a limit, not a model parameter: it is checked here and not kept."""
    max_queues = None
    nic = mapping.get("nic") if isinstance(mapping, Mapping) else None
    if isinstance(nic, Mapping) and "max_queues" in nic:
        max_queues = _convert(int, nic["max_queues"], "nic.max_queues")
        if max_queues < 1:
            raise ConfigError(f"nic.max_queues={max_queues}: must be >= 1")
        mapping = {**mapping, "nic": {k: v for k, v in nic.items() if k != "max_queues"}}
    max_vfs = 0  # ``nic.max_vfs``: SR-IOV virtual functions per port (a limit, like max_queues)
    nic = mapping.get("nic") if isinstance(mapping, Mapping) else None
    if isinstance(nic, Mapping) and "max_vfs" in nic:
        max_vfs = _convert(int, nic["max_vfs"], "nic.max_vfs")
        if max_vfs < 0:
            raise ConfigError(f"nic.max_vfs={max_vfs}: must be >= 0")
        mapping = {**mapping, "nic": {k: v for k, v in nic.items() if k != "max_vfs"}}
    cfg = _build(Config, mapping, "")
    if cross_checks:
        _cross_check(cfg)
        if max_queues is not None:
            _check_queues(cfg, max_queues)
        _check_direct(cfg, max_vfs)
    return cfg


def _check_direct(cfg: Config, max_vfs: int) -> None:
    """Direct devices (``models.vnic.direct``) and the native host: what the hypervisor, the
    NIC and the rest of the config must allow."""
    hv, feats, model = cfg.hypervisor, cfg.hypervisor.features, cfg.vnic.model
    if hv.bare_metal and model != "passthrough":
        raise ConfigError(f"vnic.model={model}: hypervisor={hv.name} is bare metal (no "
                          f"hypervisor), whose OS drives its NIC itself; allowed: passthrough "
                          f"(vnic=passthrough)")
    if model not in ("passthrough", "sriov"):
        return
    if model == "passthrough" and not feats.passthrough:
        raise ConfigError(f"vnic.model=passthrough: needs DirectPath I/O, which hypervisor="
                          f"{hv.name} lacks (hypervisor.features.passthrough=false); allowed: "
                          f"a hypervisor from ESX 4.0 on (hypervisor=esx40, vsphere55, ...)")
    if model == "sriov" and not feats.sriov:
        raise ConfigError(f"vnic.model=sriov: needs SR-IOV, which hypervisor={hv.name} lacks "
                          f"(hypervisor.features.sriov=false); allowed: vSphere 5.1 or later "
                          f"(hypervisor=vsphere51, vsphere55, vsphere60)")
    if cfg.topology.kind == "same_vswitch":
        raise ConfigError(f"topology.kind=same_vswitch: vnic.model={model} bypasses the "
                          f"vswitch (VF to VF through the NIC's own switch is not modelled); "
                          f"allowed: native_peer, cross_vswitch, remote_host")
    if model == "sriov" and cfg.topology.vm_partner:
        # A VF's pool is numbered by the VM's index (models.vnic.direct.owned_queues): the
        # partner VMs n .. 2n-1 would ask for pools the sorter never fills.
        raise ConfigError(f"topology.kind={cfg.topology.kind}: vnic.model=sriov with a VM at "
                          f"the other end is not modelled; allowed with sriov: native_peer "
                          f"(vnic=passthrough works with cross_vswitch and remote_host)")
    ports, vms, topo = cfg.host.nic_ports, cfg.workload.vms, cfg.topology
    on_port = [topo.port_of(i, vms, ports) for i in range(topo.host_vms(vms))]
    per_port = max(on_port.count(p) for p in set(on_port))
    if model == "passthrough" and per_port > 1:
        what = "one OS per NIC port on bare metal" if hv.bare_metal else \
            "a port is assigned to one VM"
        raise ConfigError(f"workload.vms={vms}: must be <= host.nic_ports={ports} with "
                          f"vnic.model=passthrough ({what}; vnic=sriov shares a port)")
    if model == "sriov" and per_port > max_vfs:
        raise ConfigError(f"workload.vms={vms}: {per_port} VMs per port need as many virtual "
                          f"functions, and the NIC has {max_vfs} (nic.max_vfs; allowed: a NIC "
                          f"with SR-IOV such as nic=intel_82599, or fewer VMs)")
    if cfg.workload.kind == "udp_multicast":
        raise ConfigError(f"workload.kind=udp_multicast: not modelled with vnic.model={model} "
                          f"(its replication is the vswitch's, which a direct device bypasses); "
                          f"allowed: tcp_stream, tcp_rr, http")
    if hv.vswitch.vxlan.enabled:
        raise ConfigError(f"hypervisor.vswitch.vxlan.enabled=true: the tunnel endpoint is the "
                          f"vswitch's, which vnic.model={model} bypasses; allowed: false")
    if cfg.host.placement == "numa_io":
        raise ConfigError(f"host.placement=numa_io: it moves the hypervisor's networking "
                          f"contexts, which vnic.model={model} has none of; allowed: pinned, "
                          f"spread")


def _check_queues(cfg: Config, max_queues: int) -> None:
    for key in ("rx_queues", "tx_queues"):
        n = getattr(cfg.nic, key)
        if n > max_queues:
            raise ConfigError(f"nic.{key}={n}: must be in 1..{max_queues} (the queues this NIC "
                              f"has: nic.max_queues={max_queues})")


def _build(cls, mapping: Any, path: str):
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{path.rstrip('.') or 'config'}={mapping!r}: must be a mapping of "
                          f"keys for {cls.__name__} (set a key inside: {path or ''}KEY=VALUE)")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in mapping.items():
        full = f"{path}{key}"
        if key not in fields:
            raise ConfigError(f"unknown key '{full}' (value {value!r}); allowed keys under "
                              f"'{path.rstrip('.') or 'the top level'}': {', '.join(fields)}")
        kwargs[key] = _convert(hints[key], value, full)
    if "provenance" in kwargs:
        _check_provenance(cls, kwargs["provenance"], path)
    try:
        return cls(**kwargs)
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{path}{exc}") from None


def _convert(tp, value, full: str):
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, full + ".")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{full}={value!r}: must be true or false")
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value != int(value):
            raise ConfigError(f"{full}={value!r}: must be an integer")
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{full}={value!r}: must be a number")
        if not math.isfinite(value):
            raise ConfigError(f"{full}={value!r}: must be a finite number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{full}={value!r}: must be a string")
        return value
    if typing.get_origin(tp) is dict:
        key_tp, value_tp = typing.get_args(tp)
        if not isinstance(value, Mapping):
            raise ConfigError(f"{full}={value!r}: must be a mapping")
        return {_convert(key_tp, k, f"{full} key"): _convert(value_tp, v, f"{full}.{k}")
                for k, v in value.items()}
    raise TypeError(f"schema field {full} has unsupported type {tp}")


def _cross_check(cfg: Config) -> None:
    if cfg.run.engine == "fluid" and cfg.workload.kind not in FLUID_KINDS:
        raise ConfigError(f"run.engine=fluid: workload.kind={cfg.workload.kind} is not modelled "
                          f"by the fluid engine yet; allowed kinds: {', '.join(FLUID_KINDS)} "
                          f"(or run.engine=des)")
    rr_sessions = cfg.workload.vms * cfg.workload.sessions_per_vm
    if cfg.run.engine == "fluid" and cfg.workload.kind == "tcp_rr" and rr_sessions > 1:
        raise ConfigError(f"run.engine=fluid: workload.kind=tcp_rr with {rr_sessions} sessions "
                          f"(workload.vms x sessions_per_vm) is not modelled by the fluid engine; "
                          f"allowed: 1 (or run.engine=des)")
    if cfg.run.engine == "fluid" and cfg.workload.kind == "tcp_rr":
        mss = units.mss_bytes(inner_mtu_bytes(cfg.hypervisor.vswitch.vxlan,
                                              cfg.nic.link.mtu_bytes), cfg.tcp.timestamps)
        rr = cfg.workload.rr
        if max(rr.request_bytes, rr.response_bytes) > mss:
            raise ConfigError(f"run.engine=fluid: workload.rr.request_bytes and response_bytes "
                              f"({rr.request_bytes}, {rr.response_bytes}) above one MSS ({mss}) "
                              f"are not modelled by the fluid engine (or run.engine=des)")
    topo = cfg.topology.kind
    if cfg.topology.vm_partner and cfg.workload.kind == "udp_multicast":
        raise ConfigError(f"topology.kind={topo}: workload.kind=udp_multicast needs "
                          f"topology.kind=native_peer (the sender is the native peer)")
    if topo == "cross_vswitch" and (cfg.host.nic_ports < 2 or cfg.host.nic_ports % 2):
        raise ConfigError(f"host.nic_ports={cfg.host.nic_ports}: topology.kind=cross_vswitch "
                          f"needs an even number of ports >= 2 (pairs joined by a switch)")
    mtu = cfg.nic.link.mtu_bytes
    mss = units.mss_bytes(mtu, cfg.tcp.timestamps)
    if cfg.workload.socket_bytes < mss:
        raise ConfigError(f"workload.socket_bytes={cfg.workload.socket_bytes}: must be >= one MSS "
                          f"({mss} bytes at nic.link.mtu_bytes={mtu})")
    if mtu > cfg.vnic.max_mtu_bytes:
        raise ConfigError(f"nic.link.mtu_bytes={mtu}: must be <= {cfg.vnic.max_mtu_bytes} "
                          f"(vnic.max_mtu_bytes of vnic.model={cfg.vnic.model})")
    guest_mtu = inner_mtu_bytes(cfg.hypervisor.vswitch.vxlan, mtu)
    udp_max = guest_mtu - units.IP_HEADER_BYTES - units.UDP_HEADER_BYTES
    if cfg.workload.kind == "udp_multicast" and cfg.workload.multicast.packet_bytes > udp_max:
        raise ConfigError(f"workload.multicast.packet_bytes={cfg.workload.multicast.packet_bytes}: "
                          f"must be <= {udp_max} (one frame at the guests' MTU {guest_mtu}: "
                          f"IP fragmentation is not modelled)")
    _check_ping(cfg, guest_mtu)
    sessions = cfg.workload.vms * cfg.workload.sessions_per_vm
    if sessions > MAX_SESSIONS:
        raise ConfigError(f"workload.sessions_per_vm={cfg.workload.sessions_per_vm}: must be <= "
                          f"{MAX_SESSIONS // cfg.workload.vms} with workload.vms="
                          f"{cfg.workload.vms} (at most {MAX_SESSIONS} sessions in all; "
                          f"{sessions} would not fit in memory or time)")
    _check_size(cfg)  # what does pass the caps must still fit in this machine's memory
    try:
        _check_cores(cfg.peer.cpu, "peer.cpu.")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_vxlan_tx_ring(cfg)
    _check_aggregates_fit(cfg)
    _check_teaming(cfg)
    _check_hypervisor_features(cfg)
    _check_latency_sensitivity(cfg)


def _check_ping(cfg: Config, guest_mtu: int) -> None:
    """An echo must fit one frame at the guests' MTU (IP fragmentation is not modelled)."""
    icmp_max = guest_mtu - units.IP_HEADER_BYTES - units.ICMP_HEADER_BYTES
    if cfg.workload.kind == "ping" and cfg.workload.ping.size_bytes > icmp_max:
        raise ConfigError(f"workload.ping.size_bytes={cfg.workload.ping.size_bytes}: must be <= "
                          f"{icmp_max} (one frame at the guests' MTU {guest_mtu}: IP "
                          f"fragmentation is not modelled)")


def _check_latency_sensitivity(cfg: Config) -> None:
    """``guest.latency_sensitivity=high``: every vCPU takes a core no other context may use
    (``sim.placement``), so the cores the NIC vectors leave must hold every vCPU and one more
    for the networking contexts; placed as ``pinned`` only."""
    if not cfg.guest.latency_sensitive:
        return
    if not cfg.hypervisor.features.latency_sensitivity:
        raise ConfigError(f"guest.latency_sensitivity=high: needs vSphere 5.5 or later "
                          f"(hypervisor={cfg.hypervisor.name}: "
                          f"features.latency_sensitivity=false)")
    host = cfg.host
    if host.placement != "pinned":
        raise ConfigError(f"guest.latency_sensitivity=high: needs host.placement=pinned "
                          f"(got {host.placement}: exclusive cores are placed only in the "
                          f"pinned layout)")
    free = host.cpu.n_cores - len(vector_cores(cfg))
    per_vm = cfg.topology.host_vms(1) * cfg.guest.vcpus  # a VM's vCPUs (and its partner's)
    need = cfg.workload.vms * per_vm
    if need + 1 > free:
        raise ConfigError(f"workload.vms={cfg.workload.vms}: must be <= "
                          f"{max(0, free - 1) // per_vm} with "
                          f"guest.latency_sensitivity=high and guest.vcpus={cfg.guest.vcpus} "
                          f"(each vCPU needs a core of its own, and one core is left for the "
                          f"networking contexts: {free} cores are free of the NIC's vectors)")


def _check_teaming(cfg: Config) -> None:
    """A team (``models.teaming``) is the uplink of a vswitch towards the native peer: not
    with multicast, a VM at the other end, or a device that bypasses the vswitch."""
    k = cfg.host.teaming.ports_per_team
    if k == 1:
        return
    if cfg.workload.kind == "udp_multicast":
        raise ConfigError(f"host.teaming.ports_per_team={k}: multicast over a team is not "
                          f"modelled; allowed with workload.kind=udp_multicast: 1")
    if cfg.topology.kind != "native_peer":
        raise ConfigError(f"host.teaming.ports_per_team={k}: a team needs "
                          f"topology.kind=native_peer (topology.kind={cfg.topology.kind}); "
                          f"allowed otherwise: 1")
    if is_direct(cfg.vnic.model):
        raise ConfigError(f"host.teaming.ports_per_team={k}: vnic.model={cfg.vnic.model} "
                          f"bypasses the vswitch the team serves; allowed with it: 1")
    if cfg.host.placement == "numa_io":  # the plan homes VM i by port i mod nic_ports
        raise ConfigError(f"host.placement=numa_io: with a team (host.teaming.ports_per_team="
                          f"{k}) a VM's card is the member its policy picks, which NUMA I/O "
                          f"placement does not follow; allowed: pinned, spread")


def _check_vxlan_tx_ring(cfg: Config) -> None:
    """VXLAN without offload hands the uplink one packet per frame of a TSO segment: the NIC TX
    ring must hold a whole segment's frames (ceil(TSO segment / MSS) slots)."""
    vxlan = cfg.hypervisor.vswitch.vxlan
    if not (vxlan.enabled and not vxlan.offload and cfg.vnic.tso and cfg.nic.tso):
        return
    mss = units.mss_bytes(inner_mtu_bytes(vxlan, cfg.nic.link.mtu_bytes), cfg.tcp.timestamps)
    seg = units.tso_segment_payload_bytes(cfg.nic.tso_max_bytes, mss,
                                          units.tcp_header_bytes(cfg.tcp.timestamps))
    frames = -(-seg // mss)
    nic = cfg.nic
    need = frames if not nic.tx_desc_per_packet else tx_descriptors(
        seg, frames, nic.tx_desc_per_packet, nic.tx_desc_buffer_bytes)
    if nic.tx_ring_slots < need:
        raise ConfigError(f"nic.tx_ring_slots={nic.tx_ring_slots}: must be >= {need} with "
                          f"hypervisor.vswitch.vxlan.offload=false (a {seg}-byte TSO segment "
                          f"becomes ceil({seg}/{mss}) = {frames} packets, one per frame"
                          + (f", {need} descriptors)" if nic.tx_desc_per_packet else ")"))


def _check_aggregates_fit(cfg: Config) -> None:
    """An LRO aggregate takes one vNIC RX slot per frame and is admitted whole: the vNIC RX ring
    must hold the largest aggregate the NIC (``nic.lro``) or the hypervisor (software LRO, for a
    vNIC and guest that take aggregates) can make, or that flow would never be delivered."""
    mss = units.mss_bytes(inner_mtu_bytes(cfg.hypervisor.vswitch.vxlan, cfg.nic.link.mtu_bytes),
                          cfg.tcp.timestamps)
    makers = []
    if cfg.nic.lro:
        makers.append(("nic.lro_max_bytes", cfg.nic.lro_max_bytes))
    if cfg.hypervisor.features.software_lro and cfg.vnic.lro and cfg.guest.lro:
        makers.append(("hypervisor.software_lro_max_bytes", cfg.hypervisor.software_lro_max_bytes))
    for key, max_bytes in makers:
        need = max(1, max_bytes // mss)
        if cfg.vnic.rx_ring_slots < need:
            raise ConfigError(f"vnic.rx_ring_slots={cfg.vnic.rx_ring_slots}: must be >= {need} "
                              f"(an aggregate of {key}={max_bytes} holds {need} frames of "
                              f"{mss} bytes, one slot each)")


def _check_hypervisor_features(cfg: Config) -> None:
    """What the hypervisor generation offers: devices, NetQueue, several queues into a vNIC."""
    hv, feats = cfg.hypervisor.name, cfg.hypervisor.features
    if cfg.vnic.model == "vmxnet3" and not feats.vmxnet3:
        raise ConfigError(f"vnic.model=vmxnet3: not available with hypervisor={hv} "
                          f"(hypervisor.features.vmxnet3=false); allowed: e1000, vmxnet2, or "
                          f"a hypervisor from ESX 4.0 on (hypervisor=esx40, vsphere55, ...)")
    _check_device(cfg)
    if cfg.vnic.rx_queues > 1 and not feats.vnic_rss:
        raise ConfigError(f"vnic.rx_queues={cfg.vnic.rx_queues}: must be 1 with hypervisor={hv} "
                          f"(one hardware queue per vNIC before vSphere 6.0; "
                          f"hypervisor.features.vnic_rss=false)")
    if cfg.nic.rx_sort == "vmdq" and not feats.netqueue:
        raise ConfigError(f"nic.rx_sort=vmdq: needs NetQueue, which hypervisor={hv} lacks "
                          f"(hypervisor.features.netqueue=false); allowed: single, rss")
    # On KVM (virtio_net) every RSS queue's softirq feeds the bridge, which reaches every tap;
    # a passed-through NIC spreads over the guest's own vCPUs.
    if cfg.nic.rx_sort == "rss" and cfg.nic.rx_queues > 1 and cfg.vnic.model != "passthrough" \
            and not feats.virtio_net and not (feats.vnic_rss and cfg.vnic.rx_queues > 1):
        raise ConfigError(f"nic.rx_sort=rss: a vNIC takes packets from one hardware queue unless "
                          f"the hypervisor has vnic_rss (hypervisor={hv}: "
                          f"{str(feats.vnic_rss).lower()}) and the vNIC asks for several "
                          f"(vnic.rx_queues={cfg.vnic.rx_queues}); allowed: single, vmdq")
    vs = cfg.hypervisor.vswitch
    if vs.multicast.split_rx_mode and not (feats.split_rx_mode and cfg.vnic.model == "vmxnet3"):
        raise ConfigError(f"hypervisor.vswitch.multicast.split_rx_mode=true: needs vSphere 5.0 "
                          f"or later and vmxnet3 (hypervisor={hv}: features.split_rx_mode="
                          f"{str(feats.split_rx_mode).lower()}; vnic.model={cfg.vnic.model})")
    if vs.vxlan.enabled and not feats.vxlan:
        raise ConfigError(f"hypervisor.vswitch.vxlan.enabled=true: needs vSphere 5.1 or later "
                          f"(hypervisor={hv}: features.vxlan=false)")


def _check_device(cfg: Config) -> None:
    """The vNIC exists on the hypervisor (VMware's vmxnet devices, KVM's virtio-net) and a
    virtio-net backend matches the vswitch: vhost-user needs a poll-mode (userspace) vswitch,
    vhost-net a kernel one."""
    hv, feats, model = cfg.hypervisor.name, cfg.hypervisor.features, cfg.vnic.model
    if model in ("vmxnet2", "vmxnet3") and not feats.vmxnet:
        raise ConfigError(f"vnic.model={model}: not available with hypervisor={hv} "
                          f"(hypervisor.features.vmxnet=false); allowed: e1000, virtio_net"
                          f"{', virtio_net_user' if cfg.hypervisor.poll_mode else ''}")
    if model.startswith("virtio_net") and not feats.virtio_net:
        raise ConfigError(f"vnic.model={model}: a KVM device, not available with hypervisor={hv}"
                          f" (hypervisor.features.virtio_net=false); allowed: e1000, vmxnet2, "
                          f"vmxnet3, or hypervisor=kvm")
    user = model == "virtio_net_user"
    if user != cfg.hypervisor.poll_mode and (user or model == "virtio_net"):
        need = "a poll-mode vswitch (hypervisor=kvm_ovs_dpdk)" if user else \
            "a kernel vswitch (hypervisor=kvm); with a poll-mode one use vnic=virtio_net_user"
        raise ConfigError(f"vnic.model={model}: its backend needs {need}; hypervisor={hv} has "
                          f"hypervisor.poll_mode={str(cfg.hypervisor.poll_mode).lower()}")
    if cfg.hypervisor.poll_mode and model not in ("virtio_net_user",):
        raise ConfigError(f"vnic.model={model}: hypervisor.poll_mode=true (hypervisor={hv}) "
                          f"serves only vhost-user devices; allowed: virtio_net_user")


def estimate_size(cfg: Config) -> dict[str, tuple[Any, float]]:
    """The bytes a run of ``cfg`` needs, by the key that drives each term: ``{key: (its value,
    bytes)}``, from a cheap count of the objects the builder makes (see ``BYTES_PER_*``)."""
    w, host, ports = cfg.workload, cfg.host, cfg.host.nic_ports
    per_session = BYTES_PER_SESSION.get(w.kind, BYTES_PER_SESSION_DEFAULT)
    contexts_per_vm = cfg.guest.vcpus + cfg.hypervisor.tx_contexts_per_vnic - 1
    vms = 2 * w.vms if cfg.topology.vm_partner else w.vms  # with the partner VMs
    hosts = 2 if cfg.topology.kind == "remote_host" else 1
    terms = {
        "workload.sessions_per_vm": (w.sessions_per_vm, w.vms * w.sessions_per_vm * per_session),
        "workload.vms": (w.vms, vms * (BYTES_PER_VM + contexts_per_vm * BYTES_PER_CONTEXT)),
        "host.nic_ports": (ports, hosts * ports * (
            BYTES_PER_PORT + (cfg.nic.rx_queues + cfg.nic.tx_queues) * BYTES_PER_CONTEXT
            + cfg.peer.cpu.n_cores * BYTES_PER_CORE)),
        "host.cpu.cores_per_socket": (host.cpu.cores_per_socket,
                                      hosts * host.cpu.n_cores * BYTES_PER_CORE),
    }
    if w.kind == "tcp_rr":
        terms["workload.rr.latency_sample_capacity"] = (
            w.rr.latency_sample_capacity, w.rr.latency_sample_capacity * BYTES_PER_LATENCY_SAMPLE)
    if w.kind == "ping":
        terms["workload.ping.latency_sample_capacity"] = (
            w.ping.latency_sample_capacity,
            w.ping.latency_sample_capacity * BYTES_PER_LATENCY_SAMPLE)
    return {k: (v, b * RUN_FACTOR) for k, (v, b) in terms.items()}


def available_memory() -> float:
    """Bytes this process may still use: ``VNETSIM_MEMORY_BYTES`` if set, else the least of
    MemAvailable (/proc/meminfo), the cgroup's limit less its use, and the free pages."""
    import os
    if os.environ.get(MEMORY_ENV):
        try:
            return float(os.environ[MEMORY_ENV])
        except ValueError:
            raise ConfigError(f"{MEMORY_ENV}={os.environ[MEMORY_ENV]!r}: must be a number of "
                              f"bytes") from None
    found = []
    try:
        with open("/proc/meminfo") as f:
            found += [int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable:")]
    except OSError:
        pass
    try:
        limit = open("/sys/fs/cgroup/memory.max").read().strip()
        if limit != "max":
            found.append(int(limit) - int(open("/sys/fs/cgroup/memory.current").read()))
    except (OSError, ValueError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return math.inf
    return float(min(found))


def _check_size(cfg: Config, available: float | None = None) -> None:
    """Refuse, before the build, a run whose estimated size is over ``MEMORY_SHARE`` of the
    memory available, naming the key of the largest term, its value and the most it may be."""
    terms = estimate_size(cfg)
    total = sum(b for _, b in terms.values())  # beyond the process as it is (MemAvailable)
    available = available_memory() if available is None else available
    budget = available * MEMORY_SHARE
    if total <= budget:
        return
    key, (value, big) = max(terms.items(), key=lambda kv: kv[1][1])
    most = int((budget - (total - big)) // (big / value))
    others = " ".join(f"{k}={v}" for k, (v, _) in terms.items()
                      if k != key and k.startswith("workload.") and v != 1)
    gb = lambda x: f"{x / 1e9:.3g} GB"  # noqa: E731
    allowed = (f"<= {most}{' with ' + others if others else ''}" if most >= 1 else
               "smaller: even 1 would not fit with the other keys as they are")
    raise ConfigError(f"{key}={value}: must be {allowed} (the run would need about {gb(total)}, "
                      f"more than "
                      f"{MEMORY_SHARE:.0%} of the {gb(available)} available)")
