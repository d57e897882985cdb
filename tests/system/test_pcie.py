"""PCIe in the whole model: G80's dual-port card reaches line rate only from Gen2 x8 (moved from
tests/unit/test_pcie.py).
"""
import pytest


# -- claim G80-pcie: a dual-port 10GbE card at line rate needs Gen2 x8 -----------------------
G80 = ["run.warmup_s=0.02", "run.measure_s=0.05", "run.replications=1"]


@pytest.mark.parametrize("experiment", ["g80_pcie_gen1_x8", "g80_pcie_gen2_x8"])
def test_g80_dual_port_card_reaches_line_rate_only_from_gen2_x8(compose, run_one, experiment):
    cfg = compose([f"experiment={experiment}", *G80], short=False)
    assert cfg.host.nic_ports == 2 and cfg.host.ports_per_card == 2
    _, summary, tables = run_one(cfg)
    nics = tables["nics"].set_index("nic")
    per_port = [nics.loc[f"nic{p}", "tx_gbps"] for p in (0, 1)]
    pcie = tables["pcie"].set_index("direction")
    if cfg.pcie.gen == 1:
        # the downstream link (TX data) saturates and holds both ports well below line rate
        assert pcie.loc["down", "util_pct"] > 99
        assert sum(per_port) < 0.8 * 2 * 10.0
    else:
        assert pcie.loc["down", "util_pct"] < 80
        assert min(per_port) > 9.8  # wire bytes, framing included: line rate on both ports
