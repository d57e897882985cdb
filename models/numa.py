"""NUMA-aware I/O placement (vSphere 6.0's ``Net.NetNetqNumaIOCpuPinThreshold``).

Modelled (003, claims V6-numa-40g/10g/knob): for each NIC card, the hypervisor's networking
contexts that serve it (its RX vectors and the networking contexts of the VMs on its ports) and
those VMs are packed on the card's NUMA node while the networking contexts use less than
``threshold_pct`` of one core (0..200: 100 = one core's worth), and follow the default placement
once they use that much or more. A monitor measures every ``period_s`` the networking contexts'
busy time over the last period and, when the verdict for a card changes, moves its contexts
between the two layouts (``models.cpu.Context.move_to``: between tasks, never inside one). A
VM's memory moves with it: its contexts' home nodes are those of the layout in force.
Threshold 0 never applies NUMA I/O (the ESX default: off).
Left out: the cost of migrating memory, gradual page migration, the NUMA scheduler's own load
balancing beyond this rule, hysteresis (a load near the threshold may flip every period, as the
rule as documented would).
Units: percent of one core, seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from models.cpu import Context, Core


@dataclass
class NumaIoGroup:
    """One card's contexts. ``layouts[True]`` is the NUMA layout, ``layouts[False]`` the default;
    each maps a context to its (core, home node(s)) in that layout."""

    card_node: int
    networking: list[Context]
    layouts: dict[bool, dict[Context, tuple[Core, object]]] = field(default_factory=dict)
    numa: bool = False


class NumaIoScheduler:
    """Switches each group between its layouts by the networking load (see module docstring)."""

    def __init__(self, env: simpy.Environment, groups: list[NumaIoGroup], threshold_pct: float,
                 period_s: float):
        assert period_s > 0 and 0 <= threshold_pct <= 200
        self.env, self.groups, self.threshold_pct, self.period_s = env, groups, threshold_pct, \
            period_s
        self.switches = 0
        self.last_load_pct = [0.0] * len(groups)
        env.process(self._monitor())

    def applies(self, load_pct: float) -> bool:
        return load_pct < self.threshold_pct

    def _monitor(self):
        busy = [self._busy(g) for g in self.groups]
        while True:
            yield self.env.timeout(self.period_s)
            for k, g in enumerate(self.groups):
                now_busy = self._busy(g)
                load = 100.0 * (now_busy - busy[k]) / self.period_s
                busy[k], self.last_load_pct[k] = now_busy, load
                numa = self.applies(load)
                if numa != g.numa:
                    self._switch(g, numa)

    @staticmethod
    def _busy(g: NumaIoGroup) -> float:
        return sum(c.busy_time_s() for c in g.networking)

    def _switch(self, g: NumaIoGroup, numa: bool) -> None:
        g.numa = numa
        self.switches += 1
        for ctx, (core, home) in g.layouts[numa].items():
            ctx.home_node = home
            ctx.move_to(core)
