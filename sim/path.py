"""The declared data path: the hops a flow crosses and what each charges, from the built model.

A flow's path is a list of ``Hop``: the contexts it runs on (with the cost terms each charges
per invocation, per packet and per byte, ``models.costs.Charge``, declared by the component
that prices the pass from the same parameters), the rings and queues it waits in (with their
capacity), the PCIe directions and links it crosses (with their rate). ``flow_paths(model)``
lists the data direction and the ACK return path of every flow; ``python -m sim path`` prints
them as an ASCII sketch. The steady-state engine reads the same description.
The other end is the native peer behind the VM's port or, with a VM-to-VM topology
(``models.topology``), the partner VM: on the same vswitch the sender's backend context
switches the burst into the partner's vNIC (no NIC, no wire). A direct device (passthrough,
SR-IOV, the bare-metal host: ``models.vnic.direct``) crosses the guest's qdisc and the NIC's
rings, no backend or vswitch, and its receive pass runs on the vCPU the NIC queue interrupts.
NIC teaming: a flow's hops are those of the member port it uses, with the physical
switch's egress link after each wire (``models.teaming``).
Left out: TCP_RR's piggy-backed ACKs (the ACK path is listed as for bulk transfer).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models import costs
from models.base import DATA, Burst
from models.costs import Charge
from models.guest import Vm
from models.replication import group_dst
from sim.builder import Model

CONTEXT, RING, QUEUE, PCIE, LINK = "context", "ring", "queue", "pcie", "link"


@dataclass(frozen=True)
class Hop:
    kind: str                  # context | ring | queue | pcie | link
    name: str
    detail: str                # core and node, capacity, or rate
    charges: tuple[Charge, ...] = ()


@dataclass
class FlowPath:
    flow: int
    vm: int
    kind: str                  # the workload kind
    direction: str             # tx: the VM sends the data; rx: it receives it
    data: list[Hop] = field(default_factory=list)
    acks: list[Hop] = field(default_factory=list)
    partner: str = ""          # the partner VM's name (VM-to-VM topologies); "" for the peer
    titles: tuple[str, str] = ("data", "ACKs")  # what ``data`` and ``acks`` carry (sketch)


# One ``flow_paths`` call's memo (``_shared``): the charge lists each component declares and
# the hops built from them, made once and shared by every flow that crosses the same ones
# (S3: 1600 connections over a few hundred contexts). None outside ``flow_paths``.
_memo: dict | None = None


def _shared(key: tuple, make, *alive):
    """``make()``, once per ``flow_paths`` call for ``key``. Keys name objects by ``id``: the
    model's components live as long as the call, and ``alive`` (the objects a key names that
    the model does not hold, e.g. a charge list) is kept with the value, so no id is reused
    while the memo lives. Speed only: the same values, built once."""
    if _memo is None:
        return make()
    hit = _memo.get(key)
    if hit is None:
        hit = _memo[key] = (make(), alive)
    return hit[0]


def _declared(obj, method: str, *args, **kwargs) -> list[Charge]:
    """``obj.method(*args, **kwargs)``, a component's declared charges (pure in the built
    model's parameters), once per ``flow_paths`` call."""
    return _shared((id(obj), method, args, tuple(kwargs.items())),
                   lambda: getattr(obj, method)(*args, **kwargs))


def _ctx(ctx, *charges: list[Charge], note: str = "") -> Hop:
    if _memo is not None:
        return _shared(("ctx", id(ctx), note, *map(id, charges)),
                       lambda: _ctx_hop(ctx, charges, note), charges)
    return _ctx_hop(ctx, charges, note)


def _ctx_hop(ctx, charges: tuple, note: str) -> Hop:
    flat = tuple(c for group in charges for c in group
                 if c.fixed_cycles or c.per_packet_cycles or c.per_byte_cycles)
    if getattr(ctx, "poll_mode", False):  # models.polling: spins between passes
        note += ", poll-mode: never halts, core 100% busy (poll_idle), no kicks"
    return Hop(CONTEXT, ctx.name, f"core {ctx.core.index}, node {ctx.core.node}" + note, flat)


def _ring(ring, what: str = "") -> Hop:
    return _shared(("ring", id(ring), what), lambda: _ring_hop(ring, what))


def _ring_hop(ring, what: str) -> Hop:
    return Hop(RING if not what else QUEUE, ring.name, f"{ring.capacity} {ring.unit}" +
               (f", {what}" if what else ""))


def _rx_ring(q) -> Hop:
    return _shared(("rx_ring", id(q)), lambda: _rx_ring_hop(q))


def _rx_ring_hop(q) -> Hop:
    co = q.coalescer.params
    detail = f"{q.ring.capacity} frames, coalescing {co.mode} {co.timer_us:g} us / " \
             f"{co.max_frames} frames"
    return Hop(RING, q.ring.name, detail)


def _link(link) -> Hop:
    return _shared(("link", id(link)), lambda: _link_hop(link))


def _link_hop(link) -> Hop:
    p = link.params
    return Hop(LINK, link.name, f"{p.line_rate_gbps:g} Gbps, MTU {p.mtu_bytes}, "
                                f"{p.propagation_ns:g} ns")


def _pcie(channel, what: str) -> Hop:
    return _shared(("pcie", id(channel), what), lambda: _pcie_hop(channel, what))


def _pcie_hop(channel, what: str) -> Hop:
    return Hop(PCIE, channel.name, f"{channel.rate_gbps:.3g} Gbps, {what}")


def _pick(stack_charges: list[Charge], *terms: str) -> list[Charge]:
    return _shared(("pick", id(stack_charges), terms),
                   lambda: [c for c in stack_charges if c.term in terms], stack_charges)


def flow_paths(model: Model) -> list[FlowPath]:
    """The path of every flow of the model's workload."""
    global _memo
    cfg = model.cfg
    kind, direction = cfg.workload.kind, cfg.workload.direction
    out = []
    outer, _memo = _memo, {} if _memo is None else _memo
    try:
        _flow_paths(model, kind, direction, out)
    finally:
        _memo = outer
    return out


def _flow_paths(model: Model, kind: str, direction: str, out: list) -> None:
    for rec in model.workload.flows():
        f, v = rec["flow"], rec["vm"]
        if kind == "udp_multicast":
            out.append(_multicast_path(model, f, v))
        elif kind == "ping":
            from sim.ping_path import ping_path  # it builds on this module's hops
            out.append(ping_path(model, f, v))
        else:
            out.append(_tcp_path(model, f, v, kind, direction))


def _tcp_path(model: Model, f: int, v: int, kind: str, direction: str) -> FlowPath:
    """The data and ACK hops of flow ``f`` between VM ``v`` and the other end of its
    connection: the native peer behind its port, or a partner VM (``models.topology``)."""
    vm = model.vms[v]
    other = _partner(model, v)
    sender, receiver = (vm, other) if direction == "tx" else (other, vm)
    path = FlowPath(f, v, kind, direction, partner=other.name if _is_vm(other) else "")
    snd, rcv = _declared(sender, "charges", "sender"), _declared(receiver, "charges", "receiver")
    path.data = [*_send_app(model, sender, f, snd), *_out(model, sender, receiver, f),
                 *_into(model, sender, receiver, f), *_recv_stack(model, receiver, f, rcv),
                 _ctx(receiver.app_context(f), _pick(rcv, costs.APP_RECV))]
    path.acks = [*_ack_out(model, receiver, f, rcv), *_out(model, receiver, sender, f),
                 *_into(model, receiver, sender, f), *_ack_in(model, sender, f, snd)]
    return path


def _partner(model: Model, v: int):
    """The other end of VM ``v``'s connections."""
    topo, n = model.cfg.topology, model.cfg.workload.vms
    if not topo.vm_partner:
        return model.peer_of(v)
    return model.remote.vms[v] if topo.kind == "remote_host" else model.vms[n + v]


def _host_of(model: Model, vm) -> Model:
    return model if model.remote is None or vm in model.vms else model.remote


def _probe(f: int, dst: int, src: int) -> Burst:
    return Burst(DATA, f, 0, 1, 1, 0, 1, dst=dst, src=src)


def _is_vm(end) -> bool:
    return isinstance(end, Vm)


def _is_direct(end) -> bool:
    """A VM (or bare-metal host) driving its NIC or VF itself (``models.vnic.direct``)."""
    return _is_vm(end) and getattr(end.vnic, "direct", False)


def _nic_rxq(model: Model, end, f: int, src: int | None = None):
    """The NIC RX queue a VM's traffic of flow ``f`` arrives on."""
    host = _host_of(model, end)
    nic = host.nics[host.port_of_flow(end.index, f)]
    probe = _probe(f, end.endpoint, end.endpoint if src is None else src)
    return nic.rx_queues[nic.rx_queue_index(probe)]


def _rx_pass(model: Model, end, f: int):
    """The context a VM's receive pass of flow ``f`` runs on: the vCPU its vNIC queue
    interrupts, or for a direct device the vCPU its NIC queue interrupts."""
    if _is_direct(end):
        return _nic_rxq(model, end, f).context
    return end.vnic.rx_queue_of(_probe(f, end.endpoint, end.endpoint)).vcpu


def _send_app(model: Model, end, f: int, snd: list[Charge]) -> list[Hop]:
    """The sending application's context: its send() calls and segment output."""
    ctx = end.app_context(f)
    return _shared(("send_app", id(end), id(ctx), id(snd)),
                   lambda: _send_app_hops(end, ctx, snd), snd)


def _send_app_hops(end, ctx, snd: list[Charge]) -> list[Hop]:
    device = _declared(end.vnic, "guest_charges", "tx") if _is_vm(end) \
        else _declared(end, "driver_charges", "tx")
    return [_ctx(ctx, _pick(snd, costs.APP_SEND, costs.STACK_TX), device)]


def _ack_out(model: Model, end, f: int, rcv: list[Charge]) -> list[Hop]:
    """Where the data receiver builds its ACKs (a VM: the flow's vCPU; a peer: its softirq)."""
    ctx = end.app_context(f) if _is_vm(end) else end.irq_of(f)
    return _shared(("ack_out", id(end), id(ctx), id(rcv)),
                   lambda: _ack_out_hops(end, ctx, rcv), rcv)


def _ack_out_hops(end, ctx, rcv: list[Charge]) -> list[Hop]:
    if _is_vm(end):
        return [_ctx(ctx, _pick(rcv, costs.STACK_ACK_TX),
                     _declared(end.vnic, "guest_charges", "tx"))]
    return [_ctx(ctx, _pick(rcv, costs.STACK_ACK_TX), _declared(end, "driver_charges", "tx"))]


def _recv_stack(model: Model, end, f: int, rcv: list[Charge]) -> list[Hop]:
    """The receive pass that takes the data in (a VM's vCPU; a peer's softirq)."""
    return _rx_pass_hops(model, end, f, rcv, costs.STACK_RX)


def _ack_in(model: Model, end, f: int, snd: list[Charge]) -> list[Hop]:
    """The receive pass that takes the ACKs in at the data sender."""
    return _rx_pass_hops(model, end, f, snd, costs.STACK_ACK_RX)


def _rx_pass_hops(model: Model, end, f: int, stack: list[Charge], term: str) -> list[Hop]:
    """A receive pass of ``end`` on flow ``f``: its device's receive charges and the stack's
    ``term``, on the context the pass runs on (a VM: ``_rx_pass``; a peer: its softirq)."""
    ctx = _rx_pass(model, end, f) if _is_vm(end) else end.irq_of(f)
    return _shared(("rx_pass", id(end), id(ctx), id(stack), term),
                   lambda: [_ctx(ctx, _declared(end.vnic, "guest_charges", "rx") if _is_vm(end)
                                 else _declared(end, "driver_charges", "rx"),
                                 _pick(stack, term))], stack)


def _out(model: Model, src, dst, f: int) -> list[Hop]:
    """From ``src``'s device to its wire (or, VM to VM on one vswitch, into the partner's
    backend)."""
    if not _is_vm(src):  # a peer: with teaming, the switch's link to the flow's member next
        return [_ring(src.nic.tx_queues[0]), _link(src.nic.tx_link),
                *_switch_links(model, dst.index, f, to_peer=False)]
    host = _host_of(model, src)
    p = host.port_of_flow(src.index, f)
    vnic, nic, vswitch = src.vnic, host.nics[p], host.vswitch_of(src.index)
    probe = _probe(f, dst.endpoint, src.endpoint)
    card = host.cards[p // model.cfg.host.ports_per_card]
    if _is_direct(src):
        return [_ring(vnic.qdisc, "guest qdisc"), _ring(nic.tx_queue(probe)),
                _pcie(card.down, "TX data, descriptors, doorbells"), _link(nic.tx_link)]
    txq = vnic.tx_queue_of(probe)
    local = vswitch.is_local(probe)
    pending, nic_txq = (None, None) if local else (vswitch.pending_of(probe), nic.tx_queue(probe))
    # the hops depend on the flow only through its port and queues: made once for each
    return _shared(("out", id(src), id(dst), p, id(txq), local, id(pending), id(nic_txq)),
                   lambda: _out_hops(model, src, dst, f, p, txq, local, pending, nic_txq))


def _out_hops(model: Model, src, dst, f: int, p: int, txq, local: bool, pending,
              nic_txq) -> list[Hop]:
    """``_out`` of a VM through its vNIC, backend and vswitch (the queues chosen)."""
    host = _host_of(model, src)
    vnic, nic, vswitch = src.vnic, host.nics[p], host.vswitch_of(src.index)
    card = host.cards[p // model.cfg.host.ports_per_card]
    if local:
        return [_ring(txq.ring),
                _ctx(txq.backend, _declared(vnic, "backend_charges", "tx"),
                     _declared(vswitch, "charges", "tx", uplink=False),
                     _declared(vswitch.ports[dst.endpoint], "backend_charges", "rx"),
                     note="; switched to the partner's vNIC on this vswitch")]
    return [_ring(txq.ring),
            _ctx(txq.backend, _declared(vnic, "backend_charges", "tx"),
                 _declared(vswitch, "charges", "tx"),
                 _declared(model.cfg.hypervisor, "driver_charges", "tx")),
            _ring(pending, "pending TX"), _ring(nic_txq),
            _pcie(card.down, "TX data, descriptors, doorbells"), _link(nic.tx_link),
            *_switch_links(model, src.index, f, to_peer=True)]


def _switch_links(model: Model, v: int, f: int, to_peer: bool) -> list[Hop]:
    """NIC teaming: the physical switch's egress link after the wire, towards the peer or
    towards the member port flow ``f`` of VM ``v`` uses (``models.teaming``); none without."""
    if not model.switches:
        return []
    sw = model.switches[model.team_of(v)]
    if to_peer:
        return [_link(sw.to_peer)]
    return [_link(sw.to_member[sw.members.index(model.nics[model.port_of_flow(v, f)])])]


def _into(model: Model, src, dst, f: int) -> list[Hop]:
    """From the wire (or the sender's backend) to ``dst``'s receive pass."""
    probe = _probe(f, dst.endpoint, src.endpoint)
    if not _is_vm(dst):
        return [_rx_ring(dst.nic.rx_queues[dst.nic.rss_queue(f)
                                           if len(dst.nic.rx_queues) > 1 else 0])]
    host = _host_of(model, dst)
    p = host.port_of_flow(dst.index, f)
    vnic, nic, vswitch = dst.vnic, host.nics[p], host.vswitch_of(dst.index)
    card = host.cards[p // model.cfg.host.ports_per_card]
    if _is_direct(dst):
        return [_rx_ring(_nic_rxq(model, dst, f, src.endpoint)),
                _pcie(card.up, "RX data, descriptor write-backs")]
    rxq = vnic.rx_queue_of(probe)
    if _is_vm(src) and _host_of(model, src) is host and host.port_of(src.index) == p:
        return [_ring(rxq.ring)]  # switched by the sender's backend (``_out``)
    k = nic.rx_queue_index(probe)
    # the hops depend on the flow only through its port and queues: made once for each
    return _shared(("into", id(src), id(dst), p, id(rxq), k),
                   lambda: _into_hops(model, dst, p, rxq, k))


def _into_hops(model: Model, dst, p: int, rxq, k: int) -> list[Hop]:
    """``_into`` a VM through NIC queue ``k`` of port ``p``, its handler and ``rxq``."""
    host = _host_of(model, dst)
    vnic, nic, vswitch = dst.vnic, host.nics[p], host.vswitch_of(dst.index)
    card = host.cards[p // model.cfg.host.ports_per_card]
    nic_rxq = nic.rx_queues[k]
    hv = model.cfg.hypervisor
    # The copy into ``dst``'s memory on another node: per packet written (after software LRO),
    # nothing per byte (``models.hypervisor.HypervisorRx.cost``).
    numa = _shared(("numa_copy", id(nic_rxq.context), id(vnic)),
                   lambda: _numa_copy(nic_rxq.context, vnic))
    return [_rx_ring(nic_rxq), _pcie(card.up, "RX data, descriptor write-backs"),
            _ctx(nic_rxq.context, _declared(hv, "driver_charges", "rx"),
                 _declared(hv, "lro_charges", vnic.takes_aggregates),
                 _declared(vswitch, "charges", "rx", sort=_shared(
                     ("shared_queues", id(nic), id(vswitch)),
                     lambda: nic.shared_queues(vswitch.ports)).__contains__(k)),
                 _declared(vnic, "backend_charges", "rx",
                           copy=not nic.guest_mapped(k, dst.endpoint, vswitch.ports)), numa,
                 note="; the guest's recv copy pays numa per byte when its vCPU is not on "
                      "this node (the data sit in its cache)"),
            _ring(rxq.ring)]


def _numa_copy(ctx, vnic) -> list[Charge]:
    per_copy = ctx.remote_penalty_cycles(1, 0, vnic.memory_home)
    return [Charge(costs.NUMA_COPY, 0.0, per_copy, 0.0, unit="packet")] if per_copy else []


def _multicast_path(model: Model, f: int, v: int) -> FlowPath:
    """The peer's datagrams into one receiving VM: replicated by the vswitch of its port."""
    vm, p = model.vms[v], model.port_of(v)
    vnic, nic, vswitch, peer = vm.vnic, model.nics[p], model.vswitch_of(v), model.peer_of(v)
    card = model.cards[p // model.cfg.host.ports_per_card]
    hv = model.cfg.hypervisor
    stream = model.workload.receivers[v].stream  # what this receiver's group is sent by
    # The group's datagrams as the NIC and the vNIC sort them (its flow id and group address).
    probe = Burst(DATA, stream.flow, 0, 1, 1, 0, 1, dst=group_dst(stream.group), src=-1)
    nic_rxq = nic.rx_queues[nic.rx_queue_index(probe)]
    rxq = vnic.rx_queue_of(probe)
    rep = vswitch.replicator
    path = FlowPath(f, v, "udp_multicast", "rx")
    path.data = [_ctx(stream.peer.app_context(stream.flow),
                      _pick(peer.charges("sender"), costs.APP_SEND, costs.STACK_TX),
                      peer.driver_charges("tx")),
                 _ring(peer.nic.tx_queues[0]), _link(peer.nic.tx_link), _rx_ring(nic_rxq),
                 _pcie(card.up, "RX data, descriptor write-backs")]
    sort = nic.rx_queue_index(probe) in nic.shared_queues(vswitch.ports)
    vector = [hv.driver_charges("rx"), vswitch.charges("rx", sort=sort), rep.charges()]
    if rep.params.split_rx_mode:
        path.data += [_ctx(nic_rxq.context, *vector),
                      _ring(model.workload.receivers[v].member.queue, "splitRxMode"),
                      _ctx(vnic.net_context, [Charge.of(costs.REPLICATION, rep.params.copy,
                                                        unit="copy")],
                           vnic.backend_charges("rx"), _numa(vnic.net_context, None))]
        copied_on = vnic.net_context.core.node   # ``Replicator._split_deliver``
    else:
        path.data.append(_ctx(nic_rxq.context, *vector, vnic.backend_charges("rx"),
                              rep.numa_charges(vnic, nic_rxq.context)))
        copied_on = nic_rxq.context.core.node   # ``Replicator.deliver``: where the copy sits
    receiver = vm.charges("udp_receiver")
    app = [Charge.of(costs.APP, model.cfg.workload.multicast.app, unit="datagram")]
    app_ctx = vm.app_context(stream.flow)
    path.data += [_ring(rxq.ring),
                  _ctx(rxq.vcpu, vnic.guest_charges("rx"), _pick(receiver, costs.STACK_UDP_RX)),
                  _ctx(app_ctx, _pick(receiver, costs.APP_RECV), app,
                       _numa(app_ctx, copied_on))]
    return path


def _numa(ctx, home) -> list[Charge]:
    """``ctx``'s NUMA penalty per datagram and per byte it touches homed on ``home`` (None: its
    own home), as ``Context.execute`` charges it (term ``numa``): multicast's copy and read."""
    per_pk, per_b = ctx.remote_penalty_cycles(1, 0, home), ctx.remote_penalty_cycles(0, 1, home)
    return [Charge(costs.NUMA, 0.0, per_pk, per_b, unit="datagram")] if per_pk or per_b else []


def sketch(path: FlowPath) -> str:
    """An ASCII sketch of one flow's path: a line per hop, its charges beneath it."""
    ends = ("vm%d -> peer" % path.vm) if path.direction == "tx" else ("peer -> vm%d" % path.vm)
    if path.partner:
        ends = ends.replace("peer", path.partner)
    lines = [f"flow {path.flow} ({path.kind}, direction {path.direction}): data {ends}"]
    for title, hops in zip(path.titles, (path.data, path.acks)):
        if not hops:
            continue
        lines.append(f"  {title}:")
        for i, hop in enumerate(hops):
            lines.append(f"    [{hop.kind:<7}] {hop.name:<28} {hop.detail}")
            if hop.charges:
                lines.append("              " + " | ".join(c.describe() for c in hop.charges))
            if i < len(hops) - 1:
                lines.append("       |")
    return "\n".join(lines)


def describe(model: Model, flows: list[int] | None = None) -> str:
    """The sketch of the given flows (default: the first flow of each distinct VM, up to
    four: the others cross the same kinds of hops on their own contexts)."""
    paths = flow_paths(model)
    if flows is None:
        seen, chosen = set(), []
        for fp in paths:
            if fp.vm not in seen and len(chosen) < 4:
                seen.add(fp.vm)
                chosen.append(fp)
        note = f"\n({len(paths)} flows in all; `--flow N` or `--all` for others)" \
            if len(paths) > len(chosen) else ""
    else:
        chosen = [fp for fp in paths if fp.flow in flows]
        note = ""
    clock = model.cfg.host.cpu.clock_hz
    head = (f"{model.cfg.meta.name}: cycles at {clock / 1e9:g} GHz "
            f"(per pass/call/interrupt, per packet, per payload byte)")
    head += "".join("\n" + line for line in team_lines(model, paths))
    return "\n\n".join([head, *(sketch(fp) for fp in chosen)]) + note


def team_lines(model: Model, paths: list[FlowPath]) -> list[str]:
    """One line per NIC team: its vswitch, members, policy, switch and which flows use
    which member (``models.teaming``); none without teaming."""
    out = []
    tp = model.cfg.host.teaming
    for t, sw in enumerate(model.switches):
        on = {nic.name: [] for nic in sw.members}
        for fp in paths:
            if model.team_of(fp.vm) == t:
                on[model.nics[model.port_of_flow(fp.vm, fp.flow)].name].append(str(fp.flow))
        flows = "; ".join(f"{n}: {', '.join(fs) or '-'}" for n, fs in on.items())
        out.append(f"team {model.vswitches[t].name}: {len(sw.members)} ports, policy "
                   f"{tp.policy}, via {sw.name} ({sw.to_peer.params.line_rate_gbps:g} Gbps to "
                   f"{model.peers[t].name}); flows by member: {flows}")
    return out
