"""The line-rate ceiling: TCP goodput <= line rate x MSS / (MTU + 38), MSS = MTU - 40 - 12.

At 10 Gbps and MTU 1500 that is 10 x 1448 / 1538 = 9.4148 Gbps (models.units). No config may
beat it; a host fast enough that no CPU saturates must come within 2% of it.
Goodput counts bytes the applications read in the window, which may include bytes that were
already in flight or buffered when it opened: at most one socket's worth per connection, so the
ceiling gets that much slack (0.3% with 5 x 64KB over 0.1 s).
"""
import pytest

from models.units import line_rate_goodput_gbps
from sim.config import to_config

TX, RX = "experiment=e35_tx_single_vm", "experiment=e35_rx_single_vm"
CONFIGS = [
    [TX], [RX],
    [TX, "workload.vms=2"], [RX, "workload.vms=3"],
    [TX, "nic.link.mtu_bytes=9000"], [RX, "nic.link.mtu_bytes=9000"],
    [TX, "nic.link.line_rate_gbps=1"],
]


def ceiling_gbps(cfg) -> float:
    return line_rate_goodput_gbps(cfg.nic.link.line_rate_gbps, cfg.nic.link.mtu_bytes,
                                  cfg.tcp.timestamps)


def slack_gbps(cfg) -> float:
    flows = cfg.workload.vms * cfg.workload.sessions_per_vm
    return flows * cfg.workload.socket_bytes * 8 / cfg.run.measure_s / 1e9


@pytest.mark.parametrize("overrides", CONFIGS, ids=" ".join)
def test_goodput_never_exceeds_the_line_rate_ceiling(overrides, compose, run_one):
    cfg = compose(overrides)
    _, s, tables = run_one(cfg)
    assert 0 < s["goodput_gbps"] <= ceiling_gbps(cfg) + slack_gbps(cfg)
    # On the wire itself (framing included) no port sends faster than its line rate, give or
    # take the one burst whose completion falls in the window.
    one_burst_gbps = cfg.nic.tso_max_bytes * 1.1 * 8 / cfg.run.measure_s / 1e9
    assert (tables["nics"]["tx_gbps"] <= cfg.nic.link.line_rate_gbps + one_burst_gbps).all()


def test_ceiling_value_at_1500():
    assert line_rate_goodput_gbps(10.0, 1500, True) == pytest.approx(9.4148, abs=1e-4)


@pytest.mark.parametrize("experiment", [TX, RX])
def test_a_fast_host_reaches_the_ceiling(experiment, compose_raw, run_one, scaled):
    d = compose_raw([experiment])
    for section in ("guest", "vnic", "hypervisor", "peer"):
        scaled(d[section], 0.2)     # every cycle price of the VM, the hypervisor and the client
    cfg = to_config(d)
    _, s, tables = run_one(cfg)
    busiest = tables["contexts"]["util_pct"].max()
    assert busiest < 80                                   # nothing CPU-bound any more
    assert s["goodput_gbps"] >= 0.98 * ceiling_gbps(cfg)
    assert s["goodput_gbps"] <= ceiling_gbps(cfg) + slack_gbps(cfg)
