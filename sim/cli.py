"""Command line: ``python -m sim run [overrides]``, ``python -m sim list``.

``run`` checks every override combination against the schema before Hydra starts, so bad input
gives one line naming the key, the value and what is allowed, and exit status 2; then Hydra
composes the config (``--multirun`` sweeps, ``hydra.run.dir=...``) and calls ``run(cfg)``.
Before anything runs it also checks the options, that a sweep has ``--multirun`` and at least
one job, and that the output directory can be created and written. Ctrl-C prints one line and
exits 130; output into a closed pipe (``| head``) ends quietly with 141.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import hydra
import yaml
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

import sim.compose  # noqa: F401  (registers the config resolvers before Hydra composes)
from sim.config import Config, ConfigError, to_config
from sim.results import begin, format_summary, write
from sim.runner import run_experiment

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
USAGE = """usage: python -m sim <command> [overrides...]

commands:
  run [key=value ...] [--multirun]           run an experiment (default: e35_tx_single_vm)
  run --help [WORD]                           the groups, and every key's meaning, unit, range
  list [--verbose]                            list the experiments, a line each (* default)
  path [key=value ...] [--flow N] [--all]    the data path of a flow: hops and priced terms
  compare [key=value ...]                     the DES and the fluid engine side by side
  bench [--scenarios S1,RR] [--no-series] ... speed benchmark (python -m sim bench --help)
  validate [--only IDS] [--quick] ...         every published target, pass/fail, report.html
  calibrate [--jobs N] [--cold] ...           refit configs/calibration/default.yaml
  collect DIR [--out FILE]                    a sweep's points as one Parquet table
  report DIR [--out FILE]                     a self-contained HTML page for a run or a sweep
  plan --max|--min METRIC=V ... [--choose]    how many VMs fit, or the cheapest option
"""


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 141


def _quiet_stdout() -> None:
    """The reader went away (``| head``): send what is still buffered nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _print(text: str) -> None:
    try:  # one write: print's separate newline interleaves lines of parallel sweep workers
        sys.stdout.write(f"{text}\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
        raise SystemExit(141) from None


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "list":
        if set(rest) - {"-v", "--verbose"}:
            return fail(f"unknown option {sorted(set(rest) - {'-v', '--verbose'})[0]!r} for "
                        f"list: allowed --verbose")
        return list_experiments(verbose=bool(rest))
    if cmd == "run":
        return run_cli(rest)
    if cmd == "path":
        return path_cli(rest)
    if cmd == "compare":
        return compare_cli(rest)
    if cmd == "bench":
        from sim.bench import main as bench_main
        return bench_main(rest)
    if cmd == "validate":
        from sim.validate import main as validate_main
        return validate_main(rest)
    if cmd == "calibrate":
        from sim.calibrate import main as calibrate_main
        return calibrate_main(rest)
    if cmd == "collect":
        from sim.collect import main as collect_main
        return collect_main(rest)
    if cmd == "report":
        from sim.report import main as report_main
        return report_main(rest)
    if cmd == "plan":
        from sim.plan import main as plan_main
        return plan_main(rest)
    return fail(f"unknown command {cmd!r}: allowed commands are run, list, path, compare, "
                f"bench, validate, calibrate, collect, report, plan")


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


LIST_WIDTH = 100


def default_experiment() -> str:
    """The experiment ``configs/config.yaml``'s defaults list picks."""
    defaults = (yaml.safe_load(Path(CONFIG_DIR, "config.yaml").read_text()) or {})["defaults"]
    return next(d["experiment"] for d in defaults if isinstance(d, dict) and "experiment" in d)


def list_experiments(verbose: bool = False) -> int:
    """One line per experiment, cut to ``LIST_WIDTH`` characters (``verbose``: whole), the
    default marked ``*``."""
    default = default_experiment()
    lines = []
    for path in sorted(Path(CONFIG_DIR, "experiment").glob("*.yaml")):
        meta = (yaml.safe_load(path.read_text()) or {}).get("meta", {})
        mark = "*" if path.stem == default else " "
        line = f"{path.stem:<26}{mark} {' '.join(str(meta.get('description', '')).split())}"
        if not verbose and len(line) > LIST_WIDTH:
            line = line[:LIST_WIDTH - 3].rstrip() + "..."
        lines.append(line)
    lines.append("* the default (python -m sim run); python -m sim list --verbose: whole lines")
    _print("\n".join(lines))
    return 0


RUN_KEYS = {"run.measure_s": "measure_s", "run.warmup_s": "warmup_s",
            "run.replications": "replications"}  # compare --all: the DES's settings


def compare_cli(args: list[str]) -> int:
    """``python -m sim compare [overrides]``: the DES (``run.measure_s``, ``run.replications``)
    and the fluid engine on one config, metric by metric, with relative differences.
    ``python -m sim compare --all [--csv FILE] [--quick] [run.measure_s=S run.replications=N
    run.warmup_s=S] [NAME ...]``: every experiment (or the named ones) in both engines, the DES
    on 3 x 0.3 s after 0.1 s (``--quick``: 1 x 0.1 s after 0.05 s), one line each, the table
    to FILE (``sim.fluid.compare_all``)."""
    from dataclasses import replace
    from sim import fluid
    if "--all" in args:
        rest, out, quick, i, settings = [], None, False, 0, {}
        while i < len(args):
            a = args[i]
            if a == "--csv":
                if i + 1 >= len(args) or args[i + 1].startswith("-"):
                    return fail("--csv: a file name is required")
                out, i = args[i + 1], i + 2
                continue
            if a == "--quick":
                quick = True
            elif a.split("=")[0] in RUN_KEYS and "=" in a:
                key, value = a.split("=", 1)
                try:
                    settings[RUN_KEYS[key]] = (int if key == "run.replications" else float)(value)
                except ValueError:
                    return fail(f"{a}: a number is required")
                if settings[RUN_KEYS[key]] <= 0 and key != "run.warmup_s":
                    return fail(f"{a}: must be > 0")
            elif a.startswith("-") and a != "--all":
                return fail(f"unknown option {a!r} for compare --all: allowed --csv FILE, "
                            "--quick, run.measure_s=, run.replications=, run.warmup_s=, "
                            "experiment names")
            elif a != "--all":
                rest.append(a)
            i += 1
        known = sorted(p.stem for p in Path(CONFIG_DIR, "experiment").glob("*.yaml"))
        unknown = [n for n in rest if n not in known]
        if unknown:
            return fail(f"compare --all {unknown[0]}: allowed experiment names "
                        f"({', '.join(known)})")
        if out is not None and not Path(out).resolve().parent.is_dir():
            return fail(f"--csv={out}: the directory must exist")
        if quick:
            settings = {**dict(measure_s=0.1, warmup_s=0.05, replications=1), **settings}
        fluid.compare_all(rest or known, CONFIG_DIR, out=out, progress=_print, **settings)
        return 0
    bad = [a for a in args if a.startswith("-")]
    if bad:
        return fail(f"unknown option {bad[0]!r} for compare: allowed key=value overrides, "
                    "or --all [--csv FILE] [--quick] [NAME ...]")
    try:
        cfg = compose_config(args)
        fluid_cfg = replace(cfg, run=replace(cfg.run, engine="fluid"))
        from sim.config import _cross_check
        _cross_check(fluid_cfg)
    except ConfigError as exc:
        return fail(str(exc))
    des = run_experiment(replace(cfg, run=replace(cfg.run, engine="des"))).summary
    table = fluid.compare(cfg, des_summary=des)
    _print(f"{cfg.meta.name}: DES ({cfg.run.replications} x {cfg.run.measure_s} s) vs fluid\n"
           + table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
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
    from hydra.core.override_parser.overrides_parser import OverridesParser
    for o in overrides:  # path and compare take one config: a sweep is one line, not Hydra's
        try:
            sweep = OverridesParser.create().parse_overrides([o])[0].is_sweep_override()
        except Exception:  # compose_checked reports it
            continue
        if sweep:
            raise ConfigError(f"{o}: must be one value here (a comma list, range() or choice() "
                              f"is a sweep: python -m sim run --multirun {o})")
    return compose_checked(CONFIG_DIR, overrides)


# Hydra's options: those that show something (passed through as they are), the switches a run
# takes, and those that point Hydra at other configs (the pre-check reads configs/ only).
SHOW_FLAGS = ("-h", "--help", "--hydra-help", "--info", "-i", "--cfg", "-c", "--version",
              "--shell-completion", "-sc")
RUN_SWITCHES = ("--multirun", "-m", "--run", "-r")
CONFIG_NAME = ("--config-name", "-cn")
OTHER_CONFIGS = ("--config-path", "-cp", "--config-dir", "-cd", "--experimental-rerun")


def run_cli(args: list[str]) -> int:
    if any(a in ("-h", "--help") for a in args):  # the schema's keys, not Hydra's config dump
        from sim.schema_help import render
        _print(render(CONFIG_DIR, [a for a in args if not a.startswith("-") and "=" not in a]))
        return 0
    if any(a.partition("=")[0] in SHOW_FLAGS for a in args):
        try:
            _check_show_args(args)
            both = [a for a in args if a.partition("=")[0] in SHOW_FLAGS + RUN_SWITCHES]
            if len({a.partition("=")[0] for a in both}) > 1:  # Hydra takes one of them
                raise ConfigError(f"{' '.join(both)}: give one of --multirun, --cfg, --info "
                                  f"(--cfg shows what a single run would compose)")
        except ConfigError as exc:
            return fail(str(exc))
        sys.argv = ["python -m sim run", *args]
        _hydra_main()
        return 0
    from sim.compose import check_hydra_overrides, check_overrides
    try:
        flags, overrides = _split_run_args(args)
        multirun = any(f in ("--multirun", "-m") for f in flags)
        if not multirun:
            _check_single(overrides)
        check_hydra_overrides(CONFIG_DIR, overrides)
        overrides = check_overrides(CONFIG_DIR, overrides)
        _check_out_dir(overrides, multirun)
    except ConfigError as exc:
        return fail(str(exc))
    sys.argv = ["python -m sim run", *overrides, *flags]
    _hydra_main()
    return 0


SHOW_VALUES = {("--cfg", "-c"): ("job", "hydra", "all"),
               ("--info", "-i"): ("all", "config", "defaults", "defaults-tree", "plugins",
                                  "searchpath")}


def _check_show_args(args: list[str]) -> None:
    """The words Hydra's ``--cfg`` (needs one) and ``--info`` (may take one) accept: its own
    argparse would print a 9-line usage instead."""
    for i, a in enumerate(args):
        opt, eq, value = a.partition("=")
        for names, allowed in SHOW_VALUES.items():
            if opt not in names:
                continue
            nxt = args[i + 1] if i + 1 < len(args) else ""
            if not eq and (nxt.startswith("-") or "=" in nxt):
                nxt = ""
            value = value if eq else nxt
            if (value or opt in ("--cfg", "-c")) and value not in allowed:
                raise ConfigError(f"{opt}={value!r}: must be followed by one of "
                                  f"{', '.join(allowed)}")


def _split_run_args(args: list[str]) -> tuple[list[str], list[str]]:
    """(Hydra options, overrides); an option this CLI does not take is a ConfigError."""
    flags, overrides, i = [], [], 0
    names = sorted(p.stem for p in Path(CONFIG_DIR).glob("*.yaml"))
    while i < len(args):
        a = args[i]
        opt, eq, value = a.partition("=")
        if a in RUN_SWITCHES:
            flags.append(a)
        elif opt in CONFIG_NAME:
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if value not in names:
                raise ConfigError(f"{opt}={value!r}: unknown config; allowed: {', '.join(names)}")
            flags.append(f"--config-name={value}")
        elif opt in OTHER_CONFIGS:
            if not eq:
                value = args[i + 1] if i + 1 < len(args) and "=" not in args[i + 1] else ""
            raise ConfigError(f"{opt}={value!r}: not supported by python -m sim run (the configs "
                              f"are {CONFIG_DIR}; change them with overrides KEY=VALUE)")
        elif a.startswith("-"):
            raise ConfigError(f"unknown option {a!r} for run; allowed: --multirun, --help, "
                              f"--cfg job, --info, --config-name config")
        else:
            overrides.append(a)
        i += 1
    return flags, overrides


def _check_single(overrides: list[str]) -> None:
    """A sweep (``a=1,2``, ``range(...)``, ``choice(...)``) without ``--multirun``."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    for o in overrides:
        try:
            parsed = OverridesParser.create().parse_overrides([o])[0]
        except Exception:  # check_overrides reports it with the parser's reason
            continue
        if parsed.is_sweep_override():
            raise ConfigError(f"{o}: must be one value without --multirun (a comma list, range() "
                              f"or choice() is a sweep: python -m sim run --multirun {o})")


def _check_out_dir(overrides: list[str], multirun: bool) -> None:
    """The run (or sweep) directory can be created and written, before anything runs. A path
    with interpolations (``${now:...}``) is checked up to its first one."""
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    value = None
    for o in overrides:
        k, _, v = o.partition("=")
        if k.lstrip("+") == key:
            value = v
    if value is None:
        hydra_cfg = (yaml.safe_load(Path(CONFIG_DIR, "config.yaml").read_text()) or {})["hydra"]
        value = hydra_cfg["sweep" if multirun else "run"]["dir"]
    static = value.split("${")[0]
    probe = Path(static if "${" not in value else (static.rpartition("/")[0] or "."))
    try:
        probe.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f": {exc.filename}" if exc.filename else ""
        raise ConfigError(f"{key}={value!r}: must be a directory that can be created and "
                          f"written ({reason}{where})") from None


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
    out_dir = HydraConfig.get().runtime.output_dir
    if str(HydraConfig.get().mode) == "RunMode.MULTIRUN":  # a sweep re-run resumes (sim/sweep.py)
        from sim.sweep import completed, config_hash
        digest = config_hash(config)
        if completed(out_dir, digest):
            _print(f"skipped: {out_dir}: already holds this point's complete result "
                   f"(config_hash {digest[:12]})")
            return None
    try:
        begin(out_dir)
    except OSError as exc:
        sys.exit(fail(f"hydra.run.dir={out_dir!r}: must be a directory that can be created and "
                      f"written ({exc.strerror or type(exc).__name__})"))
    results = run_experiment(config, progress=_progress_mode())
    try:
        path = write(results, out_dir)
    except OSError as exc:
        sys.exit(fail(f"hydra.run.dir={out_dir!r}: cannot write the results "
                      f"({exc.strerror or type(exc).__name__}: {exc.filename})"))
    if config.report:  # the page beside results.json, written whole and renamed into place
        from sim.report import ReportError, write_report
        try:
            path = f"{path}\nreport: {write_report(out_dir)}"
        except ReportError as exc:
            sys.exit(fail(str(exc)))
    _print(f"{format_summary(results)}\nresults: {path}")
    return results


def _progress_mode() -> str | None:
    """A tqdm bar on a terminal, a line every few seconds on stderr otherwise; none in a
    parallel sweep (a launcher other than Hydra's basic one) or with ``VNETSIM_PROGRESS=0``."""
    if os.environ.get("VNETSIM_PROGRESS", "").lower() in ("0", "off", "no", "false"):
        return None
    try:
        hc = HydraConfig.get()
        if str(hc.mode) == "RunMode.MULTIRUN" and \
                "BasicLauncher" not in str(hc.launcher.get("_target_", "BasicLauncher")):
            return None
    except Exception:  # not under Hydra (a test calling run directly)
        pass
    return "bar" if sys.stderr.isatty() else "lines"
