"""The declared data path: the hops a flow crosses and what each charges, from the built model.

A flow's path is a list of ``Hop``: the contexts it runs on (with the cost terms each charges
per invocation, per packet and per byte, ``models.costs.Charge``, declared by the component
that prices the pass from the same parameters), the rings and queues it waits in (with their
capacity), the PCIe directions and links it crosses (with their rate). ``flow_paths(model)``
lists the data direction and the ACK return path of every flow; ``python -m sim path`` prints
them as an ASCII sketch. The steady-state engine reads the same description.
NIC teaming: a flow's hops are those of the member port it uses, with the physical
switch's egress link after each wire (``models.teaming``).
Left out: TCP_RR's piggy-backed ACKs (the ACK path is listed as for bulk transfer), VM-to-VM
flows (none of the experiments has one).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from models import costs
from models.base import DATA, Burst
from models.costs import Charge
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


def _ctx(ctx, *charges: list[Charge], note: str = "") -> Hop:
    flat = tuple(c for group in charges for c in group
                 if c.fixed_cycles or c.per_packet_cycles or c.per_byte_cycles)
    return Hop(CONTEXT, ctx.name, f"core {ctx.core.index}, node {ctx.core.node}" + note, flat)


def _ring(ring, what: str = "") -> Hop:
    return Hop(RING if not what else QUEUE, ring.name, f"{ring.capacity} {ring.unit}" +
               (f", {what}" if what else ""))


def _rx_ring(q) -> Hop:
    co = q.coalescer.params
    detail = f"{q.ring.capacity} frames, coalescing {co.mode} {co.timer_us:g} us / " \
             f"{co.max_frames} frames"
    return Hop(RING, q.ring.name, detail)


def _link(link) -> Hop:
    p = link.params
    return Hop(LINK, link.name, f"{p.line_rate_gbps:g} Gbps, MTU {p.mtu_bytes}, "
                                f"{p.propagation_ns:g} ns")


def _pcie(channel, what: str) -> Hop:
    return Hop(PCIE, channel.name, f"{channel.rate_gbps:.3g} Gbps, {what}")


def _pick(stack_charges: list[Charge], *terms: str) -> list[Charge]:
    return [c for c in stack_charges if c.term in terms]


def flow_paths(model: Model) -> list[FlowPath]:
    """The path of every flow of the model's workload."""
    cfg = model.cfg
    kind, direction = cfg.workload.kind, cfg.workload.direction
    out = []
    for rec in model.workload.flows():
        f, v = rec["flow"], rec["vm"]
        if kind == "udp_multicast":
            out.append(_multicast_path(model, f, v))
        else:
            out.append(_tcp_path(model, f, v, kind, direction))
    return out


def _tcp_path(model: Model, f: int, v: int, kind: str, direction: str) -> FlowPath:
    vm, p = model.vms[v], model.port_of_flow(v, f)
    vnic, nic, vswitch, peer = vm.vnic, model.nics[p], model.vswitch_of(v), model.peer_of(v)
    card = model.cards[p // model.cfg.host.ports_per_card]
    hv = model.cfg.hypervisor
    # With teaming the wire is the member port's link, then the switch's link on (models.teaming)
    switch = model.switches[model.team_of(v)] if model.switches else None
    to_peer = [_link(switch.to_peer)] if switch else []
    to_vm = [_link(switch.to_member[switch.members.index(nic)])] if switch else []
    probe = Burst(DATA, f, 0, 1, 1, 0, 1, dst=v, src=v)
    txq, rxq = vnic.tx_queue_of(probe), vnic.rx_queue_of(probe)
    nic_rxq = nic.rx_queues[nic.rx_queue_index(probe)]
    peer_rxq = peer.nic.rx_queues[peer.nic.rss_queue(f) if len(peer.nic.rx_queues) > 1 else 0]
    # The VM's transmit side, from its vCPU to the wire, and its receive side back up.
    vm_tx = [_ring(txq.ring),
             _ctx(txq.backend, vnic.backend_charges("tx"), vswitch.charges("tx"),
                  hv.driver_charges("tx")),
             _ring(vswitch.pending_of(probe), "pending TX"), _ring(nic.tx_queue(probe)),
             _pcie(card.down, "TX data, descriptors, doorbells"), _link(nic.tx_link), *to_peer]
    vm_rx = [_rx_ring(nic_rxq), _pcie(card.up, "RX data, descriptor write-backs"),
             _ctx(nic_rxq.context, hv.driver_charges("rx"), vswitch.charges("rx"),
                  vnic.backend_charges("rx"),
                  note=f"; {costs.NUMA_COPY} when the VM's memory is on another node"),
             _ring(rxq.ring)]
    peer_tx = [_ring(peer.nic.tx_queues[0]), _link(peer.nic.tx_link), *to_vm]
    path = FlowPath(f, v, kind, direction)
    if direction == "tx":
        sender, receiver = vm.charges("sender"), peer.charges("receiver")
        path.data = [_ctx(vm.app_context(f), _pick(sender, costs.APP_SEND, costs.STACK_TX),
                          vnic.guest_charges("tx")), *vm_tx, _rx_ring(peer_rxq),
                     _ctx(peer.irq_of(f), peer.driver_charges("rx"),
                          _pick(receiver, costs.STACK_RX)),
                     _ctx(peer.app_context(f), _pick(receiver, costs.APP_RECV))]
        path.acks = [_ctx(peer.irq_of(f), _pick(receiver, costs.STACK_ACK_TX),
                          peer.driver_charges("tx")), *peer_tx, *vm_rx,
                     _ctx(rxq.vcpu, vnic.guest_charges("rx"),
                          _pick(sender, costs.STACK_ACK_RX))]
    else:
        sender, receiver = peer.charges("sender"), vm.charges("receiver")
        path.data = [_ctx(peer.app_context(f), _pick(sender, costs.APP_SEND, costs.STACK_TX),
                          peer.driver_charges("tx")), *peer_tx, *vm_rx,
                     _ctx(rxq.vcpu, vnic.guest_charges("rx"),
                          _pick(receiver, costs.STACK_RX)),
                     _ctx(vm.app_context(f), _pick(receiver, costs.APP_RECV))]
        path.acks = [_ctx(vm.app_context(f), _pick(receiver, costs.STACK_ACK_TX),
                          vnic.guest_charges("tx")), *vm_tx, _rx_ring(peer_rxq),
                     _ctx(peer.irq_of(f), peer.driver_charges("rx"),
                          _pick(sender, costs.STACK_ACK_RX))]
    return path


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
    vector = [hv.driver_charges("rx"), vswitch.charges("rx"), rep.charges()]
    if rep.params.split_rx_mode:
        path.data += [_ctx(nic_rxq.context, *vector),
                      _ring(model.workload.receivers[v].member.queue, "splitRxMode"),
                      _ctx(vnic.net_context, [Charge.of(costs.REPLICATION, rep.params.copy,
                                                        unit="copy")],
                           vnic.backend_charges("rx"))]
    else:
        path.data.append(_ctx(nic_rxq.context, *vector, vnic.backend_charges("rx")))
    receiver = vm.charges("udp_receiver")
    app = [Charge.of(costs.APP, model.cfg.workload.multicast.app, unit="datagram")]
    path.data += [_ring(rxq.ring),
                  _ctx(rxq.vcpu, vnic.guest_charges("rx"), _pick(receiver, costs.STACK_UDP_RX)),
                  _ctx(vm.app_context(stream.flow), _pick(receiver, costs.APP_RECV), app)]
    return path


def sketch(path: FlowPath) -> str:
    """An ASCII sketch of one flow's path: a line per hop, its charges beneath it."""
    ends = ("vm%d -> peer" % path.vm) if path.direction == "tx" else ("peer -> vm%d" % path.vm)
    lines = [f"flow {path.flow} ({path.kind}, direction {path.direction}): data {ends}"]
    for title, hops in (("data", path.data), ("ACKs", path.acks)):
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
