"""One test per mechanism: its effect on the whole model, with and without it, against the size
the mechanism predicts from the parameter in ``configs/``.

The expected size is read from the YAML as Hydra composes it (``compose_raw``: before the schema
and before any code sees it), never from the model's own ``cfg``, so a model that priced the
mechanism at a different value (zero, or five times the configured one: ``make mutants``) fails
here. Each test runs a few short windows of one replication (tens of milliseconds simulated).
"""
from __future__ import annotations

import numpy as np
import pytest

from models import units
from models.cpu import Context
from sim.builder import build
from sim.metrics import measure, snapshot

W = ["run.warmup_s=0.01", "run.measure_s=0.02", "run.replications=1"]


@pytest.fixture(scope="module")
def run(compose):
    """run(overrides, sample=None) -> (model, summary, tables); ``sample(model)`` is polled
    every 2 us of simulated time and its largest value returned as ``summary['peak']``."""
    def _run(overrides, sample=None):
        cfg = compose([*W, *overrides], short=False)
        model = build(cfg)
        peak = [0.0]
        if sample is not None:
            def poll():
                while True:
                    peak[0] = max(peak[0], sample(model))
                    yield model.env.timeout(2e-6)
            model.env.process(poll())
        model.env.run(until=cfg.run.warmup_s)
        s0 = snapshot(model)
        model.env.run(until=cfg.run.warmup_s + cfg.run.measure_s)
        summary, tables = measure(model, s0, snapshot(model), cfg.run.measure_s, 0)
        summary["peak"] = peak[0]
        return model, summary, tables
    return _run


@pytest.fixture(scope="module")
def configured(compose_raw):
    """configured(overrides, "a.b.c") -> the value the YAML files give that key."""
    def _get(overrides, key):
        node = compose_raw([*W, *overrides], short=False)
        for part in key.split("."):
            node = node[part]
        return node
    return _get


def term_per_s(tables, term, contexts=None):
    t = tables["cost_terms"]
    t = t[t["term"] == term]
    if contexts is not None:
        t = t[t["context"].isin(contexts)]
    return float(t["cycles_per_s"].sum())


def busy_cycles_per_s(model, summary_tables, contexts=None):
    ctx = summary_tables["contexts"]
    if contexts is not None:
        ctx = ctx[ctx["context"].isin(contexts)]
    return float(ctx["util_pct"].sum()) / 100 * model.cfg.host.cpu.clock_hz


# -- world switches --------------------------------------------------------------------------

RX8 = ["experiment=e35_rx_scaling", "workload.vms=8"]  # 8 VMs on 16 cores: shared cores


def test_world_switch_costs_its_price_per_switch_and_nothing_without_sharing(run, configured):
    """Every time a shared core changes context it pays ``context_switch_cycles``: the
    world_switch cycles on a core divided by its switches is that price; with the price zeroed
    the host's busy cycles drop by the same order as what the switches cost, between a third
    and twice it (cheaper passes change the batching and how often the contexts alternate)."""
    price = configured(RX8, "host.cpu.context_switch_cycles")
    assert price > 0
    model, s, t = run(RX8)
    ctx, cores = t["contexts"], t["cores"]
    terms = t["cost_terms"][t["cost_terms"]["term"] == "world_switch"]
    per_core = terms.merge(ctx[["context", "core"]], on="context").groupby("core")["cycles_per_s"].sum()
    shared = cores[cores["switches_per_s"] > 0].set_index("core")["switches_per_s"]
    assert len(shared) >= 4
    for core, switches in shared.items():
        assert per_core.get(core, 0.0) / switches == pytest.approx(price, rel=0.02), core
    model0, s0, t0 = run([*RX8, "host.cpu.context_switch_cycles=0"])
    assert term_per_s(t0, "world_switch") == 0
    saved = busy_cycles_per_s(model, t) - busy_cycles_per_s(model0, t0)
    assert term_per_s(t, "world_switch") / 3 < saved < 2 * term_per_s(t, "world_switch")


# -- service-time jitter ---------------------------------------------------------------------

def _service_ratios(monkeypatch, run, overrides):
    """Charged / nominal cycles of every task the host and peer contexts ran."""
    ratios = []
    original = Context._price

    def price(self, core):
        dt = original(self, core)
        if self._nominal > 0:
            ratios.append(dt * core.params.clock_hz / self._nominal)
        return dt
    monkeypatch.setattr(Context, "_price", price)
    run(overrides)
    monkeypatch.setattr(Context, "_price", original)
    return np.array(ratios)


def test_service_jitter_has_the_configured_coefficient_of_variation(monkeypatch, run, configured):
    """Each task's service time is its nominal cycles times a gamma variate of mean 1 and CV
    ``jitter_cv``: over thousands of tasks the sample CV is the configured one (within 15%;
    the standard error is cv/sqrt(2n), about 1.5% here) and the mean is 1. Without jitter every
    task takes exactly its nominal cycles."""
    over = ["experiment=e35_rx_single_vm"]
    cv = configured(over, "host.cpu.jitter_cv")
    assert cv == configured(over, "peer.cpu.jitter_cv") > 0
    r = _service_ratios(monkeypatch, run, over)
    assert len(r) > 2000
    assert r.mean() == pytest.approx(1.0, abs=0.02)
    assert r.std() / r.mean() == pytest.approx(cv, rel=0.15)
    r0 = _service_ratios(monkeypatch, run, [*over, "host.cpu.jitter_cv=0", "peer.cpu.jitter_cv=0"])
    assert np.allclose(r0, 1.0, rtol=1e-12)


# -- vswitch ---------------------------------------------------------------------------------

def test_vswitch_costs_its_price_per_packet_on_the_transmit_context(run, configured):
    """The VM's transmit context runs the vswitch once per packet it forwards: its vswitch
    cycles per packet are ``vswitch.cost.per_packet_cycles``, and removing that cost lowers the
    context's cycles per packet by the same amount (within 10%: jitter, other batch sizes)."""
    over = ["experiment=e35_tx_single_vm"]
    price = configured(over, "hypervisor.vswitch.cost.per_packet_cycles")
    assert price > 0
    model, s, t = run(over)
    terms = t["cost_terms"].set_index(["context", "term"])
    assert terms.loc[("vm0.net", "vswitch"), "cycles_per_packet"] == pytest.approx(price, rel=1e-6)
    model0, _, t0 = run([*over, "hypervisor.vswitch.cost.per_packet_cycles=0"])
    assert term_per_s(t0, "vswitch") == 0

    def per_packet(m):
        ctx = next(c for c in m.contexts if c.name == "vm0.net")
        return ctx.cycles / ctx.packets
    assert per_packet(model) - per_packet(model0) == pytest.approx(price, rel=0.1)


# -- software LRO ----------------------------------------------------------------------------

LRO = ["experiment=v6_vnic_rx_60"]  # vSphere 6.0: software LRO into a vmxnet3 guest at 37 Gbps


def test_software_lro_merges_up_to_its_size_limit(run, configured):
    """Software LRO merges the frames of a poll into aggregates of at most
    ``software_lro_max_bytes``: the guest sees fewer packets than frames, at most
    max_bytes // MSS frames per aggregate and (at 37 Gbps, with long polls) more than half
    that. Without it every frame is a packet and the CPU-bound guest moves less than 2/3 of
    the bytes."""
    max_bytes = configured(LRO, "hypervisor.software_lro_max_bytes")
    assert configured(LRO, "hypervisor.features.software_lro") is True
    model, s, t = run(LRO)
    cap = max_bytes // units.mss_bytes(model.cfg.nic.link.mtu_bytes, model.cfg.tcp.timestamps)
    v = t["vnics"].iloc[0]
    per_aggregate = v["rx_frames_per_s"] / v["rx_packets_per_s"]
    assert cap / 2 < per_aggregate <= cap
    _, s0, t0 = run([*LRO, "hypervisor.features.software_lro=false"])
    v0 = t0["vnics"].iloc[0]
    assert v0["rx_frames_per_s"] == v0["rx_packets_per_s"]
    assert s0["goodput_gbps"] < 2 / 3 * s["goodput_gbps"]


# -- NUMA ------------------------------------------------------------------------------------

NUMA = ["experiment=v6_numa_10g_default",  # the card on node 1, the VM and its contexts on 0
        "host.irq_core=1"]                  # and the RX vector with them (off the card's node)


def test_numa_penalty_is_priced_per_remote_packet_and_byte(run, configured):
    """The RX vector runs on node 0 and touches the card's buffers on node 1: every packet it
    handles pays ``remote_per_packet_cycles`` plus ``remote_per_byte_cycles`` per byte. With
    the penalty zeroed, the vector saves those cycles and the host's cycles per bit fall."""
    pp = configured(NUMA, "host.numa.remote_per_packet_cycles")
    pb = configured(NUMA, "host.numa.remote_per_byte_cycles")
    assert pp > 0 or pb > 0
    model, s, t = run(NUMA)
    irq = next(c for c in model.contexts if c.name == "nic0.rxq0.irq")
    assert irq.core.node != model.cfg.host.card_node(0)
    assert irq.term_cycles.get("numa", 0.0) == pytest.approx(pp * irq.packets + pb * irq.bytes,
                                                              rel=1e-6)
    model0, s0, t0 = run([*NUMA, "host.numa.remote_per_packet_cycles=0",
                          "host.numa.remote_per_byte_cycles=0"])
    assert s0["numa_remote_cycles_pct"] == 0
    assert s0["cycles_per_bit"] < s["cycles_per_bit"]


# -- interrupt coalescing --------------------------------------------------------------------

RR = ["workload=tcp_rr"]  # one transaction in flight: each frame waits out the timer alone


def test_coalescing_timer_adds_its_delay_at_each_receiving_nic(run, configured):
    """In a request/response exchange each frame arrives alone, so its interrupt waits the
    full ``timer_us``, once at the host's NIC and once at the peer's: the mean transaction
    latency falls by 2 x timer_us when the timer is zero (within 10%)."""
    timer = configured(RR, "nic.coalescing.timer_us")
    assert timer > 0
    _, s, _ = run(RR)
    _, s0, _ = run([*RR, "nic.coalescing.timer_us=0"])
    assert s["rr_latency_mean_us"] - s0["rr_latency_mean_us"] == pytest.approx(2 * timer, rel=0.1)


LONG_TIMER = ["experiment=e35_rx_single_vm", "nic.coalescing.timer_us=1000"]


def test_coalescing_frame_threshold_sets_frames_per_interrupt(run, configured):
    """With a timer far longer than it takes ``max_frames`` frames to arrive, every interrupt
    is raised by the frame threshold: at least max_frames frames per interrupt, and fewer than
    twice as many (what arrives while the handler runs joins its pass)."""
    n = configured(LONG_TIMER, "nic.coalescing.max_frames")
    _, s, t = run(LONG_TIMER)
    q = t["rx_queues"].set_index("queue").loc["nic0.rxq0"]
    assert q["frames_per_s"] > 2 * n / 1000e-6  # max_frames arrive well within the timer
    per_interrupt = q["frames_per_s"] / q["interrupts_per_s"]
    assert n <= per_interrupt < 2 * n


# -- pending-TX queue ------------------------------------------------------------------------

# 8 VMs x 5 sessions x 45 MSS packets each (no TSO) in flight against a 512-slot NIC ring: the
# vswitch's pending queue fills.
PENDING = ["experiment=e35_tx_scaling", "vnic.tso=false", "nic.link.line_rate_gbps=1"]


def test_pending_tx_queue_fills_to_its_limit_then_drops(run, configured):
    """Packets the NIC ring cannot take wait in the vswitch's pending queue, up to
    ``pending_tx_limit_packets``; one that finds it full is dropped there. Under this overload
    the queue reaches exactly its limit, and a limit four times larger drops fewer packets."""
    limit = configured(PENDING, "hypervisor.vswitch.pending_tx_limit_packets")

    def pending(m):
        return m.vswitches[0].pending.used
    _, s, t = run(PENDING, sample=pending)
    assert s["peak"] == limit
    d = t["drops"]
    full = d[d["reason"] == "pending_tx_full"]["frames"].sum()
    assert full > 0
    _, s4, t4 = run([*PENDING, f"hypervisor.vswitch.pending_tx_limit_packets={4 * limit}"],
                    sample=pending)
    assert limit < s4["peak"] <= 4 * limit
    d4 = t4["drops"]
    assert d4[d4["reason"] == "pending_tx_full"]["frames"].sum() < full


# -- TSO -------------------------------------------------------------------------------------

TSO = ["experiment=e35_tx_single_vm", "workload.socket_bytes=524288"]


def test_tso_segments_are_cut_into_mss_frames_up_to_the_size_limit(run, configured):
    """With TSO the guest hands the NIC segments of up to ``tso_max_bytes`` and the NIC cuts
    them into MSS frames: at most (tso_max_bytes - headers) // MSS frames per packet, and with
    512KB sockets more than half that. Without TSO every packet is one frame and the host
    spends more cycles per bit."""
    tso_max = configured(TSO, "nic.tso_max_bytes")
    model, s, t = run(TSO)
    cap = tso_max // units.mss_bytes(model.cfg.nic.link.mtu_bytes, model.cfg.tcp.timestamps)
    nic = t["nics"].set_index("nic").loc["nic0"]
    per_packet = nic["tx_frames_per_s"] / nic["tx_packets_per_s"]
    assert cap / 2 < per_packet <= cap
    _, s0, t0 = run([*TSO, "vnic.tso=false"])
    nic0 = t0["nics"].set_index("nic").loc["nic0"]
    assert nic0["tx_frames_per_s"] == nic0["tx_packets_per_s"]
    assert s0["cycles_per_bit"] > 1.5 * s["cycles_per_bit"]


# -- window scaling --------------------------------------------------------------------------

# One session, 1MB sockets, 100 us each way on the wire: a window-bound flow.
FAR = ["workload.sessions_per_vm=1", "workload.socket_bytes=1048576",
       "nic.link.propagation_ns=100000"]


@pytest.mark.parametrize("direction", ["tx", "rx"])
def test_window_scaling_lifts_the_64k_window_bound(run, configured, direction):
    """Without RFC 1323 window scaling a receiver cannot advertise more than 65535 bytes, so a
    single flow moves at most 65535 bytes per round trip: goodput <= 65535 x 8 / RTT (and
    within 30% of it). With scaling (the configured stacks) the 1MB window lifts that bound:
    goodput more than twice as high."""
    over = [*FAR, f"workload.direction={direction}"]
    assert configured(over, "guest.stack.window_scaling") is True
    assert configured(over, "peer.stack.window_scaling") is True
    _, s, _ = run(over)
    _, s0, _ = run([*over, "guest.stack.window_scaling=false"])
    bound = 65535 * 8 / (s0["rtt_us"] * 1e-6) / 1e9
    assert 0.7 * bound < s0["goodput_gbps"] <= 1.02 * bound
    assert s["goodput_gbps"] > 2 * s0["goodput_gbps"]


# -- exit pricing ----------------------------------------------------------------------------

E1000 = ["workload=tcp_rr", "vnic=e1000"]  # e1000 under VT-x: an exit per register access


def test_each_exit_costs_the_modes_price_on_the_vcpu(run, configured):
    """Every guest register access that leaves the guest costs ``vm_exit_cycles`` (hardware
    virtualization) on the vCPU: exits cycles / exits is that price, and pricing exits at zero
    takes exactly those cycles off the vCPU per exit (within 10%)."""
    assert configured(E1000, "guest.virtualization") == "hw"
    price = configured(E1000, "hypervisor.vm_exit_cycles")
    model, s, t = run(E1000)
    exits = s["exits_per_s"]
    assert exits > 0
    # within 2%: an exit counted in the window may have been charged at its edge
    assert term_per_s(t, "exits") / exits == pytest.approx(price, rel=0.02)
    model0, s0, t0 = run([*E1000, "hypervisor.vm_exit_cycles=0"])
    assert term_per_s(t0, "exits") == 0
    vcpu = ["vm0.vcpu0"]
    per_tx = busy_cycles_per_s(model, t, vcpu) / s["transactions_per_s"]
    per_tx0 = busy_cycles_per_s(model0, t0, vcpu) / s0["transactions_per_s"]
    exits_per_tx = exits / s["transactions_per_s"]
    assert per_tx - per_tx0 == pytest.approx(exits_per_tx * price, rel=0.1)
