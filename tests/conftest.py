"""Shared fixtures: where the configs are, how to compose them, short simulated windows.

Every system-level test composes the real Hydra configs (``configs/``) and shortens the run with
``SHORT`` so the whole fast suite stays within a few minutes on two cores.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

REPO = Path(__file__).resolve().parents[1]
CONFIG_DIR = str(REPO / "configs")
# Warm-up long enough for slow start to end with 64KB windows, a window of ~10^5 frames.
SHORT = ["run.warmup_s=0.03", "run.measure_s=0.1", "run.replications=1"]

# Mutation check (tests/mutants.py, `make mutants`): VNETSIM_MUTATE="KEY[,KEY]=FACTOR" scales
# those keys in every config the tests compose, before any test module imports sim.
if os.environ.get("VNETSIM_MUTATE"):
    from tests.mutants import install as _install_mutant
    _install_mutant(os.environ["VNETSIM_MUTATE"])


@pytest.fixture(scope="session")
def compose():
    """compose(overrides) -> validated Config, with the short run window appended."""
    from sim.compose import compose_checked

    def _compose(overrides: list[str], short: bool = True):
        return compose_checked(CONFIG_DIR, [*overrides, *(SHORT if short else [])])
    return _compose


@pytest.fixture(scope="session")
def compose_raw():
    """compose_raw(overrides) -> the composed config as a plain dict (to edit, then to_config)."""
    from sim.compose import compose_dict

    def _compose(overrides: list[str], short: bool = True) -> dict:
        return compose_dict(CONFIG_DIR, [*overrides, *(SHORT if short else [])])
    return _compose


@pytest.fixture(scope="session")
def run_one():
    """run_one(cfg) -> (model, summary, tables) of replication 0."""
    from sim.runner import run_replication

    def _run(cfg, replication: int = 0):
        return run_replication(cfg, replication)
    return _run


def term_cycles_per_s(tables, term: str) -> float:
    """A run's cycles/s of one cost term, summed over its contexts (``cost_terms`` table)."""
    t = tables["cost_terms"]
    return float(t.loc[t["term"] == term, "cycles_per_s"].sum())


@pytest.fixture(scope="session")
def sim_cli():
    """sim_cli(*args, env={...}) -> CompletedProcess of ``python -m sim ARGS``, a fresh process."""
    def _run(*args: str, cwd: Path | str = REPO, timeout: float = 300, env: dict | None = None):
        env = {**os.environ, **(env or {})}
        return subprocess.run([sys.executable, "-m", "sim", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout)
    return _run


@pytest.fixture(scope="session")
def sim_cli_many():
    """sim_cli_many([args, ...]) -> [CompletedProcess, ...]: the runs started all at once."""
    def _run(arg_lists: list[list[str]], timeout: float = 300):
        procs = [subprocess.Popen([sys.executable, "-m", "sim", *args], cwd=REPO, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for args in arg_lists]
        done = []
        for args, p in zip(arg_lists, procs):
            out, err = p.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(args, p.returncode, out, err))
        return done
    return _run


def batch_means_ci(samples, n_batches: int = 20, level: float = 0.95) -> tuple[float, float]:
    """Mean and Student-t half-width from ``n_batches`` consecutive batch means.

    Batching makes the (autocorrelated) samples of one queue's run nearly independent, so the
    t-interval on the batch means is an honest confidence interval for the long-run mean.
    """
    x = np.asarray(samples, dtype=float)
    x = x[: len(x) - len(x) % n_batches].reshape(n_batches, -1).mean(axis=1)
    half = sps.t.ppf(0.5 + level / 2, n_batches - 1) * x.std(ddof=1) / math.sqrt(n_batches)
    return float(x.mean()), float(half)


@pytest.fixture(scope="session")
def ci():
    return batch_means_ci


def scale_costs(node, factor: float) -> None:
    """Multiply, in place, every cycle price (a numeric key ending in ``_cycles``: CycleCost
    fields, exit costs, switch costs) found under ``node``."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k.endswith("_cycles") and isinstance(v, (int, float)) and not isinstance(v, bool):
                node[k] = v * factor
            else:
                scale_costs(v, factor)


@pytest.fixture(scope="session")
def scaled():
    return scale_costs
