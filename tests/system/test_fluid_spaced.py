"""A flow's own pieces as the slow start leaves them (``sim.fluid.SPACED_PIECES``): a window of
two unequal pieces (``_slow_start_pieces``) that the slowest data link spaces all round goes
round at its larger piece's pace, the smaller piece waiting behind it, and where the larger
piece's work at its reader's core outlasts the spacing the smaller piece's receive pass goes
before the larger's window update (``_spaced_pieces``, ``_two_pieces``, ``_own_pieces``); no
residual wait for the own other piece at a random phase there. The DES numbers: 0.03 s after
0.03 s, seeds 2 and 3 (the same to 4 digits)."""
import numpy as np
import pytest

from sim import fluid
from sim.compose import compose_checked

# The random cross-check's draw on int16: one receiving VM, one session, 128KB window (pieces of
# 69504 = 65160 + 4344 and 61568 bytes), 8KB messages, 2.5GbE, max_frames 16, 2 GHz
CASE = ["experiment=e35_rx_single_vm", "workload.vms=1", "workload.sessions_per_vm=1",
        "workload.socket_bytes=131072", "workload.message_bytes=8192",
        "nic.link.line_rate_gbps=2.5", "nic.coalescing.max_frames=16",
        "host.cpu.clock_hz=2.0e9", "run.replications=1", "run.warmup_s=0.03",
        "run.measure_s=0.03"]
# ... and its next draw: the same at 64KB (pieces of 34752 and 30784 bytes)
CASE64 = [o if not o.startswith("workload.socket_bytes") else "workload.socket_bytes=65536"
          for o in CASE]


def _des(overrides: list[str]) -> float:
    from sim.runner import run_experiment
    return float(np.mean([run_experiment(compose_checked("configs", [*overrides, f"run.seed={s}"]))
                          .summary["goodput_gbps"] for s in (2, 3)]))


def _solve(monkeypatch, overrides: list[str], on: bool):
    monkeypatch.setattr(fluid, "SPACED_PIECES", on)
    return fluid.solve(compose_checked("configs", overrides)).summary


def _state(overrides: list[str]):
    net = fluid.describe_network(compose_checked("configs", overrides))
    _, st, _ = fluid._solve_piled(net)
    return net, st


def test_slow_start_leaves_a_burst_and_the_rest_of_the_window():
    # DES (the peer's ``TcpSender._send``, e35_rx_single_vm, 2.5GbE, 2 GHz): 64KB 34752 +
    # 30784, 128KB 69504 + 61568, and with an initial window of 4 at 64KB 42368 + 23168
    for window, iw, want in ((65536, 3, (34752, 30784)), (131072, 3, (69504, 61568)),
                             (65536, 4, (42368, 23168))):
        net = fluid.describe_network(compose_checked(
            "configs", [*CASE, f"workload.socket_bytes={window}",
                        f"tcp.initial_cwnd_segments={iw}"]))
        assert tuple(net.pre["pieces"][0]) == want
    # a 256KB window goes round in four pieces (``_reads_per_window``): the mean piece
    net = fluid.describe_network(compose_checked("configs", [*CASE,
                                                             "workload.socket_bytes=262144"]))
    assert not net.pre["unequal"][0] and net.pre["pieces"][0, 0] == net.flows[0].chunk


def test_pieces_spaced_by_the_link_do_not_wait_for_each_other(monkeypatch):
    # DES 1.976 Gbps; fluid 1.807 with the own pieces' residual waits (59 us a round trip)
    des = _des(CASE)
    on, off = _solve(monkeypatch, CASE, True), _solve(monkeypatch, CASE, False)
    assert on["goodput_gbps"] > 1.05 * off["goodput_gbps"]
    assert on["goodput_gbps"] == pytest.approx(des, rel=0.05)
    assert off["goodput_gbps"] != pytest.approx(des, rel=0.05)


def test_the_smaller_piece_couples_at_the_reader_where_the_larger_outlasts_it(monkeypatch):
    # DES 1.643 Gbps: the smaller piece's receive pass (22 us) goes before the larger's window
    # update. The mean piece (110.3 us of vCPU work against 111.5 of wire) had the pieces
    # spaced there: 1.862
    des = _des(CASE64)
    assert _solve(monkeypatch, CASE64, True)["goodput_gbps"] == pytest.approx(des, rel=0.05)
    monkeypatch.setattr(fluid, "_slow_start_pieces", lambda fl, iw: (fl.chunk, fl.chunk))
    assert _solve(monkeypatch, CASE64, True)["goodput_gbps"] != pytest.approx(des, rel=0.05)


def test_only_the_reader_core_couples_and_only_at_64kb():
    for overrides, coupled in ((CASE, False), (CASE64, True)):
        net, st = _state(overrides)
        spaced, traced, couples, pass_s = fluid._two_pieces(net, st)
        assert traced[0] and couples[0] == coupled and spaced[0].all()
        work, _ = fluid._piece_work(net, st)
        reader = net.pre["reader_core"][0]
        late = work[0] > net.pre["spacing_wire_s"][0]
        assert late[reader] == coupled and not np.delete(late, reader).any()
        # the larger piece's loop, and the smaller piece's receive pass where they couple
        own = fluid._own_pieces(net, st, np.zeros(1))[0]
        assert own == pytest.approx(net.pre["own_wire_diff_s"][0] / 2
                                    + (pass_s[0] if coupled else 0.0))
        assert pass_s[0] > 0


def test_pieces_that_meet_at_another_core_keep_the_random_phase():
    # at 10GbE the 128KB window's pieces are 56 us apart, under the host handler's work per
    # piece (95 us): they are not traced and the flow's own pieces wait at a random phase
    net, st = _state([*CASE, "nic.link.line_rate_gbps=10.0"])
    spaced, traced, couples, _ = fluid._two_pieces(net, st)
    assert net.pre["unequal"][0] and not traced[0] and not couples[0]
    base, g, m, g_core, g_flow = net.pre["classes"]
    busy = np.bincount(g, st.entry[base] / net.pre["key_clock"][net.e_key[base]], m)
    assert not fluid._spaced_pieces(net, st, busy, g_core, g_flow)[0].any()
    assert fluid._own_pieces(net, st, np.ones(1))[0] == 0.0
