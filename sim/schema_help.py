"""``python -m sim run --help``: the config groups and every key's meaning, unit, range and
default, taken from the schema (``sim.config.Config`` and the models' ``*Params`` dataclasses).

A key's line is in the ns-3 attribute style, ``name: meaning [unit] (range) = default``:

- meaning and unit: ``DOCS`` below (by ``Class.field``, so ``host.cpu`` and ``peer.cpu`` share
  theirs), else the comment on the field's line in its dataclass;
- range: the ``check(cond, "field", value, "allowed")`` calls of the class's ``__post_init__``
  (read with ``ast``; an f-string is evaluated on the default instance, else shown as written);
- default: ``Config()``, which equals the default composition of ``configs/``.

A ``CycleCost`` (``fixed_cycles``, ``per_packet_cycles``, ``per_byte_cycles``) is one line, and
``provenance`` mappings are left out (``docs/``). ``python -m sim run --help WORD`` keeps the
sections and keys that contain WORD.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
import textwrap
import typing
from pathlib import Path

from models.base import CycleCost

DOCS = {  # Class.field: "meaning [unit]"; the range comes from the code's checks
    "MetaParams.name": "the experiment's name (results.json, the summary) [text]",
    "MetaParams.description": "one line on what the experiment reproduces [text]",
    "MetaParams.source": "the claim ids or study the experiment reproduces [text]",
    "RunParams.seed": "seed of every random stream (per replication and component) [-]",
    "RunParams.warmup_s": "simulated time run and discarded before measuring [s]",
    "RunParams.measure_s": "simulated measurement window of each replication [s]",
    "RunParams.replications": "independent replications; means and 95% intervals over them [-]",
    "RunParams.engine": "des: bursts through SimPy; fluid: the steady state solved [-]",
    "HostParams.name": "the host profile's name [text]",
    "CpuParams.sockets": "processor sockets (NUMA nodes) [-]",
    "CpuParams.cores_per_socket": "cores per socket [-]",
    "CpuParams.clock_hz": "core clock [Hz]",
    "CpuParams.context_switch_cycles": "world switch between contexts sharing a core [cycles]",
    "CpuParams.jitter_cv": "coefficient of variation of service times (gamma); 0 = none [-]",
    "CpuParams.copy_per_byte_cycles": "a copy of cache-cold data on this processor (the vNIC "
                                      "backend's receive copy) [cycles/byte]",
    "NumaParams.remote_per_packet_cycles": "extra cost of a packet touched on a remote node "
                                           "[cycles]",
    "NumaParams.remote_per_byte_cycles": "extra cost per byte copied across nodes [cycles]",
    "NumaParams.card_node": "NUMA node the first NIC card hangs off [-]",
    "NumaParams.card_node_stride": "card c is on node (card_node + c x stride) mod sockets [-]",
    "HostParams.irq_core": "core of the first NIC interrupt vector (vector j on irq_core + j) [-]",
    "HostParams.nic_ports": "NIC ports; VM i uses port (or team) i mod ports (teams) [-]",
    "HostParams.ports_per_card": "ports per NIC card (one PCIe link each card) [-]",
    "HostParams.placement": "where contexts run: pinned, spread or numa_io [-]",
    "HostParams.numa_io_threshold_pct": "numa_io: move a card's contexts to its node while they "
                                        "use less than this; 0 = off [% of a core]",
    "HostParams.numa_io_period_ms": "numa_io: how often the load is measured [ms]",
    "TeamingParams.ports_per_team": "NIC teaming: ports per vswitch uplink team (1: no "
                                    "teaming; docs/teaming.md) [-]",
    "TeamingParams.policy": "teaming load balancing: port_id, mac_hash or ip_hash [-]",
    "TeamingParams.peer_link_gbps": "teaming: the physical switch's link to the peer (0: the "
                                    "team's aggregate) [Gbit/s]",
    "TeamingParams.switch_buffer_bytes": "teaming: the switch's buffer per egress link [bytes]",
    "TeamingParams.peer_addresses": "teaming: the peer's IP addresses; session s talks to "
                                    "address s mod it (ip_hash) [-]",
    "LinkParams.line_rate_gbps": "Ethernet line rate [Gbit/s]",
    "LinkParams.mtu_bytes": "MTU of the physical link (IP packet) [bytes]",
    "LinkParams.propagation_ns": "one-way propagation delay of the cable [ns]",
    "NicParams.tx_queues": "transmit queues per port [-]",
    "NicParams.rx_queues": "receive queues per port, each with its MSI-X vector [-]",
    "NicParams.rx_sort": "RX queue choice: single (queue 0), vmdq (per VM), rss (flow hash) [-]",
    "NicParams.tx_ring_slots": "slots per TX ring [descriptors, or packets when tx_desc_per_packet=0]",
    "NicParams.tx_desc_per_packet": "TX descriptors a packet takes besides its payload buffers (ixgbe: context + header = 2); 0: the ring counts packets [descriptors]",
    "NicParams.tx_desc_buffer_bytes": "payload bytes one TX buffer descriptor carries (a page fragment) [bytes]",
    "NicParams.rx_ring_slots": "descriptors per RX ring; a frame that finds it full is dropped "
                               "[frames]",
    "NicParams.tso": "the NIC cuts TSO segments into frames [bool]",
    "NicParams.tso_max_bytes": "largest TSO segment [bytes]",
    "NicParams.lro": "hardware LRO: frames of a flow merged before the host sees them [bool]",
    "NicParams.lro_max_bytes": "largest hardware LRO aggregate [bytes]",
    "NicParams.lro_tunnelled": "LRO also merges VXLAN frames (by their inner headers) [bool]",
    "NicParams.rx_fifo_bytes": "on-card RX packet buffer ahead of the DMA [bytes]",
    "NicParams.tx_fifo_bytes": "on-card TX packet buffer ahead of the wire [bytes]",
    "NicParams.max_queues": "queues per direction the card has (a limit, checked) [-]",
    "CoalescingParams.mode": "interrupt coalescing: static (timer + frames) or adaptive (ixgbe "
                             "ITR) [-]",
    "CoalescingParams.timer_us": "static: interrupt this long after the first pending frame [us]",
    "CoalescingParams.max_frames": "interrupt at once when this many frames are pending [frames]",
    "CoalescingParams.adaptive_lowest_timer_us": "adaptive: timer of the lowest-latency class "
                                                 "[us]",
    "CoalescingParams.adaptive_low_timer_us": "adaptive: timer of the low-latency class [us]",
    "CoalescingParams.adaptive_bulk_timer_us": "adaptive: timer of the bulk class [us]",
    "CoalescingParams.adaptive_low_bytes_per_us": "adaptive: throughput above which lowest -> "
                                                  "low [bytes/us]",
    "CoalescingParams.adaptive_bulk_bytes_per_us": "adaptive: throughput above which low -> bulk "
                                                   "[bytes/us]",
    "PcieParams.kind": "bus: pcie, or pcix (half duplex) [-]",
    "PcieParams.gen": "PCIe generation (GT/s per lane) [-]",
    "PcieParams.lanes": "PCIe lanes [-]",
    "PcieParams.pcix_rate_mtps": "PCI-X transfer rate (kind=pcix only) [MT/s]",
    "PcieParams.max_payload_bytes": "largest TLP payload [bytes]",
    "PcieParams.max_read_request_bytes": "largest read request [bytes]",
    "PcieParams.tlp_overhead_bytes": "header and framing per TLP [bytes]",
    "PcieParams.descriptor_bytes": "size of one DMA descriptor [bytes]",
    "PcieParams.doorbell_bytes": "size of one doorbell write [bytes]",
    "HypervisorParams.name": "the hypervisor generation's name [text]",
    "HypervisorFeatures.netqueue": "VMDq / NetQueue receive queues per VM (ESX 3.5 on) [bool]",
    "HypervisorFeatures.vmxnet3": "the vmxnet3 device (ESX 4.0 on) [bool]",
    "HypervisorFeatures.software_lro": "LRO in the hypervisor for vNICs that take aggregates "
                                       "[bool]",
    "HypervisorFeatures.vnic_rss": "several hardware queues into one vNIC (vSphere 6.0) [bool]",
    "HypervisorFeatures.split_rx_mode": "multicast copies split across contexts (vSphere 5.0) "
                                        "[bool]",
    "HypervisorFeatures.vxlan": "VXLAN tunnel endpoints in the vswitch (vSphere 5.1) [bool]",
    "HypervisorFeatures.vmxnet": "VMware's paravirtual devices (vmxnet2, vmxnet3) [bool]",
    "HypervisorFeatures.virtio_net": "the virtio-net device (KVM) [bool]",
    "HypervisorFeatures.latency_sensitivity": "guest.latency_sensitivity=high (vSphere 5.5) "
                                              "[bool]",
    "HypervisorParams.driver_kind": "uplink driver: linux_compat (converts packet handles) or "
                                    "native [-]",
    "HypervisorParams.software_lro_max_bytes": "largest software LRO aggregate [bytes]",
    "HypervisorParams.napi_budget_packets": "packets one uplink driver poll call takes at most "
                                            "(NAPI weight) [packets]",
    "HypervisorParams.vm_exit_cycles": "a guest register access under hardware virtualization "
                                       "(exit, emulation, entry) [cycles]",
    "HypervisorParams.bt_trap_cycles": "a guest register access under binary translation "
                                       "[cycles]",
    "HypervisorParams.vcpu_halt_wakeup_cycles": "waking a halted vCPU for a virtual interrupt "
                                                "[cycles]",
    "HypervisorParams.sched_quantum_us": "CPU scheduler's time slice: a context keeps a shared "
                                         "core while it has work, up to this; 0 = hand over "
                                         "after each task [us]",
    "HypervisorParams.tx_contexts_per_vnic": "networking contexts serving one vNIC's TX queues "
                                             "[-]",
    "HypervisorParams.poll_mode": "vswitch and backends are poll-mode threads (vhost-user, "
                                  "OVS-DPDK): cores 100% busy [bool]",
    "VswitchParams.pending_tx_limit_packets": "vswitch pending-TX queue per uplink [packets]",
    "ReplicationParams.split_rx_mode": "multicast: copies to receivers made by their own "
                                       "contexts [bool]",
    "ReplicationParams.split_queue_packets": "split mode: each receiver's queue [packets]",
    "VxlanParams.enabled": "VXLAN encapsulation in the vswitch [bool]",
    "VxlanParams.offload": "the NIC does TSO and checksums on encapsulated traffic [bool]",
    "VxlanParams.inner_mtu_bytes": "the guests' MTU (capped at physical MTU - 50) [bytes]",
    "VnicParams.model": "virtual device: e1000, vmxnet2, vmxnet3 [-]",
    "VnicParams.tx_queues": "vNIC transmit queues [-]",
    "VnicParams.rx_queues": "vNIC receive queues [-]",
    "VnicParams.tx_ring_slots": "vNIC TX ring [packets]",
    "VnicParams.rx_ring_slots": "vNIC RX ring, one slot per frame of an aggregate [frames]",
    "VnicParams.tso": "the vNIC offers TSO to the guest [bool]",
    "VnicParams.lro": "the device takes LRO aggregates from the hypervisor [bool]",
    "VnicParams.max_mtu_bytes": "largest MTU the device supports [bytes]",
    "VnicParams.tx_register_accesses_per_packet": "guest accesses that leave the guest, per TX "
                                                  "packet [-]",
    "VnicParams.tx_register_accesses_per_doorbell": "... per TX doorbell [-]",
    "VnicParams.rx_register_accesses_per_packet": "... per RX packet [-]",
    "VnicParams.rx_interrupt_delay_us": "virtual interrupt coalescing by the emulation: the "
        "interrupt waits this long after the first frame (0: at once) [us]",
    "VnicParams.rx_register_accesses_per_interrupt": "... per virtual interrupt [-]",
    "GuestParams.vcpus": "virtual CPUs per VM [-]",
    "GuestParams.virtualization": "hw: hardware-assisted (VM exits); bt: binary translation [-]",
    "GuestParams.lro": "the guest's vNIC driver takes LRO aggregates [bool]",
    "GuestParams.latency_sensitivity": "vSphere 5.5 latency sensitivity: normal, or high (a core "
        "per vCPU, no virtual interrupt coalescing nor LRO into the vNIC, no halt) [-]",
    "OsStackParams.name": "the OS network stack's name [text]",
    "OsStackParams.window_scaling": "RFC 1323 window scaling (false: window <= 65535 bytes) "
                                    "[bool]",
    "TopologyParams.kind": "who the measured VMs talk to: a native peer, a partner VM on the "
        "same vswitch, on another vswitch of the host, or on a second host (models/topology.py) "
        "[-]",
    "OsStackParams.tso_win_divisor": "TSO deferral: a window-cut TSO segment waits until 1/N of "
        "the window is open (Linux tcp_tso_win_divisor; 0: none) [-]",
    "OsStackParams.timer_hz": "kernel timer frequency (CONFIG_HZ): a TSO deferral ends after "
        "more than one tick since the last decision to defer (0: no limit) [Hz]",
    "OsStackParams.ack_by_ack": "an ACK train is taken one ACK at a time, the stack trying to "
        "send after each (Linux tcp_rcv_established per packet); false: as one cumulative ACK "
        "[bool]",
    "OsStackParams.hystart_low_window": "CUBIC HyStart as in Linux 2.6.32: slow start may end "
        "by ACK-train or delay detection once cwnd holds this many segments (0: off) "
        "[segments]",
    "OsStackParams.congestion": "congestion control: reno (halve on loss, +1 MSS a round "
        "trip) or cubic (Linux 2.6.32 tcp_cubic.c, with tcp_is_cwnd_limited) [-]",
    "OsStackParams.sndbuf_scale": "send buffer = this x the socket size (Linux doubles "
                                  "SO_SNDBUF) [-]",
    "OsStackParams.ack_rule": "when a receiver ACKs: frames (one ACK per two frames, at most "
        "one per segment, at once for PSH) or rcv_mss (Linux: when more than the measured "
        "receive MSS is unacknowledged; an LRO aggregate without gso_size is one segment) [-]",
    "PeerParams.tx_ring_slots": "the client NIC's TX ring [packets]",
    "PeerParams.rx_queues": "RSS receive queues, each with a softirq context on its own core [-]",
    "PeerParams.rx_coalescing": "the client NIC's receive interrupt moderation: nic = the port's own (nic.coalescing), throttle = at most one interrupt per rx_throttle_us [-]",
    "PeerParams.rx_throttle_us": "the client driver's interrupt throttle interval (rx_coalescing=throttle) [us]",
    "PeerParams.lro_max_bytes": "LRO on the client's NIC driver; 0 = off [bytes]",
    "PeerParams.lro_tunnelled": "the client's LRO also merges VXLAN frames [bool]",
    "TcpParams.timestamps": "TCP timestamps option (12 bytes per segment) [bool]",
    "TcpParams.initial_cwnd_segments": "initial congestion window [segments]",
    "TcpParams.min_rto_ms": "minimum retransmission timeout [ms]",
    "TcpParams.delayed_ack_ms": "delayed-ACK timer [ms]",
    "TcpParams.ack_every_frames": "an ACK at least every this many received frames [frames]",
    "TcpParams.dupack_threshold": "duplicate ACKs that trigger fast retransmit [-]",
    "WorkloadParams.kind": "what runs: tcp_stream, tcp_rr, http, udp_multicast, ping [-]",
    "WorkloadParams.vms": "virtual machines [-]",
    "WorkloadParams.sessions_per_vm": "TCP sessions (connections) per VM [-]",
    "WorkloadParams.socket_bytes": "socket buffer size (SO_SNDBUF / SO_RCVBUF) [bytes]",
    "WorkloadParams.message_bytes": "bytes per send() call [bytes]",
    "WorkloadParams.direction": "tx: the VMs send; rx: the VMs receive [-]",
    "WorkloadParams.start_jitter_us": "sessions start at a random offset within this [us]",
    "WorkloadParams.rate_limit_mbps": "tcp_stream: pace each session to this rate; 0 = as fast "
                                      "as possible [Mbit/s]",
    "RrParams.request_bytes": "tcp_rr: request size [bytes]",
    "RrParams.response_bytes": "tcp_rr: response size [bytes]",
    "RrParams.latency_sample_capacity": "tcp_rr: latencies kept for percentiles [samples]",
    "PingParams.size_bytes": "ping: ICMP payload per echo (ping -s) [bytes]",
    "PingParams.interval_us": "ping: time between a pinger's echoes (ping -i) [us]",
    "PingParams.latency_sample_capacity": "ping: RTTs kept for percentiles [samples]",
    "HttpParams.object_bytes": "http: object size [bytes]",
    "HttpParams.request_bytes": "http: request size [bytes]",
    "HttpParams.response_header_bytes": "http: response header [bytes]",
    "HttpParams.server_request_cycles": "http: server work per request (parse, map, log) "
                                        "[cycles]",
    "HttpParams.think_time_us": "http: client pause between objects [us]",
    "MulticastWorkloadParams.packet_bytes": "UDP payload per datagram [bytes]",
    "MulticastWorkloadParams.packet_rate_pps": "datagrams per second per group [packets/s]",
    "MulticastWorkloadParams.groups": "multicast groups [-]",
    "MulticastWorkloadParams.burst_interval_us": "the sender wakes this often and sends what is "
                                                 "due [us]",
    "MulticastWorkloadParams.skb_truesize_bytes": "buffer charged per datagram against the "
                                                  "socket [bytes]",
    "CalibrationParams.name": "the calibration's name (configs/calibration/NAME.yaml) [text]",
    "CalibrationParams.date": "when it was fitted [text]",
    "CalibrationParams.fitted_on": "the validation targets it was fitted on [text]",
    "CalibrationParams.values": "fitted values by profile and parameter [mapping]",
    "CalibrationParams.residuals": "each training check's relative error after the fit "
                                   "[mapping]",
}
COST_DOC = ("A cost KEY.{fixed,per_packet,per_byte}_cycles is three keys: cycles once per call "
            "or batch, per packet, per byte [cycles] (>= 0); its line shows the three defaults.")
COST_DOCS = {  # Class.field of a CycleCost: the stage it prices
    "TeamingParams.uplink_hash": "teaming: picking the member of a packet (hash policies)",
    "HypervisorParams.driver_rx": "uplink driver, receive",
    "HypervisorParams.driver_tx": "uplink driver, transmit",
    "HypervisorParams.compat_rx": "linux_compat driver's packet-handle conversion, receive",
    "HypervisorParams.compat_tx": "linux_compat driver's packet-handle conversion, transmit",
    "HypervisorParams.driver_poll": "one uplink driver poll call (a pass makes one per budget)",
    "HypervisorParams.software_lro_cost": "software LRO's own work per data packet it takes",
    "VswitchParams.cost": "vswitch forwarding",
    "VswitchParams.sort": "software sort by destination of frames a NIC queue did not sort "
                          "(no NetQueue, VMDq default queue)",
    "ReplicationParams.copy": "multicast: a copy per receiver",
    "ReplicationParams.handoff": "multicast split mode: handing a copy to a receiver's context",
    "VxlanParams.encap": "VXLAN encapsulation",
    "VxlanParams.decap": "VXLAN decapsulation",
    "VxlanParams.sw_segment": "segmenting a TSO packet in software (no VXLAN offload)",
    "VxlanParams.sw_rx_checksum": "receive checksum in software (no VXLAN offload)",
    "VnicParams.guest_tx": "guest vNIC driver, transmit",
    "VnicParams.guest_rx": "guest vNIC driver, receive",
    "VnicParams.backend_tx": "hypervisor vNIC backend, transmit",
    "VnicParams.backend_rx": "hypervisor vNIC backend, receive",
    "OsStackParams.send_call": "send() system call",
    "OsStackParams.recv_call": "recv() system call",
    "OsStackParams.tx_segment": "TCP/IP transmit of a segment",
    "OsStackParams.rx_data": "TCP/IP receive of a data segment",
    "OsStackParams.rx_ack": "TCP/IP receive of an ACK",
    "OsStackParams.tx_ack": "TCP/IP transmit of an ACK",
    "OsStackParams.rx_udp": "UDP/IP receive of a datagram",
    "PeerParams.driver_rx": "the client's NIC driver, receive",
    "PeerParams.driver_tx": "the client's NIC driver, transmit",
    "MulticastWorkloadParams.app": "the receiving application, per datagram",
}
SECTIONS = {  # the top-level groups, in the order of configs/config.yaml
    "meta": "the experiment a run reproduces",
    "run": "run control: windows, replications, seed, engine",
    "host": "the server under test: processors, NUMA, NIC ports, placement",
    "nic": "the physical NIC: link, queues, rings, offloads, coalescing",
    "pcie": "the NIC's bus",
    "hypervisor": "the hypervisor generation: features, driver and exit costs, vswitch",
    "vnic": "the virtual NIC device",
    "guest": "the VM: vCPUs, virtualization, its OS stack's costs",
    "peer": "the client machine at the other end of the link",
    "tcp": "TCP behaviour shared by both ends",
    "workload": "what runs: kind, VMs, sessions, sizes",
    "calibration": "fitted values (configs/calibration/; none: the priors)",
}


def _checks(cls) -> dict[str, str]:
    """``{field: allowed}`` from ``check(...)`` calls in ``cls.__post_init__``."""
    post = cls.__dict__.get("__post_init__")
    if post is None:
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(post)))
    except (OSError, TypeError, SyntaxError):
        return {}
    module = sys.modules[cls.__module__].__dict__
    try:
        default = cls()
    except Exception:
        default = None
    found = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check"
                and len(node.args) >= 4 and isinstance(node.args[1], ast.Constant)):
            continue
        name, allowed = node.args[1].value, node.args[3]
        if not isinstance(name, str) or name in found:
            continue
        if isinstance(allowed, ast.Constant):
            found[name] = str(allowed.value)
            continue
        try:
            found[name] = str(eval(compile(ast.Expression(allowed), "<check>", "eval"),
                                   dict(module), {"self": default}))
        except Exception:
            found[name] = ast.unparse(allowed).lstrip("f").strip("'\"").replace("self.", "")
    return found


def _comments(cls) -> dict[str, str]:
    """``{field: comment}`` for fields with a comment on their line."""
    try:
        src = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    out = {}
    for line in src.splitlines():
        code, hash_, comment = line.partition("#")
        name = code.split(":")[0].strip()
        if hash_ and ":" in code and name.isidentifier():
            out[name] = comment.strip()
    return out


def _tidy(allowed: str) -> str:
    """``one of ('a', 'b')`` -> ``one of a, b``; an unevaluated ``{x}`` -> ``<x>``."""
    allowed = re.sub(r"one of [(\[]([^)\]]*)[)\]]",
                     lambda m: "one of " + m.group(1).replace("'", "").rstrip(", "), allowed)
    return re.sub(r"\{([^}]*)\}", r"<\1>", allowed)


def _unit(name: str) -> str:
    for suffix, unit in (("_bytes", "bytes"), ("_s", "s"), ("_ms", "ms"), ("_us", "us"),
                         ("_ns", "ns"), ("_hz", "Hz"), ("_gbps", "Gbit/s"), ("_mbps", "Mbit/s"),
                         ("_cycles", "cycles"), ("_pct", "%"), ("_slots", "slots"),
                         ("_packets", "packets"), ("_frames", "frames")):
        if name.endswith(suffix):
            return unit
    return "-"


def _fmt(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(value) if not value or " " in value else value
    return f"{value:g}" if isinstance(value, float) else str(value)


def key_lines(cls, instance, path: str, out: list[tuple[str, str]]) -> None:
    """(key, its line) for every leaf under ``cls`` at ``path``."""
    hints = typing.get_type_hints(cls)
    docs, checks = _comments(cls), _checks(cls)
    for f in dataclasses.fields(cls):
        tp, key = hints[f.name], f"{path}{f.name}"
        value = getattr(instance, f.name)
        if f.name == "provenance":
            continue
        if tp is CycleCost:
            stage = (COST_DOCS.get(f"{cls.__name__}.{f.name}") or docs.get(f.name)
                     or f.name.replace("_", " "))
            out.append((key, f"{key}.*_cycles: {stage} [cycles] = {_fmt(value.fixed_cycles)}, "
                             f"{_fmt(value.per_packet_cycles)}, {_fmt(value.per_byte_cycles)}"))
            continue
        if dataclasses.is_dataclass(tp):
            key_lines(tp, value, key + ".", out)
            continue
        meaning = DOCS.get(f"{cls.__name__}.{f.name}")
        if meaning is None:
            meaning = f"{docs.get(f.name) or f.name.replace('_', ' ')} [{_unit(f.name)}]"
        allowed = checks.get(f.name)
        if allowed is None and tp is bool:
            allowed = "true or false"
        rng = f" ({_tidy(allowed)})" if allowed else ""
        out.append((key, f"{key}: {meaning}{rng} = {_fmt(value)}"))


def documented(cls) -> dict[str, bool]:
    """``{Class.field: has a written meaning}`` for every leaf field under ``cls``."""
    out, hints = {}, typing.get_type_hints(cls)
    comments = _comments(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if f.name == "provenance" or tp is CycleCost:
            continue
        if dataclasses.is_dataclass(tp):
            out.update(documented(tp))
        else:
            out[f"{cls.__name__}.{f.name}"] = (f"{cls.__name__}.{f.name}" in DOCS
                                              or f.name in comments)
    return out


def groups(config_dir: str) -> dict[str, tuple[list[str], str]]:
    """``{group: (options, default)}`` from ``configs/``."""
    import yaml
    defaults = (yaml.safe_load(Path(config_dir, "config.yaml").read_text()) or {})["defaults"]
    picks = {k: v for d in defaults if isinstance(d, dict) for k, v in d.items()}
    return {g: (sorted(p.stem for p in Path(config_dir, g).glob("*.yaml")), picks.get(g, ""))
            for g in picks}


def render(config_dir: str, words: list[str] = (), width: int = 100) -> str:
    from sim.config import Config
    cfg = Config()
    lines = ["usage: python -m sim run [GROUP=OPTION ...] [KEY=VALUE ...] [--multirun] "
             "[--cfg job] [--info]",
             "       python -m sim run --help [WORD]   (only the keys and groups containing "
             "WORD)",
             "",
             "Groups (GROUP=OPTION picks configs/GROUP/OPTION.yaml; * the default; the",
             "experiment is applied last, over the rest):"]
    for g, (options, default) in groups(config_dir).items():
        if words and not any(w in g or any(w in o for o in options) for w in words):
            continue
        names = ", ".join(o + ("*" if o == default else "") for o in options)
        if g == "experiment":
            names = f"{default}* and {len(options) - 1} more (python -m sim list)"
        lines += textwrap.wrap(f"{g + ':':<11} {names}", width, subsequent_indent=" " * 14,
                               initial_indent="  ")
    lines += ["", *textwrap.wrap("Keys (KEY=VALUE; name: meaning [unit] (allowed) = default; "
                                 "a sweep: --multirun KEY=a,b or KEY=range(a,b)). " + COST_DOC,
                                 width)]
    for f in dataclasses.fields(Config):
        section: list[tuple[str, str]] = []
        tp = typing.get_type_hints(Config)[f.name]
        if dataclasses.is_dataclass(tp):
            key_lines(tp, getattr(cfg, f.name), f"{f.name}.", section)
        else:  # a top-level switch (report=true)
            section.append((f.name, f"{f.name}: {_comments(Config).get(f.name, f.name)} (true "
                                    f"or false) = {_fmt(getattr(cfg, f.name))}"))
        if words:
            section = [(k, ln) for k, ln in section if any(w in k for w in words)]
            if not section:
                continue
        lines += ["", f"{f.name}: {SECTIONS.get(f.name, '')}"]
        for _, ln in section:
            lines += textwrap.wrap(ln, width, initial_indent="  ", subsequent_indent="      ")
    lines += ["", "A bad value is refused before anything runs, in one line naming the key, the "
                  "value", "and what is allowed."]
    return "\n".join(lines)
