"""Poll-mode contexts: a thread that busy-polls its rings and never halts (a DPDK PMD thread of
a userspace vswitch such as OVS-DPDK, serving vhost-user virtqueues and NIC queues).

Modelled: the context does its work exactly as any ``models.cpu.Context`` (the same FIFO
server, the same cycles per pass), but between passes it spins instead of sleeping, so

- the context and its core are busy 100% of the time from placement on, whatever the load
  (``busy_time_s``; the core's ``polled_from_s``);
- the cycles it spins are reported as the term ``poll_idle`` (``models.costs.POLL_IDLE``): its
  counters' ``cycles`` are the core's clock times its busy time, and the terms still add up;
- nothing ever has to wake it: a producer needs no kick or doorbell (the virtio driver sees
  VRING_USED_F_NO_NOTIFY set, ``models.vnic.devices.VirtioNet``), and the NIC's RX queues get
  a zero coalescing timer (a frame is taken by the next pass, as a PMD's ``rte_eth_rx_burst``
  loop takes it). Approximation: that pass is still counted as one interrupt per burst (in
  ``interrupts_per_s``) and pays the driver's per-interrupt cost, as a poll of a PMD loop
  would pay its per-poll overhead.

Left out: the loop's own period (sub-microsecond: a frame waits at most one empty iteration,
not modelled), power states, sharing a PMD core with other threads (a core shared with a
poll-mode context is counted busy all the time), moving a PMD thread (``host.placement=numa_io``:
the core it was placed on stays counted as spinning).
Units: seconds, cycles.
"""
from __future__ import annotations

from models.costs import POLL_IDLE
from models.cpu import Context


class PollingContext(Context):
    """A ``Context`` that spins between tasks: never idle, its core always busy."""

    poll_mode = True

    def __init__(self, env, name, core, **kw):
        super().__init__(env, name, core, **kw)
        self.polling_from_s = env.now
        if core.polled_from_s is None:
            core.polled_from_s = env.now

    def busy_time_s(self) -> float:
        return self.env.now - self.polling_from_s

    @property
    def idle(self) -> bool:
        """Never: a poll-mode thread does not halt."""
        return False

    def counters(self) -> dict[str, float]:
        """As ``Context.counters``, plus the spinning: ``term.poll_idle`` and ``cycles``
        (busy time x clock)."""
        c = super().counters()
        spun = self.busy_time_s() * self.core.params.clock_hz
        c[f"term.{POLL_IDLE}"] = max(0.0, spun - self.cycles)
        c["cycles"] = self.cycles + c[f"term.{POLL_IDLE}"]
        return c
