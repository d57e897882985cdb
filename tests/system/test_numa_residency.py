"""Where received data sit when the guest reads them (``docs/models.md``, NUMA).

::

    node 1: card --DMA--> RX vector (driver, vswitch, backend copy into guest memory)
                                 |  the copied lines stay in node 1's cache
    node 0:                      +--> vCPU: stack, then recv() copies them to user space

The guest's copy to user reads the data where the backend's copy left them: on the node of
the RX vector's core. When that is not the vCPU's node, every byte copied pays
``remote_per_byte_cycles`` (the ``numa`` term of the vCPU). The backend's own writes into the
remote guest memory pay ``remote_per_packet_cycles`` per packet written (``numa_copy``: an LRO
aggregate is one), nothing per byte (posted full-line stores).
"""
import pytest

SHORT = ["run.warmup_s=0.02", "run.measure_s=0.03", "run.replications=1"]
SPLIT = ["experiment=v6_numa_10g_default", *SHORT]   # vector on node 1, VM on node 0
TOGETHER = [*SPLIT, "host.irq_core=1"]               # the vector on node 0 with the VM


def _term(tables, context, term):
    t = tables["cost_terms"]
    row = t[(t["context"] == context) & (t["term"] == term)]
    return float(row["cycles_per_s"].sum())


def test_the_guest_copy_pays_for_data_a_handler_on_another_node_wrote(compose, compose_raw,
                                                                      run_one):
    raw = compose_raw(SPLIT, short=False)["host"]["numa"]
    pb, pp = raw["remote_per_byte_cycles"], raw["remote_per_packet_cycles"]
    assert pb > 0 and pp > 0
    model, s, t = run_one(compose(SPLIT, short=False))
    ctx = {c.name: c for c in model.contexts}
    assert ctx["nic0.rxq0.irq"].core.node == 1 and ctx["vm0.vcpu0"].core.node == 0
    copied_bytes_per_s = s["goodput_gbps"] * 1e9 / 8
    # every byte the application copies pays the remote price, and nothing else on the vCPU
    assert _term(t, "vm0.vcpu0", "numa") == pytest.approx(pb * copied_bytes_per_s, rel=0.05)
    # the handler pays per packet it wrote into the guest (aggregates), not per byte
    guest_packets_per_s = float(t["vnics"]["rx_packets_per_s"].sum())
    assert _term(t, "nic0.rxq0.irq", "numa_copy") == pytest.approx(pp * guest_packets_per_s,
                                                                   rel=0.05)
    # with the vector on the VM's node the data are local to the vCPU: no penalty there
    _, s0, t0 = run_one(compose(TOGETHER, short=False))
    assert _term(t0, "vm0.vcpu0", "numa") == 0
    assert _term(t0, "nic0.rxq0.irq", "numa_copy") == 0
    assert s0["goodput_gbps"] == pytest.approx(s["goodput_gbps"], rel=0.02)  # line rate both
