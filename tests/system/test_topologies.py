"""Who talks to whom (``topology.kind``, ``models.topology``): VM to VM on one vswitch, across
two vswitches of one host, and across two virtualized hosts.

Each test runs one short window of one replication.
"""
from __future__ import annotations

import pytest

from sim.compose import ConfigError
from sim.path import LINK, flow_paths

W = ["run.warmup_s=0.02", "run.measure_s=0.03", "run.replications=1"]
GIGABIT = ["nic=broadcom_5709_1g"]  # a 1GbE port: a line rate well below what two VMs move


@pytest.fixture(scope="module")
def run(compose, run_one):
    def _run(overrides):
        return run_one(compose([*W, *overrides], short=False))
    return _run


def test_same_vswitch_is_not_capped_by_the_line_rate(run):
    """Two VMs on one vswitch never touch the NIC: on a 1GbE host they move several Gbps, the
    uplink carries nothing, and the sender's networking context pays the partner's backend
    receive cost (the burst is switched there)."""
    model, s, t = run([*GIGABIT, "topology=same_vswitch"])
    assert s["goodput_gbps"] > 2.0
    assert (t["nics"][["tx_gbps", "rx_gbps"]].to_numpy() == 0).all()
    terms = t["cost_terms"]
    backend_rx = terms[(terms["term"] == "backend_rx") & (terms["context"] == "vm0.net")]
    assert float(backend_rx["cycles_per_s"].sum()) > 0
    # the partner (vm1) exists on the host, but the flows belong to the measured VM
    assert [vm.index for vm in model.vms] == [0, 1] and list(t["vms"]["vm"]) == [0]
    # "as fast as the host resources allow": the receiving partner's vCPU is the limit
    assert t["vms"]["partner_vcpu_util_pct"].iloc[0] > 90


def test_cross_vswitch_goes_through_the_wire(run):
    """A partner on the other vswitch: out through port 0, back in through port 1, so the
    1GbE line rate caps the flow; port 0 sends what port 1 receives."""
    _, s, t = run([*GIGABIT, "topology=cross_vswitch", "host.nic_ports=2"])
    assert 0.5 < s["goodput_gbps"] <= 0.95
    nics = t["nics"].set_index("nic")
    assert nics.loc["nic0", "tx_gbps"] == pytest.approx(nics.loc["nic1", "rx_gbps"], rel=0.02)
    assert nics.loc["nic0", "tx_gbps"] > 0.9


def test_remote_host_is_a_second_virtualized_host(run):
    """The partner VM runs on a second host of the same build: its vCPU, its RX vector and its
    cores are there and busy; the host under test's CPU does not include them."""
    model, s, t = run(["topology=remote_host"])
    ctx = t["contexts"]
    remote = ctx[ctx["host"] == "remote"].set_index("context")
    assert remote.loc["vm1.vcpu0", "util_pct"] > 10
    assert remote.loc["remote.nic0.rxq0.irq", "util_pct"] > 1
    assert s["goodput_gbps"] > 1 and s["remote_cpu_util_pct"] > 0
    assert len(t["remote_cores"]) == len(model.cpu.cores)
    # symmetric: the same host, the same placement of the VM's first vCPU
    assert remote.loc["vm1.vcpu0", "core"] == ctx.set_index("context").loc["vm0.vcpu0", "core"]


def test_paths_follow_the_topology(compose):
    """``sim path``: VM to VM on one vswitch crosses no link; across hosts the data reaches the
    remote host's RX vector."""
    from sim.builder import build
    same = flow_paths(build(compose([*W, "topology=same_vswitch"], short=False)))[0]
    assert same.partner == "vm1" and not [h for h in same.data if h.kind == LINK]
    remote = flow_paths(build(compose([*W, "topology=remote_host"], short=False)))[0]
    assert "remote.nic0.rxq0.irq" in [h.name for h in remote.data]


def test_large_packets_between_local_vnics_that_take_them(run):
    """VM to VM on one vswitch, a TSO segment reaches a vmxnet3 Linux guest whole (one packet
    of many frames); a vmxnet2 guest is handed one packet per frame."""
    _, _, t3 = run(["hypervisor=vsphere51", "vnic=vmxnet3", "topology=same_vswitch"])
    _, _, t2 = run(["topology=same_vswitch"])
    v3, v2 = (t.set_index("vnic").loc["vm1.vnic"] for t in (t3["vnics"], t2["vnics"]))
    assert v3["rx_frames_per_s"] > 10 * v3["rx_packets_per_s"]
    assert v2["rx_frames_per_s"] == pytest.approx(v2["rx_packets_per_s"], rel=0.01)


@pytest.mark.parametrize("experiment", ["v2v_remote_host", "v2v_cross_vswitch"])
def test_the_fluid_engine_agrees_across_hosts_and_vswitches(compose, run_one, experiment):
    """VM to VM through a wire (two hosts, or two vswitches of one host): the fluid engine
    reads the same paths, the partner VM's receive side priced as a VM's (software LRO, its
    vCPU's virtual interrupts): goodput and host CPU within 5% of the DES. The DES over 0.2 s:
    over 0.03 s its host CPU swings by several percent (v2v_remote_host, two calibrations:
    4.91 and 4.49 over 0.03 s, 4.90 and 4.81 over 0.2 s; fluid 4.75 and 4.74)."""
    from sim import fluid
    cfg = compose([f"experiment={experiment}", "run.warmup_s=0.05", "run.measure_s=0.2",
                   "run.replications=1"], short=False)
    _, des, _ = run_one(cfg)
    fl = fluid.solve(cfg).summary
    for key in ("goodput_gbps", "host_cpu_util_pct"):
        assert fl[key] == pytest.approx(des[key], rel=0.05), key


@pytest.mark.parametrize("overrides, key", [
    (["topology=cross_vswitch"], "host.nic_ports=1"),
    (["topology=remote_host", "workload=udp_multicast"], "topology.kind=remote_host"),
    (["topology.kind=ring"], "kind"),
    (["experiment=pt_sriov_tx_4vm", "topology=remote_host"], "vnic.model=sriov with a VM"),
])
def test_bad_topologies_are_refused_in_one_line(compose, overrides, key):
    with pytest.raises(ConfigError, match=key):
        compose(overrides)
