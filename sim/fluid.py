"""The fluid (steady-state) engine: TCP_STREAM and multicast solved analytically from the
declared data path.

``workload.kind=tcp_stream`` (direction tx or rx, any number of VMs, sessions and NIC ports;
``http`` read as bulk streams; the other end a native peer, or a partner VM on one vswitch,
across two vswitches or two hosts: ``topology``) and ``udp_multicast`` (streams against replication capacity,
the excess lost; ``_solve_multicast``). It builds the model (``sim.builder.build``, cheap;
nothing runs), reads every flow's path (``sim.path.flow_paths``: contexts with their ``Charge``
terms, rings, PCIe directions, links) and the same parameters, and finds the steady state by
max-min fair progressive filling. No cost is restated here: every cycle comes from a ``Charge``
of the path. Load-dependent mechanisms (docs/fluid.md): wake-ups of halted vCPUs
(``_halt_wakeups``), a busy receiver polling (``_polling``: multicast's vector, a host NIC
queue's handler, a vCPU's vNIC ring; bursts of a refilling sender: ``B``), world switches on
shared cores (``_world_switches``), paced senders, NUMA penalties (``_numa_entries``), a window
bound in the pieces the reads reopen with residual waits at busy cores (``_rtt0``,
``_residual_waits``; pieces that go round coupled: ``_coupled_rtt``; the mean-value analysis
``_window_mva`` is off: ``WINDOW_QUEUEING``). ``compare_all``
runs every experiment in both engines (``python -m sim compare --all``).
TCP_RR (one session) and ping: ``sim.fluid_rr`` (``solve`` dispatches). Poll mode
(``hypervisor.poll_mode``): PMD threads spin (``_poll_spin``), the NIC queues they read take
each burst (``_polled_rings``). Not modelled: several TCP_RR sessions, loss dynamics, latency distributions; of the DES's newer mechanisms, the
reschedule IPIs and the ACKs sent from the vCPU that took a batch in (``models.guest.Vm``).

Batching: closed forms, per flow of goodput ``G`` (payload bytes/s)
--------------------------------------------------------------------
``mss`` from the MTU (VXLAN-reduced if tunnelled), ``seg_max`` the sender's largest segment (a
TSO segment, or one MSS), ``W`` the window, ``msg`` = ``workload.message_bytes``.

- segments: a window travels as ``ceil(W / seg_max)`` equal segments, ``seg = W / ceil(W /
  seg_max)`` (the receiver reopens its window only when its application has read, so the
  sender gets a whole window back at once: 2 segments per 64KB window, 1 per 8KB, as the DES
  shows), but whole TSO segments from a deferring Linux sender whose window holds
  ``tso_win_divisor`` of them (``TSO_DEFERRAL``); ``S = G / seg`` segments/s (TX packets;
  bursts on the wire) of ``b = ceil(seg / mss)`` frames; data frames/s ``D = b * S``;
  ``send()`` and ``recv()`` calls ``G / msg``. A writer-ahead sender puts each piece its
  receiver's reads reopen on the wire at once (its segments back to back): its bursts ``B``
  are the pieces (``_piece_burst``). Under Linux's ACK rule a window whose whole MSS fit in
  one segment that the receiving stack takes as one aggregate goes round as that one segment,
  ``W`` its whole MSS: its ACK is the read's window update, and Nagle holds the sub-MSS
  remainder (``_nagle_held_tail``).
- sender side: one pass of the vNIC backend and one doorbell per segment (an upper bound: the
  DES skips a paravirtual vNIC's doorbell while its backend still polls).
- receiving NIC queue: bursts arrive whole and the coalescer fires ``timer`` after the first
  pending one or at ``max_frames`` pending frames: interrupts/s ``= min(bursts/s, max(frames/s /
  max_frames, 1 / timer))`` (the brief's form with bursts for frames: a 45-frame TSO burst is one
  interrupt in the DES, not 45). Adaptive coalescing: the timer of the latency class the
  queue's bytes/us select (no hysteresis). A queue's interrupts are shared among its flows by
  their bursts; each is one pass of the vector's handler per destination vNIC and one virtual
  interrupt of the vCPU (an upper bound: a busy guest polls on instead), except on the ACK
  side: a window update reaches the vCPU while it still polls its data ACK train and rides
  that pass, so a sending vCPU takes ``min(IA, min(ACKs, data-side interrupts))`` virtual
  interrupts and passes (``VIA``). The DES's rule, measured (``_ack_virtual_interrupts``: one
  per ACK interrupt less the window updates that find the vCPU's poller busy), is off
  (``WINDOW_UPDATE_RIDES_OTHERS``): with a saturated reader's reads merged it follows the DES
  on the random draws, but on the experiments it exposes the host ACK queue's interrupt count
  and the wake-up share (docs/fluid.md, "Seventh slice", "Eighth slice").
- LRO: hardware (``nic.lro``; the peer's ``peer.lro_max_bytes``) merges a segment's frames into
  ``ceil(b / (lro_max // mss))`` NIC packets; software LRO (hypervisor feature, for a vNIC and
  guest that take aggregates) does the same after the driver with ``software_lro_max_bytes``
  when the NIC did not. The receiving stack sees those packets. A segment the peer interleaves
  among Q' others' (``peer.tx_interleave_queues``, capped by the flows on the link) reaches the
  handler over Q' of its wire times, one pass per segment's wire time (or per coalescing timer
  if longer), and is merged per pass (``docs/models.md``, interleaved transmit).
- ACKs: one per two frames of single-frame packets, one per aggregate (``P * min(1, f / 2)``,
  ``P`` stack packets/s of ``f`` frames); plus one window update per read task, with one read
  task per receiving pass (``min(P, interrupts)``). Under Linux's rule (``guest.stack.ack_rule:
  rcv_mss``, the receiving stack's) one per two stack packets (``P / 2``) and no window
  updates (the DES's read-time ACK of a short leftover outside pingpong mode is left out),
  but for a window that goes round as one aggregate (``_nagle_held_tail``): only the read's
  window update, one per segment.
  ACK trains: ``min(data ACKs, receiving passes)`` plus the window updates (each its own
  train). Each ACK is one packet and one frame. A reader whose core is saturated reads
  several pieces at once, what arrived during its previous read (``_merged_reads``): fewer
  read tasks, so fewer window updates.
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
- the TCP window: ``window / RTT`` per flow, with ``window = workload.socket_bytes`` (65535
  without window scaling on both ends) going round in the pieces its reads reopen
  (``_reads_per_window``; one burst behind the send() copies for a sender that refills its
  send buffer behind the ACKs, ``_Flow.refill``) and ``RTT`` built from the path's own delays:
  two propagations, serialisation of one piece and one ACK on the wire, the coalescing timer on
  each side (0 when a piece alone reaches ``max_frames``), the service time of one piece's (one
  ACK train's; a writer-ahead sender's: the window update's, ``UPDATE_TRAIN_ON_LOOP``) cycles on
  every context of the data (ACK) path, and the residual of the task in
  service at every core it visits (``_residual_waits``). Left out: queues longer than one task,
  PCIe time, the delayed-ACK timer. Iterated (damped) with the rates it yields.
- Sharing: max-min fair progressive filling (SimGrid's flow-level model): raise all unfrozen
  flows' rates together until a constraint saturates (bisection on the common rate, the loads
  being monotone but not linear in the rates), freeze the flows that cross it, repeat.

Reported ``rtt_us``: the window bound's ``RTT`` for a window-bound flow, else ``window / rate``
(Little's law with the full window in flight, the queueing at the bottleneck included); loss 0
by construction. Left out (the DES has them): loss and its onset, queues longer than the task
in service and latency distributions, transients and slow start, delayed
ACKs and other TCP dynamics, doorbell suppression, the NUMA I/O
scheduler's moves (the built layout is priced), service-time jitter, ring and queue limits. ``http`` runs are read as bulk streams (one flow per connection; request and object
turn-around costs left out).
"""
from __future__ import annotations

import gc
import math
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from models import costs, units
from models.coalescing import steady_timer_us
from sim import metrics
from sim.builder import Model, _mss, _nic_params, _seg_max, build
from sim.config import Config
from sim.path import CONTEXT, LINK, PCIE, RING, FlowPath, flow_paths

REGIMES = {"context": "cpu-bound", "link": "link-bound", "pcie": "pcie-bound",
           "window": "window-bound", "offered": "offered-load"}


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
    loads = _keep_last(loads)

    def at(t: float) -> np.ndarray:
        return np.where(frozen, rates, t)

    while not frozen.all():
        rounds += 1
        active = inc @ ~frozen   # crosses an unfrozen flow (a boolean product: no copy)
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
            # scipy's NaN guard around the function refers to itself (a reference cycle), which
            # would keep ``loads`` and all it reads (the network, the model) alive until the
            # cyclic collector runs; it gets a handle emptied once the root is found
            handle = [excess]
            hi = brentq(lambda t: handle[0](t), lo, hi, xtol=rel_tol * hi * 1e-2,
                        rtol=rel_tol * 1e-2)
            handle.clear()
            while excess(hi) > 0:   # stay feasible
                hi *= 1 - rel_tol
        level = hi
        ld = loads(at(level))
        ratio = np.where(active, ld / cap, -1.0)
        full = np.flatnonzero(ratio >= 1 - 1e-5)
        if not len(full):  # numerical corner: freeze on the fullest constraint
            full = np.array([int(np.argmax(ratio))])
        for c in full[np.argsort(-ratio[full])]:
            now = np.flatnonzero(inc[c] & ~frozen)
            frozen[now] = True
            rates[now] = level
            binding.update(dict.fromkeys(now.tolist(), names[c]))
    ld = loads(rates)
    return Filling(list(rates), binding, {c: float(v) for c, v in zip(names, ld)}, rounds,
                   evals)


def _keep_last(loads):
    """``loads`` that keeps its last evaluation: called again with the same rates (the same
    bytes, so the same bits), it returns that array instead of evaluating again. The filling
    evaluates the level it settles on inside its search (``excess``), then again to freeze
    its flows, and the next round starts from that level; the final rates are the last
    round's level. The array returned is the same object: callers only read it."""
    last: list = [None, None]

    def kept(rates):
        key = np.asarray(rates, dtype=float).tobytes()
        if last[0] != key:
            last[1] = loads(rates)
            last[0] = key
        return last[1]
    return kept


# -- the network description ------------------------------------------------------------------

# The per-flow quantities (per second) every rate is expressed in.
G, D, S, CALLS, NIC_PK, SW_PK, STACK_PK, A_DATA, READS, A, T, IR, IA, VIA, B, IRQ_D, IRQ_A = \
    range(17)
# quantities per flow (B: the data's bursts on the wire, what the sender emits at once; IR, IA
# the receiving passes of data and ACKs, IRQ_D, IRQ_A their interrupts, ``_handler_busy``)
NQ = 17
_LINEAR = (D, S, CALLS, NIC_PK, SW_PK, STACK_PK, A_DATA)   # proportional to G
# The driver's poll calls (``models.hypervisor``: ceil(N / budget) per pass over N packets) are
# declared as the budget's share per packet and this per-pass part, which a pass pays only
# beyond that share: per flow, max(0, passes - packets / budget) polls (``_napi_budget``).
POLL_BEYOND = "poll beyond budget"
# charge "per"/"unit" -> quantity, by section and side of the wire
_RATES = {
    ("data", "send"): {"send() call": CALLS, "segment": S, "frame": D, "packet": S,
                       "doorbell": S, "pass": S},
    ("data", "recv"): {"interrupt": IRQ_D, "virtual interrupt": IR, "pass": IR,
                       "NIC packet": NIC_PK, "frame": D, "packet (aggregate)": STACK_PK,
                       "recv() call": CALLS, "LRO packet": NIC_PK, POLL_BEYOND: IR},
    # ("data", "recv")'s "packet": SW_PK at the host, NIC_PK at the peer (set where read)
    ("acks", "send"): {"ACK train": T, "ACK": A, "packet": A, "frame": A, "doorbell": T,
                       "pass": T},
    ("acks", "recv"): {"interrupt": IRQ_A, "virtual interrupt": IA, "pass": IA,
                       "NIC packet": A, "frame": A, "packet": A, "ACK": A, POLL_BEYOND: IA},
}


# Charges whose rate depends on how busy a context is, left out on purpose: a virtual interrupt
# wakes a halted vCPU only while the vCPU idles between interrupts, which a CPU-bound steady
# state (the regime this engine is for) never does; in light-load runs the DES's CPU is higher.
_LOAD_DEPENDENT = {"virtual interrupt that finds the vCPU halted"}
# Charges on data packets only, that the ACKs crossing the same hop do not pay (software LRO
# takes data packets: ``models.hypervisor.HypervisorRx.cost``).
_DATA_ONLY = {"LRO packet"}


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
    data_links: tuple = ()        # every link the data crosses (teaming: wire, then switch)
    ack_links: tuple = ()
    frame_wire: int = 0
    ack_wire: int = 0
    # The sender's send buffer cannot hold the window and the next segment (Windows: SO_SNDBUF
    # as asked): its writer refills only what ACKs free, so a window leaves as one burst of
    # ``chunk`` bytes behind the send() copies (``_rtt0``); else it writes ahead, ``chunk = seg``.
    refill: bool = False
    chunk: float = 0.0
    seg_max: int = 0              # the sender's largest segment (a TSO segment or one MSS)
    # window-update ACKs per read task: 1 under the ``frames`` ACK rule, 0 under Linux's
    # ``rcv_mss`` rule (tcp_cleanup_rbuf updates only a window that has halved)
    read_acks: float = 1.0
    # the sender's HyStart exit (``hystart_low_window`` segments; 0: plain slow start, which
    # doubles the window a round trip up to the receiver's window: ``_slow_start_pieces``)
    hystart_low_window: int = 0
    mss_wire: int = 0             # a full frame's bytes on the wire (one MSS of payload)


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
    ctx_obj: dict = field(default_factory=dict)     # context name -> the model's Context
    coalescing: object = None                       # receive queues' CoalescingParams
    q_polled: np.ndarray = None                     # per queue: read by a poll-mode vswitch
    # compiled (``_compile``)
    keys: list = field(default_factory=list)        # (context, term) | ("link", name) | ...
    e_key: np.ndarray = None
    e_flow: np.ndarray = None
    e_q: np.ndarray = None
    e_coef: np.ndarray = None
    e_section: np.ndarray = None                    # 0 data, 1 acks (context entries), -1 other
    per_g: np.ndarray = None                        # n x NQ
    dq: np.ndarray = None
    read_acks: np.ndarray = None
    aq: np.ndarray = None
    queues: list = field(default_factory=list)
    ack_frame_bytes: np.ndarray = None
    e_halt: np.ndarray = None                       # wake-ups of halted vCPUs
    e_poll: np.ndarray = None                       # per-interrupt work a busy context polls past
    e_vector: np.ndarray = None                     # ... of a host NIC queue's handler
    e_up: np.ndarray = None                         # the polling handler an entry follows (-1)
    e_background: np.ndarray = None                 # work that does not wait for interrupts
    e_app: np.ndarray = None                        # the applications' send()/recv() calls
    tasks: list = field(default_factory=list)       # (context, flow, quantity): a task each
    cpu: object = None                              # _CpuView
    queue_handler: np.ndarray = None                # per queue: its handler's context (-1)
    e_per_irq: np.ndarray = None                    # entries paid per interrupt, pass, train
    e_budget: tuple = ((), (), 1.0)                 # ``_napi_budget``: entries, quantities, 1/budget
    e_recv_app: np.ndarray = None                   # the receiver's recv() calls (data)
    e_vring: np.ndarray = None                      # a vCPU's receive-pass work (``_ack_vints``)
    via_ctx: np.ndarray = None                      # per flow: the vCPU its ACKs interrupt (-1)
    pre: dict = field(default_factory=dict)         # per-evaluation indices (``_precompute``)


def _core_key(core, who: str) -> str:
    """A core's key: ``who`` (host: the host under test; remote: the partner VMs' host;
    peer: a native client), then the core."""
    return f"{who}:{id(core)}:{core.index}"


# An aggregate cap (frames) that never splits a segment: VM to VM on one vswitch, a TSO segment
# reaches a vNIC that takes aggregates whole.
WHOLE_SEGMENT = math.inf


def describe_network(cfg: Config, replication: int = 0) -> _Net:
    """Build the model (not run) and read its paths and capacities."""
    if cfg.workload.kind not in ("tcp_stream", "http", "udp_multicast"):
        raise ValueError(f"fluid engine: workload.kind={cfg.workload.kind!r} not modelled yet "
                         "(tcp_stream, udp_multicast; http as bulk streams)")
    model = build(cfg, replication, declare_only=True)   # read, never run: no TCP state
    paths = flow_paths(model)
    ctx_core, ctx_host, core_clock, core_host = _placement(model)
    link_rate, link_prop = {}, {}
    for nic in [*(n for h in model.hosts() for n in h.nics), *(p.nic for p in model.peers)]:
        lp = nic.tx_link.params
        link_rate[nic.tx_link.name] = units.gbps_to_bytes_per_s(lp.line_rate_gbps)
        link_prop[nic.tx_link.name] = units.ns_to_s(lp.propagation_ns)
    for link in (link for sw in model.switches for link in (sw.to_peer, *sw.to_member)):
        link_rate[link.name] = units.gbps_to_bytes_per_s(link.params.line_rate_gbps)
        link_prop[link.name] = units.ns_to_s(link.params.propagation_ns)
    pcie_rate = {}
    for card in (c for h in model.hosts() for c in h.cards):
        for ch in (card.up, card.down):
            pcie_rate[ch.name] = units.gbps_to_bytes_per_s(ch.rate_gbps)
    net = _Net(cfg, model, [], ctx_core, ctx_host, core_clock, core_host, link_rate, link_prop,
               pcie_rate)
    net.ctx_obj = _contexts_by_name(model)
    net.coalescing = _coalescing(cfg, model)
    hdr = units.tcp_header_bytes(cfg.tcp.timestamps)
    mss = _mss(cfg)
    vxlan = cfg.hypervisor.vswitch.vxlan.enabled
    vm_other = cfg.topology.vm_partner  # the other end is a VM (cross_vswitch, remote_host)
    other_stack = cfg.guest.stack if vm_other else cfg.peer.stack
    scales = cfg.guest.stack.window_scaling and other_stack.window_scaling
    window = cfg.workload.socket_bytes if scales else min(
        cfg.workload.socket_bytes, units.TCP_MAX_UNSCALED_WINDOW_BYTES)
    wire = units.vxlan_frame_wire_bytes if vxlan else units.frame_wire_bytes
    sndbufs = _sndbuf_bytes(model)
    # The peer's interleaved transmit (``peer.tx_interleave_queues``): received flows per link
    on_link: dict[str, int] = {}
    for fp in paths:
        if fp.direction == "rx" and not vm_other:
            link = next((h.name for h in fp.data if h.kind == LINK), "")
            on_link[link] = on_link.get(link, 0) + 1
    # A flow's numbers but its path depend only on the direction, its vNIC (and the partner's
    # on one vswitch), its sender's send buffer and, received from an interleaving peer, how
    # many flows share its link: made once for each (S3: 1600 connections, a few kinds).
    made: dict = {}
    for fp in paths:
        vnic = model.vnics[fp.vm]
        into_vnic = model.vms[cfg.workload.vms + fp.vm].vnic \
            if cfg.topology.kind == "same_vswitch" and fp.direction == "tx" else None
        shared_link = next((h.name for h in fp.data if h.kind == LINK), "") \
            if fp.direction == "rx" and not vm_other else None
        key = (fp.direction, id(vnic), id(into_vnic), sndbufs.get(fp.flow),
               on_link.get(shared_link, 1) if shared_link is not None else None)
        if key not in made:
            sw_lro = (cfg.hypervisor.software_lro_max_bytes // mss
                      if cfg.hypervisor.features.software_lro and vnic.takes_aggregates else 1)
            if cfg.topology.kind == "same_vswitch":
                # switched by the sender's backend (``models.vswitch``): no NIC, so no hardware
                # LRO; a TSO segment stays whole into a vNIC that takes aggregates, else frames
                seg = _seg_max(vnic.tso and cfg.nic.tso, cfg, mss)
                into = model.vms[cfg.workload.vms + fp.vm].vnic if fp.direction == "tx" else vnic
                hw, sw = 1, (WHOLE_SEGMENT if into.takes_aggregates else 1)
            elif fp.direction == "tx" and vm_other:  # the partner VM receives as the VM would
                seg = _seg_max(vnic.tso and cfg.nic.tso, cfg, mss)
                hw = cfg.nic.lro_max_bytes // mss if cfg.nic.lro else 1
                sw = sw_lro
            elif fp.direction == "tx":   # the peer receives: its LRO, no software LRO
                seg = _seg_max(vnic.tso and cfg.nic.tso, cfg, mss)
                hw = cfg.peer.lro_max_bytes // mss if cfg.peer.lro_max_bytes else 1
                sw = 1
            else:
                seg = _seg_max((vnic.tso if vm_other else True) and cfg.nic.tso, cfg, mss)
                hw = cfg.nic.lro_max_bytes // mss if cfg.nic.lro else 1
                sw = sw_lro
            # A window travels as ceil(window / seg_max) equal segments: the receiver's window
            # reopens only when its application has read (the window update), so the sender gets
            # the whole window back at once (DES: 2 segments per 64KB window, 1 per 8KB).
            seg_max_bytes = seg
            linux = (cfg.guest.stack if fp.direction == "rx" else other_stack).ack_rule == "rcv_mss"
            # the receiving device hands aggregates up with their segment size: Linux's
            # receive-MSS estimate stays one MSS (``models.tcp.TcpReceiver.rx_gso_size``)
            receiving = (into if cfg.topology.kind == "same_vswitch" else
                         vnic if fp.direction == "rx" or vm_other else None)
            gso = linux and receiving is not None and receiving.rx_gso_size
            win = window
            held = linux and not gso and cfg.workload.rate_limit_mbps <= 0 and _nagle_held_tail(
                window, mss, seg, hw, sw, fp.direction == "rx" and not vm_other
                and cfg.peer.tx_interleave_queues > 1)
            if held:
                win = mss * (window // mss)
            seg = win / math.ceil(win / seg)
            if cfg.workload.rate_limit_mbps > 0:
                # A paced sender writes one message when it is due and the window is open: each
                # message leaves as a segment of its own (DES, vmdq_low_load_off: 16KB segments)
                seg = min(seg_max_bytes, cfg.workload.message_bytes, window)
            sender = cfg.guest.stack if fp.direction == "tx" else other_stack
            if TSO_DEFERRAL and sender.tso_win_divisor and not held and seg < seg_max_bytes \
                    and cfg.workload.rate_limit_mbps <= 0 \
                    and win >= sender.tso_win_divisor * seg_max_bytes:
                # TSO deferral (``models.tcp.TcpSender._defers``, Linux's tcp_tso_should_defer):
                # while less than 1/divisor of the window is open a segment the window cuts
                # short waits for more ACKs; where a whole TSO segment is under 1/divisor of
                # the window, every segment waits for a whole one. DES, 256KB windows from
                # RHEL6 senders (v6_driver_native, v6_numa_*, v6_vnic_rx_55, hw_25g_rx,
                # kvm_vhost_net_tx): median and mean segment 65160 bytes (equal pieces of the
                # window: 52429). Smaller windows (64KB: g80_pcie_*, vxlan_tx*) are left as
                # equal pieces: there a segment is what a write adds or an ACK train opens
                # (DES median 12-20 MSS, pieces 22.6)
                seg = seg_max_bytes
            b = math.ceil(seg / mss)                   # frames per segment
            nic_pk = math.ceil(b / min(hw, b)) / seg if hw > 1 else b / seg
            sw_pk = nic_pk if hw > 1 else (math.ceil(b / min(sw, b)) / seg if sw > 1 else b / seg)
            if hw <= 1 < sw and fp.direction == "rx" and not vm_other \
                    and cfg.peer.tx_interleave_queues > 1:
                # Interleaved with the segments of up to Q - 1 other flows on its link, a segment
                # reaches the host's handler over Q of its own wire times; the handler takes each
                # arriving segment's worth in a pass of its own unless its coalescing timer is
                # longer (DES: ~1 pass per segment at 10 us), and software LRO merges per pass.
                link = next((h.name for h in fp.data if h.kind == LINK), "")
                q = min(cfg.peer.tx_interleave_queues, on_link.get(link, 1))
                seg_wire_s = units.transmit_time_s(b * wire(math.ceil(seg / b) + hdr),
                                                   cfg.nic.link.line_rate_gbps)
                pass_s = max(seg_wire_s, units.us_to_s(cfg.nic.coalescing.timer_us))
                pieces = min(b, max(1, round(q * seg_wire_s / pass_s)))
                k, r = divmod(b, pieces)
                sw_pk = (r * math.ceil((k + 1) / sw) + (pieces - r) * math.ceil(k / sw)) / seg
            stack_pk = sw_pk if fp.direction == "rx" or vm_other else nic_pk
            f = (b / seg) / stack_pk
            # Linux's rule (``rcv_mss``) ACKs every second segment its stack takes in, aggregate
            # or frame, when an aggregate counts whole in its receive-MSS estimate; the
            # ``frames`` rule one per two frames, at most one per aggregate, as does Linux's
            # when aggregates come with their segment size (``gso``: an aggregate of more
            # than one MSS is ACKed on arrival). A window of one aggregate (``held``) has no
            # ACK on arrival, only the read's update.
            a_data = 0.0 if held else stack_pk * (
                0.5 if linux and not gso else min(1.0, f / 2))
            per_g = {D: b / seg, S: 1 / seg, CALLS: 1 / cfg.workload.message_bytes,
                     NIC_PK: nic_pk, SW_PK: sw_pk, STACK_PK: stack_pk, A_DATA: a_data}
            fl = _Flow(fp, mss, hdr, seg, win, per_g, seg_max=seg_max_bytes,
                       read_acks=0.0 if linux and not held else 1.0)
            sndbuf = sndbufs.get(fp.flow)
            seg_top = min(seg_max_bytes, win)
            fl.refill = sndbuf is not None and sndbuf < win + seg_top
            fl.chunk = seg_top if fl.refill else win / _reads_per_window(win, seg_max_bytes)
            # What leaves at once (one output() of the DES's sender, its segments back to back): a
            # segment; but a refilling sender's writer waits for room for a whole message and its
            # write goes out at once, as several segments without TSO (DES,
            # dev_e1000_64_10g_stream: 24.6K interrupts/s at the peer for 22.9K 16KB writes/s,
            # not one per segment or per 20-us timer)
            burst = seg
            if fl.refill and cfg.workload.rate_limit_mbps <= 0:
                burst = max(seg, min(cfg.workload.message_bytes, window))
            elif PIECE_BURSTS and cfg.workload.rate_limit_mbps <= 0 and \
                    hasattr(net.model.workload, "connections"):
                burst = _piece_burst(seg, fl.chunk)
            fl.per_g[B] = 1 / burst
            made[key] = (seg, win, per_g, seg_max_bytes, fl.read_acks, fl.refill, fl.chunk,
                         wire(math.ceil(seg / b) + hdr), wire(hdr))
        seg, win, per_g, seg_max_bytes, read_acks, refill, chunk, frame_wire, ack_wire = made[key]
        fl = _Flow(fp, mss, hdr, seg, win, dict(per_g), seg_max=seg_max_bytes,
                   read_acks=read_acks)
        fl.refill, fl.chunk, fl.frame_wire, fl.ack_wire = refill, chunk, frame_wire, ack_wire
        fl.hystart_low_window = (other_stack if fp.direction == "rx" else
                                 cfg.guest.stack).hystart_low_window
        fl.mss_wire = wire(mss + hdr)
        for section in ("data", "acks"):
            hops = getattr(fp, section)
            link_i = _receiving_from(hops)
            rx_ring = next((h.name for h in hops[link_i:] if h.kind == RING), "")
            links = tuple(h.name for h in hops if h.kind == LINK)
            first = links[0] if links else ""       # VM to VM on one vswitch: no link
            if section == "data":
                fl.data_link, fl.data_queue, fl.data_links = first, rx_ring, links
            else:
                fl.ack_link, fl.ack_queue, fl.ack_links = first, rx_ring, links
        net.flows.append(fl)
    _compile(net)
    # the candidates by identity (``fl in piled`` compared flows field by field, paths and
    # hops included; a flow equal to a candidate is one itself: the rule reads only fields)
    piled = {id(fl) for fl in _piled_windows(net.flows, cfg.workload.rate_limit_mbps > 0)}
    net.pre["pile"] = np.array([i for i, fl in enumerate(net.flows) if id(fl) in piled],
                               dtype=int)
    return net


# A writer-ahead sender sends each reopening of its window at once (``_piece_burst``).
PIECE_BURSTS = True


def _piece_burst(seg: float, piece: float) -> float:
    """What a writer-ahead sender puts on the wire at once: the piece of the window a read
    reopened (``_reads_per_window``), as its segments back to back (the DES's ``TcpSender``
    fills the window when the update comes: a full TSO segment and the remainder right behind;
    e35_tx_single_vm, one 2.5GbE session at 4 GHz with 128KB: 61568 | 65160 + 4344 bytes a
    window, at 10GbE with 256KB 65160 + 8688 | 57976 | 65160 | 65160). The receiver's NIC
    takes the remainder in the pass its segment's interrupt started, or in the handler's next
    poll: one interrupt per piece (DES, one 10GbE sender at 2.93 GHz with 256KB: 10840 peer
    interrupts/s for 13400 segments/s and 2710 windows/s of 4 pieces). A piece within one
    segment is that segment."""
    return max(seg, piece)


def _nagle_held_tail(window: int, mss: int, seg_max: int, hw: int, sw: int,
                     interleaved: bool) -> bool:
    """Under Linux's ACK rule (``rcv_mss``, ``models.tcp.TcpReceiver``): does the window go
    round as its whole MSS only, one segment, its sub-MSS remainder never sent? When the whole
    MSS of the window fit in one segment that the receiving stack takes as one packet (an LRO
    aggregate), it is not ACKed on arrival (no more than rcv_mss unacknowledged:
    ``__tcp_ack_snd_check``) but by the window update after the read (``tcp_cleanup_rbuf``),
    which frees the flight and reopens the window at once: the sender sends the whole-MSS
    segment and Nagle holds the remainder behind it, every round (DES, kvm_vhost_net_tx with
    one 64KB session: 45 x 1448 = 65160 bytes a round, the 376-byte remainder never sent; its
    ACK after the peer's recv() copy). A segment taken as several packets is ACKed on arrival
    every second one and read as it comes, so its window goes round in the reads' pieces as
    under the ``frames`` rule (DES, g80_pcie_gen1_x8: two segments per window without LRO);
    the peer's interleaved transmit splits a segment per pass (left to that general form)."""
    tail = window % mss
    whole = window - tail
    if not tail or interleaved or whole < mss or whole > seg_max:
        return False
    merge = hw if hw > 1 else sw
    return merge >= whole // mss                       # the segment is one aggregate


def _receiving_from(hops) -> int:
    """Where a section's receiving side starts: its first link, or VM to VM on one vswitch
    (no link) the hop after the sender's backend that switches it into the partner's vNIC."""
    for i, h in enumerate(hops):
        if h.kind == LINK:
            return i
    return next(i + 1 for i, h in enumerate(hops)
                if h.kind == CONTEXT and any(c.term == costs.BACKEND_TX for c in h.charges))


def _coalescing(cfg: Config, model: Model):
    """The receive queues' coalescing: the NIC's; VM to VM on one vswitch, the vNICs' emulated
    virtual-interrupt delay (``vnic.rx_interrupt_delay_us``, no frame threshold)."""
    if cfg.topology.kind != "same_vswitch":
        return cfg.nic.coalescing
    return model.vnics[0].rxq[0].coalescer.params


def _reads_per_window(window: float, seg_max: int) -> int:
    """How many pieces a writer-ahead sender's window goes round in: the receiver reopens the
    window by what each read takes, the sender fills each reopening at once, so the pieces are
    the reads. A window within one segment goes as one; a larger one never as one (a piece is
    read while the other is in flight) and as many segment-sized pieces as it holds whole
    (the DES, e35_tx_single_vm with one 10GbE session at 2.93 GHz: 16KB and 8KB windows in
    one read each; 32, 48, 64, 96 and 128KB windows in two reads of half a window, 192KB in
    three of 64KB, though their segments are ceil(window / seg_max) a window)."""
    return 1 if window <= seg_max else max(2, int(window // seg_max))


def _slow_start_pieces(fl: _Flow, initial_segments: int) -> tuple[float, float]:
    """A writer-ahead sender's window of two pieces as its slow start leaves them (bytes, the
    larger first). Each round's burst ``B`` (``initial_segments`` MSS, the sender's
    ``TcpParams.initial_cwnd_segments``, doubling a round: ``models.tcp.TcpSender`` counts
    bytes) is taken in, its data ACK train lets the sender fill the window but the unread
    ``B`` (``W - B``, the congestion window allowing ``2B``), and the read's window update
    sends ``B`` again; once ``2B >= W - B`` the window goes round as those two pieces, ``B``
    and ``W - B``, for good. The DES (one session, 8KB messages, 2.5GbE, max_frames 16, 2 GHz,
    seed 2, e35_rx_single_vm; the peer's ``TcpSender._send`` logged): initial window 3,
    32KB: 17376 + 15392 bytes; 48KB: 17376 + 31776; 64KB: 34752 + 30784 (e35_tx_single_vm,
    ``_coupled_rtt``: the same); 128KB: 69504 + 61568; initial window 4, 64KB: 23168 + 42368;
    10, 64KB: 28960 (sent as 20272 + 8688) + 36576. The mean piece twice where the window
    goes round in other than two pieces (``_reads_per_window``, ``_piled_windows``), behind a
    refilling writer, or where HyStart may end the slow start below the window (not
    traced)."""
    window = fl.window
    if fl.refill or not 0 < fl.chunk < window or round(window / fl.chunk) != 2 or (
            fl.hystart_low_window and fl.hystart_low_window * fl.mss < window):
        return fl.chunk, fl.chunk
    burst = initial_segments * fl.mss
    while 3 * burst < window:
        burst *= 2
    if burst >= window:
        return fl.chunk, fl.chunk
    return float(max(burst, window - burst)), float(min(burst, window - burst))


def _payload_wire_s(net: _Net, fl: _Flow, payload: float) -> float:
    """``payload`` bytes in full frames and a last partial one, on the flow's slowest data
    link (s); a frame's bytes on the wire are its payload and ``mss_wire - mss``."""
    full, part = divmod(payload, fl.mss)
    over = fl.mss_wire - fl.mss
    size = full * fl.mss_wire + (part + over if part > 0 else 0.0)
    return max((size / net.link_rate[k] for k in fl.data_links), default=0.0)


# A Linux sender with ``tso_win_divisor`` whose window holds that many whole TSO segments sends
# whole ones (``describe_network``); False: equal pieces of the window, as without deferral.
TSO_DEFERRAL = True


# A window of one segment and a tail under one MSS goes round whole where its pieces pile up
# at the receive handler it shares with other flows (``_piled_windows``, ``_pieces_pile_up``,
# ``_solve_piled``); False: in its reads' pieces (``_reads_per_window``).
WINDOWS_PILE_UP = True


def _piled_windows(flows: list, paced: bool) -> list:
    """The flows whose window goes round as one piece, not in ``_reads_per_window``'s: a
    writer-ahead sender's window of one full segment and a tail under one MSS
    (``seg_max < window < seg_max + mss``: a 64KB window, 65160-byte TSO segments) whose data
    share a receive queue, so one handler, with another flow's.

    The DES (two to three 10GbE receivers at 2, 2.93 and 4 GHz, 64KB windows, 8KB messages,
    ``host.cpu.jitter_cv`` 0.2): the window first goes round in two pieces of about half a
    window, each read while the other flies; the handler takes each arriving piece in a pass
    of its own. A flow's pieces leave its sender 60-80 us apart (each as the read of the
    other opens the window), while the handler's pass over another flow's piece takes 60 us
    at 2 GHz: sooner or later both pieces of a flow wait in the ring behind another flow's
    pass, the handler takes them in one pass and hands them to the guest together, and the
    reader takes the whole window in one read. Its window update reopens the whole window,
    which the sender fills at once: one full segment (``seg_max``), the tail under one MSS
    held (Nagle) until that segment's ACK, read as a piece of its own. The window now goes
    round whole, which nothing undoes (the reader never again sees part of the big segment):
    the round trip is the whole window's service at the handler, the guest's receive pass
    and the read, one after the other (``_rtt0`` with ``chunk = window``), plus the residual
    waits behind the other flows' windows at the shared handler (``_residual_waits``). DES,
    2 VMs at 2 GHz: 2.62 Gbps on seeds 1-3 (the pipelined point, 4.1-4.2 Gbps on some seeds
    at ``jitter_cv`` 0.05, is the fragile one); one VM alone keeps its two pieces (2.17).
    These are the candidates; ``_pieces_pile_up`` says which of them pile up. Left out: when
    the pile-up happens (its odds; a rule, not a rate), a larger window (its pieces would stay
    several segments), a paced or refilling sender (one burst already)."""
    by_queue: dict[str, int] = {}
    for fl in flows:
        by_queue[fl.data_queue] = by_queue.get(fl.data_queue, 0) + 1
    return [fl for fl in flows
            if not fl.refill and not paced and fl.data_queue and by_queue[fl.data_queue] > 1
            and fl.seg_max < fl.window < fl.seg_max + fl.mss]


def _pieces_pile_up(net: _Net, st: State, cand: np.ndarray) -> np.ndarray:
    """Of the candidate flows ``cand`` (``_piled_windows``), those whose two pieces pile up in
    their receive queue's ring, at the state ``st`` of the pipelined solve: a piece waits there
    while the handler serves the other flows' pieces, ``H_i`` = the sum over the other flows on
    the queue of the handler's seconds per piece of theirs; the flow's own pieces leave its
    sender spaced by its reader's work, and on a core that also reads other flows by theirs,
    ``R_i`` = the sum over the other flows of their data work per piece on the reader's core
    (receive pass and recv() calls). They pile up where ``H_i > R_i``: the other flows hold the
    handler longer than the reader's sharing spaces the pieces. Seconds per piece as in
    ``_rtt0`` (one piece's cycles / the core's clock). Fluid engine, half-window pieces at
    2 GHz: the handler ~48 us a piece, a reader ~85 us; one VM with two sessions on one vCPU:
    H 46 < R 85, two pieces (DES: no whole-window read in 0.02 s on seeds 1, 2, 2.46-2.62 Gbps,
    fluid 2.65); two such VMs: H 146 > R 85, whole windows (DES, jitter_cv 0.2: 4.51 Gbps,
    fluid 4.47 whole, 5.30 in pieces); one session per VM: R 0.
    Only where a piece's pass waits for the coalescing timer: a piece whose frames alone reach
    ``max_frames`` (or a timer of 0) raises its queue's interrupt as it lands
    (``models.coalescing.Coalescer.notify``), so the handler's pass starts on it at once
    (``models.base.RingPoller.kick``) unless a pass is running; its pieces stay apart. DES
    (pcie branch, 2 VMs, 1 session, 10GbE, 64KB/8KB, 2 GHz, default jitter, warm-up 0.3 s,
    seeds 8451/1/2/3): max_frames 16 4.42 Gbps on all four, 23 or 24 4.33, 64 with timer_us 0
    4.57 (pieces, never whole in 0.4 s); max_frames 64 with its 10-us timer 4.29 on three, 2.73
    (whole windows) on seed 1. With ``host.cpu.jitter_cv`` 0.2 both thresholds end whole
    (2.70-2.78 from 0.3 s on): the rule follows the DES at its default jitter."""
    cpu, pre = net.cpu, net.pre
    n, nc = len(net.flows), len(cpu.ctx_core)
    data = (net.e_section == 0) & (cpu.e_ctx >= 0)
    per = st.quantities[net.e_flow, S]
    with np.errstate(divide="ignore", invalid="ignore"):
        secs = np.where(data & (per > 0), st.entry * pre["burst_scale"]
                        / np.where(per > 0, per, 1) / pre["key_clock"][net.e_key], 0.0)
    # seconds per piece, per flow and context (each cell summed in the entries' order, as
    # ``np.add.at`` did)
    at = np.bincount(net.e_flow[data] * nc + cpu.e_ctx[data], secs[data], n * nc).reshape(n, nc)
    handler = net.queue_handler[net.dq]
    reader = np.full(n, -1)
    rd = np.flatnonzero(net.e_recv_app)
    reader[net.e_flow[rd]] = cpu.ctx_core[cpu.e_ctx[rd]]
    on_core = cpu.ctx_core[None, :] == reader[:, None]        # flow i's reader core's contexts
    co = net.coalescing   # a piece that raises its interrupt as it lands
    at_once = net.pre["no_data_timer"] | (co.mode == "static" and co.timer_us == 0)
    piled = np.zeros(len(cand), dtype=bool)
    for k, i in enumerate(cand):
        others = (np.arange(n) != i)
        same_q = others & (net.dq == net.dq[i])
        h = at[same_q, handler[i]].sum() if handler[i] >= 0 else 0.0
        r = at[others][:, on_core[i]].sum() if reader[i] >= 0 else 0.0
        piled[k] = h > r and not at_once[i]
    return piled


def _solve_piled(net: _Net):
    """``_solve_net``; then, where windows pile up at a shared handler (``_pieces_pile_up``
    at the pipelined solve), those flows' windows go round whole (``chunk = window``) and the
    network is solved again."""
    fill, st, aux = _solve_net(net)
    cand = net.pre.get("pile", np.zeros(0, dtype=int))
    if not WINDOWS_PILE_UP or not len(cand):
        return fill, st, aux
    piled = cand[_pieces_pile_up(net, st, cand)]
    if not len(piled):
        return fill, st, aux
    for i in piled:
        net.flows[i].chunk = net.flows[i].window
    _precompute(net)
    return _solve_net(net)


def _sndbuf_bytes(model: Model) -> dict[int, int]:
    """Flow -> the send buffer of its sender as the built model has it (``sndbuf_scale`` x the
    socket; the first connection of the flow); a flow is missing when the workload keeps no
    TCP connections the engine can read. One pass over the connections (S3: 1600)."""
    out: dict[int, int] = {}
    for c in getattr(model.workload, "connections", ()):
        if getattr(c, "flow", None) is not None and hasattr(c, "sender"):
            out.setdefault(c.flow, c.sender.sndbuf)
    return out


def _contexts_by_name(model: Model) -> dict:
    out = {c.name: c for h in model.hosts() for c in h.contexts}
    for peer in model.peers:
        out.update((c.name, c) for c in peer.contexts())
    return out


def _rx_data_node(net: _Net, fl: _Flow, reader):
    """Where a VM receiver's data sit when its application copies them: the node of the core
    whose handler wrote them into the vNIC (``Vm.rx_data_home``: the hypervisor's receive
    handler, ``models.hypervisor``); the reader's own home for a peer or a direct device."""
    if not hasattr(net.model.workload, "connections") or fl.path.direction != "rx" \
            and not net.cfg.topology.vm_partner:
        return None
    for hop in fl.path.data:
        c = net.ctx_obj.get(hop.name)
        if c is not None and hop.kind == CONTEXT and costs.DRIVER_RX in {
                ch.term for ch in hop.charges} and c is not reader:
            return c.core.node
    return None


def _numa_entries(net: _Net, fl: _Flow, hop, section: str, side: str, vm_rx: bool):
    """The NUMA penalty of a context hop as (key, quantity, cycles per unit) entries: the DES's
    ``Context.remote_penalty_cycles`` (per packet and per byte, once per home node that is not
    its core's) on the packets and bytes each of its tasks declares (``numa``); the receive
    handler's ``numa_copy`` into the memory of the VM it delivers to is a ``Charge`` of the
    path (``sim.path._into``), priced as any other. What a task declares, by the kind of hop (the DES's call sites):
    a NIC queue's handler, the frames and IP bytes it takes (``models.nic``); a vNIC's transmit
    backend, its packets and no bytes (zero copy, ``models.vnic.base``); a vCPU or a peer's
    context, by the work the hop does: its packets and payload bytes on the way down
    (``send_down``) and up (its receive pass), the bytes its send()/recv() calls copy
    (``models.workloads.base``), its ACK packets. Placement
    as built (the default layout: the NUMA I/O scheduler's moves are the DES's)."""
    ctx = net.ctx_obj.get(hop.name)
    if ctx is None:
        return []
    per_pk = ctx.remote_penalty_cycles(1, 0)
    per_b = ctx.remote_penalty_cycles(0, 1)
    terms = {c.term for c in hop.charges}
    if not per_pk and not per_b and costs.APP_RECV not in terms:
        return []       # local: every entry below would be 0 (recv() reads another node's)
    data = section == "data"
    out = []
    if costs.DRIVER_RX in terms:                        # a NIC queue's receive handler
        frames, nbytes = (D, None) if data else (A, None)
        out += [((hop.name, costs.NUMA), frames, per_pk + per_b * fl.hdr)]
        if data:
            out += [((hop.name, costs.NUMA), G, per_b)]
        # the copy into a VM's memory (``numa_copy``) is a charge the path declares
    elif costs.BACKEND_TX in terms:                     # a vNIC's transmit backend
        out += [((hop.name, costs.NUMA), S if data else A, per_pk)]
    elif data and side == "send":
        if costs.STACK_TX in terms:                     # send_down: its segments
            out += [((hop.name, costs.NUMA), S, per_pk), ((hop.name, costs.NUMA), G, per_b)]
        if costs.APP_SEND in terms:                     # send() copies
            out += [((hop.name, costs.NUMA), G, per_b)]
    elif data:
        if terms & {costs.STACK_RX, costs.GUEST_DRIVER_RX}:   # the receive pass
            out += [((hop.name, costs.NUMA), STACK_PK if vm_rx else NIC_PK, per_pk),
                    ((hop.name, costs.NUMA), G, per_b)]
        if costs.APP_RECV in terms:   # recv() copies, from where the data sit (``rx_data_home``)
            out += [((hop.name, costs.NUMA), G, ctx.remote_penalty_cycles(
                0, 1, _rx_data_node(net, fl, ctx)))]
    else:                                               # ACKs made or taken
        out += [((hop.name, costs.NUMA), A, per_pk)]
    return [e for e in out if e[2]]


def _compile(net: _Net) -> None:
    """Every demand as an entry (key, flow, quantity, coefficient): cycles of a (context,
    term), bytes of a link or PCIe direction, per unit of one of the flow's quantities."""
    keys: dict = {}
    # The entries as runs of rows of one table: ``tab`` holds rows (key, quantity,
    # coefficient, section, halt, poll, vector, up) (``vector`` a host NIC queue handler's
    # polled entry, ``up`` the handler upstream of one), a context hop's rows once
    # (``_hop_rows``) and every other entry's row where it is made; each run is (its first row
    # in ``tab``, its length, its flow, on its section's receiving side: ``side`` below), in
    # the order of the entries. Expanded once at the end (``_runs_to_entries``).
    tab: list[tuple] = []
    r_start: list[int] = []
    r_len: list[int] = []
    r_flow: list[int] = []
    r_recv: list[bool] = []
    vms = [vm for h in net.model.hosts() for vm in h.vms]
    vcpus = {c.name for vm in vms for c in vm.vcpus}
    # vCPUs that run a direct device's driver in its interrupt (``models.vnic.direct``)
    direct = {c.name for vm in vms if getattr(vm.vnic, "direct", False) for c in vm.vcpus}

    per_hop: dict = {}   # (hop, section, side, polls, up, vm_rx, hdr) -> its rows, NUMA rows
    per_like: dict = {}  # ``_hop_like`` -> the NUMA entries, rows and terms of the first such hop
    sections: dict = {}  # (hops, section, vm_rx, hdr, seg, frame_wire) -> its runs, tasks, ...
    # per flow and section: (its NIC receive queue's ring, the first context after it), None
    # when it does not arrive from a wire (``queue_handler`` below)
    handler_at: list = []

    def add(key, i, q, coef, section=-1, halt=False, poll=False, vector=False, up=None):
        if coef:
            r_start.append(len(tab))
            r_len.append(1)
            r_flow.append(i)
            r_recv.append(side == "recv")
            tab.append((keys.setdefault(key, len(keys)), q, coef, section, halt, poll, vector,
                        up))

    made_rows: dict = {}   # what made some plain entries -> (their first row in ``tab``, count)

    def add_run(i, made, entries, section=-1):
        """``add`` of each (key, quantity, coefficient) of ``entries()`` for flow ``i``: their
        rows made once for each ``made`` (what they depend on), then one run of them a flow."""
        hit = made_rows.get(made)
        if hit is None:
            start = len(tab)
            tab.extend((keys.setdefault(key, len(keys)), q, coef, section, False, False, False,
                        None) for key, q, coef in entries() if coef)
            hit = made_rows[made] = (start, len(tab) - start)
        if hit[1]:
            r_start.append(hit[0])
            r_len.append(hit[1])
            r_flow.append(i)
            r_recv.append(side == "recv")

    p = net.cfg.pcie
    ovh, mps, mrr, desc = p.tlp_overhead_bytes, p.max_payload_bytes, \
        p.max_read_request_bytes, p.descriptor_bytes

    def tlp(n_bytes: float) -> float:
        return n_bytes + math.ceil(n_bytes / mps) * ovh

    def pcie(ch: str, section: str, side: str, fl: _Flow) -> list:
        """A PCIe direction's entries (key, quantity, bytes per unit) for a flow's section."""
        up = ch.endswith(".up")
        if section == "data" and side == "recv":  # RX frames + write-backs up
            return [(("pcie", ch), D,
                     tlp(fl.frame_wire - units.ETH_FRAMING_BYTES + 4) + desc + ovh)]
        if section == "data":                     # TSO segments fetched, doorbells
            seg_l2 = fl.seg + fl.hdr + 14
            return [(("pcie", ch), S, tlp(seg_l2) + desc + ovh + p.doorbell_bytes + ovh),
                    (("pcie", ch.replace(".down", ".up") if not up else ch), S,
                     math.ceil(seg_l2 / mrr) * ovh)]
        if side == "send":                        # ACKs sent: fetched, doorbell
            return [(("pcie", ch), A, tlp(fl.hdr + 14) + desc + ovh),
                    (("pcie", ch), T, p.doorbell_bytes + ovh)]
        return [(("pcie", ch), A, tlp(fl.hdr + 14) + desc + ovh)]   # ACK frames received

    for i, fl in enumerate(net.flows):
        # a VM takes the data in (the host under test's, or a partner VM): its stack sees
        # packets after software LRO
        vm_rx = fl.path.direction == "rx" or net.cfg.topology.vm_partner
        for s_i, section in enumerate(("data", "acks")):
            hops = getattr(fl.path, section)
            # A section whose hops (the same objects) and numbers another flow had gives that
            # flow's entries and tasks again: replayed (S3: the ACK sections, a few kinds)
            same = (tuple(map(id, hops)), s_i, vm_rx, fl.hdr, fl.seg, fl.frame_wire)
            done = sections.get(same)
            if done is not None:
                (starts, lengths, recvs), tasks, side, handler = done
                r_start.extend(starts)
                r_len.extend(lengths)
                r_flow.extend([i] * len(starts))
                r_recv.extend(recvs)
                net.tasks.extend([(name, i, first) for name, first in tasks])
                handler_at.append(handler)
                continue
            mark, t_mark, replayable = len(r_start), len(net.tasks), True
            side = "send"
            recv_from = _receiving_from(hops)
            handler = None
            if hops[recv_from].kind == LINK:
                ring = next((j for j in range(recv_from, len(hops)) if hops[j].kind == RING),
                            None)
                if ring is not None:
                    handler = (hops[ring].name,
                               next((h.name for h in hops[ring:] if h.kind == CONTEXT), None))
            handler_at.append(handler)
            vector = False   # the next context is a host NIC queue's handler
            upstream = None  # the polling handler this section's later contexts follow
            for h_i, hop in enumerate(getattr(fl.path, section)):
                if h_i == recv_from:
                    side = "recv"
                    vector = hop.kind == LINK  # on one vswitch no NIC queue's handler follows
                elif hop.kind == CONTEXT:
                    # A host NIC queue's handler polls its ring while busy (NAPI, as a vCPU
                    # polls its vNIC's): its per-interrupt and per-pass work fills what its
                    # per-packet work leaves (``_polling``; DES, v6_vnic_rx_55: the vector at
                    # 100% takes 30 interrupts/s for 1.74M frames/s)
                    polls = vector and hop.name in net.ctx_obj and hop.name not in vcpus
                    vector = False
                    # a vCPU's virtual interrupts follow its vector's passes (one per pass
                    # that delivered), fewer when the vector polls
                    up = upstream if hop.name in vcpus else None
                    if polls:
                        upstream = hop.name
                    # the hop's entries as they were for the first flow that crossed it in
                    # the same state (``_hop_rows``: nothing in them is the flow's; its NUMA
                    # entries too, but a recv() copy's, which reads where the flow's data sit)
                    at = (id(hop), s_i, side, polls, up, vm_rx, fl.hdr)
                    hit = per_hop.get(at)
                    numa = hit[1] if hit is not None else None
                    if hit is None:
                        # a hop alike one met before (the same charges, state and NUMA
                        # placement, another name: S3's peer application contexts, one a
                        # connection): its rows and NUMA entries are that hop's, renamed
                        # (``_hop_rows_like``)
                        like = _hop_like(net, hop, s_i, side, polls, up, vm_rx, fl.hdr, vcpus,
                                         direct)
                        was = per_like.get(like)
                        if was is not None and was[0] is not None:
                            numa = [((hop.name, key[1]), q, coef) for key, q, coef in was[0]]
                    if numa is None:
                        numa = _numa_entries(net, fl, hop, section, side, vm_rx)
                    if hit is not None and hit[1] is not None:   # the hop's, kept
                        add_run(i, ("numa", at), lambda: numa, s_i)
                    else:
                        for key, q, coef in numa:
                            add(key, i, q, coef, s_i)
                    if hit is None:
                        per_flow = costs.APP_RECV in {c.term for c in hop.charges}
                        if was is None:
                            terms: list = []
                            rows = _hop_rows(net, hop, section, s_i, side, polls, up, vm_rx,
                                             vcpus, direct, keys, terms)
                            per_like[like] = (None if per_flow else numa, rows, terms)
                        else:
                            rows = _hop_rows_like(hop.name, was[1], was[2], keys)
                        hit = per_hop[at] = (rows, None if per_flow else numa, hop, len(tab))
                        tab.extend(rows[1])
                    replayable = replayable and hit[1] is not None   # no recv() copy
                    first, template = hit[0]
                    if first is not None:
                        net.tasks.append((hop.name, i, first))
                    if template:
                        r_start.append(hit[3])
                        r_len.append(len(template))
                        r_flow.append(i)
                        r_recv.append(side == "recv")
                elif hop.kind == PCIE:
                    add_run(i, ("pcie", hop.name, section, side, fl.frame_wire, fl.seg, fl.hdr),
                            lambda: pcie(hop.name, section, side, fl))
            if replayable:
                sections[same] = ((r_start[mark:], r_len[mark:], r_recv[mark:]),
                                  [(name, first) for name, _, first in net.tasks[t_mark:]],
                                  side, handler)
        add_run(i, ("link", fl.data_links, fl.ack_links, fl.frame_wire, fl.ack_wire),
                lambda: [*((("link", k), D, fl.frame_wire) for k in fl.data_links),
                         *((("link", k), A, fl.ack_wire) for k in fl.ack_links)])
    for ctx in sorted({k[0] for k in keys if k[0] in net.ctx_core}):
        keys.setdefault((ctx, costs.WORLD_SWITCH), len(keys))
    net.keys = list(keys)
    row, net.e_flow, recv_side = _runs_to_entries(r_start, r_len, r_flow, r_recv)
    tk, tq, tc, ts, th, tp, tv, tu = zip(*tab) if tab else ((),) * 8
    net.e_key, net.e_q = np.array(tk, dtype=int)[row], np.array(tq, dtype=int)[row]
    net.e_coef = np.array(tc, dtype=float)[row]
    net.e_section = np.array(ts, dtype=int)[row]
    net.e_halt = np.array(th, dtype=bool)[row]
    net.e_poll = np.array(tp, dtype=bool)[row]
    key_term = np.array([k[1] for k in net.keys], dtype=object)
    def _entries_of(*terms):   # per entry: is its key's term one of ``terms``
        return np.isin(key_term, terms)[net.e_key] if len(net.e_key) else np.zeros(0, bool)
    net.e_background = _entries_of(costs.APP_SEND)
    net.e_app = _entries_of(costs.APP_SEND, costs.APP_RECV)
    e_recv = _entries_of(costs.APP_RECV)
    net.cpu = _cpu_view(net, net.tasks)
    net.e_vector = np.array(tv, dtype=bool)[row]
    net.e_up = np.array([net.cpu.ctx_index.get(u, -1) if u else -1 for u in tu], dtype=int)[row]
    n = len(net.flows)
    net.per_g = np.zeros((n, NQ))
    if n:   # each flow's quantities per byte of goodput, by one assignment
        net.per_g[np.repeat(np.arange(n), [len(fl.per_g) for fl in net.flows]),
                  [q for fl in net.flows for q in fl.per_g]] = \
            [v for fl in net.flows for v in fl.per_g.values()]
    net.queues = sorted({fl.data_queue for fl in net.flows} | {fl.ack_queue for fl in net.flows})
    qi = {q: k for k, q in enumerate(net.queues)}
    net.dq = np.array([qi[fl.data_queue] for fl in net.flows])
    net.read_acks = np.array([fl.read_acks for fl in net.flows])
    net.aq = np.array([qi[fl.ack_queue] for fl in net.flows])
    # each NIC receive queue's handler (the first context after the ring), whose busy passes
    # hold its coalescer back (``_handler_busy``); -1 for a vNIC's ring (VM to VM, one vswitch)
    # and for a direct device's vCPU (its other work, the application's, is no pass)
    net.queue_handler = np.full(len(net.queues), -1)
    for handler in handler_at:
        if handler is None:
            continue
        ring, ctx = handler
        if ctx in net.cpu.ctx_index and ctx not in vcpus:   # a direct device's vCPU
            net.queue_handler[qi[ring]] = net.cpu.ctx_index[ctx]
    net.e_per_irq = np.isin(net.e_q, (IRQ_D, IRQ_A))
    # per-pass poll entries (``POLL_BEYOND``) and the quantity their budget share is paid on
    budget = _entries_of(costs.DRIVER_POLL) & np.isin(net.e_q, (IR, IA))
    net.e_budget = (np.flatnonzero(budget), np.where(net.e_q[budget] == IR, NIC_PK, A),
                    1.0 / net.cfg.hypervisor.napi_budget_packets)
    net.e_recv_app = e_recv & (net.e_section == 0) & (net.cpu.e_ctx >= 0)
    _vcpu_rx_entries(net, vcpus, recv_side)
    polled = _polled_rings(net.model)
    net.q_polled = np.array([q in polled for q in net.queues], dtype=bool)
    net.ack_frame_bytes = np.array([fl.hdr for fl in net.flows], dtype=float)
    _precompute(net)


def _runs_to_entries(start: list, length: list, flow: list, recv: list) -> tuple:
    """``_compile``'s runs expanded to entries, in the runs' order: per entry its row of the
    table, its flow, whether it is on its section's receiving side. Run ``j`` is the rows
    ``start[j] .. start[j] + length[j] - 1``, each for flow ``flow[j]``."""
    n = np.array(length, dtype=int)
    row = _ranges(np.array(start, dtype=int), n)
    return row, np.repeat(np.array(flow, dtype=int), n), np.repeat(np.array(recv, dtype=bool), n)


def _ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``first[j], first[j] + 1, .., first[j] + count[j] - 1`` for each ``j``, concatenated."""
    before = np.cumsum(count) - count               # elements ahead of each range
    return np.arange(int(count.sum()), dtype=int) + np.repeat(first - before, count)


def _hop_like(net: _Net, hop, s_i: int, side: str, polls: bool, up, vm_rx: bool, hdr: int,
              vcpus: set, direct: set) -> tuple:
    """What a context hop's rows (``_hop_rows``) and NUMA entries (``_numa_entries``, but a
    recv() copy's) depend on besides its name: its charges (the objects), the state it is
    crossed in, whether it is a vCPU, a direct device's vCPU or a context of the model, and
    where its context's work is homed against its core (``remote_penalty_cycles``)."""
    ctx = net.ctx_obj.get(hop.name)
    return (tuple(map(id, hop.charges)), s_i, side, polls, up, vm_rx, hdr, hop.name in vcpus,
            hop.name in direct, None if ctx is None else
            (ctx.home_node, ctx.core.node, id(ctx.core.numa)))


def _hop_rows_like(name: str, made: tuple, terms: list, keys: dict) -> tuple:
    """``_hop_rows`` of a hop alike (``_hop_like``) the one that made ``made`` with the terms
    ``terms`` (one a row), for the hop ``name``: the same rows, each keyed ``(name, term)``,
    the keys made in the same order."""
    first, rows = made
    return first, [(keys.setdefault((name, t), len(keys)), *r[1:]) for t, r in zip(terms, rows)]


def _hop_rows(net: _Net, hop, section: str, s_i: int, side: str, polls: bool, up, vm_rx: bool,
              vcpus: set, direct: set, keys: dict, terms: list | None = None) -> tuple:
    """A context hop's entries but its NUMA ones (``_numa_entries``), for any flow that crosses
    it with the same state: (the quantity of its task or None, rows (key index, quantity,
    coefficient, section, halt, poll, vector, up) in ``_compile``'s order). ``_compile`` reuses
    them for every such flow (S3: 1600 connections over a few hundred hops). ``terms``: if
    given, each row's term is appended to it (``_hop_rows_like``)."""
    rows: list[tuple] = []

    def add(key, q, coef, section=-1, halt=False, poll=False, vector=False, up=None):
        if coef:
            rows.append((keys.setdefault(key, len(keys)), q, coef, section, halt, poll,
                         vector, up))
            if terms is not None:
                terms.append(key[1])
    table = dict(_RATES[(section, side)])
    if (section, side) == ("data", "recv"):
        table["packet"] = SW_PK if vm_rx else NIC_PK
    if (section, side) == ("acks", "recv") and hop.name in vcpus:
        table["virtual interrupt"] = table["pass"] = VIA
    # One task per pass (the quantity that pays the hop's first fixed cost).
    first = next((table.get(c.per) for c in hop.charges if c.fixed_cycles
                  and c.per in table), None)
    for c in hop.charges:
        for what, cyc in ((c.per, c.fixed_cycles), (c.unit, c.per_packet_cycles)):
            if not cyc:
                continue
            if what in _DATA_ONLY and section != "data":
                continue
            if what in _LOAD_DEPENDENT:   # per virtual interrupt, if halted
                # (a direct device's vCPU is woken by the NIC's interrupt)
                irq = "interrupt" if hop.name in direct else "virtual interrupt"
                add((hop.name, c.term), table[irq], cyc, s_i, halt=True, up=up)
                continue
            if what not in table:
                net.unknown.add((c.term, what))
                continue
            # per-interrupt work a busy receiver polls past: a direct device's vCPU (NIC
            # interrupt), a vCPU's virtual interrupt
            add((hop.name, c.term), table[what], cyc, s_i,
                poll=(what == "interrupt" and hop.name in direct)
                or (what == "virtual interrupt" and hop.name in vcpus)
                or (polls and what in ("interrupt", "pass", POLL_BEYOND)),
                vector=polls and what in ("interrupt", "pass", POLL_BEYOND),
                up=up if what in ("virtual interrupt", "pass") else None)
        if section == "data":
            add((hop.name, c.term), G, c.per_byte_cycles, s_i)
    return first, rows


def _precompute(net: _Net) -> None:
    """What every evaluation of the demands reads and that does not depend on the rates: the
    entry subsets (as indices) the polling, wake-up and handler rules sum over, each flow's
    fixed round-trip delays, each key's clock (``net.pre``). Speed only: the sums run over the
    same entries in the same order as the masks they replace."""
    cpu, pre = net.cpu, net.pre
    e_ctx = cpu.e_ctx
    pre["vector"] = _polling_index(e_ctx, net.e_poll & net.e_vector, cpu.ctx_core,
                                   net.e_halt | net.e_poll)
    pre["vcpu"] = _polling_index(e_ctx, net.e_poll & ~net.e_vector, cpu.ctx_core, net.e_halt)
    pre["down"] = np.flatnonzero(net.e_up >= 0)
    # each entry's quantity as a flat index into the flows x quantities array (``_entries``:
    # one 1-D take, the same values as ``Q[e_flow, e_q]``); the receivers' recv() entries
    pre["eq_flat"] = net.e_flow * NQ + net.e_q
    rd = net.e_recv_app
    pre["recv_app"] = (net.e_flow[rd], net.e_coef[rd], pre["eq_flat"][rd], cpu.e_ctx[rd])
    pre["halt"] = _halt_index(e_ctx, net.e_halt, cpu.ctx_core,
                              net.e_app if HALT_APP_RECV and not RX_WAKE_OTHERS
                              else net.e_background)
    filler = net.e_halt | net.e_poll
    pre["filler"] = (np.flatnonzero(filler), net.e_key[filler])
    pre["rx_others"] = _rx_others_index(net)
    pre["busy"] = HANDLER_BUSY and bool((net.queue_handler >= 0).any())
    if pre["busy"]:   # ``_handler_busy``: each flow's own entries at its queues' handlers
        own = (e_ctx >= 0) & ~net.e_halt
        hd, ha = net.queue_handler[net.dq], net.queue_handler[net.aq]
        at_d = own & (e_ctx == hd[net.e_flow])
        at_a = own & (e_ctx == ha[net.e_flow])
        irq_e, rest_e = own & net.e_per_irq, own & ~net.e_per_irq
        pre["handler"] = (np.flatnonzero(irq_e), e_ctx[irq_e], np.flatnonzero(rest_e),
                          e_ctx[rest_e], np.flatnonzero(own), e_ctx[own],
                          np.flatnonzero(at_d), net.e_flow[at_d], np.flatnonzero(at_a),
                          net.e_flow[at_a])
    # the round trip's fixed delays per flow (``_rtt0``): propagation, one burst and one ACK
    # serialised on every link, in the order ``_rtt0`` adds them; and the next piece's wire
    # time on the slowest data link (``_coupled_rtt``)
    co = net.coalescing
    fixed, no_data_timer, piece_wire = [], [], []
    made: dict = {}   # the same links and numbers give the same delays: computed once each
    for fl in net.flows:
        frames = math.ceil(fl.chunk / fl.mss)
        like = (fl.data_links, fl.ack_links, frames, fl.frame_wire, fl.ack_wire)
        if like not in made:
            made[like] = (sum(net.link_prop_s[k] for k in (*fl.data_links, *fl.ack_links))
                          + sum(frames * fl.frame_wire / net.link_rate[k]
                                for k in fl.data_links)
                          + sum(fl.ack_wire / net.link_rate[k] for k in fl.ack_links),
                          max((frames * fl.frame_wire / net.link_rate[k]
                               for k in fl.data_links), default=0.0))
        fixed.append(made[like][0])
        piece_wire.append(made[like][1])
        no_data_timer.append(frames >= co.max_frames)
    pre["rtt_fixed"] = np.array(fixed, dtype=float)
    pre["no_data_timer"] = np.array(no_data_timer, dtype=bool)
    # each key's clock: its context's core's (the same ``clock_hz`` as ``net.core_clock``'s)
    pre["key_clock"] = np.where(cpu.key_ctx >= 0, cpu.core_clock[cpu.ctx_core[
        np.maximum(cpu.key_ctx, 0)]], 1.0) if len(cpu.ctx_core) else np.ones(len(net.keys))
    # per flow, window and piece (bytes), which the rates do not change
    pre["window"] = window = np.array([fl.window for fl in net.flows], dtype=float)
    pre["chunk"] = chunk = np.array([fl.chunk for fl in net.flows], dtype=float)
    seg = np.array([fl.seg for fl in net.flows])
    bytes_q = np.isin(net.e_q, (G, *_LINEAR))
    pre["burst_scale"] = np.where((net.e_section == 0) & bytes_q, (chunk / seg)[net.e_flow],
                                  1.0)
    pre["refill"] = np.array([fl.refill for fl in net.flows], dtype=bool)[net.e_flow]
    pre["others"] = 1 - chunk / window
    # the window's two pieces as the slow start leaves them (``_slow_start_pieces``), where they
    # are unequal: the larger first segment's (at most ``seg_max``) wire time over the
    # smaller's (``_own_pieces``), and the time from the larger's first segment's last frame
    # on the slowest data link to the window's last (``_spaced_pieces``: the rest follows it)
    pieces = np.array([_slow_start_pieces(fl, net.cfg.tcp.initial_cwnd_segments)
                       for fl in net.flows], dtype=float).reshape(len(net.flows), 2)
    pre["pieces"], pre["unequal"] = pieces, pieces[:, 0] > pieces[:, 1]
    first = [min(p, fl.seg_max) for p, fl in zip(pieces[:, 0], net.flows)]
    pre["own_wire_diff_s"] = np.array([
        _payload_wire_s(net, fl, f) - _payload_wire_s(net, fl, p) if u else 0.0
        for fl, f, p, u in zip(net.flows, first, pieces[:, 1], pre["unequal"])])
    pre["spacing_wire_s"] = np.array([
        _payload_wire_s(net, fl, fl.window - f) if u else 0.0
        for fl, f, u in zip(net.flows, first, pre["unequal"])])
    # the entries whose work grows with a piece's bytes (its frames, bytes, calls, ACKs)
    pre["grows"] = np.isin(net.e_q, (G, *_LINEAR, A))
    pre["classes"] = _task_classes(net)
    held = np.array([fl.chunk >= fl.window and fl.seg_max < fl.window < fl.seg_max + fl.mss
                     for fl in net.flows], dtype=bool)
    reader = np.full(len(net.flows), -1)
    rd = np.flatnonzero(net.e_recv_app)
    reader[net.e_flow[rd]] = net.cpu.ctx_core[net.cpu.e_ctx[rd]]
    pre["reader_core"] = reader
    pre["link_waits"] = _link_wait_index(net)
    # per flow, what ``_coupled_rtt`` and ``_spaced_pieces`` read that the rates do not
    # change: a piece's wire time on the slowest data link (s, above), a piece of several
    # segments
    pre["piece_wire_s"] = np.array(piece_wire, dtype=float)
    pre["several"] = np.array([fl.chunk > fl.seg_max for fl in net.flows], dtype=bool)
    pre["update_loop"] = (net.e_section == 1) & (net.read_acks[net.e_flow] > 0) \
        & ~pre["refill"] & ~held[net.e_flow]


# -- demands at given rates -------------------------------------------------------------------

def _polled_rings(model: Model) -> set:
    """Host NIC receive rings a poll-mode vswitch reads (``hypervisor.poll_mode``): built with
    a zero static timer (``sim.builder._nic_params``), each burst is taken by the PMD's next
    pass, counted as one interrupt with the driver's per-interrupt cost (``models.polling``)."""
    return {q.ring.name for h in model.hosts() for nic in h.nics for q in nic.rx_queues
            if q.coalescer.params.mode == "static" and q.coalescer.params.timer_us == 0}


def _interrupts(bursts: np.ndarray, frames: np.ndarray, bytes_per_s: np.ndarray,
                co, polled: np.ndarray | None = None,
                timer_us: np.ndarray | None = None) -> np.ndarray:
    """Interrupts/s of receive queues: one per arriving burst, at most one per timer unless
    the frame threshold fires first; a polled queue (``_polled_rings``): one per burst.
    ``timer_us``: the queues' timers (``_timers_us`` of ``bytes_per_s``) if known."""
    if timer_us is None:
        timer_us = _timers_us(bytes_per_s, co)
    with np.errstate(divide="ignore"):
        per_timer = np.where(timer_us > 0, 1e6 / np.maximum(timer_us, 1e-300), np.inf)
    irq = np.minimum(bursts, np.maximum(frames / co.max_frames, per_timer))
    return irq if polled is None else np.where(polled, bursts, irq)


def _timers_us(bytes_per_s: np.ndarray, co, polled: np.ndarray | None = None) -> np.ndarray:
    """Each receive queue's coalescing timer: static, or adaptive the class its bytes per
    microsecond settle in (``models.coalescing.steady_timer_us``, the DES's rule); a polled
    queue: 0."""
    if co.mode == "adaptive":
        timer_us = np.array([steady_timer_us(b / units.s_to_us(1.0), co) for b in bytes_per_s])
    else:
        timer_us = np.full(len(bytes_per_s), co.timer_us)
    return timer_us if polled is None else np.where(polled, 0.0, timer_us)


def _share(total: np.ndarray, part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(whole > 0, total * part / np.where(whole > 0, whole, 1), 0.0)


@dataclass
class State:
    """Everything the demands give at one rate vector (bytes/s of payload per flow)."""

    rates: np.ndarray
    quantities: np.ndarray        # flows x NQ (per second)
    entry: np.ndarray             # each compiled entry's value per second
    key_load: np.ndarray          # per key: cycles/s or bytes/s
    queue_interrupts: np.ndarray
    queue_timer_s: np.ndarray = None   # per queue: the coalescing timer a burst waits (_rtt0)
    tasks: np.ndarray = None      # per context: tasks/s
    entry_raw: np.ndarray = None  # the entries before polling, wake-ups (``_handler_busy``)


HANDLER_BUSY = True  # a busy receive handler holds its queue's coalescer back (``_handler_busy``)


def _handler_busy(net: _Net, st: State) -> tuple[np.ndarray, np.ndarray]:
    """Per flow, the share of its interrupts (data, ACKs) left when the receive queue's handler
    is busy with other flows' work (the DES's ``RxQueue``: a burst that arrives while the
    handler's poller is busy is taken by its next poll and arms no timer; ``models.nic``). Its
    passes stay (``IR``, ``IA``: one per burst or coalescing round, polled or interrupted);
    what goes is the interrupt (``IRQ_D``, ``IRQ_A``: the driver's per-interrupt charge).

    A flow's bursts come paced by its own round trips, so they do not find the handler busy
    with their own flow's previous work (a lone segment stream keeps one interrupt per burst:
    DES, e35_tx_single_vm, the peer's queues 6090 interrupts/s for 6090 segments/s); the other
    flows' work is found at a random phase, with its utilisation: flow ``f`` keeps ``k_f = 1 -
    (1 - s_f) U`` of its interrupts, ``s_f`` its share of the handler's cycles, ``U = p + c I``
    the handler's utilisation (``p`` its work but the per-interrupt charges, ``c`` its seconds
    per interrupt), ``I = sum_f k_f I0_f`` with
    ``I0_f`` the flow's interrupts without the handler's time (``_interrupts``); closed:

        I = sum_f I0_f (1 - (1 - s_f) p) / (1 + c sum_f I0_f (1 - s_f))

    (DES, e35_tx_single_vm, five flows' ACK trains: the host queue's handler at 41% takes 33K
    interrupts/s for 61K trains/s). The saturated limit is ``_polling``'s."""
    n = len(net.flows)
    kd, ka = np.ones(n), np.ones(n)
    if not HANDLER_BUSY or not net.pre.get("busy"):
        return kd, ka
    cpu = net.cpu
    nc = len(cpu.ctx_core)
    clock = cpu.core_clock[cpu.ctx_core]
    entry = st.entry_raw
    irq_i, irq_c, rest_i, rest_c, own_i, own_c, d_i, d_f, a_i, a_f = net.pre["handler"]
    per_irq = np.bincount(irq_c, entry[irq_i], nc)
    rest = np.bincount(rest_c, entry[rest_i], nc)
    total = per_irq + rest
    # each flow's own work at its data and its ACK queue's handler
    at_h = np.concatenate([np.bincount(d_f, entry[d_i], n), np.bincount(a_f, entry[a_i], n)])
    hd, ha = net.queue_handler[net.dq], net.queue_handler[net.aq]
    Q = st.quantities
    a = np.concatenate([Q[:, IR], Q[:, IA]])              # I0 per flow and section
    h = np.concatenate([hd, ha])
    on = h >= 0
    hh = np.where(on, h, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(on & (total[hh] > 0), at_h / np.where(total[hh] > 0, total[hh], 1),
                         1.0)
        irq_h = np.bincount(hh[on], a[on], nc)
        c = np.where(irq_h > 0, per_irq / clock / np.where(irq_h > 0, irq_h, 1), 0.0)
    p = np.clip(rest / clock, 0.0, 1.0)
    other = np.where(on, 1 - share, 0.0)
    num = np.bincount(hh[on], (a * (1 - other * p[hh]))[on], nc)
    den = 1 + c * np.bincount(hh[on], (a * other)[on], nc)
    u = np.clip(p + c * num / den, 0.0, 1.0)
    k = np.where(on, np.clip(1 - other * u[hh], 0.0, 1.0), 1.0)
    return k[:n], k[n:]


# A window update that reaches the sender's ACK queue inside the coalescing round its data ACK
# train armed takes no interrupt of its own (``_updates_in_round``); False: one per ACK train.
UPDATES_IN_ROUND = True


def _updates_in_round(net: _Net, Q: np.ndarray, timer_us: np.ndarray) -> np.ndarray:
    """Per flow, the window updates/s that reach its ACK queue inside the coalescing round
    their data ACK train armed, and so take no interrupt (nor handler pass) of their own.

    The receiver sends the data ACK train in the pass that took the data, and the window
    update after its read task (``models.workloads.base.Reader``: the recv() copy of the
    piece, then ``TcpReceiver.read``'s ACK), so the update lags the train by the read's
    service time, ``lag = the receiver's app_recv cycles per read / its clock``. The DES's
    coalescer (``models.coalescing``: a timer started by the round's first burst) fires
    ``timer`` after the train arrived, unless the train alone reaches ``max_frames``; an
    update with ``lag < timer`` is in that round (DES, dev_vmxnet_32_1g_stream, a 125-us timer
    and ~42-us reads: 3600 host-queue interrupts/s for three flows' 3600 segments/s, one per
    data ACK train; e35_tx_* with a 10-us timer: one per ACK train). A step in ``lag``: the
    read's length is nearly fixed for a configuration (a piece per read), not a function of
    the rate. Left out: the receiver's wait for its core before the read (its lag only
    grows), other flows' bursts in the round (``_handler_busy``, docs/fluid.md)."""
    cpu = net.cpu
    rd_flow, rd_coef, rd_q, rd_ctx = net.pre["recv_app"]
    clock = cpu.core_clock[cpu.ctx_core]
    cyc = np.bincount(rd_flow, rd_coef * np.take(Q, rd_q) / clock[rd_ctx], len(net.flows))
    reads = Q[:, READS] * net.read_acks     # the window updates (none under Linux's rule)
    data_trains = np.minimum(Q[:, A_DATA], Q[:, IR])
    with np.errstate(divide="ignore", invalid="ignore"):
        lag_s = np.where(reads > 0, cyc / np.where(reads > 0, reads, 1), np.inf)
        acks = np.where(data_trains > 0, Q[:, A_DATA] / np.where(data_trains > 0, data_trains,
                                                                   1), 0.0)
    timer_s = units.us_to_s(timer_us)[net.aq]
    inside = (lag_s < timer_s) & (acks < net.coalescing.max_frames) & (data_trains > 0)
    return np.where(inside, np.minimum(reads, data_trains), 0.0)


# The ACKs' virtual interrupts on a sending vCPU (``_ack_virtual_interrupts``): one per ACK
# interrupt of its host queue, less the window updates that find the vCPU's ring poller busy;
# False: ``min(ACK interrupts, data ACK trains)`` (every window update rides its data ACK
# train's pass: the fifth slice's rule). Off: measured with the saturated reader's merged reads
# (``_merged_reads``), docs/fluid.md "Eighth slice".
WINDOW_UPDATE_RIDES_OTHERS = False


def _vcpu_rx_entries(net: _Net, vcpus: set, recv_side: np.ndarray) -> None:
    """What ``_ack_virtual_interrupts`` reads, set once at compile time: each vCPU's receive
    passes (``e_vring``: its driver, stack and wake-up entries on the receiving side of a
    section, the applications' calls excepted) and, per flow, the vCPU its ACKs' virtual
    interrupts go to (``via_ctx``, -1: none, e.g. a native peer or a VM receiver)."""
    cpu = net.cpu
    on_vcpu = np.array([k[0] in vcpus for k in net.keys], dtype=bool)[net.e_key] \
        if len(net.e_key) else np.zeros(0, dtype=bool)
    net.e_vring = on_vcpu & recv_side & ~net.e_app & (cpu.e_ctx >= 0)
    net.via_ctx = np.full(len(net.flows), -1)
    via = (net.e_q == VIA) & (cpu.e_ctx >= 0)
    net.via_ctx[net.e_flow[via]] = cpu.e_ctx[via]


def _update_in_own_pass(net: _Net, Q: np.ndarray) -> np.ndarray:
    """Per flow: does the window update reach the sending vCPU's ring while the vCPU's pass
    over its data ACK train still runs? The update lags the train by the receiver's read (its
    recv() cycles per read over its clock: ``models.workloads.base.Reader``, then
    ``TcpReceiver.read``'s ACK) less what the train's other ACKs cost on the ACK path's
    contexts before the vCPU (the receiver's ACK output, the host queue's handler: the train's
    first ACK leaves them that much before its last); the pass is the vCPU's per-pass work
    (its wake-up included, at full price) and its per-ACK work for the train."""
    cpu = net.cpu
    n = len(net.flows)
    clock = cpu.core_clock[cpu.ctx_core]
    ctx = cpu.e_ctx >= 0
    kc = np.maximum(cpu.e_ctx, 0)
    rd = net.e_recv_app
    reads = Q[:, READS]
    data_trains = np.minimum(Q[:, A_DATA], Q[:, IR])
    with np.errstate(divide="ignore", invalid="ignore"):
        read_s = np.bincount(net.e_flow[rd], net.e_coef[rd] * Q[net.e_flow[rd], net.e_q[rd]]
                             / clock[kc[rd]], n) / np.where(reads > 0, reads, 1)
        acks = np.where(data_trains > 0, Q[:, A_DATA] / np.where(data_trains > 0, data_trains,
                                                                   1), 0.0)
    on_vcpu = ctx & (cpu.e_ctx == net.via_ctx[net.e_flow])
    ack_side = ctx & (net.e_section == 1)
    per_ack = ack_side & (net.e_q == A)
    path = per_ack & ~on_vcpu
    path_s = np.bincount(net.e_flow[path], net.e_coef[path] / clock[kc[path]], n)
    vp = ack_side & on_vcpu & np.isin(net.e_q, (IA, VIA, IRQ_A))
    va = per_ack & on_vcpu
    pass_s = (np.bincount(net.e_flow[vp], net.e_coef[vp] / clock[kc[vp]], n)
              + acks * np.bincount(net.e_flow[va], net.e_coef[va] / clock[kc[va]], n))
    lag_s = read_s - np.maximum(acks - 1, 0) * path_s
    return (net.via_ctx >= 0) & (reads > 0) & (lag_s < pass_s)


def _others_rx_busy(net: _Net, entry: np.ndarray) -> np.ndarray:
    """Per flow and context (flows x contexts): the utilisation of the context's receive
    passes (``e_vring``) for the *other* flows, which a flow's interrupt finds at a random
    phase (the flows' round trips are not in phase: ``_handler_busy``'s assumption). A flow
    whose reader is saturated (``_merged_reads``) finds its own passes too: its reads, so its
    window updates, are no longer paced by its pieces, and an update comes at a random phase
    of its own data ACK trains' passes."""
    cpu = net.cpu
    nc, n = len(cpu.ctx_core), len(net.flows)
    ring = net.e_vring
    clock = cpu.core_clock[cpu.ctx_core]
    busy = np.bincount(net.e_flow[ring] * nc + cpu.e_ctx[ring],
                       entry[ring] / clock[cpu.e_ctx[ring]], n * nc).reshape(n, nc)
    total = busy.sum(axis=0)[None, :]
    merged = net.pre.get("read_bytes")
    own = 0.0 if merged is None else np.where((merged > 0)[:, None], busy, 0.0)
    return np.clip(total - busy + own, 0.0, 1.0)


def _rx_others_busy(net: _Net, entry: np.ndarray, wakeups: bool = False) -> np.ndarray:
    """Per entry: the share of a receiving vCPU's data virtual interrupts that find it running
    the other flows' receive work (0 on every other entry): ``_halt_wakeups``'s ``others``.

    A receiver's recv() calls run right after its own flow's pass over the ring (the DES's
    ``Reader`` is woken by the stack pass the interrupt started), so its flow's next virtual
    interrupt never finds them running: they are paced by its interrupts, not background
    work. DES (0.1 s), v6_vnic_rx_60 (four vCPUs at 79%, one flow each, recv() 44% of each):
    18060 wake-ups/s for 18060 virtual interrupts/s on every vCPU; priced as background
    (``HALT_APP_RECV``) the fluid engine paid 58% of them (host CPU -6.9%, now -1.9%). The
    other flows' passes and reads on the same vCPU are found at a random phase with their
    utilisation (PASTA: their pieces are not in step, ``_handler_busy``'s assumption); their
    wake-ups count with ``wakeups`` (the caller passes entries whose wake-ups are already
    scaled to the share paid). That assumption lies between the DES's cases: on
    v6_numa_10g_default (one vCPU, four flows) the pieces come wire-paced, 55 us apart, and
    no virtual interrupt finds the vCPU busy (18060 of 18060 wake it; here 48%); on vxlan_rx
    (one vCPU, four flows, 27-30 us apart) the 10-us timer and a 16-18 us handler pass put
    every other piece behind the previous one and 52% wake it (here 47%)."""
    w_i, w_ctx, w_pair, h_i, h_ctx, h_pair, wake = net.pre["rx_others"]
    out = np.zeros(len(entry))
    if not len(h_i):
        return out
    cpu = net.cpu
    keep = np.ones(len(w_i), dtype=bool) if wakeups else ~wake
    u = entry[w_i] / cpu.core_clock[cpu.ctx_core[w_ctx]] * keep
    total = np.bincount(w_ctx, u, len(cpu.ctx_core))
    own = np.bincount(w_pair, u, int(max(w_pair.max(initial=-1), h_pair.max()) + 1))
    out[h_i] = np.clip(total[h_ctx] - own[h_pair], 0.0, 1.0)
    return out


def _rx_others_index(net: _Net) -> tuple:
    """What ``_rx_others_busy`` sums, as indices (``_precompute``): the receive work on vCPUs
    (passes, wake-ups, reads), its contexts and (flow, context) pairs, whether it is a
    wake-up; the data wake-up entries, their contexts and pairs."""
    cpu = net.cpu
    work = (net.e_vring | net.e_recv_app) & (cpu.e_ctx >= 0)
    halt = net.e_halt & (net.e_section == 0) & (cpu.e_ctx >= 0)
    nc = max(len(cpu.ctx_core), 1)
    pairs, inv = np.unique(np.concatenate([net.e_flow[work] * nc + cpu.e_ctx[work],
                                           net.e_flow[halt] * nc + cpu.e_ctx[halt]]),
                           return_inverse=True)
    nw = int(work.sum())
    return (np.flatnonzero(work), cpu.e_ctx[work], inv[:nw], np.flatnonzero(halt),
            cpu.e_ctx[halt], inv[nw:], net.e_halt[work])


def _ack_virtual_interrupts(net: _Net, Q: np.ndarray) -> np.ndarray:
    """Per flow, the virtual interrupts/s its ACKs raise on the sending vCPU (``VIA``).

    The DES's vNIC raises one for each delivery of the host queue's handler that finds the
    ring's poller idle (``VirtualNic.deliver``, ``_interrupt``); the poller is busy from the
    interrupt until its pass over the ring ends (``models.base.RingPoller``). Each ACK
    interrupt (``IRQ_A``) is a data ACK train or a window update the receiver sends after its
    read task. A window update rides a pass when it reaches the ring before the vCPU's pass
    over its own data ACK train ends (``_update_in_own_pass``: the read shorter than the
    pass; DES, one 1GbE session, 8KB messages: at 2 GHz a ~25-us lag for a ~33-us pass, every
    update rides: 3633 virtual interrupts/s for 7200 ACK interrupts), else it finds the other
    flows' receive passes on that vCPU running with their utilisation ``U_o`` (PASTA:
    ``_others_rx_busy``) and rides one of those:

        VIA = IRQ_A (1 - (READS / T) P),   P = 1 if own pass, else min(U_o, 1)

    ``READS / T`` the window updates' share of the ACK trains. One flow alone at 4 GHz: a
    ~30-us lag for a ~17-us pass, every ACK interrupt raises one (DES: 7133 for 7167).
    ``U_o`` is priced with every ACK interrupt raising one (an upper bound)."""
    base = Q[:, IRQ_A]
    if not WINDOW_UPDATE_RIDES_OTHERS:
        # Without data ACKs (Linux's rule, a window of one aggregate) the updates take them.
        return np.minimum(Q[:, IA], np.where(Q[:, A_DATA] > 0,
                                             np.minimum(Q[:, A_DATA], Q[:, IR]), Q[:, T]))
    n = len(net.flows)
    Qv = Q.copy()
    Qv[:, VIA] = Q[:, IA]
    busy = _others_rx_busy(net, net.e_coef * Qv[net.e_flow, net.e_q])
    others = busy[np.arange(n), np.maximum(net.via_ctx, 0)]
    ride = np.where(_update_in_own_pass(net, Q), 1.0, others)
    with np.errstate(divide="ignore", invalid="ignore"):
        updates = np.where(Q[:, T] > 0, Q[:, READS] * net.read_acks
                           / np.where(Q[:, T] > 0, Q[:, T], 1), 0.0)
    return np.where(net.via_ctx >= 0, base * (1 - updates * ride), Q[:, IA])


def demands(net: _Net, rates) -> State:
    if net.pre["busy"]:
        st = _demands(net, rates, raw_only=True)
        return _demands(net, rates, _handler_busy(net, st), prev=st)
    return _demands(net, rates)


def _demands(net: _Net, rates, busy: tuple | None = None, prev: State | None = None,
             raw_only: bool = False) -> State:
    """The demands at ``rates``; ``busy``: per flow, the shares of its data and ACK interrupts
    a busy handler leaves (``_handler_busy``; None: all). ``prev``: the state at the same rates
    without ``busy``, whose quantities other than the interrupts are reused (they do not
    depend on it); ``raw_only``: stop at the entries before polling and wake-ups (what
    ``_handler_busy`` reads). Each queue's timer is computed once per evaluation."""
    co = net.coalescing
    g = np.asarray(rates, dtype=float)
    kd, ka = (1.0, 1.0) if busy is None else busy
    if prev is not None:
        Q = prev.quantities.copy()
        Q[:, IRQ_D] = Q[:, IR] * kd
        Q[:, IRQ_A] = Q[:, IA] * ka
        if WINDOW_UPDATE_RIDES_OTHERS:   # follows the ACK interrupts left
            Q[:, VIA] = _ack_virtual_interrupts(net, Q)
        nq = len(net.queues)
        irq = np.bincount(net.dq, Q[:, IRQ_D], nq) + np.bincount(net.aq, Q[:, IRQ_A], nq)
        return _entries(net, g, Q, irq, prev.queue_timer_s, raw_only)
    Q = net.per_g * g[:, None]
    Q[:, G] = g
    nq = len(net.queues)
    bursts = np.bincount(net.dq, Q[:, B], nq)
    frames = np.bincount(net.dq, Q[:, D], nq)
    nbytes = np.bincount(net.dq, g, nq)
    irq_data = _interrupts(bursts, frames, nbytes, co, net.q_polled, _timers_us(nbytes, co))
    Q[:, IR] = _share(irq_data[net.dq], Q[:, B], bursts[net.dq])
    Q[:, IRQ_D] = Q[:, IR] * kd
    # One read task per receiving pass (at most one per stack packet), each opening the window
    # by more than 2 MSS: one window-update ACK, a train of its own (``frames`` rule; none
    # under Linux's, ``read_acks`` 0).
    Q[:, READS] = np.minimum(Q[:, STACK_PK], Q[:, IR])
    merged = net.pre.get("read_bytes")
    if merged is not None:   # a saturated reader's reads take several pieces (``_merged_reads``)
        with np.errstate(divide="ignore"):
            Q[:, READS] = np.where(merged > 0, np.minimum(Q[:, READS], g / np.where(
                merged > 0, merged, 1)), Q[:, READS])
    Q[:, A] = Q[:, A_DATA] + Q[:, READS] * net.read_acks
    Q[:, T] = np.minimum(Q[:, A_DATA], Q[:, IR]) + Q[:, READS] * net.read_acks
    frames_all = frames + np.bincount(net.aq, Q[:, A], nq)
    bytes_all = nbytes + np.bincount(net.aq, Q[:, A] * net.ack_frame_bytes, nq)
    timer_us = _timers_us(bytes_all, co)
    # the ACK trains that arm a round of their own at the ACK queue (``_updates_in_round``)
    trains = Q[:, T] - _updates_in_round(net, Q, np.where(net.q_polled, 0.0, timer_us)) \
        if UPDATES_IN_ROUND else Q[:, T]
    bursts_all = bursts + np.bincount(net.aq, trains, nq)
    irq = _interrupts(bursts_all, frames_all, bytes_all, co, net.q_polled, timer_us)
    Q[:, IA] = _share(irq[net.aq], trains, bursts_all[net.aq])
    Q[:, IRQ_A] = Q[:, IA] * ka
    if busy is not None:   # what the queues take once their handlers' busy passes hold back
        irq = np.bincount(net.dq, Q[:, IRQ_D], nq) + np.bincount(net.aq, Q[:, IRQ_A], nq)
    # A vCPU's virtual interrupts for ACKs: a window update arrives while the guest still polls
    # its data ACK train and rides that pass (DES, e35_tx_single_vm on 1GbE with 128KB windows:
    # 2110 virtual interrupts/s for 3600 NIC interrupts at 2700 segments/s).
    Q[:, VIA] = _ack_virtual_interrupts(net, Q)
    timer_s = units.us_to_s(np.where(net.q_polled, 0.0, timer_us)) if ADAPTIVE_RTT_TIMER \
        else None
    return _entries(net, g, Q, irq, timer_s, raw_only)


def _entries(net: _Net, g: np.ndarray, Q: np.ndarray, irq: np.ndarray, timer_s, raw_only: bool
             ) -> State:
    """The entries' cycles and bytes per second at the quantities ``Q``: polling receivers,
    wake-ups of halted vCPUs, world switches (``_demands``)."""
    entry = net.e_coef * np.take(Q, net.pre["eq_flat"])
    if raw_only:
        return State(g, Q, None, None, irq, queue_timer_s=timer_s, entry_raw=entry)
    raw = entry.copy()
    cpu, pre = net.cpu, net.pre
    tasks = np.bincount(cpu.t_ctx, Q[cpu.t_flow, cpu.t_q], len(cpu.ctx_core))
    ws = _world_switches(tasks, cpu.ctx_core, cpu.switch_cycles, cpu.shared)
    # A vCPU that drives its NIC polls it while busy (NAPI): its per-interrupt work fills what
    # the rest leaves (``_polling``; DES, pt_passthrough_tx: the vCPU at 100%, no interrupt).
    # A host NIC queue's handler polls its ring while busy: fewer passes (``_polling``; DES,
    # v6_vnic_rx_55: 30 interrupts/s at 100%), and the virtual interrupts of the vCPUs it
    # delivers to follow its passes.
    f = _polling(entry, cpu.e_ctx, None, cpu.ctx_core, cpu.core_clock, index=pre["vector"])
    down = pre["down"]
    entry[down] *= f[net.e_up[down]]
    _napi_budget(net, entry, Q)
    _polling(entry, cpu.e_ctx, None, cpu.ctx_core, cpu.core_clock, index=pre["vcpu"])
    # a virtual interrupt finds the vCPU running the other flows' receive passes at a random
    # phase: not halted (``_others_rx_busy``)
    if WINDOW_UPDATE_RIDES_OTHERS:
        others = _others_rx_busy(net, entry)[net.e_flow, np.maximum(cpu.e_ctx, 0)]
    elif RX_WAKE_OTHERS:
        # the other flows' wake-ups count at the share they pay: from a first pass that
        # leaves them out (a lower bound on their work)
        others = _rx_others_busy(net, entry)
        if RX_OTHERS_WAKEUPS and others.any():   # one more pass only where a vCPU is shared
            first = entry.copy()
            _halt_wakeups(first, cpu.e_ctx, net.e_halt, cpu.core_clock[cpu.ctx_core],
                          cpu.ctx_core, cpu.core_clock, ws, index=pre["halt"], others=others)
            others = _rx_others_busy(net, first, wakeups=True)
    else:
        others = None
    _halt_wakeups(entry, cpu.e_ctx, net.e_halt, cpu.core_clock[cpu.ctx_core], cpu.ctx_core,
                  cpu.core_clock, ws, index=pre["halt"], others=others)
    key_load = np.bincount(net.e_key, entry, len(net.keys))
    key_load[cpu.ws_key] += ws
    return State(g, Q, entry, key_load, irq, tasks=tasks, queue_timer_s=timer_s, entry_raw=raw)


# -- RTT and the solve ------------------------------------------------------------------------

def _queue_timers(net: _Net, st: State) -> np.ndarray:
    """Each receive queue's coalescing timer in the round trip (s): the state's (adaptive), else
    the static timer (the bulk class's when adaptive), 0 on a polled queue."""
    co = net.coalescing
    timer = units.us_to_s(co.timer_us if co.mode == "static" else co.adaptive_bulk_timer_us)
    return st.queue_timer_s if st.queue_timer_s is not None else \
        np.where(net.q_polled, 0.0, timer)


def _rtt0(net: _Net, st: State, with_service: bool = True) -> np.ndarray:
    """Each flow's path delays at the state's rates (no queueing): propagation, one burst and
    one ACK on the wire, coalescing timers, one burst's / ACK train's service times. The burst
    is a segment (``seg``), or for a sender that refills its send buffer behind the ACKs
    (``_Flow.refill``) the whole window's ``chunk``, whose send() copies are then in the loop
    too; a sender that writes ahead has them off the loop (they fill the buffer meanwhile)."""
    qt = _queue_timers(net, st)
    n = len(net.flows)
    pre = net.pre
    # each link stores and forwards a whole burst (teaming: the wire, then the switch): the
    # fixed delays (``_precompute``), then the coalescing timers
    t = pre["rtt_fixed"] + np.where(pre["no_data_timer"], 0.0, qt[net.dq]) + qt[net.aq]
    if not with_service:
        return t
    ctx = net.e_section >= 0
    clock = pre["key_clock"]
    per = np.where(net.e_section == 0, st.quantities[net.e_flow, S],
                   st.quantities[net.e_flow, T])
    # a data entry that grows with the bytes is paid for the whole burst
    scale = pre["burst_scale"]
    loop = ctx & (per > 0) & (pre["refill"] | ~net.e_background)
    with np.errstate(divide="ignore", invalid="ignore"):
        secs = np.where(ctx & (per > 0), st.entry * scale / np.where(per > 0, per, 1)
                        / clock[net.e_key], 0.0)
    on_loop = grown = secs
    if UPDATE_TRAIN_ON_LOOP:
        # A writer-ahead sender's window reopens with the read's window update, a train of its
        # own sent after the read; the data ACK trains left while the piece arrived and were
        # taken during the read, off the loop: the ACK side's service on the loop is one
        # update's, each ACK-side entry at its unit (one ACK, one train, one interrupt). A
        # refilling sender waits for the data ACKs (they free its buffer), and so does a window
        # gone round whole with its sub-MSS tail held by Nagle (``_piled_windows``): the mean
        # train (``_precompute``: ``update_loop``).
        qe = st.quantities[net.e_flow, net.e_q]
        upd = pre["update_loop"] & (qe > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            unit = np.where(upd & ctx, st.entry / np.where(qe > 0, qe, 1)
                            / clock[net.e_key], secs)
        on_loop = unit
        if READER_SENDS_TRAIN:
            # The reader's core sends the data ACK train in its receive pass, before the read,
            # and the update after it: both are on the loop there (a VM receiver's vCPU:
            # 10GbE, 128KB, 64KB messages, 4 GHz: DES 4.13-4.21, fluid 4.41 -> 4.32)
            own = upd & ctx & (net.cpu.ctx_core[np.maximum(net.cpu.e_ctx, 0)]
                               == pre["reader_core"][net.e_flow])
            on_loop = np.where(own, secs + unit, unit)
            grown = np.where(own, secs, 0.0)
        else:
            grown = np.zeros_like(secs)
        grown = np.where(upd & ctx, grown, secs)   # the updates' own units do not grow
    t += np.bincount(net.e_flow, np.where(loop, on_loop, 0.0), n)
    two = _two_pieces(net, st) if SPACED_PIECES and pre["unequal"].any() else None
    if two is not None:   # the flow's own two pieces (``_own_pieces``)
        t += _own_pieces(net, st, np.bincount(net.e_flow, np.where(
            loop & pre["grows"], grown, 0.0), n), two)
    if RESIDUAL_WAITS:   # the tasks' residuals: the mean ACK train's
        t += _residual_waits(net, st, secs, loop, clock, two)
    if LINK_WAITS:   # the other flows' bursts in service on the links (``_link_waits``)
        t += _link_waits(net, st)
    return t


# A writer-ahead sender's pieces go round coupled where the next piece reaches the reader
# during a read (``_coupled_rtt``); False: each piece's loop is its own (``_rtt0``).
COUPLED_PIECES = True


def _coupled_rtt(net: _Net, st: State) -> np.ndarray:
    """Each flow's round trip when its window's pieces go round coupled (0: they do not):
    a writer-ahead sender (``update_loop``) whose window goes in ``N >= 2`` pieces, the
    read of one piece taking longer than the next piece's serialisation on the data link.

    The DES (e35_tx_single_vm, one 10GbE session, 64KB window, 8KB messages, max_frames 16,
    2 GHz, seed 0, 0.03 s after 0.03 s; ``TcpSender``, ``TcpReceiver`` and the contexts'
    tasks logged): the two pieces (30784 + 34752 bytes) leave the sender 5-30 us apart and
    arrive back to back (the second's wire behind the first's), the second during the read
    of the first, so its data ACK train leaves the reader before the first read's window
    update. The update releases the next first piece (it is not lost: it reaches the sender
    late), but only after the sending core (the vCPU, FIFO, no preemption) has done, in
    order: the first piece's data ACK train (its pass: 33 us with the halt wake-up), the
    send() copies of the bytes that train freed (19 us), the second piece's data ACK train
    with the update in the same pass (13 ACKs, 28 us). A window goes round in 150 us (fluid
    before, pieces independent: 137.6): the first piece's data path (41 us), its train to
    the vCPU (30 us) and that core work (80 us); the read (44 us) and the update's way back
    (21 us) are shorter and wait. At 4 GHz the update waits behind the other piece's train
    pass (17 us) and the copies it triggered (9 us) after the read's longer branch.

    So the round trip is the piece's data path (fixed delays and data-side service, as in
    ``_rtt0``), then the later of two branches that join at the sender's core: the read and the
    update's way to that core, or the piece's own data ACK train's way there and its work there
    with the writer's copies (the join: of one piece, or of one message when that is larger:
    DES, 64KB messages, one 34-us copy a window in that chain); then the other pieces' trains
    that reached the receiver during the read (they precede the update: ``min(N - 1, ceil(read /
    wire) - 1)``) and the update's own work at the sender's core; where a piece goes as several
    segments, its last segment's train comes in a pass of its own with the update, and the
    copies the earlier trains woke run before the release (DES, 128KB window at 2 and 2.93 GHz:
    pieces of 65160 + 4344 bytes). The sender's core is the core of the flow's send() calls. A
    train's work on an entry is one piece's ACK-side cycles less the update's unit (``_rtt0``'s
    ``unit``); the train waits the ACK queue's timer unless it reaches ``max_frames``, the
    update none (it arrives behind the other piece's train). No residual waits at the cores: the
    flow's own queueing is what this counts (other flows' residuals are left out); the waits
    behind the other flows' bursts on the links are added (``_link_waits``: two VMs' senders on
    one link). The window bound takes the larger of this and ``_rtt0``'s (pieces apart)."""
    n = len(net.flows)
    out = np.zeros(n)
    pre, cpu = net.pre, net.cpu
    window, chunk = pre["window"], pre["chunk"]
    Q = st.quantities
    pieces_s = np.where(chunk > 0, Q[:, G] / np.where(chunk > 0, chunk, 1), 0.0)
    upd_flow = np.bincount(net.e_flow[pre["update_loop"]], None, n) > 0
    elig = upd_flow & (chunk < window) & (pieces_s > 0)
    if not elig.any():
        return out
    ctx = (net.e_section >= 0) & (cpu.e_ctx >= 0)
    clock = pre["key_clock"]
    core = np.where(ctx, cpu.ctx_core[np.maximum(cpu.e_ctx, 0)], -1)
    app_send = net.e_background & ctx & (net.e_section == 0)
    sender = np.full(n, -1)
    sender[net.e_flow[app_send]] = core[app_send]
    # one piece's cycles per entry, in core-seconds (the data side as ``_rtt0`` prices a burst)
    with np.errstate(divide="ignore", invalid="ignore"):
        ps = pieces_s[net.e_flow]
        piece = np.where(ctx & (ps > 0), st.entry / np.where(ps > 0, ps, 1) / clock[net.e_key],
                         0.0)
        qe = Q[net.e_flow, net.e_q]
        unit = np.where(ctx & (qe > 0), st.entry / np.where(qe > 0, qe, 1) / clock[net.e_key],
                        0.0)
    on_core = core == sender[net.e_flow]
    ack = ctx & (net.e_section == 1) & pre["update_loop"]
    data = ctx & (net.e_section == 0) & ~net.e_background & ~net.e_recv_app

    def per_flow(mask, v):
        return np.bincount(net.e_flow[mask], v[mask], n)

    read = per_flow(net.e_recv_app, piece)
    s_data = per_flow(data, piece)
    # the copies one wake-up of the writer makes: the bytes a train freed, or one whole message
    # when a message is larger than a piece (the writer waits for room for all of it)
    copies = per_flow(app_send, piece) * np.maximum(
        1.0, net.cfg.workload.message_bytes / np.where(chunk > 0, chunk, 1))
    train = np.maximum(piece - unit, 0.0)
    u_off, u_on = per_flow(ack & ~on_core, unit), per_flow(ack & on_core, unit)
    a_off, a_on = per_flow(ack & ~on_core, train), per_flow(ack & on_core, train)
    # the next piece's serialisation behind this one: its wire time on the slowest data link
    wire = pre["piece_wire_s"]
    coupled = elig & (sender >= 0) & (wire > 0) & (read > wire)
    n_pieces = np.round(window / np.where(chunk > 0, chunk, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        riding = np.minimum(n_pieces - 1, np.ceil(read / np.where(wire > 0, wire, 1)) - 1)
    # The ACK queue's timer: a data ACK train of at least ``max_frames`` ACKs raises its
    # interrupt as it lands, a shorter one waits the timer; the update waits none, arriving
    # right behind the other piece's train, whose interrupt is pending or whose pass polls it
    # (DES: 64KB, 2 GHz, in the train's pending interrupt; 128KB at 2 and 2.93 GHz, polled
    # at the end of the train's pass)
    acks = np.where(pieces_s > 0, Q[:, A] / np.where(pieces_s > 0, pieces_s, 1), 0.0)
    qt = _queue_timers(net, st)
    train_timer = np.where(acks - net.read_acks >= net.coalescing.max_frames, 0.0, qt[net.aq])
    # a piece of several segments sends its last segment's train in a pass of its own, with
    # the update behind it: the writer's copies that the earlier trains woke run before the
    # release (DES, 128KB window: 65160 + 4344 bytes, a 22-ACK pass then 3 ACKs with the update)
    several = pre["several"]
    rtt = (_rtt0(net, st, with_service=False) - qt[net.aq] + s_data
           + np.maximum(read + u_off, train_timer + a_off + a_on + copies)
           + riding * (a_on + np.where(several, copies, 0.0)) + u_on)
    if LINK_WAITS:   # the other flows' bursts in service on the links (``_link_waits``)
        rtt += _link_waits(net, st)
    return np.where(coupled, rtt, 0.0)


# The ACK side on a writer-ahead sender's loop is the window update's train, the data ACK
# trains being taken during the read (``_rtt0``; False: the mean ACK train's service).
UPDATE_TRAIN_ON_LOOP = True
# ... but on the reader's own core the data ACK train is sent before the read (``_rtt0``)
READER_SENDS_TRAIN = True
# The round trip's coalescing timers: each queue's (adaptive: the class its bytes per us select,
# as its interrupts are counted); False: the bulk class's on every adaptive queue.
ADAPTIVE_RTT_TIMER = True
RESIDUAL_WAITS = True  # the residual-service wait at busy cores in the window bound (below)
# A receiving vCPU's data virtual interrupt finds its own flow's recv() calls done (they follow
# its own passes) and the other flows' receive passes and reads running at their utilisation
# (``_rx_others_busy``). False: every recv() call is work it finds running at its utilisation
# (``HALT_APP_RECV``, the sixth session's rule).
RX_WAKE_OTHERS = True
RX_OTHERS_WAKEUPS = True   # the other flows' wake-ups, at the share they pay, count as their work
HALT_APP_RECV = True   # read only with RX_WAKE_OTHERS off
# The round trip waits at each link behind the other flows' bursts in service there
# (``_link_waits``); False: a link serves each flow's burst at once.
LINK_WAITS = True


def _link_waits(net: _Net, st: State) -> np.ndarray:
    """Each flow's waiting time per round trip behind the other flows' bursts on its links (s).
    A link sends frames in order (FIFO): a flow's burst (its window's piece, or segment) or
    ACK train that reaches a link while another flow's burst is on the wire waits for the
    rest of it. As at the cores (``_residual_waits``), only the residual of the burst in
    service: another flow ``j``'s data bursts (or ACK trains) keep link ``k`` busy ``U_jk`` of
    the time, each for ``tau_jk`` seconds (its bytes on the wire / the link's rate), and an
    arrival at a random phase waits ``U_jk tau_jk / 2``; ``W_i = sum over the links of flow
    i's data and of its ACKs (one visit each a round trip) of sum over the other flows'
    classes there``. The flow's own other pieces are not counted (the coupled loop and
    ``_rtt0``'s pieces already follow its own).

    The DES (e35_tx_single_vm, two VMs of one 10GbE session each, 64KB window in pieces of
    30784 + 34752 bytes, 8KB messages, max_frames 16, 2 GHz, seed 0; ``TcpSender._send``,
    ``TcpReceiver`` and the tasks logged): the two flows' pieces (27-30 us on the wire, the
    link 64% busy) share the host NIC's transmit link, and a piece leaving the vNIC while
    the other VM's piece is on the wire reaches the peer 13-15 us later than it does alone
    (41-43 us from the vNIC's transmit to the peer's receive pass against 27-30 with one
    VM); the fluid's round trip had the link serve each burst at once (154 us, DES ~164).
    ``models.wire.Link.transmit`` logged: a data burst waits 4.39 us on average behind the
    other flow's (this: 4.9), 1.13 behind its own other piece; the ACKs wait nothing. The
    same holds at 128KB (8.5 us; this 9.7) and for three sessions of one VM
    (dev_vmxnet_64_10g_stream: 14.4 us; this 12.1). Not where every flow at a link passes one
    core that takes at least the longest burst's wire time over each piece (on its loop,
    the writer-ahead copies aside): the bursts leave that core spaced and keep the spacing
    round the loop, so they never meet on the wire (DES, e35_rx_single_vm, two VMs, 64KB,
    max_frames 16, 2 GHz: the host handler's core takes 50 us a piece, a piece is 28 us on
    the peer's link; a data burst waits 0.03 us there. Two VMs sending: 18 us a piece at the
    shared handler, the waits above)."""
    n = len(net.flows)
    lw = net.pre["link_waits"]
    if lw is None:
        return np.zeros(n)
    (link, link_of, pair_of, pair_link, n_links, rate, ctx, cell_of, cell_flow, clock,
     join_pair, join_cell, join_at, vf, vl, vp, vn) = lw
    on = st.entry[link] > 0
    if not on.any():
        return np.zeros(n)
    Q = st.quantities
    chunk = net.pre["chunk"]
    idx = link[on]
    j, q, lk = net.e_flow[idx], net.e_q[idx], link_of[on]
    # bursts a second: a data burst carries one piece (``chunk`` bytes), an ACK train its ACKs
    with np.errstate(divide="ignore", invalid="ignore"):
        events = np.where(q == D, np.where(chunk[j] > 0, Q[j, G] / np.where(chunk[j] > 0,
                                                                            chunk[j], 1), 0.0),
                          Q[j, T])
    u = np.minimum(st.entry[idx] / rate[on], 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        res = np.where(events > 0, u * u / (2 * np.where(events > 0, events, 1)), 0.0)
        tau = np.where(events > 0, u / np.where(events > 0, events, 1), 0.0)
    # a link whose flows' bursts all pass one core that takes at least the longest burst's
    # wire time over each of them: they leave it spaced and never meet on the wire. A flow's
    # time a piece at a core (its cell) summed in the entries' order; a link counts, per core,
    # the flows there whose cell takes at least that longest burst (where that is 0 so is
    # every residual at the link, and the test does not matter)
    with np.errstate(divide="ignore", invalid="ignore"):
        bursts = np.where(chunk > 0, Q[:, G] / np.where(chunk > 0, chunk, 1), 0.0)
    per_piece = np.bincount(cell_of, st.entry[ctx] / clock, len(cell_flow))
    b = bursts[cell_flow]
    with np.errstate(divide="ignore", invalid="ignore"):
        per_piece = np.where(b > 0, per_piece / np.where(b > 0, b, 1), 0.0)
    longest = np.zeros(n_links)
    np.maximum.at(longest, lk, tau)
    pair_on = np.bincount(pair_of[on], None, len(pair_link)) > 0
    flows_at = np.bincount(pair_link[pair_on], None, n_links)
    spacing = pair_on[join_pair] & (per_piece[join_cell] >= longest[pair_link[join_pair]])
    spaced_by = np.bincount(join_at, spacing, n_links * len(net.cpu.core_clock))
    spaced = (flows_at > 1) & (spaced_by.reshape(n_links, -1) == flows_at[:, None]).any(axis=1)
    res[spaced[lk]] = 0.0
    # per link: every flow's residual there, less the visiting flow's own (none where the
    # flow has no entry at the link: the last slot)
    at_link = np.bincount(lk, res, n_links)
    own = np.append(np.bincount(pair_of[on], res, len(pair_link)), 0.0)
    return np.bincount(vf, vn * (at_link[vl] - own[vp]), n)


def _link_wait_index(net: _Net) -> tuple | None:
    """``_link_waits``'s index arrays, which do not depend on the rates (None: no flow visits
    a link that has entries). The link entries (indices), each one's link (0 .. links-1, in key
    order) and (link, flow) pair, each pair's link, the links' rates (bytes/s per entry); the
    flows' own core work (context entries, the background aside: indices, each one's (flow,
    core) cell, the cells' flows, the entries' clocks); every pair joined with each of its
    flow's cells (the pair, the cell, the (link, core) it counts at); each flow's visits to
    the links a round trip (flow, link, its pair or the last slot, visits)."""
    cpu = net.cpu
    n, nc = len(net.flows), len(cpu.core_clock)
    key_of = {key[1]: k for k, key in enumerate(net.keys) if key[0] == "link"}
    link = np.flatnonzero(np.isin(net.e_key, list(key_of.values())))
    keys, link_of = np.unique(net.e_key[link], return_inverse=True)
    pairs, pair_of = np.unique(link_of * n + net.e_flow[link], return_inverse=True)
    pair_link, pair_flow = pairs // n, pairs % n
    rate = np.array([net.link_rate[net.keys[k][1]] for k in keys])[link_of]
    ctx = np.flatnonzero((net.e_section >= 0) & (cpu.e_ctx >= 0) & ~net.e_background)
    flow, core = net.e_flow[ctx], cpu.ctx_core[cpu.e_ctx[ctx]]
    cell_of = _rank(flow * nc + core, flow, core)
    cell_flow = np.zeros(int(cell_of.max()) + 1 if len(ctx) else 0, dtype=int)
    cell_core = np.zeros_like(cell_flow)
    cell_flow[cell_of], cell_core[cell_of] = flow, core
    clock = net.pre["key_clock"][net.e_key[ctx]]
    # the cells are in flow order: each pair's flow's cells are one run of them
    first = np.searchsorted(cell_flow, pair_flow, "left")
    count = np.searchsorted(cell_flow, pair_flow, "right") - first
    join_pair = np.repeat(np.arange(len(pairs)), count)
    join_cell = _ranges(first, count)
    join_at = pair_link[join_pair] * nc + cell_core[join_cell]
    # the visits to links with entries (one to a link without any adds nothing), the same
    # for every flow on the same links: made once for each
    at = {int(k): l for l, k in enumerate(keys)}
    made: dict = {}   # (data links, ack links) -> (its first visit in ``runs``, how many)
    runs: list = []   # (link, visits) of each kind of flow, one run a kind
    first, count = [], []
    for fl in net.flows:
        like = (fl.data_links, fl.ack_links)
        if like not in made:
            run = [(at[key_of[name]], (name in fl.data_links) + (name in fl.ack_links))
                   for name in sorted({*fl.data_links, *fl.ack_links})
                   if name in key_of and key_of[name] in at]
            made[like] = (len(runs), len(run))
            runs.extend(run)
        first.append(made[like][0])
        count.append(made[like][1])
    if not runs:
        return None
    count = np.array(count, dtype=int)
    vf = np.repeat(np.arange(n), count)
    vl, vn = np.array(runs, dtype=int)[_ranges(np.array(first, dtype=int), count)].T
    vp = np.searchsorted(pairs, vl * n + vf)
    vp = np.where((vp < len(pairs)) & (pairs[np.minimum(vp, len(pairs) - 1)] == vl * n + vf),
                  vp, len(pairs))
    return (link, link_of, pair_of, pair_link, len(keys), rate, ctx, cell_of, cell_flow, clock,
            join_pair, join_cell, join_at, vf, vl, vp, vn)


def _residual_waits(net: _Net, st: State, secs: np.ndarray, loop: np.ndarray,
                    clock: np.ndarray, two: tuple | None = None) -> np.ndarray:
    """Each flow's waiting time per round trip behind work that is not its own loop's: at every
    visit of its window's burst (or ACK train) to a core, the task in service there, if any,
    finishes first (cores serve FIFO, without preemption). A task class ``h`` (one context's
    work for one flow: its data pass, its ACK pass, or its application calls) keeps the core
    busy ``U_h`` of the time with tasks of ``tau_h`` seconds; an arrival finds one in service
    with probability ``U_h`` and waits its residual, ``tau_h / 2`` for a task of fixed length:
    ``W_i = sum over flow i's visits v of sum over classes h at v's core, not in flow i's loop,
    of U_h tau_h / 2``. Only the residual of the task in service, not a queue of them: the
    windows' bursts are few (one per window, or a window's segments) and the classes' tasks
    rarely pile up (DES, dev_vmxnet_64_10g_stream: 13 us of wait per vCPU task at 77%). Bounded
    by the longest task, so it cannot blow up as an M/D/1 term at a saturated core does."""
    ctx = (net.e_section >= 0) & (secs > 0)
    if not ctx.any():
        return np.zeros(len(net.flows))
    # task classes: (context, flow, section, application calls or not), numbered in the order
    # of their ids (``_task_classes``); those with an entry in ``ctx``, renumbered in order
    base, g, m, g_core, g_flow = net.pre["classes"]
    inside = ctx[base]
    if not inside.all():
        base = base[inside]
        present = np.zeros(m, dtype=bool)
        present[g[inside]] = True
        g = (np.cumsum(present) - 1)[g[inside]]
        m, g_core, g_flow = int(present.sum()), g_core[present], g_flow[present]
    tau = np.bincount(g, secs[base], m)
    busy = np.bincount(g, st.entry[base] / clock[net.e_key[base]], m)
    g_loop = np.zeros(m, dtype=bool)
    g_loop[g[loop[base]]] = True
    res = np.minimum(busy, 1.0) * tau / 2            # U_h tau_h / 2 per class
    nc = len(net.cpu.core_clock)
    n = len(net.flows)
    at_core = np.bincount(g_core, res, nc)           # every class at a core
    # the (flow, core) cells of the loop classes, numbered in order: per cell the flow's own
    # loop's residuals and its visits
    flow, core = g_flow[g_loop], g_core[g_loop]
    c = _rank(flow * nc + core, flow, core)
    m_c = int(c.max()) + 1 if len(c) else 0
    own = np.bincount(c, res[g_loop], m_c)
    visits = np.bincount(c, None, m_c).astype(float)
    c_flow, c_core = np.zeros(m_c, dtype=int), np.zeros(m_c, dtype=int)
    c_flow[c], c_core[c] = flow, core
    # the flow's own other bursts in flight (a window of N segments: N - 1 others) count too;
    # each flow's cells summed as a row of a flows x cores table (zero where no visit: one
    # table, not one a term)
    keep = 1 - net.pre["others"][c_flow]
    if SPACED_PIECES:   # ... except at a core its pieces reach spaced (``_spaced_pieces``)
        keep = np.where(_spaced_pieces(net, st, busy, g_core, g_flow, two)[c_flow, c_core],
                        1.0, keep)
    table = np.zeros((n, nc))
    table[c_flow, c_core] = visits * (at_core[c_core] - own * keep)
    return table.sum(axis=1)


# A flow's own other pieces are never in service at a core that the slowest data link spaces
# them for (``_spaced_pieces``); a window of two unequal pieces (the slow start's,
# ``_slow_start_pieces``) spaced all round goes round at its larger piece's pace, waiting for
# the smaller one's receive pass where that reaches the reader first (``_own_pieces``); False:
# the own pieces at a random phase everywhere. With the mean piece alone the step fell on the
# wrong side of a 64KB window at 2.5GbE (fluid 1.862 Gbps against the DES's 1.643); with the
# two pieces 1.650, and 1.921 at 128KB (DES 1.976; before, 1.689 and 1.807).
SPACED_PIECES = True


def _spaced_pieces(net: _Net, st: State, busy: np.ndarray, g_core: np.ndarray,
                   g_flow: np.ndarray, two: tuple | None = None) -> np.ndarray:
    """Per (flow, core): whether the flow's pieces reach that core spaced so that none finds
    the flow's own other piece in service there (``_residual_waits`` then counts the flow's
    own classes there as not waited for).

    The DES (e35_rx_single_vm, one session, 128KB window, 8KB messages, 2.5GbE, max_frames 16,
    2 GHz, seed 2, 0.03 s after 0.03 s; ``TcpSender``, ``TcpReceiver`` and the contexts' tasks
    logged; ``/tmp/rxd_tr.txt``): the window goes round as two pieces (65160 + 4344 bytes,
    and 61568), each a burst that the link stores and forwards; the link serialises them, so
    the host's handler starts on the smaller one 224 us after the larger (its tail's and its
    own wire time), and every core after it takes less than that per piece (the handler 88
    us, the vCPU from the larger's receive pass to its window update 224, the peer's softirq
    and sending thread under 40): no piece found the other in service at any core (the vCPU
    free 0.2 us before the smaller piece's pass), and the window went round in 531 us. The
    fluid engine's residual waits counted the other piece at a random phase at every core
    (59 us: 1.807 Gbps against the DES's 1.976).

    A window of two unequal pieces (``_slow_start_pieces``; ``_piece_work``): spaced where the
    larger piece's work before its window update is at most the time from its first
    segment's last frame to the window's last frame on the slowest data link (the smaller
    piece, and the larger's tail, follow it there: 224 us at 128KB, 105 at 64KB). The DES
    (the same draw; the 64KB one, seed 2): the smaller piece's receive pass reaches the
    reader's vCPU 224 us after the larger's at 128KB, 101 at 64KB, the larger's work there up
    to its read's end being 219 and 110 us: apart at 128KB, coupled at 64KB (``_own_pieces``).
    Other windows: the mean piece's work against its wire time. Only the spacing that the
    link makes is counted: a core slower than the link spaces the pieces itself, but the ones
    before it on the path meet them as it releases them (not traced)."""
    n, nc = len(net.flows), len(net.cpu.core_clock)
    chunk = net.pre["chunk"]
    pieces_s = np.where(chunk > 0, st.quantities[:, G] / np.where(chunk > 0, chunk, 1), 0.0)
    work = np.bincount(g_flow * nc + g_core, busy, n * nc).reshape(n, nc)
    wire = net.pre["piece_wire_s"]
    mean = (pieces_s[:, None] > 0) & (wire[:, None] > 0) & (
        work <= wire[:, None] * pieces_s[:, None])
    unequal = net.pre["unequal"]
    if not unequal.any():
        return mean
    spaced, traced, _, _ = two if two is not None else _two_pieces(net, st)
    return np.where(unequal[:, None], spaced & traced[:, None], mean)


def _two_pieces(net: _Net, st: State) -> tuple:
    """For the windows of two unequal pieces (``_slow_start_pieces``): per (flow, core)
    whether the pieces reach it spaced (the larger piece's work there before its window
    update, ``_piece_work``, at most ``spacing_wire_s``; at the reader's core, where the
    smaller piece's receive pass goes before that update, counted by ``_own_pieces``, not as
    a residual at a random phase); per flow whether they are spaced at every core but that
    coupling (the loop the DES traced: the link sets the pieces' phase all round), whether
    they couple at the reader's core, and the smaller piece's receive pass there (s). A
    window whose pieces meet at any other core goes round as before (its own other piece at
    a random phase everywhere, ``_residual_waits``): the DES (team_10g_1flow, 64KB, 10GbE,
    seeds 1 and 2, 0.03 s after 0.03 s; 4.185 Gbps) is nearer that (4.225) than either the
    spaced cores' rule (4.416) or the two pieces' loops (4.103)."""
    big, pass_s = _piece_work(net, st)
    spaced = big <= net.pre["spacing_wire_s"][:, None]
    rd = net.pre["reader_core"]
    n = len(net.flows)
    coupled = net.pre["unequal"] & (rd >= 0) & (pass_s > 0) & ~spaced[np.arange(n),
                                                                        np.maximum(rd, 0)]
    at = np.flatnonzero(coupled)
    spaced[at, rd[at]] = True
    traced = net.pre["unequal"] & spaced.all(axis=1)
    return spaced, traced, coupled & traced, pass_s


def _piece_work(net: _Net, st: State) -> tuple[np.ndarray, np.ndarray]:
    """Per (flow, core), the larger of a window's two pieces' work before its window update
    (s; each entry's work per mean piece less the update's unit, the entries that grow with
    the bytes scaled to the larger piece); per flow, the smaller piece's receive pass at its
    reader's core (its data-side work there but the read and the halt wake-up: the core is
    busy when it arrives, ``_own_pieces``)."""
    pre, cpu = net.pre, net.cpu
    n, nc = len(net.flows), len(cpu.core_clock)
    Q = st.quantities
    chunk = pre["chunk"]
    f = net.e_flow
    ctx = (net.e_section >= 0) & (cpu.e_ctx >= 0)
    clock = pre["key_clock"][net.e_key]
    with np.errstate(divide="ignore", invalid="ignore"):
        pieces_s = np.where(chunk > 0, Q[:, G] / np.where(chunk > 0, chunk, 1), 0.0)
        ps, qe = pieces_s[f], Q[f, net.e_q]
        per_piece = np.where(ctx & (ps > 0), st.entry / np.where(ps > 0, ps, 1) / clock, 0.0)
        unit = np.where(ctx & (qe > 0), st.entry / np.where(qe > 0, qe, 1) / clock, 0.0)
        big, small = (np.where(chunk > 0, pre["pieces"][:, i] / np.where(chunk > 0, chunk, 1),
                               1.0)[f] for i in (0, 1))
    grows = pre["grows"]
    before = np.maximum(per_piece - np.where(pre["update_loop"], unit, 0.0), 0.0) \
        * np.where(grows, big, 1.0)
    core = np.where(ctx, cpu.ctx_core[np.maximum(cpu.e_ctx, 0)], 0)
    work = np.bincount(f * nc + core, np.where(ctx, before, 0.0), n * nc).reshape(n, nc)
    rx_pass = ctx & (core == pre["reader_core"][f]) & (net.e_section == 0) \
        & ~net.e_recv_app & ~net.e_halt & ~net.e_background
    pass_s = np.bincount(f, np.where(rx_pass, per_piece * np.where(grows, small, 1.0), 0.0), n)
    return work, pass_s


def _own_pieces(net: _Net, st: State, grown_s: np.ndarray,
                two: tuple | None = None) -> np.ndarray:
    """What a window of two unequal pieces (``_slow_start_pieces``) adds to the mean piece's
    round trip (s): the window goes round at the larger piece's pace, the smaller one waiting
    behind it (at the link, in the DES), so the mean piece's loop is half the difference of
    the two pieces' loops longer: their first segments' wire times
    (``own_wire_diff_s``) and their service on the loop that grows with the bytes
    (``grown_s``, the mean piece's); and where the larger piece's work at its reader's core
    before its window update outlasts the smaller piece's spacing (``_spaced_pieces``), the
    smaller piece's receive pass runs before that update, which the window then waits for.

    The DES (e35_rx_single_vm, 1 session, 8KB messages, 2.5GbE, max_frames 16, 2 GHz, seed 2,
    0.03 s after 0.03 s; ``TcpSender``, ``TcpReceiver`` and the tasks logged): at 128KB the
    smaller piece waits 37 us at the link and the window goes round at the larger's pace, 531 us
    (1.976 Gbps); at 64KB the smaller piece's receive pass (22 us) goes before the larger's
    update (its read ends 110 us after its receive pass began, the smaller arrives at 101)
    and the window goes round in 320 us (1.643 Gbps). Without this the fluid engine had
    1.807 and 1.689 (the flow's own other piece at a random phase, ``_residual_waits``)."""
    pre = net.pre
    uneq, chunk = pre["unequal"], pre["chunk"]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(uneq, (pre["pieces"][:, 0] - pre["pieces"][:, 1])
                         / np.where(chunk > 0, chunk, 1), 0.0)
    _, traced, coupled, pass_s = two if two is not None else _two_pieces(net, st)
    return np.where(traced, (pre["own_wire_diff_s"] + share * grown_s) / 2, 0.0) \
        + np.where(coupled, pass_s, 0.0)


def _task_classes(net: _Net) -> tuple:
    """``_residual_waits``'s task classes, which do not depend on the rates: the context
    entries (their indices), each one's class (0 .. m-1, in the order of the class ids
    ``(context, flow, section, application calls or not)`` as ``np.unique`` numbers them),
    the number of classes, each class's core and flow."""
    base = np.flatnonzero(net.e_section >= 0)
    ctx, low = net.cpu.e_ctx[base], net.e_flow[base] * 4 + net.e_section[base] * 2 \
        + net.e_app[base]
    gid = ctx * (len(net.flows) * 4) + low          # (ctx * flows + flow) * 4 + section * 2 + app
    g = _rank(gid, ctx, low)
    m = int(g.max()) + 1 if len(g) else 0
    g_core = np.zeros(m, dtype=int)
    g_core[g] = net.cpu.ctx_core[np.maximum(net.cpu.e_ctx[base], 0)]
    g_flow = np.zeros(m, dtype=int)
    g_flow[g] = net.e_flow[base]
    return base, g, m, g_core, g_flow


def _rank(gid: np.ndarray, high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Each of ``gid = high * K + low`` (``0 <= low < K``, both >= 0) numbered by its place
    among the distinct values in increasing order: ``np.unique(gid, return_inverse=True)[1]``.
    Sorted by two stable radix sorts of 16-bit keys (``low``, then ``high``) where they fit,
    which is faster than ``np.unique``'s sort of the whole ids (S3: 56K entries)."""
    if not len(gid) or min(low.min(), high.min()) < 0 or max(low.max(), high.max()) >= 1 << 16:
        return np.unique(gid, return_inverse=True)[1].reshape(-1)
    by_low = np.argsort(low.astype(np.uint16), kind="stable")
    order = by_low[np.argsort(high.astype(np.uint16)[by_low], kind="stable")]
    ranked = gid[order]
    new = np.empty(len(ranked), dtype=bool)
    new[0] = True
    np.not_equal(ranked[1:], ranked[:-1], out=new[1:])
    g = np.empty(len(gid), dtype=np.intp)
    g[order] = np.cumsum(new) - 1
    return g


def _window_mva(net: _Net, st: State, delay_s: np.ndarray,
                iterations: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Each flow's window-bound rate (bytes/s) and round-trip time (s) with queueing, by
    mean-value analysis of the closed network its windows make (Schweitzer's approximation,
    multi-class). A flow is a class of ``N = window / seg`` customers (the segments of one
    window, each with its ACK train); the stations are the cores, a customer's demand at one
    the cycles per customer of the flow's contexts there (data and ACKs) / clock; the rest of
    the loop (propagation, serialisation, coalescing timers) is a pure delay ``Z``.
    ``R_ik = D_ik (1 + sum_j Q_jk - Q_ik / N_i)``, ``X_i = N_i / (Z_i + sum_k R_ik)``,
    ``Q_ik = X_i R_ik``: a window's segments wait behind the other windows' work at every
    busy core (the queue the DES shows in a window-limited loop through a context at 75-80%),
    and the throughput never exceeds a core (closed loop: no M/D/1 blow-up). The sender's
    ``send()`` copies run ahead of the window (into the send buffer): they are background
    load ``U`` at their core, which stretches the loop's demands there by ``1 / (1 - U)``."""
    cpu = net.cpu
    n = len(net.flows)
    nc = len(cpu.core_clock)
    ctx = cpu.e_ctx >= 0
    core = np.where(ctx, cpu.ctx_core[np.maximum(cpu.e_ctx, 0)], 0)
    # The sender's send() calls fill its send buffer ahead of the window (the buffer holds
    # more than the window): not in the loop, but their cycles keep the core busy.
    app = np.array([net.keys[k][1] == costs.APP_SEND for k in net.e_key]) & ctx
    loop = ctx & ~app
    cyc = np.zeros((n, nc))
    np.add.at(cyc, (net.e_flow[loop], core[loop]), st.entry[loop])
    bg = np.minimum(np.bincount(core[app], st.entry[app], nc) / cpu.core_clock, 0.95)
    # A customer: the part of a window one ACK train gives back (the sender refills the window
    # as ACKs come: an 8KB window of one 6-frame segment is three customers, not one).
    window = np.array([fl.window for fl in net.flows], dtype=float)
    g, trains = st.quantities[:, G], st.quantities[:, T]
    with np.errstate(divide="ignore", invalid="ignore"):
        N = np.where(g > 0, np.maximum(1.0, window * trains / np.where(g > 0, g, 1)), 1.0)
        unit = window / N                                   # bytes per customer
        per_s = np.where(g > 0, g / unit, 0.0)              # customers/s
        D = np.where(per_s[:, None] > 0, cyc / np.where(per_s > 0, per_s, 1)[:, None]
                     / cpu.core_clock[None, :], 0.0)
    seg = unit
    Q = np.tile(N[:, None] / max(nc, 1), (1, nc)) * (D > 0)
    for _ in range(iterations):
        R = D * (1 + Q.sum(axis=0)[None, :] - Q / N[:, None]) / (1 - bg)[None, :]
        X = N / (delay_s + R.sum(axis=1))
        Qn = X[:, None] * R
        if np.allclose(Qn, Q, rtol=1e-6, atol=1e-9):
            Q = Qn
            break
        Q = Qn
    rtt = delay_s + R.sum(axis=1)
    return X * seg, rtt


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
        name = f"core {core.split(':')[0]} {core.split(':')[-1]} " \
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
    inc[key_row[net.cpu.ws_key[net.cpu.t_ctx]], net.cpu.t_flow] = True
    inc[m + np.arange(n), np.arange(n)] = True
    names += [f"window flow {fl.path.flow}" for fl in net.flows]
    cap = np.array(caps + [0.0] * n)
    return _Problem(names, cap, inc, key_row), {"m": m, "core_name": core_name}


# A reader whose core is saturated reads what arrived during its previous read, several pieces
# at once (``_merged_reads``); False: one read per receiving pass.
READS_MERGE = True
SATURATED = 1 - 1e-3   # a core this full (load / capacity) runs its reader back to back


def _merged_reads(net: _Net, st: State, rtt: np.ndarray, prob, m: int) -> np.ndarray:
    """Per flow, the bytes each read takes when its reader's core is saturated (0: one read per
    receiving pass, ``READS = min(STACK_PK, IR)``).

    A saturated reader (``models.workloads.base.Reader``) never waits for data: each wake-up
    reads everything readable at its start (``tcp.readable``), so a read takes what arrived
    during the previous one, and its window update (``TcpReceiver.read``) reopens that much.
    The window holds the bytes in flight and the unread ones: ``W = G R + U``, ``R`` the round
    trip without the reader (``_rtt0`` less the read of one piece: the reader's recv()
    entries on the loop), ``U`` the unread bytes, on average the read in progress (``X`` for
    the ``f`` share of the time the flow's reads hold the core) and what accumulates for the
    next read (``X / 2``): ``U = X (f + 1/2)``, so

        X = (W - G R) / (f + 1/2),   at least one piece (``chunk``), at most the window.

    DES, one 10GbE sender's peer reader at 100% (256KB window, 64KB messages, pieces of 64KB:
    10890 pieces/s): at 4 GHz 5470 reads/s (window updates) of ~130KB, at 2.93 GHz 7850 of
    65-139KB. A reader below saturation reads once per piece even at 94% (paced pieces,
    docs/fluid.md), so the rule is a step at ``SATURATED``. Left out: the reads' spread
    (a mean size), a reader sharing its core with other work than its own reads (``f`` < 1:
    the form above, not measured)."""
    n = len(net.flows)
    out = np.zeros(n)
    rd = np.flatnonzero(net.e_recv_app)
    if not len(rd):
        return out
    f_i, f_key = net.pre["filler"]
    kl = st.key_load - np.bincount(f_key, st.entry[f_i], len(net.keys))
    util = np.bincount(prob.rows, kl, m) / prob.cap[:m]
    clock = net.pre["key_clock"]
    flow = net.e_flow[rd]
    secs = st.entry[rd] / clock[net.e_key[rd]]                     # core-seconds per second
    Q = st.quantities
    per = Q[flow, S]
    with np.errstate(divide="ignore", invalid="ignore"):
        piece_s = np.where(per > 0, secs * net.pre["burst_scale"][rd] / np.where(per > 0, per,
                                                                                 1), 0.0)
    f = np.clip(np.bincount(flow, secs, n), 0.0, 1.0)
    read_piece = np.bincount(flow, piece_s, n)
    sat = np.zeros(n, dtype=bool)
    sat[flow] = util[prob.rows[net.e_key[rd]]] >= SATURATED
    window, chunk = net.pre["window"], net.pre["chunk"]
    g = Q[:, G]
    x = (window - g * np.maximum(rtt - read_piece, 0.0)) / (f + 0.5)
    return np.where(sat & (g > 0) & (x > chunk), np.minimum(x, window), 0.0)


WINDOW_QUEUEING = False  # the window bound by mean-value analysis (True) or RTT0 (no queueing)


def _solve_net(net: _Net, iterations: int = 8, remember: bool = True):
    """Progressive filling under the window bound, iterated to the round trips' fixed point.
    ``remember``: look up an evaluation of the demands made before at the same rates and
    merged reads (False: evaluate every time, the direct form)."""
    n = len(net.flows)
    prob, aux = _problem(net)
    m = aux["m"]

    # wake-ups (``_halt_wakeups``) and a polling receiver's per-interrupt work (``_polling``)
    # fill idle time only: not a constraint (``_precompute``: net.e_halt | net.e_poll)
    f_i, f_key = net.pre["filler"]
    # every evaluation, keyed by the exact rates and the merged reads' bytes (the one input of
    # ``demands`` besides the rates that the iterations below change): each fixed-point
    # iteration's filling starts again at zero and at the levels it went through, and the
    # state at the filling's rates is its last evaluation
    seen: dict = {}

    def evaluate(rates):
        read = net.pre.get("read_bytes")
        key = (np.asarray(rates, dtype=float).tobytes(),
               None if read is None else read.tobytes())
        hit = seen.get(key) if remember else None
        if hit is None:
            st = demands(net, rates)
            kl = st.key_load - np.bincount(f_key, st.entry[f_i], len(net.keys))
            hit = seen[key] = (st, np.concatenate([np.bincount(prob.rows, kl, m), rates]))
        return hit

    def loads(rates):
        return evaluate(rates)[1]

    window = net.pre["window"]
    rtt = np.full(n, 1e-4)
    fill = st = None
    evals = 0
    cap_w = window / rtt
    # A paced sender (workload.rate_limit_mbps) offers at most its rate: a cap on the same row.
    pace = (units.mbps_to_bytes_per_s(net.cfg.workload.rate_limit_mbps)
            if net.cfg.workload.rate_limit_mbps > 0 else math.inf)
    net.pre.pop("read_bytes", None)
    for k in range(iterations):
        prob.cap[m:] = np.minimum(cap_w, pace)
        fill = fill_arrays(n, loads, prob.cap, prob.inc, prob.names)
        evals += fill.evaluations
        st = evaluate(fill.rates)[0]
        # the window bound with queueing (mean-value analysis at these rates' batching)
        if WINDOW_QUEUEING:
            new, rtt = _window_mva(net, st, _rtt0(net, st, with_service=False))
        else:
            rtt = _rtt0(net, st)
            if COUPLED_PIECES:   # a window whose pieces go round coupled (``_coupled_rtt``)
                rtt = np.maximum(rtt, _coupled_rtt(net, st))
            new = window / rtt
        done = np.allclose(new, cap_w, rtol=1e-4)
        if READS_MERGE:   # a saturated reader's reads at these rates (``_merged_reads``)
            merged = _merged_reads(net, st, rtt, prob, m)
            before = net.pre.get("read_bytes")
            if merged.any() or before is not None:
                done = done and before is not None and np.allclose(merged, before, rtol=1e-3)
                net.pre["read_bytes"] = merged
        cap_w = new if k == 0 else np.sqrt(cap_w * new)   # damped towards the fixed point
        if done:
            break
    fill.evaluations = evals
    aux.update(capacity=dict(zip(prob.names, prob.cap)), rtt0=rtt)
    return fill, st, aux


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off for the block, back as it was after, then one
    collection of the youngest generation. A solve builds a model (S3: ~90K tracked objects,
    all alive until it returns) and allocates as it goes, so the collector, started by
    allocation counts, traverses the growing model again and again and finds nothing to free.
    Reference counting still frees all acyclic garbage; the model's own cycles, unreachable
    once the solve has returned, are all in the youngest generation (nothing was collected in
    the block) and go in the one collection at the end (its cost is the solve's, so timing a
    solve still counts it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
            gc.collect(0)


def solve(cfg: Config, replication: int = 0):
    """The fluid engine's answer for ``cfg``: a ``sim.runner.Results`` (summary, tables).
    ``replication``: whose random draws build the model (RSS and teaming hash salts, MACs), as
    the DES's replication of that number does."""
    with _collector_paused():
        return _solve(cfg, replication)


def _solve(cfg: Config, replication: int = 0):
    from sim.runner import Results
    if cfg.workload.kind == "udp_multicast":
        return _solve_multicast(cfg, replication)
    if cfg.workload.kind in ("tcp_rr", "ping"):   # request/response loops: sim/fluid_rr.py
        from sim import fluid_rr
        return fluid_rr.solve(cfg, replication=replication)
    net = describe_network(cfg, replication)
    fill, st, aux = _solve_piled(net)
    # No timings in the results: the same config gives the same numbers (time it outside).
    summary, tables = _report(net, fill, st, aux)
    return Results(cfg, summary, {k: None for k in summary}, [summary], tables)


def _kind(constraint: str) -> str:
    return {"core": "context", "link": "link", "pcie": "pcie", "window": "window",
            "offered": "offered"}[constraint.split()[0]]


def _poll_spin(ctx_obj: dict, ctx_core: dict, core_clock: dict, ctx_cycles: dict) -> dict:
    """Poll-mode contexts (``models.polling``: a userspace vswitch's PMD threads) spin between
    passes: each is busy all the time, the cycles it does not work reported as ``poll_idle``
    (``clock - its work``, as ``PollingContext.counters``), and its core counted 100% busy
    (``Core.busy_time_s``). Context name -> spinning cycles/s."""
    return {c: max(0.0, core_clock[ctx_core[c]] - ctx_cycles.get(c, 0.0))
            for c, obj in ctx_obj.items() if getattr(obj, "poll_mode", False)}


def _load_tables(net, key_load: np.ndarray) -> tuple[dict, float, float]:
    """The cost_terms, contexts, cores, links and pcie tables of the keys' loads; the host's
    busy cycles/s and its capacity (cycles/s)."""
    core_cycles: dict[str, float] = {}
    ctx_cycles: dict[str, float] = {}
    terms, links, pcie = [], [], []
    for key, v in zip(net.keys, key_load.tolist()):   # Python floats, as float() of each
        if key[0] == "link":
            links.append((key[1], units.bytes_per_s_to_gbps(v), 100 * v / net.link_rate[key[1]]))
        elif key[0] == "pcie":
            pcie.append((key[1], units.bytes_per_s_to_gbps(v), 100 * v / net.pcie_rate[key[1]]))
        else:
            terms.append((key[0], key[1], v))
            ctx_cycles[key[0]] = ctx_cycles.get(key[0], 0.0) + v
            core = net.ctx_core[key[0]]
            core_cycles[core] = core_cycles.get(core, 0.0) + v
    ctx_obj = getattr(net, "ctx_obj", None) or _contexts_by_name(net.model)
    for c, spun in _poll_spin(ctx_obj, net.ctx_core, net.core_clock, ctx_cycles).items():
        terms.append((c, costs.POLL_IDLE, spun))
        ctx_cycles[c] = ctx_cycles.get(c, 0.0) + spun
        core_cycles[net.ctx_core[c]] = net.core_clock[net.ctx_core[c]]
    host_cycles = sum(v for k, v in core_cycles.items() if net.core_host[k])
    host_capacity = sum(c for k, c in net.core_clock.items() if net.core_host[k])
    hv = metrics.hypervisor_contexts(net.model)
    contexts = _frame(("context", "host", "util_pct", "hypervisor", "cycles_per_s"),
                      [(c, net.ctx_host[c], 100 * v / net.core_clock[net.ctx_core[c]], c in hv, v)
                       for c, v in sorted(ctx_cycles.items())])
    terms.sort(key=lambda r: (r[0], r[1]))   # (cheaper than pandas' sort here)
    cost_terms = _frame(("context", "term", "cycles_per_s"), terms, keep_columns=True)
    cores = _frame(("core", "host", "util_pct"),
                   [(k.split(":")[-1], net.core_host[k], 100 * core_cycles.get(k, 0.0) / c)
                    for k, c in net.core_clock.items()])
    tables = {"contexts": contexts, "cost_terms": cost_terms, "cores": cores,
              "links": _frame(("link", "gbps", "util_pct"), links),
              "pcie": _frame(("channel", "gbps", "util_pct"), pcie)}
    return tables, host_cycles, host_capacity


def _frame(columns: tuple, rows: list, keep_columns: bool = False) -> pd.DataFrame:
    """A table from row tuples, built column by column (pandas builds that faster than from
    a list of dicts); no rows: no columns either, unless ``keep_columns``."""
    if not rows and not keep_columns:
        return pd.DataFrame([])
    return pd.DataFrame({c: [r[j] for r in rows] for j, c in enumerate(columns)},
                        columns=list(columns))


def _hypervisor(net, load_tables: dict, host_capacity: float, gbps: float) -> dict:
    """The hypervisor's share of the host's cycles, as the DES reports it (``sim.metrics``)."""
    ctx = load_tables["contexts"]
    return metrics.hypervisor_summary(net.model, dict(zip(ctx["context"], ctx["cycles_per_s"])),
                                      host_capacity, gbps)


def _report(net: _Net, fill: Filling, st: State, aux: dict) -> tuple[dict, dict]:
    cap, rtt0 = aux["capacity"], aux["rtt0"]
    rates = np.asarray(fill.rates)
    gbps = units.bytes_per_s_to_gbps(rates.sum())
    load_tables, host_cycles, host_capacity = _load_tables(net, st.key_load)
    flows = pd.DataFrame({"flow": [fl.path.flow for fl in net.flows],
                          "vm": [fl.path.vm for fl in net.flows],
                          "goodput_gbps": [units.bytes_per_s_to_gbps(r) for r in rates]})
    rows = []
    for i, fl in enumerate(net.flows):
        c = fill.binding[i]
        if c.startswith("window") and cap[c] >= units.mbps_to_bytes_per_s(
                net.cfg.workload.rate_limit_mbps) > 0:
            c = c.replace("window", "offered")     # the pacing, not the window, binds
        rows.append((fl.path.flow, fl.path.vm, _kind(c), c,
                     float(100 * fill.loads[fill.binding[i]] / cap[fill.binding[i]])))
    bottleneck = _frame(("flow", "vm", "kind", "constraint", "util_pct"), rows)
    by_kind: dict[str, float] = {}   # goodput by the kind of constraint that binds it
    for row, g in zip(rows, rates):
        by_kind[row[2]] = by_kind.get(row[2], 0.0) + float(g)
    # the kind binding the most goodput (ties: the first in name order, as pandas' idxmax)
    regime = REGIMES[max(sorted(by_kind), key=by_kind.get)] if by_kind else "idle"
    Q = st.quantities
    tx = np.array([fl.path.direction == "tx" for fl in net.flows])
    # host NIC: TX packets (a segment is one) + frames delivered up (an LRO aggregate is one)
    # (VM to VM on one vswitch: nothing crosses a NIC or a wire)
    wired = np.array([bool(fl.data_links) for fl in net.flows])
    host_pk = (wired * np.where(tx, Q[:, S] + Q[:, A], Q[:, A] + Q[:, NIC_PK])).sum()
    window = np.array([fl.window for fl in net.flows], dtype=float)
    windowed = np.array([fill.binding[i].startswith("window") for i in range(len(rates))])
    with np.errstate(divide="ignore"):
        rtts = np.where(windowed | (rates <= 0), rtt0, np.maximum(rtt0, window / rates))
    summary = {
        "goodput_gbps": float(gbps),
        "host_cpu_util_pct": float(100 * host_cycles / host_capacity),
        **_hypervisor(net, load_tables, host_capacity, gbps),
        "cycles_per_bit": float(host_cycles / units.gbps_to_bits_per_s(gbps)) if gbps
        else math.nan,
        "wire_frames_per_s": float((wired * (Q[:, D] + Q[:, A])).sum()),
        "host_packets_per_s": float(host_pk),
        "loss_ratio": 0.0,
        "rtt_us": units.s_to_us(float(rtts.mean())),
        "regime": regime,
        "fluid_rounds": fill.rounds,
        "fluid_evaluations": fill.evaluations,
    }
    tables = {"flows": flows, "bottleneck": bottleneck, **load_tables}
    if net.unknown:
        summary["fluid_unpriced_units"] = "; ".join(sorted(f"{t}/{u}" for t, u in net.unknown))
    return summary, tables


# -- both engines -----------------------------------------------------------------------------

COMPARED = ("goodput_gbps", "host_cpu_util_pct", "hypervisor_cpu_util_pct", "cycles_per_bit",
            "wire_frames_per_s", "host_packets_per_s", "loss_ratio", "rtt_us")
LOOP_COMPARED = {"tcp_rr": ("transactions_per_s", "rr_latency_mean_us"),
                 "ping": ("ping_rtt_mean_us", "ping_sent_per_s")}


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
    for m in COMPARED + LOOP_COMPARED.get(cfg.workload.kind, ()):
        d, f = des_summary.get(m, math.nan), fl.get(m, math.nan)
        try:
            rel = (f - d) / d if d else math.nan
        except TypeError:
            rel = math.nan
        rows.append({"metric": m, "des": d, "fluid": f, "rel_diff": rel})
    return pd.DataFrame(rows)


# The validation table: every experiment in both engines (``python -m sim compare --all``).
STEADY_LOSS_RATIO = 1e-4   # a DES run losing more is past loss onset: not a steady state
# One operating point: the DES's replications (seeds) agree within SAME_POINT_TOL on goodput
# (steady runs differ by 0-1% at 0.1 s). Where they do not, the DES sits on one of several
# self-sustaining points by seed (a window that goes round whole or in pieces, segments long
# enough or not to outlast a coalescing timer), fragile points of its near-deterministic
# service times; with more service jitter (ROBUST_JITTER_CV, after ROBUST_WARMUP_S) it leaves
# them for the robust one, where the fluid engine is compared (the random cross-check in
# tests/system/test_fluid.py does the same).
SAME_POINT_TOL = 0.02
ROBUST_JITTER_CV = 0.2
ROBUST_WARMUP_S = 0.3


def _one_point(values: list[float]) -> bool:
    """Whether replications' values (goodputs, or goodputs over the fluid engine's for the same
    draws) agree within ``SAME_POINT_TOL`` of their mean (NaNs left out)."""
    x = [v for v in values if not math.isnan(v)]
    mean = float(np.mean(x)) if x else 0.0
    return len(x) < 2 or mean <= 0 or (max(x) - min(x)) <= SAME_POINT_TOL * mean


def _over_fluid(reps: list[dict], fls: list) -> list[float]:
    """Each DES replication's goodput over the fluid engine's for the same draws (``fls``, one
    ``Results`` a replication; none: the DES's goodputs alone)."""
    return [r.get("goodput_gbps", math.nan) / ((fls[i].summary.get("goodput_gbps") or math.nan)
                                               if fls else 1.0) for i, r in enumerate(reps)]


# ``compare_all``'s metrics, the fluid engine's averaged over the replications' draws
_COMPARED_ALL = ("goodput_gbps", "host_cpu_util_pct", "transactions_per_s",
                 "multicast_loss_ratio")


def compare_all(names: list[str], config_dir: str = "configs", measure_s: float = 0.3,
                warmup_s: float = 0.1, replications: int = 3, out: str | None = None,
                progress=None) -> pd.DataFrame:
    """Each named experiment in both engines: one row with the DES's (``replications`` x
    ``measure_s`` after ``warmup_s``) and the fluid engine's goodput and host CPU, their
    relative differences (fluid - des) / des, the DES's loss and whether it was in steady state
    (loss ratio, multicast loss included, at most ``STEADY_LOSS_RATIO``: a run past loss onset
    loses more as its queues stay full, which the fluid engine does not model), TCP_RR's
    transactions/s and the fluid regime and binding constraint. The fluid engine solves each
    replication's draws (``solve(cfg, r)``) and its columns are their mean. ``des_point``:
    ``one`` where the replications agree (``_one_point`` on each one's DES goodput over the
    fluid engine's for its draws); where they do not, the DES columns are its robust point
    (``ROBUST_JITTER_CV``; ``robust``), or, if those disagree too, the first run's mean
    (``several``); ``des_goodput_range_gbps``: the first run's replications' goodputs, lowest
    and highest. ``out``: the CSV, rewritten after every row (a long run can be watched
    and stopped)."""
    from sim.compose import compose_checked
    from sim.runner import run_experiment
    rows = []
    for name in names:
        cfg = compose_checked(config_dir, [f"experiment={name}"])
        des_cfg = replace(cfg, run=replace(cfg.run, engine="des", measure_s=measure_s,
                                           warmup_s=warmup_s, replications=replications))
        res = run_experiment(des_cfg)
        des, point = res.summary, "one"
        # the fluid engine per replication: each DES replication draws its own hash salts and
        # MACs (``sim.builder.stream``), which can put flows on other queues or uplinks
        try:
            fls = [solve(cfg, r) for r in range(replications)]
            bn = fls[0].tables["bottleneck"]
            binding = bn["constraint"].mode().iloc[0] if len(bn) else ""
            fl = dict(fls[0].summary)
            for m in _COMPARED_ALL:
                fl[m] = float(np.mean([f.summary.get(m, math.nan) for f in fls]))
            error = ""
        except ValueError as exc:      # a kind the fluid engine does not model
            fls, fl, binding, error = [], {}, "", str(exc)
        goodputs = [r.get("goodput_gbps", math.nan) for r in res.replications]
        if not _one_point(_over_fluid(res.replications, fls)):
            robust_cfg = replace(des_cfg, host=replace(cfg.host, cpu=replace(
                cfg.host.cpu, jitter_cv=ROBUST_JITTER_CV)), run=replace(
                des_cfg.run, warmup_s=max(warmup_s, ROBUST_WARMUP_S)))
            robust = run_experiment(robust_cfg)
            point = "several"
            if _one_point(_over_fluid(robust.replications, fls)):
                des, point = robust.summary, "robust"
        loss = max(des.get("loss_ratio", 0.0), des.get("multicast_loss_ratio", 0.0) or 0.0)
        row = {"experiment": name, "kind": cfg.workload.kind,
               "des_measure_s": measure_s, "des_replications": replications,
               "des_steady": bool(loss <= STEADY_LOSS_RATIO), "des_loss_ratio": loss,
               "des_point": point,
               "des_goodput_range_gbps": f"{min(goodputs):.4g}-{max(goodputs):.4g}"}
        for m in _COMPARED_ALL:
            d, f = des.get(m, math.nan), fl.get(m, math.nan)
            row[f"des_{m}"], row[f"fluid_{m}"] = d, f
            row[f"{m}_rel_diff"] = (f - d) / d if d and not math.isnan(d) else math.nan
        row.update(fluid_regime=fl.get("regime", ""), fluid_binding=binding,
                   fluid_error=error)
        rows.append(row)
        if progress is not None:
            progress(f"{name}: goodput {row['goodput_gbps_rel_diff']:+.1%}, CPU "
                     f"{row['host_cpu_util_pct_rel_diff']:+.1%}"
                     + ("" if row["des_steady"] else " (DES not in steady state)")
                     + ("" if point == "one" else f" (DES at {point} points by seed: "
                        f"{row['des_goodput_range_gbps']} Gbps)"))
        if out is not None:
            pd.DataFrame(rows).to_csv(out, index=False, float_format="%.6g")
    return pd.DataFrame(rows)


# -- multicast --------------------------------------------------------------------------------

# Multicast quantities per flow (a receiver or a stream), per second.
MG, MDG, MIRQ = range(3)
# A charge's per/unit on the multicast path -> quantity (the receivers' side: IRQ is the
# virtual interrupts of the receiver's vNIC; the streams' side: the NIC queue's interrupts).
_MC_RATES = {"send() call": MDG, "segment": MDG, "frame": MDG, "packet": MDG,
             "NIC packet": MDG, "copy": MDG, "datagram": MDG, "recv() call": MDG,
             "interrupt": MIRQ, "virtual interrupt": MIRQ, "pass": MIRQ,
             "member and pass": MIRQ,
             # a poll per pass and the budget's share per datagram: over by that share while
             # passes exceed datagrams / budget (mc_default_30k: ~1.5 datagrams per pass)
             POLL_BEYOND: MIRQ}
# Terms of the receiving vector that are paid once per packet the NIC delivers (the stream's);
# the others there (replication, the members' vNIC backends) once per member.
_MC_STREAM_TERMS = {costs.DRIVER_RX, costs.COMPAT_RX, costs.VSWITCH, costs.SW_SORT,
                    costs.VXLAN, costs.DRIVER_POLL}


@dataclass
class _McNet:
    """The multicast network: ``R`` receivers (flows 0..R-1) and ``S`` streams (R..R+S-1)."""

    cfg: Config
    model: Model
    paths: list
    n_rx: int
    stream_of: np.ndarray          # receiver -> its stream's flow index
    lam: np.ndarray                # offered datagrams/s per flow (a receiver's: its stream's)
    per_burst: np.ndarray          # datagrams per burst per flow (the sender's pacing)
    queue_of: np.ndarray           # stream -> receive queue index
    n_queues: int
    ctx_core: dict
    ctx_host: dict
    core_clock: dict
    core_host: dict
    link_rate: dict
    pcie_rate: dict
    keys: list = field(default_factory=list)
    e_key: np.ndarray = None
    e_flow: np.ndarray = None
    e_q: np.ndarray = None
    e_coef: np.ndarray = None
    e_halt: np.ndarray = None      # entries priced only when the vCPU is halted
    e_poll: np.ndarray = None      # per-pass entries of receive handlers (fewer when busy)
    e_irq: np.ndarray = None       # ... of them, those paid per interrupt (not per poll)
    tasks: list = field(default_factory=list)   # (context, flow, quantity): one task each
    unknown: set = field(default_factory=set)


def _mc_network(cfg: Config, replication: int = 0) -> _McNet:
    model = build(cfg, replication, declare_only=True)   # read, never run: no TCP state
    paths = flow_paths(model)
    wl = model.workload
    mc = cfg.workload.multicast
    n_rx, n_st = len(wl.receivers), len(wl.streams)
    ctx_core, ctx_host, core_clock, core_host = _placement(model)
    link_rate = {}
    for nic in [*model.nics, *(p.nic for p in model.peers)]:
        link_rate[nic.tx_link.name] = units.gbps_to_bytes_per_s(nic.tx_link.params.line_rate_gbps)
    pcie_rate = {ch.name: units.gbps_to_bytes_per_s(ch.rate_gbps)
                 for card in model.cards for ch in (card.up, card.down)}
    lam = np.full(n_rx + n_st, mc.packet_rate_pps)
    # The sender wakes every burst_interval and sends what is due: bursts of rate x interval
    # datagrams (one each when the interval is shorter than the datagram spacing).
    per_burst = np.full(n_rx + n_st, max(1.0, mc.packet_rate_pps
                                         * units.us_to_s(mc.burst_interval_us)))
    stream_of = np.array([n_rx + r.stream.index for r in wl.receivers], dtype=int)
    net = _McNet(cfg, model, paths, n_rx, stream_of, lam, per_burst, np.zeros(n_st, int), 0,
                 ctx_core, ctx_host, core_clock, core_host, link_rate, pcie_rate)
    _mc_compile(net)
    return net


def _placement(model: Model):
    """Context -> core key, host or peer; core key -> clock, host or peer."""
    ctx_core, ctx_host, core_clock, core_host = {}, {}, {}, {}
    for h, who in zip(model.hosts(), ("host", "remote")):
        for core in h.cpu.cores:
            k = _core_key(core, who)
            core_clock[k], core_host[k] = core.params.clock_hz, who == "host"
        for ctx in h.contexts:
            ctx_core[ctx.name], ctx_host[ctx.name] = _core_key(ctx.core, who), who == "host"
    for peer in model.peers:
        for ctx in peer.contexts():
            k = _core_key(ctx.core, "peer")
            ctx_core[ctx.name], ctx_host[ctx.name] = k, False
            core_clock[k], core_host[k] = ctx.core.params.clock_hz, False
    return ctx_core, ctx_host, core_clock, core_host


def _mc_compile(net: _McNet) -> None:
    """Entries (key, flow, quantity, coefficient): what the stream pays once (the sender, the
    wire, PCIe, the vector's driver and vswitch) on the stream's flow, what each member costs
    at the stream's rate (default mode's copies and vNIC backend, splitRxMode's hand-offs) on
    the stream's flow once per member, and what the receiver pays for what it receives on the
    receiver's flow."""
    cfg = net.cfg
    pb = cfg.workload.multicast.packet_bytes
    from models.workloads.multicast import UDP_IP_HEADER_BYTES
    wire = (units.vxlan_frame_wire_bytes if cfg.hypervisor.vswitch.vxlan.enabled
            else units.frame_wire_bytes)(pb + UDP_IP_HEADER_BYTES)
    p = cfg.pcie
    ovh, mps = p.tlp_overhead_bytes, p.max_payload_bytes
    l2 = pb + UDP_IP_HEADER_BYTES + units.ETH_HEADER_BYTES + units.ETH_FCS_BYTES
    pcie_per_dg = l2 + math.ceil(l2 / mps) * ovh + p.descriptor_bytes + ovh
    keys: dict = {}
    ek, ef, eq, ec, eh, ep, ei = [], [], [], [], [], [], []

    def add(key, i, q, coef, halt=False, poll=False, irq=False):
        if coef:
            ek.append(keys.setdefault(key, len(keys)))
            ef.append(i), eq.append(q), ec.append(coef), eh.append(halt), ep.append(poll)
            ei.append(irq)

    seen_streams: set[int] = set()
    queues: dict[str, int] = {}
    for fp in net.paths:
        r = fp.flow
        s = int(net.stream_of[r])
        first = s not in seen_streams
        seen_streams.add(s)
        stage = "stream"    # the sender's side; then the receiving vector; then the member's
        for hop in fp.data:
            if hop.kind == LINK:
                stage = "wire"
                if first:
                    add(("link", hop.name), s, MDG, wire)
            elif hop.kind == PCIE:
                if first:
                    add(("pcie", hop.name), s, MDG, pcie_per_dg)
            elif hop.kind == RING and stage == "wire":   # the host NIC's receive queue
                net.queue_of[s - net.n_rx] = queues.setdefault(hop.name, len(queues))
            elif hop.kind == CONTEXT:
                stage = {"wire": "vector", "vector": "member"}.get(stage, stage)
                if stage == "member":       # one task per pass (the app: one read per pass)
                    net.tasks.append((hop.name, r, MIRQ))
                elif first:
                    net.tasks.append((hop.name, s, MIRQ if stage == "vector" else MDG))
                for c in hop.charges:
                    if stage == "member":
                        flow, once = r, True       # what this receiver gets
                    elif stage == "vector" and c.term not in _MC_STREAM_TERMS:
                        flow, once = s, True       # per member, at the stream's rate
                    else:
                        flow, once = s, first      # once per stream
                    if not once:
                        continue
                    for what, cyc in ((c.per, c.fixed_cycles), (c.unit, c.per_packet_cycles)):
                        if not cyc:
                            continue
                        halt = what in _LOAD_DEPENDENT
                        q = MIRQ if halt else _MC_RATES.get(what)
                        if q is None:
                            net.unknown.add((c.term, what))
                            continue
                        add((hop.name, c.term), flow, q, cyc, halt,
                            stage == "vector" and q == MIRQ, what == "interrupt")
                    add((hop.name, c.term), flow, MG, c.per_byte_cycles)
    net.n_queues = max(1, len(queues))
    for ctx in sorted({k[0] for k in keys if k[0] in net.ctx_core}):
        keys.setdefault((ctx, costs.WORLD_SWITCH), len(keys))
    net.keys = list(keys)
    net.e_key, net.e_flow, net.e_q = np.array(ek), np.array(ef), np.array(eq)
    net.e_coef, net.e_halt = np.array(ec, dtype=float), np.array(eh, dtype=bool)
    net.e_poll, net.e_irq = np.array(ep, dtype=bool), np.array(ei, dtype=bool)


@dataclass
class _CpuView:
    """The contexts of a compiled network as arrays: per key its context (-1: a link or
    PCIe), per context its core, per core its clock, world-switch price and whether several
    contexts share it; per context its ``world_switch`` key; the task entries."""

    key_ctx: np.ndarray
    e_ctx: np.ndarray
    ctx_core: np.ndarray
    core_clock: np.ndarray
    switch_cycles: np.ndarray
    shared: np.ndarray
    ws_key: np.ndarray
    t_ctx: np.ndarray
    t_flow: np.ndarray
    t_q: np.ndarray
    ctx_index: dict = field(default_factory=dict)


def _cpu_view(net, tasks: list) -> _CpuView:
    model = net.model
    cores = {}
    for h, who in zip(model.hosts(), ("host", "remote")):
        for core in h.cpu.cores:
            cores[_core_key(core, who)] = core
    for peer in model.peers:
        # each core once, in the order of its first context (S3: 1600 contexts, a few cores)
        for core in {id(ctx.core): ctx.core for ctx in peer.contexts()}.values():
            cores[_core_key(core, "peer")] = core
    core_names = list(cores)
    ci = {c: i for i, c in enumerate(core_names)}
    names = sorted(c for c in {k[0] for k in net.keys} if c in net.ctx_core)
    idx = {c: i for i, c in enumerate(names)}
    key_ctx = np.array([idx.get(k[0], -1) for k in net.keys], dtype=int)
    ws_key = np.full(len(names), -1)
    for k, key in enumerate(net.keys):
        if key[1] == costs.WORLD_SWITCH and key[0] in idx:
            ws_key[idx[key[0]]] = k
    # the tasks of contexts (their context, flow, quantity), in order
    t_ctx, t_flow, t_q = (np.zeros(0, dtype=int),) * 3
    if tasks:
        t_name, t_flow, t_q = zip(*tasks)
        t_ctx = np.array([idx.get(c, -1) for c in t_name], dtype=int)
        keep = t_ctx >= 0
        t_ctx, t_flow, t_q = (t_ctx[keep], np.array(t_flow, dtype=int)[keep],
                              np.array(t_q, dtype=int)[keep])
    return _CpuView(
        key_ctx, key_ctx[net.e_key],
        np.array([ci[net.ctx_core[c]] for c in names], dtype=int),
        np.array([cores[c].params.clock_hz for c in core_names], dtype=float),
        np.array([cores[c].params.context_switch_cycles for c in core_names], dtype=float),
        np.array([cores[c].n_contexts > 1 for c in core_names], dtype=bool),
        ws_key, t_ctx, t_flow, t_q, idx)


def _halt_wakeups(entry: np.ndarray, e_ctx: np.ndarray, halt: np.ndarray,
                  clock: np.ndarray, ctx_core: np.ndarray | None = None,
                  core_clock: np.ndarray | None = None,
                  extra: np.ndarray | None = None,
                  background: np.ndarray | None = None,
                  index: tuple | None = None,
                  others: np.ndarray | None = None) -> np.ndarray:
    """Scale the halt/wake-up entries (priced per virtual interrupt that finds the vCPU
    halted) in place by the share of virtual interrupts that find it halted.

    A vCPU halts whenever it has nothing to do. Its work arrives with its interrupts (paced:
    a multicast stream, a window's segments), so an interrupt finds it busy only if the work
    before it has not finished. With ``b`` the utilisation of its other work and ``w`` the
    wake-ups' cycles/s as a fraction of the clock if every interrupt paid one: while ``b + w <
    1`` each interrupt's work ends before the next arrives and every interrupt pays (DES,
    mc_default_30k: 19860 wake-ups for 19860 virtual interrupts at 29% utilisation; random
    arrivals would find it halted only ``1 - u`` of the time, PASTA), except while it runs
    work that does not wait for them (``background``: the applications' ``send()`` and
    ``recv()`` calls), which an
    interrupt finds running with that work's utilisation ``u_bg`` (PASTA for that part; DES,
    e35_tx_jumbo: 51% of the virtual interrupts wake the vCPU, send() calls take 47%); once
    ``b + w`` would pass 1 the vCPU is busy when the next one comes and only the idle time is
    left for wake-ups: ``u = b + min(w (1 - u_bg), 1 - b)``, the wake-ups paid at ``min(1 -
    u_bg, (1 - b) / w)`` of their full rate (none once the other work alone fills the vCPU). Monotone in the rates (``u =
    min(b + w, 1)`` for ``b <= 1``): the loads stay fit for progressive filling. On a shared
    core the same rule at the core's level: wake-ups take at most the time the core's other
    work leaves (they never make a core infeasible; mc_split_30k's cores at 92% in the DES).
    ``index``: ``_halt_index`` of the same arguments, computed once. ``others`` (per entry,
    None: none): the other flows' receive passes on the entry's vCPU, found running at a random
    phase as the background work is (``_others_rx_busy``; with ``WINDOW_UPDATE_RIDES_OTHERS``)."""
    if index is None:
        if not halt.any():
            return entry
        index = _halt_index(e_ctx, halt, ctx_core, background)
    h_i, h_ctx, w_i, w_ctx, bg_i, bg_ctx, h_core, w_core = index
    if not len(h_i):
        return entry
    n = len(clock)
    extra = np.zeros(n) if extra is None else extra   # cycles/s not in entries (switches)
    b = (np.bincount(w_ctx, entry[w_i], n) + extra) / clock
    w = np.bincount(h_ctx, entry[h_i], n) / clock
    # Work that does not wait for the interrupts (the sender's send() calls, issued whenever
    # the send buffer has room) is found running at a random instant: PASTA for that part.
    u_bg = np.bincount(bg_ctx, entry[bg_i], n) / clock if len(bg_i) else np.zeros(n)
    if others is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(w > 0, np.clip(np.minimum(1 - u_bg, (1 - b) / np.where(w > 0, w, 1)),
                                        0, 1), 0.0)
        entry[h_i] *= f[h_ctx]
    else:   # per entry, less the other flows' receive passes found running (``others``)
        with np.errstate(divide="ignore", invalid="ignore"):
            cap = np.where(w > 0, (1 - b) / np.where(w > 0, w, 1), 0.0)
        entry[h_i] *= np.where(w[h_ctx] > 0, np.clip(np.minimum(
            1 - u_bg[h_ctx] - others[h_i], cap[h_ctx]), 0, 1), 0.0)
    if ctx_core is not None:   # and at most what the core's other contexts leave idle
        nc = len(core_clock)
        other = np.bincount(w_core, entry[w_i], nc) + np.bincount(ctx_core, extra, nc)
        full = np.bincount(h_core, entry[h_i], nc)
        with np.errstate(divide="ignore", invalid="ignore"):
            fc = np.where(full > 0, np.clip((core_clock - other) / np.where(full > 0, full, 1),
                                            0, 1), 1.0)
        entry[h_i] *= fc[h_core]
    return entry


def _halt_index(e_ctx: np.ndarray, halt: np.ndarray, ctx_core: np.ndarray | None,
                background: np.ndarray | None = None) -> tuple:
    """The entries ``_halt_wakeups`` sums, as indices with their contexts and cores: the
    wake-ups, the other work of contexts, the work that does not wait for interrupts."""
    work = ~halt & (e_ctx >= 0)
    bg = background if background is not None else np.zeros(len(e_ctx), dtype=bool)
    ce = ctx_core[e_ctx] if ctx_core is not None else e_ctx
    return (np.flatnonzero(halt), e_ctx[halt], np.flatnonzero(work), e_ctx[work],
            np.flatnonzero(bg), e_ctx[bg], ce[halt], ce[work])


def _napi_budget(net: _Net, entry: np.ndarray, Q: np.ndarray) -> None:
    """The driver's poll calls beyond the budget's share (in place): a pass over N packets
    pays ceil(N / budget) polls (``models.hypervisor``), so a handler pays max(passes,
    packets / budget) polls per second; the packets' share is an entry of its own (per NIC
    packet, in the constraints), and the per-pass entry keeps only the passes beyond it
    (after ``_polling``: a busy handler's long passes leave none)."""
    idx, pk_q, inv_budget = net.e_budget
    if len(idx):
        floor = net.e_coef[idx] * inv_budget * Q[net.e_flow[idx], pk_q]
        entry[idx] = np.maximum(entry[idx] - floor, 0.0)


def _polling(entry: np.ndarray, e_ctx: np.ndarray, poll: np.ndarray | None,
             ctx_core: np.ndarray, core_clock: np.ndarray, exclude: np.ndarray | None = None,
             index: tuple | None = None) -> np.ndarray:
    """Per context, the share of its per-pass work left when a busy handler polls (in place
    on the ``poll`` entries; returns the factor per context). A receive handler whose ring
    fills while it works takes the next batch without a new interrupt, so its passes grow
    longer and fewer: per-pass cycles fill what the per-packet work leaves of its core,
    ``passes = min(1, (clock - other) / per_pass) x`` the one-pass-per-arrival rate, and the
    handler carries traffic until its per-packet work alone fills the core (DES,
    mc_default_30k: the vector at 100% takes 19860 passes/s for 30000 datagrams/s, no loss).
    ``index``: ``_polling_index`` of the same arguments, computed once (``poll`` unused)."""
    n = len(ctx_core)
    if index is None:
        if not poll.any():
            return np.ones(n)
        index = _polling_index(e_ctx, poll, ctx_core, exclude)
    p_i, p_core, p_ctx, w_i, w_core = index
    if not len(p_i):
        return np.ones(n)
    nc = len(core_clock)
    other = np.bincount(w_core, entry[w_i], nc)
    per_pass = np.bincount(p_core, entry[p_i], nc)
    with np.errstate(divide="ignore", invalid="ignore"):
        fc = np.where(per_pass > 0, np.clip((core_clock - other) / np.where(per_pass > 0,
                                                                             per_pass, 1), 0, 1),
                      1.0)
    f = fc[ctx_core]
    entry[p_i] *= f[p_ctx]
    return f


def _polling_index(e_ctx: np.ndarray, poll: np.ndarray, ctx_core: np.ndarray,
                   exclude: np.ndarray | None = None) -> tuple:
    """The entries ``_polling`` sums: the polled ones (indices, cores, contexts) and the rest
    of the work on their cores (indices, cores); ``exclude``: entries that are no work of
    their own here (wake-ups, other polled work)."""
    core_of_entry = ctx_core[e_ctx]
    work = ~poll & (e_ctx >= 0) if exclude is None else ~poll & ~exclude & (e_ctx >= 0)
    return (np.flatnonzero(poll), core_of_entry[poll], e_ctx[poll], np.flatnonzero(work),
            core_of_entry[work])


def _world_switches(tasks: np.ndarray, ctx_core: np.ndarray, switch_cycles: np.ndarray,
                    shared: np.ndarray) -> np.ndarray:
    """World-switch cycles/s per context from its tasks/s: on a core shared by several
    contexts (``shared``), a task pays ``context_switch_cycles`` when the core last ran another
    context. The DES's core alternates among the contexts that want it (FIFO booking), and
    their work comes together (one vector pass wakes every member's vCPU), so a context's task
    follows another's whenever there is one to follow: ``min(t_c, T - t_c)`` switches into
    context ``c`` per second, ``T`` the core's tasks/s (DES, mc_default_30k: 39720 switches
    into each of two vCPUs with 39720 tasks/s each)."""
    nc = len(switch_cycles)
    total = np.bincount(ctx_core, tasks, nc)
    sw = np.minimum(tasks, total[ctx_core] - tasks)
    return np.where(shared[ctx_core], sw * switch_cycles[ctx_core], 0.0)


@dataclass
class _McState:
    rates: np.ndarray
    quantities: np.ndarray
    entry: np.ndarray
    key_load: np.ndarray


def _mc_demands(net: _McNet, rates, cpu: _CpuView) -> _McState:
    """The loads at the rates: the streams' passes (interrupts, fewer when the vector polls
    under load), the receivers' virtual interrupts (one per pass that brings them datagrams),
    wake-ups of halted vCPUs, world switches on shared cores."""
    co = _nic_params(net.cfg).coalescing   # a poll-mode vswitch's NIC: a zero timer
    pb = net.cfg.workload.multicast.packet_bytes
    x = np.asarray(rates, dtype=float)
    Q = np.zeros((len(x), 3))
    Q[:, MDG], Q[:, MG] = x, x * pb
    st = slice(net.n_rx, None)
    bursts = x[st] / net.per_burst[st]
    nq = net.n_queues
    qb = np.bincount(net.queue_of, bursts, nq)
    irq = _interrupts(qb, np.bincount(net.queue_of, x[st], nq),
                      np.bincount(net.queue_of, x[st] * pb, nq), co)
    Q[st, MIRQ] = _share(irq[net.queue_of], bursts, qb[net.queue_of])
    stream_e = net.e_flow >= net.n_rx
    entry = net.e_coef * Q[net.e_flow, net.e_q]
    vec = net.e_poll & stream_e        # the stream's passes: its vector's polling factor
    f = _polling(entry.copy(), cpu.e_ctx, vec, cpu.ctx_core, cpu.core_clock)
    # A handler that polls (busy all the time) is not interrupted: its passes are polls, and
    # what they cost fills what is left of its core.
    polled = net.e_irq & stream_e
    entry[polled] *= f[cpu.e_ctx[polled]] >= 1
    f = _polling(entry, cpu.e_ctx, vec & ~(polled & (f[cpu.e_ctx] < 1)), cpu.ctx_core,
                 cpu.core_clock)
    pass_f = np.ones(len(x))
    pass_f[net.e_flow[vec]] = f[cpu.e_ctx[vec]]
    Q[st, MIRQ] *= pass_f[st]
    # A receiver's vNIC is interrupted once per pass that brings it datagrams, at most once per
    # datagram it takes.
    Q[:net.n_rx, MIRQ] = np.minimum(Q[net.stream_of, MIRQ], x[:net.n_rx])
    rx_e = ~stream_e
    entry[rx_e] = net.e_coef[rx_e] * Q[net.e_flow[rx_e], net.e_q[rx_e]]
    tasks = np.bincount(cpu.t_ctx, Q[cpu.t_flow, cpu.t_q], len(cpu.ctx_core))
    ws = _world_switches(tasks, cpu.ctx_core, cpu.switch_cycles, cpu.shared)
    _halt_wakeups(entry, cpu.e_ctx, net.e_halt, cpu.core_clock[cpu.ctx_core], cpu.ctx_core,
                  cpu.core_clock, ws)
    key_load = np.bincount(net.e_key, entry, len(net.keys))
    key_load[cpu.ws_key] += ws
    return _McState(x, Q, entry, key_load)


def _solve_multicast(cfg: Config, replication: int = 0):
    """Progressive filling of the receivers and their streams: a stream's rate (what its
    vector takes from the NIC) is bounded by its offered rate and by everything it crosses up
    to the vector, where each member's copy is made at the stream's rate; a receiver's rate by
    its stream's (it freezes with it) and by its own contexts. The excess is lost."""
    from sim.runner import Results
    net = _mc_network(cfg, replication)
    n = len(net.lam)
    cpu = _cpu_view(net, net.tasks)
    by_core: dict[str, list[int]] = {}
    names, caps, groups = [], [], []
    for k, key in enumerate(net.keys):
        if key[0] in ("link", "pcie"):
            names.append(f"{key[0]} {key[1]}")
            caps.append((net.link_rate if key[0] == "link" else net.pcie_rate)[key[1]])
            groups.append([k])
        else:
            by_core.setdefault(net.ctx_core[key[0]], []).append(k)
    for core, ks in by_core.items():
        ctxs = sorted({net.keys[k][0] for k in ks})
        names.append(f"core {core.split(':')[0]} "
                     f"{core.split(':')[-1]} ({', '.join(ctxs)})")
        caps.append(net.core_clock[core]), groups.append(ks)
    m = len(names)
    key_row = np.zeros(len(net.keys), dtype=int)
    for r, ks in enumerate(groups):
        key_row[ks] = r
    n_st = n - net.n_rx
    inc = np.zeros((m + n_st, n), dtype=bool)
    inc[key_row[net.e_key], net.e_flow] = True
    inc[key_row[cpu.ws_key[cpu.t_ctx]], cpu.t_flow] = True
    inc[m + np.arange(n_st), net.n_rx + np.arange(n_st)] = True
    names += [f"offered stream {s}" for s in range(n_st)]
    cap = np.array(caps + list(net.lam[net.n_rx:]), dtype=float)
    # A stream's constraints hold its receivers back too (a receiver gets at most what its
    # stream's vector takes): they freeze together.
    for r in range(net.n_rx):
        inc[:, r] |= inc[:, net.stream_of[r]]

    # A polling handler's per-pass cycles fill what is left of its core (``_polling``): they
    # never make it infeasible, so the constraint counts the rest.
    # So do the wake-ups of halted vCPUs (``_halt_wakeups``).
    filler = net.e_poll | net.e_halt

    def loads(rates):
        st = _mc_demands(net, rates, cpu)
        kl = st.key_load - np.bincount(net.e_key[filler], st.entry[filler], len(net.keys))
        return np.concatenate([np.bincount(key_row, kl, m), np.asarray(rates)[net.n_rx:]])

    fill = fill_arrays(n, loads, cap, inc, names)
    st = _mc_demands(net, fill.rates, cpu)
    summary, tables = _mc_report(net, fill, st, dict(zip(names, cap)))
    return Results(cfg, summary, {k: None for k in summary}, [summary], tables)


def _mc_report(net: _McNet, fill: Filling, st: _McState, cap: dict) -> tuple[dict, dict]:
    """The DES's summary keys and ``multicast`` table (counts over ``run.measure_s``)."""
    cfg, wl = net.cfg, net.model.workload
    mc, window_s = cfg.workload.multicast, cfg.run.measure_s
    pb = mc.packet_bytes
    x = np.asarray(fill.rates)
    R = net.n_rx
    xr, ys, lam = x[:R], x[net.stream_of], net.lam[:R]
    load_tables, host_cycles, host_capacity = _load_tables(net, st.key_load)
    split = cfg.hypervisor.vswitch.multicast.split_rx_mode
    rows, bn = [], []
    for r, rec in enumerate(wl.receivers):
        c = fill.binding[r]
        kind = "offered" if c.startswith("offered") else _kind(c)
        net_ctx = rec.vm.vnic.net_context.name
        member_bound = split and f"{net_ctx}" in c and kind == "context"
        own = (ys[r] - xr[r]) * window_s       # lost after the vector: the member's own
        expected = lam[r] * window_s
        rows.append({
            "vm": r, "group": rec.stream.group, "expected_packets": expected,
            "received_packets": xr[r] * window_s, "lost_packets": expected - xr[r] * window_s,
            "loss_ratio": 1 - xr[r] / lam[r], "received_pps": xr[r],
            # default mode: a copy of every packet the vector takes; split mode: of every
            # packet the member's queue accepts
            "copies_per_s": xr[r] if member_bound else ys[r],
            "drops_socket_full": 0.0,
            "drops_vnic_rx_ring_full": 0.0 if member_bound else own,
            "drops_split_queue_full": own if member_bound else 0.0})
        bn.append({"flow": r, "vm": r, "kind": kind, "constraint": c,
                   "util_pct": float(100 * fill.loads[c] / cap[c])})
    table = pd.DataFrame(rows)
    bottleneck = pd.DataFrame(bn)
    streams = x[R:]
    offered = net.lam[R:]
    delivered = xr.sum()
    dropped = (offered - streams).sum() + (ys - xr).sum()
    gbps = units.bytes_per_s_to_gbps(delivered * pb)
    loss = 1 - xr / lam
    if (loss > 1e-9).any():
        regime = "loss"
    else:
        regime = "offered-load"
    summary = {
        "goodput_gbps": float(gbps),
        "host_cpu_util_pct": float(100 * host_cycles / host_capacity),
        **_hypervisor(net, load_tables, host_capacity, gbps),
        "cycles_per_bit": float(host_cycles / units.gbps_to_bits_per_s(gbps)) if gbps
        else math.nan,
        "wire_frames_per_s": float(offered.sum()),
        "host_packets_per_s": float(streams.sum()),
        "loss_ratio": float(dropped / (dropped + delivered)) if dropped + delivered else 0.0,
        "rtt_us": math.nan,
        "regime": regime,
        "fluid_rounds": fill.rounds,
        "fluid_evaluations": fill.evaluations,
        "multicast_sent_pps": float(offered.sum()),
        "multicast_received_pps": float(delivered),
        "multicast_copies_per_s": float(table["copies_per_s"].sum()),
        "multicast_loss_ratio": float((lam - xr).sum() / lam.sum()),
        "multicast_max_receiver_loss_ratio": float(loss.max()),
        # the sources' threshold: "less than 0.01% packet loss"
        "multicast_lossy_receivers": float((loss > 1e-4).sum()),
    }
    flows = pd.DataFrame({"flow": np.arange(R), "vm": np.arange(R),
                          "goodput_gbps": units.bytes_per_s_to_gbps(xr * pb)})
    tables = {"flows": flows, "bottleneck": bottleneck, "multicast": table, **load_tables}
    if net.unknown:
        summary["fluid_unpriced_units"] = "; ".join(sorted(f"{t}/{u}" for t, u in net.unknown))
    return summary, tables
