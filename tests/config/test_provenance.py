"""Every cost in configs/ says where it comes from.

A cost is a ``CycleCost`` field, a number whose name ends in ``_cycles`` or ``jitter_cv``
(``sim.config.cost_fields``). Its tag lives in the ``provenance`` mapping of the section that
holds it: ``provenance: {FIELD: "TAG: reason"}``, TAG one of source, derived, assumed, fitted.

For every option of every config group (the default config with that option selected) and every
experiment, each cost must be tagged, and the file that sets a cost's value must tag it too (or a
file merged after it must): a delta that changes a base's value restates why. A failure names
the key, the file that sets it and the tag to add. The tags' form is checked by the schema
(``sim.config``), with one-line errors; that is tested here as well.
"""
from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest
import yaml

from models.base import CycleCost
from sim.compose import _groups, compose_dict
from sim.config import Config, ConfigError, cost_fields, to_config
from tests.conftest import CONFIG_DIR

ROOT = Path(CONFIG_DIR)
CASES = [(g, o) for g, opts in sorted(_groups(CONFIG_DIR).items()) for o in opts]
Chain = list[tuple[Path, tuple[str, ...]]]  # (file, where its content lands), in merge order


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def _chain(path: Path, at: tuple[str, ...]) -> Chain:
    """The files a group option (or a base it includes) merges, in order: its ``defaults:`` list
    (``name``, ``name@_here_``, ``name@pkg``, ``/group/name@pkg``) with ``_self_`` in place."""
    defaults = _load(path).get("defaults", [])
    out: Chain = []
    if "_self_" not in defaults:
        defaults = [*defaults, "_self_"]
    for entry in defaults:
        if entry == "_self_":
            out.append((path, at))
            continue
        if not isinstance(entry, str):  # `override /group: option` (experiments): not here
            continue
        name, _, pkg = entry.partition("@")
        base = ROOT / name.lstrip("/") if name.startswith("/") else path.parent / name
        sub = () if pkg in ("", "_here_") else tuple(pkg.split("."))
        out += _chain(base.with_suffix(".yaml"), at + sub)
    return out


def _selected(overrides: dict[str, str]) -> dict[str, str]:
    """Group -> option: configs/config.yaml's defaults list, then ``overrides``."""
    chosen = {}
    for entry in _load(ROOT / "config.yaml")["defaults"]:
        if isinstance(entry, dict):  # `override hydra/...: x` picks a launcher, not a cost
            chosen.update({k: v for k, v in entry.items() if not k.startswith("override ")})
    return {**chosen, **overrides}


def _case_chains(group: str, option: str) -> dict[str, Chain]:
    """Top-level key -> the files that set its values, for the default config with
    ``group=option``; an experiment's own file comes last for every key."""
    overrides, tail = {group: option}, []
    if group == "experiment":
        exp = ROOT / "experiment" / f"{option}.yaml"
        for entry in _load(exp).get("defaults", []):
            if isinstance(entry, dict):
                for k, v in entry.items():
                    overrides[k.removeprefix("override").strip().lstrip("/")] = v
        tail = [(exp, ())]
    return {g: _chain(ROOT / g / f"{o}.yaml", (g,)) + tail
            for g, o in _selected(overrides).items() if g != "experiment"}


def _last_setter(chain: Chain, key: tuple[str, ...]) -> int:
    """Index in ``chain`` of the last file that sets ``key`` (-1: none)."""
    found = -1
    for i, (path, at) in enumerate(chain):
        if key[:len(at)] != at:
            continue
        node = _load(path)
        for k in key[len(at):]:
            node = node.get(k) if isinstance(node, dict) else None
        if node is not None:
            found = i
    return found


def _costs(cls, node: dict, path: tuple[str, ...]):
    """(key, tagged) of every cost under ``node``, walking the schema from ``cls``."""
    hints = typing.get_type_hints(cls)
    tags = node.get("provenance") or {}
    for name in cost_fields(cls):
        yield path + (name,), name in tags
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]) and hints[f.name] is not CycleCost:
            yield from _costs(hints[f.name], node.get(f.name) or {}, path + (f.name,))


def untagged(group: str, option: str) -> list[str]:
    composed = compose_dict(CONFIG_DIR, [f"{group}={option}"])
    to_config(composed, cross_checks=False)  # the tags' form: one-line ConfigError
    chains = _case_chains(group, option)
    scope = None if group == "experiment" else {group}
    problems = []
    for key, tagged in _costs(Config, composed, ()):
        if key[0] not in chains or (scope and key[0] not in scope):
            continue
        dotted = ".".join(key)
        tag_key = ".".join([*key[:-1], "provenance", key[-1]])
        chain = chains[key[0]]
        value_at = _last_setter(chain, key)
        if value_at < 0:
            files = ", ".join(str(p.relative_to(ROOT)) for p, _ in chain)
            problems.append(f"{dotted}: no value in configs/ (the code default is its only "
                            f"source; files: {files})")
            continue
        where = f"configs/{chain[value_at][0].relative_to(ROOT)}"
        if not tagged:
            problems.append(f"{dotted}: untagged cost (set in {where}); add {tag_key}: "
                            f"\"TAG: reason\"")
        elif _last_setter(chain, (*key[:-1], "provenance", key[-1])) < value_at:
            problems.append(f"{dotted}: {where} sets the value without its tag (the tag comes "
                            f"from a file merged before it); add {tag_key} there")
    return problems


@pytest.mark.parametrize("group, option", CASES, ids=[f"{g}={o}" for g, o in CASES])
def test_every_cost_is_tagged(group, option):
    problems = untagged(group, option)
    assert not problems, f"{group}={option}:\n" + "\n".join(problems)


def test_every_group_has_options():
    groups = {g for g, _ in CASES}
    assert {"host", "nic", "pcie", "hypervisor", "vnic", "guest", "peer", "tcp", "workload",
            "run", "experiment"} <= groups


@pytest.mark.parametrize("key, value, message", [
    ("vm_exit_cycles", "guessed: a hunch", "hypervisor.provenance.vm_exit_cycles='guessed: a "
     "hunch': must be 'TAG: reason' with TAG one of source, derived, assumed, fitted"),
    ("vm_exit_cycles", "assumed:", "must be 'TAG: reason'"),
    ("vm_exit_cycles", "assumed a hunch", "must be 'TAG: reason'"),
    ("software_lro_max_bytes", "assumed: x", "unknown key 'hypervisor.provenance."
     "software_lro_max_bytes': not a cost of 'hypervisor'; its costs: driver_rx, driver_tx"),
    ("vm_exit_cycles", 3, "hypervisor.provenance.vm_exit_cycles=3: must be a string"),
])
def test_a_bad_tag_is_one_line(key, value, message):
    composed = compose_dict(CONFIG_DIR, [])
    composed["hypervisor"]["provenance"][key] = value
    with pytest.raises(ConfigError, match=None) as err:
        to_config(composed)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_provenance_is_metadata():
    """Tags never change a run: configs that differ only in their tags are equal."""
    composed = compose_dict(CONFIG_DIR, [])
    retagged = compose_dict(CONFIG_DIR, [])
    retagged["hypervisor"]["provenance"]["vm_exit_cycles"] = "fitted: on nothing yet"
    a, b = to_config(composed), to_config(retagged)
    assert a == b and hash(a) == hash(b)
    assert b.hypervisor.provenance["vm_exit_cycles"].startswith("fitted")
