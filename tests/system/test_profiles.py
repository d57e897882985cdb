"""Profiles beyond the seeds (docs/profiles.md): KVM with virtio-net over vhost-net, vhost-user
with a poll-mode vswitch (OVS-DPDK), current NICs and PCIe Gen4, other CPUs.

::

    guest virtio_net --kick (ioeventfd exit, skipped while the worker runs)--> vhost worker
        (vm0.net) --> bridge --> NIC            [kvm, vnic=virtio_net]
    guest virtio_net --(never kicks)--> PMD thread (vm0.net, spins) --> OVS-DPDK --> NIC
        NIC --(no interrupt)--> PMD thread (nic0.rxq0.irq, spins)   [kvm_ovs_dpdk]

Each test runs one replication of a few milliseconds of simulated time.
"""
from __future__ import annotations

import pytest

from models.vnic.devices import VirtioNet

W = ["run.warmup_s=0.005", "run.measure_s=0.01", "run.replications=1"]


@pytest.fixture(scope="module")
def run(compose, run_one):
    """run(overrides) -> (model, summary, tables) of one short replication."""
    def _run(overrides):
        return run_one(compose([*W, *overrides], short=False))
    return _run


def _util(tables, name: str) -> float:
    ctx = tables["contexts"]
    return float(ctx.loc[ctx["context"] == name, "util_pct"].iloc[0])


def _core_util(tables, model, name: str) -> float:
    core = next(c for c in model.contexts if c.name == name).core.index
    cores = tables["cores"]
    return float(cores.loc[cores["core"] == core, "util_pct"].iloc[0])


def test_poll_mode_thread_is_busy_at_low_load_while_vhost_net_scales(run):
    """A PMD thread spins: its core is 100% busy at 0.4 Gbps (4 senders paced at 100 Mbps,
    ``workload.rate_limit_mbps``); the vhost-net worker's share grows with the offered load."""
    low = ["workload.rate_limit_mbps=100"]
    model, s, t = run(["experiment=kvm_vhost_user_tx", *low])
    assert s["goodput_gbps"] < 0.5
    for name in ("vm0.net", "nic0.rxq0.irq"):
        assert _util(t, name) == pytest.approx(100.0, abs=0.01)
        assert _core_util(t, model, name) == pytest.approx(100.0, abs=0.01)
    terms = t["cost_terms"]
    spun = terms[(terms["context"] == "vm0.net") & (terms["term"] == "poll_idle")]
    assert float(spun["share_pct"].iloc[0]) > 90  # nearly all of it is spinning
    _, s1, t1 = run(["experiment=kvm_vhost_net_tx", *low])
    _, s4, t4 = run(["experiment=kvm_vhost_net_tx", "workload.rate_limit_mbps=400"])
    u1, u4 = _util(t1, "vm0.net"), _util(t4, "vm0.net")
    assert s4["goodput_gbps"] == pytest.approx(4 * s1["goodput_gbps"], rel=0.15)
    assert 0 < u1 < 5 and u4 == pytest.approx(4 * u1, rel=0.3)


def test_kvm_kick_is_suppressed_while_the_vhost_worker_runs(run, monkeypatch):
    """A kick (one ioeventfd exit) is rung only when the vhost worker is idle, so there are
    no more kicks than worker passes and far fewer than packets; without the suppression every
    packet kicks. The exits' cycles on the vCPU are kicks x hypervisor.vm_exit_cycles."""
    model, s, t = run(["experiment=kvm_vhost_net_tx"])
    vnic, net = model.vnics[0], next(c for c in model.contexts if c.name == "vm0.net")
    assert 0 < vnic.exits <= net.tasks
    assert vnic.exits < 0.5 * net.packets
    vcpu = model.contexts[0]
    # (a kick's exit is counted when rung and credited when the vCPU books it: a few apart)
    assert vcpu.term_cycles["exits"] == pytest.approx(
        vnic.exits * model.cfg.hypervisor.vm_exit_cycles, rel=0.05)
    monkeypatch.setattr(VirtioNet, "doorbell_suppression", False)
    model, _, _ = run(["experiment=kvm_vhost_net_tx"])
    net = next(c for c in model.contexts if c.name == "vm0.net")
    assert model.vnics[0].exits >= net.packets - 64  # every posted packet kicks


def test_poll_mode_backend_never_kicks_nor_interrupts(run):
    """Under OVS-DPDK the guest rings no doorbell (the PMD keeps notifications off) and the
    NIC's RX queue raises one 'interrupt' per poll that found work: no moderation timer."""
    model, s, t = run(["experiment=kvm_vhost_user_tx", "run.measure_s=0.003"])
    assert s["exits_per_s"] == 0 and s["goodput_gbps"] > 0
    assert all(c.term != "exits" for c in model.vnics[0].guest_charges("tx"))  # sim path
    assert model.nics[0].rx_queues[0].coalescer.params.timer_us == 0


def test_100g_nic_is_capped_by_a_gen3_x8_slot_not_by_gen4_x16(run):
    """PCIe Gen3 x8 carries ~57.6 Gbps of payload (63 Gbps at 128b/130b, 256-byte TLPs): a
    100GbE receive is capped there, with the upstream direction saturated; Gen4 x16 (252
    Gbps) does not cap it (4 VMs here, to keep the test short: their vCPUs are the limit)."""
    short = ["workload.vms=4", "workload.sessions_per_vm=2"]
    _, s3, t3 = run(["experiment=hw_100g_epyc_rx_gen3", *short])
    _, s4, t4 = run(["experiment=hw_100g_epyc_rx", *short])
    assert s3["goodput_gbps"] < 58 and s3["pcie_max_util_pct"] > 95
    assert s4["goodput_gbps"] > 1.15 * s3["goodput_gbps"] and s4["pcie_max_util_pct"] < 50


@pytest.mark.parametrize("overrides", [
    ["experiment=hw_25g_rx"],
    ["experiment=hw_25g_rx", "nic=mellanox_cx5_100g", "pcie=gen3_x16"],
    ["experiment=hw_25g_rx", "nic=intel_xl710_40g", "pcie=gen3_x8", "host=opteron6276_4p"],
    ["experiment=hw_25g_rx", "host=epyc7502_2p", "pcie=gen4_x16"],
    ["experiment=e35_tx_single_vm", "host=icelake8380_2p", "hypervisor=vsphere60",
     "vnic=vmxnet3"],
])
def test_every_new_profile_composes_and_runs(run, overrides):
    _, s, _ = run([*overrides, "run.warmup_s=0.002", "run.measure_s=0.003"])
    assert s["goodput_gbps"] > 0


def test_vmxnet3_takes_lro_aggregates_where_vmxnet2_cannot(run, compose):
    """The same receive on vSphere 5.5 (software LRO): vmxnet3 hands the guest aggregates (one
    guest packet for several frames), vmxnet2 one packet per frame; vmxnet2 refuses several
    queues in one line."""
    rx = ["experiment=e35_rx_single_vm", "hypervisor=vsphere55", "guest=rhel6"]
    _, s2, t2 = run([*rx, "vnic=vmxnet2"])
    _, s3, t3 = run([*rx, "vnic=vmxnet3"])
    frames2 = float(t2["vnics"]["rx_frames_per_s"].sum())
    frames3 = float(t3["vnics"]["rx_frames_per_s"].sum())
    assert s2["guest_rx_packets_per_s"] == pytest.approx(frames2)
    assert s3["guest_rx_packets_per_s"] < 0.25 * frames3
    assert s3["goodput_gbps"] > 1.3 * s2["goodput_gbps"]  # the vCPU pays per packet
    with pytest.raises(ValueError, match=r"^vnic.rx_queues=4: must be 1: vmxnet2 has one queue"):
        compose(["vnic=vmxnet2", "vnic.rx_queues=4"])
