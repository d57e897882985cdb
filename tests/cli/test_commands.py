"""`python -m sim list` lists every experiment; `python -m sim run --help` shows the groups."""
from pathlib import Path

from tests.conftest import CONFIG_DIR


def test_list_names_every_experiment_file(sim_cli):
    proc = sim_cli("list")
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]
    files = sorted(p.stem for p in Path(CONFIG_DIR, "experiment").glob("*.yaml"))
    assert files and sorted(listed) == files


def test_run_help_shows_the_config_groups(sim_cli):
    proc = sim_cli("run", "--help")
    assert proc.returncode == 0, proc.stderr
    for group in ("workload", "nic", "host", "experiment"):
        assert f"{group}:" in proc.stdout, group


def test_bare_command_prints_usage(sim_cli):
    proc = sim_cli()
    assert proc.returncode == 0
    assert "run" in proc.stdout and "list" in proc.stdout
