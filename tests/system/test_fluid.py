"""The fluid (steady-state) engine: progressive filling on toy problems, regimes of real configs,
one test per mechanism (each fails with its fluid term removed), and the cross-check against
short DES runs on random valid steady-state configurations (hypothesis; 200 in a slow test).
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sim import fluid
from sim.compose import compose_checked


def _linear(coeffs):
    """Loads of linear constraints: ``coeffs[name][i]`` units per unit of flow ``i``'s rate."""
    def loads(rates):
        return {c: sum(a * r for a, r in zip(row, rates)) for c, row in coeffs.items()}
    return loads


def _members(coeffs):
    return {c: {i for i, a in enumerate(row) if a} for c, row in coeffs.items()}


def test_two_flows_share_a_link_one_also_cpu_limited():
    # link of 10 shared by A and B; A alone crosses a CPU that allows it 3.
    coeffs = {"link": [1.0, 1.0], "cpu": [1.0, 0.0]}
    fill = fluid.progressive_filling(2, _linear(coeffs), {"link": 10.0, "cpu": 3.0},
                                     _members(coeffs))
    assert fill.rates == pytest.approx([3.0, 7.0], rel=1e-6)
    assert fill.binding == {0: "cpu", 1: "link"}


def test_max_min_shares_of_one_core_with_different_costs():
    # Two flows on one core (1e9 cycles/s), 2 and 3 cycles per byte: max-min gives both the
    # same rate r with 5r = 1e9, whatever their costs.
    coeffs = {"core": [2.0, 3.0]}
    fill = fluid.progressive_filling(2, _linear(coeffs), {"core": 1e9}, _members(coeffs))
    assert fill.rates == pytest.approx([2e8, 2e8], rel=1e-6)


def test_one_flow_one_bottleneck_and_a_window_bound():
    coeffs = {"link": [1.0, 1.0, 1.0], "window2": [0.0, 0.0, 1.0]}
    fill = fluid.progressive_filling(3, _linear(coeffs), {"link": 9.0, "window2": 1.0},
                                     _members(coeffs))
    assert fill.rates == pytest.approx([4.0, 4.0, 1.0], rel=1e-6)
    assert fill.binding[2] == "window2"


def test_nonlinear_monotone_loads():
    # A per-interrupt cost that saturates (rate = min(x, 100)) plus a per-byte cost.
    def loads(r):
        return {"core": 10 * min(r[0], 100.0) + r[0]}
    fill = fluid.progressive_filling(1, loads, {"core": 2000.0}, {"core": {0}})
    assert fill.rates[0] == pytest.approx(1000.0, rel=1e-6)


@pytest.fixture(scope="module")
def solved():
    out = {}
    # TX against a client with LRO (one ACK per aggregate): the VM's vCPU has room and the wire
    # binds, so the closed form below applies (the default RHEL5 client ACKs every second frame
    # and the vCPU binds instead).
    extra = {"e35_tx_single_vm": ["peer.lro_max_bytes=65536", "peer.rx_queues=1"]}
    for name in ("e35_tx_single_vm", "e35_rx_single_vm"):
        out[name] = fluid.solve(compose_checked("configs", [f"experiment={name}",
                                                            *extra.get(name, [])]))
    return out


def test_tx_single_vm_is_link_bound(solved):
    res = solved["e35_tx_single_vm"]
    assert res.summary["regime"] == "link-bound"
    assert set(res.tables["bottleneck"]["constraint"]) == {"link nic0.wire_tx"}
    # the Ethernet ceiling: payload / (payload + 52 header + 38 framing) of 10 Gbps, a 64KB
    # window going as two 32KB segments of 23 frames each
    # (wire bytes per frame from the mean payload rounded up: 1425)
    assert res.summary["goodput_gbps"] == pytest.approx(10 * (32768 / 23) / (1425 + 90),
                                                        rel=1e-6)


def test_rx_single_vm_is_cpu_bound_on_the_vcpu(solved):
    res = solved["e35_rx_single_vm"]
    assert res.summary["regime"] == "cpu-bound"
    bn = res.tables["bottleneck"]
    assert (bn["kind"] == "context").all()
    assert all("vm0.vcpu0" in c for c in bn["constraint"])
    ctx = res.tables["contexts"].set_index("context")["util_pct"]
    assert ctx["vm0.vcpu0"] == pytest.approx(100, rel=1e-4)


def test_every_charge_is_priced_and_outputs_present(solved):
    for res in solved.values():
        assert "fluid_unpriced_units" not in res.summary
        for key in ("goodput_gbps", "host_cpu_util_pct", "cycles_per_bit", "wire_frames_per_s",
                    "host_packets_per_s", "loss_ratio", "rtt_us", "regime"):
            assert key in res.summary
        for table in ("flows", "contexts", "cost_terms", "bottleneck"):
            assert len(res.tables[table]) > 0


def test_small_window_is_window_bound():
    # One 8KB connection: window / RTT0 (a few tens of us) is far below the link and the vCPU.
    cfg = compose_checked("configs", ["experiment=e35_tx_single_vm",
                                      "workload.sessions_per_vm=1", "workload.socket_bytes=8192"])
    res = fluid.solve(cfg)
    assert res.summary["regime"] == "window-bound"
    assert res.tables["bottleneck"]["constraint"].tolist() == ["window flow 0"]
    rate_Bps = res.summary["goodput_gbps"] * 1e9 / 8
    assert rate_Bps * res.summary["rtt_us"] * 1e-6 == pytest.approx(8192, rel=0.02)


def test_compare_against_a_short_des_run():
    """The one DES run of this file (0.1 s): the two engines within 10% on e35_rx_single_vm."""
    cfg = compose_checked("configs", ["experiment=e35_rx_single_vm"])
    df = fluid.compare(cfg, measure_s=0.1).set_index("metric")
    assert list(df.columns) == ["des", "fluid", "rel_diff"]
    assert abs(df.loc["goodput_gbps", "rel_diff"]) < 0.10
    assert abs(df.loc["host_cpu_util_pct", "rel_diff"]) < 0.10


# -- mechanisms: each fails when its fluid term is removed --------------------------------------

def _solve(*overrides):
    return fluid.solve(compose_checked("configs", list(overrides)))


def _terms(res, context, term):
    ct = res.tables["cost_terms"]
    return float(ct[(ct.context == context) & (ct.term == term)]["cycles_per_s"].sum())


def test_halt_wakeup_priced_per_interrupt_that_finds_the_vcpu_idle():
    # Two multicast receivers at 30K datagrams/s: each vCPU is mostly idle, so every virtual
    # interrupt wakes it (the DES: 19860 wake-ups for 19860 virtual interrupts); doubling the
    # price doubles the cycles. A CPU-bound vCPU (e35_rx_single_vm) never halts.
    one = _solve("experiment=mc_default_30k", "workload.vms=2")
    two = _solve("experiment=mc_default_30k", "workload.vms=2",
                 "hypervisor.vcpu_halt_wakeup_cycles=40000")
    c1 = _terms(one, "vm0.vcpu0", "halt_wakeup")
    assert c1 > 0
    assert _terms(two, "vm0.vcpu0", "halt_wakeup") == pytest.approx(2 * c1, rel=1e-6)
    # one wake-up per virtual interrupt, and the guest driver's fixed part is also paid per
    # virtual interrupt: the two terms are in the ratio of their prices
    cfg = compose_checked("configs", ["experiment=mc_default_30k", "workload.vms=2"])
    per_irq = cfg.vnic.guest_rx.fixed_cycles
    drv = _terms(one, "vm0.vcpu0", "guest_driver_rx") - 30000 * cfg.vnic.guest_rx.per_packet_cycles
    assert c1 / cfg.hypervisor.vcpu_halt_wakeup_cycles == pytest.approx(drv / per_irq, rel=1e-6)
    busy = _solve("experiment=e35_rx_single_vm")
    assert _terms(busy, "vm0.vcpu0", "halt_wakeup") == pytest.approx(0, abs=1.0)  # cycles/s


def test_a_busy_receive_vector_polls_instead_of_losing():
    # mc_default_30k at 28 receivers: the vector context is full, yet nothing is lost (its
    # passes grow longer and fewer: per-pass cycles fill what the copies leave; the DES: 100%,
    # 19860 passes/s for 30000 datagrams/s, no loss). Per-pass cycles counted at one pass per
    # datagram would lose 16%.
    res = _solve("experiment=mc_default_30k")
    ctx = res.tables["contexts"].set_index("context")["util_pct"]
    assert ctx["nic0.rxq0.irq"] == pytest.approx(100, rel=1e-3)
    assert res.summary["multicast_loss_ratio"] == 0
    # the driver's per-interrupt part vanishes when it polls (only its per-packet part is left)
    cfg = compose_checked("configs", ["experiment=mc_default_30k"])
    assert _terms(res, "nic0.rxq0.irq", "driver_rx") == pytest.approx(
        30000 * cfg.hypervisor.driver_rx.per_packet_cycles, rel=1e-6)


def test_world_switches_on_shared_cores():
    # Two receivers' vCPUs share core 0 (mc_default_30k, 28 VMs on 16 cores): every task of
    # one follows a task of the other (the DES: 39720 switches/s into each of vm0 and vm15
    # with 39720 tasks/s each): cycles = price x tasks; none on a core of its own.
    res = _solve("experiment=mc_default_30k")
    sw = _terms(res, "vm0.vcpu0", "world_switch")
    assert sw > 0
    price = compose_checked("configs", ["experiment=mc_default_30k"]).host.cpu.context_switch_cycles
    doubled = _solve("experiment=mc_default_30k", f"host.cpu.context_switch_cycles={2 * price}")
    assert _terms(doubled, "vm0.vcpu0", "world_switch") == pytest.approx(2 * sw, rel=1e-6)
    assert _terms(res, "nic0.rxq0.irq", "world_switch") == 0


def test_multicast_largest_loss_free_receiver_count():
    # The DES (0.05 s windows after 0.05 s, the backend's copy at the processor's rate): 28
    # receivers lose nothing at 30K/s, 29 lose 21% (the replicating handler saturates; half of
    # the receivers on the other node than the vector: numa_copy on their copies); the fluid
    # engine puts the knee at the same count.
    ok = _solve("experiment=mc_default_30k", "workload.vms=28").summary
    lossy = _solve("experiment=mc_default_30k", "workload.vms=29").summary
    assert ok["multicast_lossy_receivers"] == 0 and ok["regime"] == "offered-load"
    assert lossy["multicast_lossy_receivers"] == 29 and lossy["regime"] == "loss"
    assert 0 < lossy["multicast_loss_ratio"] < 0.1


def test_multicast_table_has_the_des_columns():
    """The multicast table and summary keys of the DES's recorder, without running it."""
    from sim.builder import build
    cfg = compose_checked("configs", ["experiment=mc_split_30k", "workload.vms=3"])
    wl = build(cfg).workload
    zeros = {k: 0.0 for k in wl.counters()}
    des_cols = list(wl.tables(zeros, 1.0)["multicast"][0])
    des_keys = set(wl.summary(zeros, 1.0))
    res = fluid.solve(cfg)
    assert list(res.tables["multicast"].columns) == des_cols
    assert des_keys <= set(res.summary) and "loss_ratio" in res.summary
    assert len(res.tables["multicast"]) == 3


def test_paced_senders_are_bound_by_their_rate():
    res = _solve("experiment=vmdq_low_load_off")
    cfg = compose_checked("configs", ["experiment=vmdq_low_load_off"])
    w = cfg.workload
    assert res.summary["goodput_gbps"] == pytest.approx(
        w.vms * w.sessions_per_vm * w.rate_limit_mbps / 1000, rel=1e-4)
    assert res.summary["regime"] == "offered-load"


# -- the cross-check against the DES on random valid configurations ------------------------------

FLUID_DES_WINDOW_S = 0.03   # DES window of the fast check (after 0.03 s of warm-up)
# Goodput is held to 5% (the goal), host CPU to 15% (the goal is 5%), for one known gap:
# a single 1GbE sender at 4 GHz (64KB, max_frames 16) is at -12% CPU because the DES wakes the
# nearly idle vCPU at each of its ACK interrupts (DES 138M cycles/s of halt wake-ups, fluid 69M):
# the window update comes a whole read after the data ACK train, when the vCPU has halted again,
# where the fluid engine lets it ride the train's pass (docs/fluid.md, "Sixth slice" and
# "Seventh slice"). The rule for it (``WINDOW_UPDATE_RIDES_OTHERS``) is built and off: on, it
# moves other draws to +13..+19% until the receiver's reads per receiving pass follow the DES.
# With that draw aside the tenth session's branches had all 30 draws within 1.9% goodput and
# 6.8% CPU (vintr: a writer-ahead sender's bursts are its window's pieces, ``_piece_burst``);
# after the merge hypothesis reaches the 4-GHz draw again, so CPU stays at 15% until it is
# modelled.
# Eleventh session (docs/fluid.md "Eighth slice"): with a saturated reader's reads merged
# (``fluid._merged_reads``) and READER_SENDS_TRAIN, the 30 draws (as they come when none fails)
# are within 4.6% goodput and 6.3% CPU with the rule above off or on; on, it takes the 4-GHz
# 1GbE sender within 1% (off: -12%, reached only by shrinking after another failure) and the
# slow test's 200 draws from 172 to 189 within 8% CPU, but moves the experiments of
# validation/fluid_vs_des.csv (host CPU within 5% on 48 -> 41), so it stays off and CPU at 15%.
# The DES is multi-stable on some draws (two 10GbE receivers at 2 GHz with 64KB sockets and 8KB
# messages settle at 2.66, 3.06 or ~4.15 Gbps by seed, with no loss). A draw is checked where
# two DES seeds agree within SAME_POINT_TOL (steady draws differ by 0-1%); where they do not,
# both seeds run again at ``ROBUST_JITTER_CV``, where the DES leaves its fragile points (that
# draw: 2.60-2.64 on seeds 1-3; fluid 2.67 with piled windows, ``fluid._pieces_pile_up``), and
# the draw is checked there if they agree, skipped otherwise. Not the reference everywhere: at
# 0.2 two seeds agree within 3.3% on this strategy's 30 draws (1.0% at the default 0.05), and
# goodput moves by up to -5% (jitter's mean effect).
# The robust point is absorbing but not at once: since PCIe lets a DMA dated in the past use the
# link's idle time (pcie branch), the whole-window point of two 10GbE receivers at 2 GHz (64KB,
# 8KB) is reached at jitter_cv 0.2 after 0.01-0.3 s by seed (seeds 8451, 1, 2, 3, max_frames
# 16 and 64: 2.70-2.78 Gbps over 0.3-0.4 s, 3.3-4.4 over 0.03-0.06 s on five of the eight),
# so the robust runs warm up for ROBUST_WARMUP_S (with 0.03 s, two seeds of that draw agreed
# at 4.20/4.16 on the way, against the fluid engine's 2.68). With it the 30 draws (as they
# come when none fails) are within 4.1% goodput and 6.9% host CPU.
SAME_POINT_TOL = fluid.SAME_POINT_TOL        # as ``fluid.compare_all`` judges the DES's points
ROBUST_JITTER_CV = fluid.ROBUST_JITTER_CV
ROBUST_WARMUP_S = fluid.ROBUST_WARMUP_S
GOODPUT_TOL, CPU_TOL = 0.05, 0.15


@st.composite
def _steady_configs(draw) -> list[str]:
    """Overrides of a small valid TCP_STREAM config away from loss: one or two VMs, bulk
    windows, large rings, the e35 host and clients."""
    base = draw(st.sampled_from(["e35_tx_single_vm", "e35_rx_single_vm"]))
    return [f"experiment={base}",
            f"workload.vms={draw(st.integers(1, 2))}",
            f"workload.sessions_per_vm={draw(st.integers(1, 4))}",
            f"workload.socket_bytes={draw(st.sampled_from([65536, 131072, 262144]))}",
            f"workload.message_bytes={draw(st.sampled_from([8192, 16384, 65536]))}",
            f"nic.link.line_rate_gbps={draw(st.sampled_from([1.0, 2.5, 10.0]))}",
            f"nic.coalescing.max_frames={draw(st.sampled_from([16, 64]))}",
            f"host.cpu.clock_hz={draw(st.sampled_from([2.0e9, 2.93e9, 4.0e9]))}",
            f"run.seed={draw(st.integers(0, 2**16))}"]


def _des_run(overrides: list[str], warmup_s: float = 0.03):
    from sim.runner import run_experiment
    cfg = compose_checked("configs", [*overrides, "run.replications=1", f"run.warmup_s={warmup_s}",
                                      f"run.measure_s={FLUID_DES_WINDOW_S}"])
    return cfg, run_experiment(cfg).summary


def _agree(overrides: list[str]) -> None:
    cfg, des = _des_run(overrides)
    assume(des["loss_ratio"] <= fluid.STEADY_LOSS_RATIO)      # steady state only
    # one operating point: the DES at another seed settles where this one did
    other_seed = [*(o for o in overrides if not o.startswith("run.seed=")),
                  f"run.seed={int(cfg.run.seed) + 1}"]
    _, again = _des_run(other_seed)
    assume(again["loss_ratio"] <= fluid.STEADY_LOSS_RATIO)
    if again["goodput_gbps"] != pytest.approx(des["goodput_gbps"], rel=SAME_POINT_TOL):
        # two operating points: with more service jitter the DES settles on the robust one
        jitter = f"host.cpu.jitter_cv={ROBUST_JITTER_CV}"
        des, again = (_des_run([*ov, jitter], ROBUST_WARMUP_S)[1] for ov in (overrides, other_seed))
        assume(max(des["loss_ratio"], again["loss_ratio"]) <= fluid.STEADY_LOSS_RATIO)
        assume(again["goodput_gbps"] == pytest.approx(des["goodput_gbps"], rel=SAME_POINT_TOL))
    fl = fluid.solve(cfg).summary
    for key, tol in (("goodput_gbps", GOODPUT_TOL), ("host_cpu_util_pct", CPU_TOL)):
        want = (des[key] + again[key]) / 2
        assert fl[key] == pytest.approx(want, rel=tol), (key, overrides)


_CHECK = settings(max_examples=30, derandomize=True, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_CHECK
@given(_steady_configs())
def test_fluid_agrees_with_the_des_on_random_steady_configs(overrides):
    _agree(overrides)


@pytest.mark.slow
@settings(_CHECK, max_examples=200)
@given(_steady_configs())
def test_fluid_agrees_with_the_des_on_200_random_steady_configs(overrides):
    _agree(overrides)


# -- the window bound's pieces and waits, NUMA (third slice) ------------------------------------

def test_a_window_goes_round_in_the_pieces_its_reads_reopen():
    # A window within one TSO segment is one piece; a larger one never one (a piece is read
    # while the other flies) and as many segment-sized pieces as it holds whole.
    seg_max = 65160
    assert fluid._reads_per_window(8192, seg_max) == 1
    assert fluid._reads_per_window(65536, seg_max) == 2
    assert fluid._reads_per_window(131072, seg_max) == 2
    assert fluid._reads_per_window(196608, seg_max) == 3


def test_a_sender_that_refills_its_buffer_sends_its_window_as_one_burst():
    # Windows 2003 buffers what SO_SNDBUF says (sndbuf_scale 1): its writer refills only what
    # the ACKs free, so the 64KB window leaves as one TSO segment behind the send() copies and
    # the three flows are window-bound (the DES: 5.9 Gbps with the vCPU at 77%). With Linux's
    # doubled buffer the writer runs ahead: pieces of half a window, the copies off the loop.
    cfg = compose_checked("configs", ["experiment=dev_vmxnet_64_10g_stream"])
    net = fluid.describe_network(cfg)
    fl = net.flows[0]
    assert fl.refill and fl.chunk == pytest.approx(45 * 1448)   # one TSO segment
    res = fluid.solve(cfg)
    assert res.summary["regime"] == "window-bound"
    rate = res.summary["goodput_gbps"] * 1e9 / 8 / 3
    assert rate * res.summary["rtt_us"] * 1e-6 == pytest.approx(fl.window, rel=0.02)
    ahead = _solve("experiment=dev_vmxnet_64_10g_stream", "guest.stack.sndbuf_scale=2.0")
    assert ahead.summary["goodput_gbps"] > 1.2 * res.summary["goodput_gbps"]


def test_window_bound_pieces_and_waits_agree_with_the_des():
    """Two DES runs (0.03 s): a refilling Windows sender (three flows on one vCPU: the waits
    behind each other's tasks) and a 128KB Linux window in two reads of 64KB (the fluid engine
    used to put it at +36%: three segments of 43KB went round independently). Host CPU within
    10%, except the Windows sender's: the fluid engine is 13-17% above the DES there (a known
    gap, docs/status.md: DES 24.9-26.6% over seeds 0-2 and windows of 0.03-0.1 s, fluid
    29.1%), held within 20% so that it cannot grow unnoticed."""
    from sim.runner import run_experiment
    for ov, cpu_rel in ((["experiment=dev_vmxnet_64_10g_stream"], 0.20),
                        (["experiment=e35_tx_single_vm", "workload.sessions_per_vm=1",
                          "workload.socket_bytes=131072", "workload.message_bytes=8192",
                          "nic.coalescing.max_frames=64", "host.cpu.clock_hz=2930000000.0"],
                         0.10)):
        cfg = compose_checked("configs", [*ov, "run.replications=1", "run.warmup_s=0.03",
                                          "run.measure_s=0.03"])
        des = run_experiment(cfg).summary
        fl = fluid.solve(cfg).summary
        assert fl["regime"] == "window-bound"
        assert fl["goodput_gbps"] == pytest.approx(des["goodput_gbps"], rel=0.05), ov
        assert fl["host_cpu_util_pct"] == pytest.approx(des["host_cpu_util_pct"],
                                                        rel=cpu_rel), ov


def test_residual_waits_behind_other_flows_tasks(monkeypatch):
    # Three flows share one vCPU: each window's burst finds the others' tasks in service there
    # (a wait of U tau / 2 per class per visit), which lengthens the round trip.
    cfg = compose_checked("configs", ["experiment=dev_vmxnet_64_10g_stream"])
    net = fluid.describe_network(cfg)
    st = fluid.demands(net, [2.0e9 / 8] * 3)
    with_waits = fluid._rtt0(net, st)
    monkeypatch.setattr(fluid, "RESIDUAL_WAITS", False)
    without = fluid._rtt0(net, st)
    assert (with_waits - without > 5e-6).all()
    assert (with_waits - without < 0.2 * without).all()


def test_numa_penalty_priced_with_the_des_function():
    # v6_numa_40g_default: the RX vector runs on node 1 (the card's), the VM and its vCPU on
    # node 0. The guest's recv() copies read the data from the vector's node (``rx_data_home``)
    # and the vector writes each packet into the VM's memory (``numa_copy``), both priced with
    # the DES's ``remote_penalty_cycles`` and parameters (the DES: vCPU numa 5.2e8, numa_copy
    # 2.4e7 cycles/s); nothing of it with NUMA I/O (everything on the card's node).
    cfg = compose_checked("configs", ["experiment=v6_numa_40g_default"])
    net = fluid.describe_network(cfg)
    res = fluid.solve(cfg)
    vcpu, irq = net.ctx_obj["vm0.vcpu0"], net.ctx_obj["nic0.rxq0.irq"]
    per_b = vcpu.remote_penalty_cycles(0, 1, irq.core.node)
    per_copy = irq.remote_penalty_cycles(1, 0, net.model.vnics[0].memory_home)
    assert per_b > 0 and per_copy > 0
    st = fluid.demands(net, [r * 1e9 / 8 for r in res.tables["flows"]["goodput_gbps"]])
    q = st.quantities
    assert _terms(res, "vm0.vcpu0", "numa") == pytest.approx(per_b * q[:, fluid.G].sum(),
                                                             rel=1e-6)
    assert _terms(res, "nic0.rxq0.irq", "numa_copy") == pytest.approx(
        per_copy * q[:, fluid.SW_PK].sum(), rel=1e-6)
    local = _solve("experiment=v6_numa_40g_numa_io")
    ct = local.tables["cost_terms"]
    assert ct[ct.term.isin(["numa", "numa_copy"])]["cycles_per_s"].sum() == 0
    assert res.summary["cycles_per_bit"] > 1.05 * local.summary["cycles_per_bit"]


def test_a_receivers_own_reads_do_not_keep_its_vcpu_awake(monkeypatch):
    # v6_vnic_rx_60: four vCPUs at 79%, one flow each, recv() ~44% of each. A flow's reads
    # run right after its own pass over the ring, so its next virtual interrupt finds the vCPU
    # halted: the DES (0.1 s) pays 18060 wake-ups/s for 18060 virtual interrupts/s on every
    # vCPU (``sim.fluid._rx_others_busy``). Priced as background work (``HALT_APP_RECV``, the
    # rule off) the fluid engine paid 58% of them.
    from dataclasses import replace
    from sim.runner import run_experiment
    cfg = compose_checked("configs", ["experiment=v6_vnic_rx_60"])
    on = fluid.solve(cfg)
    clock = cfg.host.cpu.clock_hz
    u_recv = _terms(on, "vm0.vcpu0", "app_recv") / clock
    assert 0.2 < u_recv < 0.8
    des = run_experiment(replace(cfg, run=replace(cfg.run, engine="des", warmup_s=0.03,
                                                  measure_s=0.03, replications=1)))
    des_wake = _terms(des, "vm0.vcpu0", "halt_wakeup")
    assert _terms(on, "vm0.vcpu0", "halt_wakeup") == pytest.approx(des_wake, rel=0.05)
    monkeypatch.setattr(fluid, "RX_WAKE_OTHERS", False)
    off = fluid.solve(cfg)
    ratio = _terms(off, "vm0.vcpu0", "halt_wakeup") / _terms(on, "vm0.vcpu0", "halt_wakeup")
    assert ratio == pytest.approx(1 - u_recv, rel=0.05)


def test_a_receivers_interrupt_finds_the_other_flows_work_running():
    # vxlan_rx: one vCPU (~73%) takes four flows' pieces; a virtual interrupt finds the other
    # flows' passes and reads at a random phase (DES, 0.1 s: 52% of 34730 virtual
    # interrupts/s wake it). The share paid is what the other flows' work leaves.
    cfg = compose_checked("configs", ["experiment=vxlan_rx"])
    net = fluid.describe_network(cfg)
    fill, st, _ = fluid._solve_piled(net)
    ctx = net.cpu.ctx_index["vm0.vcpu0"]
    halt = net.e_halt & (net.cpu.e_ctx == ctx)
    share = st.entry[halt].sum() / st.entry_raw[halt].sum()
    assert share == pytest.approx(0.52, abs=0.1)
    # each flow's wake-ups: 1 - the other three flows' share of the vCPU's receive work (their
    # passes, reads and the wake-ups they pay)
    others = fluid._rx_others_busy(net, st.entry, wakeups=True)[halt]
    assert (others > 0.3).all()
    assert share == pytest.approx(1 - others.mean(), abs=0.02)


def test_a_paced_sender_sends_a_segment_per_message():
    # vmdq_low_load_off: 17 senders paced at 41.2 Mbps write one 16KB message when it is due;
    # each leaves as its own segment (12 frames), not as half a 64KB window (the DES: 103K
    # frames/s on the wire for 0.71 Gbps, host CPU 4.7%; with half windows the fluid engine
    # had 95K and 4.0%).
    cfg = compose_checked("configs", ["experiment=vmdq_low_load_off"])
    net = fluid.describe_network(cfg)
    assert net.flows[0].seg == cfg.workload.message_bytes
    res = fluid.solve(cfg)
    frames_per_byte = (-(-cfg.workload.message_bytes // net.flows[0].mss)
                       / cfg.workload.message_bytes)
    assert res.summary["wire_frames_per_s"] > res.summary["goodput_gbps"] * 1e9 / 8 \
        * frames_per_byte


def test_numa_copy_into_a_partner_vm_is_priced_as_the_des_charges_it():
    """VM to VM across two vswitches with the QPI penalties: the receive handler of the
    partner's port writes into the partner's memory on the other node and pays ``numa_copy``
    per packet written; the path declares it on that handler's hop for the destination vNIC
    (``sim.path._into``), so the fluid engine prices it for a partner as for the VM under test
    (it used to price the VM under test's copies only)."""
    from sim.runner import run_experiment
    over = ["experiment=v2v_cross_vswitch", "host.numa.remote_per_packet_cycles=300",
            "host.numa.remote_per_byte_cycles=0.3", "run.replications=1", "run.warmup_s=0.02",
            "run.measure_s=0.03"]
    cfg = compose_checked("configs", over)
    fl = _terms(fluid.solve(cfg), "nic1.rxq0.irq", "numa_copy")
    assert fl > 0
    des = run_experiment(cfg).tables["cost_terms"]
    want = float(des[(des.context == "nic1.rxq0.irq")
                     & (des.term == "numa_copy")]["cycles_per_s"].sum())
    assert fl == pytest.approx(want, rel=0.10)


@pytest.mark.parametrize("experiment", ["mc_default_30k", "mc_split_30k"])
def test_multicast_numa_of_the_readers_and_copy_contexts_as_the_des(experiment):
    """A multicast receiver's read pays ``numa`` per datagram and byte fetched from where its
    copy sits (default mode: the vector's node, ``Replicator.deliver``), and split mode's copy
    context pays it on the VM's memory; the path declares both (``sim.path._numa``), so the
    fluid engine prices what the DES charges."""
    from sim.runner import run_experiment
    cfg = compose_checked("configs", [f"experiment={experiment}", "workload.vms=8",
                                      "run.replications=1", "run.warmup_s=0.02",
                                      "run.measure_s=0.03"])
    fl = fluid.solve(cfg).tables["cost_terms"]
    des = run_experiment(cfg).tables["cost_terms"]
    got = float(fl[fl.term == "numa"]["cycles_per_s"].sum())
    want = float(des[des.term == "numa"]["cycles_per_s"].sum())
    assert want > 0
    assert got == pytest.approx(want, rel=0.05)


def test_a_busy_vcpu_polls_its_receive_ring():
    # dev_e1000_64_10g_stream: the sending vCPU is at 100%, so its RX poller finds ACKs in the
    # ring at the end of every pass and never waits for a virtual interrupt (the DES: 1320
    # virtual interrupts/s for 171K ACKs/s, 3.0 Gbps). Its per-interrupt work (the driver's
    # fixed part, the interrupt's exits) fills only the idle time it leaves: none is paid, and
    # the goodput is the DES's (3.01 Gbps at 0.1 s); paid per interrupt it was 2.0 Gbps.
    cfg = compose_checked("configs", ["experiment=dev_e1000_64_10g_stream"])
    res = fluid.solve(cfg)
    assert res.tables["contexts"].set_index("context")["util_pct"]["vm0.vcpu0"] == \
        pytest.approx(100, rel=1e-3)
    drv = _terms(res, "vm0.vcpu0", "guest_driver_rx")
    ack = _terms(res, "vm0.vcpu0", "stack_ack_rx")
    assert drv / ack == pytest.approx(cfg.vnic.guest_rx.per_packet_cycles
                                      / cfg.guest.stack.rx_ack.per_packet_cycles, rel=1e-6)
    assert res.summary["goodput_gbps"] == pytest.approx(3.01, rel=0.05)
    # a vCPU with idle time still pays every virtual interrupt (1GbE, link-bound)
    idle = fluid.solve(compose_checked("configs", ["experiment=dev_e1000_64_1g_stream"]))
    drv = _terms(idle, "vm0.vcpu0", "guest_driver_rx")
    ack = _terms(idle, "vm0.vcpu0", "stack_ack_rx")
    assert drv / ack > 1.05 * cfg.vnic.guest_rx.per_packet_cycles \
        / cfg.guest.stack.rx_ack.per_packet_cycles


def test_a_refilling_senders_write_leaves_as_one_burst():
    # dev_e1000_64_10g_stream: Windows' send buffer holds just the 64KB window, so each 16KB
    # write waits for room and goes out at once, 12 segments back to back (no TSO): the
    # peer's queues take one interrupt per write (the DES: 24.6K interrupts/s for 22.9K
    # writes/s), not one per 20-us timer (100K/s), and their window updates follow.
    cfg = compose_checked("configs", ["experiment=dev_e1000_64_10g_stream"])
    net = fluid.describe_network(cfg)
    assert all(fl.refill for fl in net.flows)
    assert [1 / fl.per_g[fluid.B] for fl in net.flows] == [cfg.workload.message_bytes] * 3
    fill, st, _ = fluid._solve_net(net)
    # (its passes: a queue's interrupts are fewer where its handler is busy with another
    # flow's write, ``fluid._handler_busy``)
    assert all(q.startswith("peer0.") for q in np.array(net.queues)[net.dq])
    assert st.quantities[:, fluid.IR].sum() == pytest.approx(
        sum(fill.rates) / cfg.workload.message_bytes, rel=1e-6)
    # a sender that writes ahead (RHEL5, TSO) bursts a segment at a time
    ahead = fluid.describe_network(compose_checked("configs", ["experiment=e35_tx_single_vm"]))
    assert [fl.per_g[fluid.B] for fl in ahead.flows] == [1 / fl.seg for fl in ahead.flows]


def test_a_busy_nic_queue_handler_polls_and_its_vcpu_follows_its_passes():
    # v6_vnic_rx_55: four 40GbE sessions into one vmxnet3 VM fill the NIC queue's handler; it
    # polls its ring (the DES: 30 interrupts/s for 1.74M frames/s) so its per-interrupt and
    # per-pass work vanishes, and the vCPU's virtual interrupts, one per handler pass, with
    # it. The goodput is the DES's (20.11 Gbps at 0.1 s, fluid 20.27, since software LRO's
    # per-frame work and the NAPI poll budget are priced, branch v6shim; 22.95 and 23.13
    # before, since the backend's copy is priced at the processor's copy rate; 20.1 before
    # that, when priced per interrupt the fluid engine gave 18.6).
    cfg = compose_checked("configs", ["experiment=v6_vnic_rx_55"])
    res = fluid.solve(cfg)
    assert res.tables["contexts"].set_index("context")["util_pct"]["nic0.rxq0.irq"] == \
        pytest.approx(100, rel=1e-3)
    drv = _terms(res, "nic0.rxq0.irq", "driver_rx")
    shim = _terms(res, "nic0.rxq0.irq", "compat_rx")
    assert drv / shim == pytest.approx(cfg.hypervisor.driver_rx.per_packet_cycles
                                       / cfg.hypervisor.compat_rx.per_packet_cycles, rel=1e-6)
    assert _terms(res, "vm0.vcpu0", "halt_wakeup") < 0.2e9   # was 0.74e9 (DES 0.12e9)
    assert res.summary["goodput_gbps"] == pytest.approx(20.11, rel=0.05)
