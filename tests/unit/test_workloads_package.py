"""The workloads package (models/workloads/): no import cycle, and a registry for every config.

``base`` is what the kinds build on and imports none of them; each kind imports ``base`` and
never another kind, nor the package itself at run time (only for type hints); every module
imports on its own in a fresh interpreter; ``WORKLOADS`` has a class for the ``kind`` of every
``configs/workload/*.yaml``.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from models.workloads import WORKLOADS
from models.workloads.base import Workload

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "models" / "workloads"
KINDS = ("tcp_stream", "tcp_rr", "http", "multicast", "ping")  # the kind modules
MODULES = ("models.workloads", "models.workloads.base",
           *(f"models.workloads.{k}" for k in KINDS))


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_alone(module):
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module imported, whether only under ``if TYPE_CHECKING``) for every import in ``path``;
    ``from models.workloads import x`` counts as importing ``models.workloads.x`` too."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in typing_only) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # relative to this package (level 1) or to models (level 2)
                mod = ".".join([*["models", "workloads"][:3 - node.level], *filter(None, [mod])])
            out.append((mod, id(node) in typing_only))
            out += [(f"{mod}.{a.name}", id(node) in typing_only) for a in node.names]
    return out


def test_base_imports_no_kind_module():
    kinds = {f"models.workloads.{k}" for k in KINDS}
    imported = _imports(PACKAGE / "base.py")
    assert not {m for m, _ in imported} & kinds
    # nor the package (whose __init__ imports every kind), except for type hints
    assert all(typing_only for m, typing_only in imported if m == "models.workloads")


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_imports_base_and_no_other_kind(kind):
    others = {f"models.workloads.{k}" for k in KINDS if k != kind}
    imported = _imports(PACKAGE / f"{kind}.py")
    assert not {m for m, _ in imported} & others
    assert all(typing_only for m, typing_only in imported if m == "models.workloads")


def test_the_registry_maps_every_configured_kind():
    kinds = {yaml.safe_load(p.read_text())["kind"]
             for p in sorted((REPO / "configs" / "workload").glob("*.yaml"))}
    assert kinds and kinds == set(WORKLOADS)
    for kind, cls in WORKLOADS.items():
        assert issubclass(cls, Workload), kind
        assert cls.__module__.removeprefix("models.workloads.") in KINDS, kind
