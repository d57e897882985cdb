"""The fluid engine: a window of one segment and a sub-MSS tail goes round whole when its flow's
pieces pile up at a receive queue's handler shared with other flows (``sim.fluid._piled_windows``,
``_pieces_pile_up``)."""
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import fluid
from sim.compose import compose_checked
from tests.system.test_fluid import _agree

# Two 10GbE receivers at 2 GHz with 64KB sockets and 8KB messages (docs/fluid.md, "The DES
# settles at more than one operating point"); the VMs' count is added per test.
RX = ["experiment=e35_rx_single_vm", "workload.sessions_per_vm=1",
      "workload.socket_bytes=65536", "workload.message_bytes=8192",
      "nic.link.line_rate_gbps=10", "nic.coalescing.max_frames=64", "host.cpu.clock_hz=2e9"]


def _flow(queue, window=65536, seg_max=65160, mss=1448, refill=False):
    return SimpleNamespace(data_queue=queue, window=window, seg_max=seg_max, mss=mss,
                           refill=refill)


def test_only_one_segment_and_a_tail_at_a_shared_queue_piles_up():
    # Closed form: seg_max < window < seg_max + mss, another flow's data on the same queue,
    # a writer-ahead, unpaced sender (the candidates).
    a, b, alone = _flow("q0"), _flow("q0"), _flow("q1")
    assert fluid._piled_windows([a, b, alone], paced=False) == [a, b]
    assert fluid._piled_windows([a, b], paced=True) == []
    small = [_flow("q0", window=32768), _flow("q0", window=32768)]  # one segment already
    large = [_flow("q0", window=131072), _flow("q0", window=131072)]  # two whole segments
    tail = [_flow("q0", window=65160 + 1448), _flow("q0", window=65160 + 1448)]
    assert fluid._piled_windows(small + large + tail, paced=False) == []
    refilling = [_flow("q0", refill=True), _flow("q0", refill=True)]
    assert fluid._piled_windows(refilling, paced=False) == []


def _chunks(*overrides):
    """The flows' pieces once solved (``_solve_piled``), and the goodput."""
    net = fluid.describe_network(compose_checked("configs", [*RX, *overrides]))
    fill, _, _ = fluid._solve_piled(net)
    return [fl.chunk for fl in net.flows], sum(fill.rates) * 8 / 1e9


def test_pieces_pile_up_where_the_handler_serves_others_longer_than_the_reader_does():
    # One VM, two sessions on its vCPU: the other flow's piece holds the handler ~46 us, its
    # reads space the pieces ~85 us: two pieces (DES, jitter_cv 0.2, seeds 1, 2: 2.62 / 2.46
    # Gbps, no whole-window read in 0.02 s). Two such VMs: three other flows at the handler,
    # ~146 us: whole windows (DES 4.51 / 4.52 Gbps; in pieces the fluid engine gave 5.30).
    chunks, _ = _chunks("workload.vms=1", "workload.sessions_per_vm=2")
    assert chunks == pytest.approx([65536 / 2] * 2)
    chunks, gbps = _chunks("workload.vms=2", "workload.sessions_per_vm=2")
    assert chunks == [65536] * 4
    assert gbps == pytest.approx(4.51, rel=0.05)


def test_two_receivers_at_one_handler_go_round_whole_and_meet_the_des():
    """DES (0.03 s after 0.03 s, ``host.cpu.jitter_cv=0.2``, the robust point): 2 VMs 2.62,
    2.60, 2.64 Gbps on seeds 1-3, host CPU 10.6-10.7%; 1 VM 2.17 (seeds 1, 2), its window in
    two pieces (no other flow at its handler). Pipelined (two pieces), the fluid engine gave
    4.05 Gbps for 2 VMs."""
    two = compose_checked("configs", [*RX, "workload.vms=2"])
    assert _chunks("workload.vms=2")[0] == [65536, 65536]
    res = fluid.solve(two).summary
    assert res["goodput_gbps"] == pytest.approx(2.62, rel=0.05)
    assert res["host_cpu_util_pct"] == pytest.approx(10.6, rel=0.08)
    one = compose_checked("configs", [*RX, "workload.vms=1"])
    assert _chunks("workload.vms=1")[0] == pytest.approx([65536 / 2])
    assert fluid.solve(one).summary["goodput_gbps"] == pytest.approx(2.17, rel=0.05)


def test_pieces_that_raise_their_interrupt_as_they_land_stay_apart():
    # A half-window piece (23 frames) reaches max_frames 16 (or a 0-us timer fires at once):
    # the handler's pass starts on each piece as it lands, so the pieces do not pile up. DES
    # (default jitter, 0.1 s after 0.3 s): max_frames 16 4.42-4.43 Gbps on seeds 1-11 (pieces
    # on all), max_frames 64 2.72-2.73 (whole) on seeds 1, 6, 8 and 4.29-4.31 on the other
    # eight. One DES run here.
    from sim.runner import run_experiment
    for extra in (["nic.coalescing.max_frames=16"], ["nic.coalescing.timer_us=0"]):
        chunks, gbps = _chunks("workload.vms=2", *extra)
        assert chunks == pytest.approx([65536 / 2] * 2), extra
    cfg = compose_checked("configs", [*RX, "workload.vms=2", "nic.coalescing.max_frames=16",
                                      "run.seed=1", "run.replications=1", "run.warmup_s=0.3",
                                      "run.measure_s=0.1"])
    des = run_experiment(cfg).summary
    fl = fluid.solve(cfg).summary
    assert des["goodput_gbps"] > 4.0   # the DES in pieces
    assert fl["goodput_gbps"] == pytest.approx(des["goodput_gbps"], rel=0.05)
    assert fl["host_cpu_util_pct"] == pytest.approx(des["host_cpu_util_pct"], rel=0.05)


@pytest.mark.slow
@settings(max_examples=1, deadline=None, database=None)
@given(st.just([*RX, "workload.vms=2", "run.seed=8451"]))
def test_the_random_check_takes_the_robust_point_of_a_multi_stable_draw(overrides):
    # Seeds 8451 and 8452 settle at 4.29 and 3.39 Gbps (default jitter, 0.03 s after 0.03 s);
    # at jitter_cv 0.2 after ROBUST_WARMUP_S both at 2.73-2.74 (whole windows), which the
    # fluid engine meets (2.68). Before the PCIe fix seeds 2 and 3 were such a pair (2.64,
    # 4.13); they now both stay in pieces at 4.31 (the whole-window point is rarer at the
    # default jitter: 3 of 12 seeds in 0.4 s). Four DES runs.
    _agree(overrides)
