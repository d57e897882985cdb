"""The names of the cost terms a context's cycles are broken down into.

Every pass-cost function in ``models/`` returns its cycles as ``{term: cycles}`` with the names
below; a context adds the terms of each task it runs to ``Context.term_cycles`` and adds the
terms only it knows (the NUMA penalty, world switches, service-time jitter), so the terms of a
context always add up to the cycles it was charged. The recorder writes them as the
``cost_terms`` table (cycles per second, per packet, per byte, by context and term).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

# Guest (vCPU) and native-host application and stack work.
APP_SEND = "app_send"            # send() calls: fixed per call, copy per byte
APP_RECV = "app_recv"            # recv() calls
APP = "app"                      # the application's own work (HTTP server, multicast tool)
STACK_TX = "stack_tx"            # TCP/IP output of data segments
STACK_RX = "stack_rx"            # TCP/IP input of data packets
STACK_ACK_TX = "stack_ack_tx"    # generating ACK trains
STACK_ACK_RX = "stack_ack_rx"    # taking in ACKs
STACK_UDP_RX = "stack_udp_rx"    # UDP datagrams in
STACK_ICMP_RX = "stack_icmp_rx"  # ICMP messages in (echo requests and replies)
STACK_ICMP_TX = "stack_icmp_tx"  # ICMP messages out (a ping's request, the kernel's reply)
GUEST_DRIVER_TX = "guest_driver_tx"  # the vNIC driver in the guest
GUEST_DRIVER_RX = "guest_driver_rx"
EXITS = "exits"                  # register accesses that leave the guest (exits or BT traps)
HALT_WAKEUP = "halt_wakeup"      # an interrupt finding the vCPU halted: wake it, halt it again
# Hypervisor networking contexts and RX vectors.
BACKEND_TX = "backend_tx"        # vNIC backend (device emulation / paravirtual rings)
BACKEND_RX = "backend_rx"        # copying into a guest and posting its virtual interrupt
VSWITCH = "vswitch"
SW_SORT = "sw_sort"              # classifying frames by destination a NIC queue did not sort
VXLAN = "vxlan"                  # encapsulation, decapsulation, software segmentation
REPLICATION = "replication"      # multicast copies or splitRxMode hand-offs
TEAMING = "teaming"              # picking a team member per packet (hash policies)
DRIVER_TX = "driver_tx"          # the physical NIC's driver (or the peer's)
DRIVER_RX = "driver_rx"
DRIVER_POLL = "driver_poll"      # the driver's poll calls: one per napi_budget packets of a pass
COMPAT_TX = "compat_tx"          # the vmklinux shim of a Linux-compat driver
COMPAT_RX = "compat_rx"
LRO = "lro"                      # software LRO's own work per packet it takes (flow match, merge)
NUMA_COPY = "numa_copy"          # an RX handler writing into a VM's memory on another node
# Added by the context itself (``models.cpu``).
NUMA = "numa"                    # remote-memory penalty of the task's own data
WORLD_SWITCH = "world_switch"    # a core switching from another context to this one
JITTER = "jitter"                # service-time noise (charged minus nominal cycles)
POLL_IDLE = "poll_idle"          # a poll-mode thread spinning between passes (models.polling)
UNATTRIBUTED = "unattributed"    # a bare number of cycles (tests); no model should charge it

ALL = (APP_SEND, APP_RECV, APP, STACK_TX, STACK_RX, STACK_ACK_TX, STACK_ACK_RX, STACK_UDP_RX,
       STACK_ICMP_RX, STACK_ICMP_TX, GUEST_DRIVER_TX, GUEST_DRIVER_RX, EXITS, HALT_WAKEUP,
       BACKEND_TX, BACKEND_RX, VSWITCH, VXLAN, REPLICATION, DRIVER_TX, DRIVER_RX, COMPAT_TX,
       COMPAT_RX, NUMA_COPY, NUMA, WORLD_SWITCH, JITTER, POLL_IDLE, UNATTRIBUTED,
       TEAMING, SW_SORT, LRO, DRIVER_POLL)

Terms = dict  # term name -> cycles


def add(terms: Terms, name: str, cycles: float) -> Terms:
    """Add ``cycles`` to term ``name`` of ``terms`` (zero adds nothing); returns ``terms``."""
    if cycles:
        terms[name] = terms.get(name, 0.0) + cycles
    return terms


def merge(into: Terms, other: Mapping[str, float]) -> Terms:
    for name, cycles in other.items():
        add(into, name, cycles)
    return into


def total(terms: Mapping[str, float]) -> float:
    return sum(terms.values())


@dataclass(frozen=True)
class Charge:
    """What one term of a context's pass charges (the declared data path, ``sim.path``):
    ``fixed_cycles`` per ``per``, ``per_packet_cycles`` per ``unit`` and ``per_byte_cycles`` per
    payload byte. The pass-cost functions compute the term from the same parameters."""

    term: str
    fixed_cycles: float
    per_packet_cycles: float
    per_byte_cycles: float
    unit: str = "packet"   # what one packet is here: frame, segment, aggregate, ACK, copy...
    per: str = "pass"      # what pays the fixed part: pass, interrupt, call, segment, doorbell

    @classmethod
    def of(cls, term: str, cost, unit: str = "packet", per: str = "pass") -> "Charge":
        """From a ``models.base.CycleCost``."""
        return cls(term, cost.fixed_cycles, cost.per_packet_cycles, cost.per_byte_cycles,
                   unit, per)

    def describe(self) -> str:
        parts = []
        if self.fixed_cycles:
            parts.append(f"{self.fixed_cycles:g}/{self.per}")
        if self.per_packet_cycles:
            parts.append(f"{self.per_packet_cycles:g}/{self.unit}")
        if self.per_byte_cycles:
            parts.append(f"{self.per_byte_cycles:g}/B")
        return f"{self.term} " + (" + ".join(parts) if parts else "0")
