"""Issue 10, usability: the notebook API from any directory, progress that changes no number,
``run --help`` from the schema, the size estimate, Ctrl-C during imports."""
from __future__ import annotations

import io
import time

import pandas as pd

from sim import runner

TINY = ["run.warmup_s=0.005", "run.measure_s=0.01", "run.replications=1"]


def test_the_notebook_snippet_works_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from sim.compose import compose_checked
    cfg = compose_checked(["experiment=e35_rx_single_vm", *TINY])
    assert cfg.meta.name == "e35_rx_single_vm"
    # the README's older form: "configs" is not a directory here, the package's are used
    assert compose_checked("configs", ["experiment=e35_rx_single_vm", *TINY]) == cfg
    res = runner.run_experiment(cfg)
    assert res.summary["goodput_gbps"] > 0 and "contexts" in res.tables


class _Tty(io.StringIO):
    def isatty(self):
        return True


class _Env:
    now = 0.25


class _Model:
    env = _Env()


def test_progress_lines_and_bar_formats():
    out = io.StringIO()
    p = runner.Progress("lines", "exp", 3, 0.5, stream=out)
    w = p.watch(_Model(), 1)
    t0 = p.started
    w.tick(0.1, t0 + 1)  # too soon: nothing
    w.tick(0.25, t0 + runner.LINE_EVERY_S + 0.1)
    assert out.getvalue() == "progress: exp replication 2/3: 0.25/0.5 simulated s (50%), " \
                             "5 s elapsed\n"
    tty = _Tty()
    p = runner.Progress("bar", "exp", 3, 0.5, stream=tty)
    w = p.watch(_Model(), 0)
    w.tick(0.1, p.started + 0.5)  # a short run shows no bar
    assert tty.getvalue() == "" and w.bar is None
    w.tick(0.25, p.started + runner.BAR_AFTER_S + 0.1)
    assert "exp rep 1/3" in tty.getvalue() and "0.25/0.5 sim-s" in tty.getvalue()
    w.bar.close()


def test_progress_changes_no_number(compose, monkeypatch):
    """The watcher only reads env.now from a thread: the same tables with it polling often."""
    monkeypatch.setattr(runner, "POLL_S", 0.001)
    monkeypatch.setattr(runner, "LINE_EVERY_S", 0.0)
    cfg = compose(["experiment=e35_rx_single_vm", "run.warmup_s=0.01", "run.measure_s=0.03"])
    plain = runner.run_experiment(cfg)
    stream = io.StringIO()
    monkeypatch.setattr(runner.sys, "stderr", stream)
    watched = runner.run_experiment(cfg, progress="lines")
    assert stream.getvalue().startswith("progress: e35_rx_single_vm replication 1/1")
    assert plain.summary == watched.summary
    for name, table in plain.tables.items():
        pd.testing.assert_frame_equal(table, watched.tables[name], check_exact=True)


def test_a_run_without_warm_up(compose):
    """run.warmup_s=0 used to end in SimPy's 'until (0.0) must be greater' traceback."""
    res = runner.run_experiment(compose(["run.warmup_s=0", "run.measure_s=0.01"], short=False))
    assert res.summary["goodput_gbps"] >= 0


def test_ctrl_c_during_the_imports_is_one_line_exit_130(tmp_path):
    """SIGINT once the process has loaded its first compiled third-party module (so it is in
    ``sim.cli``'s imports, which take over a second more), before main's handler exists."""
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO
    proc = subprocess.Popen([sys.executable, "-m", "sim", "run", f"hydra.run.dir={tmp_path}"],
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    maps, deadline = "", time.monotonic() + 30
    while "site-packages" not in maps and time.monotonic() < deadline:
        time.sleep(0.005)
        maps = open(f"/proc/{proc.pid}/maps").read()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert err == "interrupted\n" and out == ""


def test_the_size_estimate_follows_the_counts_and_names_the_largest_key(compose):
    from sim.config import ConfigError, _check_size, estimate_size
    small = estimate_size(compose(["workload.vms=2", "workload.sessions_per_vm=4"]))
    big = estimate_size(compose(["workload.vms=64", "workload.sessions_per_vm=64"]))
    assert big["workload.sessions_per_vm"][1] == 512 * small["workload.sessions_per_vm"][1]
    assert big["workload.vms"][1] == 32 * small["workload.vms"][1]
    cfg = compose(["workload.vms=64", "workload.sessions_per_vm=64"])
    total = sum(b for _, b in big.values())
    _check_size(cfg, available=2.1 * total)  # fits in half of it
    try:
        _check_size(cfg, available=total)
    except ConfigError as exc:
        msg = str(exc)
    assert msg.startswith("workload.sessions_per_vm=64: must be <= ") and "workload.vms=64" in msg
    most = int(msg.split("<= ")[1].split()[0])
    assert 25 <= most < 64  # half the memory: about half the sessions
    _check_size(compose(["workload.vms=64", f"workload.sessions_per_vm={most}"]), available=total)


def test_the_size_estimate_is_near_the_builders_real_size(compose):
    """The bytes per object were measured with tracemalloc around build(); check they still
    hold within a factor 2 (the estimate includes RUN_FACTOR for the run itself)."""
    import gc
    import tracemalloc

    from sim.builder import build
    from sim.config import RUN_FACTOR, estimate_size
    cfg = compose(["workload.vms=16", "workload.sessions_per_vm=32"])
    gc.collect()
    tracemalloc.start()
    try:
        model = build(cfg)
        built = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert model is not None
    estimate = sum(b for _, b in estimate_size(cfg).values()) / RUN_FACTOR
    assert 0.5 < estimate / built < 2, (estimate, built)


def test_run_help_lists_every_key_with_its_meaning_unit_and_range(capsys):
    """From the schema: every leaf key of Config has a line (a CycleCost one for its three), with
    a written meaning for nearly all (DOCS or a comment on the field) and a unit in brackets."""
    import dataclasses
    import typing

    from models.base import CycleCost
    from sim.cli import main
    from sim.config import Config
    from sim.schema_help import documented

    def leaves(cls, path=""):
        for f in dataclasses.fields(cls):
            tp = typing.get_type_hints(cls)[f.name]
            if tp is CycleCost:
                yield f"{path}{f.name}.*_cycles"
            elif dataclasses.is_dataclass(tp):
                yield from leaves(tp, f"{path}{f.name}.")
            elif f.name != "provenance":
                yield f"{path}{f.name}"

    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    lines, key = {}, None
    for ln in out.splitlines():
        if ln.startswith("      ") and key:  # a wrapped line continues its key's
            lines[key] += " " + ln.strip()
        elif ln.startswith("  "):
            key = ln.split(": ")[0].strip()
            lines[key] = ln
    keys = list(leaves(Config))
    missing = [k for k in keys if k not in lines]
    assert not missing, missing
    assert all("[" in lines[k] and "] " in lines[k] for k in keys)
    assert max(map(len, out.splitlines())) <= 100
    assert "  nic.link.mtu_bytes: MTU of the physical link (IP packet) [bytes] (in 576..9216) = " \
           "1500" in out
    assert "  run.measure_s: simulated measurement window of each replication [s] (> 0 and " \
           "<= 1000" in out
    docs = documented(Config)
    undocumented = [k for k, ok in docs.items() if not ok]
    assert len(undocumented) <= 0.05 * len(docs), f"add a meaning to DOCS: {undocumented}"
    for group in ("workload", "nic", "host", "experiment"):
        assert f"\n  {group}: " in out
    assert main(["run", "--help", "coalescing"]) == 0
    some = capsys.readouterr().out
    assert "nic.coalescing.timer_us" in some and "workload.vms" not in some
