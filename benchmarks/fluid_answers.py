"""The fluid engine's answers (summary and every table cell, floats as repr) for every experiment
it solves plus variants that reach its special cases, to show a speed change leaves them alone.

    python benchmarks/fluid_answers.py OUT.json          # from a checkout's root
    python benchmarks/fluid_answers.py --compare A.json B.json

``--compare`` prints how many configurations are identical and, for the others, the largest
relative difference of any number and any string (binding constraint, regime) that differs.
Bit-identity is the rule for a change that only reorganises work; a change that reorders
floating-point sums must stay far below 1e-9.
"""
import glob
import json
import math
import os
import sys

from sim import fluid
from sim.compose import compose_checked

VARIANTS = [
    ["experiment=e35_rx_scaling", "workload.vms=16"],                       # S2
    ["experiment=e35_rx_scaling", "workload.vms=4"],
    ["experiment=g80_receive", "host.nic_ports=2"],
    ["experiment=g80_receive", "host.nic_ports=1", "workload.sessions_per_vm=20"],
    ["experiment=g80_send", "workload.sessions_per_vm=3"],
    ["experiment=g80_send", "workload.sessions_per_vm=5"],
    ["experiment=g80_send", "workload.kind=tcp_stream"],
    ["experiment=v2v_cross_vswitch", "workload.sessions_per_vm=2"],
    ["experiment=e35_tx_scaling", "workload.vms=8"],
    ["experiment=kvm_vhost_net_tx", "workload.sessions_per_vm=1"],
    ["experiment=e35_tx_single_vm", "workload.socket_bytes=65536", "workload.vms=2",
     "host.cpu.clock_hz=2e9"],
    ["experiment=e35_rx_single_vm", "workload.vms=3", "workload.socket_bytes=65536",
     "workload.message_bytes=8192", "host.cpu.clock_hz=2e9"],               # piled windows
    ["experiment=e35_tx_single_vm", "workload.socket_bytes=262144",
     "workload.message_bytes=65536", "host.cpu.clock_hz=4e9"],             # merged reads
    ["experiment=dev_vmxnet_32_1g_stream", "nic.coalescing.max_frames=16"],
    ["experiment=dev_vmxnet_64_10g_stream", "workload.sessions_per_vm=2"],
    ["experiment=v6_numa_40g_default", "host.numa.remote_per_packet_cycles=300",
     "host.numa.remote_per_byte_cycles=0.3"],
    ["experiment=e35_tx_single_vm", "nic.coalescing.timer_us=40"],
    ["experiment=v2v_same_vswitch", "vnic=e1000"],
    ["experiment=e35_rx_single_vm", "peer.lro_max_bytes=65536", "nic.coalescing.mode=static"],
    ["experiment=e35_tx_single_vm", "hypervisor.vcpu_halt_wakeup_cycles=50000"],
]


def val(v):
    if isinstance(v, float):
        return repr(v)
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        try:
            return val(v.item())
        except (ValueError, AttributeError):
            pass
    if isinstance(v, (list, tuple)):
        return [val(x) for x in v]
    if isinstance(v, dict):
        return {str(k): val(x) for k, x in v.items()}
    return v if isinstance(v, (int, str, bool, type(None))) else repr(v)


def dump(res):
    out = {"summary": val(dict(res.summary))}
    for name, t in sorted((res.tables or {}).items()):
        if t is None:
            out[name] = None
            continue
        out[name] = {"columns": [str(c) for c in t.columns],
                     "rows": [[val(x) for x in row] for row in t.itertuples(index=False)]}
    return out


def main(path):
    cases = [[f"experiment={os.path.basename(p)[:-5]}"]
             for p in sorted(glob.glob("configs/experiment/*.yaml"))] + VARIANTS
    out, refused = {}, []
    for ov in cases:
        name = " ".join(ov)
        try:
            cfg = compose_checked("configs", ov)
        except Exception as e:  # noqa: BLE001  a variant that does not compose: say so
            out[name] = {"compose_error": repr(e)}
            continue
        try:
            res = fluid.solve(cfg)
        except ValueError as e:
            refused.append(name)
            out[name] = {"refused": str(e)[:200]}
            continue
        out[name] = dump(res)
    json.dump(out, open(path, "w"), indent=0, sort_keys=True)
    solved = sum(1 for v in out.values() if "summary" in v)
    print(f"{len(cases)} cases, {solved} solved, {len(refused)} refused, "
          f"{sum(1 for v in out.values() if 'compose_error' in v)} did not compose")


def _walk(a, b, path, out):
    """Differences between two dumped values: (path, relative difference or None)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _walk(a.get(k), b.get(k), f"{path}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{k}]", out)
    elif a != b:
        try:
            x, y = float(a), float(b)
            rel = 0.0 if x == y or (math.isnan(x) and math.isnan(y)) else \
                abs(x - y) / max(abs(x), abs(y))
            if rel:
                out.append((path, rel))
        except (TypeError, ValueError):
            out.append((path, None))


def compare(path_a, path_b):
    a, b = json.load(open(path_a)), json.load(open(path_b))
    same, worst = 0, []
    for name in sorted(set(a) | set(b)):
        diffs = []
        _walk(a.get(name), b.get(name), "", diffs)
        if not diffs:
            same += 1
            continue
        strings = [p for p, r in diffs if r is None]
        rel = max((r for _, r in diffs if r is not None), default=0.0)
        worst.append((rel, name, strings[:3]))
    print(f"{same} of {len(set(a) | set(b))} configurations identical")
    for rel, name, strings in sorted(worst, reverse=True):
        print(f"  {name}: max relative difference {rel:.3g}"
              + (f"; other values differ at {strings}" if strings else ""))
    return 0 if not worst else 1


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    main(sys.argv[1])
