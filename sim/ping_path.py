"""The declared path of a ping (``workload.kind=ping``): the echo request out and the reply back.

The hops between the two ends (vNIC rings, the VM's networking context, the vswitch, NIC
queues with their coalescing, PCIe, the wire, the RX vector; or, VM to VM on one vswitch, the
sender's backend straight into the partner's vNIC) are those any packet of the flow crosses
(``sim.path._out`` and ``_into``). The contexts at the two ends charge ICMP: the pinger's
``sendto()`` and ICMP output, the answering kernel's ICMP input and reply output in its receive
path (a native host's softirq, a VM's vCPU), the pinger's ICMP input and its ``recvmsg()``. A
vNIC's RX ring shows its virtual interrupt delay, and a vCPU's hops say when its core is its
own (both under ``guest.latency_sensitivity=high``, when no halt wake-up is charged either).
"""
from __future__ import annotations

from dataclasses import replace

from models import costs
from sim.builder import Model
from sim.path import (FlowPath, Hop, _ctx, _into, _is_direct, _is_vm, _out, _partner, _pick,
                      _rx_pass)

_OWN = "; a core of its own (latency sensitivity)"


def ping_path(model: Model, f: int, v: int) -> FlowPath:
    direction = model.cfg.workload.direction
    vm = model.vms[v]
    other = _partner(model, v)
    pinger, answerer = (vm, other) if direction == "tx" else (other, vm)
    path = FlowPath(f, v, "ping", direction, partner=other.name if _is_vm(other) else "",
                    titles=("echo request", "echo reply"))
    path.data = [_send(pinger, f), *_between(model, pinger, answerer, f), _take(model, answerer, f)]
    path.acks = [_answer(answerer, f), *_between(model, answerer, pinger, f), _take(model, pinger, f),
                 _ctx(pinger.app_context(f), _pick(pinger.charges("icmp"), costs.APP_RECV),
                      note=_own(pinger) + "; the ping process")]
    return path


def _own(end) -> str:
    return _OWN if _is_vm(end) and end.params.latency_sensitive else ""


def _between(model: Model, src, dst, f: int) -> list[Hop]:
    """``src``'s device to ``dst``'s receive pass; a vNIC RX ring with its interrupt delay."""
    hops = [*_out(model, src, dst, f), *_into(model, src, dst, f)]
    if not _is_vm(dst) or _is_direct(dst):  # a direct device has no virtual interrupt
        return hops
    rings = {q.ring.name for q in dst.vnic.rxq}
    delay = dst.vnic.params.rx_interrupt_delay_us
    return [replace(h, detail=f"{h.detail}, virtual interrupt delay {delay:g} us")
            if h.name in rings else h for h in hops]


def _send(end, f: int) -> Hop:
    """The pinger's sendto(): the echo built and handed to its device."""
    device = end.vnic.guest_charges("tx") if _is_vm(end) else end.driver_charges("tx")
    return _ctx(end.app_context(f), _pick(end.charges("icmp"), costs.APP_SEND,
                                          costs.STACK_ICMP_TX), device, note=_own(end))


def _take(model: Model, end, f: int) -> Hop:
    """The receive pass that takes an echo or a reply in (a VM's vCPU, a peer's softirq)."""
    icmp_in = _pick(end.charges("icmp"), costs.STACK_ICMP_RX)
    if _is_vm(end):
        return _ctx(_rx_pass(model, end, f), end.vnic.guest_charges("rx"), icmp_in,
                    note=_own(end))
    return _ctx(end.irq_of(f), end.driver_charges("rx"), icmp_in)


def _answer(end, f: int) -> Hop:
    """The kernel's echo reply, sent from the receive path that took the request."""
    icmp_out = _pick(end.charges("icmp"), costs.STACK_ICMP_TX)
    if _is_vm(end):
        return _ctx(end.app_context(f), icmp_out, end.vnic.guest_charges("tx"),
                    note=_own(end) + "; the reply, from the receive path")
    return _ctx(end.irq_of(f), icmp_out, end.driver_charges("tx"),
                note="; the reply, from the softirq")
