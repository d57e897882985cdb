"""Direct devices (passthrough, SR-IOV) and the bare-metal host (``models.vnic.direct``,
``hypervisor=native``): each test asserts the mechanism it names on a short run of one
replication (tens of milliseconds simulated) of the ``pt_*`` experiments.

Expected sizes are read from the YAML as Hydra composes it (``compose_raw``), not from the
model's own config, so a model that priced an exit differently fails here.
"""
from __future__ import annotations

import pytest

from models import units
from sim.builder import build
from sim.compose import check_overrides
from sim.config import ConfigError
from tests.conftest import CONFIG_DIR

W = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1"]
# The hypervisor's own work on the data path: none of it may be charged for a direct device.
HYPERVISOR_TERMS = {"vswitch", "backend_tx", "backend_rx", "driver_tx", "driver_rx",
                    "compat_tx", "compat_rx", "numa_copy"}
LIGHT = ["workload.sessions_per_vm=1", "workload.socket_bytes=8192"]  # interrupts, idle vCPU


@pytest.fixture(scope="module")
def run(compose, run_one):
    """run(overrides) -> (model, summary, tables), one short replication (each distinct run
    once per module: the fluid test reuses the DES runs of the others)."""
    done = {}

    def _run(overrides):
        if tuple(overrides) in done:
            return done[tuple(overrides)]
        done[tuple(overrides)] = run_one(compose([*W, *overrides], short=False))
        return done[tuple(overrides)]
    return _run


def host_terms(tables) -> dict[str, float]:
    t = tables["cost_terms"]
    t = t[t["host"] == "host"]
    return t.groupby("term")["cycles_per_s"].sum().to_dict()


def cpu_per_gbps(summary) -> float:
    return summary["host_cpu_util_pct"] / summary["goodput_gbps"]


def test_passthrough_has_no_vswitch_or_backend_cycles_and_costs_less_cpu_per_gbit(run):
    """The guest drives the NIC: no networking context, no vswitch, backend or uplink-driver
    cycles on the host (the paravirtual run on the same hardware has them), the driver's work
    on the vCPU instead, and less host CPU per Gbit than vmxnet (the backend's and vswitch's
    cycles and the virtual interrupts are gone)."""
    m_pt, s_pt, t_pt = run(["experiment=pt_passthrough_tx"])
    m_vx, s_vx, t_vx = run(["experiment=e35_tx_single_vm", "hypervisor=esx40"])
    pt, vx = host_terms(t_pt), host_terms(t_vx)
    assert vx.get("vswitch", 0) > 0 and vx.get("backend_tx", 0) > 0   # the paravirtual path
    assert not HYPERVISOR_TERMS & {k for k, v in pt.items() if v}, pt
    assert [c.name for c in m_pt.contexts] == ["vm0.vcpu0"]
    assert pt.get("guest_driver_tx", 0) > 0 and pt.get("guest_driver_rx", 0) > 0
    assert cpu_per_gbps(s_pt) < 0.8 * cpu_per_gbps(s_vx)


def test_exits_per_interrupt_without_posted_interrupts_and_none_with_them(run, compose_raw):
    """Each NIC interrupt of a passed-through device exits ``rx_register_accesses_per_interrupt``
    times at ``vm_exit_cycles`` each (the YAML's values); posted interrupts remove the exits but
    not the wake-up of a halted vCPU."""
    raw = compose_raw([*W, "experiment=pt_posted_rx_8k"], short=False)
    per_irq = raw["vnic"]["rx_register_accesses_per_interrupt"]
    exit_cycles = raw["hypervisor"]["vm_exit_cycles"]
    _, s, t = run(["experiment=pt_posted_rx_8k", "hypervisor.features.posted_interrupts=false"])
    irqs = float(t["rx_queues"].set_index("queue").loc["nic0.rxq0", "interrupts_per_s"])
    terms = host_terms(t)
    assert irqs > 1000
    assert s["exits_per_s"] == pytest.approx(per_irq * irqs, rel=0.02)
    assert terms["exits"] == pytest.approx(s["exits_per_s"] * exit_cycles, rel=0.02)
    _, s_pi, t_pi = run(["experiment=pt_posted_rx_8k"])
    terms_pi = host_terms(t_pi)
    assert s_pi["exits_per_s"] == 0 and terms_pi.get("exits", 0) == 0
    assert terms_pi.get("halt_wakeup", 0) > 0


def test_native_host_has_no_exit_wakeup_or_hypervisor_terms(run):
    """Bare metal: the NIC interrupts the OS's core, which pays its driver and stack and
    nothing of a hypervisor (no exits, virtual interrupts, halt wake-ups, vswitch)."""
    model, s, t = run(["experiment=pt_native_rx", *LIGHT])
    terms = host_terms(t)
    assert model.nics[0].interrupts > 0 and terms.get("guest_driver_rx", 0) > 0
    assert not ({"exits", "halt_wakeup"} | HYPERVISOR_TERMS) & {k for k, v in terms.items() if v}
    assert s["exits_per_s"] == 0
    assert float(t["vnics"]["virtual_interrupts_per_s"].sum()) == 0


def test_sriov_vms_share_the_wire_and_get_their_own_queues(run):
    """Two VMs, each able to send ~9 Gbps alone, share one port: their goodput sums to at most
    the line rate's payload share, each gets a fair part, and the NIC sorts each VM's ACKs to
    its own VF queue."""
    model, s, t = run(["experiment=pt_sriov_tx_4vm", "workload.vms=2"])
    rate = model.cfg.nic.link.line_rate_gbps
    mss = model.vms[0].senders[0].mss
    payload_share = mss / units.frame_wire_bytes(mss + units.tcp_header_bytes(True))
    vms = t["vms"]["goodput_gbps"]
    assert vms.sum() <= rate * payload_share * 1.01
    assert vms.sum() > 0.9 * rate * payload_share and vms.min() > 0.4 * vms.sum()
    frames = t["rx_queues"].set_index("queue")["frames_per_s"]
    assert frames["nic0.rxq1"] > 0 and frames["nic0.rxq2"] > 0 and frames["nic0.rxq0"] == 0


@pytest.mark.parametrize("experiment", ["pt_passthrough_tx", "pt_passthrough_rx"])
def test_fluid_engine_solves_passthrough(run, compose, experiment):
    """The fluid engine reads the direct device's declared path: its goodput and host CPU
    agree with the DES (the vCPU polls under load in both)."""
    from sim.fluid import solve
    _, s, _ = run([f"experiment={experiment}"])
    res = solve(compose([*W, f"experiment={experiment}", "run.engine=fluid"], short=False))
    assert res.summary["goodput_gbps"] == pytest.approx(s["goodput_gbps"], rel=0.05)
    assert res.summary["host_cpu_util_pct"] == pytest.approx(s["host_cpu_util_pct"], rel=0.05)


@pytest.mark.parametrize("overrides, message", [
    (["experiment=pt_passthrough_tx", "workload.vms=2"],
     "workload.vms=2: must be <= host.nic_ports=1 with vnic.model=passthrough"),
    (["vnic=passthrough"], "vnic.model=passthrough: needs DirectPath I/O"),
    (["experiment=pt_sriov_tx_4vm", "nic=intel_82598"], "the NIC has 0 (nic.max_vfs"),
    (["experiment=pt_sriov_tx_4vm", "hypervisor=esx40"], "vnic.model=sriov: needs SR-IOV"),
    (["hypervisor=native"], "vnic.model=vmxnet2: hypervisor=native is bare metal"),
    (["experiment=pt_passthrough_rx", "workload=udp_multicast", "workload.vms=1"],
     "workload.kind=udp_multicast: not modelled with vnic.model=passthrough"),
])
def test_refused_with_one_line(overrides, message):
    with pytest.raises(ConfigError) as err:
        check_overrides(CONFIG_DIR, overrides)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_declared_guest_charges_are_what_the_direct_device_charges(compose):
    """What ``python -m sim path`` (and the fluid engine) reads for the vCPU of a passed-through
    NIC is what its receive pass and its transmit charge: the driver per interrupt and frame,
    the exits of one interrupt, no backend."""
    from models import costs
    from models.base import DATA, Burst
    model = build(compose(["experiment=pt_passthrough_rx"]))
    dev, vcpu = model.vnics[0], model.vms[0].vcpus[0]
    batch = [Burst(DATA, 0, 10 * 1448, 10, 10, 52, 1448, dst=0)]
    got = dev._rx_cost(batch, True, vcpu)
    for term in (costs.STACK_RX, costs.HALT_WAKEUP):   # the stack's; the wake-up if halted
        got.pop(term, None)
    want: dict = {}
    for c in dev.guest_charges("rx"):
        if c.term != costs.HALT_WAKEUP:   # one interrupt, 10 frames of 1448 bytes
            costs.add(want, c.term, c.fixed_cycles + 10 * c.per_packet_cycles
                      + 10 * 1448 * c.per_byte_cycles)
    assert got == pytest.approx(want) and costs.EXITS in got
    tx = dev.tx_guest_terms(batch[0])
    assert tx == pytest.approx({c.term: c.fixed_cycles + 10 * c.per_packet_cycles
                                for c in dev.guest_charges("tx")})
    assert dev.backend_charges("tx") == dev.backend_charges("rx") == []


def test_a_passed_through_nic_may_spread_its_queues_over_the_guests_vcpus(compose):
    """RSS across the NIC's queues is the guest's own (no vnic_rss needed): queue k interrupts
    vCPU k mod vcpus."""
    model = build(compose(["experiment=pt_passthrough_rx", "guest.vcpus=2", "nic.rx_queues=2",
                           "nic.rx_sort=rss"]))
    dev = model.vnics[0]
    assert [dev.rx_vcpu(k).name for k in range(2)] == ["vm0.vcpu0", "vm0.vcpu1"]
