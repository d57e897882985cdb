"""Kept for old habits: ``python benchmarks/bench.py ARGS`` is ``python -m sim bench ARGS``
(``make bench``); see sim/bench.py for what is measured and how."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sim.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
