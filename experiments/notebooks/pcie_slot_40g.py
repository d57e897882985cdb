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
# # Which PCIe slot for a dual-port 40GbE card?
#
# The PCIe study's host (`g80_pcie_gen2_x8`: R820, vSphere 5.5, 1-vCPU RHEL6 VMs sending bulk
# TCP on both ports of one card) with a dual-port Mellanox ConnectX-3 40GbE card, in each slot
# generation. The cheapest slot that is enough is the first whose goodput is within
# `WITHIN` of the fastest slot's; the busiest resource of each run says what limits it.

# %%
import dataclasses
import os

import pandas as pd
import plotly.express as px

from sim.compose import compose_checked
from sim.report import busiest
from sim.runner import run_experiment

# VNETSIM_NOTEBOOK_SMALL=1 (the test in make test): tiny windows, two slots, two VMs per port;
# its numbers are then a smoke check, not an answer.
SMALL = os.environ.get("VNETSIM_NOTEBOOK_SMALL", "") == "1"
RUN = (["run.warmup_s=0.01", "run.measure_s=0.01", "run.replications=1"] if SMALL
       else ["run.warmup_s=0.1", "run.measure_s=0.2", "run.replications=2"])
SLOTS = ["gen2_x8", "gen3_x8"] if SMALL else ["gen1_x8", "gen2_x8", "gen3_x8"]  # cheapest first
VMS = 4 if SMALL else 8  # VM i on port i mod 2: enough vCPUs that the VMs are not the limit
WITHIN = 0.02

# %%
rows, limits = [], []
for slot in SLOTS:
    res = run_experiment(compose_checked(["experiment=g80_pcie_gen2_x8",
                                          "nic=mellanox_cx3_40g", f"pcie={slot}",
                                          f"workload.vms={VMS}", *RUN]))
    nics = res.tables["nics"]
    ports = nics[~nics["nic"].str.startswith("peer")].groupby("nic")["tx_gbps"].mean()
    pcie = res.tables["pcie"].groupby("direction")["util_pct"].mean()
    rows.append({"slot": slot, "goodput_gbps": res.summary["goodput_gbps"],
                 **{f"{nic}_wire_gbps": g for nic, g in ports.items()},
                 **{f"pcie_{d}_util_pct": u for d, u in pcie.items()}})
    top = busiest({"config": dataclasses.asdict(res.config), "tables": res.tables})
    limits.append(top.assign(slot=slot))
df, limits = pd.DataFrame(rows), pd.concat(limits, ignore_index=True)
df

# %%
fig = px.bar(df, x="slot", y=[c for c in df if c.endswith("_wire_gbps")], barmode="group",
             title="Wire rate per 40GbE port by slot",
             labels={"value": "Gbps on the wire", "variable": "port"})
fig.show()

# %%
fig = px.bar(limits, x="slot", y="util_pct", color="kind", barmode="group",
             hover_data=["where"], title="The busiest core, context, link and PCIe direction",
             labels={"util_pct": "busy / utilised [%]"})
fig.show()

# %%
best = df["goodput_gbps"].max()
enough = df[df["goodput_gbps"] >= (1 - WITHIN) * best]
print(f"cheapest slot within {WITHIN:.0%} of the best goodput ({best:.1f} Gbps): "
      f"{enough.iloc[0]['slot']}")
print(limits[limits.groupby("slot")["util_pct"].transform("max") == limits["util_pct"]]
      [["slot", "kind", "where", "util_pct"]].to_string(index=False))
