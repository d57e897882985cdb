# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # VMs per 10GbE port for a per-VM bandwidth target
#
# How many VMs can share one 10GbE port while each still gets at least `TARGET_GBPS`?
# The 1-16 VM scaling study (`e35_rx_scaling`, `e35_tx_scaling`: 1-vCPU RHEL5 VMs, 5 netperf
# sessions each, NetQueue) is swept over the number of VMs, in both directions. The answer is
# the largest swept count whose *slowest* VM still meets the target (mean over replications).

# %%
import os

import pandas as pd
import plotly.express as px

from sim.compose import compose_checked
from sim.runner import run_experiment

# VNETSIM_NOTEBOOK_SMALL=1 (the test in make test): tiny windows and three counts, so the
# notebook runs in seconds; its numbers are then a smoke check, not an answer.
SMALL = os.environ.get("VNETSIM_NOTEBOOK_SMALL", "") == "1"
RUN = (["run.warmup_s=0.01", "run.measure_s=0.01", "run.replications=1"] if SMALL
       else ["run.warmup_s=0.1", "run.measure_s=0.3", "run.replications=2"])
VMS = [2, 8, 14] if SMALL else list(range(1, 17))
DIRECTIONS = ["rx"] if SMALL else ["rx", "tx"]
TARGET_GBPS = 1.0  # goodput every VM must get

# %%
rows = []
for direction in DIRECTIONS:
    for vms in VMS:
        res = run_experiment(compose_checked([f"experiment=e35_{direction}_scaling",
                                              f"workload.vms={vms}", *RUN]))
        per_vm = res.tables["vms"].groupby("vm")["goodput_gbps"].mean()
        rows.append({"direction": direction, "vms": vms,
                     "slowest_vm_gbps": per_vm.min(), "mean_vm_gbps": per_vm.mean(),
                     "total_gbps": res.summary["goodput_gbps"],
                     "host_cpu_util_pct": res.summary["host_cpu_util_pct"]})
df = pd.DataFrame(rows)
df

# %%
long = df.melt(id_vars=["direction", "vms"], value_vars=["slowest_vm_gbps", "mean_vm_gbps"],
               var_name="per VM", value_name="goodput_gbps")
fig = px.line(long, x="vms", y="goodput_gbps", color="per VM", facet_col="direction",
              markers=True, title=f"Goodput per VM on one 10GbE port (target {TARGET_GBPS} Gbps)",
              labels={"vms": "VMs on the port", "goodput_gbps": "goodput per VM [Gbps]"})
fig.add_hline(y=TARGET_GBPS, line_dash="dash")
fig.show()

# %%
fig = px.line(df, x="vms", y=["total_gbps", "host_cpu_util_pct"], facet_col="direction",
              markers=True, title="What the port and the host carry",
              labels={"vms": "VMs on the port", "value": "Gbps / % busy"})
fig.show()

# %%
for direction, part in df.groupby("direction"):
    ok = part[part["slowest_vm_gbps"] >= TARGET_GBPS]
    answer = int(ok["vms"].max()) if not ok.empty else 0
    print(f"{direction}: {answer} VMs per 10GbE port keep every VM at >= {TARGET_GBPS} Gbps "
          f"(of the counts swept: {VMS})")
