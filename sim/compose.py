"""Compose Hydra configs outside ``@hydra.main`` (CLI pre-check, tests, notebooks).

``check_overrides`` expands sweeps (``a=1,2``) the way Hydra's basic sweeper does and composes
and validates every combination, turning Hydra's multi-line errors into one ``ConfigError`` line
naming the key, the value and what is allowed; an empty sweep, a deletion (``~nic``) and an
interpolation (``${oc.env:HOME}``) in a user's override are refused the same way. It also
registers the ``mul`` resolver the experiment files use for counts that follow another key
(``vms: ${mul:2,${host.nic_ports}}``) and ``pid`` (run directories, ``configs/config.yaml``).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import os
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
import yaml
from omegaconf import OmegaConf

from sim.config import Config, ConfigError, to_config


MAX_SWEEP_JOBS = 1000  # combinations one --multirun may hold (each is composed and built first)


def _mul(*factors):
    """``${mul:2,${host.nic_ports}}``: a count that follows another key (two VMs per port).
    Non-integers come back as text for the schema to reject with its one-line error."""
    if all(isinstance(f, int) and not isinstance(f, bool) for f in factors):
        return math.prod(factors)
    return "*".join(map(str, factors))


if not OmegaConf.has_resolver("mul"):
    OmegaConf.register_new_resolver("mul", _mul)
if not OmegaConf.has_resolver("pid"):  # ``${pid:}``: run directories of concurrent runs differ
    OmegaConf.register_new_resolver("pid", os.getpid, use_cache=True)  # one per sweep


def _groups(config_dir: str) -> dict[str, list[str]]:
    return {p.name: sorted(f.stem for f in p.glob("*.yaml"))
            for p in Path(config_dir).iterdir() if p.is_dir()}


def compose_dict(config_dir: str, overrides: list[str], unknown: list[str] | None = None) -> dict:
    """The composed config as a plain dict (no ``hydra`` node); Hydra errors become one line.

    An override of a key the config lacks is set on the dict instead, so that the schema
    validator reports it with the keys that are allowed there.
    """
    overrides = [o for o in overrides if not o.lstrip("+~").startswith("hydra")]
    _check_user_overrides(config_dir, overrides)
    _check_groups(config_dir, overrides)
    unknown = [] if unknown is None else unknown
    while True:
        try:
            cfg = _compose(config_dir, overrides)
            break
        except Exception as exc:  # Hydra/OmegaConf raise many types; all are user input here
            bad = _unknown_override(exc, overrides)
            if bad is None:
                raise ConfigError(_first_line(exc)) from None
            overrides.remove(bad)
            unknown.append(bad)
    try:
        out = OmegaConf.to_container(cfg, resolve=True)
    except Exception as exc:  # an interpolation that fails (unknown key or resolver)
        msg = _first_line(exc)
        for o in overrides:  # an override that replaced a node others refer to: name it
            key, _, value = o.lstrip("+~").partition("=")
            if f"`{key}`" in msg:
                raise ConfigError(f"{key}={value}: other keys refer to {key}'s fields, so it "
                                  f"must stay a group of keys ({msg})") from None
        raise ConfigError(f"cannot resolve the config: {msg}") from None
    for o in unknown:
        key, _, value = o.lstrip("+~").partition("=")
        node, *_ = out, None
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node[parts[-1]] = yaml.safe_load(value) if value else value
    return out


def _compose(config_dir: str, overrides: list[str]):
    GlobalHydra.instance().clear()
    try:  # Hydra wants an absolute directory; notebooks pass "configs"
        with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


PACKAGE_CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def config_dir_of(config_dir: str | os.PathLike | None) -> str:
    """``config_dir`` if it is a directory (relative to the cwd), else the package's own
    ``configs/``: a notebook anywhere can pass ``"configs"`` or nothing."""
    if config_dir is not None and Path(config_dir).is_dir():
        return str(Path(config_dir).resolve())
    return str(PACKAGE_CONFIG_DIR)


def compose_checked(config_dir: str | os.PathLike | list[str] | None = None,
                    overrides: list[str] | None = None) -> Config:
    """The validated ``Config`` of ``overrides`` (raises ``ConfigError``).

    ``compose_checked(["experiment=e35_rx_single_vm"])`` uses the package's configs from any
    directory; a ``config_dir`` that does not exist relative to the cwd falls back on them."""
    if isinstance(config_dir, (list, tuple)) and overrides is None:
        config_dir, overrides = None, list(config_dir)
    return to_config(compose_dict(config_dir_of(config_dir), list(overrides or [])))


def check_overrides(config_dir: str, overrides: list[str]) -> list[str]:
    """Validate every combination a (multi)run would compose; return the overrides to hand to
    Hydra, with ``+`` before keys the schema has but the YAML files leave at their default."""
    _check_user_overrides(config_dir, overrides)
    parser = OverridesParser.create()
    parsed = []
    for o in overrides:
        key = o.partition("=")[0]
        if "=" not in o and not o.startswith("~") or not key.lstrip("+~"):
            raise ConfigError(f"{o!r}: must be KEY=VALUE or GROUP=OPTION (python -m sim run "
                              f"--help lists them)")
        try:
            parsed += parser.parse_overrides([o])
        except Exception as exc:
            lines = [ln.strip() for ln in str(exc).splitlines()
                     if ln.strip() and not ln.startswith(("Error parsing", "See https"))]
            reason = lines[0] if lines else _first_line(exc)
            raise ConfigError(f"{o}: cannot parse this override ({reason}); quote a value "
                              f"with spaces or brackets: key='a b'") from None
    jobs, widest = 1, (None, 0)
    for o, p in zip(overrides, parsed):
        try:  # counted up to the limit: range(1,10**12) must not be listed
            n = len(list(itertools.islice(p.sweep_string_iterator(), MAX_SWEEP_JOBS + 1))) \
                if p.is_sweep_override() else 1
        except Exception:  # a sweep the basic sweeper cannot list (interval): Hydra says so
            n = 1
        if n == 0:
            raise ConfigError(f"{o}: must give at least one value (this sweep has 0 jobs)")
        jobs *= n
        widest = max(widest, (o, n), key=lambda t: t[1])
    if jobs > MAX_SWEEP_JOBS:
        raise ConfigError(f"{widest[0]}: must make at most {MAX_SWEEP_JOBS} jobs in all with "
                          f"the other sweeps (this makes more; each job is checked before the "
                          f"first runs): split it into several --multirun sweeps")
    try:
        batches = BasicSweeper.split_arguments(parsed, None)
    except Exception as exc:  # a sweep the basic sweeper cannot expand (interval, tag)
        raise ConfigError(f"{' '.join(overrides)}: {_first_line(exc)}; allowed sweeps: a,b,c, "
                          f"range(start,stop[,step]), choice(a,b)") from None
    appended: set[str] = set()
    built: set[str] = set()  # the run window and seed do not change what is built
    for batch in batches:
        for combo in batch:
            unknown: list[str] = []
            cfg = to_config(compose_dict(config_dir, list(combo), unknown))
            shape = repr({k: v for k, v in dataclasses.asdict(cfg).items() if k != "run"})
            if shape not in built:
                _check_builds(cfg)
                built.add(shape)
            appended.update(o.partition("=")[0] for o in unknown)
    return [f"+{o}" if o.partition("=")[0] in appended else o for o in overrides]


def check_hydra_overrides(config_dir: str, overrides: list[str]) -> None:
    """Hydra's own settings (``hydra/launcher=joblib``, ``hydra.job.chdir=maybe``) composed once
    with Hydra's config: its multi-line error becomes one line with the options it has."""
    mine = [o for o in overrides if o.lstrip("+~").startswith("hydra")]
    for o in mine:
        key, _, value = o.partition("=")
        if key.lstrip("+~") in ("hydra.run.dir", "hydra.sweep.dir") and not value.strip():
            raise ConfigError(f"{key}={value!r}: must be a directory name (an empty one would "
                              f"write into the current directory)")
    if all(o.partition("=")[0].lstrip("+") in ("hydra.run.dir", "hydra.sweep.dir")
           for o in mine):
        return  # the common case, checked by the CLI's directory probe: no compose needed
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(Path(config_dir).resolve()),
                                   version_base="1.3"):
            compose(config_name="config", overrides=mine, return_hydra_config=True)
    except Exception as exc:
        options = getattr(exc, "options", None)
        bad = next((o for o in mine if o.partition("=")[0].lstrip("+~") in str(exc)
                    or o.partition("=")[2] in str(exc)), " ".join(mine))
        allowed = f"; allowed: {', '.join(options)}" if options else ""
        raise ConfigError(f"{bad}: {_first_line(exc)}{allowed}") from None
    finally:
        GlobalHydra.instance().clear()


def _check_builds(cfg: Config) -> None:
    """Build the model once (no run): checks that only the assembled parts can make (a
    component's parameters derived from several groups) report as one line too."""
    from sim.builder import build
    try:
        build(cfg)
    except ValueError as exc:  # a model's parameter check: names the key already
        raise ConfigError(_first_line(exc)) from None
    except Exception as exc:  # anything else is still this config's doing: one line, not a trace
        raise ConfigError(f"cannot build the model from this config: {type(exc).__name__}: "
                          f"{_first_line(exc)}") from None


def _check_user_overrides(config_dir: str, overrides: list[str]) -> None:
    """What a user's override may not do: delete a group or key (the run would fall back on code
    defaults), or interpolate (``${oc.env:...}`` reads the environment, a resolver runs code)."""
    groups = _groups(config_dir)
    for o in overrides:
        key, _, value = o.partition("=")
        if key.lstrip("+~").startswith("hydra"):
            continue  # Hydra's own settings (hydra.run.dir=outputs/${now:%H}) are not the model's
        if key.startswith("~"):
            name = key.lstrip("~")
            allowed = (f"choose an option instead: {name}=" + ", ".join(groups[name])
                       if name in groups else "set a value instead: KEY=VALUE")
            raise ConfigError(f"{o}: must not delete a config group or key; {allowed}")
        if "${" in value:
            raise ConfigError(f"{key}={value!r}: must be a value, not an interpolation "
                              f"(${{...}} is not allowed in overrides)")


def _check_groups(config_dir: str, overrides: list[str]) -> None:
    groups = _groups(config_dir)
    for o in overrides:
        key, _, value = o.partition("=")
        if key in groups and value not in groups[key]:
            raise ConfigError(f"{key}={value!r}: unknown option; allowed: {', '.join(groups[key])}")


def _unknown_override(exc: Exception, overrides: list[str]) -> str | None:
    """The override Hydra rejected because its key does not exist, if that is what happened."""
    msg = str(exc)
    if "not in struct" not in msg and "Could not override" not in msg \
            and "Could not append" not in msg and "Could not delete" not in msg:
        return None
    for o in overrides:
        key = o.partition("=")[0].lstrip("+~")
        if f"'{key}'" in msg:
            return o
    return None


def _first_line(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__
