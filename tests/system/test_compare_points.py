"""``fluid.compare_all``'s operating points: where the DES's replications settle on different
points by seed, the fluid engine is compared with the DES's robust point (more service jitter),
and the row says so. The DES is stubbed: these tests check the bookkeeping, not the models."""

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
