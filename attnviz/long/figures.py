"""Figures of long inputs: the attention-vs-distance profile, sink mass per head and the sink experiment's
loss curves (the pages that show them come later; the all-heads grid reuses heatmap's PNG raster)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


def distance_profile_figure(edges: np.ndarray, values: np.ndarray, names, title: str) -> go.Figure:
    """One line per row of values (curves, bins) against the bins' first distance, log-log axes.
    edges: int (bins+1,) as LongSummaries.profile returns them."""
    x = np.maximum(edges[:-1], 0.5)  # distance 0 drawn at 0.5 on the log axis
    fig = go.Figure()
    for name, row in zip(names, np.atleast_2d(values)):
        fig.add_trace(go.Scatter(x=x, y=row, mode="lines+markers", name=str(name),
                                 customdata=np.stack([edges[:-1], edges[1:] - 1], axis=-1),
                                 hovertemplate="distance %{customdata[0]}–%{customdata[1]}: mean weight %{y:.3g}"))
    fig.update_layout(title=title, xaxis=dict(title="distance |i − j| (tokens)", type="log"),
                      yaxis=dict(title="mean attention weight", type="log"), hovermode="closest")
    return fig


def sink_mass_figure(sink: np.ndarray, title: str = "Weight on the first token (sink mass)") -> go.Figure:
    """Heatmap of sink mass (layer, head) with exact values on hover."""
    fig = go.Figure(go.Heatmap(z=sink, zmin=0, zmax=1, colorscale="Viridis",
                               hovertemplate="layer %{y}, head %{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", dtick=1,
                                                                                autorange="reversed"))
    return fig


def sink_curves_figure(curves: dict[str, np.ndarray], positions: np.ndarray,
                       title: str = "Next-token loss along the text") -> go.Figure:
    """One line per cache policy: loss (nats) against the position of the predicted token."""
    fig = go.Figure()
    for name, y in curves.items():
        fig.add_trace(go.Scatter(x=positions, y=y, mode="lines", name=name,
                                 hovertemplate="position %{x}: %{y:.3f} nats"))
    fig.update_layout(title=title, xaxis=dict(title="token position"), yaxis=dict(title="loss (nats)"),
                      hovermode="x unified")
    return fig


# ------------------------------------------------------------------ the Long inputs page (appended)
GROUP_GAP = 3  # empty tile columns between key/value groups in the all-heads grid
HEAD_GAP = 1  # between heads of one group, and between layers
GRID_PLOT_WIDTH = 800  # px: the all-heads grid's plot area on a wide page (its height is chosen for square tiles there)
GRID_MIN_HEIGHT, GRID_MAX_HEIGHT = 320, 1400  # px: the grid figure's height stays within these


def grid_columns(n_heads: int, group: int, t: int) -> tuple[np.ndarray, list]:
    """(start column of each head in the mosaic (n_heads,), [(kv head, first column, last column)]):
    heads side by side, a wider gap between key/value groups (GQA), t tiles per head."""
    starts, col, groups = [], 0, []
    for h in range(n_heads):
        if h and h % group == 0:
            col += GROUP_GAP - HEAD_GAP
        starts.append(col)
        if h % group == group - 1:
            groups.append((h // group, starts[h - group + 1], col + t - 1))
        col += t + HEAD_GAP
    return np.array(starts), groups


def pooled_grid_figure(tiles: np.ndarray, edges: np.ndarray, group: int, how: str, *,
                       selected: tuple[int, int] | None = None, zmax: float | None = None) -> go.Figure:
    """Every head's pooled map in one heatmap: layers down, heads across, grouped under their key/value
    head. tiles: float32 (layer, head, t, t) (PooledGrid.tiles); edges: int (t+1,) tile boundaries.
    z holds the tiles exactly (NaN in the gaps); hover names the layer, head, key head, the query and key
    positions of the tile and its pooled weight. Transparent markers at head centres carry (layer, head)
    as customdata, so a click can open a head."""
    L, H, t, _ = tiles.shape
    starts, groups = grid_columns(H, group, t)
    width = int(starts[-1]) + t
    rows = L * (t + HEAD_GAP) - HEAD_GAP
    z = np.full((rows, width), np.nan, dtype=np.float32)
    for layer in range(L):
        r = layer * (t + HEAD_GAP)
        for h in range(H):
            z[r:r + t, starts[h]:starts[h] + t] = tiles[layer, h]
    # unique category labels per row / column (repeated strings would merge into one category)
    xl, yl = [f"gap {c}" for c in range(width)], [f"gap {r}" for r in range(rows)]
    for h in range(H):
        for i in range(t):
            xl[starts[h] + i] = f"head {h} (key head {h // group}) · keys {edges[i]}–{edges[i + 1] - 1}"
    for layer in range(L):
        for i in range(t):
            yl[layer * (t + HEAD_GAP) + i] = f"layer {layer} · queries {edges[i]}–{edges[i + 1] - 1}"
    finite = tiles[np.isfinite(tiles)]
    top = float(zmax if zmax is not None else (np.quantile(finite, 0.99) if finite.size else 1.0)) or 1.0
    fig = go.Figure(go.Heatmap(z=z, x=xl, y=yl, zmin=0, zmax=top, colorscale="Viridis", hoverongaps=False,
                               colorbar=dict(title=how, thickness=12),
                               hovertemplate="%{y}<br>%{x}<br>" + how + " weight %{z:.4g}<extra></extra>"))
    cx = [xl[starts[h] + t // 2] for h in range(H)]
    cy = [yl[layer * (t + HEAD_GAP) + t // 2] for layer in range(L)]
    fig.add_trace(go.Scatter(x=[cx[h] for layer in range(L) for h in range(H)],
                             y=[cy[layer] for layer in range(L) for h in range(H)],
                             customdata=[[layer, h] for layer in range(L) for h in range(H)],
                             mode="markers", marker=dict(size=max(6, min(24, t // 2)), opacity=0),
                             hovertemplate="layer %{customdata[0]}, head %{customdata[1]}: click to open<extra></extra>",
                             showlegend=False))
    if selected is not None:
        layer, h = selected
        x0, y0 = starts[h] - 0.5, layer * (t + HEAD_GAP) - 0.5
        fig.add_shape(type="rect", xref="x", yref="y", x0=x0, x1=x0 + t, y0=y0, y1=y0 + t,
                      line=dict(color="#d62728", width=2))
    g = H // max(group, 1)
    names = [f"kv{k}: " + " ".join(f"h{h}" for h in range(k * group, (k + 1) * group)) for k in range(g)]
    # fixed ranges: the mosaic exactly (the click markers would pad an automatic range), first layer on top
    fig.update_xaxes(tickvals=cx, ticktext=[f"h{h}" for h in range(H)], side="top", showgrid=False,
                     range=[-0.5, width - 0.5], categoryorder="array", categoryarray=xl)
    fig.update_yaxes(tickvals=cy, ticktext=[f"L{layer}" for layer in range(L)], range=[rows - 0.5, -0.5],
                     showgrid=False, categoryorder="array", categoryarray=yl)
    if group > 1:
        for (k, a, b), name in zip(groups, names):
            fig.add_annotation(x=(a + b) / 2, y=1.0, xref="x", yref="paper", yanchor="bottom", yshift=26,
                               text=f"<b>{name}</b>", showarrow=False)
    top_margin, bottom_margin = (120 if group > 1 else 80), 20
    # square tiles: as tall as a page-wide plot (GRID_PLOT_WIDTH px) needs for them, within the page's limits;
    # the y axis is tied to the x axis at 1:1, so at any other width the plot narrows instead of stretching
    plot_h = GRID_PLOT_WIDTH * rows / width
    height = int(round(max(GRID_MIN_HEIGHT, min(GRID_MAX_HEIGHT, plot_h + top_margin + bottom_margin))))
    fig.update_layout(title=dict(text=f"All {L} × {H} heads, {t} × {t} tiles each ({how} per tile)", y=0.995,
                                 yanchor="top"),
                      height=height, margin=dict(t=top_margin, l=50, r=20, b=bottom_margin), plot_bgcolor="white")
    # categorical axes: shapes and annotations use the column index, as above
    fig.update_xaxes(type="category", constrain="domain")
    fig.update_yaxes(type="category", scaleanchor="x", scaleratio=1, constrain="domain")
    return fig


def _labels(positions, tokens) -> list[str]:
    """Unique axis categories "position token" (the position keeps repeated tokens apart)."""
    return [f"{int(p)} {tokens[int(p)]}" for p in positions]


def head_overview_figure(tiles: np.ndarray, edges: np.ndarray, title: str, how: str = "mean",
                         box: tuple[int, int, int, int] | None = None) -> go.Figure:
    """One head pooled to tiles (t, t), axes in token positions (tile centres), the zoom window drawn as a
    red box (q0, q1, k0, k1); hover: the tile's query and key ranges and its pooled weight."""
    e = np.asarray(edges)
    centre = (e[:-1] + e[1:] - 1) / 2
    cd = np.stack(np.broadcast_arrays(e[:-1][:, None], e[1:][:, None] - 1, e[:-1][None, :], e[1:][None, :] - 1),
                  axis=-1)
    fig = go.Figure(go.Heatmap(z=tiles, x=centre, y=centre, colorscale="Viridis", zmin=0,
                               zmax=float(np.quantile(tiles, 0.995)) or None, customdata=cd,
                               colorbar=dict(title=how, thickness=12),
                               hovertemplate="queries %{customdata[0]}–%{customdata[1]}<br>keys %{customdata[2]}–"
                                             "%{customdata[3]}<br>" + how + " weight %{z:.4g}<extra></extra>"))
    if box is not None:
        q0, q1, k0, k1 = box
        fig.add_shape(type="rect", x0=k0 - 0.5, x1=k1 - 0.5, y0=q0 - 0.5, y1=q1 - 0.5,
                      line=dict(color="#d62728", width=2))
    fig.update_layout(title=title, height=460, margin=dict(t=50, l=60, r=10, b=50),
                      xaxis=dict(title="key position", constrain="domain", range=[-0.5, e[-1] - 0.5]),
                      yaxis=dict(title="query position", range=[e[-1] - 0.5, -0.5], scaleanchor="x",
                                 constrain="domain"))
    return fig


def zoom_figure(weights: np.ndarray, q0: int, k0: int, tokens, title: str) -> go.Figure:
    """Exact weights of a window (q, k) at full resolution; hover: query and key position and token and the
    weight. Axes are categories "position token", with a tick every few positions."""
    nq, nk = weights.shape
    ys, xs = _labels(range(q0, q0 + nq), tokens), _labels(range(k0, k0 + nk), tokens)
    fig = go.Figure(go.Heatmap(z=weights, x=xs, y=ys, colorscale="Viridis", zmin=0,
                               colorbar=dict(title="weight", thickness=12),
                               hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.5f}<extra></extra>"))
    step = max(1, -(-max(nq, nk) // 12))  # at most 12 labels per axis (the figure shares a row with the overview)
    fig.update_xaxes(type="category", tickvals=xs[::step], ticktext=xs[::step], tickangle=-45, tickfont=dict(size=10))
    fig.update_yaxes(type="category", tickvals=ys[::step], ticktext=ys[::step], autorange="reversed",
                     tickfont=dict(size=10))
    fig.update_layout(title=title, height=560, margin=dict(t=50, l=110, r=10, b=110))
    return fig


def top_k_figure(keys: np.ndarray, weights: np.ndarray, q0: int, tokens, title: str) -> go.Figure:
    """Sparse lines per query: for each query row (q0 + r) a line to each of its top keys, the marker coloured
    and sized by the weight; hover: query and key positions and tokens, the exact weight."""
    xs, ys, ws, txt = [], [], [], []
    lx, ly = [], []
    for r in range(keys.shape[0]):
        q = q0 + r
        for k, w in zip(keys[r], weights[r]):
            if k < 0:
                continue
            xs.append(int(k))
            ys.append(q)
            ws.append(float(w))
            txt.append(f"query {q} {tokens[q]!r} → key {int(k)} {tokens[int(k)]!r}")
            lx += [q, int(k), None]
            ly += [q, q, None]
    ws_a = np.array(ws) if ws else np.zeros(0)
    fig = go.Figure(go.Scatter(x=lx, y=ly, mode="lines", line=dict(color="rgba(120,120,120,0.25)", width=1),
                               hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", text=txt, showlegend=False,
                             marker=dict(color=ws_a, colorscale="Viridis", cmin=0,
                                         cmax=float(ws_a.max()) if ws_a.size and ws_a.max() > 0 else 1,
                                         size=5 + 12 * np.sqrt(ws_a / (ws_a.max() if ws_a.size and ws_a.max() > 0 else 1)),
                                         colorbar=dict(title="weight", thickness=12), showscale=True),
                             hovertemplate="%{text}<br>weight %{marker.color:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=420, margin=dict(t=50, l=60, r=10, b=50),
                      xaxis=dict(title="key position"), yaxis=dict(title="query position", autorange="reversed"))
    return fig


def window_figure(windows: np.ndarray, causal: np.ndarray, n: int) -> go.Figure:
    """Keys a query may see per layer, from the config: the sliding window w (local) or the whole prefix
    (global, drawn as the input length n)."""
    span = np.where(windows > 0, np.minimum(windows, n), n)
    kind = ["local (window " + str(int(w)) + ")" if w else ("global, causal" if c else "global") for w, c in
            zip(windows, causal)]
    fig = go.Figure(go.Bar(x=np.arange(len(span)), y=span, text=kind, marker_color=np.where(windows > 0, "#ff7f0e", "#1f77b4"),
                           hovertemplate="layer %{x}: %{text}, sees up to %{y} keys<extra></extra>"))
    fig.update_layout(title="Keys each query may see, per layer (from the config)", height=300,
                      xaxis=dict(title="layer", dtick=1), yaxis=dict(title="keys visible"),
                      margin=dict(t=50, l=60, r=10, b=50))
    return fig
