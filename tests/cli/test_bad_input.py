"""Bad input through the CLI: exit status 2, one line on stderr naming the key and the value.

Each case runs `python -m sim run ARGS` in a fresh process (all started at once); stderr
must be exactly one non-empty line starting with "error:" that contains the key and the value,
no traceback may appear anywhere, and nothing may be run or written.
"""
import pytest

CASES = [  # (arguments, space-separated; key, value as it must appear)
    ("workload.foo=1", "workload.foo", "1"),
    ("nic.link.line_rate_gbps=-1", "nic.link.line_rate_gbps", "-1"),
    ("nic.link.mtu_bytes=100", "nic.link.mtu_bytes", "100"),
    ("nic.link.mtu_bytes=10000", "nic.link.mtu_bytes", "10000"),
    ("workload.socket_bytes=1000", "workload.socket_bytes", "1000"),
    ("workload.vms=0", "workload.vms", "0"),
    ("nic=nope", "nic", "nope"),
    ("workload.vms=abc", "workload.vms", "abc"),
    ("run.replications=0", "run.replications", "0"),
    # NaN and infinities: integer keys, float keys (issue 10)
    ("workload.socket_bytes=nan", "workload.socket_bytes", "nan"),
    ("workload.socket_bytes=inf", "workload.socket_bytes", "inf"),
    ("run.replications=nan", "run.replications", "nan"),
    ("nic.tx_queues=-inf", "nic.tx_queues", "-inf"),
    ("nic.link.line_rate_gbps=inf", "nic.link.line_rate_gbps", "inf"),
    ("run.measure_s=inf", "run.measure_s", "inf"),
    ("run.warmup_s=-inf", "run.warmup_s", "-inf"),
    ("host.cpu.clock_hz=nan", "host.cpu.clock_hz", "nan"),
    # interpolations: the environment, an unknown resolver
    ("workload.vms=${oc.env:UNSET}", "workload.vms", "${oc.env:UNSET}"),
    ("workload.vms=${nope:1}", "workload.vms", "${nope:1}"),
    # Hydra's own errors: a sweep without --multirun, an unknown config, an empty sweep
    ("workload.vms=1,2", "workload.vms", "1,2"),
    ("--config-name nope", "--config-name", "nope"),
    ("--config-name=nope", "--config-name", "nope"),
    ("--multirun workload.vms=range(1,1)", "workload.vms", "range(1,1)"),
    ("--nope", "--nope", "--nope"),
    # limits that keep a run finite (they used to run on, growing)
    ("run.measure_s=1e9", "run.measure_s", "1000000000"),
    ("run.warmup_s=5000", "run.warmup_s", "5000"),
    ("host.cpu.cores_per_socket=1000000", "host.cpu.cores_per_socket", "1000000"),
    ("host.cpu.sockets=1000", "host.cpu.sockets", "1000"),
    ("peer.cpu.cores_per_socket=1000", "peer.cpu.cores_per_socket", "1000"),
    ("workload.vms=512 workload.sessions_per_vm=1024", "workload.sessions_per_vm", "1024"),
    # what the NIC has; a required group
    ("nic.rx_queues=128", "nic.rx_queues", "128"),
    ("nic=intel_pro1000mt_1g hypervisor=esx40 nic.rx_sort=vmdq nic.rx_queues=16",
     "nic.rx_queues", "16"),
    ("nic.tx_queues=17", "nic.tx_queues", "17"),
    ("~nic", "~nic", "intel_82598"),
    ("~workload.vms", "~workload.vms", "KEY=VALUE"),
]
ALLOWED = {  # what the line must say is allowed (the bound, the fix)
    "run.measure_s=1e9": "<= 1000",
    "run.warmup_s=5000": "0..1000",
    "host.cpu.cores_per_socket=1000000": "256 cores",
    "workload.vms=512 workload.sessions_per_vm=1024": "<= 8",
    "nic.rx_queues=128": "1..16",
    "nic=intel_pro1000mt_1g hypervisor=esx40 nic.rx_sort=vmdq nic.rx_queues=16": "1..1",
    "workload.vms=1,2": "--multirun",
    "--config-name nope": "allowed: config",
    "--multirun workload.vms=range(1,1)": "0 jobs",
}


@pytest.fixture(scope="module")
def runs(sim_cli_many, tmp_path_factory):
    """override -> (CompletedProcess, its run directory)."""
    dirs = [tmp_path_factory.mktemp("bad") for _ in CASES]
    procs = sim_cli_many([["run", *case[0].split(),
                           f"hydra.{'sweep' if '--multirun' in case[0] else 'run'}.dir={d}"]
                          for case, d in zip(CASES, dirs)])
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
    assert ALLOWED.get(override, "") in proc.stderr
    assert not list(run_dir.iterdir())  # nothing run, nothing written


@pytest.mark.parametrize("where", ["/proc/vnetsim", "/dev/null/vnetsim", "FILE/sub"])
@pytest.mark.parametrize("multirun", [False, True], ids=["run", "multirun"])
def test_an_output_directory_that_cannot_be_made_is_one_line(where, multirun, sim_cli, tmp_path):
    """Checked before anything runs: can the directory be created and written?"""
    if where.startswith("FILE"):
        (tmp_path / "file").write_text("")
        where = str(tmp_path / "file" / "sub")
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    proc = sim_cli("run", *(["--multirun"] if multirun else []), "run.measure_s=0.001",
                   f"{key}={where}")
    check_one_line_error(proc, key, where)
    assert "created and written" in proc.stderr


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
