"""Every experiment in configs/experiment/ composes, validates, declares its path (``sim path``,
which the fluid engine reads) and dry-runs end to end.

Parametrized over the files found at collection time, so an experiment added later is covered
without touching this file. The dry run is very short (10 ms warm-up, 20 ms window) and must
produce a finite, positive goodput.
"""
import math
from pathlib import Path

import pytest

from sim.builder import build
from sim.compose import compose_checked
from sim.path import describe
from sim.runner import run_experiment
from tests.conftest import CONFIG_DIR

EXPERIMENTS = sorted(p.stem for p in Path(CONFIG_DIR, "experiment").glob("*.yaml"))
DRY = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1"]


def test_there_are_experiments():
    assert EXPERIMENTS


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_experiment_composes_and_dry_runs(name):
    cfg = compose_checked(CONFIG_DIR, [f"experiment={name}", *DRY])
    assert cfg.meta.name == name            # the file names itself in its meta block
    assert cfg.meta.description
    assert "[context]" in describe(build(cfg))
    res = run_experiment(cfg)
    goodput = res.summary["goodput_gbps"]
    assert math.isfinite(goodput) and goodput > 0


@pytest.mark.parametrize("overrides, ports, vms", [
    ([], 8, 16),
    (["host.nic_ports=3"], 3, 6),            # 001's sweep is one override: two VMs per port
    (["host.nic_ports=3", "workload.vms=4"], 3, 4),   # an explicit count still wins
])
def test_the_vm_count_of_001_follows_the_nic_count(overrides, ports, vms):
    cfg = compose_checked(CONFIG_DIR, ["experiment=g80_send", *overrides])
    assert (cfg.host.nic_ports, cfg.workload.vms) == (ports, vms)
