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
# # NUMA placement: what if?
#
# The NUMA study (`v6_numa_40g_default`: a 1-vCPU RHEL6 VM on vSphere 6.0 receives over 40GbE,
# 4 netperf sessions, R720 with two sockets): what would change if the card sat in a slot of
# the other socket (`host.numa.card_node`), and if NUMA-aware I/O placed the networking
# contexts and the VM on the card's node (`host.placement=numa_io` with the study's threshold
# 100) instead of the default placement on node 0?

# %%
import os

import pandas as pd
import plotly.express as px

from sim.compose import compose_checked
from sim.runner import run_experiment

# VNETSIM_NOTEBOOK_SMALL=1 (the test in make test): tiny windows, the 40GbE card only; its
# numbers are then a smoke check, not an answer.
SMALL = os.environ.get("VNETSIM_NOTEBOOK_SMALL", "") == "1"
RUN = (["run.warmup_s=0.01", "run.measure_s=0.01", "run.replications=1"] if SMALL
       else ["run.warmup_s=0.1", "run.measure_s=0.5", "run.replications=3"])
CARDS = {"40GbE": "v6_numa_40g_default"} if SMALL else {
    "40GbE": "v6_numa_40g_default", "10GbE": "v6_numa_10g_default"}
PLACEMENTS = {"default": ["host.placement=pinned", "host.numa_io_threshold_pct=0"],
              "NUMA I/O": ["host.placement=numa_io", "host.numa_io_threshold_pct=100"]}

# %%
rows, contexts = [], []
for card, experiment in CARDS.items():
    for node in (0, 1):
        for placement, keys in PLACEMENTS.items():
            res = run_experiment(compose_checked([f"experiment={experiment}",
                                                  f"host.numa.card_node={node}", *keys, *RUN]))
            rows.append({"card": card, "card_node": node, "placement": placement,
                         **{k: res.summary[k] for k in ("goodput_gbps", "cycles_per_bit",
                                                        "numa_remote_cycles_pct",
                                                        "host_cpu_util_pct")}})
            ctx = res.tables["contexts"]
            contexts.append(ctx[ctx["host"] == "host"].groupby("context", as_index=False)
                            [["numa_node", "util_pct"]].mean().assign(
                                card=card, card_node=node, placement=placement))
df, contexts = pd.DataFrame(rows), pd.concat(contexts, ignore_index=True)
df

# %%
long = df.melt(id_vars=["card", "card_node", "placement"],
               value_vars=["goodput_gbps", "cycles_per_bit", "numa_remote_cycles_pct"])
fig = px.bar(long, x="card_node", y="value", color="placement", barmode="group",
             facet_row="variable", facet_col="card", title="Card's node x placement",
             labels={"card_node": "the card's NUMA node"}, height=700)
fig.update_yaxes(matches=None)
fig.update_xaxes(type="category")
fig.show()

# %%
busy = contexts[contexts["util_pct"] > 1]
fig = px.scatter(busy, x="context", y="numa_node", color="placement", symbol="card",
                 facet_col="card_node", title="Where the busy contexts run (node)",
                 labels={"card_node": "card on node"})
fig.show()

# %%
base = df[(df["card_node"] == 1) & (df["placement"] == "default")].set_index("card")
for (card, node, placement), row in df.set_index(["card", "card_node", "placement"]).iterrows():
    b = base.loc[card]
    print(f"{card}, card on node {node}, {placement}: goodput "
          f"{row['goodput_gbps'] / b['goodput_gbps'] - 1:+.1%}, cycles per bit "
          f"{row['cycles_per_bit'] / b['cycles_per_bit'] - 1:+.1%} (vs the study's default)")
