"""A flow's own pieces reach the cores after its slowest data link spaced by that link
(``sim.fluid.SPACED_PIECES``, ``_spaced_pieces``): where the flow's work per piece at a core is
under a piece's wire time, no piece finds the flow's other piece in service there, and the
residual waits do not count it. The rule is off by default (``SPACED_PIECES``: the mean piece
puts a 64KB window at 2.5GbE on the wrong side of its step); these tests switch it on."""
import numpy as np
import pytest

from sim import fluid
from sim.compose import compose_checked

# The random cross-check's draw on int16: one receiving VM, one session, 128KB window (pieces of
# 65160 + 4344 and 61568 bytes, ~220 us each on the 2.5GbE wire), 8KB messages, max_frames 16,
# 2 GHz; the vCPU takes ~205 us a piece, the host handler ~86
CASE = ["experiment=e35_rx_single_vm", "workload.vms=1", "workload.sessions_per_vm=1",
        "workload.socket_bytes=131072", "workload.message_bytes=8192",
        "nic.link.line_rate_gbps=2.5", "nic.coalescing.max_frames=16",
        "host.cpu.clock_hz=2.0e9", "run.replications=1", "run.warmup_s=0.03",
        "run.measure_s=0.03"]


def _solve(monkeypatch, overrides: list[str], on: bool):
    monkeypatch.setattr(fluid, "SPACED_PIECES", on)
    return fluid.solve(compose_checked("configs", overrides)).summary


def test_pieces_spaced_by_the_link_do_not_wait_for_each_other(monkeypatch):
    # DES 1.976 Gbps (seeds 2 and 3); fluid 1.807 with the own pieces' residual waits (59 us a
    # round trip), 2.004 without
    from sim.runner import run_experiment
    des = float(np.mean([run_experiment(compose_checked("configs", [*CASE, f"run.seed={s}"]))
                         .summary["goodput_gbps"] for s in (2, 3)]))
    on, off = _solve(monkeypatch, CASE, True), _solve(monkeypatch, CASE, False)
    assert on["goodput_gbps"] > 1.05 * off["goodput_gbps"]
    assert on["goodput_gbps"] == pytest.approx(des, rel=0.05)
    assert off["goodput_gbps"] != pytest.approx(des, rel=0.05)


def test_only_the_cores_the_link_spaces_for_drop_the_own_pieces(monkeypatch):
    monkeypatch.setattr(fluid, "SPACED_PIECES", True)
    net = fluid.describe_network(compose_checked("configs", CASE))
    _, st, _ = fluid._solve_piled(net)
    base, g, m, g_core, g_flow = net.pre["classes"]
    clock = net.pre["key_clock"]
    busy = np.bincount(g, st.entry[base] / clock[net.e_key[base]], m)
    spaced = fluid._spaced_pieces(net, st, busy, g_core, g_flow)
    # every core of the flow takes less than a piece's wire time per piece here
    fl = net.flows[0]
    per_piece = np.bincount(g_core, busy, spaced.shape[1]) * fl.chunk / st.quantities[0, fluid.G]
    wire = np.ceil(fl.chunk / fl.mss) * fl.frame_wire / net.link_rate[fl.data_links[0]]
    assert (spaced[0] == (per_piece <= wire)).all() and spaced[0][per_piece > 0].all()
    # at 10GbE a piece's wire time (~55 us) is under the vCPU's work per piece: not spaced there
    fast = fluid.describe_network(compose_checked(
        "configs", [*CASE, "nic.link.line_rate_gbps=10.0"]))
    _, st10, _ = fluid._solve_piled(fast)
    b, g, m, gc, gf = fast.pre["classes"]
    busy10 = np.bincount(g, st10.entry[b] / fast.pre["key_clock"][fast.e_key[b]], m)
    assert not fluid._spaced_pieces(fast, st10, busy10, gc, gf)[0].all()
