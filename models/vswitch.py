"""The hypervisor's virtual switch: per-packet and per-byte switching cost, uplink pending queue.

Modelled: a layer-2 switch with one port per vNIC (keyed by the VM index carried in ``Burst.dst``)
and one uplink to a physical NIC port. Its cycles are charged on whichever networking context
runs it (the VM's transmit context, or the NIC's receive handler); ``cycles()`` gives them.
Transmit to the uplink goes straight into the NIC TX ring when it has room; otherwise into the
pending-TX queue of ``pending_tx_limit_packets`` (200 in ESX by default, 500 in 000's multi-VM
runs); a packet that finds that queue full is dropped (reason ``pending_tx_full``). Freed NIC
slots drain the pending queue in FIFO order.
Left out: VLANs, multicast replication, VXLAN, several uplinks (later models).
Units: cycles, packets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from models.base import Burst, CycleCost, Ring, Stats, check
from models.nic import NicPort


@dataclass(frozen=True)
class VswitchParams:
    cost: CycleCost = field(default_factory=lambda: CycleCost(0.0, 600.0, 0.0))
    pending_tx_limit_packets: int = 200

    def __post_init__(self):
        check(self.pending_tx_limit_packets >= 1, "pending_tx_limit_packets",
              self.pending_tx_limit_packets, ">= 1")


class Vswitch:
    """Switches bursts between vNIC ports and one uplink NIC port."""

    def __init__(self, name: str, params: VswitchParams, uplink: NicPort, stats: Stats):
        self.name, self.params, self.uplink = name, params, uplink
        self.ports: dict[int, Callable[[list[Burst]], None]] = {}
        self.pending = Ring(f"{name}.pending_tx", params.pending_tx_limit_packets, stats,
                            unit="packets", drop_reason="pending_tx_full")
        uplink.on_tx_space(self._drain)

    def connect(self, port_id: int, deliver: Callable[[list[Burst]], None]) -> None:
        self.ports[port_id] = deliver

    def cycles(self, packets: int, n_bytes: int) -> float:
        """Switching cost of ``packets`` packets of ``n_bytes`` in all (one invocation)."""
        return self.params.cost.cycles(packets, n_bytes)

    def transmit(self, burst: Burst) -> None:
        """From a vNIC: to another local port, or out of the uplink."""
        local = self.ports.get(burst.dst)
        if local is not None and burst.dst >= 0:
            local([burst.as_frames()])
            return
        if not len(self.pending) and self.uplink.tx_queue(burst).free >= burst.packets:
            self.uplink.send(burst)
        else:
            self.pending.offer(burst)

    def _drain(self) -> None:
        while len(self.pending) and \
                self.uplink.tx_queue(self.pending.peek()).free >= self.pending.peek().packets:
            burst = self.pending.claim()
            self.pending.release([burst])
            self.uplink.send(burst)

    def receive(self, batch: list[Burst]) -> None:
        """From the uplink: hand each vNIC port its part of the batch, in arrival order."""
        by_port: dict[int, list[Burst]] = {}
        for burst in batch:
            by_port.setdefault(burst.dst, []).append(burst)
        for port_id, bursts in by_port.items():
            self.ports[port_id](bursts)
