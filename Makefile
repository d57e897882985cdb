# vnetsim: `make run` and `make test` set everything up on a machine with only Python 3.11.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-all validate calibrate bench clean mutants properties-long notebooks

# (Re)install when the venv is missing or setup.cfg/pyproject.toml changed.
$(STAMP): setup.cfg pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: no python3.11 or python3 on PATH; set PYTHON=/path/to/python3.11" >&2; exit 2; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m sim run $(ARGS)

test: $(STAMP)
	$(PY) -m pytest -n auto $(ARGS)

test-all: $(STAMP)
	$(PY) -m pytest -m "" $(ARGS)

# Every published target (validation/targets.yaml) judged by the DES: table, CSV and
# validation/report.html, then the measurements beyond the studies (targets_beyond.yaml,
# validation/report_beyond.html); failing targets are reported and the target goes on to the
# fluid comparison and the slow tests. `make validate ARGS=--quick` for a smoke run.
validate: $(STAMP)
	$(PY) -m sim validate $(ARGS) || true
	$(PY) -m sim validate --targets beyond $(ARGS) || true
	$(PY) -m sim compare --all --csv validation/fluid_vs_des.csv run.replications=3 run.measure_s=0.1 run.warmup_s=0.05
	$(PY) -m pytest -m slow

calibrate: $(STAMP)
	$(PY) -m sim calibrate $(ARGS)

bench: $(STAMP)
	$(PY) -m sim bench $(ARGS)

# Mutation check (tests/mutants.py): each mechanism's keys x0 and x5, the whole-model suites
# run against each; prints which mutations the tests catch (docs/testing.md).
mutants: $(STAMP)
	$(PY) -m tests.mutants $(ARGS)

# The property tests with 1000+ examples each (tests/system/test_properties.py).
properties-long: $(STAMP)
	$(PY) -m pytest -m slow tests/system/test_properties.py $(ARGS)

# The capacity-planning notebooks (experiments/notebooks/*.py, jupytext) at full settings:
# each is converted to outputs/notebooks/NAME.ipynb and executed there (figures kept).
notebooks: $(STAMP)
	$(PY) experiments/notebooks/_run.py outputs/notebooks $(ARGS)

clean:
	rm -rf $(VENV) outputs multirun .pytest_cache
