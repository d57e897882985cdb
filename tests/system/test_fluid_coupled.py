"""The fluid window bound of a writer-ahead sender whose pieces go round coupled
(``sim.fluid.COUPLED_PIECES``, ``_coupled_rtt``): the next piece reaches the reader during a
read, so each read's window update joins its own data ACK train's work and the writer's copies
at the sender's core and waits there behind the other piece's train."""
import numpy as np
import pytest

from sim import fluid
from sim.compose import compose_checked

# The random cross-check's draw that the pieces' coupling set apart (shrunk): one 10GbE
# session, 64KB window, max_frames 16, 2 GHz
CASE = ["experiment=e35_tx_single_vm", "workload.vms=1", "workload.sessions_per_vm=1",
        "nic.link.line_rate_gbps=10.0",
        "nic.coalescing.max_frames=16", "host.cpu.clock_hz=2.0e9",
        "run.replications=1", "run.warmup_s=0.03", "run.measure_s=0.03"]


def _des_goodput(overrides: list[str]) -> float:
    """The DES's goodput, the mean of seeds 0 and 1 (as the random check takes it)."""
    from sim.runner import run_experiment
    return float(np.mean([run_experiment(compose_checked("configs", [*overrides, f"run.seed={s}"]))
                          .summary["goodput_gbps"] for s in (0, 1)]))


def _fluid_goodput(monkeypatch, overrides: list[str], coupled: bool) -> float:
    monkeypatch.setattr(fluid, "COUPLED_PIECES", coupled)
    return fluid.solve(compose_checked("configs", overrides)).summary["goodput_gbps"]


@pytest.mark.parametrize("socket_bytes, message_bytes", [
    # DES 3.50 Gbps; the pieces apart: fluid 3.81, coupled 3.50
    (65536, 8192),
    # one whole message's copy in the chain: DES 3.21; apart 3.94, coupled 3.20
    (65536, 65536),
    # pieces of two segments (65160 + 4344): the other piece's copies before the release,
    # its 22-ACK train raising its interrupt as it lands: DES 3.57; apart 4.24, coupled 3.44
    (131072, 8192),
])
def test_coupled_pieces_set_the_window_bound(monkeypatch, socket_bytes, message_bytes):
    case = [*CASE, f"workload.socket_bytes={socket_bytes}",
            f"workload.message_bytes={message_bytes}"]
    des = _des_goodput(case)
    coupled = _fluid_goodput(monkeypatch, case, True)
    apart = _fluid_goodput(monkeypatch, case, False)
    assert coupled < 0.95 * apart
    assert coupled == pytest.approx(des, rel=0.05)


@pytest.mark.parametrize("extra, coupled", [
    ([], True),
    # a 32KB piece's wire time at 2.5GbE (112 us) is longer than its read (48 us): the next
    # piece arrives after the read, the pieces stay apart
    (["nic.link.line_rate_gbps=2.5"], False),
    # a window of one piece (16KB) has no other piece to couple with
    (["workload.socket_bytes=16384"], False),
])
def test_the_rule_applies_where_the_next_piece_arrives_during_a_read(extra, coupled):
    cfg = compose_checked("configs", [*CASE, "workload.socket_bytes=65536",
                                      "workload.message_bytes=8192", *extra])
    net = fluid.describe_network(cfg)
    _, st, _ = fluid._solve_piled(net)
    rtt = fluid._coupled_rtt(net, st)
    assert (rtt > 0).all() if coupled else (rtt == 0).all()
