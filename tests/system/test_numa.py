"""NUMA I/O in the whole model: placement removes the remote penalty and lifts a bottlenecked
networking context (moved from tests/unit/test_numa.py).
"""
import pytest


# -- system: the V6 pair ----------------------------------------------------------------------
SHORT = ["run.warmup_s=0.03", "run.measure_s=0.05", "run.replications=1"]


def test_numa_io_removes_the_remote_penalty_and_cpu_per_bit(compose, run_one):
    out = {}
    for name in ("v6_numa_10g_default", "v6_numa_10g_numa_io"):
        _, summary, tables = run_one(compose([f"experiment={name}", *SHORT], short=False))
        out[name] = summary, tables["contexts"]
    (d, d_ctx), (n, n_ctx) = out["v6_numa_10g_default"], out["v6_numa_10g_numa_io"]
    assert d["numa_remote_cycles_pct"] > 5 and n["numa_remote_cycles_pct"] == 0
    assert n["cycles_per_bit"] < 0.95 * d["cycles_per_bit"]
    assert n["goodput_gbps"] == pytest.approx(d["goodput_gbps"], rel=0.02)  # line rate both
    host = n_ctx[n_ctx["host"] == "host"]
    assert set(host["numa_node"]) == {1}                  # everything on the card's node


def test_numa_io_raises_throughput_when_a_networking_context_is_the_bottleneck(compose, run_one):
    """The direction of V6-numa-40g: with a guest cheap enough that the RX handler is the
    bottleneck, NUMA I/O, by removing the handler's remote penalty, lets more through."""
    heavy = ["guest.stack.recv_call.per_byte_cycles=0.2",
             "guest.stack.rx_data.per_packet_cycles=500",
             "host.irq_core=1",  # the handler off the card's node, with the VM, in the default
             # NUMA I/O stays on up to two cores' worth of networking load (the saturated
             # handler plus the backend's copy pass one core's: 003's 100 would turn it off)
             "host.numa_io_threshold_pct=200",
             *SHORT]
    got = {}
    for name in ("v6_numa_40g_default", "v6_numa_40g_numa_io"):
        _, summary, tables = run_one(compose([f"experiment={name}", *heavy], short=False))
        irq = tables["contexts"].set_index("context").loc["nic0.rxq0.irq", "util_pct"]
        got[name] = summary["goodput_gbps"], irq
    (g_default, irq_default), (g_numa, _) = got["v6_numa_40g_default"], got["v6_numa_40g_numa_io"]
    assert irq_default > 95                                   # the handler is saturated
    assert g_numa > 1.2 * g_default
