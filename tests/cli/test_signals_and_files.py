"""Ctrl-C, a closed pipe, and result files (issue 10): one line and exit 130 on Ctrl-C, a quiet
exit into a closed pipe, a run directory that holds a complete result or says it does not, and
no two runs sharing a directory."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.conftest import REPO

SHORT_RUN = ["run.warmup_s=0.01", "run.measure_s=0.01", "run.replications=1"]


def test_ctrl_c_is_one_line_exit_130_and_leaves_the_run_marked_incomplete(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "sim", "run", "run.measure_s=500",
                             "run.replications=1", f"hydra.run.dir={tmp_path}"], cwd=REPO,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / ".hydra").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)  # inside the run
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert err.strip() == "interrupted" and "Traceback" not in out + err, err
    assert (tmp_path / "INCOMPLETE").exists()
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("args", [["list"], ["run", *SHORT_RUN]], ids=["list", "run"])
def test_a_closed_pipe_is_a_quiet_exit(args, tmp_path):
    """``python -m sim list | head -1``: the reader has gone; no BrokenPipeError trace."""
    if args[0] == "run":
        args = [*args, f"hydra.run.dir={tmp_path}"]
    r, w = os.pipe()
    os.close(r)  # nobody will read
    try:
        proc = subprocess.run([sys.executable, "-m", "sim", *args], cwd=REPO, stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(w)
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == 141


def test_concurrent_runs_get_their_own_directories(sim_cli_many):
    procs = sim_cli_many([["run", "--cfg", "hydra", "--resolve"]] * 2)
    dirs = []
    for p in procs:
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        dirs.append(next(lines[i + 1].split("dir:")[1].strip() for i, ln in enumerate(lines)
                         if ln.strip() == "run:"))
    assert dirs[0] != dirs[1] and all(d.startswith("outputs/") for d in dirs), dirs


def _results():
    from sim.config import Config
    from sim.results import SUMMARY_KEYS
    from sim.runner import Results
    summary = {k: 1.0 for k in SUMMARY_KEYS}
    tables = {name: pd.DataFrame({"x": [1, 2]}) for name in ("flows", "vms", "cores")}
    return Results(Config(), summary, dict(summary), [summary], tables)


def test_results_are_written_whole_and_the_marker_removed(tmp_path):
    from sim.results import begin, write
    begin(tmp_path)
    assert (tmp_path / "INCOMPLETE").exists()
    path = write(_results(), tmp_path)
    assert path == tmp_path / "results.json" and path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cores.csv", "flows.csv", "results.json", "summary.csv", "vms.csv"]


def test_a_write_that_fails_leaves_no_partial_set(tmp_path, monkeypatch):
    """A failure (or Ctrl-C) while writing: no results.json, no CSVs, the marker stays."""
    from sim.results import begin, write
    begin(tmp_path)
    calls = []

    def to_csv(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)
    real = pd.DataFrame.to_csv
    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
    with pytest.raises(KeyboardInterrupt):
        write(_results(), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["INCOMPLETE"]
