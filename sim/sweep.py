"""Resumable sweeps: a point's result is keyed by a hash of its resolved config.

``config_hash`` is the sha256 of the canonical JSON (sorted keys, no spaces) of the validated
``Config`` (every group after composition, the ``run.*`` keys included: seed, windows,
replications and engine all change the numbers). Keys that change no number are left out
(``NOT_HASHED``). ``results.json`` carries it as ``config_hash``.

Re-running a sweep into the same ``hydra.sweep.dir`` reaches the same point directories
(``hydra.sweep.subdir`` is the job number); ``completed`` says whether a directory already
holds this config's complete result (``results.json`` present, no ``INCOMPLETE`` marker, the same
hash), and ``sim.cli.run`` then skips the point with one line. A point that was stopped (the
marker is there, or no ``results.json``) or whose config changed runs again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

from sim.config import Config

# Top-level Config fields that change no number (a report page written beside the results).
NOT_HASHED = ("report",)
HASH_KEY = "config_hash"


def _canonical(x):
    """JSON has no NaN or infinity: their names instead, so the text is still canonical."""
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if isinstance(x, dict):
        return {str(k): _canonical(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_canonical(v) for v in x]
    return x


def config_hash(config: Config) -> str:
    """sha256 (hex) of the config's canonical JSON; equal configs give equal hashes in any
    process (no ids, no ordering of sets)."""
    data = {k: v for k, v in dataclasses.asdict(config).items() if k not in NOT_HASHED}
    text = json.dumps(_canonical(data), sort_keys=True, separators=(",", ":"),
                      allow_nan=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def stored_hash(out_dir: str | Path) -> str | None:
    """The hash of the complete result in ``out_dir``, or None (no ``results.json``, an
    ``INCOMPLETE`` marker, or a file that does not read as a result)."""
    from sim.results import INCOMPLETE  # sim.results imports this module
    out = Path(out_dir)
    path = out / "results.json"
    if (out / INCOMPLETE).exists() or not path.is_file():
        return None
    try:
        value = json.loads(path.read_text()).get(HASH_KEY)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def completed(out_dir: str | Path, digest: str) -> bool:
    """``out_dir`` holds the complete result of the config whose hash is ``digest``."""
    return stored_hash(out_dir) == digest
