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
# # e1000 to vmxnet3: what the migration buys, by socket size
#
# The device study (`dev_e1000_64_10g_stream`: a 1-vCPU 64-bit Windows 2003 VM, 3 netperf
# sessions over 10GbE) on ESX 4.0, the first hypervisor with vmxnet3, with the emulated e1000
# and with vmxnet3, over socket sizes. The gain is vmxnet3's goodput over e1000's, and the
# CPU saved per bit (e1000's cycles per bit over vmxnet3's).

# %%
import os

import pandas as pd
import plotly.express as px

from sim.compose import compose_checked
from sim.runner import run_experiment

# VNETSIM_NOTEBOOK_SMALL=1 (the test in make test): tiny windows, two socket sizes, one
# direction; its numbers are then a smoke check, not an answer.
SMALL = os.environ.get("VNETSIM_NOTEBOOK_SMALL", "") == "1"
RUN = (["run.warmup_s=0.01", "run.measure_s=0.01", "run.replications=1"] if SMALL
       else ["run.warmup_s=0.1", "run.measure_s=0.5", "run.replications=3"])
SOCKETS_BYTES = [8192, 65536] if SMALL else [8192, 16384, 32768, 65536, 131072]
DIRECTIONS = ["tx"] if SMALL else ["tx", "rx"]
DEVICES = ["e1000", "vmxnet3"]

# %%
rows = []
for direction in DIRECTIONS:
    for socket_bytes in SOCKETS_BYTES:
        for vnic in DEVICES:
            res = run_experiment(compose_checked([
                "experiment=dev_e1000_64_10g_stream", "hypervisor=esx40", f"vnic={vnic}",
                f"workload.direction={direction}", f"workload.socket_bytes={socket_bytes}",
                *RUN]))
            rows.append({"direction": direction, "socket_bytes": socket_bytes, "vnic": vnic,
                         "goodput_gbps": res.summary["goodput_gbps"],
                         "cycles_per_bit": res.summary["cycles_per_bit"],
                         "exits_per_s": res.summary["exits_per_s"]})
df = pd.DataFrame(rows)
df

# %%
fig = px.line(df, x="socket_bytes", y="goodput_gbps", color="vnic", facet_col="direction",
              markers=True, log_x=True, title="Goodput by socket size and device",
              labels={"socket_bytes": "socket [bytes]", "goodput_gbps": "goodput [Gbps]"})
fig.show()

# %%
wide = df.pivot_table(index=["direction", "socket_bytes"], columns="vnic",
                      values=["goodput_gbps", "cycles_per_bit"])
gain = pd.DataFrame({
    "goodput_gain": wide[("goodput_gbps", "vmxnet3")] / wide[("goodput_gbps", "e1000")],
    "cpu_per_bit_saving": wide[("cycles_per_bit", "e1000")] / wide[("cycles_per_bit", "vmxnet3")],
}).reset_index()
gain

# %%
fig = px.bar(gain.melt(id_vars=["direction", "socket_bytes"], var_name="gain (x)"),
             x="socket_bytes", y="value", color="gain (x)", barmode="group",
             facet_col="direction", title="vmxnet3 over e1000 (1 = no change)",
             labels={"socket_bytes": "socket [bytes]", "value": "ratio"})
fig.update_xaxes(type="category")
fig.add_hline(y=1.0, line_dash="dash")
fig.show()
