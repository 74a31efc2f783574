"""Plotly figures for the complexity page: cost curves against n, crossovers, measured timings."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from attnviz.complexity import costs as cx
from attnviz.complexity.measure import IMPLEMENTATIONS, PREDICTED_SLOPE, SHORT_NAMES, Measurement, fit_slope
from attnviz.units import human_bytes, human_flops

# One colour per variant, stable across figures.
COLORS = {
    "full": "#1f77b4", "mha": "#d62728", "flash": "#2ca02c", "linear": "#9467bd",
    "window": "#ff7f0e", "sparse": "#8c564b", "gqa": "#e377c2", "mqa": "#17becf",
    "naive": "#d62728", "sdpa": "#2ca02c", "ffn": "#7f7f7f", "rnn": "#ff7f0e",
}
DASHES = {"gqa": "dot", "mqa": "dash", "flash": "dashdot"}


def _fmt(kind: str):
    return human_bytes if kind == "bytes" else human_flops


LEGEND_BELOW = dict(orientation="h", x=0, y=-0.2, xanchor="left", yanchor="top", font=dict(size=12))


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 480,
            legend_below: bool = False) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=16)),
        height=height, margin=dict(l=70, r=20, t=50, b=50),
        hovermode="closest",
        legend=dict(x=0.01, y=0.99, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.85)",
                    bordercolor="#ddd", borderwidth=1, font=dict(size=12)),
        font=dict(size=14),
    )
    if legend_below:
        fig.update_layout(legend=LEGEND_BELOW, margin=dict(l=70, r=20, t=50, b=110))
    fig.update_xaxes(type="log", title=x_title, exponentformat="SI", showgrid=True)
    fig.update_yaxes(type="log", title=y_title, exponentformat="SI", showgrid=True)
    return fig


def _mark_n(fig: go.Figure, n: int, label: str | None = None):
    fig.add_vline(x=n, line=dict(color="#444", width=1, dash="dot"),
                  annotation_text=label or f"n = {n:,}", annotation_position="top left")


def variant_curves(cfg: cx.AttentionConfig, metric: str, variants: Sequence[str], ns=None) -> go.Figure:
    """Log-log curves of one metric (a key of cx.METRICS) against n, one trace per variant,
    the chosen n marked; hover shows n and the value in human units."""
    if metric not in cx.METRICS:
        raise cx.BadInput(f"Unknown metric {metric!r}.")
    label, kind = cx.METRICS[metric]
    fmt = _fmt(kind)
    ns = cx.length_grid(cfg.seq_len) if ns is None else np.asarray(ns, dtype=np.int64)
    fig = go.Figure()
    for key in variants:
        y = cx.curve(cfg, metric, key, ns)
        keep = y > 0  # a log axis cannot show zeros
        fig.add_trace(go.Scatter(
            x=ns[keep], y=y[keep], mode="lines", name=cx.VARIANTS[key].label,
            line=dict(color=COLORS[key], width=2.5, dash=DASHES.get(key, "solid")),
            customdata=[[f"{int(n):,}", fmt(v)] for n, v in zip(ns[keep], y[keep])],
            hovertemplate=f"<b>{cx.VARIANTS[key].label}</b><br>n = %{{customdata[0]}}<br>"
                          f"%{{customdata[1]}}<extra></extra>",
        ))
    _mark_n(fig, cfg.seq_len)
    return _layout(fig, label, "sequence length n (tokens)", "bytes" if kind == "bytes" else "FLOPs")


def ffn_crossover(cfg: cx.AttentionConfig) -> go.Figure:
    """Per-token, per-layer FLOPs: attention core 4·n·d against the feed-forward 2·m·d·d_ff."""
    ns = cx.length_grid(max(cfg.seq_len, int(cx.ffn_crossover(cfg))))
    d = cfg.d_model
    attn = 4.0 * ns * d
    ffn = np.full(ns.shape, 2.0 * cx.ffn_matrices(cfg) * d * cfg.d_ff)
    proj = np.full(ns.shape, 4.0 * d * d + 4.0 * d * cfg.n_kv_heads * cfg.d_head)
    fig = go.Figure()
    for y, name, key, dash in ((attn, "Attention core  4·n·d", "mha", "solid"),
                               (ffn, f"Feed-forward  2·{cx.ffn_matrices(cfg)}·d·d_ff", "ffn", "solid"),
                               (proj, "Q, K, V, O projections", "gqa", "dot")):
        fig.add_trace(go.Scatter(
            x=ns, y=y, mode="lines", name=name, line=dict(color=COLORS[key], width=2.5, dash=dash),
            customdata=[[f"{int(n):,}", human_flops(v)] for n, v in zip(ns, y)],
            hovertemplate=f"<b>{name}</b><br>n = %{{customdata[0]}}<br>%{{customdata[1]}} per token"
                          f"<extra></extra>"))
    n_star = cx.ffn_crossover(cfg)
    y_star = 4.0 * n_star * d
    fig.add_trace(go.Scatter(
        x=[n_star], y=[y_star], mode="markers+text", name="crossover",
        marker=dict(size=12, color="black", symbol="x"), text=[f"  n* = {n_star:,.0f}"],
        textposition="bottom right", hovertemplate=f"crossover n* = {n_star:,.0f}<br>"
                                                   f"{human_flops(y_star)} per token<extra></extra>"))
    _mark_n(fig, cfg.seq_len)
    return _layout(fig, "Per token and layer: attention against the feed-forward block",
                   "sequence length n (tokens)", "FLOPs per token per layer")


def rnn_comparison(cfg: cx.AttentionConfig) -> go.Figure:
    """Per-layer FLOPs against n: self-attention 4·n²·d against a vanilla RNN 4·n·d²."""
    ns = cx.length_grid(max(cfg.seq_len, cfg.d_model))
    d = float(cfg.d_model)
    fig = go.Figure()
    for y, name, key in ((4.0 * ns ** 2 * d, "Self-attention  4·n²·d (1 parallel step)", "mha"),
                         (4.0 * ns * d ** 2, "RNN  4·n·d² (n sequential steps)", "rnn")):
        fig.add_trace(go.Scatter(
            x=ns, y=y, mode="lines", name=name, line=dict(color=COLORS[key], width=2.5),
            customdata=[[f"{int(n):,}", human_flops(v)] for n, v in zip(ns, y)],
            hovertemplate=f"<b>{name}</b><br>n = %{{customdata[0]}}<br>%{{customdata[1]}} per layer"
                          f"<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=[d], y=[4.0 * d ** 3], mode="markers+text", name="equal at n = d",
        marker=dict(size=12, color="black", symbol="x"), text=[f"  n = d = {cfg.d_model:,}"],
        textposition="bottom right", hovertemplate=f"n = d = {cfg.d_model:,}<extra></extra>"))
    _mark_n(fig, cfg.seq_len)
    return _layout(fig, "One layer over n tokens: attention against an RNN of the same width",
                   "sequence length n (tokens)", "FLOPs per layer")


def measured_times(measurements: Sequence[Measurement]) -> go.Figure:
    """Measured seconds against n (markers), the fitted log-log line per implementation, and
    the predicted slope drawn through the largest measured point (dashed)."""
    fig = go.Figure()
    for impl in IMPLEMENTATIONS:
        label = SHORT_NAMES[impl]
        ms = sorted((m for m in measurements if m.impl == impl and m.seconds), key=lambda m: m.n)
        if not ms:
            continue
        ns = np.array([m.n for m in ms], dtype=np.float64)
        ts = np.array([m.seconds for m in ms])
        color = COLORS.get(impl, "#333")
        fit = None
        if len(ms) >= 2:
            fit = fit_slope(ns, ts)
        name = label + (f"  (slope {fit[0]:.2f})" if fit else "")
        fig.add_trace(go.Scatter(
            x=ns, y=ts * 1e3, mode="markers", name=name, marker=dict(size=10, color=color),
            customdata=[[f"{m.n:,}", f"{m.seconds * 1e3:.3g}", f"{m.gflops_per_s:.3g}"] for m in ms],
            hovertemplate=f"<b>{label}</b><br>n = %{{customdata[0]}}<br>%{{customdata[1]}} ms"
                          f"<br>%{{customdata[2]}} GFLOP/s<extra></extra>"))
        if fit:
            xs = np.geomspace(ns[0], ns[-1], 20)
            fig.add_trace(go.Scatter(
                x=xs, y=np.exp(fit[1]) * xs ** fit[0] * 1e3, mode="lines", showlegend=False,
                line=dict(color=color, width=2), hoverinfo="skip"))
        p = PREDICTED_SLOPE[impl]
        xs = np.geomspace(ns[0], ns[-1], 20)
        fig.add_trace(go.Scatter(
            x=xs, y=ts[-1] * (xs / ns[-1]) ** p * 1e3, mode="lines", showlegend=False,
            line=dict(color=color, width=1.5, dash="dash"),
            hovertemplate=f"predicted slope {p:g} for {label}<extra></extra>"))
    return _layout(fig, "Time: measured (dots, fitted line), predicted slope (dashed)",
                   "sequence length n (tokens)", "milliseconds (one thread)", height=500, legend_below=True)


def measured_memory(measurements: Sequence[Measurement]) -> go.Figure:
    """Measured peak allocation (markers) against the prediction (lines) per implementation."""
    fig = go.Figure()
    for impl in IMPLEMENTATIONS:
        label = SHORT_NAMES[impl]
        ms = sorted((m for m in measurements if m.impl == impl), key=lambda m: m.n)
        if not ms:
            continue
        color = COLORS.get(impl, "#333")
        fig.add_trace(go.Scatter(
            x=[m.n for m in ms], y=[m.predicted_bytes for m in ms], mode="lines", showlegend=False,
            line=dict(color=color, width=1.5, dash="dash"),
            customdata=[[f"{m.n:,}", human_bytes(m.predicted_bytes)] for m in ms],
            hovertemplate=f"<b>{label}</b> predicted<br>n = %{{customdata[0]}}<br>%{{customdata[1]}}"
                          f"<extra></extra>"))
        got = [m for m in ms if m.peak_bytes]
        if got:
            fig.add_trace(go.Scatter(
                x=[m.n for m in got], y=[m.peak_bytes for m in got], mode="markers", name=label,
                marker=dict(size=10, color=color),
                customdata=[[f"{m.n:,}", human_bytes(m.peak_bytes)] for m in got],
                hovertemplate=f"<b>{label}</b> measured<br>n = %{{customdata[0]}}<br>%{{customdata[1]}}"
                              f"<extra></extra>"))
    return _layout(fig, "Peak memory of one call: measured (dots), predicted (dashed)",
                   "sequence length n (tokens)", "bytes", height=500, legend_below=True)
