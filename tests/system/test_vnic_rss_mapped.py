"""vSphere 6.0's RSS queues requested by one vNIC are mapped into its guest's memory.

003: "By default, a single vNIC can receive packets from a single hardware queue. To achieve
higher throughput, the vNIC has to request more queues" (``vnic.rx_queues=4``, the .vmx
``pnicFeatures = "4"``, with ``nic.rx_sort=rss``); 004: "Receive queues can be assigned to each
virtual NIC and mapped to guest memory to avoid a copy". Queues assigned to one vNIC pay the
backend's per-packet work and no copy (``models.nic.NicPort.guest_mapped``); RSS queues that
hash several vNICs' flows are shared and copy, as 5.5's single queue does.

::

    v6_vnic_rx_60, 1 VM:  wire -> rxq0..3 (all the vNIC's) -> handler: ... + backend (no copy)
    2 VMs on the queues:  wire -> rxq0..3 (both VMs' flows) -> handler: ... + backend (copy)
"""
from __future__ import annotations

import pytest

from sim.builder import build
from tests.conftest import term_cycles_per_s

W = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1",
     "workload.rate_limit_mbps=2000"]
ONE_VNIC = ["experiment=v6_vnic_rx_60", *W]
TWO_VNICS = [*ONE_VNIC, "workload.vms=2", "guest.vcpus=2"]


def _copy_cycles(compose, run_one, base):
    """The backend's cycles/s at copy rates 2 and 0 cycles/byte, the bytes/s delivered, and
    the backend's cycles at rate 0 (its per-packet work)."""
    _, s2, t2 = run_one(compose([*base, "host.cpu.copy_per_byte_cycles=2.0"], short=False))
    _, _, t0 = run_one(compose([*base, "host.cpu.copy_per_byte_cycles=0.0"], short=False))
    at0 = term_cycles_per_s(t0, "backend_rx")
    return term_cycles_per_s(t2, "backend_rx") - at0, s2["goodput_gbps"] * 1e9 / 8, at0


def test_rss_queues_a_single_vnic_requested_pay_no_copy(compose, run_one):
    extra, bytes_per_s, per_packet = _copy_cycles(compose, run_one, ONE_VNIC)
    assert bytes_per_s > 0
    assert abs(extra) < 0.01 * 2.0 * bytes_per_s
    assert per_packet > 0


def test_rss_queues_shared_by_two_vnics_copy_every_byte(compose, run_one):
    extra, bytes_per_s, _ = _copy_cycles(compose, run_one, TWO_VNICS)
    assert extra == pytest.approx(2.0 * bytes_per_s, rel=0.05)


def test_the_declared_path_shows_no_copy_on_the_mapped_queues(compose):
    """``sim path`` (and the fluid engine, which prices the declared path) agree with the DES:
    the backend's per-byte price is 0 on a mapped RSS queue, the copy rate on 5.5's single
    queue."""
    from sim.path import flow_paths
    for exp, per_byte in (("v6_vnic_rx_60", 0.0), ("v6_vnic_rx_55", None)):
        cfg = compose([f"experiment={exp}"], short=False)
        model = build(cfg)
        path = flow_paths(model)[0]
        charges = [c for hop in path.data for c in getattr(hop, "charges", [])
                   if c.term == "backend_rx"]
        assert charges
        want = cfg.host.cpu.copy_per_byte_cycles if per_byte is None else per_byte
        assert all(c.per_byte_cycles == pytest.approx(want) for c in charges)


def test_kvm_multiqueue_virtio_still_copies(compose):
    """The mapping is NetQueue's: KVM's multiqueue virtio-net (``vnic_rss`` but no NetQueue)
    keeps vhost-net's copy on its RSS queues."""
    cfg = compose(["experiment=hw_100g_epyc_rx", "workload.vms=1", "vnic.rx_queues=4"],
                  short=False)
    model = build(cfg)
    assert cfg.hypervisor.features.vnic_rss and not cfg.hypervisor.features.netqueue
    nic = model.nics[0]
    ports = model.vswitches[0].ports
    assert not any(nic.guest_mapped(k, d, ports) for k in range(len(nic.rx_queues))
                   for d in ports)
