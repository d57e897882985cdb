"""Run the capacity-planning notebooks: each jupytext ``.py`` here is converted into an
``.ipynb`` and executed by nbmake in a fresh kernel (the one way both ``make notebooks`` and
``tests/notebooks`` run them).

``python experiments/notebooks/_run.py [OUT_DIR] [--small]``: every notebook at full settings
(``--small``: ``VNETSIM_NOTEBOOK_SMALL=1``), executed notebooks with their figures written to
OUT_DIR (default ``outputs/notebooks``); exits 1 at the first cell error.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbmake.nb_run import NotebookRun
from nbmake.nb_result import NotebookResult

HERE = Path(__file__).resolve().parent
NOTEBOOKS = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))
TIMEOUT_S = 3600  # per cell


def run_notebook(source: Path, out_dir: Path, small: bool, timeout_s: int = TIMEOUT_S
                 ) -> NotebookResult:
    """Convert ``source`` to ``out_dir/NAME.ipynb``, execute it there (the kernel inherits
    ``VNETSIM_NOTEBOOK_SMALL``), write the executed notebook back; returns nbmake's result."""
    ipynb = Path(out_dir) / f"{source.stem}.ipynb"
    nbformat.write(jupytext.read(source), ipynb)
    previous = os.environ.get("VNETSIM_NOTEBOOK_SMALL")
    os.environ["VNETSIM_NOTEBOOK_SMALL"] = "1" if small else "0"
    try:
        result = NotebookRun(ipynb, timeout_s).execute()
    finally:
        if previous is None:
            os.environ.pop("VNETSIM_NOTEBOOK_SMALL")
        else:
            os.environ["VNETSIM_NOTEBOOK_SMALL"] = previous
    nbformat.write(result.nb, ipynb)
    return result


def main(argv: list[str]) -> int:
    small = "--small" in argv
    args = [a for a in argv if a != "--small"]
    out = Path(args[0]) if args else HERE.parents[1] / "outputs" / "notebooks"
    out.mkdir(parents=True, exist_ok=True)
    for source in NOTEBOOKS:
        start = time.monotonic()
        result = run_notebook(source, out, small)
        if result.error is not None:
            print(f"{source.name}: {result.error.summary}\n{result.error.trace}", file=sys.stderr)
            return 1
        print(f"{source.name}: ok in {time.monotonic() - start:.0f} s -> {out / source.stem}"
              f".ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
