"""A physical NIC port: TX ring served onto the wire, RX ring drained by a coalesced interrupt.

Modelled:
- TX: a descriptor ring counted in packets (a TSO segment is one packet); the port sends bursts
  from it onto its link in FIFO order; a slot is freed when the burst has left (TX completion),
  and then ``tx_ring.on_space`` callbacks let the driver refill it. TSO: the NIC cuts a segment of
  up to ``tso_max_bytes`` into MTU frames on the wire (arithmetically, ``models.wire``).
- RX: a ring of ``rx_ring_slots`` frame descriptors; a frame that finds it full is dropped and
  counted (reason ``rx_ring_full``). Coalescing decides when the MSI-X vector fires; the handler
  (a context on the vector's core) takes everything in the ring, pays the per-interrupt,
  per-packet and per-byte cost the owner supplies, frees the descriptors and passes the batch up.
  While it runs, new frames wait; it polls again before re-enabling the interrupt (NAPI).
Left out: multiple queues, RSS/VMDq sorting, PCIe DMA, hardware LRO (next models); pause frames.
Units: slots, bytes, cycles.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import simpy

from models.base import Burst, Ring, Stats, check
from models.coalescing import CoalescingParams, Coalescer
from models.cpu import Context
from models.wire import Link, LinkParams


@dataclass(frozen=True)
class NicParams:
    link: LinkParams = field(default_factory=LinkParams)
    tx_ring_slots: int = 512
    rx_ring_slots: int = 512
    tso: bool = True
    tso_max_bytes: int = 65536
    coalescing: CoalescingParams = field(default_factory=CoalescingParams)

    def __post_init__(self):
        check(self.tx_ring_slots >= 1, "tx_ring_slots", self.tx_ring_slots, ">= 1")
        check(self.rx_ring_slots >= 1, "rx_ring_slots", self.rx_ring_slots, ">= 1")
        check(1500 <= self.tso_max_bytes <= 262144, "tso_max_bytes", self.tso_max_bytes,
              "in 1500..262144")


RxCost = Callable[[list[Burst], bool], float]  # (batch, is_interrupt) -> cycles


class NicPort:
    """One port of a NIC. The owner wires ``rx_context``, ``rx_cost`` and ``rx_deliver``."""

    def __init__(self, env: simpy.Environment, name: str, params: NicParams, stats: Stats):
        self.env, self.name, self.params = env, name, params
        self.tx_link = Link(env, f"{name}.wire_tx", params.link, stats)
        self.tx_ring = Ring(f"{name}.tx_ring", params.tx_ring_slots, stats, unit="packets",
                            drop_reason="tx_ring_full")
        self.rx_ring = Ring(f"{name}.rx_ring", params.rx_ring_slots, stats, unit="frames",
                            drop_reason="rx_ring_full")
        self.coalescer = Coalescer(env, params.coalescing, self._interrupt)
        self.rx_context: Context | None = None
        self.rx_cost: RxCost = lambda batch, irq: 0.0
        self.rx_deliver: Callable[[list[Burst]], None] = lambda batch: None
        self.tx_packets = self.tx_frames = self.rx_frames = 0
        self.tx_wire_bytes = self.rx_wire_bytes = 0
        self.polls = 0
        self._polling = False
        self._tx_wakeup: simpy.Event | None = None
        env.process(self._tx_loop())

    # -- transmit -------------------------------------------------------------------------
    def send(self, burst: Burst) -> Burst | None:
        """Post a burst to the TX ring; returns what was accepted (None: ring full)."""
        accepted = self.tx_ring.offer(burst)
        if accepted is not None and self._tx_wakeup is not None and not self._tx_wakeup.triggered:
            self._tx_wakeup.succeed()
        return accepted

    def _tx_loop(self):
        while True:
            if not len(self.tx_ring):
                self._tx_wakeup = self.env.event()
                yield self._tx_wakeup
                self._tx_wakeup = None
            burst = self.tx_ring.claim()
            yield self.tx_link.transmit(burst)
            self.tx_packets += burst.packets
            self.tx_frames += burst.frames
            self.tx_wire_bytes += burst.wire_bytes
            self.tx_ring.release([burst])

    # -- receive --------------------------------------------------------------------------
    def receive(self, burst: Burst) -> None:
        """A burst arrives from the wire."""
        self.rx_frames += burst.frames
        self.rx_wire_bytes += burst.wire_bytes
        accepted = self.rx_ring.offer(burst)
        if accepted is not None and not self._polling:
            self.coalescer.notify(accepted.frames)

    def _interrupt(self) -> None:
        if not self._polling:
            self._poll(is_interrupt=True)

    def _poll(self, is_interrupt: bool) -> None:
        batch = self.rx_ring.claim_all()
        if not batch:
            self._polling = False
            return
        self._polling = True
        self.polls += 1
        self.rx_context.then(self.rx_cost(batch, is_interrupt), lambda: self._done(batch))

    def _done(self, batch: list[Burst]) -> None:
        self.rx_ring.release(batch)
        self.rx_deliver(batch)
        if len(self.rx_ring):
            self._poll(is_interrupt=False)
        else:
            self._polling = False
