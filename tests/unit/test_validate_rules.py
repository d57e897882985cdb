"""The validation's rules and the calibration's residuals on made-up results (no model runs):
each rule passes on a value that meets the source's statement and fails on one that does not."""
import re
from pathlib import Path

import pytest

from sim import calibrate as C
from sim import validate as V

RUN = ("experiment=x",)


def results(**metric_values):
    """One run's per-replication values for each metric."""
    return {RUN: {k: list(v) for k, v in metric_values.items()}}


def curve_results(key, xs, ys):
    return {(*RUN, f"{key}={x}"): {"m": [y, y]} for x, y in zip(xs, ys)}


def outcome(check, res):
    target = {"id": "T", "study": "s", "role": "fitted", "checks": [check]}
    return V.evaluate(target, res)[0]


@pytest.mark.parametrize("rule, good, bad", [
    ({"value": 8.0}, 8.3, 8.5),                 # +-5% by default
    ({"value": 8.0, "tol": 0.1}, 8.7, 8.9),
    ({"band": [9.25, 9.45]}, 9.41, 9.5),
    ({"min": 35.0}, 35.2, 34.9),
    ({"max": 1e-4}, 0.0, 2e-4),
])
def test_scalar_rules(rule, good, bad):
    check = {"of": {"metric": "m", "run": list(RUN)}, **rule}
    assert outcome(check, results(m=[good, good])).ok is True
    assert outcome(check, results(m=[bad, bad])).ok is False


def test_ratio_and_mean_over_replications():
    a, b = ("experiment=a",), ("experiment=b",)
    res = {a: {"m": [3.0, 5.0]}, b: {"m": [2.0, 2.0]}}
    check = {"of": {"ratio": [{"metric": "m", "run": list(a)},
                              {"metric": "m", "run": list(b)}]}, "value": 2.0}
    o = outcome(check, res)
    assert o.ok and o.value == pytest.approx(2.0)
    check["value"] = 1.5
    assert outcome(check, res).ok is False


def test_saturation_point():
    xs = [1, 2, 3, 4]
    check = {"of": {"metric": "m", "run": list(RUN), "sweep": {"key": "k", "values": xs}},
             "saturates_at": 2}
    assert outcome(check, curve_results("k", xs, [8.0, 9.4, 9.4, 9.3])).ok
    assert not outcome(check, curve_results("k", xs, [9.4, 9.4, 9.4, 9.4])).ok  # at 1
    assert not outcome(check, curve_results("k", xs, [4.0, 8.0, 9.4, 9.4])).ok  # at 3
    # an engine that gives no value (the fluid engine on a DES-only metric): a failed check,
    # not a crash of the whole validation
    nan = float("nan")
    assert not outcome(check, curve_results("k", xs, [nan] * 4)).ok
    best = {"of": {"metric": "m", "run": list(RUN), "sweep": {"key": "k", "values": xs},
                   "stat": "max"}, "value": 9.4}
    assert outcome(best, curve_results("k", xs, [8.0, 9.4, 9.4, 9.3])).ok
    assert not outcome(best, curve_results("k", xs, [nan] * 4)).ok


def test_largest_count_below_a_loss_limit():
    xs = [18, 19, 20, 21, 22]
    check = {"of": {"metric": "m", "run": list(RUN), "sweep": {"key": "vms", "values": xs}},
             "largest_below": {"limit": 1e-4, "value": 20, "tol": 1}}
    assert outcome(check, curve_results("vms", xs, [0, 0, 0, 1e-3, 1e-2])).ok
    assert not outcome(check, curve_results("vms", xs, [0, 0, 0, 0, 0])).ok      # 22: +2
    assert not outcome(check, curve_results("vms", xs, [0, 1e-3, 1e-2, 1, 1])).ok  # 18: -2


def test_linear_fit_and_end_ratio():
    xs = [1, 2, 4, 8]
    lin = {"of": {"metric": "m", "run": list(RUN), "sweep": {"key": "k", "values": xs}},
           "r2_min": 0.98}
    assert outcome(lin, curve_results("k", xs, [2, 4, 8, 16])).ok
    assert not outcome(lin, curve_results("k", xs, [2, 16, 2, 16])).ok
    end = {"of": lin["of"], "end_ratio": {"from": 2, "to": 8, "band": [0.85, 0.995]}}
    assert outcome(end, curve_results("k", xs, [9, 9.4, 9.3, 9.0])).ok
    assert not outcome(end, curve_results("k", xs, [9, 9.4, 9.4, 9.4])).ok  # flat: no decline


def test_a_failed_run_is_not_evaluated_rather_than_passed():
    check = {"of": {"metric": "m", "run": list(RUN)}, "value": 1.0}
    assert outcome(check, {RUN: {"error": "no"}}).ok is None


def test_an_unevaluable_check_is_na_with_its_reason_and_never_run():
    check = {"of": {"metric": "m", "run": list(RUN)}, "value": 1.0,
             "unevaluable": "no such host yet"}
    o = outcome(check, {RUN: {"m": [1.0, 1.0]}})  # even with a result at hand
    assert o.ok is None and o.predicted == "n/a: no such host yet"


def test_calibration_residuals_are_relative_and_zero_inside_bounds():
    s = V.Scalar
    assert C.residual({"value": 4.0}, s(4.4, None)) == pytest.approx(0.1)
    assert C.residual({"band": [0.75, 0.78]}, s(0.77, None)) == 0.0
    assert C.residual({"band": [0.75, 0.78]}, s(0.8, None)) > 0
    # a band is fitted to its middle half: its edge is not yet the aim
    assert C.residual({"band": [0.75, 0.79]}, s(0.751, None)) == pytest.approx(-0.009 / 0.77)
    assert C.residual({"band": [0.75, 0.79]}, s(0.78, None)) == 0.0
    assert C.residual({"min": 35.0}, s(36.0, None)) == 0.0
    assert C.residual({"min": 35.0}, s(28.0, None)) == pytest.approx(-0.2)


def test_calibration_refuses_a_predicted_target():
    targets = {t["id"]: t for t in V.load_targets()["targets"]}
    with pytest.raises(ValueError, match="only 'fitted'"):
        C.training_checks({"name": "b", "targets": ["MC-cpu"]}, targets)


def test_every_claim_is_a_target_and_half_are_predicted():
    claims = Path(V.ROOT).parent / "shared" / "seeds" / "CLAIMS.md"
    spec = V.load_targets()
    ids = [t["id"] for t in spec["targets"]]
    assert len(ids) == len(set(ids)) == 38
    if claims.is_file():  # the seeds sit beside the repository in the development tree
        stated = set(re.findall(r"^- ([A-Z0-9]+-[A-Za-z0-9-]+):", claims.read_text(), re.M))
        assert {i for i in stated if not i.startswith("S-")} == set(ids)
    predicted = [t for t in spec["targets"] if t["role"] == "predicted"]
    assert len(predicted) * 2 >= len(ids)
    for t in spec["targets"]:
        if t["study"] == "001" or t["study"] == "003-mc" or t["id"] in (
                "E35-fair-15", "E35-tx-scale", "E35-rx-scale"):
            assert t["role"] == "predicted", t["id"]
    fitted_on = {b2 for b in C.yaml.safe_load(open(C.SPEC))["blocks"] for b2 in b["targets"]}
    assert all(targets_role == "fitted" for targets_role in
               (next(t["role"] for t in spec["targets"] if t["id"] == f.split("#")[0])
                for f in fitted_on))


def test_targets_beyond_the_seeds_are_predicted_sourced_and_never_fitted():
    """validation/targets_beyond.yaml (issue 12): every entry predicted, with a public source
    address and a quote; none is among the calibration's training targets; its ids do not
    collide with the seeds'."""
    path, _ = V.TARGET_SETS["beyond"]
    beyond = V.load_targets(path)["targets"]
    seeds = {t["id"] for t in V.load_targets()["targets"]}
    fitted_on = {b2.split("#")[0] for b in C.yaml.safe_load(open(C.SPEC))["blocks"]
                 for b2 in b["targets"]}
    assert beyond
    for t in beyond:
        assert t["role"] == "predicted", t["id"]
        assert str(t["source"]).startswith("http") and t["quote"], t["id"]
        assert t["id"] not in seeds and t["id"] not in fitted_on
        assert t["checks"]


def test_every_run_of_the_targets_beyond_composes_unless_marked_unevaluable():
    """A check whose run does not compose would be n/a for ever: each one that cannot be run
    yet says why (``unevaluable``); every other run composes."""
    from sim.compose import compose_checked
    path, _ = V.TARGET_SETS["beyond"]
    runs = {r for t in V.load_targets(path)["targets"] for c in t["checks"]
            if "unevaluable" not in c for r in V._runs_of(c["of"])}
    assert runs
    for r in sorted(runs):
        compose_checked(str(V.CONFIG_DIR), list(r))  # raises ConfigError naming the key


def test_validate_refuses_an_unknown_target_set(capsys):
    assert V.main(["--targets", "nope"]) == 2
    assert "--targets='nope'" in capsys.readouterr().err


def test_a_target_with_a_failing_numpy_bool_check_fails():
    """Rules may answer with numpy bools; a failing one must fail its target (``is False``
    alone would let it pass)."""
    import numpy as np
    outs = [V.Outcome("T", "a", "", "", "", np.bool_(False), "predicted", "s"),
            V.Outcome("T", "b", "", "", "", True, "predicted", "s")]
    assert V.Report(outs, [{"id": "T", "role": "predicted"}], {}).target_ok("T") is False
