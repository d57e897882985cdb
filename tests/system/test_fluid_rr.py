"""The fluid engine on TCP_RR and ping (``sim/fluid_rr.py``): closed forms of the latency
loop and cross-checks against short DES runs."""
import pytest

from sim import fluid
from sim.compose import compose_checked
from sim.config import ConfigError
from sim.runner import run_experiment


def _solve(*overrides):
    return fluid.solve(compose_checked("configs", list(overrides)))


def test_one_session_runs_one_transaction_per_latency():
    s = _solve("experiment=dev_vmxnet_32_10g_rr").summary
    assert s["regime"] == "latency-bound"
    assert s["transactions_per_s"] == pytest.approx(1e6 / s["rr_latency_mean_us"], rel=1e-9)
    assert s["goodput_gbps"] == pytest.approx(s["transactions_per_s"] * 2 * 8 / 1e9, rel=1e-9)
    assert "fluid_unpriced_units" not in s


def test_a_lone_message_waits_out_each_coalescing_timer():
    """Request and response each cross one coalescing NIC queue (the peer's, the host's): 20
    more microseconds of timer add 40 to the transaction."""
    base = _solve("experiment=dev_vmxnet_32_10g_rr", "nic.coalescing.timer_us=20").summary
    more = _solve("experiment=dev_vmxnet_32_10g_rr", "nic.coalescing.timer_us=40").summary
    assert more["rr_latency_mean_us"] - base["rr_latency_mean_us"] == pytest.approx(40, abs=1e-6)
    # a frame threshold of one fires at once: no timer at all
    none = _solve("experiment=dev_vmxnet_32_10g_rr", "nic.coalescing.max_frames=1").summary
    assert base["rr_latency_mean_us"] - none["rr_latency_mean_us"] == pytest.approx(40, abs=1e-6)


def test_the_halted_vcpu_is_woken_once_per_transaction():
    """The client's vCPU waits for the response halted: one wake-up per transaction, its
    cycles in the latency (the DES prices them into the receive pass)."""
    a = _solve("experiment=dev_vmxnet_32_10g_rr", "hypervisor.vcpu_halt_wakeup_cycles=20000")
    b = _solve("experiment=dev_vmxnet_32_10g_rr", "hypervisor.vcpu_halt_wakeup_cycles=50000")
    clock = a.config.host.cpu.clock_hz
    dl = b.summary["rr_latency_mean_us"] - a.summary["rr_latency_mean_us"]
    assert dl == pytest.approx(30000 / clock * 1e6, rel=1e-9)
    ct = a.tables["cost_terms"].set_index(["context", "term"])["cycles_per_s"]
    assert ct[("vm0.vcpu0", "halt_wakeup")] == pytest.approx(
        20000 * a.summary["transactions_per_s"], rel=1e-9)


def test_several_sessions_and_multi_frame_messages_are_refused_in_one_line():
    """Sessions sharing a queue lock into batches in the DES, which the closed form does not
    follow: refused, at config time for run.engine=fluid."""
    with pytest.raises(ValueError, match="tcp_rr with 4 sessions"):
        _solve("experiment=dev_vmxnet_32_10g_rr", "workload.sessions_per_vm=4")
    with pytest.raises(ConfigError, match="tcp_rr with 2 sessions"):
        compose_checked("configs", ["experiment=dev_vmxnet_32_10g_rr", "workload.vms=2",
                                    "run.engine=fluid"])
    # a message of several frames: TCP's segmenting and separate ACKs, not followed
    with pytest.raises(ValueError, match="larger than one MSS"):
        _solve("experiment=lat_rr_vm", "workload.rr.request_bytes=8000")
    with pytest.raises(ConfigError, match="above one MSS"):
        compose_checked("configs", ["experiment=lat_rr_vm", "workload.rr.response_bytes=1449",
                                    "run.engine=fluid"])


@pytest.mark.parametrize("experiment", ["dev_vmxnet_32_1g_rr", "dev_e1000_64_10g_rr",
                                        "lat_rr_native", "v2v_remote_host_rr"])
def test_rr_agrees_with_the_des(experiment):
    """Transactions/s and host CPU within 5% of a short DES run (the e1000's emulated interrupt
    delay, bare metal, two hosts VM to VM with 1KB requests)."""
    cfg = compose_checked("configs", [f"experiment={experiment}", "run.measure_s=0.04",
                                      "run.warmup_s=0.01", "run.replications=1"])
    des = run_experiment(cfg).summary
    fl = fluid.solve(cfg).summary
    for key in ("transactions_per_s", "host_cpu_util_pct"):
        assert fl[key] == pytest.approx(des[key], rel=0.05), key


def test_a_ping_is_sent_every_interval_and_its_read_is_not_in_the_rtt():
    r = _solve("experiment=lat_ping_vm", "workload.sessions_per_vm=2",
               "workload.ping.interval_us=500")
    s = r.summary
    assert s["ping_sent_per_s"] == pytest.approx(2 * 2000, rel=1e-9)
    assert s["regime"] == "offered-load" and "fluid_unpriced_units" not in s
    # the ping process's recvmsg() is paid but is not part of the RTT
    ct = r.tables["cost_terms"].set_index(["context", "term"])["cycles_per_s"]
    app_recv = ct[("vm0.vcpu0", "app_recv")] / s["ping_sent_per_s"]
    more = _solve("experiment=lat_ping_vm", "workload.sessions_per_vm=2",
                  "workload.ping.interval_us=500", "guest.stack.recv_call.fixed_cycles=50000")
    assert more.summary["ping_rtt_mean_us"] == pytest.approx(s["ping_rtt_mean_us"], rel=1e-12)
    ct2 = more.tables["cost_terms"].set_index(["context", "term"])["cycles_per_s"]
    assert ct2[("vm0.vcpu0", "app_recv")] / s["ping_sent_per_s"] > app_recv + 40000


@pytest.mark.parametrize("experiment", ["lat_ping_vm", "lat_ping_native"])
def test_ping_agrees_with_the_des(experiment):
    cfg = compose_checked("configs", [f"experiment={experiment}", "run.measure_s=0.04",
                                      "run.warmup_s=0.01", "run.replications=1"])
    des = run_experiment(cfg).summary
    fl = fluid.solve(cfg).summary
    for key in ("ping_rtt_mean_us", "host_cpu_util_pct"):
        assert fl[key] == pytest.approx(des[key], rel=0.05), key
