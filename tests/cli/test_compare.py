"""`run.engine=fluid` and `python -m sim compare`: the fluid engine behind the same CLI."""


def test_fluid_engine_runs_through_the_cli_and_writes_its_tables(sim_cli, tmp_path):
    proc = sim_cli("run", "run.engine=fluid", "experiment=e35_rx_single_vm",
                   f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr
    assert "regime" in proc.stdout and "cpu-bound" in proc.stdout
    assert (tmp_path / "bottleneck.csv").exists() and (tmp_path / "results.json").exists()


def test_fluid_refuses_a_kind_it_does_not_model_in_one_line(sim_cli):
    proc = sim_cli("run", "run.engine=fluid", "experiment=dev_vmxnet_64_10g_rr",
                   "workload.sessions_per_vm=2")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "run.engine=fluid" in proc.stderr and "tcp_rr with 2 sessions" in proc.stderr


def test_compare_prints_both_engines(sim_cli):
    proc = sim_cli("compare", "experiment=e35_rx_single_vm", "run.measure_s=0.02",
                   "run.warmup_s=0.02", "run.replications=1")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "des" in lines[1] and "fluid" in lines[1] and "rel_diff" in lines[1]
    assert any(line.split()[0] == "goodput_gbps" for line in lines[2:])


def test_compare_all_writes_the_table_and_refuses_bad_input(sim_cli, tmp_path):
    out = tmp_path / "v.csv"
    proc = sim_cli("compare", "--all", "--quick", "--csv", str(out), "run.measure_s=0.01",
                   "run.warmup_s=0.01", "e35_rx_single_vm")
    assert proc.returncode == 0, proc.stderr
    head = out.read_text().splitlines()
    assert len(head) == 2 and "goodput_gbps_rel_diff" in head[0] and "des_steady" in head[0]
    for bad in (["--all", "no_such_experiment"], ["--all", "run.measure_s=x"],
                ["--all", "--csv"], ["--all", "--frobnicate"]):
        proc = sim_cli("compare", *bad)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (bad, proc.stderr)
