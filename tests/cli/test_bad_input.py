"""Bad input through the CLI: exit status 2, one line on stderr naming the key and the value.

Each case runs `python -m sim run OVERRIDE` in a fresh process (all started at once); stderr
must be exactly one non-empty line starting with "error:" that contains the key and the value,
no traceback may appear anywhere, and nothing may be run or written.
"""
import pytest

CASES = [  # (override, key, value as it must appear)
    ("workload.foo=1", "workload.foo", "1"),
    ("nic.link.line_rate_gbps=-1", "nic.link.line_rate_gbps", "-1"),
    ("nic.link.mtu_bytes=100", "nic.link.mtu_bytes", "100"),
    ("nic.link.mtu_bytes=10000", "nic.link.mtu_bytes", "10000"),
    ("workload.socket_bytes=1000", "workload.socket_bytes", "1000"),
    ("workload.vms=0", "workload.vms", "0"),
    ("nic=nope", "nic", "nope"),
    ("workload.vms=abc", "workload.vms", "abc"),
    ("run.replications=0", "run.replications", "0"),
]


@pytest.fixture(scope="module")
def runs(sim_cli_many, tmp_path_factory):
    """override -> (CompletedProcess, its run directory)."""
    dirs = [tmp_path_factory.mktemp("bad") for _ in CASES]
    procs = sim_cli_many([["run", case[0], f"hydra.run.dir={d}"] for case, d in zip(CASES, dirs)])
    return {case[0]: (p, d) for case, p, d in zip(CASES, procs, dirs)}


def check_one_line_error(proc, key, value):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), proc.stderr
    assert lines[0].startswith("error:")
    assert key in lines[0] and value in lines[0], lines[0]


@pytest.mark.parametrize("override,key,value", CASES, ids=[c[0] for c in CASES])
def test_bad_override_is_one_line_and_exit_2(override, key, value, runs):
    proc, run_dir = runs[override]
    check_one_line_error(proc, key, value)
    assert not list(run_dir.rglob("results.json"))


def test_bad_value_inside_a_sweep_is_caught_before_any_run(sim_cli, tmp_path):
    proc = sim_cli("run", "--multirun", "workload.vms=1,0", f"hydra.sweep.dir={tmp_path}")
    check_one_line_error(proc, "workload.vms", "0")
    assert not list(tmp_path.rglob("results.json"))


def test_unknown_command(sim_cli):
    proc = sim_cli("nope")
    check_one_line_error(proc, "nope", "nope")


def test_vxlan_tx_ring_too_small_for_a_software_segmented_tso_packet(sim_cli, tmp_path):
    """Without VXLAN offload a 64KB TSO segment needs 65160 / 1448 = 45 TX ring slots;
    fewer used to stall the uplink silently (goodput 0)."""
    proc = sim_cli("run", "experiment=vxlan_tx", "hypervisor.vswitch.vxlan.offload=false",
                   "nic.tx_ring_slots=32", f"hydra.run.dir={tmp_path}")
    check_one_line_error(proc, "nic.tx_ring_slots", "32")
    assert ">= 45" in proc.stderr
    assert not list(tmp_path.rglob("results.json"))
