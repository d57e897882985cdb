"""Per-term cost accounting (``models.costs``): every context's terms add up to the cycles it
was charged, no model charges unnamed cycles, and the ``cost_terms`` table reproduces the
configured prices where a term's count is known exactly.

The experiments cover every context kind: vCPUs, VM networking contexts, RX vectors, the
peer's softirq and application contexts, splitRxMode member contexts, HTTP servers, NUMA
penalties (remote memory) and world switches (shared cores)."""
import pytest

from models import costs

CASES = {
    "tx": ["experiment=e35_tx_single_vm"],
    "rx_shared_cores": ["experiment=e35_rx_scaling", "workload.vms=8"],
    "numa": ["experiment=v6_numa_10g_default"],
    "split": ["experiment=mc_split_30k", "workload.vms=4"],
    # 256KB objects: 200 connections each finish some within the short window
    "http": ["experiment=g80_send", "host.nic_ports=1", "workload.http.object_bytes=262144"],
    "vxlan": ["experiment=vxlan_tx"],
    "e1000_rr": ["experiment=dev_e1000_64_10g_rr"],
}


@pytest.fixture(scope="module")
def runs(compose, run_one):
    return {name: run_one(compose([*o, "run.warmup_s=0.01", "run.measure_s=0.02"]))
            for name, o in CASES.items()}


@pytest.mark.parametrize("case", CASES)
def test_terms_add_up_to_the_cycles_charged(runs, case):
    model, _, tables = runs[case]
    contexts = [*model.contexts, *(c for p in model.peers for c in p.contexts())]
    for ctx in contexts:
        assert sum(ctx.term_cycles.values()) == pytest.approx(ctx.cycles, rel=1e-9, abs=1e-3), \
            ctx.name
        assert costs.UNATTRIBUTED not in ctx.term_cycles, ctx.name
        assert set(ctx.term_cycles) <= set(costs.ALL), ctx.name
    t = tables["cost_terms"]
    shares = t.groupby("context")["share_pct"].sum()
    assert ((shares - 100).abs() < 1e-6).all()


def test_the_mechanism_specific_terms_appear_where_they_should(runs):
    def terms(case):
        return set(runs[case][2]["cost_terms"]["term"])
    assert {costs.WORLD_SWITCH} <= terms("rx_shared_cores")
    assert {costs.NUMA, costs.NUMA_COPY} & terms("numa")
    assert costs.REPLICATION in terms("split") and costs.APP in terms("http")
    assert costs.VXLAN in terms("vxlan") and costs.EXITS in terms("e1000_rr")
    assert costs.WORLD_SWITCH not in terms("tx")  # every context has a core of its own


def test_cost_terms_reproduce_the_configured_per_packet_prices(runs):
    """The vswitch is priced per packet, nothing per pass: its cycles per packet on the VM's
    networking context (packets = what the backend took) equal the configured price, and
    the peer's per-ACK generation cost likewise. Breaking the accounting (a term charged
    twice, or to the wrong context) moves these."""
    model, _, tables = runs["tx"]
    t = tables["cost_terms"].set_index(["context", "term"])
    vswitch = model.cfg.hypervisor.vswitch.cost
    assert t.loc[("vm0.net", "vswitch"), "cycles_per_packet"] == pytest.approx(
        vswitch.per_packet_cycles)
    backend = t.loc[("vm0.net", "backend_tx"), "cycles_per_packet"]
    assert backend > model.cfg.vnic.backend_tx.per_packet_cycles  # + the fixed part per pass
