"""Long-window versions of the limit checks (`pytest -m slow`, `make validate`).

Same mechanisms as test_limits_emerge.py, with the default run control (0.1 s warm-up, 0.5 s
window, 3 replications) so the means are the ones a user would see: the RX vCPU bound scales
with the vCPU's cycles (ratio 0.45..0.60 for x2), and the line-rate ceiling holds.
"""
import copy

import pytest

from models.units import line_rate_goodput_gbps
from sim.config import to_config
from sim.runner import run_experiment

pytestmark = pytest.mark.slow


def test_rx_vcpu_bound_long(compose_raw, scaled):
    base = compose_raw(["experiment=e35_rx_single_vm"], short=False)
    slow = copy.deepcopy(base)
    for node in (slow["guest"]["stack"], slow["vnic"]["guest_rx"], slow["vnic"]["guest_tx"]):
        scaled(node, 2.0)
    g1 = run_experiment(to_config(base)).summary["goodput_gbps"]
    g2 = run_experiment(to_config(slow)).summary["goodput_gbps"]
    assert 0.45 <= g2 / g1 <= 0.60, (g1, g2)


@pytest.mark.parametrize("experiment", ["e35_tx_single_vm", "e35_rx_single_vm"])
def test_line_rate_ceiling_long(experiment, compose):
    cfg = compose([f"experiment={experiment}", "workload.vms=3"], short=False)
    res = run_experiment(cfg)
    # Slack: at most one socket per connection was already in flight when the window opened.
    slack_gbps = 3 * 5 * cfg.workload.socket_bytes * 8 / cfg.run.measure_s / 1e9
    assert res.summary["goodput_gbps"] <= line_rate_goodput_gbps(10.0, 1500, True) + slack_gbps
