"""Hypervisor profiles in the whole model: queue and context counts per generation (moved from
tests/unit/test_hypervisor.py).
"""


def _queues(model):
    vectors = [c for c in model.contexts if c.name.startswith("nic0.rxq")]
    return len(vectors), [len(v.rxq) for v in model.vnics], [len(v.txq) for v in model.vnics]


def test_queue_counts_per_profile(compose):
    from sim.builder import build
    # vSphere 5.5: one hardware queue, one vNIC queue. vSphere 6.0 with pnicFeatures=4 and RSS:
    # four hardware queues (four vector contexts) into four vNIC queues on four vCPUs.
    m55 = build(compose(["experiment=v6_vnic_rx_55"]))
    m60 = build(compose(["experiment=v6_vnic_rx_60"]))
    assert _queues(m55) == (1, [1], [1])
    assert _queues(m60) == (4, [4], [1])
    assert len({q.vcpu.name for q in m60.vnics[0].rxq}) == 4
    assert len({c.core.index for c in m60.contexts if c.name.startswith("nic0.rxq")}) == 4


def test_tx_contexts_per_vnic(compose):
    from sim.builder import build
    m = build(compose(["hypervisor=vsphere60", "vnic=vmxnet3", "vnic.tx_queues=4",
                       "hypervisor.tx_contexts_per_vnic=2"]))
    nets = [c.name for c in m.contexts if c.name.startswith("vm0.net")]
    assert nets == ["vm0.net", "vm0.net1"]
    assert [q.backend.name for q in m.vnics[0].txq] == ["vm0.net", "vm0.net1"] * 2
