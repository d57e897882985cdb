"""The fluid engine: a window of one segment and a sub-MSS tail goes round whole when its flow
shares its receive queue's handler with other flows (``sim.fluid._piled_windows``)."""
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


def _flow(queue, window=65536, seg_max=65160, mss=1448, refill=False, reader=None):
    _flow.n = getattr(_flow, "n", 0) + 1      # each flow reads on a core of its own unless told
    return SimpleNamespace(data_queue=queue, window=window, seg_max=seg_max, mss=mss,
                           refill=refill, reader_core=reader or f"host:{_flow.n}")


def test_only_one_segment_and_a_tail_at_a_shared_queue_piles_up():
    # Closed form: seg_max < window < seg_max + mss, another flow's data on the same queue,
    # the reader's core to itself, a writer-ahead, unpaced sender.
    a, b, alone = _flow("q0"), _flow("q0"), _flow("q1")
    assert fluid._piled_windows([a, b, alone], paced=False) == [a, b]
    assert fluid._piled_windows([a, b], paced=True) == []
    small = [_flow("q0", window=32768), _flow("q0", window=32768)]  # one segment already
    large = [_flow("q0", window=131072), _flow("q0", window=131072)]  # two whole segments
    tail = [_flow("q0", window=65160 + 1448), _flow("q0", window=65160 + 1448)]
    assert fluid._piled_windows(small + large + tail, paced=False) == []
    refilling = [_flow("q0", refill=True), _flow("q0", refill=True)]
    assert fluid._piled_windows(refilling, paced=False) == []
    one_core = [_flow("q0", reader="host:0"), _flow("q0", reader="host:0")]
    assert fluid._piled_windows(one_core, paced=False) == []


def test_two_sessions_reading_on_one_vcpu_keep_their_pieces():
    # DES (jitter_cv 0.2, seeds 1, 2): 2.62 / 2.46 Gbps, no whole-window read in 0.02 s.
    net = fluid.describe_network(compose_checked(
        "configs", [*RX, "workload.vms=1", "workload.sessions_per_vm=2"]))
    assert [fl.chunk for fl in net.flows] == pytest.approx([65536 / 2] * 2)


def test_two_receivers_at_one_handler_go_round_whole_and_meet_the_des():
    """DES (0.03 s after 0.03 s, ``host.cpu.jitter_cv=0.2``, the robust point): 2 VMs 2.62,
    2.60, 2.64 Gbps on seeds 1-3, host CPU 10.6-10.7%; 1 VM 2.17 (seeds 1, 2), its window in
    two pieces (no other flow at its handler). Pipelined (two pieces), the fluid engine gave
    4.05 Gbps for 2 VMs."""
    two = compose_checked("configs", [*RX, "workload.vms=2"])
    net = fluid.describe_network(two)
    assert [fl.chunk for fl in net.flows] == [65536, 65536]
    res = fluid.solve(two).summary
    assert res["goodput_gbps"] == pytest.approx(2.62, rel=0.05)
    assert res["host_cpu_util_pct"] == pytest.approx(10.6, rel=0.08)
    one = compose_checked("configs", [*RX, "workload.vms=1"])
    assert fluid.describe_network(one).flows[0].chunk == pytest.approx(65536 / 2)
    assert fluid.solve(one).summary["goodput_gbps"] == pytest.approx(2.17, rel=0.05)


@pytest.mark.slow
@settings(max_examples=1, deadline=None, database=None)
@given(st.just([*RX, "workload.vms=2", "run.seed=2"]))
def test_the_random_check_takes_the_robust_point_of_a_multi_stable_draw(overrides):
    # Seeds 2 and 3 settle at 2.64 and 4.13 Gbps (default jitter); at jitter_cv 0.2 both at
    # 2.60-2.64, which the fluid engine meets (2.67). Four DES runs of 0.03 s after 0.03 s.
    _agree(overrides)
