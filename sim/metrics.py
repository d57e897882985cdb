"""Metric collection: counters snapshotted at the window's edges, turned into tidy tables.

Every component reports its own cumulative counters (``counters()``: busy seconds, tasks,
cycles by term, frames, bytes, interrupts, exits...), and ``Stats.drops()`` the frames dropped
by (stage, reason). The runner takes a snapshot when the warm-up ends and another when the
measurement window ends; every metric is the difference divided by the window, so nothing from
the warm-up leaks in. Busy time is exact at any instant (a task in service is counted up to the
snapshot). This module only collects and divides: a snapshot is keyed by (kind, component
name, counter), and the tables read the components' public names and placement.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from models import costs, units
from sim.builder import Model

Key = tuple  # (kind, component name, counter)


def _contexts(model: Model):
    """(host, context) for every context: the host's, the remote host's
    (``topology.kind=remote_host``), then each peer's."""
    for ctx in model.contexts:
        yield "host", ctx
    if model.remote is not None:
        for ctx in model.remote.contexts:
            yield "remote", ctx
    for peer in model.peers:
        for ctx in peer.contexts():
            yield peer.name, ctx


def _ports(model: Model):
    return [*(n for h in model.hosts() for n in h.nics), *(p.nic for p in model.peers)]


def hypervisor_contexts(model: Model) -> set[str]:
    """The names of the hypervisor's contexts on the host under test: its NIC vectors, the VMs'
    networking contexts (``vmN.net``: vNIC backends, vswitch, replication) and any other
    context of the host that is not a guest's vCPU. What esxtop counts as the VMkernel's and
    the VMs' helper worlds, not the guests' own time (``docs/models.md``, Metrics)."""
    vcpus = {c.name for vm in model.vms for c in vm.vcpus}
    return {c.name for c in model.contexts if c.name not in vcpus}


def hypervisor_summary(model: Model, ctx_cycles_per_s: dict[str, float],
                       capacity_cycles_per_s: float, goodput_gbps: float) -> dict[str, float]:
    """``hypervisor_cpu_util_pct`` (the hypervisor's contexts' cycles over the host's
    capacity, as ``host_cpu_util_pct``) and ``hypervisor_cycles_per_bit`` from each context's
    cycles/s (both engines call this: the DES from busy time, the fluid engine from loads)."""
    ours = hypervisor_contexts(model)
    hv = sum(v for c, v in ctx_cycles_per_s.items() if c in ours)
    return {"hypervisor_cpu_util_pct": 100 * hv / capacity_cycles_per_s,
            "hypervisor_cycles_per_bit": hv / units.gbps_to_bits_per_s(goodput_gbps)
            if goodput_gbps > 0 else float("nan")}


def _core_key(host: Model, core) -> object:
    """A core's name in the snapshot: its index, prefixed on the remote host."""
    return f"{host.prefix}{core.index}" if host.prefix else core.index


def snapshot(model: Model) -> dict[Key, float]:
    """All cumulative counters of ``model`` at this instant."""
    s: dict[Key, float] = {}

    def take(kind: str, name, counters: dict) -> None:
        for key, value in counters.items():
            s[(kind, name, key)] = value

    for flow in model.workload.flows():
        take("flow", flow["flow"], {k: v for k, v in flow.items() if k not in ("flow", "vm")})
    take("workload", "", model.workload.counters())
    for h in model.hosts():
        for core in h.cpu.cores:
            take("core", _core_key(h, core), core.counters())
    for _, ctx in _contexts(model):
        take("ctx", ctx.name, ctx.counters())
    for card in (c for h in model.hosts() for c in h.cards):
        for ch in card.channels().values():
            take("pcie", ch.name, ch.counters())
    for host in [*(vm for h in model.hosts() for vm in h.vms), *model.peers]:
        take("stack", host.name, host.counters())
    for port in _ports(model):
        take("nic", port.name, port.counters())
        for q in port.rx_queues:
            take("rxq", q.name, q.counters())
    for vnic in (v for h in model.hosts() for v in h.vnics):
        take("vnic", vnic.name, vnic.counters())
    for (stage, reason), n in model.stats.drops().items():
        s[("drop", stage, reason)] = n
    return s


def measure(model: Model, s0: dict, s1: dict, window_s: float, replication: int):
    """Summary metrics and tables of one replication's measurement window."""
    d = {k: v - s0.get(k, 0.0) for k, v in s1.items()}
    cfg = model.cfg

    def rate(kind: str, name, key: str) -> float:
        return d.get((kind, name, key), 0.0) / window_s

    flows = _flow_table(model, d, window_s)
    vms = flows.groupby("vm", as_index=False)["goodput_gbps"].sum()
    by_index = {vm.index: vm for vm in model.vms}  # the measured VMs (not their partners)
    vms["vcpu_util_pct"] = [100 * sum(d[("ctx", c.name, "busy_s")] for c in vm.vcpus)
                            / (window_s * len(vm.vcpus))
                            for vm in (by_index[i] for i in vms["vm"])]
    if cfg.topology.vm_partner:  # the other end's vCPUs: VM n + i, on this host or the remote
        n = cfg.workload.vms
        everyone = {vm.index: vm for h in model.hosts() for vm in h.vms}
        vms["partner_vcpu_util_pct"] = [
            100 * sum(d[("ctx", c.name, "busy_s")] for c in everyone[n + i].vcpus)
            / (window_s * len(everyone[n + i].vcpus)) for i in vms["vm"]]
    hv_names = hypervisor_contexts(model)
    cores = pd.DataFrame([{"core": c.index, "numa_node": c.node,
                           "util_pct": 100 * d[("core", c.index, "busy_s")] / window_s,
                           "switches_per_s": rate("core", c.index, "switches")}
                          for c in model.cpu.cores])
    contexts = pd.DataFrame([{"context": c.name, "host": host, "core": c.core.index,
                              "numa_node": c.core.node,
                              "util_pct": 100 * d[("ctx", c.name, "busy_s")] / window_s,
                              "hypervisor": c.name in hv_names,
                              "tasks_per_s": rate("ctx", c.name, "tasks"),
                              "remote_cycles_per_s": _remote_cycles(d, c.name) / window_s,
                              "moves": d[("ctx", c.name, "moves")]}
                             for host, c in _contexts(model)])
    nics = _nic_table(model, d, window_s)
    drops = pd.DataFrame([{"place": stage, "reason": reason, "frames": v}
                          for (kind, stage, reason), v in d.items() if kind == "drop"],
                         columns=["place", "reason", "frames"])
    goodput = float(flows["goodput_gbps"].sum())
    host = nics[nics["nic"].isin([n.name for n in model.nics])].sum(numeric_only=True)
    dropped = float(drops["frames"].sum()) if len(drops) else 0.0
    delivered = sum(v for (kind, _, key), v in d.items()
                    if kind == "stack" and key == "frames_delivered")
    offered = dropped + delivered  # every frame is delivered, dropped or in flight
    busy_cycles = units.s_to_cycles(sum(d[("core", c.index, "busy_s")] for c in model.cpu.cores),
                                    cfg.host.cpu.clock_hz)
    per_vm = vms["goodput_gbps"].to_numpy()
    summary = {
        "goodput_gbps": goodput,
        "wire_frames_per_s": float(host["tx_frames_per_s"] + host["rx_frames_per_s"]),
        "host_packets_per_s": float(host["tx_packets_per_s"] + host["rx_delivered_frames_per_s"]),
        "loss_ratio": dropped / offered if offered else 0.0,
        "host_cpu_util_pct": float(cores["util_pct"].mean()),
        "cycles_per_bit": busy_cycles / (units.gbps_to_bits_per_s(goodput) * window_s)
        if goodput > 0 else float("nan"),
        **hypervisor_summary(
            model, {c.name: units.s_to_cycles(d[("ctx", c.name, "busy_s")], c.core.params.clock_hz)
                    / window_s for c in model.contexts},
            cfg.host.cpu.clock_hz * len(model.cpu.cores), goodput),
        "rtt_us": _mean_rtt_us(d, model),
        "jain_index": float(per_vm.sum() ** 2 / (len(per_vm) * (per_vm ** 2).sum()))
        if (per_vm ** 2).sum() > 0 else float("nan"),
        "per_vm_goodput_std_gbps": float(np.std(per_vm, ddof=1)) if len(per_vm) > 1 else 0.0,
    }
    queues = pd.DataFrame([{"queue": q.name, "interrupts_per_s": rate("rxq", q.name, "interrupts"),
                            "frames_per_s": rate("rxq", q.name, "frames")}
                           for port in _ports(model) for q in port.rx_queues])
    pcie = _pcie_table(model, d, window_s)
    vnics = _vnic_table(model, d, window_s)
    own = vnics["vnic"].isin([v.name for v in model.vnics])  # the host under test's
    summary["exits_per_s"] = float(vnics.loc[own, "exits_per_s"].sum())
    summary["guest_rx_packets_per_s"] = float(vnics.loc[own, "rx_packets_per_s"].sum())
    own_pcie = pcie[pcie["card"].isin([c.name for c in model.cards])]
    summary["pcie_max_util_pct"] = float(own_pcie["util_pct"].max()) if len(own_pcie) else 0.0
    remote = sum(_remote_cycles(d, c.name) for c in model.contexts)
    summary["numa_remote_cycles_pct"] = 100 * remote / busy_cycles if busy_cycles else 0.0
    tables = {"flows": flows, "vms": vms, "cores": cores, "contexts": contexts, "nics": nics,
              "rx_queues": queues, "drops": drops, "pcie": pcie, "vnics": vnics,
              "cost_terms": _cost_terms_table(model, d, window_s)}
    if model.remote is not None:  # the partner VMs' host: its cores, its CPU
        r = model.remote
        tables["remote_cores"] = pd.DataFrame([
            {"core": c.index, "numa_node": c.node,
             "util_pct": 100 * d[("core", _core_key(r, c), "busy_s")] / window_s,
             "switches_per_s": rate("core", _core_key(r, c), "switches")}
            for c in r.cpu.cores])
        summary["remote_cpu_util_pct"] = float(tables["remote_cores"]["util_pct"].mean())
    wd = {key: v for (kind, _, key), v in d.items() if kind == "workload"}
    summary.update(model.workload.summary(wd, window_s))
    for name, records in model.workload.tables(wd, window_s).items():
        tables[name] = pd.DataFrame(records)
    for t in tables.values():
        t.insert(0, "replication", replication)
    return summary, tables


def _flow_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    rows = []
    for flow in model.workload.flows():
        f = flow["flow"]
        n = d.get(("flow", f, "rtt_samples"), 0)
        rows.append({"flow": f, "vm": flow["vm"],
                     "goodput_gbps": units.bytes_per_s_to_gbps(
                         d[("flow", f, "bytes_read")] / window_s),
                     "rtt_us": units.s_to_us(d[("flow", f, "rtt_sum_s")] / n) if n
                     else float("nan"),
                     "retransmits": d.get(("flow", f, "retransmits"), 0),
                     "timeouts": d.get(("flow", f, "timeouts"), 0)})
    return pd.DataFrame(rows)


NIC_COUNTERS = ("tx_packets", "tx_frames", "rx_frames", "rx_delivered_frames", "interrupts")


def _nic_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    rows = []
    for port in _ports(model):
        p = port.name
        row = {"nic": p,
               "tx_gbps": units.bytes_per_s_to_gbps(d[("nic", p, "tx_wire_bytes")] / window_s),
               "rx_gbps": units.bytes_per_s_to_gbps(d[("nic", p, "rx_wire_bytes")] / window_s)}
        row.update({f"{k}_per_s": d[("nic", p, k)] / window_s for k in NIC_COUNTERS})
        rows.append(row)
    return pd.DataFrame(rows)


VNIC_COUNTERS = ("exits", "virtual_interrupts", "rx_frames", "rx_packets")


def _vnic_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    """Per vNIC: exits (register accesses that left the guest), virtual interrupts, and what
    entered the guest: frames and packets (an LRO aggregate is one packet)."""
    rows = [{"vnic": v.name, "model": v.params.model,
             **{f"{k}_per_s": d[("vnic", v.name, k)] / window_s for k in VNIC_COUNTERS}}
            for h in model.hosts() for v in h.vnics]
    return pd.DataFrame(rows, columns=["vnic", "model",
                                       *(f"{k}_per_s" for k in VNIC_COUNTERS)])


def _pcie_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    """Per card and direction: link bytes (TLP overhead included) and utilisation. With PCI-X
    both directions are one bus: the rows then repeat the bus's totals."""
    rows = []
    for card in (c for h in model.hosts() for c in h.cards):
        for direction, ch in card.channels().items():
            rows.append({"card": card.name, "numa_node": card.node, "direction": direction,
                         "link_gbps": units.bytes_per_s_to_gbps(
                             d[("pcie", ch.name, "link_bytes")] / window_s),
                         "capacity_gbps": ch.rate_gbps,
                         "util_pct": 100 * d[("pcie", ch.name, "busy_s")] / window_s})
    return pd.DataFrame(rows, columns=["card", "numa_node", "direction", "link_gbps",
                                       "capacity_gbps", "util_pct"])


def _mean_rtt_us(d: dict, model: Model) -> float:
    flows = [f["flow"] for f in model.workload.flows()]
    total = sum(d.get(("flow", f, "rtt_sum_s"), 0.0) for f in flows)
    n = sum(d.get(("flow", f, "rtt_samples"), 0) for f in flows)
    return units.s_to_us(total / n) if n else float("nan")


def _remote_cycles(d: dict, ctx: str) -> float:
    """NUMA penalty cycles of context ``ctx``: its own data's and the RX copy's."""
    return (d.get(("ctx", ctx, f"term.{costs.NUMA}"), 0.0)
            + d.get(("ctx", ctx, f"term.{costs.NUMA_COPY}"), 0.0))


COST_TERM_COLUMNS = ["context", "host", "term", "cycles_per_s", "cycles_per_packet",
                     "cycles_per_byte", "share_pct"]


def _cost_terms_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    """Per context and cost term: cycles per second, per packet and per byte the context
    handled (the packets and bytes its tasks declared), and the term's share of the context's
    cycles. The terms of a context add up to its cycles (``models.costs``)."""
    rows = []
    by_ctx: dict[str, list[str]] = {}
    for kind, name, key in d:
        if kind == "ctx" and key.startswith("term."):
            by_ctx.setdefault(name, []).append(key)
    for host, c in _contexts(model):
        packets, n_bytes = d[("ctx", c.name, "packets")], d[("ctx", c.name, "bytes")]
        total = d[("ctx", c.name, "cycles")]
        for key in sorted(by_ctx.get(c.name, ())):
            cycles = d[("ctx", c.name, key)]
            if not cycles:
                continue
            rows.append({"context": c.name, "host": host, "term": key[len("term."):],
                         "cycles_per_s": cycles / window_s,
                         "cycles_per_packet": cycles / packets if packets else math.nan,
                         "cycles_per_byte": cycles / n_bytes if n_bytes else math.nan,
                         "share_pct": 100 * cycles / total if total else math.nan})
    return pd.DataFrame(rows, columns=COST_TERM_COLUMNS)
