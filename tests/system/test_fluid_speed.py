"""The fluid engine's evaluation shortcuts (issue 8's solve time) give the same numbers as the
direct forms they replace: the handler-busy pass reuses the first pass's quantities, each
queue's timer is computed once per evaluation, the polling and wake-up rules sum precomputed
entry subsets, the handler's share of each flow's work is read without a flows x contexts
table, and the link waits are counted per (flow, core) cell, not by a loop over the links.
Exact equality: the sums run over the same entries in the same order."""
import numpy as np
import pytest

from sim import fluid
from sim.compose import compose_checked

CASES = [
    ["experiment=e35_tx_single_vm"],                         # five flows, busy ACK handlers
    ["experiment=dev_vmxnet_64_10g_stream"],                 # three flows on one vCPU
    ["experiment=kvm_vhost_net_tx", "workload.sessions_per_vm=1"],   # adaptive coalescing
]


def _net_and_rates(overrides):
    net = fluid.describe_network(compose_checked("configs", overrides))
    rates = np.linspace(0.6e9, 1.0e9, len(net.flows)) / 8     # bytes/s, distinct per flow
    return net, rates


@pytest.mark.parametrize("overrides", CASES, ids=lambda o: o[0].split("=")[1])
def test_busy_pass_reusing_the_quantities_equals_a_full_recompute(overrides):
    net, rates = _net_and_rates(overrides)
    assert net.pre["busy"]
    full = fluid._demands(net, rates)
    direct = fluid._demands(net, rates, fluid._handler_busy(net, full))
    reused = fluid.demands(net, rates)
    for name in ("quantities", "entry", "key_load", "queue_interrupts", "queue_timer_s",
                 "tasks"):
        assert np.array_equal(getattr(reused, name), getattr(direct, name)), name


def test_each_queue_timer_is_computed_once_per_evaluation(monkeypatch):
    # two timer vectors per evaluation (the queues' data bytes, then data and ACK bytes), not
    # three per pass (twice through the interrupts, once for the round trip) and two passes
    net, rates = _net_and_rates(CASES[2])
    assert net.coalescing.mode == "adaptive"
    calls = []
    timers = fluid._timers_us
    monkeypatch.setattr(fluid, "_timers_us", lambda *a, **k: calls.append(1) or timers(*a, **k))
    fluid.demands(net, rates)
    assert len(calls) == 2


@pytest.mark.parametrize("overrides", CASES[:2], ids=lambda o: o[0].split("=")[1])
def test_precomputed_subsets_equal_the_masks(overrides):
    net, rates = _net_and_rates(overrides)
    cpu = net.cpu
    raw = net.e_coef * fluid.demands(net, rates).quantities[net.e_flow, net.e_q]
    for poll, exclude, key in ((net.e_poll & net.e_vector, net.e_halt | net.e_poll, "vector"),
                               (net.e_poll & ~net.e_vector, net.e_halt, "vcpu")):
        a, b = raw.copy(), raw.copy()
        fa = fluid._polling(a, cpu.e_ctx, poll, cpu.ctx_core, cpu.core_clock, exclude)
        fb = fluid._polling(b, cpu.e_ctx, None, cpu.ctx_core, cpu.core_clock,
                            index=net.pre[key])
        assert np.array_equal(fa, fb) and np.array_equal(a, b)
    clock = cpu.core_clock[cpu.ctx_core]
    extra = np.full(len(cpu.ctx_core), 1e7)
    a, b = raw.copy(), raw.copy()
    fluid._halt_wakeups(a, cpu.e_ctx, net.e_halt, clock, cpu.ctx_core, cpu.core_clock, extra,
                        net.e_app)
    fluid._halt_wakeups(b, cpu.e_ctx, net.e_halt, clock, cpu.ctx_core, cpu.core_clock, extra,
                        index=net.pre["halt"])
    assert net.e_halt.any() and np.array_equal(a, b)


@pytest.mark.parametrize("overrides", CASES[:2], ids=lambda o: o[0].split("=")[1])
def test_handler_share_equals_the_flows_by_contexts_table(overrides):
    # the former form: every flow's load on every context, read at its queues' handlers
    net, rates = _net_and_rates(overrides)
    st = fluid._demands(net, rates, raw_only=True)
    kd, ka = fluid._handler_busy(net, st)
    cpu, n, nc = net.cpu, len(net.flows), len(net.cpu.ctx_core)
    entry, own = st.entry_raw, (cpu.e_ctx >= 0) & ~net.e_halt
    flow_load = np.bincount(net.e_flow[own] * nc + cpu.e_ctx[own], entry[own],
                            n * nc).reshape(n, nc)
    irq_e = own & net.e_per_irq
    per_irq = np.bincount(cpu.e_ctx[irq_e], entry[irq_e], nc)
    rest = np.bincount(cpu.e_ctx[own & ~net.e_per_irq], entry[own & ~net.e_per_irq], nc)
    total = per_irq + rest
    h = np.concatenate([net.queue_handler[net.dq], net.queue_handler[net.aq]])
    on = h >= 0
    hh = np.where(on, h, 0)
    share = np.where(on & (total[hh] > 0), flow_load[np.tile(np.arange(n), 2), hh]
                     / np.where(total[hh] > 0, total[hh], 1), 1.0)
    assert on.any() and ((share > 0) & (share < 1)).any()
    # the same shares give the same interrupts kept: recompute k from them
    clock = cpu.core_clock[cpu.ctx_core]
    a = np.concatenate([st.quantities[:, fluid.IR], st.quantities[:, fluid.IA]])
    irq_h = np.bincount(hh[on], a[on], nc)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(irq_h > 0, per_irq / clock / np.where(irq_h > 0, irq_h, 1), 0.0)
    p = np.clip(rest / clock, 0.0, 1.0)
    other = np.where(on, 1 - share, 0.0)
    num = np.bincount(hh[on], (a * (1 - other * p[hh]))[on], nc)
    den = 1 + c * np.bincount(hh[on], (a * other)[on], nc)
    u = np.clip(p + c * num / den, 0.0, 1.0)
    k = np.where(on, np.clip(1 - other * u[hh], 0.0, 1.0), 1.0)
    assert np.array_equal(k[:n], kd) and np.array_equal(k[n:], ka)


# -- the model build (``sim.path``'s memo, ``_compile``'s per-hop rows, the collector) --------

def _direct_paths(model):
    """Every flow's path built without ``flow_paths``'s memo (``_tcp_path`` on its own)."""
    from sim import path
    kind, direction = model.cfg.workload.kind, model.cfg.workload.direction
    assert path._memo is None
    return [path._tcp_path(model, r["flow"], r["vm"], kind, direction)
            for r in model.workload.flows()]


@pytest.mark.parametrize("overrides", [CASES[0], ["experiment=g80_send"],
                                       ["experiment=g80_receive", "workload.sessions_per_vm=20"],
                                       ["experiment=v2v_same_vswitch"]],   # switched locally
                         ids=lambda o: o[0].split("=")[1])
def test_shared_hops_equal_the_paths_built_one_by_one(overrides):
    # the memo shares each hop between the flows that cross it and builds the same paths
    from sim.builder import build
    from sim.path import CONTEXT, flow_paths
    model = build(compose_checked("configs", overrides))
    shared, direct = flow_paths(model), _direct_paths(model)
    assert [(p.data, p.acks) for p in shared] == [(p.data, p.acks) for p in direct]
    hops = [h for p in shared for h in (*p.data, *p.acks) if h.kind == CONTEXT]
    assert len({id(h) for h in hops}) < len(hops)          # some are one object
    assert len({id(h) for p in direct for h in p.data}) == sum(len(p.data) for p in direct)


@pytest.mark.parametrize("overrides", [*CASES, ["experiment=e35_rx_scaling", "workload.vms=4"],
                                       ["experiment=hw_100g_epyc_rx"],  # a vCPU fed by two vectors
                                       ["experiment=g80_receive", "host.nic_ports=1",
                                        "workload.sessions_per_vm=20"]],
                         ids=lambda o: "_".join(x.split("=")[1] for x in o))
def test_per_hop_rows_equal_the_entries_compiled_hop_by_hop(overrides):
    # each flow's hops as objects of their own, so no hop's rows are reused and no section is
    # replayed (g80_receive, one port: 40 ACK sections of 16 kinds, 24 replayed): the same
    # entries
    from dataclasses import replace
    net = fluid.describe_network(compose_checked("configs", overrides))
    alone = fluid.describe_network(compose_checked("configs", overrides))
    for fl in alone.flows:
        fl.path.data = [replace(h) for h in fl.path.data]
        fl.path.acks = [replace(h) for h in fl.path.acks]
    alone.keys, alone.tasks, alone.unknown, alone.pre = [], [], set(), {}
    fluid._compile(alone)
    assert alone.keys == net.keys and alone.tasks == net.tasks and alone.unknown == net.unknown
    for name in ("e_key", "e_flow", "e_q", "e_coef", "e_section", "e_halt", "e_poll",
                 "e_vector", "e_up", "e_background", "e_app", "e_recv_app", "e_per_irq",
                 "queue_handler", "per_g", "dq", "aq", "e_vring"):
        assert np.array_equal(getattr(alone, name), getattr(net, name)), name
    for name in ("rtt_fixed", "no_data_timer", "eq_flat", "burst_scale"):
        assert np.array_equal(alone.pre[name], net.pre[name]), name


@pytest.mark.parametrize("overrides", [["experiment=g80_send", "workload.sessions_per_vm=5"],
                                       ["experiment=e35_rx_scaling", "workload.vms=4"],
                                       ["experiment=e35_tx_single_vm"],
                                       ["experiment=v2v_cross_vswitch"]],
                         ids=lambda o: o[0].split("=")[1])
def test_declared_model_has_the_built_models_contexts_and_paths(overrides):
    # the fluid engine's model (``build(declare_only=True)``; http and tcp_stream): no TCP
    # state, no process, but every context on the same core in the same order, the same
    # declared paths and (tcp_stream) each sender's send buffer
    from dataclasses import replace

    from sim.builder import build
    from sim.path import flow_paths
    cfg = compose_checked("configs", overrides)
    run, read = build(cfg), build(cfg, declare_only=True)
    assert read.workload.declared and not any(vm.senders or vm.receivers for vm in read.vms)
    assert fluid._sndbuf_bytes(read) == fluid._sndbuf_bytes(run)
    assert [(r["flow"], r["vm"]) for r in read.workload.flows()] == \
        [(r["flow"], r["vm"]) for r in run.workload.flows()]
    assert not read.env._queue and run.env._queue        # nothing scheduled to run
    ctxs = lambda m: [(c.name, c.core.index, c.core.node) for c in fluid._contexts_by_name(
        m).values()]                                     # noqa: E731
    assert ctxs(read) == ctxs(run)
    assert [c.name for p in read.peers for c in p.contexts()] == \
        [c.name for p in run.peers for c in p.contexts()]
    same = lambda paths: [(p.flow, p.vm, [(h.kind, h.name, h.detail, h.charges)
                                          for h in (*p.data, *p.acks)]) for p in paths]  # noqa
    assert same(flow_paths(read)) == same(flow_paths(run))
    with pytest.raises(ValueError, match="socket_bytes"):   # the same checks of the sockets
        build(replace(cfg, workload=replace(cfg.workload, socket_bytes=1000)), declare_only=True)


def test_a_solve_leaves_no_cycle_holding_the_network():
    # scipy's brentq keeps the function it is given in a reference cycle; the solve hands it
    # a handle it empties after, so the network (and its entries) go when the solve returns,
    # not at the next collection (the collector off here: solve() then collects nothing)
    import gc
    cfg = compose_checked("configs", CASES[0])
    gc.collect()
    gc.disable()
    try:
        fluid.solve(cfg)
        assert not [o for o in gc.get_objects() if isinstance(o, fluid._Net)]
    finally:
        gc.enable()


def test_the_collector_is_off_in_a_solve_and_back_after(monkeypatch):
    import gc
    seen = []
    inner = fluid._solve
    monkeypatch.setattr(fluid, "_solve", lambda cfg, replication=0: seen.append(gc.isenabled())
                        or inner(cfg, replication))
    cfg = compose_checked("configs", CASES[0])
    assert gc.isenabled()
    fluid.solve(cfg)
    assert seen == [False] and gc.isenabled()
    gc.disable()        # a caller that turned it off keeps it off
    try:
        fluid.solve(cfg)
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- the solve's repeated evaluations, the residual waits' classes, hops alike, the CPU view ----

MERGED = ["experiment=e35_tx_single_vm", "workload.sessions_per_vm=1",
          "workload.socket_bytes=262144", "workload.message_bytes=65536", "host.cpu.clock_hz=4e9",
          "nic.link.line_rate_gbps=10.0"]                # a saturated reader: merged reads
PILED = ["experiment=e35_rx_single_vm", "workload.vms=3", "workload.socket_bytes=65536",
         "workload.message_bytes=8192", "host.cpu.clock_hz=2e9"]   # windows pile up: two solves
SOLVES = [CASES[0], CASES[1], MERGED, PILED, ["experiment=e35_rx_scaling", "workload.vms=4"]]


def _same_answer(a, b):
    """Every summary value and table cell the same (repr: the same bits, NaN equal to NaN)."""
    assert {k: repr(v) for k, v in a.summary.items()} == \
        {k: repr(v) for k, v in b.summary.items()}
    assert list(a.tables) == list(b.tables)
    for name, t in a.tables.items():
        u = b.tables[name]
        assert (t is None and u is None) or t.equals(u), name


@pytest.mark.parametrize("overrides", SOLVES, ids=lambda o: "_".join(
    x.split("=")[1] for x in o[:2]))
def test_remembered_evaluations_equal_evaluating_every_time(overrides, monkeypatch):
    # the filling's last evaluation kept (``_keep_last``) and every evaluation of the demands
    # looked up by its exact rates and merged reads (``_solve_net``'s ``remember``), against
    # evaluating every time: the same answer, and fewer evaluations computed
    from functools import partial
    cfg = compose_checked("configs", overrides)
    computed = []
    demands = fluid.demands
    monkeypatch.setattr(fluid, "demands", lambda net, r: computed.append(1) or demands(net, r))
    kept = fluid.solve(cfg)
    n_kept, computed[:] = len(computed), []
    monkeypatch.setattr(fluid, "_keep_last", lambda loads: loads)
    monkeypatch.setattr(fluid, "_solve_net", partial(fluid._solve_net, remember=False))
    direct = fluid.solve(cfg)
    _same_answer(kept, direct)
    assert kept.summary["fluid_evaluations"] == direct.summary["fluid_evaluations"]
    assert n_kept < len(computed)


def test_the_merged_reads_are_part_of_what_is_remembered(monkeypatch):
    # the same rates with other merged reads give other demands: looked up by the rates alone,
    # the saturated reader's solve would reuse the state from before its reads merged
    net = fluid.describe_network(compose_checked("configs", MERGED))
    fill, st, aux = fluid._solve_net(net)
    assert net.pre["read_bytes"].any()
    merged = fluid.demands(net, fill.rates)
    net.pre.pop("read_bytes")
    assert not np.array_equal(fluid.demands(net, fill.rates).quantities, merged.quantities)


def _residual_waits_direct(net, st, secs, loop, clock):
    """``_residual_waits`` as it was: the task classes found by ``np.unique`` at each call."""
    ctx = (net.e_section >= 0) & (secs > 0)
    if not ctx.any():
        return np.zeros(len(net.flows))
    core = net.cpu.ctx_core[np.maximum(net.cpu.e_ctx, 0)]
    gid = (net.cpu.e_ctx * len(net.flows) + net.e_flow) * 4 + net.e_section * 2 + net.e_app
    ids, g = np.unique(gid[ctx], return_inverse=True)
    m = len(ids)
    tau = np.bincount(g, secs[ctx], m)
    busy = np.bincount(g, st.entry[ctx] / clock[net.e_key[ctx]], m)
    g_core = np.zeros(m, dtype=int)
    g_core[g] = core[ctx]
    g_flow = np.zeros(m, dtype=int)
    g_flow[g] = net.e_flow[ctx]
    g_loop = np.zeros(m, dtype=bool)
    g_loop[g[loop[ctx]]] = True
    res = np.minimum(busy, 1.0) * tau / 2
    nc, n = len(net.cpu.core_clock), len(net.flows)
    at_core = np.bincount(g_core, res, nc)
    cell = g_flow[g_loop] * nc + g_core[g_loop]
    own = np.bincount(cell, res[g_loop], n * nc).reshape(n, nc)
    visits = np.bincount(cell, None, n * nc).reshape(n, nc).astype(float)
    keep = 1 - net.pre["others"][:, None]
    if fluid.SPACED_PIECES:   # the same rule, on these classes (``_spaced_pieces``)
        keep = np.where(fluid._spaced_pieces(net, st, busy, g_core, g_flow), 1.0, keep)
    return (visits * (at_core[None, :] - own * keep)).sum(axis=1)


@pytest.mark.parametrize("overrides", [CASES[0], CASES[1], ["experiment=e35_rx_scaling",
                                                            "workload.vms=4"]],
                         ids=lambda o: "_".join(x.split("=")[1] for x in o))
def test_task_classes_once_per_network_equal_the_classes_found_per_call(overrides,
                                                                        monkeypatch):
    net = fluid.describe_network(compose_checked("configs", overrides))
    fill, st, aux = fluid._solve_net(net)
    args = []
    waits = fluid._residual_waits
    monkeypatch.setattr(fluid, "_residual_waits", lambda *a: args.append(a) or waits(*a))
    fluid._rtt0(net, st)
    _, _, secs, loop, clock = args[0][:5]   # (the two pieces, if any, come sixth)
    assert np.array_equal(waits(net, st, secs, loop, clock),
                          _residual_waits_direct(net, st, secs, loop, clock))
    # some context entries without work: the first flow's classes gone (the others
    # renumbered), a third of the others' entries
    some = secs.copy()
    ctx = np.flatnonzero((net.e_section >= 0) & (secs > 0))
    some[ctx[::3]] = 0.0
    some[ctx[net.e_flow[ctx] == 0]] = 0.0
    a, b = waits(net, st, some, loop, clock), _residual_waits_direct(net, st, some, loop, clock)
    assert np.array_equal(a, b) and not np.array_equal(a, waits(net, st, secs, loop, clock))


@pytest.mark.parametrize("overrides", [["experiment=g80_receive", "host.nic_ports=1",
                                        "workload.sessions_per_vm=20"],
                                       ["experiment=g80_send", "host.nic_ports=1",
                                        "workload.sessions_per_vm=20"],
                                       ["experiment=hw_100g_epyc_rx"],
                                       ["experiment=v6_numa_40g_default",
                                        "host.numa.remote_per_packet_cycles=300"]],
                         ids=lambda o: "_".join(x.split("=")[1] for x in o[:2]))
def test_rows_of_hops_alike_equal_the_rows_built(overrides, monkeypatch):
    # each hop's rows and NUMA entries built (``_hop_like`` never the same) against renamed
    # from a hop alike: the same keys in the same order, entries, tasks and unknown units
    renamed = []
    like = fluid._hop_rows_like
    monkeypatch.setattr(fluid, "_hop_rows_like", lambda *a: renamed.append(1) or like(*a))
    cfg = compose_checked("configs", overrides)
    net = fluid.describe_network(cfg)
    monkeypatch.setattr(fluid, "_hop_like", lambda *a: object())
    built = fluid.describe_network(cfg)
    assert built.keys == net.keys and built.tasks == net.tasks and built.unknown == net.unknown
    for name in ("e_key", "e_flow", "e_q", "e_coef", "e_section", "e_halt", "e_poll",
                 "e_vector", "e_up", "e_background", "e_app", "e_recv_app", "e_per_irq",
                 "e_vring", "queue_handler"):
        assert np.array_equal(getattr(built, name), getattr(net, name)), name
    assert renamed or "hw_100g" in overrides[0] or "v6_numa" in overrides[0]


@pytest.mark.parametrize("overrides", [CASES[0], ["experiment=g80_receive", "host.nic_ports=1",
                                                  "workload.sessions_per_vm=20"],
                                       ["experiment=v2v_cross_vswitch"]],
                         ids=lambda o: o[0].split("=")[1])
def test_cpu_view_and_key_clocks_equal_their_former_forms(overrides):
    # the former forms: every peer context's core keyed, the tasks filtered then listed, each
    # key's clock read from the network's dictionaries
    net = fluid.describe_network(compose_checked("configs", overrides))
    cpu = net.cpu
    cores = {}
    for h, who in zip(net.model.hosts(), ("host", "remote")):
        for core in h.cpu.cores:
            cores[fluid._core_key(core, who)] = core
    for peer in net.model.peers:
        for ctx in peer.contexts():
            cores[fluid._core_key(ctx.core, "peer")] = ctx.core
    assert np.array_equal(cpu.core_clock, [c.params.clock_hz for c in cores.values()])
    assert np.array_equal(cpu.shared, [c.n_contexts > 1 for c in cores.values()])
    tasks = [t for t in net.tasks if t[0] in cpu.ctx_index]
    assert np.array_equal(cpu.t_ctx, [cpu.ctx_index[t[0]] for t in tasks])
    assert np.array_equal(cpu.t_flow, [t[1] for t in tasks])
    assert np.array_equal(cpu.t_q, [t[2] for t in tasks])
    clock = np.array([net.core_clock[net.ctx_core[k[0]]] if k[0] in net.ctx_core else 1.0
                      for k in net.keys])
    assert np.array_equal(net.pre["key_clock"], clock)


def test_radix_ranks_equal_unique_inverse():
    # ``_rank`` (two stable 16-bit sorts) against ``np.unique``'s inverse: on a network's task
    # classes, on random ids with repeats, and past 16 bits (``np.unique`` itself)
    net = fluid.describe_network(compose_checked("configs", ["experiment=e35_rx_scaling",
                                                             "workload.vms=4"]))
    base, g, m, g_core, g_flow = net.pre["classes"]
    gid = (net.cpu.e_ctx[base] * len(net.flows) + net.e_flow[base]) * 4 \
        + net.e_section[base] * 2 + net.e_app[base]
    ids, inverse = np.unique(gid, return_inverse=True)
    assert np.array_equal(g, inverse) and m == len(ids)
    rng = np.random.default_rng(3)
    for top in (50, 1 << 16, 1 << 17):
        high, low = rng.integers(0, top, 5000), rng.integers(0, 40, 5000)
        high[::7] = high[0]                                   # repeated ids
        low[::7] = low[0]
        gid = high * 40 + low
        assert np.array_equal(fluid._rank(gid, high, low), np.unique(gid, return_inverse=True)[1])


def test_piled_candidates_by_identity_equal_list_membership():
    # ``describe_network`` finds the candidates by identity; the former form asked ``fl in
    # piled`` (flows compared field by field): the same indices
    net = fluid.describe_network(compose_checked("configs", PILED))
    piled = fluid._piled_windows(net.flows, False)
    assert len(piled) and np.array_equal(
        net.pre["pile"], [i for i, fl in enumerate(net.flows) if fl in piled])


def _pieces_pile_up_direct(net, st, cand):
    """``_pieces_pile_up`` as it was: the seconds per piece summed by ``np.add.at``."""
    cpu, pre = net.cpu, net.pre
    n, nc = len(net.flows), len(cpu.ctx_core)
    data = (net.e_section == 0) & (cpu.e_ctx >= 0)
    per = st.quantities[net.e_flow, fluid.S]
    with np.errstate(divide="ignore", invalid="ignore"):
        secs = np.where(data & (per > 0), st.entry * pre["burst_scale"]
                        / np.where(per > 0, per, 1) / pre["key_clock"][net.e_key], 0.0)
    at = np.zeros((n, nc))
    np.add.at(at, (net.e_flow[data], cpu.e_ctx[data]), secs[data])
    handler = net.queue_handler[net.dq]
    reader = np.full(n, -1)
    rd = np.flatnonzero(net.e_recv_app)
    reader[net.e_flow[rd]] = cpu.ctx_core[cpu.e_ctx[rd]]
    on_core = cpu.ctx_core[None, :] == reader[:, None]
    hr = []
    for i in cand:
        others = np.arange(n) != i
        same_q = others & (net.dq == net.dq[i])
        hr.append((at[same_q, handler[i]].sum() if handler[i] >= 0 else 0.0,
                   at[others][:, on_core[i]].sum() if reader[i] >= 0 else 0.0))
    return at, hr


@pytest.mark.parametrize("overrides", [PILED, ["experiment=e35_rx_scaling", "workload.vms=16"]],
                         ids=lambda o: "_".join(x.split("=")[1] for x in o[:2]))
def test_pieces_per_flow_and_context_by_bincount_equal_add_at(overrides, monkeypatch):
    # the handler's and reader's seconds per piece (``H_i``, ``R_i``) from the table summed by
    # ``bincount`` equal those from ``np.add.at``'s, bit for bit, so the same windows pile up
    net = fluid.describe_network(compose_checked("configs", overrides))
    fill, st, aux = fluid._solve_net(net)
    cand = net.pre["pile"]
    assert len(cand)
    at, hr = _pieces_pile_up_direct(net, st, cand)
    tables = []
    bincount = np.bincount
    monkeypatch.setattr(np, "bincount", lambda *a, **k: tables.append(bincount(*a, **k))
                        or tables[-1])
    piled = fluid._pieces_pile_up(net, st, cand)
    monkeypatch.undo()
    assert np.array_equal(tables[-1].reshape(at.shape), at)
    assert np.array_equal(piled, [h > r for h, r in hr])


def _link_waits_direct(net, st):
    """``_link_waits`` as it was: a loop over the links, flows x cores and flows x keys arrays."""
    n, nk, nc = len(net.flows), len(net.keys), len(net.cpu.core_clock)
    out = np.zeros(n)
    key_of = {key[1]: k for k, key in enumerate(net.keys) if key[0] == "link"}
    visits = [(i, key_of[name], (name in fl.data_links) + (name in fl.ack_links))
              for i, fl in enumerate(net.flows)
              for name in sorted({*fl.data_links, *fl.ack_links}) if name in key_of]
    on = np.isin(net.e_key, list(key_of.values())) & (st.entry > 0)
    if not visits or not on.any():
        return out
    Q, chunk = st.quantities, net.pre["chunk"]
    idx = np.flatnonzero(on)
    j, q, kk = net.e_flow[idx], net.e_q[idx], net.e_key[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        events = np.where(q == fluid.D, np.where(chunk[j] > 0, Q[j, fluid.G] / np.where(
            chunk[j] > 0, chunk[j], 1), 0.0), Q[j, fluid.T])
        u = np.minimum(st.entry[idx] / np.array([net.link_rate[net.keys[k][1]] for k in kk]),
                       1.0)
        res = np.where(events > 0, u * u / (2 * np.where(events > 0, events, 1)), 0.0)
        tau = np.where(events > 0, u / np.where(events > 0, events, 1), 0.0)
    cpu = net.cpu
    ctx = (net.e_section >= 0) & (cpu.e_ctx >= 0) & ~net.e_background
    per_piece = np.zeros((n, nc))
    np.add.at(per_piece, (net.e_flow[ctx], cpu.ctx_core[cpu.e_ctx[ctx]]),
              st.entry[ctx] / net.pre["key_clock"][net.e_key[ctx]])
    with np.errstate(divide="ignore", invalid="ignore"):
        bursts = np.where(chunk > 0, Q[:, fluid.G] / np.where(chunk > 0, chunk, 1), 0.0)
        per_piece = np.where(bursts[:, None] > 0, per_piece
                             / np.where(bursts > 0, bursts, 1)[:, None], 0.0)
    for k in np.unique(kk):
        at = kk == k
        flows = np.unique(j[at])
        if len(flows) > 1 and (per_piece[flows] >= tau[at].max()).all(axis=0).any():
            res[at] = 0.0
    at_link = np.bincount(kk, res, nk)
    own = np.bincount(j * nk + kk, res, n * nk)
    vf, vk, vn = (np.array(v, dtype=int) for v in zip(*visits))
    np.add.at(out, vf, vn * (at_link[vk] - own[vf * nk + vk]))
    return out


LINK_CASE = ["workload.vms=2", "workload.sessions_per_vm=1", "workload.socket_bytes=65536",
             "workload.message_bytes=8192", "nic.coalescing.max_frames=16",
             "host.cpu.clock_hz=2.0e9"]


@pytest.mark.parametrize("overrides", [["experiment=e35_tx_single_vm", *LINK_CASE],
                                       ["experiment=e35_rx_single_vm", *LINK_CASE],
                                       ["experiment=dev_vmxnet_64_10g_stream"],
                                       ["experiment=team_4x1g_port_id_4vms"],
                                       ["experiment=g80_send", "workload.sessions_per_vm=5"]],
                         ids=lambda o: "_".join(x.split("=")[1] for x in o[:2]))
def test_link_waits_by_cells_equal_the_loop_over_links(overrides):
    # the spaced-bursts rule on (two VMs receiving) and off (two VMs sending), several flows
    # of one VM, teaming's switch links, 40 flows on 8 links: the same waits, exactly
    net = fluid.describe_network(compose_checked("configs", overrides))
    _, st, _ = fluid._solve_piled(net)
    waits = fluid._link_waits(net, st)
    assert np.array_equal(waits, _link_waits_direct(net, st))
    assert (waits > 0).any() != ("e35_rx" in overrides[0])   # spaced: no wait at all
