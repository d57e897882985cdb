"""The fluid (steady-state) engine: progressive filling on toy problems, regimes of real configs.

No DES runs here: the agreement with the DES is in docs/fluid.md (and ``sim.fluid.compare``).
"""
import pytest

from sim import fluid
from sim.compose import compose_checked


def _linear(coeffs):
    """Loads of linear constraints: ``coeffs[name][i]`` units per unit of flow ``i``'s rate."""
    def loads(rates):
        return {c: sum(a * r for a, r in zip(row, rates)) for c, row in coeffs.items()}
    return loads


def _members(coeffs):
    return {c: {i for i, a in enumerate(row) if a} for c, row in coeffs.items()}


def test_two_flows_share_a_link_one_also_cpu_limited():
    # link of 10 shared by A and B; A alone crosses a CPU that allows it 3.
    coeffs = {"link": [1.0, 1.0], "cpu": [1.0, 0.0]}
    fill = fluid.progressive_filling(2, _linear(coeffs), {"link": 10.0, "cpu": 3.0},
                                     _members(coeffs))
    assert fill.rates == pytest.approx([3.0, 7.0], rel=1e-6)
    assert fill.binding == {0: "cpu", 1: "link"}


def test_max_min_shares_of_one_core_with_different_costs():
    # Two flows on one core (1e9 cycles/s), 2 and 3 cycles per byte: max-min gives both the
    # same rate r with 5r = 1e9, whatever their costs.
    coeffs = {"core": [2.0, 3.0]}
    fill = fluid.progressive_filling(2, _linear(coeffs), {"core": 1e9}, _members(coeffs))
    assert fill.rates == pytest.approx([2e8, 2e8], rel=1e-6)


def test_one_flow_one_bottleneck_and_a_window_bound():
    coeffs = {"link": [1.0, 1.0, 1.0], "window2": [0.0, 0.0, 1.0]}
    fill = fluid.progressive_filling(3, _linear(coeffs), {"link": 9.0, "window2": 1.0},
                                     _members(coeffs))
    assert fill.rates == pytest.approx([4.0, 4.0, 1.0], rel=1e-6)
    assert fill.binding[2] == "window2"


def test_nonlinear_monotone_loads():
    # A per-interrupt cost that saturates (rate = min(x, 100)) plus a per-byte cost.
    def loads(r):
        return {"core": 10 * min(r[0], 100.0) + r[0]}
    fill = fluid.progressive_filling(1, loads, {"core": 2000.0}, {"core": {0}})
    assert fill.rates[0] == pytest.approx(1000.0, rel=1e-6)


@pytest.fixture(scope="module")
def solved():
    out = {}
    # TX against a client with LRO (one ACK per aggregate): the VM's vCPU has room and the wire
    # binds, so the closed form below applies (the default RHEL5 client ACKs every second frame
    # and the vCPU binds instead).
    extra = {"e35_tx_single_vm": ["peer.lro_max_bytes=65536", "peer.rx_queues=1"]}
    for name in ("e35_tx_single_vm", "e35_rx_single_vm"):
        out[name] = fluid.solve(compose_checked("configs", [f"experiment={name}",
                                                            *extra.get(name, [])]))
    return out


def test_tx_single_vm_is_link_bound(solved):
    res = solved["e35_tx_single_vm"]
    assert res.summary["regime"] == "link-bound"
    assert set(res.tables["bottleneck"]["constraint"]) == {"link nic0.wire_tx"}
    # the Ethernet ceiling: payload / (payload + 52 header + 38 framing) of 10 Gbps, a 64KB
    # window going as two 32KB segments of 23 frames each
    # (wire bytes per frame from the mean payload rounded up: 1425)
    assert res.summary["goodput_gbps"] == pytest.approx(10 * (32768 / 23) / (1425 + 90),
                                                        rel=1e-6)


def test_rx_single_vm_is_cpu_bound_on_the_vcpu(solved):
    res = solved["e35_rx_single_vm"]
    assert res.summary["regime"] == "cpu-bound"
    bn = res.tables["bottleneck"]
    assert (bn["kind"] == "context").all()
    assert all("vm0.vcpu0" in c for c in bn["constraint"])
    ctx = res.tables["contexts"].set_index("context")["util_pct"]
    assert ctx["vm0.vcpu0"] == pytest.approx(100, rel=1e-4)


def test_every_charge_is_priced_and_outputs_present(solved):
    for res in solved.values():
        assert "fluid_unpriced_units" not in res.summary
        for key in ("goodput_gbps", "host_cpu_util_pct", "cycles_per_bit", "wire_frames_per_s",
                    "host_packets_per_s", "loss_ratio", "rtt_us", "regime"):
            assert key in res.summary
        for table in ("flows", "contexts", "cost_terms", "bottleneck"):
            assert len(res.tables[table]) > 0


def test_small_window_is_window_bound():
    # One 8KB connection: window / RTT0 (a few tens of us) is far below the link and the vCPU.
    cfg = compose_checked("configs", ["experiment=e35_tx_single_vm",
                                      "workload.sessions_per_vm=1", "workload.socket_bytes=8192"])
    res = fluid.solve(cfg)
    assert res.summary["regime"] == "window-bound"
    assert res.tables["bottleneck"]["constraint"].tolist() == ["window flow 0"]
    rate_Bps = res.summary["goodput_gbps"] * 1e9 / 8
    assert rate_Bps * res.summary["rtt_us"] * 1e-6 == pytest.approx(8192, rel=0.02)


def test_compare_against_a_short_des_run():
    """The one DES run of this file (0.1 s): the two engines within 10% on e35_rx_single_vm."""
    cfg = compose_checked("configs", ["experiment=e35_rx_single_vm"])
    df = fluid.compare(cfg, measure_s=0.1).set_index("metric")
    assert list(df.columns) == ["des", "fluid", "rel_diff"]
    assert abs(df.loc["goodput_gbps", "rel_diff"]) < 0.10
    assert abs(df.loc["host_cpu_util_pct", "rel_diff"]) < 0.10


def test_unsupported_kind_says_so():
    cfg = compose_checked("configs", ["experiment=mc_default_30k"])
    with pytest.raises(ValueError, match="tcp_stream only"):
        fluid.solve(cfg)
