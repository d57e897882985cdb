"""Calibration: ``python -m sim calibrate [--spec FILE] [--name NAME] [--jobs N]``.

Fits the small, named set of cost parameters of ``validation/calibration.yaml`` with SciPy's
``least_squares`` (trust-region reflective, bounded), block by block, each on the scalar checks
of the ``fitted`` targets it names in ``validation/targets.yaml``; a residual is a check's
relative error (``value``: (predicted - stated) / stated; ``band``, ``min``, ``max``: the
distance outside the band, relative to it, 0 inside). A candidate is evaluated by composing
every run the block's checks need with ``++calibration.values.PROFILE.PARAM=VALUE`` (the
profile files read those keys, ``configs/calibration/``) and running the DES on the spec's short
``search`` windows with a fixed seed. The result is confirmed on the validation's own settings
and written to ``configs/calibration/NAME.yaml`` (values, training target ids, residuals,
date), which runs select with ``calibration=NAME``.

Searching with the DES, not the fluid engine: the fluid engine leaves out the halt and wake-up
of idle vCPUs and the client's ACK clock details that these targets depend on (``docs/fluid.md``),
so its optimum would be biased; the DES on 0.2-s windows costs ~1 s per run.
"""
from __future__ import annotations

import datetime
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml
from scipy.optimize import least_squares

from sim import validate as V

SPEC = V.ROOT / "validation" / "calibration.yaml"
OUT_DIR = V.ROOT / "configs" / "calibration"
SCALAR_RULES = ("value", "band", "min", "max")
# A band is fitted to its middle part: this share of its width is left on each side. With a
# zero error right up to the band's edge the search stopped on the edge, where the next
# change to any mechanism (or the validation settings' noise) put the check outside it
# (V6-driver at 0.746, then 0.745, of 0.745-0.785). 0.25: the middle half.
BAND_MARGIN = 0.25


def residual(check: dict, v: V.Scalar) -> float:
    """Relative error of a scalar check (0 inside a band's middle part, ``BAND_MARGIN``, or on
    the right side of a bound)."""
    m = v.mean
    if not math.isfinite(m):
        return 10.0
    if "value" in check:
        return (m - check["value"]) / check["value"]
    if "band" in check:
        lo, hi = check["band"]
        mid = (lo + hi) / 2
        lo, hi = lo + BAND_MARGIN * (hi - lo), hi - BAND_MARGIN * (hi - lo)
        return 0.0 if lo <= m <= hi else (m - (hi if m > hi else lo)) / mid
    if "min" in check:
        return min(0.0, (m - check["min"]) / abs(check["min"]))
    return max(0.0, (m - check["max"]) / abs(check["max"]))


def training_checks(block: dict, targets: dict) -> list[tuple[str, dict]]:
    out = []
    for entry in block["targets"]:
        tid, _, k = entry.partition("#")  # "ID#k": only the target's k-th check (1-based)
        t = targets.get(tid)
        if t is None:
            raise ValueError(f"block {block['name']}: unknown target {tid!r}")
        if t["role"] != "fitted":
            raise ValueError(f"block {block['name']}: target {tid} is '{t['role']}'; only "
                             f"'fitted' targets may be fitted on")
        for i, c in enumerate(t["checks"], 1):
            if k and i != int(k):
                continue
            if not any(r in c for r in SCALAR_RULES):
                continue
            if "each" in c["of"]:  # one residual per element, the same scalar rule for each
                out += [(tid, {**c, "of": q, "what": f"{c.get('what', '')} [{j}]"})
                        for j, q in enumerate(c["of"]["each"], 1)]
            else:
                out.append((tid, c))
    return out


def _override(values: dict[str, float]) -> list[str]:
    return [f"++calibration.values.{k}={float(v)!r}" for k, v in values.items()]


class Evaluator:
    """Runs a block's checks for candidate values (memoized, runs in parallel)."""

    def __init__(self, checks, settings: list[str], jobs: int, log=print):
        self.checks, self.settings, self.jobs, self.log = checks, settings, jobs, log
        self.runs = []
        for _, c in checks:
            for r in V._runs_of(c["of"]):
                if r not in self.runs:
                    self.runs.append(r)
        self.memo: dict[tuple, np.ndarray] = {}
        self.evaluations = 0

    def __call__(self, values: dict[str, float]) -> np.ndarray:
        key = tuple(sorted((k, round(v, 9)) for k, v in values.items()))
        if key in self.memo:
            return self.memo[key]
        # On the priors (calibration=none) plus the candidate: an earlier fit never leaks in.
        settings = tuple([*self.settings, "calibration=none", *_override(values)])
        args = [(r, settings) for r in self.runs]
        if self.jobs > 1:
            with ProcessPoolExecutor(max_workers=min(self.jobs, len(args))) as pool:
                outs = list(pool.map(V._measure_run, args))
        else:
            outs = [V._measure_run(a) for a in args]
        results = dict(zip(self.runs, outs))
        for r, o in results.items():
            if "error" in o:
                raise ValueError(f"run {' '.join(r)}: {o['error']}")
        res = np.array([residual(c, V._value(c["of"], results)) for _, c in self.checks])
        self.memo[key] = res
        self.evaluations += 1
        self.log("  " + " ".join(f"{k}={v:.4g}" for k, v in values.items())
                 + f" -> residuals {np.array2string(res, precision=3)}")
        return res


def _previous(name: str) -> dict[str, float]:
    """The values of an earlier fit of the same name (``PROFILE.PARAM`` -> value), if any."""
    path = OUT_DIR / f"{name}.yaml"
    if not path.is_file():
        return {}
    values = (yaml.safe_load(open(path)) or {}).get("values", {})
    return {f"{prof}.{k}": float(v) for prof, d in values.items() for k, v in d.items()}


def calibrate(spec_path: Path = SPEC, name: str | None = None, jobs: int | None = None,
              log=print, warm: bool = True) -> dict:
    """Fit every block of the spec; ``warm``: start each parameter at its value in an earlier
    fit of the same name (the fit is the same, found in fewer evaluations)."""
    spec = yaml.safe_load(open(spec_path))
    name = name or spec["name"]
    targets = {t["id"]: t for t in V.load_targets()["targets"]}
    jobs = jobs or os.cpu_count() or 1
    fitted: dict[str, float] = {}
    fitted_on: list[str] = []
    previous = _previous(name) if warm else {}
    report = []
    t0, c0 = time.time(), time.process_time()
    for block in spec["blocks"]:
        checks = training_checks(block, targets)
        params = block["params"]
        keys = [p["key"] for p in params]
        # Start at the prior unless the spec says where (a target that sits on a flat region
        # at the prior, e.g. a link-bound rate, gives a local method no gradient to follow).
        x0 = np.array([previous.get(p["key"], p.get("start", p["prior"])) for p in params],
                      dtype=float)
        x0 = np.clip(x0, [p["bounds"][0] for p in params], [p["bounds"][1] for p in params])
        lo = np.array([p["bounds"][0] for p in params], dtype=float)
        hi = np.array([p["bounds"][1] for p in params], dtype=float)
        ev = Evaluator(checks, list(spec["search"]), jobs, log)
        log(f"block {block['name']}: {', '.join(keys)} on {', '.join(block['targets'])}")

        def fun(x):
            return ev({**fitted, **dict(zip(keys, x))})

        scale = np.maximum(np.abs(x0), (hi - lo) / 10)
        sol = least_squares(fun, x0, bounds=(lo, hi), x_scale=scale, diff_step=0.05,
                            max_nfev=30, xtol=1e-3, ftol=1e-3)
        for k, v, p in zip(keys, sol.x, params):
            fitted[k] = float(v)
            report.append({"block": block["name"], "key": k, "prior": p["prior"],
                           "fitted": float(v)})
        fitted_on += [t for t in block["targets"] if t not in fitted_on]
        log(f"  -> {', '.join(f'{k}={v:.4g}' for k, v in zip(keys, sol.x))} "
            f"({ev.evaluations} evaluations, cost {sol.cost:.3g}, {sol.message})")
    # Confirm on the validation's settings (replications, windows).
    all_checks = [tc for b in spec["blocks"] for tc in training_checks(b, targets)]
    confirm = Evaluator(all_checks, list(V.load_targets().get("settings", [])), jobs, log)
    log("confirming on the validation settings:")
    res = confirm(fitted)
    residuals = {f"{tid}: {c.get('what', '')}": round(float(r), 4)
                 for (tid, c), r in zip(all_checks, res)}
    values: dict[str, dict[str, float]] = {}
    for k, v in fitted.items():
        profile, param = k.split(".", 1)
        values.setdefault(profile, {})[param] = float(f"{v:.4g}")
    out = {"name": name, "date": datetime.date.today().isoformat(),
           "fitted_on": ", ".join(fitted_on), "values": values, "residuals": residuals}
    return {"calibration": out, "params": report, "wall_s": time.time() - t0,
            "cpu_s": time.process_time() - c0}


HEADER = """# Written by `python -m sim calibrate` ({date}); do not edit by hand: change
# validation/calibration.yaml (what is fitted, on which targets) and run it again.
# Runs use it with `calibration={name}`. Each value replaces the prior its profile file names
# (the profile's provenance gives the prior's reasoning; this file is its `fitted:` source).
"""


def write(cal: dict, params: list[dict], path: Path) -> None:
    lines = [HEADER.format(**cal)]
    lines.append("# parameter (profile.param): prior -> fitted\n")
    for p in params:
        lines.append(f"#   {p['key']}: {p['prior']:g} -> {p['fitted']:.4g}\n")
    text = "".join(lines) + yaml.safe_dump(cal, sort_keys=False, width=100)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(text)
    tmp.replace(path)


USAGE = """usage: python -m sim calibrate [--spec FILE] [--name NAME] [--jobs N] [--cold]

Fits the parameters of validation/calibration.yaml (default spec) on its fitted targets with
scipy.optimize.least_squares, block by block, confirms them on the validation settings and
writes configs/calibration/NAME.yaml (default NAME: the spec's). Runs select it with
calibration=NAME. The search starts from an earlier NAME.yaml's values when there is one
(--cold: from the spec's start values or priors)."""


def main(argv: list[str]) -> int:
    opts = V.parse_options(argv, "calibrate", {"spec": str(SPEC), "name": None, "jobs": None,
                                               "cold": False}, USAGE)
    if isinstance(opts, int):
        return opts
    fail = V.fail
    if not Path(opts["spec"]).is_file():
        return fail(f"--spec={opts['spec']!r}: allowed an existing YAML file")
    if opts["name"] is not None and (not opts["name"].replace("_", "").isalnum()
                                     or opts["name"] == "none"):
        return fail(f"--name={opts['name']!r}: allowed letters, digits and _ (not 'none')")
    try:
        out = calibrate(Path(opts["spec"]), opts["name"], opts["jobs"],
                        log=lambda s: print(s, file=sys.stderr, flush=True),
                        warm=not opts["cold"])
    except ValueError as e:
        return fail(str(e))
    cal = out["calibration"]
    path = OUT_DIR / f"{cal['name']}.yaml"
    write(cal, out["params"], path)
    for p in out["params"]:
        print(f"{p['key']}: {p['prior']:g} -> {p['fitted']:.4g}")
    for k, r in cal["residuals"].items():
        print(f"  {r:+.3f}  {k}")
    print(f"wrote {path} ({out['wall_s']:.0f} s wall)")
    return 0
