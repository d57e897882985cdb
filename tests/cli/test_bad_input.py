"""Bad input through the CLI: exit status 2, one line on stderr naming the key and the value.

The catalogue (``CASES``, one parametrized test) calls ``sim.cli.main(["run", *ARGS,
"hydra.run.dir=<an empty tmp dir>"])`` in this process (a fresh process per case cost 85 s for 43
cases; ``test_the_catalogue_in_fresh_processes`` runs a few the real way): the exit status must
be 2, stderr exactly one non-empty line starting with "error:" that contains the key and the
value, stdout empty, no traceback (an exception escaping ``main`` fails the test), and the run
directory must stay empty (nothing run, nothing written).
"""
import os

import pytest

from sim.cli import main

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
    # the size estimate (VNETSIM_MEMORY_BYTES: the memory it takes as available, see ENV)
    ("workload.vms=64 workload.sessions_per_vm=64", "workload.sessions_per_vm", "64"),
    # odd types: a bool, an empty string, a list, a mapping, null, hex, a float for an int
    ("workload.vms=true", "workload.vms", "True"),
    ("workload.vms=''", "workload.vms", "''"),
    ("workload.vms=[1,2]", "workload.vms", "[1, 2]"),
    ("workload.vms={a:1}", "workload.vms", "{'a': 1}"),
    ("workload.vms=null", "workload.vms", "None"),
    ("workload.socket_bytes=0x10", "workload.socket_bytes", "0x10"),
    ("nic.link.mtu_bytes=1500.5", "nic.link.mtu_bytes", "1500.5"),
    ("workload.socket_bytes=1e400", "workload.socket_bytes", "inf"),
    ("meta.name=5", "meta.name", "5"),
    ("meta=3", "meta", "3"),
    ("host.cpu=3", "host.cpu", "3"),
    # out of range, unknown names
    ("run.seed=-1", "run.seed", "-1"),
    ("run.engine=quantum", "run.engine", "quantum"),
    ("run.measure_s=0", "run.measure_s", "0"),
    ("host.cpu.clock_hz=0", "host.cpu.clock_hz", "0"),
    ("host.cpu.jitter_cv=2", "host.cpu.jitter_cv", "2"),
    ("host.irq_core=99", "host.irq_core", "99"),
    ("host.placement=random", "host.placement", "random"),
    ("host.numa.card_node=9", "host.numa.card_node", "9"),
    ("nic.coalescing.mode=turbo", "nic.coalescing.mode", "turbo"),
    ("pcie.lanes=3", "pcie.lanes", "3"),
    ("guest.vcpus=1000", "guest.vcpus", "1000"),
    ("workload.kind=''", "workload.kind", "''"),
    ("workload.direction=sideways", "workload.direction", "sideways"),
    ("workload.rr.latency_sample_capacity=10", "workload.rr.latency_sample_capacity", "10"),
    ("workload.kind=udp_multicast workload.multicast.packet_bytes=100000",
     "workload.multicast.packet_bytes", "100000"),
    ("experiment=''", "experiment", "''"),
    ("vnic=vmxnet3", "vnic.model", "vmxnet3"),
    # not an override at all; what Hydra's parser refuses
    ("=5", "'=5'", "=5"),
    ("workload.vms", "'workload.vms'", "workload.vms"),
    ("workload.vms=1)", "workload.vms", "1)"),
    ("--multirun workload.vms=choice()", "workload.vms", "choice()"),
    ("--multirun workload.vms=1,abc", "workload.vms", "abc"),
    ("--multirun workload.vms=range(0,3)", "workload.vms", "0"),
    ("--multirun workload.vms=range(1,1000000000000)", "workload.vms", "range(1,1000000000000)"),
    ("--multirun workload.vms=range(1,40) workload.sessions_per_vm=range(1,40)", "workload.vms",
     "range(1,40)"),
    ("--multirun workload.vms=interval(1,2)", "workload.vms", "interval(1,2)"),
    ("wörkload.vms=1", "wörkload.vms", "1"),
    # Hydra's own options and settings
    ("--cfg", "--cfg", "''"),
    ("--cfg nope", "--cfg", "nope"),
    ("--info foo", "--info", "foo"),
    ("--multirun workload.vms=1,2 --cfg hydra", "--multirun --cfg", "--info"),
    ("--config-dir /tmp", "--config-dir", "/tmp"),
    ("hydra/launcher=nope", "hydra/launcher", "nope"),
    ("hydra/sweeper=optuna", "hydra/sweeper", "optuna"),
    ("hydra.job.chdir=maybe", "hydra.job.chdir", "maybe"),
    ("hydra.foo=1", "hydra.foo", "1"),
    ("hydra.run.dir=", "hydra.run.dir", "''"),
]
ENV = {  # environment of a case
    "workload.vms=64 workload.sessions_per_vm=64": {"VNETSIM_MEMORY_BYTES": "1e8"},
}
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
    "workload.vms=64 workload.sessions_per_vm=64": "must be <= ",
    "hydra/launcher=nope": "allowed: basic, joblib, ray",
    "--cfg nope": "job, hydra, all",
    "workload.vms=''": "must be an integer",
    "--multirun workload.vms=range(1,1000000000000)": "at most 1000 jobs",
}


def _args(case: str, run_dir) -> list[str]:
    import shlex
    key = "hydra.sweep.dir" if "--multirun" in case else "hydra.run.dir"
    extra = [] if key in case else [f"{key}={run_dir}"]
    return ["run", *shlex.split(case), *extra]


def test_the_catalogue_is_large_and_unique():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


def check_one_line_error(proc, key, value):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].strip(), proc.stderr
    assert lines[0].startswith("error:")
    assert key in lines[0] and value in lines[0], lines[0]


@pytest.fixture
def run_main(capsys, monkeypatch):
    """run_main(args, env={...}) -> CompletedProcess of ``main(args)`` in this process."""
    def _run(args: list[str], env: dict | None = None):
        import subprocess
        for name, v in (env or {}).items():
            monkeypatch.setenv(name, v)
        monkeypatch.setattr("sys.argv", ["python -m sim"])
        cwd = os.getcwd()
        capsys.readouterr()
        try:
            status = main(args)
        except SystemExit as exc:  # Hydra's own exit: also a failure of the one-line promise
            status = exc.code
        out, err = capsys.readouterr()
        assert os.getcwd() == cwd
        return subprocess.CompletedProcess(args, status, out, err)
    return _run


@pytest.mark.parametrize("override,key,value", CASES, ids=[c[0] for c in CASES])
def test_bad_override_is_one_line_and_exit_2(override, key, value, tmp_path, run_main):
    proc = run_main(_args(override, tmp_path), ENV.get(override))
    out, err = proc.stdout, proc.stderr
    check_one_line_error(proc, key, value)
    assert out == ""
    assert ALLOWED.get(override, "") in err
    assert not list(tmp_path.iterdir())  # nothing run, nothing written


FRESH = ["workload.socket_bytes=nan", "hydra/launcher=nope",
         "workload.vms=64 workload.sessions_per_vm=64"]


def test_the_catalogue_in_fresh_processes(tmp_path):
    """A few cases the real way (``python -m sim run``, all started at once)."""
    import subprocess
    import sys

    from tests.conftest import REPO
    cases = {c[0]: c for c in CASES}
    dirs = [tmp_path / str(i) for i in range(len(FRESH))]
    procs = []
    for case, d in zip(FRESH, dirs):
        d.mkdir()
        procs.append(subprocess.Popen([sys.executable, "-m", "sim", *_args(case, d)], cwd=REPO,
                                      env={**os.environ, **ENV.get(case, {})}, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for case, d, p in zip(FRESH, dirs, procs):
        out, err = p.communicate(timeout=120)
        check_one_line_error(subprocess.CompletedProcess(case, p.returncode, out, err),
                             *cases[case][1:])
        assert out == "" and not list(d.iterdir())


@pytest.mark.parametrize("where", ["/proc/vnetsim", "/dev/null/vnetsim", "FILE/sub"])
@pytest.mark.parametrize("multirun", [False, True], ids=["run", "multirun"])
def test_an_output_directory_that_cannot_be_made_is_one_line(where, multirun, run_main,
                                                             tmp_path):
    """Checked before anything runs: can the directory be created and written?"""
    if where.startswith("FILE"):
        (tmp_path / "file").write_text("")
        where = str(tmp_path / "file" / "sub")
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    proc = run_main(["run", *(["--multirun"] if multirun else []), "run.measure_s=0.001",
                     f"{key}={where}"])
    check_one_line_error(proc, key, where)
    assert "created and written" in proc.stderr


def test_bad_value_inside_a_sweep_is_caught_before_any_run(run_main, tmp_path):
    proc = run_main(["run", "--multirun", "workload.vms=1,0", f"hydra.sweep.dir={tmp_path}"])
    check_one_line_error(proc, "workload.vms", "0")
    assert not list(tmp_path.rglob("results.json"))


def test_unknown_command(run_main):
    proc = run_main(["nope"])
    check_one_line_error(proc, "nope", "nope")


def test_vxlan_tx_ring_too_small_for_a_software_segmented_tso_packet(run_main, tmp_path):
    """Without VXLAN offload a 64KB TSO segment becomes 65160 / 1448 = 45 packets, 135 of
    ixgbe's TX descriptors; fewer used to stall the uplink silently (goodput 0)."""
    proc = run_main(["run", "experiment=vxlan_tx", "hypervisor.vswitch.vxlan.offload=false",
                     "nic.tx_ring_slots=32", f"hydra.run.dir={tmp_path}"])
    check_one_line_error(proc, "nic.tx_ring_slots", "32")
    assert ">= 135" in proc.stderr
    assert not list(tmp_path.rglob("results.json"))


@pytest.mark.parametrize("cmd", ["path", "compare"])
def test_a_sweep_given_to_path_or_compare_is_one_line(cmd, run_main):
    proc = run_main([cmd, "workload.vms=1,2"])
    check_one_line_error(proc, "workload.vms", "1,2")
    assert "--multirun" in proc.stderr
