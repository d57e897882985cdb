"""The fluid engine VM to VM on one vswitch (``topology=same_vswitch``): no NIC, no wire; the
sender's backend switches each segment into the partner's vNIC."""
import pytest

from sim import fluid
from sim.builder import build
from sim.compose import compose_checked
from sim.path import flow_paths
from sim.runner import run_experiment

SHORT = ["run.measure_s=0.04", "run.warmup_s=0.02", "run.replications=1"]


def test_no_wire_and_one_stack_packet_per_segment_into_a_vnic_that_takes_aggregates():
    cfg = compose_checked("configs", ["experiment=v2v_same_vswitch"])
    res = fluid.solve(cfg)
    s = res.summary
    assert s["wire_frames_per_s"] == 0 and s["host_packets_per_s"] == 0
    assert res.tables["links"].empty and res.tables["pcie"].empty
    # vmxnet3 with a Linux guest takes the TSO segment whole: the partner's stack is charged per
    # segment, a window going as ceil(W / seg_max) equal segments
    path = flow_paths(build(cfg))[0]
    per_pk = next(c.per_packet_cycles for h in path.data for c in h.charges
                  if c.term == "stack_rx")
    window = cfg.workload.socket_bytes
    seg = window / 2        # 64KB window, 65160-byte TSO segments: two a window
    ct = res.tables["cost_terms"].set_index(["context", "term"])["cycles_per_s"]
    g = s["goodput_gbps"] * 1e9 / 8
    assert ct[("vm1.vcpu0", "stack_rx")] == pytest.approx(per_pk * g / seg, rel=1e-6)
    assert "fluid_unpriced_units" not in s


@pytest.mark.parametrize("overrides, keys", [
    ([], ("goodput_gbps", "host_cpu_util_pct")),
    # Known gap (seventh session's merge): with a busy vCPU polling its ring (sim/fluid.py
    # ``_polling``) the fluid engine gives e1000 on one vswitch +5.3% goodput (3.47 vs 3.29
    # Gbps at these settings; -1.2% before that merge); docs/status.md lists it
    pytest.param(["vnic=e1000"], ("goodput_gbps", "host_cpu_util_pct"),
                 marks=pytest.mark.xfail(strict=True, reason="fluid +5% goodput: polling gap")),
    (["workload=tcp_rr", "workload.sessions_per_vm=1"],
     ("transactions_per_s", "host_cpu_util_pct")),
])
def test_same_vswitch_agrees_with_the_des(overrides, keys):
    cfg = compose_checked("configs", ["experiment=v2v_same_vswitch", *overrides, *SHORT])
    des = run_experiment(cfg).summary
    fl = fluid.solve(cfg).summary
    for key in keys:
        assert fl[key] == pytest.approx(des[key], rel=0.05), key
