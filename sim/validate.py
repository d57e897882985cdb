"""Validation against the published measurements: ``python -m sim validate``.

``validation/targets.yaml`` holds one entry per target id of the seeds' ``CLAIMS.md``: the source
file, a short quote, whether calibration may use it (``fitted``) or not (``predicted``), and its
checks. A check names a *quantity* and a *rule*:

- quantities: ``{metric: M, run: [overrides]}`` (a scalar: mean over replications with its 95%
  half-width); ``{ratio: [Q, Q]}``; ``{metric, run, sweep: {key, values}}`` (a curve), reduced to
  a scalar by ``stat: max|min|first|last|at:X``; ``{diff: [Q, Q]}``; ``{each: [Q, ...]}`` (every
  one must pass).
- ``unevaluable: reason`` on a check: not run, reported n/a with the reason.
- scalar rules: ``value`` with relative ``tol`` (0.05 by default), ``band: [lo, hi]``, ``min``,
  ``max``, ``mixed: x`` (for ``each``: some above x and some below).
- curve rules: ``saturates_at: N`` (the first x whose y reaches ``frac`` of the curve's maximum),
  ``r2_min`` (a straight-line fit), ``end_ratio: {from, to, band}`` (y(to) / y(from)),
  ``largest_below: {limit, value, tol}`` (the largest x whose y is under the limit),
  ``increasing_from: x`` (y rises with every point from x on).

Every run is one Hydra composition (``configs/`` plus the run's overrides plus the validation's
run settings); identical runs are made once and in parallel. Metrics are the runner's summary
keys plus the few below that read its tables (``METRICS``).
"""
from __future__ import annotations

import html
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ROOT / "validation" / "targets.yaml"
# --targets: the seeds' targets (CLAIMS.md), or the public measurements beyond them (issue 12:
# all predicted, each with its source address; docs/sources-beyond.md), reported apart.
TARGET_SETS = {"seeds": (TARGETS, "report"),
               "beyond": (ROOT / "validation" / "targets_beyond.yaml", "report_beyond")}
CONFIG_DIR = ROOT / "configs"

# --- metrics -------------------------------------------------------------------------------
# Each derived metric maps one replication's (summary, tables, config) to a number. Summary keys
# are metrics as they are; these read the tables for what the summary does not carry.


def _host_nics(t):
    return t["nics"][~t["nics"]["nic"].str.startswith(("peer", "remote."))]


def _per_nic(col):
    return lambda s, t, cfg: float(_host_nics(t)[col].mean())


def _tso_bytes(s, t, cfg):
    n = _host_nics(t)
    packets = n["tx_packets_per_s"].sum()
    return float((n["tx_gbps"] * 1e9 / 8).sum() / packets) if packets > 0 else math.nan


def _vcpu_max(s, t, cfg):
    """The busiest VM's vCPU utilisation, partner VMs included (VM-to-VM topologies)."""
    cols = [c for c in ("vcpu_util_pct", "partner_vcpu_util_pct") if c in t["vms"]]
    return float(t["vms"][cols].to_numpy().max())


def _vm_goodput_mean_mbps(s, t, cfg):
    return float(t["vms"]["goodput_gbps"].mean() * 1000)


def _vm_goodput_cv(s, t, cfg):
    g = t["vms"]["goodput_gbps"]
    return float(g.std(ddof=1) / g.mean()) if len(g) > 1 and g.mean() > 0 else 0.0


def _goodput_per_port(s, t, cfg):
    return s["goodput_gbps"] / len(_host_nics(t))


def _guest_rx_packets_per_nic(s, t, cfg):
    return s["guest_rx_packets_per_s"] / len(_host_nics(t))


def _cores_per_gbps(s, t, cfg):
    """Host cores busy per Gbps of goodput (CPU cost of the traffic, idle cores excluded)."""
    busy = t["cores"]["util_pct"].sum() / 100
    return busy / s["goodput_gbps"] if s["goodput_gbps"] > 0 else math.nan


def _hypervisor_cores_per_gbps(s, t, cfg):
    """The hypervisor's contexts' cores busy per Gbps of goodput (vectors, networking contexts;
    not the guests' vCPUs: ``sim.metrics.hypervisor_contexts``)."""
    busy = s["hypervisor_cpu_util_pct"] / 100 * cfg.host.cpu.n_cores
    return busy / s["goodput_gbps"] if s["goodput_gbps"] > 0 else math.nan


def _mc_vcpu_per_10kpps(s, t, cfg):
    """A multicast receiver's vCPU use (%) per 10K packets/s it receives."""
    rate = cfg.workload.multicast.packet_rate_pps
    return float(t["vms"]["vcpu_util_pct"].mean()) / (rate / 1e4)


def _exits_per_packet(s, t, cfg):
    return s["exits_per_s"] / s["host_packets_per_s"] if s["host_packets_per_s"] else math.nan


METRICS = {
    "vcpu_util_max_pct": _vcpu_max,
    "vm_goodput_mean_mbps": _vm_goodput_mean_mbps,
    "vm_goodput_std_mbps": lambda s, t, cfg: s["per_vm_goodput_std_gbps"] * 1000,
    "vm_goodput_cv": _vm_goodput_cv,
    "goodput_per_port_gbps": _goodput_per_port,
    "nic_tx_packets_per_s": _per_nic("tx_packets_per_s"),
    "nic_tx_frames_per_s": _per_nic("tx_frames_per_s"),
    "nic_rx_frames_per_s": _per_nic("rx_frames_per_s"),
    "nic_tso_bytes": _tso_bytes,
    "guest_rx_packets_per_nic": _guest_rx_packets_per_nic,
    "host_cores_per_gbps": _cores_per_gbps,
    "hypervisor_cores_per_gbps": _hypervisor_cores_per_gbps,
    "mc_vcpu_pct_per_10kpps": _mc_vcpu_per_10kpps,
    "exits_per_packet": _exits_per_packet,
}


def _measure_run(args: tuple[tuple[str, ...], tuple[str, ...]]) -> dict:
    """Run one composition; every metric's per-replication values (or an error line)."""
    overrides, settings = args
    from sim.compose import compose_checked
    from sim.config import ConfigError
    from sim.runner import run_experiment
    try:
        cfg = compose_checked(str(CONFIG_DIR), [*overrides, *settings])
        t0 = time.process_time()
        res = run_experiment(cfg)
    except ConfigError as e:  # e.g. a workload the fluid engine does not solve
        return {"error": str(e)}
    reps = res.replications
    n = len(reps)
    by_rep = [{k: v[v["replication"] == r] if "replication" in v else v
               for k, v in res.tables.items()} for r in range(n)]
    out = {k: [float(r[k]) for r in reps] for k in reps[0]
           if isinstance(reps[0][k], (int, float))}
    for name, fn in METRICS.items():
        vals = []
        for s, t in zip(reps, by_rep):
            try:
                vals.append(float(fn(s, t, cfg)))
            except (KeyError, ZeroDivisionError, ValueError):
                vals.append(math.nan)
        out[name] = vals
    out["_cpu_s"] = [time.process_time() - t0]
    return out


# --- quantities ----------------------------------------------------------------------------


@dataclass
class Scalar:
    mean: float
    ci: float | None  # 95% half-width, None with one replication

    def text(self) -> str:
        m = _fmt(self.mean)
        # a half-width below 1e-9 of the mean is rounding (identical replications): not shown
        if not self.ci or self.ci < 1e-9 * abs(self.mean):
            return m
        return f"{m} ±{_fmt(self.ci)}"


@dataclass
class Curve:
    key: str
    xs: list
    ys: list[Scalar]


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    a = abs(x)
    if a >= 1e5:
        return f"{x / 1e3:.0f}K"
    if a >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def _scalar(values: list[float]) -> Scalar:
    x = np.array(values, dtype=float)
    x = x[~np.isnan(x)]
    if not len(x):
        return Scalar(math.nan, None)
    ci = None
    if len(x) > 1:
        ci = float(sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return Scalar(float(x.mean()), ci)


class Missing(Exception):
    """A run this quantity needs failed or cannot be made with this engine."""


def _runs_of(q) -> list[tuple[str, ...]]:
    """Every composition (override tuple) quantity ``q`` needs."""
    for op in ("ratio", "diff"):
        if op in q:
            return [r for sub in q[op] for r in _runs_of(sub)]
    if "each" in q:
        return [r for sub in q["each"] for r in _runs_of(sub)]
    base = tuple(q["run"])
    if "sweep" in q:
        sw = q["sweep"]
        return [(*base, f"{sw['key']}={v}") for v in sw["values"]]
    return [base]


def _value(q, results: dict) -> Scalar | Curve | list:
    if "ratio" in q:
        a, b = (_value(sub, results) for sub in q["ratio"])
        if not isinstance(a, Scalar) or not isinstance(b, Scalar):
            raise ValueError("ratio of non-scalars")
        mean = a.mean / b.mean if b.mean else math.nan
        ci = None
        if a.ci is not None and b.ci is not None and a.mean and b.mean:
            ci = abs(mean) * math.hypot(a.ci / a.mean, b.ci / b.mean)
        return Scalar(mean, ci)
    if "diff" in q:
        a, b = (_value(sub, results) for sub in q["diff"])
        ci = math.hypot(a.ci, b.ci) if a.ci is not None and b.ci is not None else None
        return Scalar(a.mean - b.mean, ci)
    if "each" in q:
        return [_value(sub, results) for sub in q["each"]]
    runs = _runs_of(q)
    ys = []
    for r in runs:
        res = results.get(r)
        if res is None or "error" in res:
            raise Missing(res["error"] if res else "not run")
        if q["metric"] not in res:
            raise Missing(f"no metric {q['metric']}")
        ys.append(_scalar(res[q["metric"]]))
    if "sweep" not in q:
        return ys[0]
    curve = Curve(q["sweep"]["key"], list(q["sweep"]["values"]), ys)
    stat = q.get("stat")
    if stat is None:
        return curve
    means = [y.mean for y in ys]
    if stat in ("max", "min") and not np.isfinite(means).any():
        return ys[0]      # no values (the fluid engine on a DES-only metric): nan, not a crash
    if stat == "max":
        return ys[int(np.nanargmax(means))]
    if stat == "min":
        return ys[int(np.nanargmin(means))]
    if stat == "first":
        return ys[0]
    if stat == "last":
        return ys[-1]
    if str(stat).startswith("at:"):
        return ys[curve.xs.index(type(curve.xs[0])(str(stat)[3:]))]
    raise ValueError(f"unknown stat {stat!r}")


# --- rules ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    target: str
    check: str
    measured: str
    predicted: str
    error: str
    ok: bool | None  # None: could not be evaluated
    role: str
    study: str
    curve: Curve | None = None
    value: float | None = None


def _scalar_rule(c: dict, v: Scalar) -> tuple[str, str, bool]:
    m = v.mean
    if "value" in c:
        tol = c.get("tol", 0.05)
        ref = c["value"]
        return (f"{_fmt(ref)} ±{tol:.0%}", f"{(m - ref) / ref:+.1%}",
                abs(m - ref) <= tol * abs(ref))
    if "band" in c:
        lo, hi = c["band"]
        mid = (lo + hi) / 2
        err = 0.0 if lo <= m <= hi else (m - (hi if m > hi else lo)) / mid
        return f"{_fmt(lo)}..{_fmt(hi)}", f"{err:+.1%}", lo <= m <= hi
    if "min" in c:
        return f">= {_fmt(c['min'])}", f"{(m - c['min']) / abs(c['min']) :+.1%}" if c["min"] \
            else "", m >= c["min"]
    if "max" in c:
        return f"<= {_fmt(c['max'])}", f"{(m - c['max']) / abs(c['max']):+.1%}" if c["max"] \
            else "", m <= c["max"]
    raise ValueError(f"no rule in check {c}")


def _curve_rule(c: dict, cv: Curve) -> tuple[str, str, str, bool]:
    """(measured, predicted, error, ok) of a rule on a curve."""
    xs, ys = cv.xs, np.array([y.mean for y in cv.ys])
    if "saturates_at" in c:
        frac = c.get("frac", 0.95)
        if not np.isfinite(ys).any():   # the engine gives no value (the fluid engine: a DES metric)
            return f"saturates at {c['saturates_at']}", "no values", "", False
        top = np.nanmax(ys)
        first = next(x for x, y in zip(xs, ys) if y >= frac * top)
        want = c["saturates_at"]
        return (f"saturates at {want}", f"at {first} ({_fmt(top)})", "",
                first == want)
    if "r2_min" in c:
        fit = sps.linregress(np.array(xs, dtype=float), ys)
        r2 = fit.rvalue ** 2
        return f"R² >= {c['r2_min']}", f"R² {r2:.3f}", "", r2 >= c["r2_min"]
    if "end_ratio" in c:
        e = c["end_ratio"]
        r = ys[xs.index(e["to"])] / ys[xs.index(e["from"])]
        lo, hi = e["band"]
        return (f"y({e['to']})/y({e['from']}) {lo}..{hi}", f"{r:.3f}", "", lo <= r <= hi)
    if "largest_below" in c:
        e = c["largest_below"]
        below = [x for x, y in zip(xs, ys) if y < e["limit"]]
        # the largest x before the first point at or over the limit
        best = None
        for x, y in zip(xs, ys):
            if y >= e["limit"]:
                break
            best = x
        tol = e.get("tol", 0)
        want = e.get("value")
        if want is None:  # only: some point of the sweep is over the limit
            ok = len(below) < len(xs)
            return (f"loss past some x (< {_fmt(e['limit'])})", f"largest ok x {best}", "", ok)
        ok = best is not None and abs(best - want) <= tol
        if want == xs[-1]:  # "even at the last point": no point over the limit
            ok = best == xs[-1]
        err = "" if best is None else f"{best - want:+d}"
        return f"largest x {want} (±{tol})", f"{best}", err, ok
    if "increasing_from" in c:
        i = xs.index(c["increasing_from"])
        tail = ys[i:]
        ok = bool(np.all(np.diff(tail) > 0))
        return f"rises from x={c['increasing_from']}", " ".join(_fmt(y) for y in tail), "", ok
    raise ValueError(f"no curve rule in check {c}")


def evaluate(target: dict, results: dict) -> list[Outcome]:
    out = []
    for c in target["checks"]:
        base = dict(target=target["id"], check=c.get("what", ""), role=target["role"],
                    study=str(target["study"]))
        if "unevaluable" in c:  # its runs cannot be composed yet; the target file says why
            out.append(Outcome(measured="", predicted=f"n/a: {c['unevaluable']}", error="",
                               ok=None, **base))
            continue
        try:
            v = _value(c["of"], results)
            if isinstance(v, Curve):
                measured, predicted, err, ok = _curve_rule(c, v)
                out.append(Outcome(measured=measured, predicted=predicted, error=err, ok=ok,
                                   curve=v, **base))
            elif isinstance(v, list):
                parts = [_scalar_rule(c, s) for s in v] if "mixed" not in c else None
                if parts is not None:
                    ok = all(p[2] for p in parts)
                    out.append(Outcome(measured=parts[0][0] + " each",
                                       predicted=", ".join(s.text() for s in v), error="",
                                       ok=ok, **base))
                else:
                    x = c["mixed"]
                    ok = any(s.mean > x for s in v) and any(s.mean < x for s in v)
                    out.append(Outcome(measured=f"mixed around {x}",
                                       predicted=", ".join(s.text() for s in v), error="",
                                       ok=ok, **base))
            else:
                measured, err, ok = _scalar_rule(c, v)
                out.append(Outcome(measured=measured, predicted=v.text(), error=err, ok=ok,
                                   value=v.mean, **base))
        except Missing as e:
            out.append(Outcome(measured="", predicted=f"n/a: {e}", error="", ok=None, **base))
    return out


# --- the command ---------------------------------------------------------------------------


@dataclass
class Report:
    outcomes: list[Outcome]
    targets: list[dict]
    results: dict = field(repr=False)
    settings: tuple = ()
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def target_ok(self, tid: str) -> bool | None:
        # bool(): a rule may answer with a numpy bool, which is never ``False`` by identity
        oks = [None if o.ok is None else bool(o.ok) for o in self.outcomes if o.target == tid]
        if any(o is False for o in oks):
            return False
        if any(o is None for o in oks):
            return None
        return True


def load_targets(path: Path = TARGETS) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


def run_settings(spec: dict, engine: str, quick: bool) -> tuple[str, ...]:
    s = list(spec.get("settings", []))
    if quick:
        s += list(spec.get("quick", []))
    if engine != "des":
        s.append(f"run.engine={engine}")
    return tuple(s)


def validate(only: list[str] | None = None, engine: str = "des", quick: bool = False,
             jobs: int | None = None, progress=None, path: Path = TARGETS) -> Report:
    spec = load_targets(path)
    targets = spec["targets"]
    if only:
        known = {t["id"] for t in targets}
        bad = [i for i in only if i not in known]
        if bad:
            raise ValueError(f"--only: unknown target id {bad[0]!r}; allowed: the ids of "
                             f"validation/{path.name} ({len(known)} of them)")
        targets = [t for t in targets if t["id"] in only]
    settings = run_settings(spec, engine, quick)
    runs: list[tuple[str, ...]] = []
    for t in targets:
        for c in t["checks"]:
            if "unevaluable" in c:
                continue
            for r in _runs_of(c["of"]):
                if r not in runs:
                    runs.append(r)
    jobs = jobs or os.cpu_count() or 1
    t0, c0 = time.time(), time.process_time()
    results: dict = {}
    if jobs == 1:
        for i, r in enumerate(runs):
            results[r] = _measure_run((r, settings))
            if progress:
                progress(i + 1, len(runs), r)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for i, (r, res) in enumerate(zip(runs, pool.map(_measure_run,
                                                            [(r, settings) for r in runs]))):
                results[r] = res
                if progress:
                    progress(i + 1, len(runs), r)
    cpu = time.process_time() - c0 + sum(res.get("_cpu_s", [0])[0] for res in results.values())
    outcomes = [o for t in targets for o in evaluate(t, results)]
    return Report(outcomes, targets, results, settings, cpu, time.time() - t0)


def table(report: Report):
    import pandas as pd
    return pd.DataFrame([{
        "id": o.target, "check": o.check, "measured": o.measured, "predicted": o.predicted,
        "error": o.error, "pass": {True: "pass", False: "FAIL", None: "n/a"}[o.ok],
        "role": o.role} for o in report.outcomes])


def summary_line(report: Report) -> str:
    ids = [t["id"] for t in report.targets]
    states = [report.target_ok(i) for i in ids]
    by_role = {}
    for t, s in zip(report.targets, states):
        r = by_role.setdefault(t["role"], [0, 0])
        r[0] += s is True
        r[1] += 1
    roles = ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(by_role.items()))
    return (f"{sum(s is True for s in states)} of {len(ids)} targets pass ({roles}); "
            f"{sum(s is None for s in states)} not evaluated; "
            f"{len(report.results)} runs, {report.wall_s:.0f} s wall, {report.cpu_s:.0f} s CPU")


def write_html(report: Report, path: Path, title: str = "the published measurements") -> None:
    """A self-contained page: the table, then one figure per study (plotly, offline); each
    target's source address where the targets give one (``source`` starting with http)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    df = table(report)
    parts = ["<!doctype html><meta charset='utf-8'><title>vnetsim validation</title>",
             "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;"
             "border-bottom:1px solid #ddd;font-size:13px}.FAIL{color:#b00}.pass{color:#070}"
             "</style>",
             f"<h1>vnetsim: validation against {html.escape(title)}</h1>",
             f"<p>{html.escape(summary_line(report))}</p>",
             f"<p>Run settings: <code>{html.escape(' '.join(report.settings))}</code>. "
             "Each target is marked <b>fitted</b> (calibration may use it) or <b>predicted</b> "
             "(never used in calibration).</p><table><tr>"]
    parts.append("".join(f"<th>{c}</th>" for c in df.columns) + "</tr>")
    for _, row in df.iterrows():
        parts.append("<tr>" + "".join(
            f"<td class='{html.escape(str(v))}'>{html.escape(str(v))}</td>" for v in row)
            + "</tr>")
    parts.append("</table>")
    sources = [t for t in report.targets if str(t.get("source", "")).startswith("http")]
    if sources:
        parts.append("<h2>Sources</h2><ul>" + "".join(
            f"<li><b>{html.escape(t['id'])}</b>: <a href='{html.escape(t['source'])}'>"
            f"{html.escape(t.get('source_title', t['source']))}</a>: "
            f"&ldquo;{html.escape(t.get('quote', ''))}&rdquo;</li>" for t in sources) + "</ul>")
    first = True
    by_study: dict[str, list[Outcome]] = {}
    for o in report.outcomes:
        by_study.setdefault(o.study, []).append(o)
    for study, outs in by_study.items():
        curves = [o for o in outs if o.curve is not None]
        scalars = [o for o in outs if o.value is not None]
        n = len(curves) + (1 if scalars else 0)
        if not n:
            continue
        titles = [f"{o.target}: {o.check}" for o in curves] + (["scalar checks"] if scalars
                                                                 else [])
        fig = make_subplots(rows=n, cols=1, subplot_titles=titles)
        for i, o in enumerate(curves, 1):
            fig.add_trace(go.Scatter(
                x=o.curve.xs, y=[y.mean for y in o.curve.ys], mode="lines+markers",
                name=o.target, error_y=dict(array=[y.ci or 0 for y in o.curve.ys])),
                row=i, col=1)
            fig.update_xaxes(title_text=o.curve.key, row=i, col=1)
        if scalars:
            fig.add_trace(go.Bar(
                x=[f"{o.target}: {o.check}"[:60] for o in scalars], y=[o.value for o in scalars],
                marker_color=["#2a7" if o.ok else "#c33" for o in scalars],
                text=[o.measured for o in scalars], name="predicted (text: source)"),
                row=n, col=1)
        fig.update_layout(height=320 * n, title=f"study {study}", showlegend=False)
        parts.append(fig.to_html(full_html=False, include_plotlyjs=True if first else False))
        first = False
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text("\n".join(parts))
    tmp.replace(path)


USAGE = """usage: python -m sim validate [--only ID,ID...] [--engine des|fluid] [--quick] [--jobs N]
                            [--out DIR] [--targets seeds|beyond]

Runs every target of validation/targets.yaml (or --only those ids), prints one line per check
(id, the source's figure, the prediction with its 95% half-width, error, pass/FAIL/n/a, fitted or
predicted), writes DIR/report.csv and DIR/report.html (default DIR: validation/), and exits 1 if
any target fails. --targets beyond: the public measurements beyond the five studies
(validation/targets_beyond.yaml, all predicted, with their sources) into DIR/report_beyond.csv
and .html; a check whose runs do not compose is n/a, never a pass. --quick: 2 replications of 0.2 simulated seconds (a smoke check, not a
verdict)."""


def fail(message: str) -> int:
    import sys
    print(f"error: {message}", file=sys.stderr)
    return 2


def parse_options(argv: list[str], command: str, defaults: dict, usage: str) -> dict | int:
    """``--key VALUE`` for each key of ``defaults`` whose default is not a bool, ``--key`` for
    the bools, ``-h``/``--help``; ``--jobs`` must be an integer >= 1. Returns the options, or
    the exit status (0 after the help, 2 after a one-line error)."""
    opts = dict(defaults)
    names = [f"--{k}" for k in defaults]
    it = iter(argv)
    for a in it:
        if a in ("-h", "--help"):
            print(usage)
            return 0
        key = a[2:]
        if a not in names:
            return fail(f"unknown option {a!r} for {command}: allowed {', '.join(names)}")
        if isinstance(defaults[key], bool):
            opts[key] = True
            continue
        v = next(it, None)
        if v is None:
            return fail(f"{a} needs a value")
        opts[key] = v
    if opts.get("jobs") is not None:
        if not str(opts["jobs"]).isdigit() or int(opts["jobs"]) < 1:
            return fail(f"--jobs={opts['jobs']!r}: allowed an integer >= 1")
        opts["jobs"] = int(opts["jobs"])
    return opts


def main(argv: list[str]) -> int:
    import sys

    opts = parse_options(argv, "validate", {"only": None, "engine": "des", "quick": False,
                                            "jobs": None, "out": str(ROOT / "validation"),
                                            "targets": "seeds"}, USAGE)
    if isinstance(opts, int):
        return opts
    if opts["targets"] not in TARGET_SETS:
        return fail(f"--targets={opts['targets']!r}: allowed {', '.join(TARGET_SETS)}")
    path, stem = TARGET_SETS[opts["targets"]]
    if opts["engine"] not in ("des", "fluid"):
        return fail(f"--engine={opts['engine']!r}: allowed des, fluid")
    only = [i for i in opts["only"].split(",") if i] if opts["only"] else None
    out = Path(opts["out"])
    if not out.is_dir() or not os.access(out, os.W_OK):
        return fail(f"--out={str(out)!r}: allowed a writable directory")

    def progress(i, n, run):
        if not sys.stderr.isatty() and i % 5 and i != n:
            return
        print(f"[{i}/{n}] {' '.join(run)}", file=sys.stderr, flush=True)

    try:
        report = validate(only, opts["engine"], opts["quick"], opts["jobs"], progress, path)
    except ValueError as e:
        return fail(str(e))
    import pandas as pd
    df = table(report)
    with pd.option_context("display.max_rows", None, "display.max_colwidth", 60,
                           "display.width", 250):
        print(df.to_string(index=False))
    print(summary_line(report))
    tmp = out / f"{stem}.csv.tmp"
    df.to_csv(tmp, index=False)
    tmp.replace(out / f"{stem}.csv")
    write_html(report, out / f"{stem}.html", "the published measurements" if stem == "report"
               else "public measurements beyond the five studies (predicted)")
    print(f"wrote {out / f'{stem}.csv'} and {out / f'{stem}.html'}")
    states = [report.target_ok(t["id"]) for t in report.targets]
    return 1 if any(s is False for s in states) else 0
