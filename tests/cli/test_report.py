"""``python -m sim report`` (issue 11): the page of a run (DES and fluid) and of a sweep opens in
headless Chromium with every plot drawn, no console error and no request leaving the machine;
``run ... report=true`` writes it beside results.json; bad input is one line and exit 2.

Chromium is Debian's ``chromium``: installed here with apt-get when missing (the test fails, it
does not skip, when that fails); Playwright drives it through ``executable_path``.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from sim.report import busiest, main, write_report
from tests.conftest import REPO

TINY = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=2"]


@pytest.fixture(scope="session")
def chromium() -> str:
    """The system chromium's path, installed with apt-get if it is missing (we are root)."""
    if shutil.which("chromium") is None:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, f"{' '.join(cmd)} failed: {done.stderr[-2000:]}"
    path = shutil.which("chromium")
    assert path, "chromium is not on PATH after apt-get install -y chromium"
    return path


@pytest.fixture(scope="session")
def browser(chromium):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield b
        b.close()


def rendered(browser, page_path) -> tuple[list[bool], list[str]]:
    """(for each plotly div: has it drawn an svg.main-svg or .plot-container, console errors
    and page errors and requests that would leave the machine)."""
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def offline(route):
        if not route.request.url.startswith("file://"):
            problems.append(f"request: {route.request.url}")
            return route.abort()
        return route.continue_()
    page.route("**/*", offline)
    page.goto(page_path.as_uri(), wait_until="load")
    drawn = page.evaluate("""() => [...document.querySelectorAll('.plotly-graph-div')].map(
        d => !!d.querySelector('svg.main-svg') && !!d.querySelector('.plot-container'))""")
    page.close()
    return drawn, problems


@pytest.fixture(scope="module")
def des_run(tmp_path_factory):
    """A finished 2-VM DES run directory, written by ``run ... report=true``."""
    out = tmp_path_factory.mktemp("run")
    done = subprocess.run([sys.executable, "-m", "sim", "run", "report=true",
                           "experiment=e35_tx_scaling", "workload.vms=2", *TINY,
                           f"hydra.run.dir={out}"], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"report: {out / 'report.html'}" in done.stdout
    return out


def test_run_true_writes_the_page_beside_results_and_it_renders(des_run, browser):
    assert {p.name for p in des_run.iterdir()} >= {"results.json", "report.html"}
    assert not [p for p in des_run.iterdir() if p.name.startswith(".report-")]
    drawn, problems = rendered(browser, des_run / "report.html")
    # goodput per VM and flow, CPU per core, per context and per core by term, fairness,
    # bottleneck
    assert len(drawn) >= 7 and all(drawn), drawn
    assert not problems, problems
    page = (des_run / "report.html").read_text()
    assert "<script src=" not in page  # plotly is embedded: the page opens offline
    assert "The busiest resource is" in page


def test_fluid_run_page_shows_the_engines_bottleneck_table(tmp_path, browser):
    from sim.compose import compose_checked
    from sim.results import write
    from sim.runner import run_experiment
    write(run_experiment(compose_checked(["run.engine=fluid"])), tmp_path)
    path = write_report(tmp_path)
    drawn, problems = rendered(browser, path)
    assert drawn and all(drawn) and not problems, (drawn, problems)
    assert "<code>bottleneck</code> table" in path.read_text()


def test_sweep_page_plots_each_metric_against_each_swept_key(tmp_path, browser):
    # the basic launcher: one process, points one after another (joblib's start-up would
    # cost more than these tiny points)
    done = subprocess.run([sys.executable, "-m", "sim", "run", "--multirun", "hydra/launcher=basic",
                           "workload.vms=1,2", "workload.sessions_per_vm=2,5", *TINY,
                           f"hydra.sweep.dir={tmp_path}"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert main([str(tmp_path), "--out", str(tmp_path / "sweep.html")]) == 0
    drawn, problems = rendered(browser, tmp_path / "sweep.html")
    assert len(drawn) == 2 and all(drawn), drawn  # one figure per swept key
    assert not problems, problems
    page = (tmp_path / "sweep.html").read_text()
    assert "against workload.vms" in page and "against workload.sessions_per_vm" in page


def test_the_busiest_resource_is_named_from_the_tables():
    import pandas as pd
    result = {"config": {"nic": {"link": {"line_rate_gbps": 10.0}}}, "tables": {
        "cores": pd.DataFrame({"replication": [0, 0], "core": [0, 1], "util_pct": [40., 60.]}),
        "contexts": pd.DataFrame({"replication": [0, 0], "context": ["vm0.vcpu0", "peer0.app"],
                                  "host": ["host", "peer0"], "core": [1, 0],
                                  "util_pct": [60., 99.]}),
        "nics": pd.DataFrame({"replication": [0, 0], "nic": ["nic0", "peer0.nic"],
                              "tx_gbps": [9.5, 0.3], "rx_gbps": [0.3, 9.5]}),
        "pcie": pd.DataFrame({"replication": [0, 0], "card": ["card0"] * 2,
                              "direction": ["up", "down"], "util_pct": [5., 70.]})}}
    b = busiest(result)
    assert list(b["kind"]) == ["link", "PCIe direction", "context", "core"]
    assert b.iloc[0]["where"] == "nic0 tx" and b.iloc[0]["util_pct"] == pytest.approx(95.0)
    assert b.iloc[2]["where"] == "vm0.vcpu0 (core 1)"  # the peer's busier context is not the host's


@pytest.mark.parametrize("case", ["missing", "empty", "incomplete", "two", "option"])
def test_bad_input_is_one_line_and_exit_2(case, tmp_path, capsys):
    args = {"missing": [str(tmp_path / "nope")], "empty": [str(tmp_path)],
            "incomplete": [str(tmp_path)], "two": [str(tmp_path), str(tmp_path)],
            "option": [str(tmp_path), "--colour"]}[case]
    if case == "incomplete":
        (tmp_path / "INCOMPLETE").write_text("")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob(".report-*"))
