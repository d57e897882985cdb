"""`python -m sim bench` runs and prints its columns (a smoke test: no figure is checked,
never a speed)."""
import json


def test_bench_runs_and_prints_the_columns(sim_cli, tmp_path):
    out = tmp_path / "bench.json"
    proc = sim_cli("bench", "--scenarios", "RR,S1", "--no-series", "--sim-s", "0.002",
                   "--warmup-s", "0.002", "--repeat", "1", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    for column in ("scenario", "sim_s/cpu_s", "sim_s/wall_s", "events/sim_s", "events/host_pkt",
                   "events/tso_seg", "rss_mb", "goodput_gbps", "cpu_util_pct", "fluid_ms",
                   "fluid_x"):
        assert column in proc.stdout, column
    rows = [line.split()[0] for line in proc.stdout.splitlines() if line[:1] not in ("#", "")]
    assert rows[1:] == ["RR", "S1"], proc.stdout
    figures = json.loads(out.read_text())["scenarios"]
    assert figures["S1"]["events"] > 0 and figures["S1"]["sim_s_per_cpu_s"] > 0
    # the fluid engine's solve of the same config, timed after the DES's window
    assert figures["S1"]["fluid_ms"] > 0 and figures["S1"]["fluid_speedup"] > 0


def test_bench_unknown_scenario_is_one_line_and_status_2(sim_cli):
    proc = sim_cli("bench", "--scenarios", "NOPE", "--no-series")
    assert proc.returncode == 2
    assert "NOPE" in proc.stderr and "S1" in proc.stderr
