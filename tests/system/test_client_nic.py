"""000's native client: the RHEL5-era ixgbe (1.1.18) takes every frame on one receive queue and
raises at most one receive interrupt per 125 us (its default EITR interval, 8K/s; run with
``peer.rx_queues=1 peer.rx_coalescing=throttle``, neither the default yet:
configs/peer/dl380_g5_rhel5.yaml says why).

The single queue: the client's receive work (driver, stack, ACKs out) is all on one softirq
context. The throttle: the client's receive interrupts stay at or under 8K/s and each takes
many frames; with the port's own moderation (``nic``: the 82598's 10-us timer, 64 frames) the
same run raises several times more. An interval throttle adds no wait after a quiet period:
a lone frame that finds the interval elapsed is taken at once (``models.coalescing``).
"""
from __future__ import annotations

BASE = ["experiment=e35_tx_single_vm", "run.warmup_s=0.02", "run.measure_s=0.03",
        "peer.rx_queues=1"]
RX_TERMS = ("driver_rx", "stack_rx", "stack_ack_tx")


def _client(tables):
    nic = tables["nics"].set_index("nic").loc["peer0.nic"]
    ct = tables["cost_terms"]
    rx = ct[(ct["host"] == "peer0") & ct["term"].isin(RX_TERMS)]
    return nic, rx


def test_the_client_takes_frames_on_one_throttled_queue(compose, run_one):
    cfg = compose([*BASE, "peer.rx_coalescing=throttle"], short=False)
    interval_s = cfg.peer.rx_throttle_us * 1e-6
    _, summary, tables = run_one(cfg)
    nic, rx = _client(tables)
    assert summary["goodput_gbps"] > 5.0
    # at most one interrupt per throttle interval (a little slack for the window's edges)
    assert 0 < nic["interrupts_per_s"] <= 1.05 / interval_s, nic["interrupts_per_s"]
    assert nic["rx_frames_per_s"] / nic["interrupts_per_s"] >= 40
    # one queue: every receive term of the client is paid in one context
    assert set(rx["context"]) == {"peer0.softirq"}, set(rx["context"])

    _, _, t_nic = run_one(compose([*BASE, "peer.rx_coalescing=nic"], short=False))
    nic_own, _ = _client(t_nic)
    assert nic_own["interrupts_per_s"] > 3 * nic["interrupts_per_s"], (
        nic_own["interrupts_per_s"], nic["interrupts_per_s"])


def test_an_interval_throttle_fires_at_once_after_a_quiet_interval():
    import simpy

    from models.coalescing import CoalescingParams, make_coalescer
    env = simpy.Environment()
    fired = []
    co = make_coalescer(env, CoalescingParams(mode="throttle", timer_us=125.0, max_frames=1024),
                        lambda: fired.append(env.now))
    co.notify(1)                      # nothing for ever before: at once
    env.run(until=50e-6)
    co.notify(1)                      # 50 us after: waits for the interval's end (125 us)
    env.run(until=400e-6)
    co.notify(1)                      # 275 us after the last: at once again
    env.run(until=500e-6)
    assert [round(t * 1e6, 6) for t in fired] == [0, 125, 400], fired
