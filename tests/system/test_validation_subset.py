"""A fast subset of `python -m sim validate` (the whole set runs in `make validate`): a fitted
target (the calibration is in use) and two predicted ones, on the --quick settings."""
from sim import validate as V

SUBSET = ["E35-tx-std", "E35-line-rate", "WIRE-1500"]


def test_a_subset_of_the_published_targets_passes():
    report = V.validate(SUBSET, quick=True, jobs=1)
    failed = [f"{o.target}: {o.check}: {o.predicted} vs {o.measured}"
              for o in report.outcomes if o.ok is not True]
    assert not failed, "\n".join(failed)
    assert {report.target_ok(t) for t in SUBSET} == {True}
