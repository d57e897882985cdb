"""Software LRO's own work per packet it takes (``hypervisor.software_lro_cost``, term ``lro``)
and the NAPI poll budget (``hypervisor.driver_poll`` per poll call, ``napi_budget_packets``,
term ``driver_poll``), in the DES (``models.hypervisor.HypervisorRx``) and the fluid engine
(``sim.fluid``: ``LRO packet``, ``_napi_budget``), on vSphere 5.5's single receive handler
(v6_vnic_rx_55: one NIC queue's vector at 100% carries one vmxnet3 vNIC's four streams). The
prices are set here, not read from the profile, so that the checks do not move with a fit;
each check fails when its mechanism is removed (the term not charged, or not in the fluid).
"""
from __future__ import annotations

import pytest

from sim import fluid
from sim.compose import compose_checked

EXP = ["experiment=v6_vnic_rx_55", "run.warmup_s=0.02", "run.measure_s=0.03",
       "run.replications=1"]
VECTOR = "nic0.rxq0.irq"
LRO_CYCLES = 400.0
POLL_CYCLES = 3000.0
COMPAT_CYCLES = 250.0   # the shim per NIC packet: the fluid engine's frame counter here


def _cfg(lro: float, poll: float, *more):
    return compose_checked("configs", [
        *EXP, f"hypervisor.software_lro_cost.per_packet_cycles={lro}",
        f"hypervisor.driver_poll.fixed_cycles={poll}",
        f"hypervisor.compat_rx.per_packet_cycles={COMPAT_CYCLES}", *more])


@pytest.fixture(scope="module")
def des(run_one):
    """des(lro, poll, *overrides) -> (summary, tables) of the DES, memoised."""
    memo = {}

    def _des(lro, poll, *more):
        key = (lro, poll, more)
        if key not in memo:
            _, s, t = run_one(_cfg(lro, poll, *more))
            memo[key] = (s, t)
        return memo[key]
    return _des


def _term(tables, term, context=VECTOR) -> float:
    ct = tables["cost_terms"]
    return float(ct[(ct.context == context) & (ct.term == term)]["cycles_per_s"].sum())


def _frames_per_s(tables) -> float:
    """Frames received: the vNICs' (DES); the shim's cycles over its price (fluid)."""
    if "vnics" in tables:
        return float(tables["vnics"]["rx_frames_per_s"].sum())
    return _term(tables, "compat_rx") / COMPAT_CYCLES


def _vector_cycles(tables) -> float:
    ct = tables["cost_terms"]
    return float(ct[ct.context == VECTOR]["cycles_per_s"].sum())


def test_des_lro_costs_its_price_per_frame_and_slows_the_single_handler(des):
    """The vector pays ``software_lro_cost`` per data frame it hands to LRO (no hardware LRO
    here: a frame is a packet); without the term the saturated handler carries more, by its
    cycles per frame with the term over those without (within 3%)."""
    s, t = des(LRO_CYCLES, 0.0)
    assert _term(t, "lro") / _frames_per_s(t) == pytest.approx(LRO_CYCLES, rel=0.03)
    s0, t0 = des(0.0, 0.0)
    assert _term(t0, "lro") == 0.0
    per_frame = _vector_cycles(t) / _frames_per_s(t)
    assert s0["goodput_gbps"] / s["goodput_gbps"] == pytest.approx(
        per_frame / (per_frame - LRO_CYCLES), rel=0.03)
    assert s0["goodput_gbps"] > 1.05 * s["goodput_gbps"]


def test_des_lro_is_not_paid_on_acks(des):
    """Transmitting, the VM's vector takes only ACKs: LRO takes data packets, so no ``lro``."""
    _, t = des(LRO_CYCLES, 0.0, "workload.direction=tx")
    ct = t["cost_terms"]
    assert ct[ct.term == "driver_rx"]["cycles_per_s"].sum() > 0
    assert ct[ct.term == "lro"]["cycles_per_s"].sum() == 0.0


def test_des_poll_budget_one_poll_per_64_packets_of_a_long_pass(des):
    """The saturated handler's passes are long (30 interrupts/s): it pays one ``driver_poll``
    per ``napi_budget_packets`` frames, at least frames/64 polls and at most 25% more (the
    ceiling of each pass: ~180 frames a pass here, ~0.5 poll over frames/64 each); without
    the budget's polls it carries more."""
    s, t = des(0.0, POLL_CYCLES)
    polls = _term(t, "driver_poll") / POLL_CYCLES
    frames = _frames_per_s(t)
    assert frames / 64 * 0.99 <= polls <= frames / 64 * 1.25
    s0, t0 = des(0.0, 0.0)
    assert _term(t0, "driver_poll") == 0.0
    assert s0["goodput_gbps"] > 1.015 * s["goodput_gbps"]


def test_fluid_prices_lro_per_frame_and_the_poll_budget_like_the_des(des):
    """The fluid engine charges ``lro`` per frame and, the handler saturated, max(passes,
    frames/64) = frames/64 polls; each term moves its goodput as it moves the DES's (ratios
    within 2%), and the engines agree within 5% with both terms on."""
    def solve(lro, poll, *more):
        return fluid.solve(_cfg(lro, poll, *more))
    both = solve(LRO_CYCLES, POLL_CYCLES)
    t = both.tables
    frames = _frames_per_s(t)
    assert _term(t, "lro") / frames == pytest.approx(LRO_CYCLES, rel=0.01)
    assert _term(t, "driver_poll") / POLL_CYCLES == pytest.approx(frames / 64, rel=0.02)
    none = solve(0.0, 0.0).summary["goodput_gbps"]
    lro = solve(LRO_CYCLES, 0.0).summary["goodput_gbps"]
    poll = solve(0.0, POLL_CYCLES).summary["goodput_gbps"]
    d_none, d_lro, d_poll = (des(*p)[0]["goodput_gbps"] for p in
                             ((0.0, 0.0), (LRO_CYCLES, 0.0), (0.0, POLL_CYCLES)))
    assert none / lro == pytest.approx(d_none / d_lro, rel=0.02)
    assert none / poll == pytest.approx(d_none / d_poll, rel=0.02)
    d_both = des(LRO_CYCLES, POLL_CYCLES)[0]["goodput_gbps"]
    assert both.summary["goodput_gbps"] == pytest.approx(d_both, rel=0.05)


def test_an_unsaturated_handler_pays_one_poll_per_pass(des):
    """Below saturation (one stream paced at 4 Gbps: a 64KB message, ~46 frames, per pass)
    each pass is shorter than the budget: each engine pays one poll per pass (its interrupts,
    priced by the driver's per-interrupt part), well above frames/64. (The engines' pass
    counts differ, 11.4K/s DES and 7.7K/s fluid, for every per-pass charge alike.)"""
    more = ("workload.sessions_per_vm=1", "workload.rate_limit_mbps=4000",
            "hypervisor.driver_rx.fixed_cycles=3000", "hypervisor.driver_rx.per_packet_cycles=450")
    res = fluid.solve(_cfg(0.0, POLL_CYCLES, *more))
    polls = _term(res.tables, "driver_poll") / POLL_CYCLES
    frames = _frames_per_s(res.tables)
    passes = (_term(res.tables, "driver_rx") - 450 * frames) / 3000
    assert polls > 1.2 * frames / 64
    assert polls == pytest.approx(passes, rel=0.01)
    _, t = des(0.0, POLL_CYCLES, *more)
    d_polls = _term(t, "driver_poll") / POLL_CYCLES
    assert d_polls > 1.2 * _frames_per_s(t) / 64
    rq = t["rx_queues"].set_index("queue")
    assert d_polls == pytest.approx(rq.loc["nic0.rxq0", "interrupts_per_s"], rel=0.01)
