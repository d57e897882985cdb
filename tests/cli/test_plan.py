"""``python -m sim plan``: the search finds what a brute-force scan finds, the DES confirm step
overrules the fluid bracket, and bad constraints are one line with exit status 2."""
import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from sim.cli import CONFIG_DIR, main
from sim.compose import compose_checked, compose_dict
from sim.plan import Constraint, Planner, Point, choose_option, gallop, parse_choose, plan_vms
from sim.runner import run_experiment


@settings(max_examples=300, deadline=None)
@given(vms_max=st.integers(1, 600), data=st.data())
def test_gallop_finds_the_largest_count_that_holds(vms_max, data):
    """Any start, width and first step: the largest n with holds(n), each count asked once."""
    true = data.draw(st.integers(0, vms_max))
    start = data.draw(st.integers(1, vms_max))
    width, step = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 8))
    asked = []

    def holds_many(counts):
        asked.extend(counts)
        return [n <= true for n in counts]

    assert gallop(holds_many, start, vms_max, width, step) == true
    assert len(asked) == len(set(asked))


# A small DES case: e35_rx_scaling's VMs share one 10GbE port, so goodput per VM falls with
# every VM added: at least 2 Gbps each holds up to 4 VMs (9.4 / 4), not at 5.
SMALL = ["experiment=e35_rx_scaling", "run.warmup_s=0.02", "run.measure_s=0.02",
         "run.replications=2"]
VMS_MAX = 6


def test_answer_equals_a_brute_force_scan_with_the_des(tmp_path):
    out = tmp_path / "plan.json"
    # no --screen-measure-s: the default screen shrinks to the run's 0.02-s window
    assert main(["plan", *SMALL, "--min", "per_vm_goodput_gbps=2", "--vms-max", str(VMS_MAX),
                 "--out", str(out)]) == 0
    plan = json.loads(out.read_text())
    scan = [run_experiment(compose_checked(CONFIG_DIR, [*SMALL, f"workload.vms={n}"]))
            .summary["goodput_gbps"] / n >= 2 for n in range(1, VMS_MAX + 1)]
    brute = max((n for n, ok in enumerate(scan, 1) if ok), default=0)
    assert all(scan[:brute]) and not any(scan[brute:])  # monotone, so one boundary
    assert plan["answer_vms"] == brute
    assert 1 <= brute < VMS_MAX  # a boundary inside the range: the search had work to do
    confirmed = {(s["vms"], s["holds"]) for s in plan["search"] if s["stage"] == "confirm"}
    assert {(brute, True), (brute + 1, False)} <= confirmed
    assert plan["bottleneck"]["kind"] == "link"  # the shared port, not a core


def test_fluid_stage_equals_a_brute_force_scan_with_the_fluid_engine():
    base = compose_dict(CONFIG_DIR, ["experiment=e35_rx_scaling"])
    c = [Constraint("min", "per_vm_goodput_gbps", 1.5), Constraint("max", "host_cpu_util_pct",
                                                                   80)]
    p = Planner(base, c, 0.1, 1)
    found = gallop(lambda ms: p.holds_many("fluid", ms), 8, 12)
    scan = [Planner(base, c, 0.1, 1).holds("fluid", n) for n in range(1, 13)]
    assert found == max(n for n, ok in enumerate(scan, 1) if ok)
    assert 1 <= found < 12


class FakeEngines:
    """Each stage holds up to its own count: the fluid engine and the short DES agree, the
    confirming DES (full replications) does not; counts the runs."""

    def __init__(self, fluid, screen, confirm, fluid_error=None):
        self.limit = {"fluid": fluid, "screen": screen, "confirm": confirm}
        self.fluid_error = fluid_error
        self.runs = []

    def __call__(self, cfg):
        stage = "fluid" if cfg.run.engine == "fluid" else (
            "screen" if cfg.run.replications == 1 else "confirm")
        if stage == "fluid" and self.fluid_error:
            raise ValueError(self.fluid_error)
        n = cfg.workload.vms
        self.runs.append((stage, n))
        loss = 0.0 if n <= self.limit[stage] else 0.01
        reps = cfg.run.replications
        return Point(cfg.run.engine, {"loss_ratio": [loss] * reps})


@pytest.fixture(scope="module")
def base():
    return compose_dict(CONFIG_DIR, ["experiment=e35_rx_scaling", "run.replications=3"])


@pytest.mark.parametrize("confirm", [7, 13])
def test_confirm_step_moves_the_answer_when_the_des_disagrees(base, confirm):
    engines = FakeEngines(fluid=10, screen=10, confirm=confirm)
    p = Planner(base, [Constraint("max", "loss_ratio", 1e-4)], 0.1, 2, run=engines)
    assert plan_vms(p, 4, 64) == confirm
    stages = [s for s, _ in engines.runs]
    assert "fluid" in stages and "screen" in stages
    assert ("confirm", confirm) in engines.runs and ("confirm", confirm + 1) in engines.runs


def test_des_alone_when_the_fluid_engine_cannot_solve_the_workload(base):
    engines = FakeEngines(fluid=0, screen=9, confirm=9, fluid_error="not modelled yet")
    p = Planner(base, [Constraint("max", "loss_ratio", 1e-4)], 0.1, 2, run=engines)
    assert plan_vms(p, 4, 64) == 9
    assert p.fluid_reason == "not modelled yet"
    assert not any(s == "fluid" for s, _ in engines.runs)


class ClockEngine:
    """Loss unless the host's clock is at least ``hz`` (the options differ in clock only)."""

    def __init__(self, hz):
        self.hz, self.runs = hz, []

    def __call__(self, cfg):
        self.runs.append(cfg.host.cpu.clock_hz)
        loss = 0.0 if cfg.host.cpu.clock_hz >= self.hz else 0.01
        return Point(cfg.run.engine, {"loss_ratio": [loss] * cfg.run.replications})


def test_choose_takes_the_cheapest_option_that_holds():
    """r810 (2.67 GHz) < r720 (2.90) < x3650m2 (2.93) < xeon5160 (3.0); costs reorder them."""
    c = [Constraint("max", "loss_ratio", 1e-4)]
    group, order = parse_choose("host=xeon5160,r810,x3650m2,r720",
                                "xeon5160=1,r810=2,x3650m2=4,r720=3")
    assert order == ["xeon5160", "r810", "r720", "x3650m2"]
    over = ["experiment=e35_rx_scaling"]
    text, out = choose_option(over, (group, order[1:]), c, 0.1, 1, False, run=ClockEngine(2.8e9))
    assert out["answer"] == "r720" and [r["option"] for r in out["tried"]] == ["r810", "r720"]
    text, out = choose_option(over, (group, order[1:]), c, 0.1, 1, False, run=ClockEngine(3.5e9))
    assert out["answer"] is None and len(out["tried"]) == 3 and "none of" in text


def test_confidence_reads_the_replications():
    c = Constraint("max", "loss_ratio", 1e-4)
    assert c.p_holds([0.0, 0.0, 0.0]) == 1.0
    assert c.p_holds([0.0]) is None
    assert 0.5 < c.p_holds([0.0, 1e-4, 0.5e-4]) < 1.0
    assert c.p_holds([1e-3, 2e-3, 3e-3]) < 0.05
    assert not c.holds(math.nan)


BAD = [  # (arguments after plan, what the line must contain)
    (["--max", "nope=1"], "--max nope=1"),
    (["--max", "loss_ratio=abc"], "--max loss_ratio=abc"),
    (["--max", "loss_ratio=nan"], "--max loss_ratio=nan"),
    (["--min", "goodput_gbps=inf"], "--min goodput_gbps=inf"),
    (["--min", "goodput_gbps=5", "--max", "goodput_gbps=3"], "--min goodput_gbps=5"),
    (["--max", "rr_latency_p99_us=100"], "--max rr_latency_p99_us=100"),
    (["--max"], "--max"),
    ([], "constraint"),
    (["--max", "loss_ratio=1e-4", "--choose", "nic=nope"], "nic=nope"),
    (["--max", "loss_ratio=1e-4", "--choose", "nope=a"], "nope=a"),
    (["--max", "loss_ratio=1e-4", "--choose", "nic=intel_82598", "--cost", "x=1"], "x=1"),
    (["--max", "loss_ratio=1e-4", "--vms-max", "0"], "--vms-max=0"),
    (["--max", "loss_ratio=1e-4", "--vms-max", "2.5"], "--vms-max=2.5"),
    (["--max", "loss_ratio=1e-4", "--vms-max", "100000"], "--vms-max=100000"),
    (["--max", "loss_ratio=1e-4", "--jobs", "-1"], "--jobs=-1"),
    (["--max", "loss_ratio=1e-4", "--bogus"], "--bogus"),
    (["--max", "loss_ratio=1e-4", "workload.vms=abc"], "workload.vms"),
]


@pytest.mark.parametrize("args,needle", BAD, ids=[" ".join(a) or "none" for a, _ in BAD])
def test_bad_constraints_are_one_line_and_exit_2(args, needle, capsys, tmp_path):
    out = tmp_path / "plan.json"
    rc = main(["plan", "experiment=mc_default_40k", "--out", str(out), *args])
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert rc == 2 and cap.out == ""
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []
