"""Mutation check: does the test suite notice when a mechanism's parameter is wrong?

Each mechanism is one or more config keys (matched by the end of their dotted path, so that
``cpu.jitter_cv`` hits both ``host.cpu`` and ``peer.cpu``). A mutation multiplies them by a
factor (0 or 5) in every configuration the tests compose: ``VNETSIM_MUTATE="KEY[,KEY...]=FACTOR"``
is read by ``tests/conftest.py``, which wraps ``sim.config.to_config`` so the keys are scaled
after Hydra composed the mapping and before the schema validates it. Nothing in ``sim/`` or
``models/`` changes. A scaled value outside the schema's range is clamped to the range (zeroing
a ``>= 1`` limit gives 1: the tightest valid setting); a boolean is switched off by factor 0 and
left alone by any other factor (``n/a``).

``python -m tests.mutants`` (``make mutants``) runs the selected tests once unmutated (they must
pass) and once per (mechanism, factor); a mutation is *caught* when at least one test fails and
*survives* when all pass. ``--tests`` picks the tests (default: ``tests/system`` and
``tests/invariants``: the suites that run the whole model; ``tests/cli`` runs subprocesses the
hook cannot reach and ``tests/config`` checks the YAML files themselves), ``-j`` runs mutations
in parallel. Tests that fail without any mutation are reported and deselected.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = "VNETSIM_MUTATE"

# mechanism -> the key suffixes it scales
MECHANISMS: dict[str, tuple[str, ...]] = {
    "world_switch": ("cpu.context_switch_cycles",),
    "service_jitter": ("cpu.jitter_cv",),
    "vswitch_per_packet": ("vswitch.cost.per_packet_cycles",),
    "software_lro": ("hypervisor.software_lro_max_bytes",),
    "numa_penalty": ("numa.remote_per_packet_cycles", "numa.remote_per_byte_cycles"),
    "coalescing_timer": ("coalescing.timer_us",),
    "coalescing_frames": ("coalescing.max_frames",),
    "pending_tx_limit": ("vswitch.pending_tx_limit_packets",),
    "tso": ("nic.tso_max_bytes",),
    "window_scaling": ("stack.window_scaling",),
    "exit_pricing": ("hypervisor.vm_exit_cycles", "hypervisor.bt_trap_cycles"),
    "halt_wakeup": ("hypervisor.vcpu_halt_wakeup_cycles",),
}
FACTORS = (0.0, 5.0)
# (mechanism, factor) pairs that change nothing: a boolean has no five-fold value
NOT_APPLICABLE = {("window_scaling", 5.0)}

# The schema's ranges for the keys whose zero or five-fold value it would reject.
BOUNDS: dict[str, tuple[float, float]] = {
    "cpu.jitter_cv": (0.0, 1.0),
    "hypervisor.software_lro_max_bytes": (1500, 65535),
    "coalescing.max_frames": (1, 1 << 30),
    "vswitch.pending_tx_limit_packets": (1, 1 << 30),
    "nic.tso_max_bytes": (1500, 262144),
}


def parse(spec: str) -> tuple[tuple[str, ...], float]:
    """``"a.b,c.d=5"`` -> (("a.b", "c.d"), 5.0); a mechanism name may stand for its keys."""
    keys, sep, factor = spec.rpartition("=")
    if not sep:
        raise ValueError(f"{ENV}={spec!r}: must be KEY[,KEY...]=FACTOR")
    names: list[str] = []
    for k in keys.split(","):
        names.extend(MECHANISMS.get(k.strip(), (k.strip(),)))
    return tuple(names), float(factor)


def _scaled(suffix: str, value, factor: float):
    if isinstance(value, bool):
        return False if factor == 0 else value
    if not isinstance(value, (int, float)):
        return value
    new = value * factor
    lo, hi = BOUNDS.get(suffix, (-float("inf"), float("inf")))
    new = min(max(new, lo), hi)
    return int(new) if isinstance(value, int) else float(new)


def apply(mapping, keys: tuple[str, ...], factor: float, path: str = ""):
    """A copy of ``mapping`` with every key whose dotted path ends with one of ``keys`` scaled."""
    if not isinstance(mapping, dict):
        return mapping
    out = {}
    for k, v in mapping.items():
        full = f"{path}{k}"
        if isinstance(v, dict):
            out[k] = apply(v, keys, factor, full + ".")
            continue
        for suffix in keys:
            if full == suffix or full.endswith("." + suffix):
                v = _scaled(suffix, v, factor)
                break
        out[k] = v
    return out


def install(spec: str) -> None:
    """Wrap ``sim.config.to_config`` (and the names bound to it) so every composed config is
    mutated by ``spec``. Called from ``tests/conftest.py`` before any test module imports."""
    import sim.config
    keys, factor = parse(spec)
    original = sim.config.to_config
    if getattr(original, "_mutant", None):
        return

    def to_config(mapping, *args, **kwargs):
        return original(apply(dict(mapping), keys, factor), *args, **kwargs)

    to_config._mutant = spec
    sim.config.to_config = to_config
    for name in ("sim.compose", "sim.cli", "sim.bench", "sim.fluid"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "to_config", None) is original:
            mod.to_config = to_config


def _run(tests: list[str], spec: str | None, timeout: float, deselect: list[str] = (),
         stop: bool = True) -> tuple[str, int, float, str, list[str]]:
    """Run ``tests`` under mutation ``spec``: (spec, exit status, seconds, first failure or
    last line, ids of the failed tests)."""
    env = {**os.environ}
    env.pop(ENV, None)
    if spec:
        env[ENV] = spec
    args = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
            *(["-x"] if stop else []), *tests]
    for test in deselect:
        args += ["--deselect", test]
    t0 = time.monotonic()
    try:
        p = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=timeout)
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        rc, out = -1, "timeout"
    failed = [ln for ln in out.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    ids = [ln.split()[1] for ln in failed if len(ln.split()) > 1]
    last = out.strip().splitlines()[-1] if out.strip() else ""
    return spec or "(none)", rc, time.monotonic() - t0, (failed[0] if failed else last), ids


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__.split("\n")[0])
    ap.add_argument("--tests", nargs="+", default=["tests/system", "tests/invariants"])
    ap.add_argument("--only", nargs="+", choices=list(MECHANISMS), default=list(MECHANISMS))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1200)
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    name, rc, dt, note, broken = _run(args.tests, None, args.timeout, stop=False)
    print(f"unmutated: {'pass' if rc == 0 else 'FAIL'} in {dt:.0f} s ({note})", flush=True)
    if rc != 0 and not broken:
        print("the unmutated suite must run", file=sys.stderr)
        return 1
    for test in broken:  # failing without a mutation: they cannot tell us anything
        print(f"  deselected (fails unmutated): {test}", flush=True)
    specs = [f"{m}={f:g}" for m in args.only for f in FACTORS if (m, f) not in NOT_APPLICABLE]
    rows = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for spec, rc, dt, note, _ in pool.map(
                lambda s: _run(args.tests, s, args.timeout, broken), specs):
            verdict = "caught" if rc != 0 else "SURVIVED"
            rows[spec] = (verdict, dt, note)
            print(f"{spec:24} {verdict:8} {dt:6.0f} s  {note}", flush=True)
    print("\n| mechanism | keys | x0 | x5 |\n|---|---|---|---|")
    for m in args.only:
        cells = []
        for f in FACTORS:
            if (m, f) in NOT_APPLICABLE:
                cells.append("n/a (boolean)")
                continue
            verdict, dt, note = rows[f"{m}={f:g}"]
            if verdict == "caught" and note.startswith("FAILED"):
                test = note.split()[1].split("::")[-1].split("[")[0]
                cells.append(f"caught ({test})")
            else:
                cells.append(verdict)
        print(f"| {m} | {', '.join(MECHANISMS[m])} | {cells[0]} | {cells[1]} |")
    survived = [s for s, r in rows.items() if r[0] != "caught"]
    print(f"\n{len(rows) - len(survived)} of {len(rows)} mutations caught "
          f"in {time.monotonic() - t0:.0f} s; survived: {', '.join(survived) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
