"""`python -m sim list` lists every experiment; `python -m sim run --help` shows the groups."""
from pathlib import Path

from tests.conftest import CONFIG_DIR


def test_list_names_every_experiment_file(sim_cli):
    proc = sim_cli("list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    listed = [line.split()[0] for line in lines[:-1]]
    files = sorted(p.stem for p in Path(CONFIG_DIR, "experiment").glob("*.yaml"))
    assert files and sorted(listed) == files


def test_list_is_short_lines_with_the_default_marked(sim_cli):
    """One line per experiment within 100 characters; the default (configs/config.yaml's
    experiment) is marked with ``*``, explained on the last line; --verbose gives it whole."""
    from sim.cli import default_experiment
    proc = sim_cli("list")
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    marked = [line.split()[0] for line in lines[:-1] if line.split()[1] == "*"]
    assert marked == [default_experiment()] == ["e35_tx_single_vm"]
    assert lines[-1].startswith("* the default")
    verbose = sim_cli("list", "--verbose").stdout.splitlines()
    assert len(verbose) == len(lines) and max(map(len, verbose)) > 100


def test_run_help_shows_the_config_groups(sim_cli):
    proc = sim_cli("run", "--help")
    assert proc.returncode == 0, proc.stderr
    for group in ("workload", "nic", "host", "experiment"):
        assert f"{group}:" in proc.stdout, group


def test_bare_command_prints_usage(sim_cli):
    proc = sim_cli()
    assert proc.returncode == 0
    assert "run" in proc.stdout and "list" in proc.stdout
