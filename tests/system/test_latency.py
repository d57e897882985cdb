"""Latency workloads and vSphere's latency sensitivity (``docs/latency.md``): each test names the
mechanism it checks, and the size it expects is computed from the parameters, never pinned.

One echo is in flight at a time (1 ms apart, RTTs of tens of microseconds), so every echo and
every reply reaches its NIC and its vNIC alone and waits out each coalescing timer in full; no
queue builds, and the RTT is the sum of the path's own delays: a change of one delay moves the
mean RTT by that delay. Runs: lat_ping_vm and friends, one replication of 30 ms after 10 ms.
"""
from __future__ import annotations

import pytest

from models import costs, units
from sim.builder import build

W = ["run.warmup_s=0.01", "run.measure_s=0.03", "run.replications=1"]
PING = ["experiment=lat_ping_vm", *W]


@pytest.fixture(scope="module")
def ping(compose, run_one):
    """ping(overrides) -> (model, summary, tables) of lat_ping_vm with ``overrides``."""
    cache: dict = {}

    def _run(overrides: list[str], base=PING):
        key = (tuple(base), tuple(overrides))
        if key not in cache:
            cache[key] = run_one(compose([*base, *overrides], short=False))
        return cache[key]
    return _run


def rtt_us(run) -> float:
    _, s, _ = run
    assert s["ping_sent_per_s"] > 0 and s["ping_loss_ratio"] == 0
    return s["ping_rtt_mean_us"]


def test_ping_rtt_rises_by_twice_the_nic_coalescing_timer(ping):
    """An echo waits out the peer's NIC timer, its reply the host's: raising the (static)
    timer by D raises the RTT by 2 D; the percentiles follow."""
    lo = ping(["nic.coalescing.mode=static", "nic.coalescing.timer_us=10"])
    hi = ping(["nic.coalescing.mode=static", "nic.coalescing.timer_us=60"])
    assert rtt_us(hi) - rtt_us(lo) == pytest.approx(2 * 50, rel=0.05)
    assert hi[1]["ping_rtt_p99_us"] > lo[1]["ping_rtt_p99_us"] + 90
    assert lo[1]["ping_rtt_p50_us"] <= lo[1]["ping_rtt_p90_us"] <= lo[1]["ping_rtt_p99_us"]


@pytest.mark.parametrize("direction", ["tx", "rx"])
def test_ping_rtt_rises_by_the_vnic_virtual_interrupt_delay(ping, direction):
    """The vNIC's virtual interrupt coalescing holds each packet into the VM for its delay: the
    reply (the VM pings) or the request (the peer pings) crosses it once per RTT."""
    d = f"workload.direction={direction}"
    off = ping([d, "vnic.rx_interrupt_delay_us=0"])
    on = ping([d, "vnic.rx_interrupt_delay_us=80"])
    assert rtt_us(on) - rtt_us(off) == pytest.approx(80, rel=0.05)
    assert on[0].vnics[0].virtual_interrupts > 0


def test_latency_sensitivity_removes_the_halt_wake_up_from_ping_and_tcp_rr(ping, compose):
    """With latency sensitivity high the vCPU never halts: each echo's reply (each TCP_RR
    response) no longer wakes it, so the RTT falls by one wake-up,
    ``vcpu_halt_wakeup_cycles`` at the host's clock, and the halt_wakeup term is gone."""
    cfg = compose(PING, short=False)
    wake_us = units.s_to_us(cfg.hypervisor.vcpu_halt_wakeup_cycles / cfg.host.cpu.clock_hz)
    assert wake_us > 1
    for base in (PING, ["experiment=lat_rr_vm", *W]):
        normal, ls = ping([], base), ping(["guest.latency_sensitivity=high"], base)
        key = "ping_rtt_p50_us" if base is PING else "rr_latency_p50_us"
        assert normal[1][key] - ls[1][key] == pytest.approx(wake_us, rel=0.2), base
        terms = ls[2]["cost_terms"]
        assert not (terms["term"] == costs.HALT_WAKEUP).any()
        assert ls[0].vnics[0].halt_wakeups == 0 < normal[0].vnics[0].halt_wakeups
    rr_normal, rr_ls = ping([], ["experiment=lat_rr_vm", *W]), ping(
        [], ["experiment=lat_rr_vm_ls", *W])
    assert rr_ls[1]["transactions_per_s"] > rr_normal[1]["transactions_per_s"]


def test_latency_sensitivity_turns_virtual_interrupt_coalescing_off(ping, compose):
    """e1000's emulation delays its virtual interrupts (``vnic.rx_interrupt_delay_us``, the
    calibrated value); latency sensitivity turns that off: the RTT falls by the delay and the
    wake-up, and the vNIC's coalescer no longer waits. (It turns LRO into a vmxnet3 vNIC off
    too: no aggregates.)"""
    cfg = compose([*PING, "vnic=e1000"], short=False)
    delay_us = cfg.vnic.rx_interrupt_delay_us
    wake_us = units.s_to_us(cfg.hypervisor.vcpu_halt_wakeup_cycles / cfg.host.cpu.clock_hz)
    assert delay_us > 10
    normal = ping(["vnic=e1000"])
    ls = ping(["vnic=e1000", "guest.latency_sensitivity=high"])
    assert rtt_us(normal) - rtt_us(ls) == pytest.approx(delay_us + wake_us, rel=0.1)
    assert all(q.coalescer.params.timer_us == 0 for q in ls[0].vnics[0].rxq)
    assert ping([])[0].vnics[0].takes_aggregates
    assert not ping(["guest.latency_sensitivity=high"])[0].vnics[0].takes_aggregates


def test_latency_sensitivity_puts_each_vcpu_alone_on_its_core(compose):
    """4 VMs of 2 vCPUs on the R720's 12 cores (one taken by the NIC's vector): 12 contexts
    on 11 cores share some; with latency sensitivity every vCPU is the only context on its
    core and the networking contexts share what is left."""
    over = [*PING, "workload.vms=4", "guest.vcpus=2"]
    normal = build(compose(over, short=False))
    ls = build(compose([*over, "guest.latency_sensitivity=high"], short=False))
    vcpus = lambda m: [c for vm in m.vms for c in vm.vcpus]  # noqa: E731
    assert any(c.core.n_contexts > 1 for c in vcpus(normal))
    assert all(c.core.n_contexts == 1 for c in vcpus(ls))
    assert len({c.core.index for c in vcpus(ls)}) == 8
    # VM to VM on one vswitch: the partner VMs' vCPUs get cores of their own too
    pairs = build(compose([*PING, "topology=same_vswitch", "workload.vms=2", "guest.vcpus=2",
                           "guest.latency_sensitivity=high"], short=False))
    assert len(vcpus(pairs)) == 8 and all(c.core.n_contexts == 1 for c in vcpus(pairs))


def test_a_larger_echo_raises_the_rtt_by_its_extra_serialization(ping, compose):
    """56 -> 1472 payload bytes: each of the request and the reply crosses the wire once and
    the host's PCIe once more bytes, and ping's sendto() copies them: the RTT rises by that
    serialization (wire at line rate, PCIe at its TLP data rate) and copy, nothing else."""
    cfg = compose(PING, short=False)
    extra = 1472 - 56
    wire_s = 2 * units.transmit_time_s(extra, cfg.nic.link.line_rate_gbps)
    pcie_s = 2 * units.transmit_time_s(extra, cfg.pcie.data_gbps)
    copy_s = cfg.guest.stack.send_call.per_byte_cycles * extra / cfg.host.cpu.clock_hz
    small, big = ping(["workload.ping.size_bytes=56"]), ping(["workload.ping.size_bytes=1472"])
    rise_us = rtt_us(big) - rtt_us(small)
    assert rise_us > units.s_to_us(wire_s)
    assert rise_us == pytest.approx(units.s_to_us(wire_s + pcie_s + copy_s), rel=0.1)


def test_ping_from_the_peer_is_answered_in_the_vms_receive_path(ping):
    """direction rx: the peer pings, the VM's kernel answers on its vCPU (ICMP in and out, no
    application call), one echo per interval."""
    model, s, tables = ping(["workload.direction=rx"])
    assert s["ping_sent_per_s"] == pytest.approx(1e6 / model.cfg.workload.ping.interval_us,
                                                 rel=0.05)
    t = tables["cost_terms"]
    vcpu = t[t["context"] == "vm0.vcpu0"]
    assert {costs.STACK_ICMP_RX, costs.STACK_ICMP_TX} <= set(vcpu["term"])
    assert not vcpu["term"].isin([costs.APP_SEND, costs.APP_RECV]).any()


def test_each_virtualization_layer_removed_lowers_the_rtt_towards_native(ping, compose):
    """The native baseline (``lat_ping_native``: no hypervisor, the OS drives the NIC) waits
    out only the two NICs' coalescing and the two hosts' passes. The VM adds the vswitch path
    (networking context, RX vector) and a halt wake-up; latency sensitivity takes the wake-up
    away; passthrough on top takes the vswitch path away, leaving the VM within a few
    microseconds of native (the passthrough driver's exits and costs)."""
    cfg = compose(["experiment=lat_ping_native", *W], short=False)
    rtt = {e: rtt_us(ping([], [f"experiment={e}", *W]))
           for e in ("lat_ping_native", "lat_ping_pt_ls", "lat_ping_vm_ls", "lat_ping_vm")}
    assert rtt["lat_ping_native"] > 2 * cfg.nic.coalescing.timer_us
    assert rtt["lat_ping_native"] < rtt["lat_ping_pt_ls"] < rtt["lat_ping_vm_ls"] \
        < rtt["lat_ping_vm"]
    assert rtt["lat_ping_pt_ls"] - rtt["lat_ping_native"] < \
        (rtt["lat_ping_vm_ls"] - rtt["lat_ping_native"]) / 2
