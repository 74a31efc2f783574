"""Plotly figure builders for attention: data in, go.Figure out (no streamlit here)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

# Palettes offered to the user; the first two are perceptually uniform and colour-blind safe.
PALETTES = {
    "Viridis (colour-blind safe)": "Viridis",
    "Cividis (colour-blind safe)": "Cividis",
    "Blues": "Blues",
    "Magma": "Magma",
}
# Above this many tokens, hover shows positions only (token names per cell cost megabytes).
HOVER_TOKENS_MAX = 160
# Above this many tokens the axis shows every k-th label.
TICKS_MAX = 80


def token_ticks(tokens, positions=None) -> dict:
    """tickvals/ticktext for integer axis positions (repeated tokens stay separate rows)."""
    idx = np.arange(len(tokens)) if positions is None else np.asarray(positions)
    step = max(1, int(np.ceil(len(idx) / TICKS_MAX)))
    keep = np.arange(0, len(idx), step)
    return dict(tickmode="array", tickvals=keep.tolist(), ticktext=[str(tokens[idx[i]]) for i in keep])


def log_colorscale(colorscale, floor: float, top: float, n_stops: int = 33) -> list:
    """A colour scale over [0, top] whose colours follow log10(weight) from `floor` to `top`
    (weights below the floor share the first colour), so exact weights can stay the z values."""
    from plotly.colors import get_colorscale, sample_colorscale

    weights = np.geomspace(floor, top, n_stops)
    colours = sample_colorscale(get_colorscale(colorscale), np.linspace(0, 1, n_stops))
    stops = [[0.0, colours[0]]] + [[float(w / top), c] for w, c in zip(weights, colours)]
    stops[-1][0] = 1.0
    return stops


def heatmap_figure(values: np.ndarray, row_tokens, col_tokens, *, rows=None, cols=None,
                   zmin=None, zmax=None, colorscale="Viridis", log_floor: float | None = None,
                   title: str = "", colorbar_title: str = "weight", height: int | None = None,
                   x_title: str = "key (attended to)", y_title: str = "query (attending)") -> go.Figure:
    """Heatmap of a (query, key) matrix at integer positions with token tick labels.

    values: (n_rows, n_cols) exact weights (plotted, hovered and exported as they are);
    rows/cols: original positions of each row/column (for labels); log_floor: colour by
    log10 of the weight from this floor up (see log_colorscale).
    """
    values = np.asarray(values, dtype=np.float32)
    n_r, n_c = values.shape
    if log_floor is not None:
        zmin, zmax = 0.0, float(zmax if zmax is not None else max(values.max(), 1e-6))
        colorscale = log_colorscale(colorscale, log_floor, zmax)
    rows = np.arange(n_r) if rows is None else np.asarray(rows)
    cols = np.arange(n_c) if cols is None else np.asarray(cols)
    trace = dict(z=values, x=np.arange(n_c), y=np.arange(n_r), zmin=zmin, zmax=zmax,
                 colorscale=colorscale, colorbar=dict(title=colorbar_title), xgap=0, ygap=0)
    if max(n_r, n_c) <= HOVER_TOKENS_MAX:
        rt = np.array([f"{rows[i]}: {row_tokens[rows[i]]}" for i in range(n_r)], dtype=object)
        ct = np.array([f"{cols[j]}: {col_tokens[cols[j]]}" for j in range(n_c)], dtype=object)
        custom = np.empty((n_r, n_c, 2), dtype=object)
        custom[:, :, 0] = rt[:, None]
        custom[:, :, 1] = ct[None, :]
        trace.update(customdata=custom,
                     hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}"
                                   "<br>weight %{z:.4f}<extra></extra>")
    else:
        trace.update(hovertemplate="query row %{y}, key column %{x}<br>weight %{z:.4f}<extra></extra>")
    fig = go.Figure(go.Heatmap(**trace))
    side = height or int(min(900, max(420, 22 * n_r + 160)))
    fig.update_layout(
        title=title, height=side, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        xaxis=dict(title=x_title, side="bottom", tickangle=-60, **token_ticks(col_tokens, cols)),
        yaxis=dict(title=y_title, autorange="reversed", **token_ticks(row_tokens, rows)),
    )
    return fig


def focus_figure(layer_attention: np.ndarray, token: int, tokens, *, direction: str = "out",
                 colorscale="Viridis", ablated_heads=()) -> go.Figure:
    """Heads x tokens heatmap for one token of one layer.

    layer_attention: (head, query, key). direction 'out': what `token` attends to (its row in
    every head); 'in': what attends to `token` (its column in every head).
    """
    a = np.asarray(layer_attention, dtype=np.float32)
    n_heads, n = a.shape[0], a.shape[-1]
    values = a[:, token, :] if direction == "out" else a[:, :, token]
    head_labels = [f"head {h}" + (" ✂" if h in ablated_heads else "") for h in range(n_heads)]
    label = tokens[token]
    what = (f"what {label!r} attends to (its row)" if direction == "out"
            else f"what attends to {label!r} (its column)")
    hover = ("head %{y}<br>key %{x}: %{customdata}<br>weight %{z:.4f}<extra></extra>" if direction == "out"
             else "head %{y}<br>query %{x}: %{customdata}<br>weight %{z:.4f}<extra></extra>")
    custom = np.tile(np.array([str(t) for t in tokens], dtype=object), (n_heads, 1))
    fig = go.Figure(go.Heatmap(z=values, x=np.arange(n), y=np.arange(n_heads), colorscale=colorscale,
                               zmin=0, customdata=custom, hovertemplate=hover,
                               colorbar=dict(title="weight")))
    fig.update_layout(
        title=what, height=int(max(260, 26 * n_heads + 140)), margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="key" if direction == "out" else "query", tickangle=-60, **token_ticks(tokens)),
        yaxis=dict(tickmode="array", tickvals=list(range(n_heads)), ticktext=head_labels, autorange="reversed"),
    )
    return fig


def lines_figure(matrix: np.ndarray, tokens, *, focus: int | None = None, threshold: float = 0.02,
                 color: str = "#1f77b4", title: str = "") -> go.Figure:
    """BertViz-style view: tokens in two columns, a line from each query (left) to each key
    (right) whose opacity grows with the weight. Weights below `threshold` are not drawn.
    With `focus`, only that query's lines are drawn, in full colour.
    """
    m = np.asarray(matrix, dtype=np.float32)
    n = m.shape[0]
    fig = go.Figure()
    queries = range(n) if focus is None else [focus]
    bins = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 1.01])
    for lo, hi in zip(bins[:-1], bins[1:]):
        xs, ys = [], []
        for q in queries:
            for k in np.flatnonzero((m[q] >= max(lo, threshold)) & (m[q] < hi)):
                xs += [0, 1, None]
                ys += [q, k, None]
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                     line=dict(color=color, width=1 + 4 * hi), opacity=float(min(1.0, 0.15 + hi * 0.85))))
    labels = [str(t) for t in tokens]
    for x, anchor in ((0, "right"), (1, "left")):
        side_w = m[focus] if (focus is not None and x == 1) else None
        hover = [f"{i}: {t}" + (f" ← {side_w[i]:.4f}" if side_w is not None else "") for i, t in enumerate(labels)]
        fig.add_trace(go.Scatter(
            x=[x] * n, y=list(range(n)), mode="markers+text", text=labels,
            textposition="middle left" if anchor == "right" else "middle right",
            marker=dict(size=6, color=["#d62728" if (focus == i and x == 0) else "#555" for i in range(n)]),
            hovertext=hover, hoverinfo="text", showlegend=False))
    fig.update_layout(
        title=title, height=int(max(300, 18 * n + 80)), margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        xaxis=dict(visible=False, range=[-0.6, 1.6]), yaxis=dict(visible=False, autorange="reversed"),
        plot_bgcolor="white",
    )
    return fig
