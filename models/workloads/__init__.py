"""Workloads: what the VMs and the peers run. One module per kind, and the registry.

- ``base``: the ``Workload`` base class (the hooks the recorder calls) and the socket calls
  every TCP kind's applications make (``open_connection``, ``write_some``/``write``,
  ``read_some``/``read``). It imports no kind.
- ``tcp_stream`` (``TcpStream``), ``tcp_rr`` (``TcpRr``, ``RrParams``), ``http`` (``Http``,
  ``HttpParams``), ``multicast`` (``UdpMulticast``, ``MulticastWorkloadParams``), ``ping``
  (``Ping``, ``PingParams``: ICMP echo, no TCP): one kind each,
  with its own parameters; each imports ``base``, never another kind.
- Here: ``WorkloadParams`` (the config section ``workload``: the fields the kinds share and one
  nested section per kind with parameters of its own) and ``WORKLOADS``, which maps
  ``workload.kind`` to its class.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models.base import check
from models.workloads.base import Workload
from models.workloads.http import Http, HttpParams
from models.workloads.multicast import MulticastWorkloadParams, UdpMulticast
from models.workloads.ping import Ping, PingParams
from models.workloads.tcp_rr import RrParams, TcpRr
from models.workloads.tcp_stream import TcpStream

DIRECTIONS = ("tx", "rx")

WORKLOADS: dict[str, type[Workload]] = {
    "tcp_stream": TcpStream,
    "tcp_rr": TcpRr,
    "http": Http,
    "udp_multicast": UdpMulticast,
    "ping": Ping,
}


@dataclass(frozen=True)
class WorkloadParams:
    """What runs: ``kind`` picks the workload; the fields below are shared by the kinds (kinds
    with parameters of their own add a nested section)."""

    kind: str = "tcp_stream"
    vms: int = 1
    sessions_per_vm: int = 5
    socket_bytes: int = 65536
    message_bytes: int = 16384
    direction: str = "tx"
    start_jitter_us: float = 100.0
    rr: RrParams = field(default_factory=RrParams)
    # TCP_STREAM: each session's sender paces its send() calls to this rate (0: as fast as
    # the buffer allows), for low-load studies (004: ~700 Mbps over many VMs).
    rate_limit_mbps: float = 0.0
    http: HttpParams = field(default_factory=HttpParams)
    multicast: MulticastWorkloadParams = field(default_factory=MulticastWorkloadParams)
    ping: PingParams = field(default_factory=PingParams)

    def __post_init__(self):
        check(self.kind in WORKLOADS, "kind", self.kind, f"one of {sorted(WORKLOADS)}")
        check(1 <= self.vms <= 512, "vms", self.vms, "in 1..512")
        check(1 <= self.sessions_per_vm <= 1024, "sessions_per_vm", self.sessions_per_vm,
              "in 1..1024")
        check(self.socket_bytes >= 1, "socket_bytes", self.socket_bytes, ">= 1")
        check(1 <= self.message_bytes <= 16 * 2**20, "message_bytes", self.message_bytes,
              "in 1..16777216")
        check(self.direction in DIRECTIONS, "direction", self.direction, f"one of {DIRECTIONS}")
        check(self.start_jitter_us >= 0, "start_jitter_us", self.start_jitter_us, ">= 0")
        check(self.rate_limit_mbps >= 0, "rate_limit_mbps", self.rate_limit_mbps, ">= 0")
