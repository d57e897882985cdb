"""``python -m sim plan``: how many VMs of a profile fit on a host, or the cheapest option.

The capacity question is answered by search over runs of the model, never by a table:

- **How many VMs fit** (the default): the largest ``workload.vms`` in ``1..--vms-max`` for which
  every constraint (``--max METRIC=VALUE``, ``--min METRIC=VALUE``) holds, assuming that adding
  VMs never helps (monotone). Three steps, each a galloping search (steps 1, 2, 4, ... away from
  a start, then bisection) on a cache of evaluations:

  1. *bracket* with the fluid engine (``sim.fluid.solve``, milliseconds per point) from the
     profile's own ``workload.vms``: only the constraints it can evaluate (not loss, latency
     percentiles or fairness, which it does not model); for an open-loop workload (multicast:
     the sender does not slow down) a loss constraint is read as "no constraint of the fluid
     engine's ``bottleneck`` table is saturated", since the excess of a saturated resource is
     lost. Skipped, with its one-line reason shown, when the fluid engine cannot solve the
     workload;
  2. *screen* with the DES on short windows (one replication of ``--screen-measure-s``) from
     the bracket (or from the profile's ``workload.vms`` without one);
  3. *confirm* the boundary ``n`` (holds) and ``n + 1`` (fails) with the DES at the config's
     own run settings (``run.replications``, ``run.measure_s``; the two points run in parallel,
     ``--jobs``); if the confirming runs disagree the search goes on with them until it holds.

  The confidence is a Student-t reading of the replications: the probability that the true
  mean of each metric at ``n`` is on the allowed side of its limit (the least of them), times
  the probability that at ``n + 1`` some metric is on the wrong side (the greatest).
- **The cheapest option** (``--choose GROUP=A,B,...``): the options of one config group in cost
  order (as given, cheapest first, or by ``--cost A=1,B=2``); the first for which the DES
  (confirm settings) finds every constraint holding at the profile's ``workload.vms``.

It prints the answer, its confidence and the binding bottleneck (the fluid engine's most
utilised constraint and the DES's busiest context, core, PCIe direction and NIC port at the
answer), with what would move it. ``--out FILE`` writes the same as JSON.
Left out: several groups chosen together, non-monotone feasibility (a search finds one
boundary), constraints on table rows (one VM's goodput: ``per_vm_goodput_min_gbps`` is the
least VM's).
"""
from __future__ import annotations

import copy
import json
import math
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import stats as sps

from sim.cli import CONFIG_DIR, _print, fail
from sim.config import Config, ConfigError, to_config
from sim.files import write_atomic

USAGE = """usage: python -m sim plan [key=value ...] --max METRIC=VALUE|--min METRIC=VALUE ...
                          [--vms-max N] [--choose GROUP=A,B,...] [--cost A=1,B=2]
                          [--screen-measure-s S] [--jobs N] [--no-fluid] [--out FILE]

How many VMs of the profile the overrides give fit on the host while every constraint holds
(the largest workload.vms), or with --choose the cheapest option of a config group for which
they hold at the profile's workload.vms. Examples:

  python -m sim plan experiment=mc_default_40k --max multicast_loss_ratio=1e-4
  python -m sim plan experiment=e35_rx_scaling --min per_vm_goodput_gbps=1 \\
      --max host_cpu_util_pct=80
  python -m sim plan experiment=mc_default_40k workload.vms=24 \\
      --max multicast_loss_ratio=1e-4 --choose host=xeon5160,r810

Options:
  --max METRIC=VALUE   the metric must be at most VALUE (repeatable)
  --min METRIC=VALUE   the metric must be at least VALUE (repeatable)
  --vms-max N          the largest VM count searched (default: the schema's cap)
  --choose GROUP=A,B   the options to choose from, cheapest first
  --cost A=1,B=2       the options' costs (cheapest first instead of the order given)
  --screen-measure-s S the DES screening window in simulated s (default 0.1)
  --jobs N             processes for the confirming runs (default: 2, at most the cores)
  --no-fluid           no fluid bracket: the DES alone
  --out FILE           also write the answer as JSON

Metrics (summary keys, docs/models.md; per_vm_* derived from the vms table):
"""

# Every metric a constraint may name, with its meaning: the runner's summary keys (sim/metrics.py)
# by workload kind, and two derived ones read from the per-VM table.
COMMON = {
    "goodput_gbps": "application goodput, all VMs [Gbit/s]",
    "per_vm_goodput_gbps": "goodput_gbps / workload.vms [Gbit/s]",
    "per_vm_goodput_min_gbps": "the least VM's goodput [Gbit/s]",
    "loss_ratio": "frames dropped / frames offered",
    "host_cpu_util_pct": "mean utilisation of the host's cores [%]",
    "cycles_per_bit": "host busy cycles per goodput bit",
    "rtt_us": "mean TCP RTT [us]",
    "wire_frames_per_s": "frames on the host's NIC ports [1/s]",
    "host_packets_per_s": "packets through the host's NIC ports [1/s]",
    "jain_index": "Jain's fairness over per-VM goodput",
    "per_vm_goodput_std_gbps": "std of per-VM goodput [Gbit/s]",
    "exits_per_s": "vNIC exits [1/s]",
    "guest_rx_packets_per_s": "packets the guests received [1/s]",
    "pcie_max_util_pct": "busiest PCIe direction [%]",
    "numa_remote_cycles_pct": "NUMA penalty cycles / busy cycles [%]",
}
BY_KIND = {
    "udp_multicast": {
        "multicast_loss_ratio": "datagrams lost / expected, all receivers",
        "multicast_max_receiver_loss_ratio": "the worst receiver's loss ratio",
        "multicast_lossy_receivers": "receivers losing over 0.01%",
        "multicast_sent_pps": "datagrams sent [1/s]",
        "multicast_received_pps": "datagrams received, all receivers [1/s]",
        "multicast_copies_per_s": "copies made by the vswitch [1/s]",
    },
    "tcp_rr": {
        "transactions_per_s": "request/response transactions [1/s]",
        "rr_latency_mean_us": "mean transaction latency [us]",
        "rr_latency_p50_us": "median transaction latency [us]",
        "rr_latency_p90_us": "90th percentile transaction latency [us]",
        "rr_latency_p99_us": "99th percentile transaction latency [us]",
    },
    "http": {
        "http_objects_per_s": "objects served [1/s]",
        "http_object_gbps": "object bytes served [Gbit/s]",
        "http_mean_object_ms": "mean object time [ms]",
    },
    "tcp_stream": {},
    "ping": {
        "ping_rtt_mean_us": "mean echo round-trip time [us]",
        "ping_rtt_p50_us": "median echo round-trip time [us]",
        "ping_rtt_p90_us": "90th percentile echo round-trip time [us]",
        "ping_rtt_p99_us": "99th percentile echo round-trip time [us]",
        "ping_sent_per_s": "echo requests sent [1/s]",
        "ping_loss_ratio": "echoes without a reply / sent",
    },
}
# What the fluid engine does not model even when it reports a number for it (its loss is 0 by
# construction): these are judged on the DES only.
DES_ONLY = ("loss_ratio", "multicast_loss_ratio", "multicast_max_receiver_loss_ratio",
            "multicast_lossy_receivers", "rr_latency_p50_us", "rr_latency_p90_us",
            "rr_latency_p99_us", "ping_rtt_mean_us", "ping_rtt_p50_us", "ping_rtt_p90_us",
            "ping_rtt_p99_us", "ping_loss_ratio", "jain_index", "per_vm_goodput_std_gbps",
            "per_vm_goodput_min_gbps")
LOSS = ("loss_ratio", "multicast_loss_ratio", "multicast_max_receiver_loss_ratio",
        "multicast_lossy_receivers")
# Workloads whose senders do not slow down when the host falls behind: a saturated resource
# loses the excess, so the fluid engine's saturation stands in for loss in the bracket.
OPEN_LOOP = ("udp_multicast",)
SATURATED_PCT = 99.999
GROUPS = ("host", "nic", "pcie", "hypervisor", "vnic", "guest", "peer", "tcp", "workload",
          "calibration")

USAGE += "\n".join(f"  {k:<32} {v}" for k, v in COMMON.items())
USAGE += "".join(f"\n  {kind}:\n" + "\n".join(f"  {k:<32} {v}" for k, v in m.items())
                 for kind, m in BY_KIND.items() if m)


def metrics_for(kind: str) -> dict[str, str]:
    return {**COMMON, **BY_KIND.get(kind, {})}


# -- constraints ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Constraint:
    """``metric`` at most (``sense='max'``) or at least (``'min'``) ``limit``."""

    sense: str
    metric: str
    limit: float

    def holds(self, value: float) -> bool:
        if value is None or not math.isfinite(value):
            return False  # not measured (no goodput, no RTT sample): not shown to hold
        return value <= self.limit if self.sense == "max" else value >= self.limit

    def text(self) -> str:
        return f"{self.metric} {'<=' if self.sense == 'max' else '>='} {self.limit:g}"

    def p_holds(self, values: list[float]) -> float | None:
        """Probability that the true mean is on the allowed side (Student-t over the
        replications); None with one replication."""
        x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
        if len(x) < 2:
            return None
        margin = (self.limit - x.mean()) if self.sense == "max" else (x.mean() - self.limit)
        se = x.std(ddof=1) / math.sqrt(len(x))
        if se == 0:
            return 1.0 if margin > 0 else (0.5 if margin == 0 else 0.0)
        return float(sps.t.cdf(margin / se, len(x) - 1))


def parse_constraint(sense: str, text: str | None, kind: str) -> Constraint:
    opt = f"--{sense}"
    if not text or "=" not in text:
        raise ConfigError(f"{opt} {text or ''}: must be {opt} METRIC=VALUE (python -m sim plan "
                          f"--help lists the metrics)")
    metric, _, raw = text.partition("=")
    allowed = metrics_for(kind)
    if metric not in allowed:
        others = sorted(k for k, m in BY_KIND.items() if metric in m)
        why = (f"workload.kind={kind} does not report it (the {others[0]} workload does)"
               if others else "unknown metric")
        raise ConfigError(f"{opt} {metric}={raw}: {why}; allowed: {', '.join(allowed)}")
    try:
        limit = float(raw)
    except ValueError:
        raise ConfigError(f"{opt} {metric}={raw}: must be a number") from None
    if not math.isfinite(limit):
        raise ConfigError(f"{opt} {metric}={raw}: must be a finite number")
    return Constraint(sense, metric, limit)


def check_bounds(constraints: list[Constraint]) -> None:
    """A --min above a --max of the same metric can never hold."""
    for lo in constraints:
        for hi in constraints:
            if lo.sense == "min" and hi.sense == "max" and lo.metric == hi.metric \
                    and lo.limit > hi.limit:
                raise ConfigError(f"--min {lo.metric}={lo.limit:g}: must be <= --max "
                                  f"{hi.metric}={hi.limit:g} (no value can hold both)")


# -- evaluations ----------------------------------------------------------------------------

@dataclass
class Point:
    """One evaluation: per-replication values of every metric (mean, and the tables)."""

    engine: str
    values: dict[str, list[float]]
    tables: dict = field(default_factory=dict)
    error: str = ""                 # a config this count cannot make (a cap): does not fit
    cpu_s: float = 0.0              # CPU seconds of the evaluation (in its own process)

    def mean(self, metric: str) -> float:
        x = [v for v in self.values.get(metric, []) if v is not None and math.isfinite(v)]
        return float(np.mean(x)) if x else math.nan


def _metric_values(res, cfg: Config) -> dict[str, list[float]]:
    reps = res.replications
    out = {k: [r.get(k) if isinstance(r.get(k), (int, float)) else math.nan for r in reps]
           for k in reps[0]}
    vms = cfg.workload.vms
    out["per_vm_goodput_gbps"] = [r["goodput_gbps"] / vms for r in reps]
    per_vm = res.tables.get("vms")
    if per_vm is None or "goodput_gbps" not in getattr(per_vm, "columns", []):
        per_vm = res.tables["flows"]
    if "replication" in per_vm.columns:
        out["per_vm_goodput_min_gbps"] = [
            float(per_vm[per_vm["replication"] == r].groupby("vm")["goodput_gbps"].sum().min())
            for r in range(len(reps))]
    else:
        out["per_vm_goodput_min_gbps"] = [float(per_vm.groupby("vm")["goodput_gbps"].sum().min())]
    return out


def _run(cfg: Config) -> Point:
    """One DES or fluid evaluation (a top-level function: the confirming runs use processes)."""
    from sim.runner import run_experiment
    c0 = time.process_time()
    res = run_experiment(cfg)
    keep = ("contexts", "cores", "pcie", "nics", "bottleneck", "links")
    return Point(cfg.run.engine, _metric_values(res, cfg),
                 {k: v for k, v in res.tables.items() if k in keep},
                 cpu_s=time.process_time() - c0)


class Planner:
    """Evaluations of one profile (a composed config dict) at VM counts, cached by engine."""

    def __init__(self, base: dict, constraints: list[Constraint], screen_measure_s: float,
                 jobs: int, use_fluid: bool = True, run=_run):
        self.base, self.constraints = base, constraints
        self.screen_measure_s, self.jobs, self.use_fluid = screen_measure_s, jobs, use_fluid
        self.run = run
        self.cache: dict[tuple[str, int], Point] = {}
        self.trace: list[tuple[str, int, bool]] = []
        self.fluid_reason = ""
        self.seconds: dict[str, float] = {"fluid": 0.0, "screen": 0.0, "confirm": 0.0}
        self.critical_cpu_s = 0.0  # CPU s along the search's path (rounds' longest runs)

    def config(self, vms: int, stage: str) -> Config:
        d = copy.deepcopy(self.base)
        d["workload"]["vms"] = vms
        d["run"]["engine"] = "des"
        if stage == "screen":
            d["run"]["replications"] = 1
            d["run"]["measure_s"] = min(self.screen_measure_s, d["run"]["measure_s"])
        cfg = to_config(d)
        if stage == "fluid":  # the engine itself says which workloads it solves (ValueError)
            cfg = replace(cfg, run=replace(cfg.run, engine="fluid"))
        return cfg

    def point(self, stage: str, vms: int) -> Point:
        key = (stage, vms)
        if key not in self.cache:
            t0 = time.perf_counter()
            try:
                cfg = self.config(vms, stage)
            except ConfigError as exc:  # a count the schema or this machine cannot hold
                self.cache[key] = Point(stage, {}, error=str(exc))
            else:
                self.cache[key] = self.run(cfg)
                self.critical_cpu_s += self.cache[key].cpu_s
            self.seconds[stage] += time.perf_counter() - t0
        return self.cache[key]

    def prefetch(self, stage: str, counts: list[int]) -> None:
        """Evaluate ``counts`` at once in ``jobs`` processes (same numbers as one by one)."""
        todo = [n for n in counts if (stage, n) not in self.cache]
        if self.jobs < 2 or len(todo) < 2 or self.run is not _run:
            return
        cfgs = {}
        for n in todo:
            try:
                cfgs[n] = self.config(n, stage)
            except ConfigError:
                continue
        if not cfgs:
            return
        t0 = time.perf_counter()
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(cfgs))) as pool:
            pts = list(pool.map(_run, cfgs.values()))
            # side by side on free cores a round takes as long as its longest run
            self.critical_cpu_s += max(pt.cpu_s for pt in pts)
            for n, pt in zip(cfgs, pts):
                self.cache[(stage, n)] = pt
        self.seconds[stage] += time.perf_counter() - t0

    def holds(self, stage: str, vms: int) -> bool:
        pt = self.point(stage, vms)
        ok = not pt.error and all(self._holds(c, pt, stage) for c in self.constraints)
        self.trace.append((stage, vms, ok))
        return ok

    def holds_many(self, stage: str, counts: list[int]) -> list[bool]:
        if stage != "fluid":  # the fluid engine takes milliseconds: no processes for it
            self.prefetch(stage, counts)
        return [self.holds(stage, n) for n in counts]

    def _holds(self, c: Constraint, pt: Point, stage: str) -> bool:
        if stage != "fluid":
            return c.holds(pt.mean(c.metric))
        open_loop = self.base["workload"]["kind"] in OPEN_LOOP
        if c.metric in LOSS and open_loop:
            # an open-loop sender's excess is lost: the engine's loss (or, if it reports
            # none, a saturated resource) is evidence; a closed loop's loss it cannot see
            if math.isfinite(pt.mean(c.metric)):
                return c.holds(pt.mean(c.metric))
            return not _saturated(pt)
        if c.metric in DES_ONLY or not math.isfinite(pt.mean(c.metric)):
            return True  # the fluid engine cannot judge it: the DES steps do
        return c.holds(pt.mean(c.metric))

    def fluid_available(self, vms: int) -> bool:
        if not self.use_fluid:
            self.fluid_reason = "not used (--no-fluid)"
            return False
        try:
            self.point("fluid", vms)
        except ValueError as exc:  # the engine's one line for a workload it does not model
            self.fluid_reason = str(exc).splitlines()[0]
            return False
        except Exception as exc:  # any other failure of the engine: the DES still answers
            self.fluid_reason = f"failed ({type(exc).__name__}: {str(exc).splitlines()[0]})"
            return False
        return True


def _saturated(pt: Point) -> bool:
    """Some resource (a core, link or PCIe direction; not an offered rate or a window) is
    full in the fluid engine's ``bottleneck`` table."""
    b = pt.tables.get("bottleneck")
    if b is None or not len(b):
        return False
    b = b[~b["kind"].isin(("offered", "window"))]
    return len(b) > 0 and float(b["util_pct"].max()) >= SATURATED_PCT


def gallop(holds_many, start: int, vms_max: int, width: int = 1, step: int = 1) -> int:
    """The largest n in 1..vms_max for which ``holds`` (0: none), for a monotone ``holds``.

    ``holds_many(counts)`` judges several counts at once (in parallel); ``width`` counts are
    asked per round. From ``start`` (with ``start + 1`` in the first round when ``width`` > 1:
    a bracket is most often right) it steps away, up while counts hold and down while they
    fail, by ``step`` times 1..``width`` from the last count, then by ``2 width`` times that,
    and so on, until both a count that holds and one that fails are known or an end is reached, then splits the interval between them into
    ``width + 1`` parts per round. With ``width=1`` this is galloping then bisection."""
    lo, hi = 0, vms_max + 1                  # the largest count known to hold, least to fail

    def ask(counts):
        nonlocal lo, hi
        counts = sorted({c for c in counts if lo < c < hi})
        for c, ok in zip(counts, holds_many(counts)):
            if ok and c < hi:
                lo = max(lo, c)
            elif not ok:  # not monotone (a larger count holds): the failing one wins
                hi = min(hi, c)

    n = min(max(start, 1), vms_max)
    ask([n, n + 1][:max(1, min(width, 2))] if n < vms_max else [n])
    offset = step
    while lo == 0 and hi > 1 or hi == vms_max + 1 and lo < vms_max:
        base = lo if lo > 0 else hi
        sign = 1 if lo > 0 else -1
        ask([min(max(base + sign * offset * k, 1), vms_max) for k in range(1, width + 1)])
        offset *= 2 * width
    while hi - lo > 1:
        probes = {lo + (hi - lo) * k // (width + 1) for k in range(1, width + 1)} - {lo}
        ask(sorted(probes) or [(lo + hi) // 2])
    return lo


def plan_vms(p: Planner, start: int, vms_max: int) -> int:
    """Bracket (fluid), screen (short DES), confirm (full DES): the largest count that holds."""
    n, bracketed = start, False
    if p.fluid_available(min(max(start, 1), vms_max)):
        try:
            n = gallop(lambda ms: p.holds_many("fluid", ms), start, vms_max)
            bracketed = True
        except ValueError as exc:  # a count the engine cannot solve: the DES alone
            p.fluid_reason, n = str(exc).splitlines()[0], start
    # Without a bracket the profile's count is only a hint: larger first steps.
    step = 1 if bracketed else max(1, start // 4)
    n = gallop(lambda ms: p.holds_many("screen", ms), max(n, 1), vms_max, p.jobs, step)
    return gallop(lambda ms: p.holds_many("confirm", ms), max(n, 1), vms_max, p.jobs)


# -- the answer -----------------------------------------------------------------------------

def confidence(p: Planner, n: int, vms_max: int) -> dict:
    """Student-t probabilities from the confirming replications at n and n + 1."""
    out: dict = {}
    at = p.cache.get(("confirm", n)) if n >= 1 else None
    above = p.cache.get(("confirm", n + 1)) if n < vms_max else None
    holds = [c.p_holds(at.values.get(c.metric, [])) for c in p.constraints] if at else []
    fails = []
    if above is not None and not above.error:
        fails = [None if (q := c.p_holds(above.values.get(c.metric, []))) is None else 1 - q
                 for c in p.constraints]
    if above is not None and above.error:
        fails = [1.0]
    if holds and None not in holds:
        out["p_n_holds"] = min(holds)
    if fails and None not in fails:
        out["p_next_fails"] = max(fails)
    if "p_n_holds" in out or "p_next_fails" in out:
        out["confidence"] = out.get("p_n_holds", 1.0) * out.get("p_next_fails", 1.0)
    return out


def _host_nics(nics, cfg_nic_gbps: float):
    rows = []
    if nics is None or not len(nics):
        return rows
    for name, g in nics.groupby("nic"):
        util = 100 * max(g["tx_gbps"].mean(), g["rx_gbps"].mean()) / cfg_nic_gbps
        rows.append(("link", f"{name} ({'tx' if g['tx_gbps'].mean() > g['rx_gbps'].mean() else 'rx'})",
                     util))
    return rows


def busiest(pt: Point, line_rate_gbps: float) -> list[tuple[str, str, float]]:
    """The DES's busiest context, core, PCIe direction and NIC port (kind, name, util %),
    busiest first (means over the replications)."""
    t = pt.tables
    rows = []
    if "contexts" in t and len(t["contexts"]):
        c = t["contexts"].groupby(["context", "core", "host"], as_index=False)["util_pct"].mean()
        r = c.loc[c["util_pct"].idxmax()]
        where = f"core {r['core']}" + ("" if r["host"] == "host" else f" of {r['host']}")
        rows.append(("context", f"{r['context']} on {where}", float(r["util_pct"])))
    if "cores" in t and len(t["cores"]):
        c = t["cores"].groupby("core", as_index=False)["util_pct"].mean()
        r = c.loc[c["util_pct"].idxmax()]
        name = f"host core {int(r['core'])}"
        if "contexts" in t and len(t["contexts"]):  # what runs there, busiest first
            x = t["contexts"]
            x = x[(x["host"] == "host") & (x["core"] == r["core"])]
            top = x.groupby("context")["util_pct"].mean().sort_values(ascending=False)
            name += f" ({', '.join(f'{k} {v:.0f}%' for k, v in top.head(3).items())}" \
                    + (f", {len(top) - 3} more" if len(top) > 3 else "") + ")"
        rows.append(("core", name, float(r["util_pct"])))
    if "pcie" in t and len(t["pcie"]):
        c = t["pcie"].groupby(["card", "direction"], as_index=False)["util_pct"].mean()
        r = c.loc[c["util_pct"].idxmax()]
        rows.append(("pcie", f"{r['card']} {r['direction']}", float(r["util_pct"])))
    rows += _host_nics(t.get("nics"), line_rate_gbps)
    return sorted(rows, key=lambda r: -r[2])


def fluid_binding(pt: Point | None) -> tuple[str, float, str] | None:
    """The fluid engine's busiest resource (context, link or PCIe direction; util %) and the
    constraint that binds the most flows (``bottleneck`` table)."""
    if pt is None or pt.error:
        return None
    t, rows = pt.tables, []
    for table, col, kind in (("contexts", "context", "context"), ("links", "link", "link"),
                             ("pcie", "channel", "pcie")):
        if table in t and len(t[table]):
            r = t[table].loc[t[table]["util_pct"].idxmax()]
            rows.append((f"{kind} {r[col]}", float(r["util_pct"])))
    if not rows:
        return None
    b = t.get("bottleneck")
    binds = str(b["constraint"].mode().iloc[0]) if b is not None and len(b) else ""
    name, util = max(rows, key=lambda r: r[1])
    return name, util, binds


def advice(kind: str, name: str, cfg: dict) -> str:
    """What moves a bottleneck of this kind (the knobs the config has for it)."""
    clock = "a faster clock (host=..., host.cpu.clock_hz)"
    if kind in ("context", "core"):
        if name.startswith("peer"):
            return "the client, not the host, is the limit: a faster peer (peer=...) or more " \
                   "peer queues (peer.rx_queues)"
        if ".irq" in name or "rxq" in name:
            tips = [clock, "more RX queues (nic.rx_queues) to spread the vectors over cores"]
            if cfg["workload"]["kind"] == "udp_multicast" and \
                    not cfg["hypervisor"]["vswitch"]["multicast"]["split_rx_mode"]:
                tips.append("splitRxMode (hypervisor.vswitch.multicast.split_rx_mode=true) "
                            "to make each copy in its receiver's context")
            return ", ".join(tips)
        if "vcpu" in name:
            return f"{clock}, more vCPUs per VM (guest.vcpus), a paravirtual vNIC (vnic=vmxnet3)"
        return f"{clock}, more cores or a placement that keeps contexts apart (host.cpu)"
    if kind == "link":
        return "a faster NIC (nic=...) or more ports (host.nic_ports)"
    if kind == "pcie":
        return "a wider or newer slot (pcie=gen2_x8, gen3_x8)"
    if kind == "window":
        return "a larger socket buffer (workload.socket_bytes)"
    return ""


def _fmt_p(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def report_vms(p: Planner, n: int, vms_max: int, line_rate_gbps: float) -> tuple[str, dict]:
    conf = confidence(p, n, vms_max)
    at = p.cache.get(("confirm", n))
    above = p.cache.get(("confirm", n + 1))
    reps = p.base["run"]["replications"]
    lines = [f"answer: {n} VM{'s' if n != 1 else ''} "
             f"({p.base['meta']['name']}, workload.vms searched in 1..{vms_max})"]
    if n == 0:
        lines[0] += ": even one VM breaks a constraint"
    lines.append("constraints: " + ", ".join(c.text() for c in p.constraints))
    for label, pt, m in (("at", at, n), ("above", above, n + 1)):
        if pt is None:
            continue
        if pt.error:
            lines.append(f"  {m} VMs: cannot be configured ({pt.error})")
            continue
        vals = []
        for c in p.constraints:
            x = [v for v in pt.values.get(c.metric, []) if v is not None and math.isfinite(v)]
            ci = (sps.t.ppf(0.975, len(x) - 1) * np.std(x, ddof=1) / math.sqrt(len(x))
                  if len(x) > 1 else None)
            ok = "ok" if c.holds(pt.mean(c.metric)) else "FAILS"
            vals.append(f"{c.metric}={pt.mean(c.metric):.4g}"
                        + (f" ±{ci:.2g}" if ci else "") + f" {ok}")
        lines.append(f"  {m} VMs (DES, {reps} x {p.base['run']['measure_s']:g} s): "
                     + ", ".join(vals))
    if "confidence" in conf:
        parts = [f"P[{n} holds] {_fmt_p(conf['p_n_holds'])}"] if "p_n_holds" in conf else []
        parts += [f"P[{n + 1} fails] {_fmt_p(conf['p_next_fails'])}"] \
            if "p_next_fails" in conf else []
        lines.append(f"confidence: {_fmt_p(conf['confidence'])} ({' x '.join(parts)}, "
                     f"Student-t over {reps} replications)")
    else:
        lines.append(f"confidence: n/a ({reps} replication{'s' if reps != 1 else ''}: "
                     f"run.replications=3 or more gives one)")
    out = {"question": "vms", "answer_vms": n, "vms_max": vms_max, **conf}
    bn = _bottleneck_lines(p, n if n >= 1 else 1, line_rate_gbps, out)
    lines += bn
    lines.append("search: " + " ".join(
        f"{s[0]}{v}{'+' if ok else '-'}" for s, v, ok in p.trace)
        + "  (f fluid, s DES screen, c DES confirm; + holds, - fails)")
    if p.fluid_reason:
        lines.append(f"fluid engine: {p.fluid_reason.removeprefix('fluid engine: ')}")
    lines.append("time: " + ", ".join(f"{k} {v:.1f} s" for k, v in p.seconds.items())
                 + f"; on {p.jobs} free core(s) about {p.critical_cpu_s:.0f} s (the CPU seconds "
                 f"of each round's longest run)")
    out.update(constraints=[c.__dict__ for c in p.constraints],
               search=[{"stage": s, "vms": v, "holds": ok} for s, v, ok in p.trace],
               fluid_engine=p.fluid_reason or "used", seconds=p.seconds,
               critical_cpu_s=p.critical_cpu_s)
    return "\n".join(lines), out


def _bottleneck_lines(p: Planner, n: int, line_rate_gbps: float, out: dict,
                      stage: str = "confirm") -> list[str]:
    lines = []
    pt = p.cache.get((stage, n))
    fl = fluid_binding(p.cache.get(("fluid", n)))
    if fl:
        lines.append(f"fluid engine at {n}: busiest {fl[0]} at {fl[1]:.1f}% (the flows are "
                     f"bound by: {fl[2]})")
        out["fluid_bottleneck"] = {"busiest": fl[0], "util_pct": fl[1], "binding": fl[2]}
    if pt is not None and not pt.error:
        rows = busiest(pt, line_rate_gbps)
        if rows:
            kind, name, util = rows[0]
            ctx = next((r for r in rows if r[0] == "context"), None)
            # a core is the place; the context on it is what to name (and what the advice is for)
            if kind == "core" and ctx and abs(ctx[2] - util) < 1.0:
                kind, name, util = ctx
            # a shared core's advice is that of the busiest context on it
            subject = name.partition("(")[2] or name
            lines.append(f"bottleneck (DES at {n}): {kind} {name} at {util:.1f}%: "
                         f"{advice(kind, subject, p.base)}")
            lines.append("  busiest: " + "; ".join(f"{k} {nm} {u:.1f}%" for k, nm, u in rows))
            out["bottleneck"] = {"kind": kind, "name": name, "util_pct": util,
                                 "advice": advice(kind, subject, p.base)}
            out["busiest"] = [{"kind": k, "name": nm, "util_pct": u} for k, nm, u in rows]
            if fl:
                # a context by its name; a link or PCIe direction by its kind (the DES names a
                # link by the host's port, the fluid engine by the sending end)
                agree = fl[0].split()[0] == kind and (kind != "context"
                                                      or name.split()[0] in fl[0])
                lines.append(f"  the engines {'agree' if agree else 'differ'} on the busiest "
                             f"resource")
                out["engines_agree"] = agree
    return lines


# -- the command ----------------------------------------------------------------------------

OPTIONS = ("--max", "--min", "--vms-max", "--choose", "--cost", "--screen-measure-s", "--jobs",
           "--out", "--no-fluid")


def parse_args(argv: list[str]) -> dict:
    opts: dict = {"max": [], "min": [], "overrides": [], "no-fluid": False}
    it = iter(argv)
    for a in it:
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if not a.startswith("-"):
            opts["overrides"].append(a)
            continue
        if name not in OPTIONS:
            raise ConfigError(f"unknown option {a!r} for plan: allowed {', '.join(OPTIONS)}")
        if name == "--no-fluid":
            opts["no-fluid"] = True
            continue
        if not eq:
            value = next(it, None)
            if value is None:
                raise ConfigError(f"{name}: needs a value (python -m sim plan --help)")
        key = name[2:]
        if key in ("max", "min"):
            opts[key].append(value)
        elif key in opts:
            raise ConfigError(f"{name}={value}: given twice; allowed once")
        else:
            opts[key] = value
    return opts


def _positive_int(opt: str, value: str) -> int:
    if not re.fullmatch(r"\+?\d+", value.strip()) or int(value) < 1:
        raise ConfigError(f"{opt}={value}: must be a positive integer")
    return int(value)


def _vms_cap() -> int:
    """The schema's largest workload.vms (its check in models/workloads)."""
    from models.workloads import WorkloadParams
    from sim.schema_help import _checks
    m = re.search(r"\.\.(\d+)", _checks(WorkloadParams).get("vms", ""))
    return int(m.group(1)) if m else 1


def _options_of(group: str) -> list[str]:
    return sorted(p.stem for p in Path(CONFIG_DIR, group).glob("*.yaml"))


def parse_choose(text: str, cost: str | None) -> tuple[str, list[str]]:
    group, eq, raw = text.partition("=")
    if group not in GROUPS or not Path(CONFIG_DIR, group).is_dir():
        raise ConfigError(f"--choose {text}: unknown config group {group!r}; allowed: "
                          f"{', '.join(g for g in GROUPS if Path(CONFIG_DIR, g).is_dir())}")
    options = [o for o in raw.split(",") if o]
    have = _options_of(group)
    if not eq or len(options) < 1:
        raise ConfigError(f"--choose {text}: must list options: {group}=A,B,...; allowed: "
                          f"{', '.join(have)}")
    for o in options:
        if o not in have:
            raise ConfigError(f"--choose {group}={o}: not an option of {group}; allowed: "
                              f"{', '.join(have)}")
    if len(set(options)) != len(options):
        raise ConfigError(f"--choose {text}: lists an option twice")
    if cost is None:
        return group, options
    costs = {}
    for item in cost.split(","):
        k, eq, v = item.partition("=")
        if k not in options:
            raise ConfigError(f"--cost {item}: {k!r} is not one of the --choose options "
                              f"({', '.join(options)})")
        try:
            c = float(v)
        except ValueError:
            raise ConfigError(f"--cost {item}: must be OPTION=NUMBER") from None
        if not math.isfinite(c) or c < 0:
            raise ConfigError(f"--cost {item}: must be a finite number >= 0")
        costs[k] = c
    missing = [o for o in options if o not in costs]
    if missing:
        raise ConfigError(f"--cost {cost}: gives no cost for {', '.join(missing)}; allowed: "
                          f"a cost for every --choose option")
    return group, sorted(options, key=lambda o: (costs[o], options.index(o)))


def _check_out(path: str) -> Path:
    out = Path(path)
    parent = out.parent if str(out.parent) else Path(".")
    if out.is_dir() or not parent.is_dir() or not os.access(parent, os.W_OK):
        raise ConfigError(f"--out={path}: must be a file in a writable directory")
    return out


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished workers (the confirming runs)."""
    import resource
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _write_json(path: Path, data: dict) -> None:
    from sim.results import _clean
    write_atomic(path, lambda tmp: Path(tmp).write_text(
        json.dumps(_clean(data), indent=2, default=float)))


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        _print(USAGE)
        return 0
    from sim.compose import compose_dict
    try:
        opts = parse_args(argv)
        overrides = [o for o in opts["overrides"] if o.partition("=")[0] != "workload.vms"]
        start_override = [o for o in opts["overrides"] if o.partition("=")[0] == "workload.vms"]
        base = compose_dict(CONFIG_DIR, opts["overrides"])
        base_cfg = to_config(copy.deepcopy(base))
        kind = base_cfg.workload.kind
        constraints = [parse_constraint(s, t, kind) for s in ("max", "min") for t in opts[s]]
        if not constraints:
            raise ConfigError("plan: needs at least one constraint, --max METRIC=VALUE or --min "
                              f"METRIC=VALUE; metrics: {', '.join(metrics_for(kind))}")
        check_bounds(constraints)
        cap = _vms_cap()
        vms_max = cap
        if "vms-max" in opts:
            vms_max = _positive_int("--vms-max", opts["vms-max"])
            if vms_max > cap:
                raise ConfigError(f"--vms-max={opts['vms-max']}: must be in 1..{cap} (the "
                                  f"schema's cap on workload.vms)")
        # the default screen: 0.1 simulated s, or the whole window if that is shorter
        screen = opts.get("screen-measure-s", f"{min(0.1, base_cfg.run.measure_s):g}")
        try:
            screen_s = float(screen)
        except ValueError:
            screen_s = math.nan
        if not (math.isfinite(screen_s) and 0 < screen_s <= base_cfg.run.measure_s):
            raise ConfigError(f"--screen-measure-s={screen}: must be a number > 0 and <= "
                              f"run.measure_s ({base_cfg.run.measure_s:g})")
        jobs = _positive_int("--jobs", opts["jobs"]) if "jobs" in opts else \
            max(1, min(2, os.cpu_count() or 1))
        choose = parse_choose(opts["choose"], opts.get("cost")) if "choose" in opts else None
        if "cost" in opts and choose is None:
            raise ConfigError(f"--cost {opts['cost']}: needs --choose GROUP=A,B,...")
        out = _check_out(opts["out"]) if "out" in opts else None
        if choose:
            rest = [o for o in opts["overrides"] if o.partition("=")[0] != choose[0]]
            for o in choose[1]:  # every option composes with the rest, before anything runs
                to_config(compose_dict(CONFIG_DIR, [*rest, f"{choose[0]}={o}"]))
    except ConfigError as exc:
        return fail(str(exc))
    t0, c0 = time.perf_counter(), _cpu_s()
    line_rate = base_cfg.nic.link.line_rate_gbps
    if choose is None:
        p = Planner(base, constraints, screen_s, jobs, use_fluid=not opts["no-fluid"])
        n = plan_vms(p, base_cfg.workload.vms, vms_max)
        text, data = report_vms(p, n, vms_max, line_rate)
    else:
        text, data = choose_option(opts["overrides"], choose, constraints, screen_s, jobs,
                                   not opts["no-fluid"])
    wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
    text += f"\nplanned in {wall:.1f} s wall, {cpu:.1f} s CPU (with the worker processes)"
    data.update(wall_s=wall, cpu_s=cpu, overrides=opts["overrides"])
    if start_override and choose is None:
        data["start_vms"] = base_cfg.workload.vms
    _print(text)
    if out is not None:
        _write_json(out, data)
        _print(f"plan: {out}")
    return 0


def choose_option(overrides: list[str], choose: tuple[str, list[str]],
                  constraints: list[Constraint], screen_s: float, jobs: int,
                  use_fluid: bool, run=_run) -> tuple[str, dict]:
    """The first option in cost order for which the DES (confirm settings) finds every
    constraint holding at the profile's workload.vms; the fluid engine's verdict is shown.
    Options are run ``jobs`` at a time, cheapest first (at most ``jobs - 1`` runs wasted)."""
    from sim.compose import compose_dict
    group, options = choose
    overrides = [o for o in overrides if o.partition("=")[0] != group]  # the choice decides
    lines, rows, chosen, last = [], [], None, None
    planners = {}
    for i, o in enumerate(options):
        if o not in planners:  # the next batch, in parallel
            for b in options[i:i + jobs]:
                base = compose_dict(CONFIG_DIR, [*overrides, f"{group}={b}"])
                planners[b] = Planner(base, constraints, screen_s, jobs, use_fluid, run)
            batch = [planners[b] for b in options[i:i + jobs]]
            cfgs = [q.config(q.base["workload"]["vms"], "confirm") for q in batch]
            if run is _run and len(batch) > 1:
                with ProcessPoolExecutor(max_workers=len(batch)) as pool:
                    for q, c, pt in zip(batch, cfgs, pool.map(_run, cfgs)):
                        q.cache[("confirm", c.workload.vms)] = pt
        p = planners[o]
        base, vms = p.base, p.base["workload"]["vms"]
        fluid = None
        if p.fluid_available(vms):
            fluid = p.holds("fluid", vms)
        ok = p.holds("confirm", vms)
        pt = p.cache[("confirm", vms)]
        vals = ", ".join(f"{c.metric}={pt.mean(c.metric):.4g}" for c in constraints)
        lines.append(f"  {group}={o}: {'holds' if ok else 'fails'} at {vms} VMs ({vals}"
                     + ("" if fluid is None else f"; fluid: {'holds' if fluid else 'fails'}")
                     + ")")
        conf = [c.p_holds(pt.values.get(c.metric, [])) for c in constraints]
        rows.append({"option": o, "holds": ok, "fluid_holds": fluid,
                     "values": {c.metric: pt.mean(c.metric) for c in constraints},
                     "p_holds": None if None in conf else min(conf)})
        last = (p, vms, base)
        if ok:
            chosen = (o, p, vms, None if None in conf else min(conf))
            break
    head = [f"answer: {group}={chosen[0]}" if chosen else
            f"answer: none of {group}={','.join(options)} holds"]
    head.append("constraints: " + ", ".join(c.text() for c in constraints)
                + f" at workload.vms={last[1]}")
    if chosen:
        reps = chosen[1].base["run"]["replications"]
        head.append(f"confidence: {_fmt_p(chosen[3])} that it holds (Student-t over {reps} "
                    f"replications; cheaper options failed on their means)")
    out = {"question": "choose", "group": group, "order": options, "tried": rows,
           "answer": chosen[0] if chosen else None,
           "constraints": [c.__dict__ for c in constraints]}
    p, vms, base = (chosen[1], chosen[2], chosen[1].base) if chosen else last
    from sim.config import to_config as _tc
    bn = _bottleneck_lines(p, vms, _tc(copy.deepcopy(base)).nic.link.line_rate_gbps, out)
    return "\n".join(head + ["tried, cheapest first:"] + lines + bn), out
