"""The fluid engine for request/response loops, TCP_RR and ping: transactions/s (echoes/s),
latency and CPU solved from the declared data path (``sim.path``, ``sim.ping_path``) with the
models' own charges.

netperf TCP_RR keeps one transaction in flight per session (``models.workloads.tcp_rr``): the
client writes a request, the server reads it and writes the response, the client reads it and
starts the next. A transaction is one request through the data path of the session's direction
and one response through the data path of the other direction (``sim.path._tcp_path`` with the
roles swapped); the ACKs ride on the next message (the DES's interactive receivers:
piggy-backed, free). Per transaction:

- cycles: every ``Charge`` of every context hop of both paths, times the count its ``per`` /
  ``unit`` names for one message of ``m`` bytes (``_Message``): one send() and one recv() call,
  ``ceil(m / seg_max)`` segments (doorbells, backend passes), ``frames`` frames, the receiver's
  NIC packets and stack packets after hardware or software LRO, one interrupt, one virtual
  interrupt and one handler pass on the receiving side (a lone message: nothing else is pending
  on its queues), plus ``payload x per_byte``.
- halt wake-ups (the charge per "virtual interrupt that finds the vCPU halted"): a vCPU that
  only waits for this session's message is halted when it comes: one per message.
- world switches (``host.cpu.context_switch_cycles``): walking the transaction's tasks in
  order, a core pays one whenever its next task belongs to another context than its last
  (``models.cpu.Core.switch_cycles``).

Latency of one transaction (``rr_latency_mean_us``), the sum of what the message meets:

- each context hop's cycles for the message (the wake-up and switches included: the DES
  prices them into the task) over its core's clock, except a doorbell's exit (the DES wakes
  the backend at once and charges the exit as work nobody waits for);
- each receive ring with a coalescer: a lone message arms the timer and waits it out (NIC RX
  queues of the host and the peer, ``nic.coalescing``; a vNIC's emulated virtual-interrupt
  delay, ``vnic.rx_interrupt_delay_us``), none when its frames reach ``max_frames``; adaptive
  coalescing: the class the queue's IP bytes per microsecond select (``models.coalescing``),
  without hysteresis, iterated with the latency;
- each link: the message's frames serialised at line rate, plus propagation;
- each PCIe hop: the message's TLP bytes (payload, headers, descriptor, doorbell) at the
  channel's rate.

Rate: ``X = 1 / latency`` (one transaction in flight); the ``bottleneck`` table names the
loop's latency. Host CPU: cycles per transaction x ``X`` over the host's cores.
One session only (``vms x sessions_per_vm = 1``, as every TCP_RR experiment): several sessions
sharing a queue lock into batches in the DES (one interrupt, one handler pass, one wake-up for
all; dev_vmxnet_32_10g_rr with 4 sessions: 0.25 interrupts and wake-ups per transaction, 50K
transactions/s at 80 us) which this closed form does not follow (it would say 68K at 58 us,
host CPU +81%), so they are refused.
Ping (``workload.kind=ping``, ``models.workloads.ping``): the echo request is the path's
``data``, the reply its ``acks`` (``sim.ping_path``), one frame each of ``ping.size_bytes``
behind the IP and ICMP headers; the RTT is the same sum without the ping process's read of the
reply (paid, not waited for: ping reads the kernel's receive timestamp); each pinger sends one
echo per ``ping.interval_us`` whatever the RTT (an interval shorter than the RTT would queue
echoes in the DES, not here); the coalescer's spacing is the interval.
TCP_RR messages larger than one MSS are refused: the DES segments them by TCP's dynamics and
ACKs them apart (lat_rr_vm with 8000-byte messages: transactions/s -1.2%, but host CPU -44%: twice
the wake-ups, three backend passes per message, separate ACKs on both stacks).
Left out: NUMA penalties (``numa`` terms: none in the RR experiments' DES), service-time jitter,
TCP's delayed-ACK timer and Nagle for multi-segment messages, the adaptive coalescer's
hysteresis. Units: seconds inside, microseconds in results.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from models import costs, units
from models.coalescing import steady_timer_us
from sim.builder import Model, _mss, _seg_max, build
from sim.config import Config
from sim.path import CONTEXT, LINK, PCIE, RING, _tcp_path

HALT = "virtual interrupt that finds the vCPU halted"
# A charge's per/unit -> the message's count, by side of the wire (the sender's hops come
# before the first link or, VM to VM on one vswitch, up to the switching backend).
_SEND = {"send() call": "calls", "segment": "segs", "frame": "frames", "packet": "segs",
         "doorbell": "segs", "pass": "segs", "sendto() call": "calls", "ICMP message": "calls"}
_RECV = {"interrupt": "irq", "virtual interrupt": "irq", "pass": "irq", "NIC packet": "nic_pk",
         "frame": "frames", "packet (aggregate)": "stack_pk", "recv() call": "calls",
         "packet": "sw_pk", HALT: "halt", "recvmsg() call": "calls", "ICMP message": "calls",
         "LRO packet": "nic_pk", "poll beyond budget": "irq"}
# ICMP messages: software LRO takes data packets only (``models.hypervisor.HypervisorRx.cost``)
_RECV_ICMP = {**_RECV, "LRO packet": None}


def _coalescers(model: Model) -> dict:
    """Ring name -> the coalescing parameters of the queue it interrupts from: NIC RX queues of
    every host and peer, and the vNICs' emulated virtual-interrupt delay."""
    out = {}
    for h in model.hosts():
        for nic in h.nics:
            for q in nic.rx_queues:
                out[q.ring.name] = q.coalescer.params
        for vm in h.vms:
            for q in getattr(vm.vnic, "rxq", ()):
                if q.coalescer is not None:
                    out[q.ring.name] = q.coalescer.params
    for peer in model.peers:
        for q in peer.nic.rx_queues:
            out[q.ring.name] = q.coalescer.params
    return out


def _timer_s(co, frames: int, ip_bytes: float, interval_s: float) -> float:
    """How long a lone message of ``frames`` frames waits in a coalescing queue that sees one
    such message every ``interval_s``."""
    if frames >= co.max_frames:
        return 0.0
    if co.mode != "adaptive":
        return units.us_to_s(co.timer_us)
    bpu = ip_bytes / units.s_to_us(interval_s) if interval_s > 0 else math.inf
    return units.us_to_s(steady_timer_us(bpu, co))


class _Message:
    """One message of ``m`` payload bytes from ``sender`` to ``receiver`` (a VM or a peer)."""

    def __init__(self, cfg: Config, model: Model, m: int, seg_max: int, mss: int, hdr: int,
                 vm_rx: bool, hw: int, sw: int):
        self.m, self.hdr, self.mss = m, hdr, mss
        sizes = [seg_max] * (m // seg_max) + ([m % seg_max] if m % seg_max else [])
        self.segs = len(sizes)
        per_seg = [math.ceil(s / mss) for s in sizes]
        self.frames = sum(per_seg)
        self.nic_pk = sum(math.ceil(b / min(hw, b)) for b in per_seg) if hw > 1 else self.frames
        self.sw_pk = (self.nic_pk if hw > 1 else
                      sum(math.ceil(b / min(sw, b)) for b in per_seg) if sw > 1 else self.frames)
        self.stack_pk = self.sw_pk if vm_rx else self.nic_pk
        self.calls = self.irq = 1
        self.halt = 1.0
        self.frame_sizes = [min(mss, s - k * mss) for s in sizes for k in range(math.ceil(s / mss))]
        self.segment_sizes = sizes


class _Leg:
    """A message's hops with the counts that price them; ``tail``: how many of the last
    context hops are off the latency (a ping's read)."""

    def __init__(self, data, msg: _Message, tail: int = 0):
        self.data, self.msg, self.tail = data, msg, tail


def _ping_legs(cfg: Config, model: Model, f: int, v: int) -> tuple[_Leg, _Leg]:
    """A ping's echo request and reply (``sim.ping_path``): one frame each way of
    ``ping.size_bytes`` behind the IP and ICMP headers; the ping process's read of the reply
    is not in the RTT (``models.workloads.ping``)."""
    from models.workloads.ping import ICMP_IP_HEADER_BYTES
    from sim.ping_path import ping_path
    path = ping_path(model, f, v)
    size = cfg.workload.ping.size_bytes
    msgs = [_Message(cfg, model, size, size, size, ICMP_IP_HEADER_BYTES, False, 1, 1)
            for _ in range(2)]
    return _Leg(path.data, msgs[0]), _Leg(path.acks, msgs[1], tail=1)


def _legs(cfg: Config, model: Model, f: int, v: int) -> tuple[_Leg, _Leg]:
    """Session ``f``'s request leg and response leg."""
    w = cfg.workload
    d = w.direction
    back = "rx" if d == "tx" else "tx"
    hdr = units.tcp_header_bytes(cfg.tcp.timestamps)
    mss = _mss(cfg)
    vnic = model.vnics[v]
    vm_other = cfg.topology.vm_partner
    sw_lro = (cfg.hypervisor.software_lro_max_bytes // mss
              if cfg.hypervisor.features.software_lro and vnic.takes_aggregates else 1)
    legs = []
    for direction, m in ((d, w.rr.request_bytes), (back, w.rr.response_bytes)):
        # as describe_network reads a stream's sender and receiver (sim/fluid.py)
        if direction == "tx":
            seg = _seg_max(vnic.tso and cfg.nic.tso, cfg, mss)
            if vm_other:
                hw, sw = (cfg.nic.lro_max_bytes // mss if cfg.nic.lro else 1), sw_lro
            else:
                hw, sw = (cfg.peer.lro_max_bytes // mss if cfg.peer.lro_max_bytes else 1), 1
        else:
            seg = _seg_max((vnic.tso if vm_other else True) and cfg.nic.tso, cfg, mss)
            hw, sw = (cfg.nic.lro_max_bytes // mss if cfg.nic.lro else 1), sw_lro
        msg = _Message(cfg, model, m, seg, mss, hdr, direction == "rx" or vm_other, hw, sw)
        path = _tcp_path(model, f, v, "tcp_rr", direction)
        legs.append(_Leg(path.data, msg))
    return legs[0], legs[1]


def _sides(hops) -> list[str]:
    """"send" or "recv" for each hop: the receiver's from ``sim.fluid._receiving_from`` on."""
    from sim.fluid import _receiving_from
    start = _receiving_from(hops)
    return ["send" if i < start else "recv" for i in range(len(hops))]


class _Task:
    """One context's work for one message: name, cycles by term, the wake-up's cycles, and
    the cycles nobody waits for (a doorbell's exit)."""

    def __init__(self, ctx: str, terms: dict, halt_cycles: float, off_path: float = 0.0):
        self.ctx, self.terms, self.halt_cycles = ctx, terms, halt_cycles
        self.off_path = off_path


def _price(hop, table: dict, msg: _Message, per_byte: bool, unknown: set) -> _Task:
    """Cycles by term of one context hop for one message (the halt wake-up apart). A
    doorbell's exit is work nobody waits for: the backend is woken at once and the exit only
    delays the vCPU's next work (``models.vnic.base.VirtualNic.guest_send``)."""
    terms, halt, off = {}, 0.0, 0.0
    for c in hop.charges:
        for what, cyc in ((c.per, c.fixed_cycles), (c.unit, c.per_packet_cycles)):
            if not cyc:
                continue
            if what not in table:
                unknown.add((c.term, what))
                continue
            if table[what] is None:   # not paid by this kind of message
                continue
            if c.term == costs.DRIVER_POLL and what == "NIC packet":
                continue   # a message's packets fit one poll's budget: its pass's poll is all
            if what == HALT:
                halt += cyc * getattr(msg, table[what])
                continue
            costs.add(terms, c.term, cyc * getattr(msg, table[what]))
            if what == "doorbell" and c.term == costs.EXITS:
                off += cyc * getattr(msg, table[what])
        if per_byte:
            costs.add(terms, c.term, c.per_byte_cycles * msg.m)
    return _Task(hop.name, terms, halt, off)


def solve(cfg: Config, iterations: int = 30, replication: int = 0):
    """The steady state of a TCP_RR run of one session: a ``sim.runner.Results``
    (``replication``: whose random draws build the model, as ``sim.fluid.solve``)."""
    from sim.fluid import _contexts_by_name, _placement
    from sim.runner import Results
    n_sessions = cfg.workload.vms * cfg.workload.sessions_per_vm
    ping = cfg.workload.kind == "ping"
    # pingers send every interval whether or not the reply came: independent of each other
    interval = units.us_to_s(cfg.workload.ping.interval_us) if ping else None
    if n_sessions != 1 and not ping:   # refused at config time for run.engine=fluid
        raise ValueError(f"fluid engine: tcp_rr with {n_sessions} sessions is not modelled "
                         f"(sessions sharing a queue lock into batches; one session only)")
    if not ping and max(cfg.workload.rr.request_bytes, cfg.workload.rr.response_bytes) > \
            _mss(cfg):   # refused at config time for run.engine=fluid
        raise ValueError(f"fluid engine: tcp_rr messages larger than one MSS ({_mss(cfg)} "
                         f"bytes) are not modelled (TCP's segmenting and ACKs of a multi-frame "
                         f"message)")
    model = build(cfg, replication)
    ctx_core, ctx_host, core_clock, core_host = _placement(model)
    ctx_obj = _contexts_by_name(model)
    co_of = _coalescers(model)
    p = cfg.pcie
    wire = (units.vxlan_frame_wire_bytes if cfg.hypervisor.vswitch.vxlan.enabled
            else units.frame_wire_bytes)
    link_rate, link_prop = {}, {}
    for nic in [*(c for h in model.hosts() for c in h.nics), *(q.nic for q in model.peers)]:
        link_rate[nic.tx_link.name] = units.gbps_to_bytes_per_s(nic.tx_link.params.line_rate_gbps)
        link_prop[nic.tx_link.name] = units.ns_to_s(nic.tx_link.params.propagation_ns)
    for link in (lk for sw in model.switches for lk in (sw.to_peer, *sw.to_member)):
        link_rate[link.name] = units.gbps_to_bytes_per_s(link.params.line_rate_gbps)
        link_prop[link.name] = units.ns_to_s(link.params.propagation_ns)
    pcie_rate = {ch.name: units.gbps_to_bytes_per_s(ch.rate_gbps)
                 for h in model.hosts() for card in h.cards for ch in (card.up, card.down)}

    def tlp(n: float) -> float:
        return units.tlp_bytes(n, p.max_payload_bytes, p.tlp_overhead_bytes)

    unknown: set = set()
    sessions = []      # per session: tasks (in order), fixed delays, coalescing waits
    for rec in model.workload.flows():
        f, v = rec["flow"], rec["vm"]
        tasks, fixed_s, waits, frames = [], 0.0, [], 0
        for leg in (_ping_legs if ping else _legs)(cfg, model, f, v):
            msg = leg.msg
            frames += msg.frames
            ip_bytes = msg.m + msg.frames * msg.hdr
            tail = len([h for h in leg.data if h.kind == CONTEXT]) - leg.tail
            for hop, side in zip(leg.data, _sides(leg.data)):
                if hop.kind == CONTEXT:
                    table = _SEND if side == "send" else (_RECV_ICMP if ping else _RECV)
                    tasks.append(_price(hop, table, msg, True, unknown))
                    tail -= 1
                    if tail < 0:          # after the latency's end: nobody waits for it
                        tasks[-1].off_path = costs.total(tasks[-1].terms)
                elif hop.kind == RING and side == "recv" and hop.name in co_of:
                    waits.append((co_of[hop.name], msg.frames, ip_bytes, hop.name))
                elif hop.kind == LINK:
                    fixed_s += sum(wire(b + msg.hdr) for b in msg.frame_sizes) / \
                        link_rate[hop.name] + link_prop[hop.name]
                elif hop.kind == PCIE:
                    if side == "recv":   # frames written up, one write-back each
                        n = sum(tlp(b + msg.hdr + units.ETH_HEADER_BYTES + units.ETH_FCS_BYTES) + p.descriptor_bytes +
                                p.tlp_overhead_bytes for b in msg.frame_sizes)
                    else:                # segments fetched, descriptors, doorbells
                        n = sum(tlp(s + msg.hdr + units.ETH_HEADER_BYTES) + p.descriptor_bytes +
                                2 * p.tlp_overhead_bytes + p.doorbell_bytes
                                for s in msg.segment_sizes)
                    fixed_s += n / pcie_rate[hop.name]
        sessions.append((f, v, tasks, fixed_s, waits, frames))

    # World switches: walk the transaction's tasks in order (cyclically); a core pays one
    # when its next task is another context's. The latency is iterated only for adaptive
    # coalescing (its timer depends on the rate the latency gives).
    switch_cycles = {c: ctx_obj[c].core.params.context_switch_cycles for c in ctx_obj}
    lat = np.full(n_sessions, 1e-4)
    for _ in range(iterations):
        ctx_terms = {}
        new_lat = np.zeros(n_sessions)
        for i, (f, v, tasks, fixed_s, waits, frames) in enumerate(sessions):
            last = {ctx_core[t.ctx]: t.ctx for t in tasks}   # each core's last task (cyclic)
            service = 0.0
            for t in tasks:
                core = ctx_core[t.ctx]
                terms = dict(t.terms)
                # the vCPU waits halted for this message: every one wakes it
                costs.add(terms, costs.HALT_WAKEUP, t.halt_cycles)
                if last[core] != t.ctx:
                    costs.add(terms, costs.WORLD_SWITCH, switch_cycles[t.ctx])
                last[core] = t.ctx
                service += (costs.total(terms) - t.off_path) / core_clock[core]
                costs.merge(ctx_terms.setdefault((i, t.ctx), {}), terms)
            spacing = interval if ping else lat[i]       # between messages on a queue
            wait = sum(_timer_s(co, fr, ib, spacing) for co, fr, ib, _ in waits)
            new_lat[i] = service + fixed_s + wait
        done = np.allclose(new_lat, lat, rtol=1e-12)
        lat = new_lat
        if done:
            break
    # one transaction in flight: one per latency; a pinger: one echo per interval
    x = np.full(n_sessions, 1.0 / interval) if ping else 1.0 / lat

    tps = float(x.sum())
    terms_rows, ctx_cycles = [], {}
    for (i, c), terms in ctx_terms.items():
        for term, cyc in terms.items():
            terms_rows.append((c, term, cyc * x[i]))
            ctx_cycles[c] = ctx_cycles.get(c, 0.0) + cyc * x[i]
    from sim.fluid import _poll_spin   # poll-mode threads spin: their cores 100% busy
    spin = _poll_spin(ctx_obj, ctx_core, core_clock, ctx_cycles)
    for c, spun in spin.items():
        terms_rows.append((c, costs.POLL_IDLE, spun))
        ctx_cycles[c] = ctx_cycles.get(c, 0.0) + spun
    ct = pd.DataFrame(terms_rows, columns=["context", "term", "cycles_per_s"])
    ct = ct.groupby(["context", "term"], as_index=False)["cycles_per_s"].sum()
    core_cycles = {}
    for c, cyc in ctx_cycles.items():
        core_cycles[ctx_core[c]] = core_cycles.get(ctx_core[c], 0.0) + cyc
    for c in spin:
        core_cycles[ctx_core[c]] = core_clock[ctx_core[c]]
    host_cycles = sum(v for k, v in core_cycles.items() if core_host[k])
    host_capacity = sum(c for k, c in core_clock.items() if core_host[k])
    w = cfg.workload
    per_txn = w.ping.size_bytes if ping else w.rr.request_bytes + w.rr.response_bytes
    goodput_bps = tps * 8 * per_txn
    gbps = goodput_bps / 1e9
    frames_per_txn = np.array([s[5] for s in sessions], dtype=float)
    summary = {
        "goodput_gbps": gbps,
        "host_cpu_util_pct": float(100 * host_cycles / host_capacity),
        "cycles_per_bit": host_cycles / goodput_bps if goodput_bps else math.nan,
        "wire_frames_per_s": float((frames_per_txn * x).sum()),
        "host_packets_per_s": float((frames_per_txn * x).sum()),
        "loss_ratio": 0.0,
        "rtt_us": units.s_to_us(float(lat.mean())),
        "regime": "offered-load" if ping else "latency-bound",
        "fluid_rounds": 1,
        "fluid_evaluations": 1,
    }
    if ping:
        summary.update(ping_rtt_mean_us=units.s_to_us(float(lat.mean())), ping_sent_per_s=tps,
                       ping_loss_ratio=0.0)
    else:
        summary.update(transactions_per_s=tps, rr_latency_mean_us=units.s_to_us(float(lat.mean())))
    if unknown:
        summary["fluid_unpriced_units"] = "; ".join(sorted(f"{t}/{u}" for t, u in unknown))
    flows = pd.DataFrame({"flow": [s[0] for s in sessions], "vm": [s[1] for s in sessions],
                          "goodput_gbps": [xi * 8 * per_txn / 1e9 for xi in x],
                          "transactions_per_s": list(x),
                          "rr_latency_us": [units.s_to_us(li) for li in lat]})
    # one transaction in flight: the loop's latency binds (its share of time: all of it); a
    # pinger: its interval
    bottleneck = pd.DataFrame([{"flow": s[0], "vm": s[1], "kind": "offered" if ping
                                else "latency", "constraint": "interval" if ping else
                                "latency (one transaction in flight)",
                                "util_pct": 100 * (lat[i] / interval if ping else 1.0)}
                               for i, s in enumerate(sessions)])
    contexts = pd.DataFrame([{"context": c, "host": ctx_host[c],
                              "util_pct": 100 * cyc / core_clock[ctx_core[c]]}
                             for c, cyc in sorted(ctx_cycles.items())])
    cores = pd.DataFrame([{"core": k.split(":")[-1], "host": core_host[k],
                           "util_pct": 100 * core_cycles.get(k, 0.0) / c}
                          for k, c in core_clock.items()])
    tables = {"flows": flows, "bottleneck": bottleneck, "contexts": contexts,
              "cost_terms": ct.sort_values(["context", "term"], ignore_index=True),
              "cores": cores}
    if not ping:
        tables["rr_sessions"] = flows[["flow", "vm", "transactions_per_s"]]
    return Results(cfg, summary, {k: None for k in summary}, [summary], tables)
