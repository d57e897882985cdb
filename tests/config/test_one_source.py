"""One source for every value: parameter values live in configs/, the dataclasses carry none of
their own.

Every field of every dataclass in the schema tree (``sim.config.Config`` and what it nests) has
a default equal to the value the default composition (``configs/config.yaml``'s defaults list,
no overrides) gives it, and every field is in that composition: ``Config()`` is the default run.
A class used by several groups (``CpuParams`` for the host and the peer, ``OsStackParams`` for
the guest and the peer) is checked through the default instance each place holds, so a nested
default (``PeerParams.cpu``) follows its own group's file. ``provenance`` mappings are metadata
that lives in configs/ only (no copy in code): their defaults are empty and not compared.
"""
from __future__ import annotations

import dataclasses

from sim.compose import compose_dict
from sim.config import Config, to_config
from tests.conftest import CONFIG_DIR

METADATA = {"provenance"}  # lives in configs/ only; the code's default is empty


def _differences(default, composed, built, path: str) -> list[str]:
    """Where the default instance ``default`` and the config built from the composed mapping
    ``composed`` (``built``) disagree, or the mapping lacks a field."""
    out = []
    for f in dataclasses.fields(default):
        key = f"{path}{f.name}"
        if f.name in METADATA:
            continue
        if f.name not in composed:
            out.append(f"{key}: not in the composed config (the code default "
                       f"{getattr(default, f.name)!r} is its only source)")
            continue
        mine, theirs = getattr(default, f.name), getattr(built, f.name)
        if dataclasses.is_dataclass(mine):
            out += _differences(mine, composed[f.name], theirs, key + ".")
        elif mine != theirs:
            out.append(f"{key}: code default {mine!r} != configs {theirs!r}")
    return out


# The dataclass defaults are the priors: the default composition without the calibration layer
# (``configs/calibration/``, which replaces a few priors by fitted values).
PRIORS = ["calibration=none"]


def test_dataclass_defaults_are_the_default_composition():
    composed = compose_dict(CONFIG_DIR, list(PRIORS))
    diffs = _differences(Config(), composed, to_config(composed), "")
    assert not diffs, "\n".join(diffs)


def test_the_default_config_is_the_uncalibrated_default_run():
    assert Config() == to_config(compose_dict(CONFIG_DIR, list(PRIORS)))


def test_the_default_run_uses_the_default_calibration():
    cfg = to_config(compose_dict(CONFIG_DIR, []))
    assert cfg.calibration.name == "default" and cfg.calibration.values
    # each calibrated value reaches the profile that reads it
    for profile, params in cfg.calibration.values.items():
        assert params, profile
    stack = cfg.guest.stack
    assert stack.recv_call.per_byte_cycles == \
        cfg.calibration.values["rhel5_64"]["recv_call_per_byte_cycles"]
