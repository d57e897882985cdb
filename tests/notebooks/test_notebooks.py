"""The capacity-planning notebooks (``experiments/notebooks/*.py``, jupytext percent format) run
end to end through nbmake on small settings (``VNETSIM_NOTEBOOK_SMALL=1``): each is converted
into a temporary ``.ipynb`` and executed in a fresh kernel (``experiments/notebooks/_run.py``,
which ``make notebooks`` uses at full settings), and must finish without a cell error and draw
plotly figures."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("notebooks_run",
                                               REPO / "experiments" / "notebooks" / "_run.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)

PLOTLY = "application/vnd.plotly.v1+json"
TIMEOUT_S = 120  # per cell


def test_the_five_studies_are_there():
    assert {p.stem for p in runner.NOTEBOOKS} == {"vms_per_10gbe", "e1000_to_vmxnet3",
                                                  "multicast_receivers", "pcie_slot_40g",
                                                  "numa_placement"}


@pytest.mark.parametrize("source", runner.NOTEBOOKS, ids=[p.stem for p in runner.NOTEBOOKS])
def test_notebook_runs_on_small_settings_and_draws(source: Path, tmp_path):
    result = runner.run_notebook(source, tmp_path, small=True, timeout_s=TIMEOUT_S)
    assert result.error is None, f"{source.name}: {result.error.summary}\n{result.error.trace}"
    figures = [o for c in result.nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if PLOTLY in o.get("data", {})]
    assert len(figures) >= 2, f"{source.name}: {len(figures)} plotly figure(s) drawn"
