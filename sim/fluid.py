"""The fluid (steady-state) engine: TCP_STREAM solved analytically from the declared data path.

A first slice of issue 8 for ``workload.kind=tcp_stream`` (direction tx or rx, any number of
VMs, sessions and NIC ports). It builds the model (``sim.builder.build``, cheap; nothing runs),
reads every flow's path (``sim.path.flow_paths``: contexts with their ``Charge`` terms, rings,
PCIe directions, links) and the same parameters, and finds the steady state by max-min fair
progressive filling. No cost is restated here: every cycle comes from a ``Charge`` of the path.

Batching: closed forms, per flow of goodput ``G`` (payload bytes/s)
--------------------------------------------------------------------
``mss`` from the MTU (VXLAN-reduced if tunnelled), ``seg_max`` the sender's largest segment (a
TSO segment, or one MSS), ``W`` the window, ``msg`` = ``workload.message_bytes``.

- segments: a window travels as ``ceil(W / seg_max)`` equal segments, ``seg = W / ceil(W /
  seg_max)`` (the receiver reopens its window only when its application has read, so the
  sender gets a whole window back at once: 2 segments per 64KB window, 1 per 8KB, as the DES
  shows); ``S = G / seg`` segments/s (TX packets; bursts on the wire) of ``b = ceil(seg / mss)``
  frames; data frames/s ``D = b * S``; ``send()`` and ``recv()`` calls ``G / msg``.
- sender side: one pass of the vNIC backend and one doorbell per segment (an upper bound: the
  DES skips a paravirtual vNIC's doorbell while its backend still polls).
- receiving NIC queue: bursts arrive whole and the coalescer fires ``timer`` after the first
  pending one or at ``max_frames`` pending frames: interrupts/s ``= min(bursts/s, max(frames/s /
  max_frames, 1 / timer))`` (the brief's form with bursts for frames: a 45-frame TSO burst is one
  interrupt in the DES, not 45). Adaptive coalescing: the timer of the latency class the
  queue's bytes/us select (no hysteresis). A queue's interrupts are shared among its flows by
  their bursts; each is one pass of the vector's handler per destination vNIC and one virtual
  interrupt of the vCPU (an upper bound: a busy guest polls on instead).
- LRO: hardware (``nic.lro``; the peer's ``peer.lro_max_bytes``) merges a segment's frames into
  ``ceil(b / (lro_max // mss))`` NIC packets; software LRO (hypervisor feature, for a vNIC and
  guest that take aggregates) does the same after the driver with ``software_lro_max_bytes``
  when the NIC did not. The receiving stack sees those packets.
- ACKs: one per two frames of single-frame packets, one per aggregate (``P * min(1, f / 2)``,
  ``P`` stack packets/s of ``f`` frames); plus one window update per read task, with one read
  task per receiving pass (``min(P, interrupts)``). ACK trains: ``min(data ACKs, receiving
  passes)`` plus the window updates (each its own train). Each ACK is one packet and one frame.
- Every ``Charge`` costs ``fixed * rate(per) + per_packet * rate(unit) + per_byte * G`` (ACKs
  carry no payload), ``rate`` being the quantity above named by the charge's ``per``/``unit``
  on that side of the wire (``_RATES``). A unit the table does not know is reported in
  ``fluid_unpriced_units``, never guessed. The charges are compiled once into entries (key,
  flow, quantity, coefficient) and evaluated with numpy.

Capacities and bounds
---------------------
- a core: ``clock_hz`` cycles/s shared by every context placed on it (host and peer cores);
- a link direction: line rate in wire bytes (frames of ``mss + headers`` plus 38 bytes of
  framing, ``models.units``; VXLAN's 50 bytes when tunnelled; ACKs as minimum-size frames);
- a PCIe direction: TLP bytes (payload + ``tlp_overhead`` per ``max_payload``), 16-byte
  descriptor fetches and write-backs per packet, doorbells, read requests (PCI-X: one shared
  channel);
- the TCP window: ``window / RTT0`` per flow, with ``window = workload.socket_bytes`` (65535
  without window scaling on both ends) and ``RTT0`` built from the path's own delays: two
  propagations, serialisation of one segment and one ACK on the wire, the coalescing timer on
  each side (0 when a burst alone reaches ``max_frames``) and the service time of one segment's
  (one ACK train's) cycles on every context of the data (ACK) path. Left out of ``RTT0``:
  queueing (M/D/1 terms), PCIe time, the delayed-ACK timer, the send buffer refilling. It is
  iterated three times with the rates it yields.
- Sharing: max-min fair progressive filling (SimGrid's flow-level model): raise all unfrozen
  flows' rates together until a constraint saturates (bisection on the common rate, the loads
  being monotone but not linear in the rates), freeze the flows that cross it, repeat.

Reported ``rtt_us``: ``RTT0`` for a window-bound flow, else ``window / rate`` (Little's law with
the full window in flight, the queueing at the bottleneck included); loss 0 by construction.
Left out (the DES has them): loss and its onset, queueing delays and latency distributions
(so a window-limited loop through a nearly busy context, e.g. the peer's softirq at 80% in
dev_vmxnet_64_10g_stream, is not slowed by its queue: the issue's M/D/1 or a closed-network
mean-value analysis of the window's segments would be), transients and slow start, delayed
ACKs and other TCP dynamics, doorbell suppression, NAPI polling under load, world-switch cycles
of shared cores, NUMA penalties, service-time jitter, ring and queue limits. ``http`` runs are
read as bulk streams (one flow per connection; request and object turn-around costs left out).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from models import units
from models.vxlan import inner_mtu_bytes
from sim.builder import Model, _seg_max, build
from sim.config import Config
from sim.path import CONTEXT, LINK, PCIE, RING, FlowPath, flow_paths

REGIMES = {"context": "cpu-bound", "link": "link-bound", "pcie": "pcie-bound",
           "window": "window-bound"}


# -- progressive filling ----------------------------------------------------------------------

@dataclass
class Filling:
    rates: list[float]
    binding: dict[int, str]         # flow -> the constraint that froze it
    loads: dict[str, float]         # constraint -> load at the solution
    rounds: int = 0
    evaluations: int = 0


def progressive_filling(n: int, loads, capacity: dict[str, float],
                        members: dict[str, set[int]], rel_tol: float = 1e-7) -> Filling:
    """Max-min fair rates of ``n`` flows under constraints ``name: loads(rates)[name] <=
    capacity[name]``, ``members[name]`` the flows whose rate the load depends on. ``loads``
    must be non-decreasing in every rate (it need not be linear). Rounds: all unfrozen flows
    share one level ``t``, raised (bisection) until some constraint is full; the unfrozen flows
    of every full constraint freeze at ``t``. (Dictionary front end of ``fill_arrays``.)"""
    names = list(capacity)
    cap = np.array([capacity[c] for c in names], dtype=float)
    inc = np.zeros((len(names), n), dtype=bool)
    for k, c in enumerate(names):
        inc[k, list(members[c])] = True

    def arr(rates):
        ld = loads(list(rates))
        return np.array([ld[c] for c in names], dtype=float)

    return fill_arrays(n, arr, cap, inc, names, rel_tol)


def fill_arrays(n: int, loads, cap: np.ndarray, inc: np.ndarray, names: list[str],
                rel_tol: float = 1e-7) -> Filling:
    """Progressive filling with constraints as arrays: ``loads(rates) -> array`` over the
    constraints, ``cap`` their capacities, ``inc[c, i]`` flow ``i`` crosses constraint ``c``."""
    rates = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)
    binding: dict[int, str] = {}
    level, rounds, evals = 0.0, 0, 0

    def at(t: float) -> np.ndarray:
        return np.where(frozen, rates, t)

    while not frozen.all():
        rounds += 1
        active = inc[:, ~frozen].any(axis=1)
        if not active.any():
            raise ValueError("unbounded flows: some flow crosses no constraint")

        def excess(t: float) -> float:
            """The fullest active constraint's load / capacity - 1 at level ``t``."""
            nonlocal evals
            evals += 1
            return float(np.max(loads(at(t))[active] / cap[active])) - 1

        # Bracket the level, starting from the linear extrapolation of a unit step, then
        # Brent's method on the (monotone, piecewise smooth) excess.
        lo = level
        e_lo = excess(lo)
        step = max(level, 1.0)
        e_step = excess(lo + step)
        if e_step < 0:
            slope = (e_step - e_lo) / step
            hi = lo + (-e_lo / slope if slope > 0 else step) * 1.5 + step
            while excess(hi) < 0:
                hi = hi * 2
                if hi > 1e18:
                    raise ValueError("unbounded flows: some flow crosses no constraint")
        else:
            hi = lo + step
        if e_lo >= 0:
            hi = lo
        else:
            hi = brentq(excess, lo, hi, xtol=rel_tol * hi * 1e-2, rtol=rel_tol * 1e-2)
            while excess(hi) > 0:   # stay feasible
                hi *= 1 - rel_tol
        level = hi
        ld = loads(at(level))
        ratio = np.where(active, ld / cap, -1.0)
        full = np.flatnonzero(ratio >= 1 - 1e-5)
        if not len(full):  # numerical corner: freeze on the fullest constraint
            full = np.array([int(np.argmax(ratio))])
        for c in full[np.argsort(-ratio[full])]:
            for i in np.flatnonzero(inc[c] & ~frozen):
                frozen[i] = True
                rates[i] = level
                binding[int(i)] = names[c]
    ld = loads(rates)
    return Filling(list(rates), binding, {c: float(v) for c, v in zip(names, ld)}, rounds,
                   evals)


# -- the network description ------------------------------------------------------------------

# The per-flow quantities (per second) every rate is expressed in.
G, D, S, CALLS, NIC_PK, SW_PK, STACK_PK, A_DATA, READS, A, T, IR, IA = range(13)
_LINEAR = (D, S, CALLS, NIC_PK, SW_PK, STACK_PK, A_DATA)   # proportional to G
# charge "per"/"unit" -> quantity, by section and side of the wire
_RATES = {
    ("data", "send"): {"send() call": CALLS, "segment": S, "frame": D, "packet": S,
                       "doorbell": S, "pass": S},
    ("data", "recv"): {"interrupt": IR, "virtual interrupt": IR, "pass": IR,
                       "NIC packet": NIC_PK, "frame": D, "packet (aggregate)": STACK_PK,
                       "recv() call": CALLS},          # "packet": SW_PK (host) / NIC_PK (peer)
    ("acks", "send"): {"ACK train": T, "ACK": A, "packet": A, "frame": A, "doorbell": T,
                       "pass": T},
    ("acks", "recv"): {"interrupt": IA, "virtual interrupt": IA, "pass": IA,
                       "NIC packet": A, "frame": A, "packet": A, "ACK": A},
}


# Charges whose rate depends on how busy a context is, left out on purpose: a virtual interrupt
# wakes a halted vCPU only while the vCPU idles between interrupts, which a CPU-bound steady
# state (the regime this engine is for) never does; in light-load runs the DES's CPU is higher.
_LOAD_DEPENDENT = {"virtual interrupt that finds the vCPU halted"}


@dataclass
class _Flow:
    path: FlowPath
    mss: int
    hdr: int
    seg: int                      # sender's segment payload
    window: int
    per_g: dict                   # quantity -> per byte of goodput (the linear ones)
    data_queue: str = ""
    ack_queue: str = ""
    data_link: str = ""
    ack_link: str = ""
    frame_wire: int = 0
    ack_wire: int = 0


@dataclass
class _Net:
    cfg: Config
    model: Model
    flows: list[_Flow]
    ctx_core: dict[str, str]               # context name -> core key
    ctx_host: dict[str, bool]
    core_clock: dict[str, float]
    core_host: dict[str, bool]
    link_rate: dict[str, float]            # bytes/s
    link_prop_s: dict[str, float]
    pcie_rate: dict[str, float]            # bytes/s, key = channel name (PCI-X: shared)
    unknown: set = field(default_factory=set)
    # compiled (``_compile``)
    keys: list = field(default_factory=list)        # (context, term) | ("link", name) | ...
    e_key: np.ndarray = None
    e_flow: np.ndarray = None
    e_q: np.ndarray = None
    e_coef: np.ndarray = None
    e_section: np.ndarray = None                    # 0 data, 1 acks (context entries), -1 other
    per_g: np.ndarray = None                        # n x 13
    dq: np.ndarray = None
    aq: np.ndarray = None
    queues: list = field(default_factory=list)
    ack_frame_bytes: np.ndarray = None


def _core_key(core, host: bool) -> str:
    return f"{'host' if host else 'peer'}:{id(core)}:{core.index}"


def describe_network(cfg: Config) -> _Net:
    """Build the model (not run) and read its paths and capacities."""
    if cfg.workload.kind not in ("tcp_stream", "http"):
        raise ValueError(f"fluid engine: workload.kind={cfg.workload.kind!r} not modelled yet "
                         "(tcp_stream only; http as bulk streams)")
    model = build(cfg)
    paths = flow_paths(model)
    ctx_core, ctx_host, core_clock, core_host = {}, {}, {}, {}
    for core in model.cpu.cores:
        k = _core_key(core, True)
        core_clock[k], core_host[k] = core.params.clock_hz, True
    for ctx in model.contexts:
        ctx_core[ctx.name], ctx_host[ctx.name] = _core_key(ctx.core, True), True
    for peer in model.peers:
        for ctx in peer.contexts():
            k = _core_key(ctx.core, False)
            ctx_core[ctx.name], ctx_host[ctx.name] = k, False
            core_clock[k], core_host[k] = ctx.core.params.clock_hz, False
    link_rate, link_prop = {}, {}
    for nic in [*model.nics, *(p.nic for p in model.peers)]:
        lp = nic.tx_link.params
        link_rate[nic.tx_link.name] = units.gbps_to_bytes_per_s(lp.line_rate_gbps)
        link_prop[nic.tx_link.name] = units.ns_to_s(lp.propagation_ns)
    pcie_rate = {}
    for card in model.cards:
        for ch in (card.up, card.down):
            pcie_rate[ch.name] = units.gbps_to_bytes_per_s(ch.rate_gbps)
    net = _Net(cfg, model, [], ctx_core, ctx_host, core_clock, core_host, link_rate, link_prop,
               pcie_rate)
    hdr = units.tcp_header_bytes(cfg.tcp.timestamps)
    mss = units.mss_bytes(inner_mtu_bytes(cfg.hypervisor.vswitch.vxlan, cfg.nic.link.mtu_bytes),
                          cfg.tcp.timestamps)
    vxlan = cfg.hypervisor.vswitch.vxlan.enabled
    scales = cfg.guest.stack.window_scaling and cfg.peer.stack.window_scaling
    window = cfg.workload.socket_bytes if scales else min(
        cfg.workload.socket_bytes, units.TCP_MAX_UNSCALED_WINDOW_BYTES)
    wire = units.vxlan_frame_wire_bytes if vxlan else units.frame_wire_bytes
    for fp in paths:
        vnic = model.vnics[fp.vm]
        if fp.direction == "tx":   # the peer receives: its LRO, no software LRO
            seg = _seg_max(vnic.tso and cfg.nic.tso, cfg, mss)
            hw = cfg.peer.lro_max_bytes // mss if cfg.peer.lro_max_bytes else 1
            sw = 1
        else:
            seg = _seg_max(cfg.nic.tso, cfg, mss)
            hw = cfg.nic.lro_max_bytes // mss if cfg.nic.lro else 1
            sw = (cfg.hypervisor.software_lro_max_bytes // mss
                  if cfg.hypervisor.features.software_lro and vnic.takes_aggregates else 1)
        # A window travels as ceil(window / seg_max) equal segments: the receiver's window
        # reopens only when its application has read (the window update), so the sender gets
        # the whole window back at once (DES: 2 segments per 64KB window, 1 per 8KB).
        seg = window / math.ceil(window / seg)
        b = math.ceil(seg / mss)                   # frames per segment
        nic_pk = math.ceil(b / min(hw, b)) / seg if hw > 1 else b / seg
        sw_pk = nic_pk if hw > 1 else (math.ceil(b / min(sw, b)) / seg if sw > 1 else b / seg)
        stack_pk = sw_pk if fp.direction == "rx" else nic_pk
        f = (b / seg) / stack_pk
        per_g = {D: b / seg, S: 1 / seg, CALLS: 1 / cfg.workload.message_bytes,
                 NIC_PK: nic_pk, SW_PK: sw_pk, STACK_PK: stack_pk,
                 A_DATA: stack_pk * min(1.0, f / 2)}
        fl = _Flow(fp, mss, hdr, seg, window, per_g)
        for section in ("data", "acks"):
            hops = getattr(fp, section)
            link_i = next(i for i, h in enumerate(hops) if h.kind == LINK)
            rx_ring = next((h.name for h in hops[link_i:] if h.kind == RING), "")
            if section == "data":
                fl.data_link, fl.data_queue = hops[link_i].name, rx_ring
            else:
                fl.ack_link, fl.ack_queue = hops[link_i].name, rx_ring
        fl.frame_wire, fl.ack_wire = wire(math.ceil(seg / b) + hdr), wire(hdr)
        net.flows.append(fl)
    _compile(net)
    return net


def _compile(net: _Net) -> None:
    """Every demand as an entry (key, flow, quantity, coefficient): cycles of a (context,
    term), bytes of a link or PCIe direction, per unit of one of the flow's quantities."""
    keys: dict = {}
    ek, ef, eq, ec, es = [], [], [], [], []

    def add(key, i, q, coef, section=-1):
        if coef:
            ek.append(keys.setdefault(key, len(keys)))
            ef.append(i), eq.append(q), ec.append(coef), es.append(section)

    p = net.cfg.pcie
    ovh, mps, mrr, desc = p.tlp_overhead_bytes, p.max_payload_bytes, \
        p.max_read_request_bytes, p.descriptor_bytes

    def tlp(n_bytes: float) -> float:
        return n_bytes + math.ceil(n_bytes / mps) * ovh

    for i, fl in enumerate(net.flows):
        host_rx = fl.path.direction == "rx"
        for s_i, section in enumerate(("data", "acks")):
            side = "send"
            for hop in getattr(fl.path, section):
                if hop.kind == LINK:
                    side = "recv"
                elif hop.kind == CONTEXT:
                    table = dict(_RATES[(section, side)])
                    if (section, side) == ("data", "recv"):
                        table["packet"] = SW_PK if host_rx else NIC_PK
                    for c in hop.charges:
                        for what, cyc in ((c.per, c.fixed_cycles), (c.unit, c.per_packet_cycles)):
                            if not cyc:
                                continue
                            if what in _LOAD_DEPENDENT:
                                continue
                            if what not in table:
                                net.unknown.add((c.term, what))
                                continue
                            add((hop.name, c.term), i, table[what], cyc, s_i)
                        if section == "data":
                            add((hop.name, c.term), i, G, c.per_byte_cycles, s_i)
                elif hop.kind == PCIE:
                    ch = hop.name
                    up = ch.endswith(".up")
                    if section == "data" and host_rx:      # RX frames + write-backs up
                        add(("pcie", ch), i, D,
                            tlp(fl.frame_wire - units.ETH_FRAMING_BYTES + 4) + desc + ovh)
                    elif section == "data":                # TSO segments fetched, doorbells
                        seg_l2 = fl.seg + fl.hdr + 14
                        add(("pcie", ch), i, S, tlp(seg_l2) + desc + ovh + p.doorbell_bytes + ovh)
                        add(("pcie", ch.replace(".down", ".up") if not up else ch), i, S,
                            math.ceil(seg_l2 / mrr) * ovh)
                    elif host_rx:                          # ACKs sent: fetched, doorbell
                        add(("pcie", ch), i, A, tlp(fl.hdr + 14) + desc + ovh)
                        add(("pcie", ch), i, T, p.doorbell_bytes + ovh)
                    else:                                  # ACK frames received
                        add(("pcie", ch), i, A, tlp(fl.hdr + 14) + desc + ovh)
        add(("link", fl.data_link), i, D, fl.frame_wire)
        add(("link", fl.ack_link), i, A, fl.ack_wire)
    net.keys = list(keys)
    net.e_key, net.e_flow, net.e_q = np.array(ek), np.array(ef), np.array(eq)
    net.e_coef, net.e_section = np.array(ec, dtype=float), np.array(es)
    n = len(net.flows)
    net.per_g = np.zeros((n, 13))
    for i, fl in enumerate(net.flows):
        for q, v in fl.per_g.items():
            net.per_g[i, q] = v
    net.queues = sorted({fl.data_queue for fl in net.flows} | {fl.ack_queue for fl in net.flows})
    qi = {q: k for k, q in enumerate(net.queues)}
    net.dq = np.array([qi[fl.data_queue] for fl in net.flows])
    net.aq = np.array([qi[fl.ack_queue] for fl in net.flows])
    net.ack_frame_bytes = np.array([fl.hdr for fl in net.flows], dtype=float)


# -- demands at given rates -------------------------------------------------------------------

def _interrupts(bursts: np.ndarray, frames: np.ndarray, bytes_per_s: np.ndarray,
                co) -> np.ndarray:
    """Interrupts/s of receive queues: one per arriving burst, at most one per timer unless
    the frame threshold fires first."""
    if co.mode == "adaptive":
        bpu = bytes_per_s / 1e6
        timer_us = np.where(bpu < co.adaptive_low_bytes_per_us, co.adaptive_lowest_timer_us,
                            np.where(bpu < co.adaptive_bulk_bytes_per_us,
                                     co.adaptive_low_timer_us, co.adaptive_bulk_timer_us))
    else:
        timer_us = np.full(len(bursts), co.timer_us)
    with np.errstate(divide="ignore"):
        per_timer = np.where(timer_us > 0, 1e6 / np.maximum(timer_us, 1e-300), np.inf)
    return np.minimum(bursts, np.maximum(frames / co.max_frames, per_timer))


def _share(total: np.ndarray, part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(whole > 0, total * part / np.where(whole > 0, whole, 1), 0.0)


@dataclass
class State:
    """Everything the demands give at one rate vector (bytes/s of payload per flow)."""

    rates: np.ndarray
    quantities: np.ndarray        # flows x 13 (per second)
    entry: np.ndarray             # each compiled entry's value per second
    key_load: np.ndarray          # per key: cycles/s or bytes/s
    queue_interrupts: np.ndarray


def demands(net: _Net, rates) -> State:
    co = net.cfg.nic.coalescing
    g = np.asarray(rates, dtype=float)
    Q = net.per_g * g[:, None]
    Q[:, G] = g
    nq = len(net.queues)
    bursts = np.bincount(net.dq, Q[:, S], nq)
    frames = np.bincount(net.dq, Q[:, D], nq)
    nbytes = np.bincount(net.dq, g, nq)
    irq_data = _interrupts(bursts, frames, nbytes, co)
    Q[:, IR] = _share(irq_data[net.dq], Q[:, S], bursts[net.dq])
    # One read task per receiving pass (at most one per stack packet), each opening the window
    # by more than 2 MSS: one window-update ACK, a train of its own.
    Q[:, READS] = np.minimum(Q[:, STACK_PK], Q[:, IR])
    Q[:, A] = Q[:, A_DATA] + Q[:, READS]
    Q[:, T] = np.minimum(Q[:, A_DATA], Q[:, IR]) + Q[:, READS]
    bursts_all = bursts + np.bincount(net.aq, Q[:, T], nq)
    frames_all = frames + np.bincount(net.aq, Q[:, A], nq)
    bytes_all = nbytes + np.bincount(net.aq, Q[:, A] * net.ack_frame_bytes, nq)
    irq = _interrupts(bursts_all, frames_all, bytes_all, co)
    Q[:, IA] = _share(irq[net.aq], Q[:, T], bursts_all[net.aq])
    entry = net.e_coef * Q[net.e_flow, net.e_q]
    key_load = np.bincount(net.e_key, entry, len(net.keys))
    return State(g, Q, entry, key_load, irq)


# -- RTT and the solve ------------------------------------------------------------------------

def _rtt0(net: _Net, st: State) -> np.ndarray:
    """Each flow's path delays at the state's rates (no queueing): propagation, one segment and
    one ACK on the wire, coalescing timers, one segment's / ACK train's service times."""
    co = net.cfg.nic.coalescing
    timer = units.us_to_s(co.timer_us if co.mode == "static" else co.adaptive_bulk_timer_us)
    n = len(net.flows)
    t = np.zeros(n)
    for i, fl in enumerate(net.flows):
        t[i] = (net.link_prop_s[fl.data_link] + net.link_prop_s[fl.ack_link]
                + math.ceil(fl.seg / fl.mss) * fl.frame_wire / net.link_rate[fl.data_link]
                + fl.ack_wire / net.link_rate[fl.ack_link]
                + (timer if fl.seg / fl.mss < co.max_frames else 0.0) + timer)
    ctx = net.e_section >= 0
    clock = np.array([net.core_clock[net.ctx_core[k[0]]] if k[0] in net.ctx_core else 1.0
                      for k in net.keys])
    per = np.where(net.e_section == 0, st.quantities[net.e_flow, S],
                   st.quantities[net.e_flow, T])
    with np.errstate(divide="ignore", invalid="ignore"):
        secs = np.where(ctx & (per > 0), st.entry / np.where(per > 0, per, 1)
                        / clock[net.e_key], 0.0)
    return t + np.bincount(net.e_flow, secs, n)


@dataclass
class _Problem:
    names: list[str]
    cap: np.ndarray
    inc: np.ndarray
    rows: list                     # per constraint: ("key", [key indices]) or ("window", i)


def _problem(net: _Net) -> tuple[_Problem, dict]:
    n = len(net.flows)
    by_core: dict[str, list[int]] = {}
    link_keys, pcie_keys = [], []
    for k, key in enumerate(net.keys):
        if key[0] == "link":
            link_keys.append(k)
        elif key[0] == "pcie":
            pcie_keys.append(k)
        else:
            by_core.setdefault(net.ctx_core[key[0]], []).append(k)
    names, caps, groups = [], [], []
    core_name = {}
    for core, ks in by_core.items():
        ctxs = sorted({net.keys[k][0] for k in ks})
        name = f"core {'host' if net.core_host[core] else 'peer'} {core.split(':')[-1]} " \
               f"({', '.join(ctxs)})"
        core_name[core] = name
        names.append(name), caps.append(net.core_clock[core]), groups.append(ks)
    for k in link_keys:
        names.append(f"link {net.keys[k][1]}"), caps.append(net.link_rate[net.keys[k][1]])
        groups.append([k])
    for k in pcie_keys:
        names.append(f"pcie {net.keys[k][1]}"), caps.append(net.pcie_rate[net.keys[k][1]])
        groups.append([k])
    m = len(names)
    key_row = np.zeros(len(net.keys), dtype=int)
    for r, ks in enumerate(groups):
        key_row[ks] = r
    inc = np.zeros((m + n, n), dtype=bool)
    inc[key_row[net.e_key], net.e_flow] = True
    inc[m + np.arange(n), np.arange(n)] = True
    names += [f"window flow {fl.path.flow}" for fl in net.flows]
    cap = np.array(caps + [0.0] * n)
    return _Problem(names, cap, inc, key_row), {"m": m, "core_name": core_name}


def _solve_net(net: _Net, iterations: int = 3):
    n = len(net.flows)
    prob, aux = _problem(net)
    m = aux["m"]

    def loads(rates):
        st = demands(net, rates)
        return np.concatenate([np.bincount(prob.rows, st.key_load, m), rates])

    window = np.array([fl.window for fl in net.flows], dtype=float)
    rtt = np.full(n, 1e-4)
    fill = st = None
    evals = 0
    for _ in range(iterations):
        prob.cap[m:] = window / rtt
        fill = fill_arrays(n, loads, prob.cap, prob.inc, prob.names)
        evals += fill.evaluations
        st = demands(net, fill.rates)
        rtt = _rtt0(net, st)
    fill.evaluations = evals
    aux.update(capacity=dict(zip(prob.names, prob.cap)), rtt0=rtt)
    return fill, st, aux


def solve(cfg: Config):
    """The fluid engine's answer for ``cfg``: a ``sim.runner.Results`` (summary, tables)."""
    from sim.runner import Results
    net = describe_network(cfg)
    fill, st, aux = _solve_net(net)
    # No timings in the results: the same config gives the same numbers (time it outside).
    summary, tables = _report(net, fill, st, aux)
    return Results(cfg, summary, {k: None for k in summary}, [summary], tables)


def _kind(constraint: str) -> str:
    return {"core": "context", "link": "link", "pcie": "pcie",
            "window": "window"}[constraint.split()[0]]


def _report(net: _Net, fill: Filling, st: State, aux: dict) -> tuple[dict, dict]:
    cap, rtt0 = aux["capacity"], aux["rtt0"]
    rates = np.asarray(fill.rates)
    gbps = units.bytes_per_s_to_gbps(rates.sum())
    core_cycles: dict[str, float] = {}
    ctx_cycles: dict[str, float] = {}
    terms, links, pcie = [], [], []
    for k, key in enumerate(net.keys):
        v = float(st.key_load[k])
        if key[0] == "link":
            links.append({"link": key[1], "gbps": units.bytes_per_s_to_gbps(v),
                          "util_pct": 100 * v / net.link_rate[key[1]]})
        elif key[0] == "pcie":
            pcie.append({"channel": key[1], "gbps": units.bytes_per_s_to_gbps(v),
                         "util_pct": 100 * v / net.pcie_rate[key[1]]})
        else:
            terms.append({"context": key[0], "term": key[1], "cycles_per_s": v})
            ctx_cycles[key[0]] = ctx_cycles.get(key[0], 0.0) + v
            core = net.ctx_core[key[0]]
            core_cycles[core] = core_cycles.get(core, 0.0) + v
    host_cycles = sum(v for k, v in core_cycles.items() if net.core_host[k])
    host_capacity = sum(c for k, c in net.core_clock.items() if net.core_host[k])
    flows = pd.DataFrame({"flow": [fl.path.flow for fl in net.flows],
                          "vm": [fl.path.vm for fl in net.flows],
                          "goodput_gbps": [units.bytes_per_s_to_gbps(r) for r in rates]})
    contexts = pd.DataFrame([{"context": c, "host": net.ctx_host[c],
                              "util_pct": 100 * v / net.core_clock[net.ctx_core[c]]}
                             for c, v in sorted(ctx_cycles.items())])
    cost_terms = pd.DataFrame(terms).sort_values(["context", "term"], ignore_index=True)
    rows = []
    for i, fl in enumerate(net.flows):
        c = fill.binding[i]
        rows.append({"flow": fl.path.flow, "vm": fl.path.vm, "kind": _kind(c),
                     "constraint": c, "util_pct": float(100 * fill.loads[c] / cap[c])})
    bottleneck = pd.DataFrame(rows)
    by_kind = bottleneck.assign(g=rates).groupby("kind")["g"].sum()
    regime = REGIMES[by_kind.idxmax()] if len(by_kind) else "idle"
    Q = st.quantities
    tx = np.array([fl.path.direction == "tx" for fl in net.flows])
    # host NIC: TX packets (a segment is one) + frames delivered up (an LRO aggregate is one)
    host_pk = np.where(tx, Q[:, S] + Q[:, A], Q[:, A] + Q[:, NIC_PK]).sum()
    window = np.array([fl.window for fl in net.flows], dtype=float)
    windowed = np.array([fill.binding[i].startswith("window") for i in range(len(rates))])
    with np.errstate(divide="ignore"):
        rtts = np.where(windowed | (rates <= 0), rtt0, np.maximum(rtt0, window / rates))
    summary = {
        "goodput_gbps": float(gbps),
        "host_cpu_util_pct": float(100 * host_cycles / host_capacity),
        "cycles_per_bit": float(host_cycles / units.gbps_to_bits_per_s(gbps)) if gbps
        else math.nan,
        "wire_frames_per_s": float((Q[:, D] + Q[:, A]).sum()),
        "host_packets_per_s": float(host_pk),
        "loss_ratio": 0.0,
        "rtt_us": units.s_to_us(float(rtts.mean())),
        "regime": regime,
        "fluid_rounds": fill.rounds,
        "fluid_evaluations": fill.evaluations,
    }
    cores = pd.DataFrame([{"core": k.split(":")[-1], "host": net.core_host[k],
                           "util_pct": 100 * core_cycles.get(k, 0.0) / c}
                          for k, c in net.core_clock.items()])
    tables = {"flows": flows, "contexts": contexts, "cost_terms": cost_terms,
              "bottleneck": bottleneck, "cores": cores, "links": pd.DataFrame(links),
              "pcie": pd.DataFrame(pcie)}
    if net.unknown:
        summary["fluid_unpriced_units"] = "; ".join(sorted(f"{t}/{u}" for t, u in net.unknown))
    return summary, tables


# -- both engines -----------------------------------------------------------------------------

COMPARED = ("goodput_gbps", "host_cpu_util_pct", "cycles_per_bit", "wire_frames_per_s",
            "host_packets_per_s", "loss_ratio", "rtt_us")


def compare(cfg: Config, des_summary: dict | None = None, measure_s: float = 0.1,
            replications: int = 1) -> pd.DataFrame:
    """Both engines on ``cfg``: metric, des, fluid, rel_diff ((fluid - des) / des). The DES
    runs a short window unless ``des_summary`` (e.g. stored answers) is given."""
    if des_summary is None:
        from sim.runner import run_experiment
        short = replace(cfg, run=replace(cfg.run, measure_s=measure_s,
                                         replications=replications, engine="des"))
        des_summary = run_experiment(short).summary
    fl = solve(cfg).summary
    rows = []
    for m in COMPARED:
        d, f = des_summary.get(m, math.nan), fl.get(m, math.nan)
        try:
            rel = (f - d) / d if d else math.nan
        except TypeError:
            rel = math.nan
        rows.append({"metric": m, "des": d, "fluid": f, "rel_diff": rel})
    return pd.DataFrame(rows)
