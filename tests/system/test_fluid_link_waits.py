"""The fluid round trip's wait behind the other flows' bursts on a shared link
(``sim.fluid.LINK_WAITS``, ``_link_waits``): a link sends frames in order, so a flow's piece
that reaches it while another flow's piece is on the wire waits for the rest of that piece."""
import numpy as np
import pytest

from sim import fluid
from sim.compose import compose_checked

# The random cross-check's draw (shrunk) where two VMs' writer-ahead senders share the host's
# 10GbE transmit link: one session each, 64KB window (pieces of 30784 + 34752 bytes), 8KB
# messages, max_frames 16, 2 GHz
CASE = ["experiment=e35_tx_single_vm", "workload.vms=2", "workload.sessions_per_vm=1",
        "workload.socket_bytes=65536", "workload.message_bytes=8192",
        "nic.link.line_rate_gbps=10.0", "nic.coalescing.max_frames=16",
        "host.cpu.clock_hz=2.0e9", "run.replications=1", "run.warmup_s=0.03",
        "run.measure_s=0.03"]


def _solve(monkeypatch, overrides: list[str], on: bool):
    monkeypatch.setattr(fluid, "LINK_WAITS", on)
    return fluid.solve(compose_checked("configs", overrides)).summary


def test_two_senders_wait_behind_each_others_pieces_on_the_link(monkeypatch):
    # DES 6.397 / 6.423 Gbps (seeds 0 / 1); fluid 6.81 without the waits (+6.3%), 6.62 with
    from sim.runner import run_experiment
    des = float(np.mean([run_experiment(compose_checked("configs", [*CASE, f"run.seed={s}"]))
                         .summary["goodput_gbps"] for s in (0, 1)]))
    on, off = _solve(monkeypatch, CASE, True), _solve(monkeypatch, CASE, False)
    assert on["goodput_gbps"] < 0.98 * off["goodput_gbps"]
    assert on["goodput_gbps"] == pytest.approx(des, rel=0.05)
    assert off["goodput_gbps"] != pytest.approx(des, rel=0.05)


def test_the_wait_is_the_other_flows_residual_burst():
    cfg = compose_checked("configs", CASE)
    net = fluid.describe_network(cfg)
    _, st, _ = fluid._solve_piled(net)
    waits = fluid._link_waits(net, st)
    # the other flow's data piece on the shared transmit link: busy U of the time with pieces
    # of tau seconds; an arrival waits U tau / 2 (its ACK trains on the return link add little)
    for i, other in ((0, 1), (1, 0)):
        fl = net.flows[other]
        rate = net.link_rate[fl.data_links[0]]
        tau = np.ceil(fl.chunk / fl.mss) * fl.frame_wire / rate
        u = st.quantities[other, fluid.G] / fl.chunk * tau
        assert waits[i] == pytest.approx(u * tau / 2, rel=0.05)
    # one flow alone waits for nothing on its links
    alone = fluid.describe_network(compose_checked("configs", [*CASE, "workload.vms=1"]))
    _, st1, _ = fluid._solve_piled(alone)
    assert (fluid._link_waits(alone, st1) == 0).all()


def test_bursts_spaced_by_a_shared_core_do_not_wait_on_the_link():
    # Two VMs receiving: the peer's link carries both flows' pieces (28 us each on the wire),
    # but the host handler's core takes ~50 us over each piece, so they reach the link spaced
    # (DES, seed 1: a data burst waits 0.03 us there): no wait. Sending, the shared handler
    # takes ~18 us a piece: the waits stay.
    rx = ["experiment=e35_rx_single_vm", *CASE[1:]]
    for overrides, waits in ((rx, False), (CASE, True)):
        net = fluid.describe_network(compose_checked("configs", overrides))
        _, st, _ = fluid._solve_piled(net)
        assert (fluid._link_waits(net, st) > 1e-6).all() == waits
