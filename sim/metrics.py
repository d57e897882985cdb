"""Metric collection: counters snapshotted at the window's edges, turned into tidy tables.

Every model keeps cumulative counters (bytes read, busy seconds, frames, drops). The runner takes
a snapshot when the warm-up ends and another when the measurement window ends; every metric is
computed from the difference, so nothing from the warm-up leaks in. Busy time is exact at any
instant (a task in service is counted up to the snapshot).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from models import costs, units
from sim.builder import Model


def snapshot(model: Model) -> dict[str, float]:
    """All cumulative counters of ``model`` at this instant, as a flat dict."""
    s: dict[str, float] = {}
    for flow in model.workload.flows():
        for key, value in flow.items():
            if key not in ("flow", "vm"):
                s[f"flow.{flow['flow']}.{key}"] = value
    for key, value in model.workload.counters().items():
        s[f"workload.{key}"] = value
    for core in model.cpu.cores:
        s[f"core.{core.index}.busy_s"] = core.busy_time_s()
        s[f"core.{core.index}.switches"] = core.switches
    for ctx in [*model.contexts, *(c for peer in model.peers for c in peer.contexts())]:
        s[f"ctx.{ctx.name}.busy_s"] = ctx.busy_time_s()
        s[f"ctx.{ctx.name}.tasks"] = ctx.tasks
        s[f"ctx.{ctx.name}.moves"] = ctx.moves
        s[f"ctx.{ctx.name}.cycles"] = ctx.cycles
        s[f"ctx.{ctx.name}.packets"] = ctx.packets
        s[f"ctx.{ctx.name}.bytes"] = ctx.bytes
        for term, cycles in ctx.term_cycles.items():
            s[f"term.{ctx.name}.{term}"] = cycles
    for card in model.cards:
        for ch in {"up": card.up, "down": card.down}.values():
            s[f"pcie.{ch.name}.busy_s"] = ch.busy_time_s()
            s[f"pcie.{ch.name}.link_bytes"] = ch.link_bytes
    s["frames_delivered"] = sum(h.frames_delivered for h in [*model.vms, *model.peers])
    for port in _ports(model):
        p = port.name
        s[f"nic.{p}.tx_packets"] = port.tx_packets
        s[f"nic.{p}.tx_frames"] = port.tx_frames
        s[f"nic.{p}.tx_wire_bytes"] = port.tx_wire_bytes
        s[f"nic.{p}.rx_frames"] = port.rx_frames
        s[f"nic.{p}.rx_wire_bytes"] = port.rx_wire_bytes
        s[f"nic.{p}.rx_delivered_frames"] = port.rx_delivered_frames
        s[f"nic.{p}.interrupts"] = port.interrupts
        for q in port.rx_queues:
            s[f"rxq.{q.name}.interrupts"] = q.coalescer.interrupts
            s[f"rxq.{q.name}.frames"] = q.ring.stats.departed_frames
    for vnic in model.vnics:
        s[f"vnic.{vnic.name}.exits"] = vnic.exits
        s[f"vnic.{vnic.name}.virtual_interrupts"] = vnic.virtual_interrupts
        s[f"vnic.{vnic.name}.rx_frames"] = vnic.rx_frames
        s[f"vnic.{vnic.name}.rx_packets"] = vnic.rx_packets
    for name, st in model.stats.stages.items():
        s[f"stage.{name}.arrived_frames"] = st.arrived_frames
        for reason, n in st.dropped_frames.items():
            s[f"drop.{name}.{reason}"] = n
    return s


def measure(model: Model, s0: dict, s1: dict, window_s: float, replication: int):
    """Summary metrics and tables of one replication's measurement window."""
    d = {k: v - s0.get(k, 0.0) for k, v in s1.items()}
    cfg = model.cfg
    flows = _flow_table(model, d, window_s)
    vms = flows.groupby("vm", as_index=False)["goodput_gbps"].sum()
    vms["vcpu_util_pct"] = [100 * sum(d[f"ctx.{c.name}.busy_s"] for c in vm.vcpus)
                            / (window_s * len(vm.vcpus)) for vm in model.vms]
    cores = pd.DataFrame([{"core": c.index, "numa_node": c.node,
                           "util_pct": 100 * d[f"core.{c.index}.busy_s"] / window_s,
                           "switches_per_s": d[f"core.{c.index}.switches"] / window_s}
                          for c in model.cpu.cores])
    contexts = pd.DataFrame([{"context": c.name, "host": host, "core": c.core.index,
                              "numa_node": c.core.node,
                              "util_pct": 100 * d[f"ctx.{c.name}.busy_s"] / window_s,
                              "tasks_per_s": d[f"ctx.{c.name}.tasks"] / window_s,
                              "remote_cycles_per_s": _remote_cycles(d, c.name) / window_s,
                              "moves": d[f"ctx.{c.name}.moves"]}
                             for host, ctxs in (("host", model.contexts),
                                                *((p.name, p.contexts()) for p in model.peers))
                             for c in ctxs])
    nics = _nic_table(model, d, window_s)
    drops = pd.DataFrame([{"place": k.split(".", 1)[1].rsplit(".", 1)[0],
                           "reason": k.rsplit(".", 1)[1], "frames": v}
                          for k, v in d.items() if k.startswith("drop.")],
                         columns=["place", "reason", "frames"])
    goodput = float(flows["goodput_gbps"].sum())
    host = nics[nics["nic"].isin([n.name for n in model.nics])].sum(numeric_only=True)
    dropped = float(drops["frames"].sum()) if len(drops) else 0.0
    offered = dropped + d["frames_delivered"]  # every frame is delivered, dropped or in flight
    busy_cycles = units.s_to_cycles(sum(d[f"core.{c.index}.busy_s"] for c in model.cpu.cores),
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
        "rtt_us": _mean_rtt_us(d, model),
        "jain_index": float(per_vm.sum() ** 2 / (len(per_vm) * (per_vm ** 2).sum()))
        if (per_vm ** 2).sum() > 0 else float("nan"),
        "per_vm_goodput_std_gbps": float(np.std(per_vm, ddof=1)) if len(per_vm) > 1 else 0.0,
    }
    queues = pd.DataFrame([{"queue": k.split(".", 1)[1].rsplit(".", 1)[0],
                            "interrupts_per_s": v / window_s,
                            "frames_per_s": d[k.rsplit(".", 1)[0] + ".frames"] / window_s}
                           for k, v in d.items() if k.startswith("rxq.") and
                           k.endswith(".interrupts")])
    pcie = _pcie_table(model, d, window_s)
    vnics = _vnic_table(model, d, window_s)
    summary["exits_per_s"] = float(vnics["exits_per_s"].sum())
    summary["guest_rx_packets_per_s"] = float(vnics["rx_packets_per_s"].sum())
    summary["pcie_max_util_pct"] = float(pcie["util_pct"].max()) if len(pcie) else 0.0
    remote = sum(_remote_cycles(d, c.name) for c in model.contexts)
    summary["numa_remote_cycles_pct"] = 100 * remote / busy_cycles if busy_cycles else 0.0
    tables = {"flows": flows, "vms": vms, "cores": cores, "contexts": contexts, "nics": nics,
              "rx_queues": queues, "drops": drops, "pcie": pcie, "vnics": vnics,
              "cost_terms": _cost_terms_table(model, d, window_s)}
    wd = {k[len("workload."):]: v for k, v in d.items() if k.startswith("workload.")}
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
        n = d.get(f"flow.{f}.rtt_samples", 0)
        rows.append({"flow": f, "vm": flow["vm"],
                     "goodput_gbps": units.bytes_per_s_to_gbps(d[f"flow.{f}.bytes_read"] / window_s),
                     "rtt_us": units.s_to_us(d[f"flow.{f}.rtt_sum_s"] / n) if n else float("nan"),
                     "retransmits": d.get(f"flow.{f}.retransmits", 0),
                     "timeouts": d.get(f"flow.{f}.timeouts", 0)})
    return pd.DataFrame(rows)


def _nic_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    rows = []
    for port in _ports(model):
        p = port.name
        rows.append({"nic": p,
                     "tx_gbps": units.bytes_per_s_to_gbps(d[f"nic.{p}.tx_wire_bytes"] / window_s),
                     "rx_gbps": units.bytes_per_s_to_gbps(d[f"nic.{p}.rx_wire_bytes"] / window_s),
                     "tx_packets_per_s": d[f"nic.{p}.tx_packets"] / window_s,
                     "tx_frames_per_s": d[f"nic.{p}.tx_frames"] / window_s,
                     "rx_frames_per_s": d[f"nic.{p}.rx_frames"] / window_s,
                     "rx_delivered_frames_per_s": d[f"nic.{p}.rx_delivered_frames"] / window_s,
                     "interrupts_per_s": d[f"nic.{p}.interrupts"] / window_s})
    return pd.DataFrame(rows)


def _vnic_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    """Per vNIC: exits (register accesses that left the guest), virtual interrupts, and what
    entered the guest: frames and packets (an LRO aggregate is one packet)."""
    rows = [{"vnic": v.name, "model": v.params.model,
             **{f"{k}_per_s": d[f"vnic.{v.name}.{k}"] / window_s
                for k in ("exits", "virtual_interrupts", "rx_frames", "rx_packets")}}
            for v in model.vnics]
    return pd.DataFrame(rows, columns=["vnic", "model", "exits_per_s", "virtual_interrupts_per_s",
                                       "rx_frames_per_s", "rx_packets_per_s"])


def _pcie_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    """Per card and direction: link bytes (TLP overhead included) and utilisation. With PCI-X
    both directions are one bus: the rows then repeat the bus's totals."""
    rows = []
    for card in model.cards:
        for direction, ch in (("up", card.up), ("down", card.down)):
            rows.append({"card": card.name, "numa_node": card.node, "direction": direction,
                         "link_gbps": units.bytes_per_s_to_gbps(
                             d[f"pcie.{ch.name}.link_bytes"] / window_s),
                         "capacity_gbps": ch.rate_gbps,
                         "util_pct": 100 * d[f"pcie.{ch.name}.busy_s"] / window_s})
    return pd.DataFrame(rows, columns=["card", "numa_node", "direction", "link_gbps",
                                       "capacity_gbps", "util_pct"])


def _ports(model: Model):
    return [*model.nics, *(p.nic for p in model.peers)]


def _mean_rtt_us(d: dict, model: Model) -> float:
    flows = [f["flow"] for f in model.workload.flows()]
    total = sum(d.get(f"flow.{f}.rtt_sum_s", 0.0) for f in flows)
    n = sum(d.get(f"flow.{f}.rtt_samples", 0) for f in flows)
    return units.s_to_us(total / n) if n else float("nan")


def _remote_cycles(d: dict, ctx: str) -> float:
    """NUMA penalty cycles of context ``ctx``: its own data's and the RX copy's."""
    return d.get(f"term.{ctx}.{costs.NUMA}", 0.0) + d.get(f"term.{ctx}.{costs.NUMA_COPY}", 0.0)


COST_TERM_COLUMNS = ["context", "host", "term", "cycles_per_s", "cycles_per_packet",
                     "cycles_per_byte", "share_pct"]


def _cost_terms_table(model: Model, d: dict, window_s: float) -> pd.DataFrame:
    """Per context and cost term: cycles per second, per packet and per byte the context
    handled (the packets and bytes its tasks declared), and the term's share of the context's
    cycles. The terms of a context add up to its cycles (``models.costs``)."""
    rows = []
    for host, ctxs in (("host", model.contexts), *((p.name, p.contexts()) for p in model.peers)):
        for c in ctxs:
            prefix = f"term.{c.name}."
            packets, n_bytes = d[f"ctx.{c.name}.packets"], d[f"ctx.{c.name}.bytes"]
            total = d[f"ctx.{c.name}.cycles"]
            for key in sorted(k for k in d if k.startswith(prefix)):
                cycles = d[key]
                if not cycles:
                    continue
                rows.append({"context": c.name, "host": host, "term": key[len(prefix):],
                             "cycles_per_s": cycles / window_s,
                             "cycles_per_packet": cycles / packets if packets else math.nan,
                             "cycles_per_byte": cycles / n_bytes if n_bytes else math.nan,
                             "share_pct": 100 * cycles / total if total else math.nan})
    return pd.DataFrame(rows, columns=COST_TERM_COLUMNS)
