"""``python -m sim collect DIR [--out FILE]``: a sweep's points as one Parquet table.

``collect(sweep_dir)`` reads every complete point under ``sweep_dir`` (a directory holding
``results.json`` and no ``INCOMPLETE`` marker; a single run's directory is a sweep of one) into
one ``pandas.DataFrame``, one row per point and replication:

- ``point``: the point's directory relative to ``sweep_dir`` (Hydra's job number), ``point_dir``
  its full path, ``config_hash`` the key of its config (``sim/sweep.py``), ``replication``;
- ``config.<group>.<key>``: the resolved config flattened to dotted names (lists as JSON text;
  the ``provenance`` notes, text about where a cost comes from, are left out);
- every summary metric of that replication, under its own name (``goodput_gbps``, ...).

Points that did not finish (an ``INCOMPLETE`` marker, or Hydra's ``.hydra/`` without a
``results.json``) are left out and listed in ``df.attrs["incomplete"]``; ``main`` warns about
them in one line. Rows are ordered by point (numerically where the names are numbers).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd

from sim.files import write_atomic
from sim.results import INCOMPLETE
from sim.sweep import HASH_KEY

USAGE = """usage: python -m sim collect DIR [--out FILE]

Gather every point of a sweep directory (python -m sim run --multirun ... hydra.sweep.dir=DIR)
into one Parquet table: one row per point and replication, the config as dotted columns
(config.workload.vms, ...), every summary metric, the point's directory and config hash.
  --out FILE   where to write the table (default DIR/collected.parquet)"""


class CollectError(ValueError):
    """A directory that holds no result, or a table that cannot be written: one line."""


def _natural(path: Path) -> tuple:
    """Order 2 before 10: digits compare as numbers."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t)
                 for t in re.split(r"(\d+)", str(path)) if t)


def _hidden(path: Path, root: Path) -> bool:
    """Inside a hidden directory (``.hydra``, a ``.partial-`` directory of an unfinished write)."""
    return any(part.startswith(".") for part in path.relative_to(root).parts[:-1])


def point_dirs(sweep_dir: str | Path) -> tuple[list[Path], list[Path]]:
    """(complete, incomplete) point directories under ``sweep_dir``, in natural order."""
    root = Path(sweep_dir)
    complete, incomplete = set(), set()
    for name in ("results.json", INCOMPLETE, ".hydra"):
        for p in root.rglob(name):
            if _hidden(p, root):
                continue
            d = p.parent
            if name == "results.json" and not (d / INCOMPLETE).exists():
                complete.add(d)
            elif not (d / "results.json").exists() or (d / INCOMPLETE).exists():
                incomplete.add(d)
    return sorted(complete, key=_natural), sorted(incomplete - complete, key=_natural)


def _flatten(node, prefix: str, out: dict) -> dict:
    for key, value in node.items():
        if key == "provenance":
            continue
        name = f"{prefix}.{key}"
        if isinstance(value, dict) and value:
            _flatten(value, name, out)
        elif isinstance(value, (list, tuple, dict)):
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out


def _rows(point: Path, root: Path) -> list[dict]:
    path = point / "results.json"
    try:
        res = json.loads(path.read_text())
        config, summary = res["config"], res["summary"]
        reps = res.get("replications") or [summary]  # the fluid engine: one solved state
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CollectError(f"DIR={str(root)!r}: {str(path)!r} is not a vnetsim results.json "
                           f"({type(exc).__name__}); allowed a directory of vnetsim runs") from None
    name = str(point.relative_to(root)) if point != root else "."
    head = {"point": name, "point_dir": str(point.resolve()), HASH_KEY: res.get(HASH_KEY)}
    cfg = _flatten(config, "config", {})
    return [{**head, "replication": r, **cfg, **metrics} for r, metrics in enumerate(reps)]


def collect(sweep_dir: str | Path) -> pd.DataFrame:
    """One row per complete point and replication under ``sweep_dir`` (see the module
    docstring); ``df.attrs["incomplete"]``: the points left out. Raises ``CollectError`` when
    ``sweep_dir`` is not a directory or holds no complete result."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise CollectError(f"DIR={str(root)!r}: no such directory; allowed a sweep directory "
                           f"(hydra.sweep.dir) or a run directory")
    complete, incomplete = point_dirs(root)
    if not complete:
        extra = f" ({len(incomplete)} incomplete point(s))" if incomplete else ""
        raise CollectError(f"DIR={str(root)!r}: holds no complete result{extra}; allowed a "
                           f"directory with results.json in it or below it")
    df = pd.DataFrame([row for point in complete for row in _rows(point, root)])
    df.attrs["incomplete"] = [str(p.relative_to(root)) for p in incomplete]
    return df


def write_parquet(df: pd.DataFrame, out: str | Path) -> Path:
    """``df`` to ``out`` under a temporary name in the same directory, renamed into place."""
    return write_atomic(out, lambda tmp: df.to_parquet(tmp, index=False, engine="pyarrow"),
                        CollectError)


def _parse(argv: list[str]) -> tuple[str, str | None] | int:
    """(DIR, --out or None), or the exit status after the help or a one-line error."""
    from sim.cli import fail
    dirs, out, i = [], None, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(USAGE)
            return 0
        if a == "--out" or a.startswith("--out="):
            if "=" in a:
                out = a.partition("=")[2]
            else:
                i += 1
                out = argv[i] if i < len(argv) else ""
            if not out:
                return fail("--out='': must be a file name (default DIR/collected.parquet)")
        elif a.startswith("-") and a != "-":
            return fail(f"unknown option {a!r} for collect: allowed --out FILE")
        else:
            dirs.append(a)
        i += 1
    if len(dirs) != 1:
        return fail(f"DIR={' '.join(dirs)!r}: must be exactly one directory (python -m sim "
                    f"collect DIR [--out FILE])")
    return dirs[0], out


def main(argv: list[str]) -> int:
    from sim.cli import _print, fail
    parsed = _parse(list(argv))
    if isinstance(parsed, int):
        return parsed
    sweep_dir, out = parsed
    try:
        df = collect(sweep_dir)
        path = write_parquet(df, out if out is not None else Path(sweep_dir, "collected.parquet"))
    except CollectError as exc:
        return fail(str(exc))
    left_out = df.attrs["incomplete"]
    if left_out:
        shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
        print(f"warning: {len(left_out)} incomplete point(s) left out ({shown}): re-run the "
              f"sweep into the same hydra.sweep.dir to finish them", file=sys.stderr)
    points = df["point"].nunique()
    _print(f"collected {points} point(s), {len(df)} row(s) (points x replications), "
           f"{df.shape[1]} columns: {path}")
    return 0
