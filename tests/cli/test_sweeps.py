"""Sweeps: parallel launchers give each point's own numbers, a killed sweep resumes, collect.

One 4-point sweep (``workload.vms=1,2,3,4``, two replications of a 5 ms window) is run on the
default launcher (joblib, both cores) once per module; the Ray launcher, a sweep killed with
SIGKILL at a seeded-random point and re-run, and ``collect`` are checked against it.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from sim.collect import main as collect_main
from sim.results import INCOMPLETE

VMS = [1, 2, 3, 4]
TINY = ["run.warmup_s=0.002", "run.measure_s=0.005", "run.replications=2"]
SWEEP = [f"workload.vms={','.join(map(str, VMS))}", *TINY]


def _cmd(sweep_dir: Path | None, *extra: str) -> list[str]:
    where = [] if sweep_dir is None else [f"hydra.sweep.dir={sweep_dir}"]
    return [sys.executable, "-m", "sim", "run", "--multirun", *SWEEP, *where, *extra]


def _env() -> dict:
    return {**os.environ, "VNETSIM_PROGRESS": "0"}


def _sweep(sweep_dir: Path | None, *extra: str, cwd: Path | None = None
           ) -> subprocess.CompletedProcess:
    proc = subprocess.run(_cmd(sweep_dir, *extra), cwd=cwd or sweep_dir.parent, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _numbers(sweep_dir: Path) -> dict[int, tuple]:
    """workload.vms -> (config_hash, per-replication summaries) of every point."""
    out = {}
    for path in sorted(sweep_dir.glob("*/results.json")):
        assert not (path.parent / INCOMPLETE).exists()
        res = json.loads(path.read_text())
        assert res["config"]["workload"]["vms"] not in out, path  # every point exactly once
        out[res["config"]["workload"]["vms"]] = (res["config_hash"], res["replications"])
    return out


def _complete(sweep_dir: Path) -> list[Path]:
    """Point directories with results.json and no INCOMPLETE marker (a point killed between
    the two has both: it is not complete)."""
    return [p.parent for p in sweep_dir.glob("*/results.json")
            if not (p.parent / INCOMPLETE).exists()]


def _launcher(point_dir: Path) -> str:
    hydra_yaml = (point_dir / ".hydra" / "hydra.yaml").read_text()
    return next(line.split(":", 1)[1].strip() for line in hydra_yaml.splitlines()
                if "_target_: hydra_plugins" in line and "launcher" in line)


@pytest.fixture(scope="module")
def joblib_sweep(tmp_path_factory) -> Path:
    """The reference: the sweep on the default launcher into the default directory,
    uninterrupted. Every worker writes into the one sweep directory (``${pid:}`` in its name is
    the launching process's, not each worker's)."""
    cwd = tmp_path_factory.mktemp("joblib")
    _sweep(None, cwd=cwd)
    sweeps = list(cwd.glob("multirun/*/*"))
    assert len(sweeps) == 1, sweeps
    return sweeps[0]


def test_joblib_sweep_equals_each_point_run_alone(joblib_sweep):
    from sim.compose import compose_checked
    from sim.results import to_dict
    from sim.runner import run_experiment
    from sim.sweep import config_hash
    assert "JoblibLauncher" in _launcher(joblib_sweep / "0")
    numbers = _numbers(joblib_sweep)
    assert sorted(numbers) == VMS
    for vms in VMS:
        cfg = compose_checked([f"workload.vms={vms}", *TINY])
        alone = to_dict(run_experiment(cfg))  # in this process, one point at a time
        assert numbers[vms] == (config_hash(cfg), alone["replications"]), vms
    # the points differ (two may share line rate, not their CPU): the comparison means something
    assert len({json.dumps(numbers[v][1], sort_keys=True) for v in VMS}) == len(VMS)


def test_ray_sweep_equals_joblib(joblib_sweep, tmp_path):
    out = tmp_path / "ray"
    _sweep(out, "hydra/launcher=ray", "hydra.launcher.ray.init.address=local")
    assert "RayLauncher" in _launcher(out / "0")
    assert _numbers(out) == _numbers(joblib_sweep)


def test_a_killed_sweep_resumes_with_every_point_once(joblib_sweep, tmp_path):
    out = tmp_path / "killed"
    k = random.Random(20261123).randint(1, len(VMS) - 2)  # at most k+1 of 4 done (2 workers)
    proc = subprocess.Popen(_cmd(out), cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while len(_complete(out)) < k:
            assert proc.poll() is None and time.monotonic() < deadline, "sweep ended early"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its workers, as a crash would
        proc.wait()
    done = {p.name: (p / "results.json").stat().st_mtime_ns for p in _complete(out)}
    assert k <= len(done) < len(VMS), (k, done)

    again = _sweep(out)
    skipped = [ln for ln in again.stdout.splitlines() if ln.startswith("skipped: ")]
    ran = [ln for ln in again.stdout.splitlines() if ln.startswith("results: ")]
    assert sorted(Path(ln.split()[1].rstrip(":")).name for ln in skipped) == sorted(done), \
        (done, again.stdout[-4000:])
    assert len(ran) == len(VMS) - len(done), (done, again.stdout[-4000:])
    for name, mtime in done.items():  # a finished point is not written again
        assert (out / name / "results.json").stat().st_mtime_ns == mtime
    assert not list(out.rglob(INCOMPLETE))
    assert _numbers(out) == _numbers(joblib_sweep)


def _run_collect(capsys, args: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    status = collect_main(args)
    out, err = capsys.readouterr()
    return status, out, err


def test_collect_one_row_per_point_and_replication(joblib_sweep, tmp_path, capsys):
    table = tmp_path / "sweep.parquet"
    status, out, err = _run_collect(capsys, [str(joblib_sweep), "--out", str(table)])
    assert status == 0 and err == "" and str(table) in out
    df = pd.read_parquet(table)
    assert len(df) == len(VMS) * 2
    assert {"point", "point_dir", "config_hash", "replication", "config.workload.vms",
            "config.run.seed", "config.nic.link.line_rate_gbps"} <= set(df.columns)
    assert not [c for c in df.columns if "provenance" in c]
    numbers = _numbers(joblib_sweep)
    for _, row in df.iterrows():
        digest, reps = numbers[row["config.workload.vms"]]
        assert row["config_hash"] == digest
        assert Path(row["point_dir"]) == (joblib_sweep / row["point"]).resolve()
        summary = reps[row["replication"]]
        assert {k: row[k] for k in summary} == summary  # every metric, exactly
    assert df["config.workload.vms"].tolist() == [v for v in VMS for _ in range(2)]


def test_collect_leaves_out_an_incomplete_point_with_one_warning(joblib_sweep, tmp_path, capsys):
    import shutil
    copy = tmp_path / "sweep"
    shutil.copytree(joblib_sweep, copy)
    (copy / "2" / INCOMPLETE).write_text("")
    status, out, err = _run_collect(capsys, [str(copy)])
    assert status == 0
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: 1 incomplete point(s)"), err
    df = pd.read_parquet(copy / "collected.parquet")
    assert sorted(df["point"].unique()) == ["0", "1", "3"]


@pytest.mark.parametrize("case", ["missing", "empty", "only_incomplete", "two_dirs", "no_dir",
                                  "bad_option", "out_dir_missing", "out_empty", "not_results"])
def test_collect_bad_input_is_one_line_and_exit_2(case, tmp_path, capsys):
    d = tmp_path / "d"
    d.mkdir()
    args = {"missing": [str(tmp_path / "nope")], "empty": [str(d)],
            "only_incomplete": [str(d)], "two_dirs": [str(d), str(d)], "no_dir": [],
            "bad_option": [str(d), "--format=csv"],
            "out_dir_missing": [str(d), "--out", str(tmp_path / "no" / "x.parquet")],
            "out_empty": [str(d), "--out="], "not_results": [str(d)]}[case]
    if case in ("only_incomplete", "out_dir_missing", "out_empty"):
        (d / "0").mkdir()
        (d / "0" / INCOMPLETE).write_text("")
    if case in ("out_dir_missing", "out_empty"):  # a good sweep: only --out is wrong
        (d / "1").mkdir()
        (d / "1" / "results.json").write_text(json.dumps(
            {"config": {"run": {"seed": 1}}, "summary": {"x": 1.0}, "replications": [{"x": 1}]}))
    if case == "not_results":
        (d / "0").mkdir()
        (d / "0" / "results.json").write_text("[1, 2]")
    before = sorted(tmp_path.rglob("*"))
    status, out, err = _run_collect(capsys, args)
    assert status == 2 and out == "", (status, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before  # nothing written
