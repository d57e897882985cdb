"""``fluid.compare_all``'s operating points: where the DES's replications settle on different
points by seed, the fluid engine is compared with the DES's robust point (more service jitter),
and the row says so. The DES is stubbed: these tests check the bookkeeping, not the models."""

import pandas as pd
import pytest

from sim import fluid, runner


def _stub(monkeypatch, by_jitter: dict[float, list[float]]):
    """``run_experiment`` answering each replication's goodput by ``host.cpu.jitter_cv``; the
    configurations it was asked for are kept in the returned list."""
    asked = []

    def run(cfg, progress=None):
        asked.append(cfg)
        goodputs = by_jitter[cfg.host.cpu.jitter_cv]
        reps = [{"goodput_gbps": g, "host_cpu_util_pct": 10.0 * g, "loss_ratio": 0.0}
                for g in goodputs]
        mean, ci = runner.summarize(reps)
        return runner.Results(cfg, mean, ci, reps, {})

    monkeypatch.setattr(runner, "run_experiment", run)
    return asked


def _row(monkeypatch, by_jitter):
    asked = _stub(monkeypatch, by_jitter)
    table = fluid.compare_all(["e35_tx_single_vm"], measure_s=0.1, warmup_s=0.05,
                              replications=3)
    return table.iloc[0], asked


def test_replications_at_one_point_are_compared_as_they_are(monkeypatch):
    row, asked = _row(monkeypatch, {0.05: [9.40, 9.41, 9.39]})
    assert len(asked) == 1 and row["des_point"] == "one"
    assert row["des_goodput_gbps"] == pytest.approx(9.40)


def test_a_multi_stable_des_is_compared_at_its_robust_point(monkeypatch):
    # as dev_vmxnet_32_10g_stream with the first-frame coalescing timer: 8.56, 7.07 and 5.59
    # Gbps on seeds 1-3 at jitter_cv 0.05 (0.1 s after 0.05 s)
    row, asked = _row(monkeypatch, {0.05: [8.56, 7.07, 5.59], 0.2: [6.10, 6.12, 6.08]})
    assert len(asked) == 2
    robust = asked[1]
    assert robust.host.cpu.jitter_cv == fluid.ROBUST_JITTER_CV
    assert robust.run.warmup_s == fluid.ROBUST_WARMUP_S
    assert row["des_point"] == "robust" and row["des_goodput_range_gbps"] == "5.59-8.56"
    assert row["des_goodput_gbps"] == pytest.approx(6.10)
    assert row["des_host_cpu_util_pct"] == pytest.approx(61.0)


def test_no_robust_point_keeps_the_first_run_and_says_several(monkeypatch):
    row, _ = _row(monkeypatch, {0.05: [8.56, 7.07, 5.59], 0.2: [5.0, 6.0, 7.0]})
    assert row["des_point"] == "several"
    assert row["des_goodput_gbps"] == pytest.approx((8.56 + 7.07 + 5.59) / 3)


def test_one_point_tolerance():
    assert fluid._one_point([5.0, 5.0 * (1 + fluid.SAME_POINT_TOL) - 1e-9])
    assert not fluid._one_point([5.0, 5.2])
    assert fluid._one_point([0.0, 0.0])


def test_replications_apart_by_their_own_draws_are_one_point(monkeypatch):
    # team_4x1g_mac_hash_4vms: each replication draws its VMs' MACs, which decide how the VMs
    # share the uplinks (DES 3.761 / 1.879 / 2.820 Gbps on replications 0-2); the fluid engine
    # solves each replication's draws, and the DES over the fluid agrees there
    row_des = [3.761, 1.879, 2.820]
    asked = _stub(monkeypatch, {0.05: row_des})
    fluid_by_rep = [3.76, 1.88, 2.82]

    def solve(cfg, replication=0):
        g = fluid_by_rep[replication]
        s = {"goodput_gbps": g, "host_cpu_util_pct": 10.0 * g, "regime": "link-bound"}
        return runner.Results(cfg, s, {}, [s], {"bottleneck": pd.DataFrame(
            {"constraint": ["link nic0.wire_tx"]})})

    monkeypatch.setattr(fluid, "solve", solve)
    row = fluid.compare_all(["e35_tx_single_vm"], measure_s=0.1, warmup_s=0.05,
                            replications=3).iloc[0]
    assert len(asked) == 1 and row["des_point"] == "one"
    assert row["fluid_goodput_gbps"] == pytest.approx(sum(fluid_by_rep) / 3)
    assert row["goodput_gbps_rel_diff"] == pytest.approx(0.0, abs=1e-3)


def test_the_fluid_engine_solves_a_replications_own_draws():
    # each replication draws its own MACs: 3.762 / 1.881 / 2.821 Gbps on replications 0-2 (the
    # DES: 3.761 / 1.879 / 2.820)
    from sim.compose import compose_checked
    cfg = compose_checked("configs", ["experiment=team_4x1g_mac_hash_4vms"])
    goodputs = {fluid.solve(cfg, r).summary["goodput_gbps"] for r in range(3)}
    assert len(goodputs) > 1
