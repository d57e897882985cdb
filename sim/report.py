"""``python -m sim report DIR [--out FILE]``: a self-contained HTML page for a run or a sweep.

A run (``DIR/results.json``, from the DES or the fluid engine): the summary with 95% half-widths,
goodput per VM and per flow, CPU per core and per context stacked by cost term (G cycles/s from
the ``cost_terms`` table), drops by place and reason, fairness (Jain index and the spread of
per-VM goodput; multicast: loss per receiver), and the bottleneck: the busiest core, context,
link and PCIe direction read from the ``cores``, ``contexts``, ``nics``/``links`` and ``pcie``
tables, plus the fluid engine's own ``bottleneck`` table when there is one.

A sweep (a directory whose sub-directories hold runs, as ``run --multirun`` writes them): every
numeric summary metric against each swept key (a config column that varies), one trace per
value of the other swept keys, mean over replications with 95% half-widths (the points are read
with ``sim.collect.collect``; a sweep with an unfinished point is refused).

Plotly's library is embedded once (``include_plotlyjs=True``): the page opens offline. Values
shown are the run's own; nothing is recomputed but means over replications. Left out: PNG
export (kaleido is the optional ``[png]`` extra: ``fig.write_image``), time series (the result
files hold window means only).
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from sim.files import write_atomic
from sim.results import INCOMPLETE
from sim.runner import summarize

USAGE = """usage: python -m sim report DIR [--out FILE]

Writes a self-contained HTML page (plotly embedded, opens offline) for DIR: a run directory
(its results.json and tables) or a sweep directory (run --multirun: one sub-directory per
point). Default FILE: DIR/report.html. docs/report.md says what the page shows."""


class ReportError(ValueError):
    """Bad input to the report, told to the user as one line."""


# ----------------------------------------------------------------------------- loading

def load_run(run_dir: Path) -> dict:
    """``results.json`` of a finished run (``ReportError`` for an unfinished or foreign one)."""
    path = run_dir / "results.json"
    if (run_dir / INCOMPLETE).exists() or not path.exists():
        raise ReportError(f"DIR={str(run_dir)!r}: the run is incomplete (an {INCOMPLETE} marker "
                          f"or no results.json); allowed a finished run or sweep directory")
    try:
        result = json.loads(path.read_text())
        result["tables"] = {k: pd.DataFrame(v) for k, v in result["tables"].items()}
        result["summary"], result["config"]  # noqa: B018 (both must be there)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ReportError(f"DIR={str(path)!r}: not a vnetsim results.json "
                          f"({type(exc).__name__}); allowed a run or sweep directory") from None
    return result


def sweep_frame(sweep_dir: Path) -> pd.DataFrame:
    """One row per point and replication (``sim.collect.collect``: ``config.*`` dotted
    columns, every summary metric); ``ReportError`` if any point did not finish."""
    from sim.collect import CollectError, collect
    try:
        df = collect(sweep_dir)
    except CollectError as exc:
        raise ReportError(str(exc)) from None
    if df.attrs.get("incomplete"):
        todo = df.attrs["incomplete"]
        raise ReportError(f"DIR={str(sweep_dir)!r}: {len(todo)} point(s) incomplete, e.g. "
                          f"{todo[0]!r}; allowed a sweep whose every point finished")
    return df


# ----------------------------------------------------------------------------- run figures

def _mean(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean over replications of every numeric column, by ``keys``."""
    return df.groupby(keys, sort=False).mean(numeric_only=True).reset_index().drop(
        columns="replication", errors="ignore")


def _ci95(values) -> float:
    return summarize([{"x": v} for v in values])[1]["x"] or 0.0


def _with_ci(df: pd.DataFrame, keys: list[str], col: str) -> pd.DataFrame:
    """Mean and 95% half-width of ``col`` over replications, by ``keys``."""
    g = df.groupby(keys, sort=False)[col]
    return pd.DataFrame({"mean": g.mean(), "ci95": g.apply(_ci95)}).reset_index()


def _host_side(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of the host under test (DES: ``host == "host"``; fluid: ``host`` is True)."""
    if "host" not in df:
        return df
    return df[df["host"].map(lambda h: h is True or h == "host")]


def _per_vm(tables: dict) -> pd.DataFrame | None:
    """Goodput per VM (and replication): the ``vms`` table, or (fluid) the flows summed."""
    vms, flows = tables.get("vms"), tables.get("flows")
    if (vms is None or vms.empty) and flows is not None and not flows.empty:
        vms = flows.groupby([c for c in ("replication", "vm") if c in flows],
                            as_index=False)["goodput_gbps"].sum()
    return vms


def goodput_figures(tables: dict) -> list:
    figs = []
    vms, flows = _per_vm(tables), tables.get("flows")
    for name, df, key in (("VM", vms, "vm"), ("flow", flows, "flow")):
        if df is None or df.empty:
            continue
        s = _with_ci(df, [key], "goodput_gbps")
        figs.append(go.Figure(go.Bar(x=s[key].astype(str), y=s["mean"],
                                     error_y=dict(array=s["ci95"])),
                              layout=dict(title=f"Goodput per {name} (mean, 95% half-width)",
                                          xaxis_title=name, yaxis_title="goodput [Gbps]")))
    return figs


def cpu_figures(tables: dict) -> list:
    figs = []
    cores = tables.get("cores")
    if cores is not None and not cores.empty:
        c = _mean(_host_side(cores), ["core"])
        figs.append(go.Figure(go.Bar(x=c["core"].astype(str), y=c["util_pct"]),
                              layout=dict(title="CPU per core of the host (busy %)",
                                          xaxis_title="core", yaxis_title="busy [%]")))
    terms = tables.get("cost_terms")
    if terms is None or terms.empty:
        return figs
    keys = ["context", "term"] + (["host"] if "host" in terms else [])
    t = _mean(terms, keys)
    t["gcycles_per_s"] = t["cycles_per_s"] / 1e9
    fig = go.Figure(layout=dict(title="CPU per context, stacked by cost term", barmode="stack",
                                xaxis_title="context", yaxis_title="G cycles/s"))
    color = {term: _color(i) for i, term in enumerate(sorted(t["term"].unique()))}
    for term, part in t.groupby("term", sort=True):
        fig.add_trace(go.Bar(x=part["context"], y=part["gcycles_per_s"], name=term,
                             marker_color=color[term]))
    figs.append(fig)
    contexts = tables.get("contexts")
    if contexts is not None and "core" in contexts:  # DES: each context has a core
        where = _mean(_host_side(contexts), ["context"])[["context", "core"]]
        on_core = _host_side(t).merge(where, on="context")
        fig = go.Figure(layout=dict(title="CPU per core of the host, stacked by cost term",
                                    barmode="stack", xaxis_title="core",
                                    yaxis_title="G cycles/s"))
        for term, part in on_core.groupby("term", sort=True):
            p = part.groupby("core", as_index=False)["gcycles_per_s"].sum()
            fig.add_trace(go.Bar(x=p["core"].astype(int).astype(str), y=p["gcycles_per_s"],
                                 name=term, marker_color=color[term]))
        figs.append(fig)
    return figs


def drops_figure(tables: dict, measure_s: float):
    drops = tables.get("drops")
    if drops is None or drops.empty:
        return "<p>Drops: none (no frame was dropped in the measurement window).</p>"
    d = _mean(drops, ["place", "reason"]) if "replication" in drops else drops
    fig = go.Figure(layout=dict(title="Drops by place and reason (mean over replications)",
                                barmode="stack", xaxis_title="place",
                                yaxis_title="frames dropped per second"))
    for reason, part in d.groupby("reason", sort=True):
        fig.add_trace(go.Bar(x=part["place"], y=part["frames"] / measure_s, name=reason))
    return fig


def fairness_figures(result: dict) -> list:
    figs, tables, summary = [], result["tables"], result["summary"]
    vms = _per_vm(tables)
    if vms is not None and len(vms["vm"].unique()) > 1:
        per_vm = _mean(vms, ["vm"])
        jain = summary.get("jain_index")
        std = summary.get("per_vm_goodput_std_gbps")
        title = "Fairness: per-VM goodput spread" + (
            f" (Jain index {jain:.4f}, std {std:.3g} Gbps)" if jain is not None and std is not None
            else "")
        figs.append(go.Figure(go.Box(y=per_vm["goodput_gbps"], boxpoints="all",
                                     text=per_vm["vm"].astype(str), name="VMs"),
                              layout=dict(title=title, yaxis_title="goodput per VM [Gbps]",
                                          yaxis_rangemode="tozero")))
    elif vms is not None and not vms.empty:
        figs.append("<p>One VM: no spread between VMs to show (Jain index 1).</p>")
    mc = tables.get("multicast")
    if mc is not None and not mc.empty:
        m = _with_ci(mc, ["vm"], "loss_ratio")
        figs.append(go.Figure(go.Bar(x=m["vm"].astype(str), y=m["mean"],
                                     error_y=dict(array=m["ci95"])),
                              layout=dict(title="Multicast loss per receiver",
                                          xaxis_title="receiver VM", yaxis_title="loss ratio")))
    return figs


def busiest(result: dict) -> pd.DataFrame:
    """The busiest context, core, link direction and PCIe direction of the host, by mean
    utilisation over replications; the one nearest 100% saturates first."""
    tables, rows = result["tables"], []

    def top(kind, df, label, col="util_pct"):
        if df is not None and not df.empty and col in df:
            best = df.loc[df[col].idxmax()]
            rows.append({"kind": kind, "where": label(best), "util_pct": float(best[col])})

    ctx = tables.get("contexts")
    if ctx is not None and not ctx.empty:
        cols = [c for c in ("context", "core") if c in ctx]
        top("context", _mean(_host_side(ctx), cols), lambda r: r["context"] + (
            f" (core {int(r['core'])})" if "core" in r else ""))
    cores = tables.get("cores")
    if cores is not None and not cores.empty:
        top("core", _mean(_host_side(cores), ["core"]), lambda r: f"core {int(r['core'])}")
    nics, line = tables.get("nics"), result["config"]["nic"]["link"]["line_rate_gbps"]
    if nics is not None and not nics.empty:  # DES: the host's ports against the line rate
        n = _mean(nics[~nics["nic"].str.startswith("peer")], ["nic"])
        links = pd.concat([pd.DataFrame({"link": n["nic"] + " " + d,
                                         "util_pct": 100 * n[f"{d}_gbps"] / line})
                           for d in ("tx", "rx")])
        top("link", links.reset_index(drop=True), lambda r: r["link"])
    top("link", tables.get("links"), lambda r: r["link"])  # fluid
    pcie = tables.get("pcie")
    if pcie is not None and not pcie.empty:
        keys = ["channel"] if "channel" in pcie else ["card", "direction"]
        top("PCIe direction", _mean(pcie, keys),
            lambda r: r["channel"] if "channel" in r else f"{r['card']} {r['direction']}")
    # stable: at a tie the context is named before the core it runs on
    return pd.DataFrame(rows).sort_values("util_pct", ascending=False, kind="stable",
                                          ignore_index=True)


def bottleneck_section(result: dict) -> list:
    parts, b = [], busiest(result)
    if not b.empty:
        first = b.iloc[0]
        parts.append(f"<p>The busiest resource is the {html.escape(first['kind'])} "
                     f"<b>{html.escape(str(first['where']))}</b> at {first['util_pct']:.1f}% "
                     f"busy: it saturates first. The busiest of each kind:</p>")
        parts.append(go.Figure(go.Bar(x=b["kind"] + ": " + b["where"].astype(str),
                                      y=b["util_pct"]),
                               layout=dict(title="Bottleneck: the busiest of each kind",
                                           yaxis_title="busy / utilised [%]",
                                           yaxis_range=[0, max(105, b["util_pct"].max())])))
    fluid = result["tables"].get("bottleneck")
    if fluid is not None and not fluid.empty:
        parts.append("<p>The fluid engine's binding constraint per flow "
                     "(<code>bottleneck</code> table):</p>" + _table_html(fluid))
    return parts


def _table_html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, border=0, float_format=lambda x: f"{x:.4g}", na_rep="")


def run_sections(result: dict) -> list:
    """The page's parts for one run, in order: html strings and plotly figures."""
    cfg, tables = result["config"], result["tables"]
    ci = result.get("summary_ci95") or {}
    summary = pd.DataFrame([{"metric": k, "mean": v, "ci95": ci.get(k)}
                            for k, v in result["summary"].items()])
    engine = cfg["run"].get("engine", "des")
    how = ("fluid engine (steady state, no replications)" if engine == "fluid" else
           f"{cfg['run']['replications']} replication(s) x {cfg['run']['measure_s']} s after "
           f"{cfg['run']['warmup_s']} s warm-up, seed {cfg['run']['seed']}")
    parts = [f"<h1>vnetsim run: {html.escape(result.get('experiment', ''))}</h1>",
             f"<p>{html.escape(cfg['meta'].get('description', ''))}</p>",
             f"<p>{html.escape(how)}</p>", "<h2>Summary</h2>", _table_html(summary),
             "<h2>Goodput</h2>", *goodput_figures(tables),
             "<h2>CPU</h2>", *cpu_figures(tables),
             "<h2>Drops</h2>", drops_figure(tables, cfg["run"]["measure_s"]),
             "<h2>Fairness</h2>", *fairness_figures(result),
             "<h2>Bottleneck</h2>", *bottleneck_section(result)]
    return parts


# ----------------------------------------------------------------------------- sweep figures

def swept_keys(df: pd.DataFrame) -> list[str]:
    """Config columns that vary across points, leaving out those another swept key
    determines (``experiment=a,b`` changes many columns: the experiment's name stands for
    them), the experiment's own name first, then by how few values a key takes."""
    cols = [c for c in df.columns if c.startswith("config.")
            and c not in ("config.meta.description", "config.meta.source")]
    varying = [c for c in cols if df[c].astype(str).nunique() > 1]
    varying.sort(key=lambda c: (c != "config.meta.name", df[c].astype(str).nunique(), c))
    chosen: list[str] = []
    for c in varying:
        if not any(df.astype({k: str, c: str}).groupby(k)[c].nunique().max() == 1
                   for k in chosen):
            chosen.append(c)
    return chosen


def sweep_metrics(df: pd.DataFrame) -> list[str]:
    skip = {"replication", "point", "point_dir", "config_hash"}
    return [c for c in df.columns if not c.startswith("config.") and c not in skip
            and pd.api.types.is_numeric_dtype(df[c]) and df[c].notna().any()]


def sweep_figure(df: pd.DataFrame, key: str, keys: list[str], metrics: list[str]):
    """Each metric against ``key``: a panel per metric, a trace per value of the other keys."""
    others = [k for k in keys if k != key]
    cols = 3
    rows = -(-len(metrics) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=metrics)
    mode = "lines+markers" if pd.api.types.is_numeric_dtype(df[key]) else "markers"
    groups = df.astype({k: str for k in others}).groupby(others, sort=True) if others else \
        [("all points", df)]
    for g, (label, part) in enumerate(groups):
        label = ", ".join(f"{k.removeprefix('config.')}={v}" for k, v in
                          zip(others, label if isinstance(label, tuple) else (label,))) \
            if others else label
        for i, m in enumerate(metrics):
            s = _with_ci(part.dropna(subset=[m]), [key], m).sort_values(key)
            fig.add_trace(go.Scatter(x=s[key], y=s["mean"], error_y=dict(array=s["ci95"]),
                                     mode=mode, name=label, legendgroup=label,
                                     showlegend=i == 0, line=dict(color=_color(g))),
                          row=i // cols + 1, col=i % cols + 1)
            fig.update_xaxes(title_text=key.removeprefix("config."), row=i // cols + 1,
                             col=i % cols + 1)
    fig.update_layout(height=280 * rows, title=f"Every summary metric against "
                      f"{key.removeprefix('config.')} (mean, 95% half-width)")
    return fig


def _color(i: int) -> str:
    import plotly.colors
    palette = plotly.colors.qualitative.Plotly
    return palette[i % len(palette)]


def sweep_sections(df: pd.DataFrame, sweep_dir: Path) -> list:
    keys, metrics = swept_keys(df), sweep_metrics(df)
    points = df.drop_duplicates(subset=keys or None)[keys] if keys else df.head(1)
    parts = [f"<h1>vnetsim sweep: {html.escape(str(sweep_dir))}</h1>",
             f"<p>{len(df)} rows (points x replications); swept keys: "
             f"{html.escape(', '.join(k.removeprefix('config.') for k in keys) or 'none')}.</p>"]
    if not keys:
        parts.append("<p>No config key varies across the points: nothing to plot against.</p>")
    parts += [sweep_figure(df, k, keys, metrics) for k in keys]
    parts += ["<h2>Points</h2>", _table_html(points.rename(
        columns=lambda c: c.removeprefix("config.")))]
    return parts


# ----------------------------------------------------------------------------- page

def render(parts: list, title: str) -> str:
    """One page; plotly's library goes in once, with the first figure."""
    out = ["<!doctype html><meta charset='utf-8'>", f"<title>{html.escape(title)}</title>",
           "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}"
           "td,th{padding:2px 8px;border-bottom:1px solid #ddd;font-size:13px;text-align:right}"
           "</style>"]
    first = True
    for p in parts:
        if isinstance(p, go.Figure):
            out.append(p.to_html(full_html=False, include_plotlyjs=first,
                                 config={"responsive": True}))
            first = False
        else:
            out.append(p)
    return "\n".join(out)


def write_report(directory: str | Path, out: str | Path | None = None) -> Path:
    """Write the page for a run or sweep ``directory`` to ``out`` (default
    ``directory/report.html``) under a temporary name, renamed into place; returns its path."""
    d = Path(directory)
    if not d.is_dir():
        raise ReportError(f"DIR={str(d)!r}: no such directory; allowed a run or sweep directory")
    if (d / "results.json").exists() or (d / INCOMPLETE).exists():
        result = load_run(d)
        page = render(run_sections(result), f"vnetsim {result.get('experiment', '')}")
    else:
        df = sweep_frame(d)
        page = render(sweep_sections(df, d), f"vnetsim sweep {d.name}")
    path = Path(out) if out is not None else d / "report.html"
    return write_atomic(path, lambda tmp: Path(tmp).write_text(page), ReportError)


def main(argv: list[str]) -> int:
    from sim.validate import fail, parse_options
    dirs, rest, it = [], [], iter(argv)
    for a in it:  # ``--out FILE``: FILE is the option's, not a DIR
        if a == "--out":
            rest += [a, *([v] if (v := next(it, None)) is not None else [])]
        elif a.startswith("-") and a != "-":
            rest.append(a)
        else:
            dirs.append(a)
    opts = parse_options(rest, "report", {"out": None}, USAGE)
    if isinstance(opts, int):
        return opts
    if len(dirs) != 1:
        return fail(f"DIR={' '.join(dirs) or ''!r}: allowed exactly one run or sweep directory "
                    f"(python -m sim report DIR [--out FILE])")
    try:
        path = write_report(dirs[0], opts["out"])
    except ReportError as exc:
        return fail(str(exc))
    print(f"report: {path}")
    return 0
