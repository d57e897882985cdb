"""TCP_RR in the whole model: latency floor and spread of one transaction in flight, two frames per
transaction, DEV-rr's device direction (moved from tests/unit/test_tcp_rr.py).
"""
import pytest


@pytest.fixture(scope="module")
def rr_runs(compose, run_one):
    out = {}
    for vnic in ("vmxnet2", "e1000"):
        cfg = compose(["workload=tcp_rr", f"vnic={vnic}", "guest=win2003_64",
                       "run.warmup_s=0.02", "run.measure_s=0.05"])
        out[vnic] = run_one(cfg)
    return out


def test_one_transaction_in_flight_waits_out_both_coalescing_timers(rr_runs):
    """One transaction in flight, so each frame reaches its NIC alone and its interrupt waits
    the whole coalescing timer, at the host's NIC and at the peer's: the latency is at least
    two timers plus two propagation delays. Service times vary by only ~5% (jitter) and
    nothing queues, so the distribution is narrow: p50 within 10% of the mean, p99 < 1.5 p50."""
    model, s, tables = rr_runs["vmxnet2"]
    cfg = model.cfg
    floor_us = 2 * cfg.nic.coalescing.timer_us + 2 * cfg.nic.link.propagation_ns / 1000
    assert s["transactions_per_s"] > 0
    assert s["rr_latency_mean_us"] > floor_us
    assert s["rr_latency_p50_us"] == pytest.approx(s["rr_latency_mean_us"], rel=0.1)
    assert s["rr_latency_p99_us"] < 1.5 * s["rr_latency_p50_us"]
    assert len(tables["rr_sessions"]) == 1


def test_acks_ride_on_data_two_frames_per_transaction(rr_runs):
    _, s, _ = rr_runs["vmxnet2"]
    # The host NIC sends one response and receives one request per transaction, nothing else.
    assert s["wire_frames_per_s"] == pytest.approx(2 * s["transactions_per_s"], rel=0.01)


def test_vmxnet_has_more_transactions_than_e1000_on_64bit(rr_runs):
    # DEV-rr direction: e1000's exits (VM exits on a 64-bit guest) lengthen every transaction.
    vm, e1 = rr_runs["vmxnet2"][1], rr_runs["e1000"][1]
    assert vm["transactions_per_s"] > e1["transactions_per_s"]
    assert vm["exits_per_s"] < e1["exits_per_s"]
