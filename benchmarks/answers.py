"""Every experiment's headline answers (mean and 95% half-width), one CSV row per experiment.

Speed work must not change answers: run this before and after a change and compare with
``--compare OLD.csv`` (a figure outside the old run's 95% interval is flagged).
Usage: python benchmarks/answers.py [--replications 3] [--measure-s 0.3] [--jobs 2]
       [--out answers.csv] [--compare before.csv] [NAME ...]
"""
from __future__ import annotations

import argparse
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = str(ROOT / "configs")
KEYS = ("goodput_gbps", "host_cpu_util_pct", "loss_ratio", "rtt_us", "transactions_per_s",
        "multicast_loss_ratio")


def _one(args: tuple[str, int, float, float]) -> dict:
    name, reps, warmup_s, measure_s = args
    sys.path.insert(0, str(ROOT))
    from sim.compose import compose_checked
    from sim.runner import run_experiment
    cfg = compose_checked(CONFIG_DIR, [f"experiment={name}", f"run.replications={reps}",
                                       f"run.warmup_s={warmup_s}", f"run.measure_s={measure_s}"])
    res = run_experiment(cfg)
    row = {"experiment": name}
    for k in KEYS:
        if k in res.summary:
            row[k] = res.summary[k]
            row[f"{k}_ci95"] = res.summary_ci95.get(k)
    return row


def compare(new: pd.DataFrame, old: pd.DataFrame) -> pd.DataFrame:
    """Per experiment and metric: old ± ci, new, relative change, inside the old interval."""
    rows = []
    old = old.set_index("experiment")
    for _, r in new.iterrows():
        if r["experiment"] not in old.index:
            continue
        o = old.loc[r["experiment"]]
        for k in KEYS:
            if k not in r or k not in o or pd.isna(r[k]) or pd.isna(o[k]):
                continue
            ci = o.get(f"{k}_ci95")
            ci = 0.0 if ci is None or pd.isna(ci) else float(ci)
            rel = (r[k] - o[k]) / abs(o[k]) if o[k] else (0.0 if r[k] == 0 else math.inf)
            rows.append({"experiment": r["experiment"], "metric": k, "old": o[k],
                         "old_ci95": ci, "new": r[k], "rel_change": rel,
                         "inside_ci": abs(r[k] - o[k]) <= ci + 1e-12 * max(1.0, abs(o[k]))})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replications", type=int, default=3)
    ap.add_argument("--warmup-s", type=float, default=0.1)
    ap.add_argument("--measure-s", type=float, default=0.3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="answers.csv")
    ap.add_argument("--compare", default=None, help="an earlier CSV of this script")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or sorted(p.stem for p in Path(CONFIG_DIR, "experiment").glob("*.yaml"))
    jobs = [(n, a.replications, a.warmup_s, a.measure_s) for n in names]
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = []
        for row in pool.map(_one, jobs):
            rows.append(row)
            print(row["experiment"], f"{row.get('goodput_gbps', float('nan')):.4g} Gbps",
                  flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(a.out, index=False)
    if a.compare:
        cmp = compare(df, pd.read_csv(a.compare))
        cmp.to_csv(Path(a.out).with_suffix(".compare.csv"), index=False)
        moved = cmp[~cmp["inside_ci"]]
        print(f"{len(cmp)} figures, {len(moved)} outside the old 95% interval")
        if len(moved):
            print(moved.to_string(index=False))


if __name__ == "__main__":
    main()
