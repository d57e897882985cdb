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
# # Multicast receivers per host, with and without splitRxMode
#
# The multicast study (`mc_default_40k`, `mc_split_40k`: 1-vCPU RHEL VMs on vSphere 5.0 each
# receive 800-byte datagrams at 40K/s from one group) swept over the number of receiving VMs,
# with splitRxMode off and on. The answer is the largest swept count at which every receiver
# loses at most `LOSS_MAX` of its datagrams (the study's 0.01%).

# %%
import os

import pandas as pd
import plotly.express as px

from sim.compose import compose_checked
from sim.runner import run_experiment

# VNETSIM_NOTEBOOK_SMALL=1 (the test in make test): tiny windows and two counts; a 10 ms
# window holds 400 datagrams per receiver, far too few to judge 0.01% loss: a smoke check.
SMALL = os.environ.get("VNETSIM_NOTEBOOK_SMALL", "") == "1"
RUN = (["run.warmup_s=0.01", "run.measure_s=0.01", "run.replications=1"] if SMALL
       else ["run.warmup_s=0.1", "run.measure_s=0.25", "run.replications=2"])
VMS = [8, 28] if SMALL else [1, 4, 8, 12, 16, 20, 24, 28, 32, 36]
MODES = {"splitRxMode off": "mc_default_40k", "splitRxMode on": "mc_split_40k"}
LOSS_MAX = 1e-4  # per receiver
FLOOR = 1e-7  # loss-free points are drawn here on the log axis

# %%
rows = []
for mode, experiment in MODES.items():
    for vms in VMS:
        res = run_experiment(compose_checked([f"experiment={experiment}",
                                              f"workload.vms={vms}", *RUN]))
        per_receiver = res.tables["multicast"].groupby("vm")["loss_ratio"].mean()
        rows.append({"mode": mode, "vms": vms, "worst_receiver_loss": per_receiver.max(),
                     "mean_loss": per_receiver.mean(),
                     "host_cpu_util_pct": res.summary["host_cpu_util_pct"]})
df = pd.DataFrame(rows)
df

# %%
shown = df.assign(worst_receiver_loss=df["worst_receiver_loss"].clip(lower=FLOOR))
fig = px.line(shown, x="vms", y="worst_receiver_loss", color="mode", markers=True, log_y=True,
              title=f"Worst receiver's loss (limit {LOSS_MAX:.0e}; no loss drawn at {FLOOR:.0e})",
              labels={"vms": "receiving VMs", "worst_receiver_loss": "loss ratio"})
fig.add_hline(y=LOSS_MAX, line_dash="dash")
fig.show()

# %%
fig = px.line(df, x="vms", y="host_cpu_util_pct", color="mode", markers=True,
              title="Host CPU", labels={"vms": "receiving VMs", "host_cpu_util_pct": "busy [%]"})
fig.show()

# %%
for mode, part in df.groupby("mode"):
    ok = part[part["worst_receiver_loss"] <= LOSS_MAX]
    answer = int(ok["vms"].max()) if not ok.empty else 0
    print(f"{mode}: {answer} receivers per host at <= {LOSS_MAX:.2%} loss each "
          f"(of the counts swept: {VMS})")
