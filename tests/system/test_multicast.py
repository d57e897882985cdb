"""Multicast end to end: loss accounting per receiver, the split-mode knee and the sender's bursts in
the whole model (moved from tests/unit/test_multicast.py).
"""
import pytest

from sim.builder import build


def _multicast_model(compose, n_vms, *extra):
    cfg = compose(["experiment=mc_default_40k", f"workload.vms={n_vms}", *extra], short=False)
    return build(cfg)


def _conservation(model):
    """Per receiver: sent == received + its own drops + the drops before replication."""
    wl = model.workload
    wl.stop_sending()
    model.env.run(until=model.env.now + 0.2)          # drain: nothing left in flight
    (stream,) = wl.streams
    own = {r.index: r.socket.socket_full + r.vnic_drops() +
           (r.member.split_drops if r.member else 0) for r in wl.receivers}
    receiver_stages = {n for n in model.stats.stages if n.startswith("vm") or "split_queue" in n}
    shared = sum(st.total_dropped_frames() for n, st in model.stats.stages.items()
                 if n not in receiver_stages)
    for r in wl.receivers:
        assert stream.sent == r.socket.received + own[r.index] + shared, r.index
        assert r.socket.lost <= stream.sent - r.socket.received
    return shared, own


def test_loss_is_conserved_per_receiver_in_default_mode(compose):
    # An expensive copy saturates the one replicating context with 4 receivers (NIC ring drops,
    # shared by all); a small socket adds each receiver's own drops.
    model = _multicast_model(compose, 4,
                             "hypervisor.vswitch.multicast.copy.per_packet_cycles=30000",
                             "workload.socket_bytes=8192")
    model.env.run(until=0.05)
    shared, own = _conservation(model)
    assert shared > 0 and any(own.values())


def test_loss_is_conserved_per_receiver_in_split_mode(compose):
    model = _multicast_model(compose, 3, "hypervisor.vswitch.multicast.split_rx_mode=true",
                             "hypervisor.vswitch.multicast.copy.per_packet_cycles=80000",
                             "hypervisor.vswitch.multicast.split_queue_packets=16")
    model.env.run(until=0.05)
    _, own = _conservation(model)
    assert all(r.member.split_drops > 0 for r in model.workload.receivers)


def test_split_mode_moves_the_knee(compose, run_one):
    """The mechanism of MC-default-40k / MC-split-40k, scaled down: with copies that cost ~21K
    cycles, one context saturates near 3 receivers at 40K/s; split across the members'
    contexts, 6 receivers see no loss."""
    over = ["hypervisor.vswitch.multicast.copy.per_packet_cycles=20000", "workload.vms=6",
            "run.warmup_s=0.03", "run.measure_s=0.05"]
    _, default, _ = run_one(compose(["experiment=mc_default_40k", *over], short=False))
    _, split, _ = run_one(compose(["experiment=mc_split_40k", *over], short=False))
    assert default["multicast_loss_ratio"] > 0.1
    assert split["multicast_loss_ratio"] == 0.0
    assert split["multicast_received_pps"] == pytest.approx(6 * 40000, rel=0.02)


def test_sender_bursts_carry_the_packets_due(compose):
    model = _multicast_model(compose, 1, "workload.start_jitter_us=0")
    model.env.run(until=0.01 + 1e-9)                  # 100 bursts of 4 at 40K/s
    (stream,) = model.workload.streams
    assert stream.sent == 400


def test_loss_ratio_counts_a_socket_drop_once(compose, run_one):
    """A datagram the socket drops reached the stack but was not delivered: the host-wide
    loss_ratio (drops / (drops + delivered)) must agree with multicast_loss_ratio."""
    # bursts of 4 datagrams (a 100 us sender timer) into a one-datagram socket
    cfg = compose(["workload=udp_multicast", "workload.socket_bytes=1448", "workload.vms=2",
                   "workload.multicast.burst_interval_us=100",
                   "run.warmup_s=0.02", "run.measure_s=0.05"], short=False)
    _, summary, tables = run_one(cfg)
    assert tables["multicast"]["drops_socket_full"].sum() > 0
    assert summary["multicast_loss_ratio"] > 0.5
    assert summary["loss_ratio"] == pytest.approx(summary["multicast_loss_ratio"], abs=0.01)


def test_split_mode_counts_only_the_copies_its_queue_accepts(compose, run_one):
    """copies_per_s is what reached each member: received + the socket's drops, not offered."""
    cfg = compose(["experiment=mc_split_40k", "workload.vms=2", "workload.socket_bytes=4608",
                   "hypervisor.vswitch.multicast.split_queue_packets=1",
                   "run.warmup_s=0.02", "run.measure_s=0.05"], short=False)
    _, _, tables = run_one(cfg)
    mc = tables["multicast"]
    assert (mc["drops_split_queue_full"] > 0).all() and (mc["drops_vnic_rx_ring_full"] == 0).all()
    window = 0.05
    reached = (mc["received_packets"] + mc["drops_socket_full"]) / window
    assert mc["copies_per_s"].to_numpy() == pytest.approx(reached.to_numpy(), rel=0.01, abs=100)


def test_default_mode_pays_the_numa_penalty_per_copy_into_a_remote_member(compose, compose_raw,
                                                                           run_one):
    """In default mode the replicating context writes every copy into its member's memory: a
    member homed on the other node than that context's core costs it the host's remote
    penalty per copy, ``remote_per_packet_cycles`` (term ``numa_copy``; the payload's stores
    are posted); a member on the context's node costs nothing. The copy then sits on the
    context's node, and a member whose vCPU is on the other node pays the per-byte fetch
    when it reads (``numa`` on the vCPU). Split mode hands references over and pays no copy
    there."""
    over = ["workload.vms=8", "run.warmup_s=0.01", "run.measure_s=0.03"]
    numa = compose_raw(["experiment=mc_default_40k", *over], short=False)["host"]["numa"]
    pp, pb = numa["remote_per_packet_cycles"], numa["remote_per_byte_cycles"]
    assert pp > 0 and pb > 0
    model, _, tables = run_one(compose(["experiment=mc_default_40k", *over], short=False))
    irq = next(c for c in model.contexts if c.name == "nic0.rxq0.irq")
    mc = tables["multicast"].set_index("vm")
    remote = [v for v, vm in enumerate(model.vms) if vm.vnic.memory_home != irq.core.node]
    assert 0 < len(remote) < len(model.vms)       # both kinds of member
    bytes_per_copy = model.cfg.workload.multicast.packet_bytes
    want = sum(mc.loc[v, "copies_per_s"] for v in remote) * pp
    terms = tables["cost_terms"]
    got = terms[(terms["context"] == irq.name) & (terms["term"] == "numa_copy")]
    assert float(got["cycles_per_s"].sum()) == pytest.approx(want, rel=0.02)
    far = [v for v, vm in enumerate(model.vms) if vm.vcpus[0].core.node != irq.core.node]
    assert 0 < len(far) < len(model.vms)          # readers on both nodes
    for v, vm in enumerate(model.vms):  # the reader fetches the copy from the context's node
        (vcpu,) = vm.vcpus
        numa_vcpu = terms[(terms["context"] == vcpu.name) & (terms["term"] == "numa")]
        fetched = float(numa_vcpu["cycles_per_s"].sum())
        if vcpu.core.node == irq.core.node:
            assert fetched == 0
        else:
            assert fetched == pytest.approx(
                mc.loc[v, "received_packets"] / 0.03 * (pp + pb * bytes_per_copy), rel=0.05)
    # the declared path (and the fluid engine, which reads it) charges it to remote members only
    from sim.path import flow_paths
    for fp in flow_paths(model):
        hop = next(h for h in fp.data if h.name == irq.name)
        numa_charges = [c for c in hop.charges if c.term == "numa_copy"]
        if fp.vm in remote:
            (c,) = numa_charges
            assert (c.per_packet_cycles, c.per_byte_cycles) == pytest.approx((pp, 0))
        else:
            assert not numa_charges
    model, _, tables = run_one(compose(["experiment=mc_split_40k", *over], short=False))
    terms = tables["cost_terms"]
    assert terms[(terms["context"] == "nic0.rxq0.irq") & (terms["term"] == "numa_copy")].empty


def test_split_mode_reader_fetches_the_copy_from_its_member_contexts_node(compose, compose_raw,
                                                                        run_one):
    """In split mode the member's own context (the VM's networking context) makes the copy,
    so the copy sits on that context's node (``Replicator._split_deliver``): a receiver whose
    vCPU is on the other node pays ``remote_per_packet_cycles + remote_per_byte_cycles`` x
    datagram bytes per datagram it reads (``numa`` on the vCPU), one on the same node nothing;
    the declared path (and the fluid engine through it) says the same on the reader's hop."""
    over = ["workload.vms=8", "run.warmup_s=0.01", "run.measure_s=0.03"]
    numa = compose_raw(["experiment=mc_split_40k", *over], short=False)["host"]["numa"]
    pp, pb = numa["remote_per_packet_cycles"], numa["remote_per_byte_cycles"]
    model, _, tables = run_one(compose(["experiment=mc_split_40k", *over], short=False))
    mc = tables["multicast"].set_index("vm")
    terms = tables["cost_terms"]
    bytes_per_copy = model.cfg.workload.multicast.packet_bytes
    far = {v for v, vm in enumerate(model.vms)
           if vm.vcpus[0].core.node != vm.vnic.net_context.core.node}
    assert 0 < len(far) < len(model.vms)          # both kinds of receiver
    for v, vm in enumerate(model.vms):
        (vcpu,) = vm.vcpus
        fetched = float(terms[(terms["context"] == vcpu.name)
                              & (terms["term"] == "numa")]["cycles_per_s"].sum())
        if v in far:
            assert fetched == pytest.approx(
                mc.loc[v, "received_packets"] / 0.03 * (pp + pb * bytes_per_copy), rel=0.05)
        else:
            assert fetched == 0
    from sim.path import flow_paths
    for fp in flow_paths(model):
        app_hop = fp.data[-1]
        charges = [c for c in app_hop.charges if c.term == "numa"]
        if fp.vm in far:
            (c,) = charges
            assert (c.per_packet_cycles, c.per_byte_cycles) == pytest.approx((pp, pb))
        else:
            assert not charges
