"""The vNIC backend's receive copy and the hypervisor's CPU.

- The backend copies each received packet into guest memory at the host processor's rate of a
  cache-cold copy (``host.cpu.copy_per_byte_cycles``, read by ``vnic.backend_rx``): term
  ``backend_rx``, per byte.
- NetQueue maps a VMDq queue dedicated to one vNIC into that guest's memory (004: "mapped to
  guest memory to avoid a copy"): its frames pay the backend's per-packet work, no copy.
- ``hypervisor_cpu_util_pct``: the host's contexts that are not a guest's vCPU (vectors, the
  VMs' networking contexts), in both engines (``sim.metrics.hypervisor_contexts``).

::

    VMDq, 3 VMs, 16 queues:  wire -> rxq1 (vm0, guest-mapped) -> handler: ... + backend (no copy)
                                  -> rxq2 (vm1, guest-mapped) -> ...
    NetQueue off:            wire -> rxq0 (all VMs) -> handler: ... + backend (copy per byte)
"""
from __future__ import annotations

import pytest

from sim.metrics import hypervisor_contexts
from tests.conftest import term_cycles_per_s

W = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1",
     "workload.rate_limit_mbps=300", "workload.vms=3"]
OFF = ["experiment=vmdq_low_load_off", *W]
VMDQ = ["experiment=vmdq_low_load_q16", *W]


def _copy_cycles(compose, run_one, base):
    """The backend's cycles/s at copy rates 2 and 0 cycles/byte, and the bytes/s delivered."""
    _, s2, t2 = run_one(compose([*base, "host.cpu.copy_per_byte_cycles=2.0"], short=False))
    _, _, t0 = run_one(compose([*base, "host.cpu.copy_per_byte_cycles=0.0"], short=False))
    return (term_cycles_per_s(t2, "backend_rx") - term_cycles_per_s(t0, "backend_rx"),
            s2["goodput_gbps"] * 1e9 / 8)


def test_the_backend_reads_the_host_processors_copy_rate(compose):
    for host in ("r720", "x3650m2", "dl580_g5"):
        cfg = compose(["experiment=v6_vnic_rx_55", f"host={host}"], short=False)
        assert cfg.vnic.backend_rx.per_byte_cycles == cfg.host.cpu.copy_per_byte_cycles > 0


def test_without_netqueue_every_received_byte_pays_the_copy(compose, run_one):
    """One shared queue: the backend's per-byte term is the copy rate times the bytes."""
    extra, bytes_per_s = _copy_cycles(compose, run_one, OFF)
    assert extra == pytest.approx(2.0 * bytes_per_s, rel=0.05)


def test_a_guest_mapped_vmdq_queue_pays_no_copy(compose, run_one):
    """Each of the 3 VMs has its own VMDq queue, mapped into its memory: the copy rate does not
    change the backend's cycles; the per-packet work is still paid."""
    extra, bytes_per_s = _copy_cycles(compose, run_one, VMDQ)
    assert bytes_per_s > 0
    assert abs(extra) < 0.01 * 2.0 * bytes_per_s
    _, _, t = run_one(compose(VMDQ, short=False))
    assert term_cycles_per_s(t, "backend_rx") > 0


def test_the_hypervisors_cpu_is_the_host_contexts_that_are_not_vcpus(compose, run_one):
    model, s, t = run_one(compose(VMDQ, short=False))
    vcpus = {c.name for vm in model.vms for c in vm.vcpus}
    hv = hypervisor_contexts(model)
    assert hv and not hv & vcpus and any(n.endswith(".irq") for n in hv)
    ctx = t["contexts"]
    host = ctx[ctx["host"] == "host"]
    assert set(host.loc[host["hypervisor"], "context"]) == hv
    busy = host.loc[host["hypervisor"], "util_pct"].sum()
    assert s["hypervisor_cpu_util_pct"] == pytest.approx(busy / model.cfg.host.cpu.n_cores, rel=1e-6)
    assert 0 < s["hypervisor_cpu_util_pct"] < s["host_cpu_util_pct"]


def test_the_fluid_engine_reports_the_hypervisors_cpu(compose):
    from sim.fluid import solve
    cfg = compose(["experiment=v6_vnic_rx_55"], short=False)
    s = solve(cfg).summary
    assert 0 < s["hypervisor_cpu_util_pct"] < s["host_cpu_util_pct"]
    assert s["hypervisor_cycles_per_bit"] > 0
