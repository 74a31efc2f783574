"""The causal analysis figures: layer × head maps (clickable), exact against estimated patching, per-MLP bars, the
residual stream by layer and position, the score split's top pairs, what a head writes, its OV and QK circuits'
top token pairs and the pruning curves."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.plotting import attach_numbers, matrix_csv, token_ticks

DIVERGING = "RdBu"  # blue above zero, red below, white at zero
SELECTED = "#111111"
MARGIN = dict(l=10, r=10, t=50, b=10)


def _limit(values) -> float:
    """Half-range of a zero-centred colour scale: the largest |value| (1 for an all-zero map)."""
    top = float(np.nanmax(np.abs(values))) if np.size(values) else 0.0
    return top if top > 0 else 1.0


def head_grid(values: np.ndarray, title: str, what: str, selected: tuple[int, int] | None = None) -> go.Figure:
    """(layer, head) values as a zero-centred diverging grid, one cell a head; transparent markers at the cell
    centres carry (layer, head) for clicks; the selected head is outlined."""
    n_layers, n_heads = values.shape
    top = _limit(values)
    fig = go.Figure(go.Heatmap(
        z=values, x=np.arange(n_heads), y=np.arange(n_layers), colorscale=DIVERGING, zmid=0, zmin=-top, zmax=top,
        colorbar=dict(title=what, thickness=12), hoverinfo="skip"))
    yy, xx = np.mgrid[0:n_layers, 0:n_heads]
    fig.add_trace(go.Scatter(  # the hover and the click: heatmaps forward no clicks
        x=xx.ravel(), y=yy.ravel(), mode="markers", customdata=np.stack([yy.ravel(), xx.ravel()], axis=1).tolist(),
        marker=dict(size=max(8, min(24, 440 // max(n_heads, n_layers))), color="rgba(0,0,0,0)", symbol="square"),
        text=[f"{v:.4f}" for v in values.ravel()], showlegend=False, name="heads",
        hovertemplate="layer %{y}, head %{x}<br>" + what + " %{text}<br><i>click to choose this head</i>"
                      "<extra></extra>"))
    if selected is not None:
        fig.add_shape(type="rect", x0=selected[1] - 0.5, x1=selected[1] + 0.5, y0=selected[0] - 0.5,
                      y1=selected[0] + 0.5, line=dict(color=SELECTED, width=2))
    fig.update_layout(title=title, height=int(min(720, max(320, 14 * n_layers + 150))), margin=MARGIN,
                      clickmode="event+select",
                      xaxis=dict(title="head", dtick=1, range=[-0.5, n_heads - 0.5], showgrid=False, zeroline=False),
                      yaxis=dict(title="layer", range=[n_layers - 0.5, -0.5],
                                 dtick=max(1, n_layers // 15), showgrid=False, zeroline=False))
    return attach_numbers(fig, lambda: matrix_csv(values, [f"layer {i}" for i in range(n_layers)],
                                                  [f"head {h}" for h in range(n_heads)], title, rows="layer",
                                                  columns="head"))


def estimate_scatter(exact: np.ndarray, estimate: np.ndarray, r: float) -> go.Figure:
    """Every head's exact patching effect against attribution patching's estimate, with the diagonal; Pearson r
    in the title."""
    n_layers, n_heads = exact.shape
    yy, xx = np.mgrid[0:n_layers, 0:n_heads]
    lo = float(min(exact.min(), estimate.min(), 0.0))
    hi = float(max(exact.max(), estimate.max(), 0.0))
    fig = go.Figure([
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="#999", dash="dot"), name="equal",
                   hoverinfo="skip"),
        go.Scatter(x=exact.ravel(), y=estimate.ravel(), mode="markers", name="heads",
                   marker=dict(size=7, color="#2c6fbb", opacity=0.75),
                   customdata=np.stack([yy.ravel(), xx.ravel()], axis=1),
                   hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>exact %{x:.4f}<br>"
                                 "estimate %{y:.4f}<extra></extra>")])
    fig.update_layout(title=f"Attribution vs exact patching, Pearson r = {r:.3f}", height=360, margin=MARGIN,
                      showlegend=False, xaxis=dict(title="exact patching (0 = corrupted, 1 = clean)"),
                      yaxis=dict(title="attribution patching estimate"))
    return fig


def layer_bars(series: dict, title: str, ytitle: str) -> go.Figure:
    """One bar per layer for each named series (layer,) side by side; hover names the layer and value."""
    fig = go.Figure()
    for name, values in series.items():
        fig.add_trace(go.Bar(x=np.arange(len(values)), y=np.asarray(values), name=name,
                             hovertemplate=name + "<br>MLP of layer %{x}: %{y:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=320, margin=MARGIN, barmode="group",
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
                      xaxis=dict(title="layer (its MLP)", dtick=max(1, len(next(iter(series.values()))) // 15)),
                      yaxis=dict(title=ytitle, zeroline=True))
    return fig


def position_bars(values: np.ndarray, tokens, title: str, xtitle: str = "position patched",
                  ytitle: str = "metric (0 = corrupted, 1 = clean)") -> go.Figure:
    """One bar per position (pos,), labelled "position: token", blue above zero and red below."""
    labels = [f"{p}: {t}" for p, t in enumerate(tokens)]
    values = np.asarray(values, dtype=float)
    fig = go.Figure(go.Bar(x=labels, y=values, marker_color=["#2166ac" if v >= 0 else "#b2182b" for v in values],
                           hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=320, margin=MARGIN, showlegend=False,
                      xaxis=dict(title=xtitle, type="category", tickangle=-45),
                      yaxis=dict(title=ytitle, zeroline=True))
    return fig


def residual_map(values: np.ndarray, tokens, title: str) -> go.Figure:
    """(layer, pos) patching of the residual stream entering each block at each position, zero-centred."""
    n_layers, n = values.shape
    top = _limit(values)
    labels = [f"{p}: {t}" for p, t in enumerate(tokens)]
    fig = go.Figure(go.Heatmap(
        z=values, x=np.arange(n), y=np.arange(n_layers), colorscale=DIVERGING, zmid=0, zmin=-top, zmax=top,
        customdata=np.broadcast_to(np.asarray(labels, dtype=object), values.shape),
        colorbar=dict(title="metric", thickness=12),
        hovertemplate="entering block %{y}, token %{customdata}<br>metric %{z:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=int(min(720, max(320, 14 * n_layers + 170))), margin=MARGIN,
                      xaxis=dict(title="position", tickangle=-45, **token_ticks(tokens)),
                      yaxis=dict(title="block entered", autorange="reversed", dtick=max(1, n_layers // 15)))
    return attach_numbers(fig, lambda: matrix_csv(values, [f"block {i}" for i in range(n_layers)], labels, title,
                                                  rows="block entered", columns="position"))


def _ranked_bars(names, values, title: str, xtitle: str, what: str) -> go.Figure:
    """Horizontal bars in the given order from the top, positive blue and negative red."""
    values = np.asarray(values, dtype=float)
    fig = go.Figure(go.Bar(
        x=values, y=np.arange(len(values)), orientation="h", customdata=list(names),
        marker_color=["#2c6fbb" if v >= 0 else "#c0392b" for v in values],
        hovertemplate=what + " %{customdata}<br>" + xtitle + " %{x:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=max(300, 22 * len(values) + 120), margin=dict(MARGIN, t=70),
                      xaxis=dict(title=xtitle),
                      yaxis=dict(tickmode="array", tickvals=list(range(len(values))), ticktext=list(names),
                                 autorange="reversed"))
    return fig


def split_pairs(terms: np.ndarray, labels, score: float, title: str, top: int = 12) -> go.Figure:
    """The `top` query-side × key-side component pairs with the largest |share| of one head's score, largest at
    the top; hover gives the pair and its share."""
    flat = np.argsort(-np.abs(terms).ravel(), kind="stable")[:top]
    qa, ka = np.unravel_index(flat, terms.shape)
    names = [f"{labels[a]} · {labels[b]}" for a, b in zip(qa, ka)]
    return _ranked_bars(names, terms[qa, ka], f"{title}<br><sup>score {score:.3f}, its largest parts</sup>",
                        "share of the score", "query side · key side:")


def writes_bars(promoted, suppressed, title: str) -> go.Figure:
    """(token label, logit change) pairs a head promotes most (largest first) and suppresses most (most negative
    last), as horizontal bars."""
    rows = list(promoted) + list(suppressed)[::-1]
    return _ranked_bars([repr(t) for t, _ in rows], [v for _, v in rows], title, "direct logit change", "token")


def circuit_bars(pairs, values, title: str, xtitle: str, what: str) -> go.Figure:
    """(left token label, right token label) pairs of a head's circuit with their values, largest at the top, as
    horizontal bars labelled "'left' → 'right'"; hover gives the pair and its value."""
    return _ranked_bars([f"{left!r} → {right!r}" for left, right in pairs], values, title, xtitle, what)


def pruning_figure(counts, curves: dict, total: int, mode: str) -> go.Figure:
    """The normalised metric against the number of heads removed, one line per removal order."""
    fig = go.Figure()
    for name, values in curves.items():
        fig.add_trace(go.Scatter(x=np.asarray(counts), y=np.asarray(values), mode="lines+markers", name=name,
                                 hovertemplate=name + "<br>%{x} heads removed: metric %{y:.4f}<extra></extra>"))
    how = "replaced by their mean output" if mode == "mean" else "zeroed"
    fig.add_hline(y=0, line=dict(color="#999", dash="dot"))
    fig.add_hline(y=1, line=dict(color="#999", dash="dot"))
    fig.update_layout(title=f"Pruning curve: heads removed ({how})", height=380, margin=MARGIN,
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=1, xanchor="right"),
                      xaxis=dict(title=f"heads removed (of {total})"),
                      yaxis=dict(title="metric (1 = clean, 0 = corrupted)"))
    return fig
