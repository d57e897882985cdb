"""Speed benchmark: ``python -m sim bench`` (``make bench``), or ``python -m sim.bench``.

Each scenario is an experiment plus overrides. Every run is a fresh process
(``python -m sim.bench --one NAME``, started with the repo of this file as cwd, so an older
checkout measures its own code) that does ``build(cfg, 0)``, runs a warm-up (``--warmup-s``
simulated, not timed), snapshots, runs the measurement window (``--sim-s`` times the
scenario's scale) and snapshots again, then ``measure(model, s0, s1, window, 0)``. Only the
window is timed. Per run:

- ``sim_s_per_cpu_s``: window / ``time.process_time`` of the child; ``sim_s_per_wall_s``:
  window / ``time.perf_counter``;
- ``events_per_sim_s``: SimPy events *scheduled* in the window per simulated second, read from
  ``env._eid`` (the ``itertools.count`` that ``Environment.schedule`` draws every event id
  from: ``int(repr(env._eid)[6:-1])`` before and after; no cost on the run);
- ``events_per_host_packet``: events / (``host_packets_per_s`` x window); for TX workloads also
  ``events_per_tso_segment``: events / packets the host NICs (nic0..) transmitted in the window;
- ``peak_rss_mb``: the child's ``VmHWM`` (``/proc/self/status``; ``ru_maxrss`` elsewhere);
- the answer, ``goodput_gbps`` and ``host_cpu_util_pct``, so that speed never buys a different
  answer;
- after the window, untimed with it (``--no-fluid`` skips it): ``fluid_ms``, the CPU ms of one
  ``sim.fluid.solve`` of the scenario's config (build the model, read its declared paths, solve;
  the median of ``FLUID_SOLVES`` after one untimed solve that pays the imports), and
  ``fluid_speedup`` (``fluid_x``): the DES's CPU seconds per simulated second over it. Issue
  8's goals on S1, S2 and S3: ``fluid_ms`` <= 10 and ``fluid_x`` >= 1000.

The figures printed are medians over ``--repeat`` runs (default 3). Two series fit the exponent
of CPU seconds per simulated second against size (log-log least squares): NIC ports
(``g80_receive host.nic_ports=N``, two VMs a port, each port near line rate) and VMs on one
10GbE port (``e35_rx_scaling workload.vms=N``; 16 RX vectors take all 16 cores, so VMs share
cores with them and each other). At constant traffic per VM (the NIC series) the work grows as
N and the goal is exponent <= 1.05; in the VM series the port saturates from about 4 VMs, so
traffic per VM falls as 1/N and the exponent shows only the per-VM overhead (ideally below 1).
Goals are printed beside the figures and never asserted: the machine is shared and noisy.
Uses only APIs that older checkouts have too (compose_checked, build, snapshot, measure).

``--sweep``: the parallel sweep instead (``SWEEP``, the 1-16 VM scaling study
``e35_rx_scaling`` at four seeds: 64 points, ``--sweep-warmup-s`` and ``--sweep-measure-s``
simulated, one replication), run twice as ``python -m sim run --multirun`` in a fresh process:
on Hydra's basic launcher (one point after another) and on the default joblib launcher (all
cores). Printed for each: wall seconds, CPU seconds of the sweep's processes (the children's
user + system time from ``getrusage(RUSAGE_CHILDREN)``, which counts a worker once its parent
has waited for it), then the wall ratio joblib / basic against the goal (at most
``SWEEP_GOAL_RATIO``) and whether both runs gave the same numbers (``sim.collect``). The
pre-check that composes and builds every point before the first runs is serial in both.

``--plan``: ``python -m sim plan`` on ``PLAN`` in a fresh process, ``PLAN_REPEAT`` times:
wall and CPU seconds and the answer line, the median wall time against ``PLAN_GOAL_S``.

``--long``: one long run instead (``LONG_SCENARIO``, the 16-VM receive scenario S2) of
``--long-seconds`` simulated seconds (600), with the current RSS (``VmRSS``, after a garbage
collection), the peak (``VmHWM``), the event queue's length and the interval's goodput sampled
every ``--long-sample-s`` simulated seconds (60). The first sample ends the warm-up; the run
passes when the current RSS of every later sample is within ``LONG_GROWTH_LIMIT`` (10%) of it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = str(ROOT / "configs")

# name: (overrides, window scale); the window is --sim-s x scale.
SCENARIOS = {
    "S1": (["experiment=e35_tx_single_vm"], 1.0),
    "RX1": (["experiment=e35_rx_single_vm"], 1.0),
    "S2": (["experiment=e35_rx_scaling", "workload.vms=16"], 0.5),
    "S3tx": (["experiment=g80_send"], 0.1),
    "S3rx": (["experiment=g80_receive"], 0.1),
    "S4": (["experiment=mc_default_40k", "workload.vms=36"], 0.5),
    "S4split": (["experiment=mc_split_40k", "workload.vms=36"], 0.25),
    "RR": (["experiment=dev_vmxnet_64_10g_rr"], 1.0),
}
SERIES = {  # name: (sizes, overrides of size n, window scale of size n)
    "vms": ([1, 2, 4, 8, 16, 32],
            lambda n: ["experiment=e35_rx_scaling", f"workload.vms={n}"],
            lambda n: min(1.0, 8 / n)),
    "nics": ([1, 2, 4, 8],
             lambda n: ["experiment=g80_receive", f"host.nic_ports={n}"],
             lambda n: min(0.5, 0.8 / n)),
}
for _s, (_sizes, _ov, _scale) in SERIES.items():
    for _n in _sizes:
        SCENARIOS[f"{_s}{_n}"] = (_ov(_n), _scale(_n))
DEFAULT = ["S1", "RX1", "S2", "S3tx", "S3rx", "S4", "S4split", "RR"]
GOALS = {  # (scenario, figure): minimum, or (maximum,)
    ("S1", "sim_s_per_cpu_s"): 1.0, ("RX1", "sim_s_per_cpu_s"): 2.0,
    ("S2", "sim_s_per_cpu_s"): 0.5, ("S3tx", "sim_s_per_cpu_s"): 0.15,
    ("S3rx", "sim_s_per_cpu_s"): 0.15, ("S4split", "sim_s_per_cpu_s"): 0.4,
    ("RR", "sim_s_per_cpu_s"): 1.0, ("S1", "events_per_tso_segment"): (12.0,),
    # issue 8: the fluid engine >= 1000 x faster than the DES, its solve under 10 ms
    **{(n, f): g for n in ("S1", "S2", "S3tx", "S3rx")
       for f, g in (("fluid_ms", (10.0,)), ("fluid_speedup", 1000.0))},
}
FLUID_SOLVES = 3  # timed fluid solves per run (after one untimed: imports, first build)
SERIES_GOAL_EXPONENT = 1.05  # at constant traffic per VM: CPU cost at most ~linear in size
COLUMNS = [  # (figure, header, format)
    ("window_s", "window_s", "{:.3g}"), ("sim_s_per_cpu_s", "sim_s/cpu_s", "{:.3f}"),
    ("sim_s_per_wall_s", "sim_s/wall_s", "{:.3f}"), ("events_per_sim_s", "events/sim_s", "{:.3g}"),
    ("events_per_host_packet", "events/host_pkt", "{:.1f}"),
    ("events_per_tso_segment", "events/tso_seg", "{:.1f}"), ("peak_rss_mb", "rss_mb", "{:.0f}"),
    ("goodput_gbps", "goodput_gbps", "{:.4g}"), ("host_cpu_util_pct", "cpu_util_pct", "{:.4g}"),
    ("fluid_ms", "fluid_ms", "{:.1f}"), ("fluid_speedup", "fluid_x", "{:.0f}"),
]


LONG_SCENARIO = "S2"
LONG_GROWTH_LIMIT = 0.10
SWEEP = ["experiment=e35_rx_scaling", "workload.vms=range(1,17)", "run.seed=1,2,3,4"]
SWEEP_GOAL_RATIO = 0.6  # joblib's wall time over the basic launcher's, at most
# The planner's question for the multicast study (docs/planning.md): receivers on one host
# before loss passes 0.01%; issue 11's goal is an answer in under a minute on 2 cores.
PLAN = ["experiment=mc_default_40k", "--max", "multicast_loss_ratio=1e-4"]
PLAN_GOAL_S, PLAN_REPEAT = 60.0, 3


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident set of this process in MB: ``VmRSS`` and ``VmHWM``."""
    cur = peak = float("nan")
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return cur, peak


def run_long(seconds: float, sample_s: float, out=sys.stdout) -> dict:
    """The long run (``--long``): memory sampled every ``sample_s`` simulated seconds."""
    import gc

    from sim.builder import build
    from sim.compose import compose_checked
    from sim.metrics import measure, snapshot
    overrides = SCENARIOS[LONG_SCENARIO][0]
    cfg = compose_checked(CONFIG_DIR, overrides)
    model = build(cfg, 0)
    env = model.env
    print(f"# long run: {LONG_SCENARIO} ({' '.join(overrides)}), {seconds:g} s simulated, "
          f"memory every {sample_s:g} s; the first sample ends the warm-up", file=out)
    print(f"{'sim_s':>8}  {'rss_mb':>8}  {'peak_mb':>8}  {'queue':>7}  {'goodput_gbps':>12}  "
          f"{'sim_s/cpu_s':>11}", file=out, flush=True)
    samples = []
    t, c0 = 0.0, time.process_time()
    s0 = snapshot(model)
    while t < seconds - 1e-9:
        step = min(sample_s, seconds - t)
        env.run(until=t + step)
        t += step
        s1 = snapshot(model)
        summary, _ = measure(model, s0, s1, step, 0)
        s0 = s1
        gc.collect()
        cur, peak = _rss_mb()
        cpu = time.process_time() - c0
        c0 = time.process_time()
        samples.append({"sim_s": t, "rss_mb": cur, "peak_rss_mb": peak,
                        "event_queue": len(env._queue), "goodput_gbps": summary["goodput_gbps"],
                        "sim_s_per_cpu_s": step / cpu if cpu else float("nan")})
        r = samples[-1]
        print(f"{t:8.1f}  {cur:8.1f}  {peak:8.1f}  {r['event_queue']:7d}  "
              f"{r['goodput_gbps']:12.4g}  {r['sim_s_per_cpu_s']:11.3f}", file=out, flush=True)
    base = samples[0]["rss_mb"]
    growth = max(r["rss_mb"] for r in samples) / base - 1 if len(samples) > 1 else 0.0
    peak_growth = samples[-1]["peak_rss_mb"] / samples[0]["peak_rss_mb"] - 1
    ok = growth <= LONG_GROWTH_LIMIT
    print(f"memory after warm-up ({samples[0]['sim_s']:g} s, {base:.1f} MB): largest current "
          f"RSS {growth:+.1%}, peak {peak_growth:+.1%} (limit +{LONG_GROWTH_LIMIT:.0%}): "
          f"{'OK, no growth beyond the limit' if ok else 'GREW beyond the limit'}"
          + ("" if len(samples) > 2 else " (too few samples to judge)"), file=out, flush=True)
    return {"scenario": LONG_SCENARIO, "overrides": overrides, "seconds": seconds,
            "sample_s": sample_s, "samples": samples, "growth": growth,
            "peak_growth": peak_growth, "ok": ok}


def _sweep_once(launcher: str, warmup_s: float, measure_s: float, sweep_dir: Path) -> dict:
    """One ``python -m sim run --multirun`` of ``SWEEP`` on ``launcher``: wall and CPU seconds."""
    cmd = [sys.executable, "-m", "sim", "run", "--multirun", *SWEEP, f"run.warmup_s={warmup_s!r}",
           f"run.measure_s={measure_s!r}", "run.replications=1", f"hydra/launcher={launcher}",
           f"hydra.sweep.dir={sweep_dir}"]
    r0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "VNETSIM_PROGRESS": "0"})
    wall_s, r1 = time.perf_counter() - w0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"sweep on {launcher} failed ({proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    cpu_s = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return {"launcher": launcher, "wall_s": wall_s, "cpu_s": cpu_s, "command": cmd}


def run_sweep(warmup_s: float, measure_s: float, out=sys.stdout) -> dict:
    """The sweep benchmark (``--sweep``): basic then joblib, the wall ratio, same numbers."""
    import tempfile

    from sim.collect import collect
    print(f"# sweep: python -m sim run --multirun {' '.join(SWEEP)} run.warmup_s={warmup_s:g} "
          f"run.measure_s={measure_s:g} run.replications=1 hydra/launcher=L", file=out)
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} cores; other work on the machine lowers both runs' CPU share)",
          file=out)
    print(f"{'launcher':<9}  {'points':>6}  {'wall_s':>8}  {'cpu_s':>8}  {'cpu/wall':>8}",
          file=out, flush=True)
    runs, tables = {}, {}
    with tempfile.TemporaryDirectory(prefix="vnetsim-sweep-bench-") as tmp:
        for launcher in ("basic", "joblib"):
            r = _sweep_once(launcher, warmup_s, measure_s, Path(tmp, launcher))
            df = collect(Path(tmp, launcher))
            r["points"] = int(df["point"].nunique())
            runs[launcher] = r
            tables[launcher] = df.drop(columns=["point_dir"]).reset_index(drop=True)
            print(f"{launcher:<9}  {r['points']:>6}  {r['wall_s']:8.1f}  {r['cpu_s']:8.1f}  "
                  f"{r['cpu_s'] / r['wall_s']:8.2f}", file=out, flush=True)
    ratio = runs["joblib"]["wall_s"] / runs["basic"]["wall_s"]
    same = tables["basic"].equals(tables["joblib"])
    if not same:  # which columns (a config or model file edited between the two runs?)
        a, b = tables["basic"], tables["joblib"]
        differ = [c for c in a.columns if c not in b or not a[c].equals(b[c])]
        print(f"differing columns: {', '.join(differ[:8]) or '(shape or order)'}", file=out)
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=out)
    print(f"wall joblib / basic: {ratio:.2f} (goal <= {SWEEP_GOAL_RATIO}: "
          f"{'met' if ratio <= SWEEP_GOAL_RATIO else 'NOT met'}); same numbers on both "
          f"launchers: {'yes' if same else 'NO'}", file=out, flush=True)
    return {"sweep": SWEEP, "warmup_s": warmup_s, "measure_s": measure_s, "runs": runs,
            "wall_ratio": ratio, "goal_ratio": SWEEP_GOAL_RATIO, "same_numbers": same}


def run_plan(out=sys.stdout) -> dict:
    """The planner benchmark (``--plan``): ``PLAN`` in a fresh process, its wall and CPU seconds
    (median of ``PLAN_REPEAT``) against ``PLAN_GOAL_S``, and its answer line."""
    cmd = [sys.executable, "-m", "sim", "plan", *PLAN]
    print(f"# plan: python -m sim plan {' '.join(PLAN)}", file=out, flush=True)
    runs = []
    for _ in range(PLAN_REPEAT):
        r0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "VNETSIM_PROGRESS": "0"})
        wall_s, r1 = time.perf_counter() - w0, resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"plan failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        cpu_s = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
        answer = next((ln for ln in proc.stdout.splitlines() if ln.strip()), "")
        runs.append({"wall_s": wall_s, "cpu_s": cpu_s, "answer": answer})
        print(f"wall {wall_s:6.1f} s  cpu {cpu_s:6.1f} s  {answer}", file=out, flush=True)
    wall = statistics.median(r["wall_s"] for r in runs)
    print(f"median wall: {wall:.1f} s (goal < {PLAN_GOAL_S:g} s: "
          f"{'met' if wall < PLAN_GOAL_S else 'NOT met'})", file=out, flush=True)
    return {"plan": PLAN, "runs": runs, "median_wall_s": wall, "goal_s": PLAN_GOAL_S}


def _eid(env) -> int:
    return int(repr(env._eid)[6:-1])  # "count(N)": the next event id


def run_one(name: str, window_s: float, warmup_s: float, fluid: bool = True) -> dict:
    """One measured run of scenario ``name`` in this process."""
    from sim.builder import build
    from sim.compose import compose_checked
    from sim.metrics import measure, snapshot
    overrides = SCENARIOS[name][0]
    cfg = compose_checked(CONFIG_DIR, overrides)
    model = build(cfg, 0)
    env = model.env
    env.run(until=warmup_s)
    s0 = snapshot(model)
    e0, c0, w0 = _eid(env), time.process_time(), time.perf_counter()
    env.run(until=warmup_s + window_s)
    cpu_s, wall_s, events = time.process_time() - c0, time.perf_counter() - w0, _eid(env) - e0
    s1 = snapshot(model)
    summary, tables = measure(model, s0, s1, window_s, 0)
    nics = tables["nics"]
    host_nics = nics[nics["nic"].isin([n.name for n in model.nics])]
    tso_segments = float(host_nics["tx_packets_per_s"].sum()) * window_s
    host_packets = summary["host_packets_per_s"] * window_s
    tx = getattr(cfg.workload, "direction", None) == "tx" and cfg.workload.kind != "tcp_rr"
    nan = float("nan")
    # after the DES's window (not timed with it): the fluid engine's solve, and how many times
    # faster it answers than the DES simulates one second of the same config
    fl = time_fluid(cfg) if fluid else {"fluid_ms": nan}
    fl["fluid_speedup"] = (cpu_s / window_s) / (fl["fluid_ms"] / 1e3)
    return {**fl, "scenario": name, "overrides": overrides, "window_s": window_s,
            "warmup_s": warmup_s, "cpu_s": cpu_s, "wall_s": wall_s, "events": events,
            "sim_s_per_cpu_s": window_s / cpu_s, "sim_s_per_wall_s": window_s / wall_s,
            "events_per_sim_s": events / window_s,
            "events_per_host_packet": events / host_packets if host_packets else nan,
            "events_per_tso_segment": events / tso_segments if tx and tso_segments else nan,
            "peak_rss_mb": _peak_rss_mb(),
            "goodput_gbps": summary["goodput_gbps"],
            "host_cpu_util_pct": summary["host_cpu_util_pct"]}


def time_fluid(cfg, solves: int = FLUID_SOLVES) -> dict:
    """The fluid engine on ``cfg`` (``sim.fluid.solve``: builds the model, reads its declared
    paths, solves): one untimed solve (imports, caches), then the median CPU time of
    ``solves`` more (``time.process_time``; the machine is shared, so CPU not wall time).
    ``fluid_ms``: that median; nan if the engine refuses the config."""
    from sim import fluid
    try:
        fluid.solve(cfg)
    except ValueError:
        return {"fluid_ms": float("nan")}
    times = []
    for _ in range(solves):
        c0 = time.process_time()
        fluid.solve(cfg)
        times.append(time.process_time() - c0)
    return {"fluid_ms": 1e3 * statistics.median(times)}


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (reset at exec) where Linux has it; ``ru_maxrss``
    would carry the parent's high-water mark across fork and exec (it reported the bench's
    own 134 MB, not the scenario's ~80)."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _spawn(name: str, window_s: float, warmup_s: float, fluid: bool = True) -> dict:
    cmd = [sys.executable, "-m", "sim.bench", "--one", name, "--sim-s", repr(window_s),
           "--warmup-s", repr(warmup_s), "--fluid" if fluid else "--no-fluid"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median(runs: list[dict]) -> dict:
    out = {"scenario": runs[0]["scenario"], "overrides": runs[0]["overrides"], "runs": len(runs)}
    for key, value in runs[0].items():
        if isinstance(value, (int, float)):
            out[key] = statistics.median(r[key] for r in runs)
    # the answer must not depend on the run (same config and seed): flag it if it does
    out["answer_varies"] = any(r[k] != runs[0][k] for r in runs
                               for k in ("goodput_gbps", "host_cpu_util_pct"))
    return out


def _goal(name: str, figure: str) -> str:
    g = GOALS.get((name, figure))
    return "" if g is None else (f"<={g[0]:g}" if isinstance(g, tuple) else f">={g:g}")


def _row(name: str, med: dict) -> str:
    cells = [f"{name:<9}"]
    for key, head, fmt in COLUMNS:
        v = med.get(key, float("nan"))
        text = "-" if v != v else fmt.format(v)
        goal = _goal(name, key)
        cells.append(f"{text + (f' ({goal})' if goal else ''):>{_width(key, head)}}")
    return "  ".join(cells) + ("  answer varies between runs!" if med.get("answer_varies") else "")


def header() -> str:
    return "  ".join([f"{'scenario':<9}", *(f"{h:>{_width(k, h)}}" for k, h, _ in COLUMNS)])


def _width(key: str, head: str) -> int:
    return max(len(head), 14 if any(f == key for _, f in GOALS) else 6)


def fit_exponent(sizes: list[int], cpu_s_per_sim_s: list[float]) -> float:
    """Slope of log(CPU seconds per simulated second) against log(size), least squares."""
    import numpy as np
    return float(np.polyfit(np.log(sizes), np.log(cpu_s_per_sim_s), 1)[0])


def machine(argv: list[str]) -> dict:
    import sim
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.processor())
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "sim": str(Path(sim.__file__).parent), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "command": " ".join(["python -m sim bench", *argv])}


def _dump(path: str | None, argv: list[str], key: str, result: dict) -> None:
    """``--json``: the machine and one mode's result."""
    if path:
        Path(path).write_text(json.dumps({"machine": machine(argv), key: result}, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sim bench", description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", default=",".join(DEFAULT),
                    help=f"comma-separated, of {', '.join(SCENARIOS)}")
    ap.add_argument("--series", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the VM and NIC series and fit their exponents")
    ap.add_argument("--sim-s", type=float, default=0.4,
                    help="simulated seconds of the window (a scenario may scale it)")
    ap.add_argument("--warmup-s", type=float, default=0.05, help="simulated warm-up, untimed")
    ap.add_argument("--repeat", type=int, default=3, help="runs per scenario; medians printed")
    ap.add_argument("--json", help="also write every figure (each run too) to this file")
    ap.add_argument("--long", action="store_true",
                    help=f"one long run of {LONG_SCENARIO} with memory sampled (no speed table)")
    ap.add_argument("--long-seconds", type=float, default=600.0,
                    help="simulated seconds of the long run")
    ap.add_argument("--long-sample-s", type=float, default=60.0,
                    help="simulated seconds between memory samples of the long run")
    ap.add_argument("--sweep", action="store_true",
                    help="the 64-point sweep on the basic and the joblib launcher (no table)")
    ap.add_argument("--sweep-warmup-s", type=float, default=0.05,
                    help="simulated warm-up of each sweep point")
    ap.add_argument("--sweep-measure-s", type=float, default=0.2,
                    help="simulated window of each sweep point")
    ap.add_argument("--plan", action="store_true",
                    help="time the capacity planner on the multicast study (no table)")
    ap.add_argument("--fluid", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the fluid engine's solve of each scenario (fluid_ms, CPU "
                         "ms per solve after one untimed; fluid_x: DES CPU s per simulated s "
                         "over it)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child: one run, JSON on stdout
    argv = list(sys.argv[1:] if argv is None else argv)
    a = ap.parse_args(argv)
    if a.long:
        if not (0 < a.long_sample_s <= a.long_seconds):
            print(f"error: --long-sample-s={a.long_sample_s:g}: must be > 0 and <= "
                  f"--long-seconds={a.long_seconds:g}", file=sys.stderr)
            return 2
        result = run_long(a.long_seconds, a.long_sample_s)
        _dump(a.json, argv, "long", result)
        return 0 if result["ok"] else 1
    if a.sweep:
        result = run_sweep(a.sweep_warmup_s, a.sweep_measure_s)
        _dump(a.json, argv, "sweep", result)
        return 0
    if a.plan:
        result = run_plan()
        _dump(a.json, argv, "plan", result)
        return 0
    if a.one:
        print(json.dumps(run_one(a.one, a.sim_s, a.warmup_s, a.fluid)))
        return 0
    names = [n for n in a.scenarios.split(",") if n]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"error: unknown scenario {unknown[0]!r}: allowed are {', '.join(SCENARIOS)}",
              file=sys.stderr)
        return 2
    if a.series:
        names += [f"{s}{n}" for s, (sizes, _, _) in SERIES.items() for n in sizes]
    info = machine(argv)
    print(f"# {info['command']}\n# {info['date']}; {info['nproc']} x {info['cpu']}; "
          f"Python {info['python']}; sim from {info['sim']}\n# medians of {a.repeat} runs, "
          f"each a fresh process; warm-up {a.warmup_s} s simulated, untimed", flush=True)
    print(header(), flush=True)
    done: dict[tuple, dict] = {}  # identical overrides and window: run once (S2 = vms16, ...)
    results = {}
    for name in dict.fromkeys(names):
        overrides, scale = SCENARIOS[name]
        window_s = a.sim_s * scale
        key = (tuple(overrides), window_s)
        if key not in done:
            runs = [_spawn(name, window_s, a.warmup_s, a.fluid) for _ in range(a.repeat)]
            done[key] = {**_median(runs), "each_run": runs}
        results[name] = {**done[key], "scenario": name}
        print(_row(name, results[name]), flush=True)
    series = {}
    for s, (sizes, _, _) in SERIES.items():
        if all(f"{s}{n}" in results for n in sizes):
            cost = [1 / results[f"{s}{n}"]["sim_s_per_cpu_s"] for n in sizes]
            series[s] = {"sizes": sizes, "cpu_s_per_sim_s": cost,
                         "exponent": fit_exponent(sizes, cost)}
            print(f"series {s}: CPU s per sim s vs {s} {sizes}: "
                  f"exponent {series[s]['exponent']:.2f} (goal <= {SERIES_GOAL_EXPONENT} at "
                  f"constant traffic per VM{'; one port: traffic per VM falls' * (s == 'vms')})")
    if a.json:
        goals = {f"{n}.{f}": g for (n, f), g in GOALS.items()}
        Path(a.json).write_text(json.dumps({"machine": info, "args": vars(a), "goals": goals,
                                            "scenarios": results, "series": series}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
