"""The declared path of a ping (``workload.kind=ping``): the echo request out and the reply back.

The hops between the two ends (vNIC rings, the VM's networking context, the vswitch, NIC
queues with their coalescing, PCIe, the wire, the RX vector) are those of a TCP flow of the same
id (``sim.path._tcp_path``): an echo crosses them as any packet does. The contexts at the two
ends charge ICMP instead of TCP: the pinger's ``sendto()`` and ICMP output, the answering
kernel's ICMP input and reply output in its receive path (a native host's softirq, the VM's
vCPU), the pinger's ICMP input and its ``recvmsg()``. The vNIC's RX ring shows its virtual
interrupt delay (0 under ``guest.latency_sensitivity=high``, when the vCPU hops say that the
core is the vCPU's own and no halt wake-up is charged).
"""
from __future__ import annotations

from dataclasses import replace

from models import costs
from sim.builder import Model
from sim.path import CONTEXT, FlowPath, Hop, _ctx, _pick, _tcp_path


def ping_path(model: Model, f: int, v: int) -> FlowPath:
    direction = model.cfg.workload.direction
    vm, peer = model.vms[v], model.peers[model.port_of(v)]
    vnic = vm.vnic
    tcp = _tcp_path(model, f, v, "ping", direction)
    ends = {c.name for c in vm.vcpus} | {c.name for c in peer.contexts()}

    def middle(hops: list[Hop]) -> list[Hop]:
        """The hops between the ends, the vNIC RX ring with its virtual interrupt delay."""
        out = []
        for h in hops:
            if h.kind == CONTEXT and h.name in ends:
                continue
            if h.name in {q.ring.name for q in vnic.rxq}:
                h = replace(h, detail=f"{h.detail}, virtual interrupt delay "
                                      f"{vnic.params.rx_interrupt_delay_us:g} us")
            out.append(h)
        return out

    vm_icmp, peer_icmp = vm.charges("icmp"), peer.charges("icmp")
    vcpu = vm.app_context(f)
    own = "; a core of its own (latency sensitivity)" if vm.params.latency_sensitive else ""
    vm_send = _ctx(vcpu, _pick(vm_icmp, costs.APP_SEND, costs.STACK_ICMP_TX),
                   vnic.guest_charges("tx"), note=own)
    vm_in = _ctx(vcpu, vnic.guest_charges("rx"), _pick(vm_icmp, costs.STACK_ICMP_RX), note=own)
    vm_answer = _ctx(vcpu, _pick(vm_icmp, costs.STACK_ICMP_TX), vnic.guest_charges("tx"),
                     note=own + "; the reply, from the receive path")
    vm_read = _ctx(vcpu, _pick(vm_icmp, costs.APP_RECV), note=own + "; the ping process")
    irq, app = peer.irq_of(f), peer.app_context(f)
    peer_send = _ctx(app, _pick(peer_icmp, costs.APP_SEND, costs.STACK_ICMP_TX),
                     peer.driver_charges("tx"))
    peer_in = _ctx(irq, peer.driver_charges("rx"), _pick(peer_icmp, costs.STACK_ICMP_RX))
    peer_answer = _ctx(irq, _pick(peer_icmp, costs.STACK_ICMP_TX), peer.driver_charges("tx"),
                       note="; the reply, from the softirq")
    peer_read = _ctx(app, _pick(peer_icmp, costs.APP_RECV), note="; the ping process")
    path = FlowPath(f, v, "ping", direction, titles=("echo request", "echo reply"))
    if direction == "tx":   # the VM pings the peer
        path.data = [vm_send, *middle(tcp.data), peer_in]
        path.acks = [peer_answer, *middle(tcp.acks), vm_in, vm_read]
    else:                   # the peer pings the VM
        path.data = [peer_send, *middle(tcp.data), vm_in]
        path.acks = [vm_answer, *middle(tcp.acks), peer_in, peer_read]
    return path
