"""Result files and the human table: results.json, one CSV per table, a short stdout summary.

A run directory holds a complete result or says it does not: ``begin`` puts an ``INCOMPLETE``
marker in it before the run; ``write`` writes every file into a temporary directory inside it,
renames them into place with ``results.json`` last, then removes the marker. An interrupted run
leaves the marker and no ``results.json``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from sim.runner import Results
from sim.sweep import HASH_KEY, config_hash

SUMMARY_KEYS = ("goodput_gbps", "wire_frames_per_s", "host_packets_per_s", "loss_ratio",
                "host_cpu_util_pct", "cycles_per_bit", "rtt_us", "jain_index",
                "per_vm_goodput_std_gbps")


def _clean(x):
    """JSON has no NaN: write null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def to_dict(results: Results) -> dict:
    return _clean({
        "experiment": results.config.meta.name,
        HASH_KEY: config_hash(results.config),  # the key of a resumable sweep (sim/sweep.py)
        "config": dataclasses.asdict(results.config),
        "summary": results.summary,
        "summary_ci95": results.summary_ci95,
        "replications": results.replications,
        "tables": {k: t.to_dict(orient="records") for k, t in results.tables.items()},
    })


INCOMPLETE = "INCOMPLETE"


def begin(out_dir: str | Path) -> Path:
    """Mark ``out_dir`` as holding no complete result yet (an earlier ``results.json`` there is
    removed: the files that follow are this run's); returns the marker's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / INCOMPLETE
    marker.write_text("this run has not finished: the files here are not a complete result\n")
    (out / "results.json").unlink(missing_ok=True)
    return marker


def write(results: Results, out_dir: str | Path) -> Path:
    """Write results.json and <table>.csv into ``out_dir``, each written whole under a
    temporary name and renamed into place, ``results.json`` last; then remove the
    ``INCOMPLETE`` marker. Returns the JSON path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=out))
    try:
        for name, table in results.tables.items():
            table.to_csv(tmp / f"{name}.csv", index=False)
        summary_table(results).to_csv(tmp / "summary.csv", index=False)
        (tmp / "results.json").write_text(json.dumps(to_dict(results), indent=1))
        for name in [*sorted(p.name for p in tmp.iterdir() if p.name != "results.json"),
                     "results.json"]:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / INCOMPLETE).unlink(missing_ok=True)
    return out / "results.json"


def _keys(results: Results) -> list[str]:
    """The common metrics, then whatever the workload kind adds (multicast loss, objects/s)."""
    return [*(k for k in SUMMARY_KEYS if k in results.summary),
            *(k for k in results.summary if k not in SUMMARY_KEYS)]


def summary_table(results: Results) -> pd.DataFrame:
    return pd.DataFrame([{"metric": k, "mean": results.summary[k],
                          "ci95": results.summary_ci95[k]} for k in _keys(results)])


def format_summary(results: Results) -> str:
    cfg = results.config
    lines = [f"{cfg.meta.name}: {cfg.meta.description}",
             "fluid engine: the steady state, solved (no replications)"
             if cfg.run.engine == "fluid" else
             f"{cfg.run.replications} replication(s) x {cfg.run.measure_s} s after "
             f"{cfg.run.warmup_s} s warm-up, seed {cfg.run.seed}"]
    for k in _keys(results):
        mean, ci = results.summary[k], results.summary_ci95[k]
        if isinstance(mean, str):  # a label (the fluid engine's regime)
            lines.append(f"  {k:<34} {mean:>12}")
            continue
        ci_s = f" ± {ci:.4g}" if ci is not None and math.isfinite(ci) else ""
        lines.append(f"  {k:<34} {mean:>12.4g}{ci_s}")
    return "\n".join(lines)
