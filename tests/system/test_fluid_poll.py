"""The fluid engine on poll mode (``hypervisor.poll_mode``, ``models.polling``): a userspace
vswitch's PMD threads spin on their cores and read the NIC's queues with no interrupt
moderation. Each test fails when its mechanism is removed from ``sim/fluid.py``."""
import pytest

from sim import fluid
from sim.compose import compose_checked
from sim.runner import run_experiment

EXP = "experiment=kvm_vhost_user_tx"


def _solve(*overrides):
    return fluid.solve(compose_checked("configs", [EXP, *overrides]))


def test_poll_mode_threads_spin_their_cores_at_100_percent():
    """vm0.net (the vhost-user backend) and nic0.rxq0.irq (the NIC queue's PMD) are busy all
    the time: their work plus ``poll_idle`` is the clock, their cores count 100% busy in the
    host's CPU, as ``PollingContext.counters`` and ``Core.busy_time_s`` count them."""
    res = _solve()
    clock = res.config.host.cpu.clock_hz
    ct = res.tables["cost_terms"]
    ctx = res.tables["contexts"].set_index("context")["util_pct"]
    for c in ("vm0.net", "nic0.rxq0.irq"):
        mine = ct[ct.context == c]
        spun = float(mine[mine.term == "poll_idle"]["cycles_per_s"].sum())
        assert 0 < spun < clock
        assert float(mine["cycles_per_s"].sum()) == pytest.approx(clock, rel=1e-9)
        assert ctx[c] == pytest.approx(100.0, rel=1e-9)
    # the vCPU binds (its core at 100% of its work); 3 busy cores of the host's 80
    assert res.summary["regime"] == "cpu-bound"
    n_cores = len(res.tables["cores"][res.tables["cores"].host])
    assert res.summary["host_cpu_util_pct"] == pytest.approx(100 * 3 / n_cores, rel=1e-6)
    # no spinning where no context polls
    plain = fluid.solve(compose_checked("configs", ["experiment=kvm_vhost_net_tx"]))
    assert "poll_idle" not in set(plain.tables["cost_terms"]["term"])


def test_a_polled_nic_queue_adds_no_coalescing_timer_to_the_round_trip():
    """The PMD takes each burst on its next pass (the builder gives the host's NIC queues a
    zero timer; ``_polled_rings``): raising the NIC's static timer by 200 us lengthens a
    window-bound flow's round trip by 200 us (the peer's queue only), against 400 us with the
    kernel's vhost-net (both ends' queues)."""
    def rtt(exp, direction, timer_us):
        s = fluid.solve(compose_checked("configs", [
            f"experiment={exp}", f"workload.direction={direction}", "workload.sessions_per_vm=1",
            "workload.socket_bytes=16384", "nic.coalescing.mode=static",
            f"nic.coalescing.timer_us={timer_us}"])).summary
        assert s["regime"] == "window-bound"
        return s["rtt_us"]
    user = rtt("kvm_vhost_user_tx", "rx", 250) - rtt("kvm_vhost_user_tx", "rx", 50)
    kernel = rtt("kvm_vhost_net_tx", "rx", 250) - rtt("kvm_vhost_net_tx", "rx", 50)
    assert user == pytest.approx(200, abs=2)      # (sending: the same, measured 199.7)
    assert kernel == pytest.approx(400, abs=2)


def test_poll_mode_agrees_with_a_short_des_run():
    """kvm_vhost_user_tx receiving (4 sessions, the vCPU binds) against a 0.05-s DES window:
    goodput and host CPU within 5% (measured: -1.6% and 0.0%; sending, 0.1 s: -3.4%, 0.0%)."""
    cfg = compose_checked("configs", [EXP, "workload.direction=rx", "run.measure_s=0.05",
                                      "run.warmup_s=0.03", "run.replications=1"])
    des = run_experiment(cfg).summary
    fl = fluid.solve(cfg).summary
    assert fl["goodput_gbps"] == pytest.approx(des["goodput_gbps"], rel=0.05)
    assert fl["host_cpu_util_pct"] == pytest.approx(des["host_cpu_util_pct"], rel=0.05)


def test_tcp_rr_under_poll_mode_agrees_with_a_short_des_run():
    """One TCP_RR session through OVS-DPDK (``sim.fluid_rr``: the PMD threads' spinning in its
    tables too, no timer on the host's polled queue): a 0.03-s DES gave 40700 transactions/s
    at 2.9475% host CPU, the fluid engine 40685 (-0.04%) at 2.9478%."""
    cfg = compose_checked("configs", [EXP, "workload=tcp_rr", "workload.sessions_per_vm=1",
                                      "run.measure_s=0.03", "run.warmup_s=0.02",
                                      "run.replications=1"])
    des = run_experiment(cfg).summary
    fl = fluid.solve(cfg).summary
    assert fl["transactions_per_s"] == pytest.approx(des["transactions_per_s"], rel=0.02)
    assert fl["host_cpu_util_pct"] == pytest.approx(des["host_cpu_util_pct"], rel=0.02)
