"""Run control: warm-up, measurement window, replications, means and 95% confidence intervals.

Replication ``r`` builds a fresh model whose random streams are keyed by ``(seed, r)``; it runs
``warmup_s`` (discarded), then ``measure_s``, and reports the window's metrics. Across
replications each summary metric gets its mean and the half-width of a Student-t 95% interval
(``None`` with one replication).

Progress (``progress``: ``"bar"``, ``"lines"`` or off): a thread reads the clock of the model
being run (``env.now``) a few times a second, from outside the simulation: it schedules no SimPy
event and touches no state, so the numbers are those of a run without it. ``"bar"``: a tqdm bar
per replication in simulated seconds, shown once the run has taken ``BAR_AFTER_S``; ``"lines"``:
a line to stderr every ``LINE_EVERY_S`` (stdout carries the results).
"""
from __future__ import annotations

import math
import sys
import threading
import time
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


BAR_AFTER_S = 2.0  # a run shorter than this shows no bar
LINE_EVERY_S = 5.0  # without a terminal: a progress line this often
POLL_S = 0.2  # how often the watcher reads the simulated clock


class Progress:
    """Progress of a run in simulated time, watched from a thread (see the module docstring)."""

    def __init__(self, mode: str | bool | None, name: str, replications: int, total_s: float,
                 stream=None):
        self.mode = "bar" if mode is True else (mode or "off")
        self.name, self.replications, self.total_s = name, replications, total_s
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self.last_line = self.started

    def watch(self, model: Model, replication: int) -> "_Watch":
        return _Watch(self, model, replication)


class _Watch:
    def __init__(self, progress: Progress, model: Model, replication: int):
        self.p, self.env, self.r = progress, model.env, replication
        self.bar = None
        self.done = threading.Event()
        self.thread = None
        if self.p.mode in ("bar", "lines"):
            self.thread = threading.Thread(target=self._loop, daemon=True,
                                           name="vnetsim-progress")

    def __enter__(self):
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        if self.thread is not None:
            self.thread.join()
        if self.bar is not None:
            self.bar.close()
        return False

    def _loop(self) -> None:
        while not self.done.wait(POLL_S):
            self.tick(self.env.now, time.monotonic())

    def tick(self, now: float, wall: float) -> None:
        p = self.p
        if p.mode == "bar":
            if self.bar is None and wall - p.started >= BAR_AFTER_S:
                self.bar = tqdm(total=p.total_s, unit="sim-s", file=p.stream, leave=False,
                                desc=f"{p.name} rep {self.r + 1}/{p.replications}",
                                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.3g}/"
                                           "{total:.3g} sim-s [{elapsed}<{remaining}]")
            if self.bar is not None:
                self.bar.n = min(now, p.total_s)
                self.bar.refresh()
        elif p.mode == "lines" and wall - p.last_line >= LINE_EVERY_S:
            p.last_line = wall
            print(f"progress: {p.name} replication {self.r + 1}/{p.replications}: "
                  f"{now:.4g}/{p.total_s:g} simulated s ({100 * now / p.total_s:.0f}%), "
                  f"{wall - p.started:.0f} s elapsed", file=p.stream, flush=True)


def run_replication(cfg: Config, replication: int,
                    progress: Progress | None = None) -> tuple[Model, dict, dict]:
    model = build(cfg, replication)
    with (progress or Progress(None, "", 1, 1.0)).watch(model, replication):
        if cfg.run.warmup_s > 0:  # SimPy refuses until=0 (now is 0 already)
            model.env.run(until=cfg.run.warmup_s)
        s0 = snapshot(model)
        model.env.run(until=cfg.run.warmup_s + cfg.run.measure_s)
        s1 = snapshot(model)
    summary, tables = measure(model, s0, s1, cfg.run.measure_s, replication)
    return model, summary, tables


def run_experiment(cfg: Config, progress: str | bool | None = None) -> Results:
    """``progress``: ``"bar"`` (or True), ``"lines"``, or None/False for none."""
    if cfg.run.engine == "fluid":  # the steady state, solved (no replications, no CIs)
        from sim import fluid
        return fluid.solve(cfg)
    per_rep, all_tables = [], {}
    watch = Progress(progress, cfg.meta.name, cfg.run.replications,
                     cfg.run.warmup_s + cfg.run.measure_s)
    for r in range(cfg.run.replications):
        _, summary, tables = run_replication(cfg, r, watch)
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
