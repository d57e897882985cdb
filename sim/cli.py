"""Command line: ``python -m sim run [overrides]``, ``python -m sim list``.

``run`` checks every override combination against the schema before Hydra starts, so bad input
gives one line naming the key, the value and what is allowed, and exit status 2; then Hydra
composes the config (``--multirun`` sweeps, ``hydra.run.dir=...``) and calls ``run(cfg)``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import hydra
import yaml
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

import sim.compose  # noqa: F401  (registers the config resolvers before Hydra composes)
from sim.config import Config, ConfigError, to_config
from sim.results import format_summary, write
from sim.runner import run_experiment

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
USAGE = """usage: python -m sim <command> [overrides...]

commands:
  run [key=value ...] [--multirun] [--help]   run an experiment (default: e35_tx_single_vm)
  list                                        list the experiments with a line each
  path [key=value ...] [--flow N] [--all]    the data path of a flow: hops and priced terms
  bench [--scenarios S1,RR] [--no-series] ... speed benchmark (python -m sim bench --help)
"""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "list":
        return list_experiments()
    if cmd == "run":
        return run_cli(rest)
    if cmd == "path":
        return path_cli(rest)
    if cmd == "bench":
        from sim.bench import main as bench_main
        return bench_main(rest)
    return fail(f"unknown command {cmd!r}: allowed commands are run, list, path, bench")


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def list_experiments() -> int:
    for path in sorted(Path(CONFIG_DIR, "experiment").glob("*.yaml")):
        meta = (yaml.safe_load(path.read_text()) or {}).get("meta", {})
        print(f"{path.stem:<28} {meta.get('description', '')}")
    return 0


def path_cli(args: list[str]) -> int:
    """``python -m sim path [overrides] [--flow N ...] [--all]``: build the model (no run) and
    print the declared path of its flows (``sim.path``)."""
    flows: list[int] | None = None
    every = "--all" in args
    overrides, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--all":
            pass
        elif a == "--flow" or a.startswith("--flow="):
            value = a.partition("=")[2] if "=" in a else (args[i + 1] if i + 1 < len(args)
                                                           else "")
            i += 0 if "=" in a else 1
            if not value.isdigit():
                return fail(f"--flow={value!r}: must be a flow number (an integer >= 0)")
            flows = [*(flows or []), int(value)]
        elif a.startswith("-"):
            return fail(f"unknown option {a!r} for path: allowed --flow N, --all")
        else:
            overrides.append(a)
        i += 1
    from sim.builder import build
    from sim.path import describe, flow_paths
    try:
        model = build(compose_config(overrides))
    except ConfigError as exc:
        return fail(str(exc))
    known = [fp.flow for fp in flow_paths(model)]
    if flows is not None and not set(flows) <= set(known):
        bad = sorted(set(flows) - set(known))
        return fail(f"--flow={bad[0]}: no such flow; allowed: {known[0]}..{known[-1]}")
    print(describe(model, known if every else flows))
    return 0


def compose_config(overrides: list[str]) -> Config:
    """Compose the Hydra config for ``overrides`` and validate it (raises ConfigError)."""
    from sim.compose import compose_checked
    return compose_checked(CONFIG_DIR, overrides)


def run_cli(args: list[str]) -> int:
    if not any(a in ("-h", "--help", "--hydra-help", "--info", "--cfg") or a.startswith("--cfg")
               for a in args):
        from sim.compose import check_overrides
        flags = [a for a in args if a.startswith("-")]
        try:
            args = [*check_overrides(CONFIG_DIR, [a for a in args if not a.startswith("-")]),
                    *flags]
        except ConfigError as exc:
            return fail(str(exc))
    sys.argv = ["python -m sim run", *args]
    _hydra_main()
    return 0


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    run(cfg)


def run(cfg: DictConfig):
    """Hydra's entry: validate, run, write the results into the run directory, print a table."""
    container = OmegaConf.to_container(cfg, resolve=True)
    container.pop("hydra", None)
    try:
        config = to_config(container)
    except ConfigError as exc:
        sys.exit(fail(str(exc)))
    results = run_experiment(config, progress=sys.stderr.isatty())
    out_dir = HydraConfig.get().runtime.output_dir
    path = write(results, out_dir)
    print(format_summary(results))
    print(f"results: {path}")
    return results
