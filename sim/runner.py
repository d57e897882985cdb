"""Run control: warm-up, measurement window, replications, means and 95% confidence intervals.

Replication ``r`` builds a fresh model whose random streams are keyed by ``(seed, r)``; it runs
``warmup_s`` (discarded), then ``measure_s``, and reports the window's metrics. Across
replications each summary metric gets its mean and the half-width of a Student-t 95% interval
(``None`` with one replication).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps
from tqdm import tqdm

from sim.builder import Model, build
from sim.config import Config
from sim.metrics import measure, snapshot


@dataclass
class Results:
    config: Config
    summary: dict[str, float]
    summary_ci95: dict[str, float | None]
    replications: list[dict[str, float]]
    tables: dict[str, pd.DataFrame]


def run_replication(cfg: Config, replication: int) -> tuple[Model, dict, dict]:
    model = build(cfg, replication)
    model.env.run(until=cfg.run.warmup_s)
    s0 = snapshot(model)
    model.env.run(until=cfg.run.warmup_s + cfg.run.measure_s)
    s1 = snapshot(model)
    summary, tables = measure(model, s0, s1, cfg.run.measure_s, replication)
    return model, summary, tables


def run_experiment(cfg: Config, progress: bool = False) -> Results:
    if cfg.run.engine == "fluid":  # the steady state, solved (no replications, no CIs)
        from sim import fluid
        return fluid.solve(cfg)
    per_rep, all_tables = [], {}
    reps = range(cfg.run.replications)
    for r in tqdm(reps, desc=cfg.meta.name, disable=not progress, leave=False):
        _, summary, tables = run_replication(cfg, r)
        per_rep.append(summary)
        for name, t in tables.items():
            all_tables.setdefault(name, []).append(t)
    tables = {k: pd.concat(v, ignore_index=True) for k, v in all_tables.items()}
    mean, ci = summarize(per_rep)
    return Results(cfg, mean, ci, per_rep, tables)


def summarize(per_rep: list[dict[str, float]]) -> tuple[dict, dict]:
    """Mean and Student-t 95% half-width of each metric over replications (NaNs ignored)."""
    mean, ci = {}, {}
    for key in per_rep[0]:
        x = np.array([r[key] for r in per_rep], dtype=float)
        x = x[~np.isnan(x)]
        mean[key] = float(x.mean()) if len(x) else math.nan
        if len(x) > 1:
            ci[key] = float(sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
        else:
            ci[key] = None
    return mean, ci
