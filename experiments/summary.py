"""Run a few experiments and print their headline metrics with 95% confidence half-widths.

Usage: python experiments/summary.py [--replications 3] [--measure-s 0.3] NAME[:key=value...] ...
e.g.   python experiments/summary.py e35_tx_single_vm e35_rx_single_vm mc_default_40k:workload.vms=24
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import sys

from sim.compose import check_overrides, compose_checked
from sim.config import ConfigError
from sim.runner import run_experiment

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
KEYS = ("goodput_gbps", "host_cpu_util_pct", "cycles_per_bit", "loss_ratio", "rtt_us",
        "transactions_per_s", "multicast_loss_ratio", "pcie_max_util_pct", "exits_per_s")


def _cell(key: str, mean: float, half: float | None) -> str:
    ci = "n/a" if half is None or math.isnan(half) else f"{half:.2g}"
    return f"{key}={mean:.4g}±{ci}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--replications", type=int, default=3)
    ap.add_argument("--warmup-s", type=float, default=0.1)
    ap.add_argument("--measure-s", type=float, default=0.3)
    ap.add_argument("specs", nargs="+", help="experiment name, optionally :key=value overrides")
    args = ap.parse_args()
    runs = []
    for spec in args.specs:  # all checked before the first run: a typo costs no time
        name, *overrides = spec.split(":")
        overrides = [f"experiment={name}", f"run.replications={args.replications}",
                     f"run.warmup_s={args.warmup_s}", f"run.measure_s={args.measure_s}",
                     *overrides]
        try:
            check_overrides(CONFIG_DIR, overrides)
            runs.append((spec, compose_checked(CONFIG_DIR, overrides)))
        except ConfigError as exc:
            print(f"error: {spec}: {exc}", file=sys.stderr)
            sys.exit(2)
    for spec, cfg in runs:
        res = run_experiment(cfg)
        cells = [_cell(k, res.summary[k], res.summary_ci95.get(k)) for k in KEYS
                 if k in res.summary and not math.isnan(res.summary[k])]
        print(f"{spec:<36} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
