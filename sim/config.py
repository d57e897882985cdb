"""The configuration schema and its validation: a plain mapping in, frozen dataclasses out.

The schema is the tree of parameter dataclasses the models define (``models.*Params``) under one
``Config``. ``to_config`` walks a mapping (Hydra's composed config, or a dict in a notebook)
against it: unknown keys, wrong types and out-of-range values raise ``ConfigError`` with a
one-line message naming the key, the value and what is allowed. Cross-field rules (socket buffer
>= one MSS, MTU within what the vNIC supports) are checked here after the fields. Models never
see a DictConfig.
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from models import units
from models.cpu import CpuParams
from models.guest import GuestParams
from models.hypervisor import HypervisorParams
from models.nic import NicParams
from models.peer import PeerParams
from models.tcp import TcpParams
from models.vnic import DEVICES, VnicParams
from models.workloads import WorkloadParams


class ConfigError(ValueError):
    """A configuration problem, reported to the user as one line."""


@dataclass(frozen=True)
class MetaParams:
    name: str = "default"
    description: str = ""
    source: str = ""  # the claim ids or study this experiment reproduces


@dataclass(frozen=True)
class RunParams:
    seed: int = 1
    warmup_s: float = 0.2
    measure_s: float = 1.0
    replications: int = 3

    def __post_init__(self):
        _require(self.seed >= 0, "seed", self.seed, ">= 0")
        _require(self.warmup_s >= 0, "warmup_s", self.warmup_s, ">= 0")
        _require(self.measure_s > 0, "measure_s", self.measure_s, "> 0")
        _require(1 <= self.replications <= 1000, "replications", self.replications, "in 1..1000")


@dataclass(frozen=True)
class HostParams:
    """The server under test: its processors, its NIC ports, where the vectors run.

    Vector ``j`` (over all ports' RX queues, port-major) runs on core ``irq_core + j`` (mod the
    core count); VMs take the other cores in order. VM ``i`` uses port ``i mod nic_ports``.
    """

    name: str = "host"
    cpu: CpuParams = field(default_factory=CpuParams)
    irq_core: int = 1
    nic_ports: int = 1

    def __post_init__(self):
        _require(1 <= self.nic_ports <= 64, "nic_ports", self.nic_ports, "in 1..64")
        _require(0 <= self.irq_core < self.cpu.n_cores, "irq_core", self.irq_core,
                 f"in 0..{self.cpu.n_cores - 1} (the host's cores)")


@dataclass(frozen=True)
class Config:
    meta: MetaParams = field(default_factory=MetaParams)
    run: RunParams = field(default_factory=RunParams)
    host: HostParams = field(default_factory=HostParams)
    nic: NicParams = field(default_factory=NicParams)
    hypervisor: HypervisorParams = field(default_factory=HypervisorParams)
    vnic: VnicParams = field(default_factory=VnicParams)
    guest: GuestParams = field(default_factory=GuestParams)
    peer: PeerParams = field(default_factory=PeerParams)
    tcp: TcpParams = field(default_factory=TcpParams)
    workload: WorkloadParams = field(default_factory=WorkloadParams)


def _require(cond: bool, name: str, value, allowed: str) -> None:
    if not cond:
        raise ValueError(f"{name}={value!r}: must be {allowed}")


def to_config(mapping: Mapping[str, Any]) -> Config:
    """Validate ``mapping`` against the schema and build the frozen ``Config``."""
    cfg = _build(Config, mapping, "")
    _cross_check(cfg)
    return cfg


def _build(cls, mapping: Any, path: str):
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{path or 'config'}={mapping!r}: must be a mapping of keys for "
                          f"{cls.__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in mapping.items():
        full = f"{path}{key}"
        if key not in fields:
            raise ConfigError(f"unknown key '{full}' (value {value!r}); allowed keys under "
                              f"'{path.rstrip('.') or 'the top level'}': {', '.join(fields)}")
        kwargs[key] = _convert(hints[key], value, full)
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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise ConfigError(f"{full}={value!r}: must be an integer")
        return int(value)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{full}={value!r}: must be a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{full}={value!r}: must be a string")
        return value
    raise TypeError(f"schema field {full} has unsupported type {tp}")


def _cross_check(cfg: Config) -> None:
    mtu = cfg.nic.link.mtu_bytes
    mss = units.mss_bytes(mtu, cfg.tcp.timestamps)
    if cfg.workload.socket_bytes < mss:
        raise ConfigError(f"workload.socket_bytes={cfg.workload.socket_bytes}: must be >= one MSS "
                          f"({mss} bytes at nic.link.mtu_bytes={mtu})")
    device = DEVICES[cfg.vnic.model]
    if mtu > device.max_mtu_bytes:
        raise ConfigError(f"nic.link.mtu_bytes={mtu}: must be <= {device.max_mtu_bytes} "
                          f"with vnic.model={cfg.vnic.model}")
