"""Plotly figure builders for the positional-encoding page: numpy in, go.Figure out."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.errors import BadInput
from attnviz.units import count_text

MAX_CELLS_SIDE = 256  # a heatmap shows at most this many rows and columns (block means beyond)
FONT = dict(size=14)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def pool(matrix: np.ndarray, max_rows: int = MAX_CELLS_SIDE, max_cols: int = MAX_CELLS_SIDE):
    """Block-average a (n_rows, n_cols) matrix so that it has at most max_rows x max_cols cells.

    Returns (pooled float32, row_starts, col_starts, (row_block, col_block)): row_starts[i] is
    the first original row in block i. Blocks are 1 x 1 (no change) when the matrix is small.
    """
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2:
        raise BadInput(f"Expected a 2-D matrix, got shape {m.shape}.")
    br = max(1, int(np.ceil(m.shape[0] / max_rows)))
    bc = max(1, int(np.ceil(m.shape[1] / max_cols)))
    nr, nc = int(np.ceil(m.shape[0] / br)), int(np.ceil(m.shape[1] / bc))
    if (nr * br, nc * bc) == m.shape:  # whole blocks: a plain mean is much faster than nanmean
        pooled = m.reshape(nr, br, nc, bc).mean(axis=(1, 3))
        return pooled.astype(np.float32), np.arange(nr) * br, np.arange(nc) * bc, (br, bc)
    padded = np.full((nr * br, nc * bc), np.nan)
    padded[: m.shape[0], : m.shape[1]] = m
    pooled = np.nanmean(padded.reshape(nr, br, nc, bc), axis=(1, 3))
    return pooled.astype(np.float32), np.arange(nr) * br, np.arange(nc) * bc, (br, bc)


def _layout(fig: go.Figure, title: str, height: int, top: int | None = None, **kw) -> go.Figure:
    """Common layout; `top` = top margin in px (room for the title and a legend above the plot)."""
    top = top if top is not None else (50 if title else 10)
    fig.update_layout(title=dict(text=title, font=dict(size=16), y=1.0, yanchor="top", pad=dict(t=12)),
                      height=height, font=FONT, margin=dict(l=10, r=10, t=top, b=10), **kw)
    return fig


def table_heatmap(matrix: np.ndarray, *, title: str, x_title: str, y_title: str, value_name: str = "value",
                  colorscale: str = "RdBu", zmid: float | None = 0.0, height: int = 460,
                  max_side: int = MAX_CELLS_SIDE, zmin=None, zmax=None, clip_percentile: float | None = None) -> go.Figure:
    """One heatmap of a (rows, cols) table such as positions x dimensions, pooled to at most
    max_side cells per axis; axes and hover show original indices (block starts when pooled).
    clip_percentile: colour range +-(that percentile of |shown values|), so a few outliers do
    not wash out the rest (hover still shows the true values)."""
    pooled, rows, cols, (br, bc) = pool(matrix, max_side, max_side)
    if clip_percentile is not None:
        zmax = float(np.nanpercentile(np.abs(pooled), clip_percentile)) or None
        zmin = -zmax if zmax else None
    block = "" if br == bc == 1 else f"<br>(mean of a {br} x {bc} block)"
    trace = go.Heatmap(z=pooled, x=cols, y=rows, colorscale=colorscale, zmid=zmid, zmin=zmin, zmax=zmax,
                       colorbar=dict(title=value_name),
                       hovertemplate=f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>{value_name} %{{z:.4f}}{block}<extra></extra>")
    fig = go.Figure(trace)
    fig.update_yaxes(title=y_title, autorange="reversed")
    fig.update_xaxes(title=x_title)
    return _layout(fig, title, height)


def lines(x: np.ndarray, series: dict[str, np.ndarray], *, title: str, x_title: str, y_title: str,
          height: int = 380, bands: dict[str, np.ndarray] | None = None, dash: dict[str, str] | None = None,
          legend_right: bool = False) -> go.Figure:
    """Line chart of several named series over a shared x; bands: name -> half-width (± shading).
    legend_right puts the legend in a column at the right (for many short names)."""
    fig = go.Figure()
    x = np.asarray(x)
    for i, (name, y) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        y = np.asarray(y, dtype=np.float64)
        if bands and name in bands:
            w = np.asarray(bands[name], dtype=np.float64)
            fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]), y=np.concatenate([y + w, (y - w)[::-1]]),
                                     fill="toself", line=dict(width=0), fillcolor=colour, opacity=0.15,
                                     hoverinfo="skip", showlegend=False))
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name,
                                 line=dict(color=colour, width=2, dash=(dash or {}).get(name, "solid")),
                                 hovertemplate=f"{x_title} %{{x}}<br>{name}: %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title)
    if legend_right:
        return _layout(fig, title, height, legend=dict(x=1.02, y=1, yanchor="top"))
    rows = int(np.ceil(sum(len(n) + 6 for n in series) / 120))  # rough legend rows at ~120 characters each
    return _layout(fig, title, height + 22 * rows, top=50 + 22 * rows,
                   legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))


def token_heatmap(weights: np.ndarray, row_labels, col_labels, *, title: str, height: int = 420,
                  zmax: float | None = None, value_name: str = "weight", colorscale: str = "Viridis",
                  zmin: float | None = 0.0, zmid: float | None = None,
                  x_title: str = "key", y_title: str = "query") -> go.Figure:
    """(query, key) matrix at integer positions, labelled with tokens (repeats stay separate)."""
    w = np.asarray(weights, dtype=np.float64)
    n_r, n_c = w.shape
    rl = [f"{i}: {t}" for i, t in enumerate(row_labels)]
    cl = [f"{j}: {t}" for j, t in enumerate(col_labels)]
    custom = np.empty((n_r, n_c, 2), dtype=object)
    custom[:, :, 0] = np.array(rl, dtype=object)[:, None]
    custom[:, :, 1] = np.array(cl, dtype=object)[None, :]
    shown = np.where(np.isfinite(w), w, np.nan)
    fig = go.Figure(go.Heatmap(z=shown.astype(np.float32), x=np.arange(n_c), y=np.arange(n_r), customdata=custom,
                               colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid, colorbar=dict(title=value_name),
                               hovertemplate=f"query %{{customdata[0]}}<br>key %{{customdata[1]}}<br>{value_name} %{{z:.4f}}<extra></extra>"))
    step = max(1, int(np.ceil(max(n_r, n_c) / 40)))
    short = all(len(str(t)) <= 3 for t in col_labels)
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=list(range(0, n_c, step)),
                     ticktext=[str(col_labels[j]) for j in range(0, n_c, step)], tickangle=0 if short else -45)
    fig.update_yaxes(title=y_title, tickmode="array", tickvals=list(range(0, n_r, step)),
                     ticktext=[str(row_labels[i]) for i in range(0, n_r, step)], autorange="reversed")
    return _layout(fig, title, height)


def rotation_figure(angles: np.ndarray, thetas: np.ndarray, position: int, labels: list[str], height: int = 460) -> go.Figure:
    """2-D pairs as unit arrows rotated by their angle (radians), with the arc travelled so far.

    angles: (k,) current angle m*theta_i of each shown pair; thetas: (k,) theta_i per pair.
    """
    fig = go.Figure()
    circle = np.linspace(0, 2 * np.pi, 181)
    fig.add_trace(go.Scatter(x=np.cos(circle), y=np.sin(circle), mode="lines", line=dict(color="#ccc", width=1),
                             hoverinfo="skip", showlegend=False))
    for i, (a, th, name) in enumerate(zip(angles, thetas, labels)):
        colour = COLOURS[i % len(COLOURS)]
        radius = 1.0 - 0.12 * i  # nested so that overlapping arrows stay visible
        travelled = min(float(a), 2 * np.pi)  # one full turn is enough to show the path
        arc = np.linspace(0, travelled, max(2, int(60 * travelled / np.pi) + 2))
        fig.add_trace(go.Scatter(x=radius * np.cos(arc), y=radius * np.sin(arc), mode="lines",
                                 line=dict(color=colour, width=1, dash="dot"), hoverinfo="skip", showlegend=False))
        fig.add_trace(go.Scatter(
            x=[0, radius * np.cos(a)], y=[0, radius * np.sin(a)], mode="lines+markers", name=name,
            line=dict(color=colour, width=3), marker=dict(size=[0, 11], color=colour),
            hovertemplate=f"{name}<br>angle {position} x {th:.4g} = {a:.3f} rad "
                          f"({np.degrees(a) % 360:.1f}° after whole turns)<extra></extra>"))
    fig.update_xaxes(range=[-1.15, 1.15], zeroline=True, showgrid=False, title="first coordinate of the pair")
    fig.update_yaxes(range=[-1.15, 1.15], scaleanchor="x", zeroline=True, showgrid=False, title="second coordinate")
    return _layout(fig, f"Position m = {position}: each pair turned by m·θ_i", height,
                   legend=dict(x=1.02, y=1, font=dict(size=13)))


def bars(labels, values, *, title: str, y_title: str, text=None, height: int = 340, log_y: bool = False) -> go.Figure:
    fig = go.Figure(go.Bar(x=list(labels), y=values, text=text, textposition="outside",
                           hovertemplate="%{x}<br>" + y_title + " %{y:.6g}<extra></extra>", marker_color=COLOURS[0]))
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    return _layout(fig, title, height)


def figure_bytes(fig: go.Figure) -> int:
    """Size of the figure's JSON, which is what Streamlit sends to the browser."""
    return len(fig.to_json())


# ---------------------------------------------------------------- the page's figures, one builder each
AXES_QK = dict(x_title="key position", y_title="query position")


def sinusoidal_table(table: np.ndarray) -> go.Figure:
    """The (max_len, d_model) sinusoidal table as a heatmap."""
    max_len, d_model = table.shape
    return table_heatmap(table, title=f"PE table: {count_text(max_len)} positions x {d_model} dimensions",
                         x_title="dimension", y_title="position", value_name="PE", height=480)


def sinusoidal_waves(table: np.ndarray, dims: list[int], frequencies: np.ndarray) -> go.Figure:
    """Chosen columns of a (max_len, d_model) table across positions; frequencies: (d_model/2,) w_i."""
    series = {f"dim {d} ({'sin' if d % 2 == 0 else 'cos'}, w = {frequencies[d // 2]:.3g})": table[:, d] for d in dims}
    return lines(np.arange(table.shape[0]), series, title="Chosen dimensions across positions",
                 x_title="position", y_title="PE value", height=340)


def similarity_heatmap(sim: np.ndarray, *, title: str, axis_title: str = "position", max_side: int = MAX_CELLS_SIDE) -> go.Figure:
    """(n, n) cosine similarity of positions, colours fixed to [-1, 1]."""
    return table_heatmap(sim, title=title, x_title=axis_title, y_title=axis_title, value_name="cosine",
                         zmin=-1, zmax=1, height=440, max_side=max_side)


def offset_lines(offsets: np.ndarray, series: dict[str, np.ndarray], *, title: str, y_title: str, height: int) -> go.Figure:
    """Curves against the offset between two positions."""
    return lines(offsets, series, title=title, x_title="offset (positions)", y_title=y_title, height=height)


def shift_matrix_heatmap(m_k: np.ndarray, k: int) -> go.Figure:
    """The top-left block of M_k (already cut to the rows and columns shown)."""
    shown = m_k.shape[0]
    return table_heatmap(m_k, title=f"M_k, top-left {shown} x {shown} (k = {k})", x_title="input dim",
                         y_title="output dim", value_name="M_k", zmin=-1, zmax=1, height=330)


def learned_table(table: np.ndarray, name: str) -> go.Figure:
    """A model's (n_positions, d_model) learned table, colours clipped at the 99th percentile."""
    return table_heatmap(table, title=f"Learned: {name}", x_title="dimension", y_title="position",
                         value_name="value", height=460, clip_percentile=99)


def sinusoidal_companion(table: np.ndarray, max_side: int) -> go.Figure:
    """A sinusoidal table of the same shape as a learned one, pooled to max_side cells per side."""
    n_pos, d_model = table.shape
    return table_heatmap(table, title=f"Sinusoidal, same shape ({n_pos} x {d_model})", x_title="dimension",
                         y_title="position", value_name="PE", height=460, max_side=max_side)


def norm_lines(norms: np.ndarray) -> go.Figure:
    """(n_positions,) lengths of the learned position vectors."""
    return lines(np.arange(len(norms)), {"L2 norm of the position vector": norms}, title="Length of each learned position vector",
                 x_title="position", y_title="norm", height=300)


def rope_rotation(m: int, thetas: np.ndarray, pairs: list[int]) -> go.Figure:
    """The chosen pairs turned to position m; thetas: (d_head/2,) angle per position of each pair."""
    return rotation_figure(m * thetas[pairs], thetas[pairs], m, [f"pair {i}: θ={thetas[i]:.3g}" for i in pairs])


def rope_scores(scores: np.ndarray) -> go.Figure:
    """(n, n) scores of one q at position m (rows) and one k at position n (columns)."""
    return table_heatmap(scores, title="Score of the same q at position m and the same k at position n",
                         x_title="key position n", y_title="query position m", value_name="score", height=440)


def rope_decay(decay: dict[str, np.ndarray]) -> go.Figure:
    """The three cases of `rope.score_decay` against the distance."""
    random = "independent random q, k: mean of 2000 pairs (± 1 std shaded)"
    bound = "paper's upper bound (scaled to 1 at 0)"
    return lines(decay["distance"], {"aligned q = k (all ones)": decay["aligned"], bound: decay["bound"],
                                     random: decay["random_mean"]},
                 bands={random: decay["random_std"]}, dash={bound: "dash"},
                 title="q_m · k_n / d_head against the distance n − m", x_title="distance n − m", y_title="score / d_head",
                 height=400)


def position_attention(weights: np.ndarray, *, title: str, zmax: float) -> go.Figure:
    """(seq_len, seq_len) attention weights labelled by position."""
    labels = [str(i) for i in range(weights.shape[0])]
    return token_heatmap(weights, labels, labels, title=title, zmax=zmax, **AXES_QK)


def alibi_slope_bars(slopes: np.ndarray) -> go.Figure:
    """(n_heads,) slopes on a log axis, each labelled 2^exponent."""
    return bars([f"h{h}" for h in range(len(slopes))], slopes, text=[f"2^{e:g}" for e in np.log2(slopes)],
                title=f"Slopes for {len(slopes)} heads", y_title="slope m", log_y=True, height=340)


def alibi_bias_heatmap(bias: np.ndarray, head: int) -> go.Figure:
    """(seq_len, seq_len) ALiBi bias of one head; masked cells (-inf) stay blank."""
    labels = [str(i) for i in range(bias.shape[0])]
    return token_heatmap(bias, labels, labels, title=f"Bias of head {head} (masked cells blank)", value_name="bias",
                         colorscale="Viridis", zmin=None, zmax=0, **AXES_QK)


def alibi_bias_lines(slopes: np.ndarray, seq_len: int, max_heads: int = 8) -> go.Figure:
    """Bias -m_h * distance against the distance 0 .. seq_len-1 for the first max_heads heads."""
    dist = np.arange(seq_len)
    return lines(dist, {f"h{h}": -slopes[h] * dist for h in range(min(len(slopes), max_heads))},
                 title="Bias against distance" + (f" (first {max_heads} heads)" if len(slopes) > max_heads else ""),
                 x_title="distance i − j", y_title="bias", height=420, legend_right=True)
