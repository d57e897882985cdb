"""`python -m sim run` writes results.json and the CSV tables into Hydra's run directory.

results.json: summary, summary_ci95, replications, tables, config; the nine summary metrics in
both summary and summary_ci95 (two replications, so every half-width is a number or null).
"""
import json

import pandas as pd
import pytest

SUMMARY_KEYS = {"goodput_gbps", "wire_frames_per_s", "host_packets_per_s", "loss_ratio",
                "host_cpu_util_pct", "cycles_per_bit", "rtt_us", "jain_index",
                "per_vm_goodput_std_gbps"}
TABLES = {"flows", "vms", "cores", "contexts", "nics", "drops", "summary"}


def test_cli_run_writes_results(sim_cli, tmp_path):
    out = tmp_path / "run"
    proc = sim_cli("run", "experiment=e35_rx_single_vm", f"hydra.run.dir={out}",
                   "run.warmup_s=0.02", "run.measure_s=0.05", "run.replications=2")
    assert proc.returncode == 0, proc.stderr
    assert "goodput_gbps" in proc.stdout and "Traceback" not in proc.stderr

    res = json.loads((out / "results.json").read_text())
    assert {"summary", "summary_ci95", "replications", "tables", "config"} <= set(res)
    assert SUMMARY_KEYS <= set(res["summary"]) and SUMMARY_KEYS <= set(res["summary_ci95"])
    assert len(res["replications"]) == 2
    assert res["config"]["run"]["replications"] == 2
    assert res["config"]["workload"]["direction"] == "rx"
    g, ci = res["summary"]["goodput_gbps"], res["summary_ci95"]["goodput_gbps"]
    reps = [r["goodput_gbps"] for r in res["replications"]]
    assert g > 0 and g == sum(reps) / 2
    # the Student-t 95% half-width of two replications: t(0.975, 1) |x1 - x2| / 2
    assert ci == pytest.approx(12.706204736 * abs(reps[0] - reps[1]) / 2, rel=1e-6, abs=1e-12)

    for name in TABLES:
        table = pd.read_csv(out / f"{name}.csv")
        if name != "drops":
            assert len(table) > 0, name
    assert set(TABLES - {"summary"}) <= set(res["tables"])
    summary = pd.read_csv(out / "summary.csv")
    assert SUMMARY_KEYS <= set(summary["metric"])
    flows = pd.read_csv(out / "flows.csv")
    assert sorted(flows["replication"].unique()) == [0, 1]
    assert len(flows) == 2 * 5
