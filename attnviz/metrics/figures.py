"""Plotly figure builders for the head-analytics pages: head grids, matrices, token bars, role maps."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.plotting import attach_numbers, built, matrix_csv
from attnviz.types import SUMMED, head_name
from attnviz.units import count_text

# Largest matrix side sent as is; longer inputs are block-averaged down to at most this.
MAX_MATRIX_SIDE = 192
# Most tick labels per axis before labels are thinned out.
MAX_TICKS = 48
ROLE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
NO_ROLE_COLOUR = "#d9d9d9"


def _ticks(labels, positions=None, max_ticks: int = MAX_TICKS):
    """(tickvals, ticktext) at integer positions, thinned to at most max_ticks labels."""
    n = len(labels)
    positions = np.arange(n) if positions is None else np.asarray(positions)
    step = max(1, int(np.ceil(n / max_ticks)))
    idx = np.arange(0, n, step)
    return positions[idx].tolist(), [str(labels[i]) for i in idx]


def head_axis(n_heads: int, summed: bool) -> dict:
    """The x axis of a layers x heads map: one tick per head, or one unlabelled column of summed heads."""
    return dict(title=SUMMED if summed else "head", tickmode="array", tickvals=list(range(n_heads)),
                showticklabels=not summed, showgrid=False, zeroline=False)


def head_grid(values: np.ndarray, *, title: str, colorbar: str, zmin=None, zmax=None,
              colorscale: str = "Viridis", fmt: str = ".3f", hover_extra: np.ndarray | None = None,
              ablated=frozenset(), selected: tuple[int, int] | None = None, summed: bool = False) -> go.Figure:
    """layers x heads heatmap of one value per head (values: (layer, head)); transparent markers
    at the cell centres carry customdata (layer, head) so a click selects the head. summed: one column, each
    layer's heads summed (an ALTI view), named so on the axis and in the hover."""
    values = np.asarray(values, dtype=float)
    n_layers, n_heads = values.shape
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    fig = go.Figure(go.Heatmap(z=values, x=np.arange(n_heads), y=np.arange(n_layers), zmin=zmin, zmax=zmax,
                               colorscale=colorscale, colorbar=dict(title=colorbar), hoverinfo="skip",
                               xgap=1, ygap=1))
    extra = hover_extra.ravel() if hover_extra is not None else np.full(values.size, "")
    text = [f"layer {l}, {head_name(h, summed)}<br>{colorbar}: {v:{fmt}}{('<br>' + e) if e else ''}"
            + ("<br><b>ablated</b>" if (l, h) in ablated else "")
            for l, h, v, e in zip(layer.ravel(), head.ravel(), values.ravel(), extra)]
    fig.add_trace(go.Scatter(
        x=head.ravel(), y=layer.ravel(), mode="markers", customdata=np.stack([layer.ravel(), head.ravel()], 1).tolist(),
        marker=dict(size=max(10, min(28, 480 // max(n_heads, n_layers))), color="rgba(0,0,0,0)", symbol="square"),
        text=text, hovertemplate="%{text}<br><i>click to open " + ("this layer" if summed else "this head")
                                  + "</i><extra></extra>",
        showlegend=False, name="heads"))
    if ablated:
        al, ah = zip(*sorted(ablated))
        fig.add_trace(go.Scatter(x=list(ah), y=list(al), mode="markers", name="ablated", hoverinfo="skip",
                                 marker=dict(symbol="x-thin", size=14, line=dict(width=3, color="red")),
                                 showlegend=False))
    if selected is not None:
        fig.add_shape(type="rect", x0=selected[1] - 0.5, x1=selected[1] + 0.5, y0=selected[0] - 0.5,
                      y1=selected[0] + 0.5, line=dict(color="white", width=3))
    fig.update_layout(
        title=title, height=max(280, 36 * n_layers + 120), margin=dict(l=60, r=20, t=50, b=50),
        xaxis=dict(head_axis(n_heads, summed), range=[-0.5, n_heads - 0.5]),
        yaxis=dict(title="layer", tickmode="array", tickvals=list(range(n_layers)), autorange="reversed",
                   showgrid=False, zeroline=False),
        hovermode="closest", hoverdistance=40, clickmode="event+select", dragmode=False,
    )
    return fig


def block_mean(m: np.ndarray, max_side: int = MAX_MATRIX_SIDE) -> tuple[np.ndarray, int]:
    """(downsampled matrix, factor): averages factor x factor blocks so no side exceeds max_side."""
    m = np.asarray(m, dtype=np.float32)
    factor = int(np.ceil(max(m.shape) / max_side))
    if factor <= 1:
        return m, 1
    r, c = (int(np.ceil(s / factor)) * factor for s in m.shape)
    padded = np.full((r, c), np.nan, dtype=np.float32)
    padded[:m.shape[0], :m.shape[1]] = m
    blocks = padded.reshape(r // factor, factor, c // factor, factor)
    return np.nanmean(blocks, axis=(1, 3)), factor


def shared_colour_max(*matrices: np.ndarray) -> float:
    """One colour-scale top for matrices shown side by side: their largest value, or for long
    inputs (as matrix_heatmap draws them, block-averaged) the larger 99th percentile, so one
    sink column does not wash both out."""
    smalls = [block_mean(m)[0] for m in matrices]
    if max(s.size for s in smalls) > 64 * 64:
        top = max(float(np.nanquantile(s, 0.99)) for s in smalls)
    else:
        top = max(float(np.nanmax(s)) for s in smalls)
    return top if top > 0 else 1.0


def matrix_heatmap(m: np.ndarray, row_labels, col_labels, *, title: str, zmin=None, zmax=None,
                   colorscale: str = "Viridis", zmid=None, colorbar: str = "weight", height: int | None = None,
                   xtitle: str = "key (attended to)", ytitle: str = "query (attending)") -> go.Figure:
    """A (rows, cols) matrix at integer positions with token tick labels; long inputs are
    block-averaged to MAX_MATRIX_SIDE (the title says so)."""
    small, factor = block_mean(m)
    n_r, n_c = small.shape
    rows = np.arange(n_r) * factor
    cols = np.arange(n_c) * factor
    rl = [f"{row_labels[i]} ({i})" if factor == 1 else f"{i}-{min(i + factor, len(row_labels)) - 1}" for i in rows]
    cl = [f"{col_labels[j]} ({j})" if factor == 1 else f"{j}-{min(j + factor, len(col_labels)) - 1}" for j in cols]
    notes = []
    if factor > 1:
        notes.append(f"{count_text(len(row_labels))} tokens: {factor}x{factor} blocks averaged")
    if zmax is None and zmid is None and small.size > 64 * 64:
        # long inputs: one sink column would wash out the rest; clip colours at the 99th percentile
        zmax = float(np.nanquantile(small, 0.99)) or None
        notes.append("colours clipped at the 99th percentile")
    elif zmax is not None and zmid is None and small.size and float(np.nanmax(small)) > zmax:
        notes.append(f"colours clipped at {zmax:.3g}")
    if notes:
        title += "<br><sup>" + "; ".join(notes) + "</sup>"
    hover = np.array([[f"{ytitle.split(' ')[0]} {a}<br>{xtitle.split(' ')[0]} {b}" for b in cl] for a in rl])
    fig = go.Figure(go.Heatmap(
        z=np.round(small, 4), x=np.arange(n_c), y=np.arange(n_r), zmin=zmin, zmax=zmax, zmid=zmid,
        colorscale=colorscale, colorbar=dict(title=colorbar), text=hover,
        hovertemplate="%{text}<br>" + colorbar + ": %{z:.4f}<extra></extra>"))
    if factor == 1:
        xv, xt = _ticks(col_labels)
        yv, yt = _ticks(row_labels)
    else:
        xv, xt = _ticks(cl, np.arange(n_c), 16)
        yv, yt = _ticks(rl, np.arange(n_r), 16)
    side = height or int(min(640, max(320, 18 * n_r + 140)))
    heading = title.split("<br>")[0]
    fig.update_layout(title=title, height=side, margin=dict(l=90, r=20, t=70, b=90),
                      xaxis=dict(title=xtitle, tickmode="array", tickvals=xv, ticktext=xt, tickangle=-60,
                                 constrain="domain"),
                      yaxis=dict(title=ytitle, tickmode="array", tickvals=yv, ticktext=yt, autorange="reversed",
                                 scaleanchor="x", constrain="domain"))
    # the CSV holds every value of m at full precision (the figure shows rounded, maybe block-averaged, cells)
    return attach_numbers(fig, lambda: matrix_csv(m, [f"{i}:{t}" for i, t in enumerate(row_labels)],
                                                  [f"{j}:{t}" for j, t in enumerate(col_labels)], heading,
                                                  rows=ytitle, columns=xtitle))


def token_bars(values: np.ndarray, tokens, *, title: str, ytitle: str, highlight: int | None = None,
               fmt: str = ".3f", special_mask=None) -> go.Figure:
    """One bar per token position (values: (seq_len,)), tokens as tick labels at integer positions."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    colours = np.full(n, "#4c78a8", dtype=object)
    if special_mask is not None:
        colours[np.asarray(special_mask, dtype=bool)] = "#9ecae9"
    if highlight is not None and 0 <= highlight < n:
        colours[highlight] = "#e45756"
    traces = [go.Bar(
        x=np.arange(n), y=values, marker_color=list(colours),
        customdata=[f"{t} ({i})" for i, t in enumerate(tokens)],
        hovertemplate="%{customdata}<br>" + ytitle + ": %{y:" + fmt + "}<extra></extra>")]
    xv, xt = _ticks(tokens, max_ticks=40)
    return built(traces, title=title, height=340, margin=dict(l=60, r=20, t=50, b=90), bargap=0.15,
                 xaxis=dict(tickmode="array", tickvals=xv, ticktext=xt, tickangle=-60, title="token"),
                 yaxis=dict(title=ytitle))


def grouped_token_bars(series: dict[str, np.ndarray], tokens, *, title: str, ytitle: str,
                       fmt: str = ".3f") -> go.Figure:
    """Several values per token position side by side (series: name -> (seq_len,)), e.g. rollout
    and flow shares of the same output token."""
    colours = ["#f58518", "#54a24b", "#4c78a8", "#b279a2"]
    labels = [f"{t} ({i})" for i, t in enumerate(tokens)]
    traces = [go.Bar(x=np.arange(len(tokens)), y=np.asarray(v, dtype=float), name=name,
                     marker_color=colours[k % len(colours)], customdata=labels,
                     hovertemplate="%{customdata}<br>" + name + ": %{y:" + fmt + "}<extra></extra>")
              for k, (name, v) in enumerate(series.items())]
    xv, xt = _ticks(tokens, max_ticks=40)
    return built(traces, title=title, height=360, margin=dict(l=60, r=20, t=50, b=90), barmode="group",
                 bargap=0.2, legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1),
                 xaxis=dict(tickmode="array", tickvals=xv, ticktext=xt, tickangle=-60, title="token"),
                 yaxis=dict(title=ytitle))


def role_map(best: np.ndarray, best_score: np.ndarray, scores: np.ndarray, role_labels: list[str], *,
             title: str, ablated=frozenset(), summed: bool = False) -> go.Figure:
    """layers x heads map coloured by each head's strongest role (best: (layer, head) index, -1 =
    none); scores (role, layer, head) all shown on hover. summed: one column, each layer's heads summed."""
    n_roles = len(role_labels)
    n_layers, n_heads = best.shape
    # discrete colour scale: value k (0..n_roles) -> colour of role k-1, 0 = no clear role
    colours = [NO_ROLE_COLOUR] + ROLE_COLOURS[:n_roles]
    scale = []
    for k, colour in enumerate(colours):
        scale += [[k / len(colours), colour], [(k + 1) / len(colours), colour]]
    z = best + 1
    lines = []
    for l in range(n_layers):
        for h in range(n_heads):
            parts = [f"{role_labels[r]}: {'n/a' if np.isnan(scores[r, l, h]) else format(scores[r, l, h], '.2f')}"
                     for r in range(n_roles)]
            head = role_labels[best[l, h]] if best[l, h] >= 0 else "no clear role"
            lines.append(f"layer {l}, {head_name(h, summed)}: <b>{head}</b><br>" + "<br>".join(parts)
                         + ("<br><b>ablated</b>" if (l, h) in ablated else ""))
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    fig = go.Figure(go.Heatmap(
        z=z, x=np.arange(n_heads), y=np.arange(n_layers), zmin=-0.5, zmax=len(colours) - 0.5,
        colorscale=scale, showscale=False, hoverinfo="skip", xgap=2, ygap=2))
    labels = np.where(np.isnan(best_score), "", np.char.mod("%.2f", np.nan_to_num(best_score)))
    fig.add_trace(go.Scatter(
        x=head.ravel(), y=layer.ravel(), mode="markers+text", text=labels.ravel(), textfont=dict(size=12, color=np.where(best.ravel() >= 0, "white", "#333333").tolist()),
        customdata=np.stack([layer.ravel(), head.ravel()], 1).tolist(), hovertext=lines,
        marker=dict(size=max(10, min(28, 480 // max(n_heads, n_layers))), color="rgba(0,0,0,0)", symbol="square"),
        hovertemplate="%{hovertext}<br><i>click to open " + ("this layer" if summed else "this head")
                      + "</i><extra></extra>", showlegend=False))
    for k, label in enumerate(["no clear role"] + list(role_labels)):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label,
                                 marker=dict(size=12, symbol="square", color=colours[k])))
    if ablated:
        al, ah = zip(*sorted(ablated))
        fig.add_trace(go.Scatter(x=list(ah), y=list(al), mode="markers", name="ablated", hoverinfo="skip",
                                 marker=dict(symbol="x-thin", size=14, line=dict(width=3, color="black"))))
    fig.update_layout(
        title=title, height=max(320, 40 * n_layers + 140), margin=dict(l=60, r=20, t=50, b=40),
        xaxis=head_axis(n_heads, summed),
        yaxis=dict(title="layer", tickmode="array", tickvals=list(range(n_layers)), autorange="reversed",
                   showgrid=False, zeroline=False),
        legend=dict(orientation="v", x=1.02, y=1), hovermode="closest", hoverdistance=40, dragmode=False)
    return attach_numbers(fig, lambda: _role_csv(best, scores, role_labels))


def _role_csv(best: np.ndarray, scores: np.ndarray, role_labels) -> str:
    """One row per head: layer, head, its strongest role (or none) and every role's score at full precision."""
    import csv
    import io

    from attnviz.plotting import csv_number

    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["layer", "head", "strongest role"] + [f"{label} score" for label in role_labels])
    for l, h in np.ndindex(best.shape):
        w.writerow([l, h, role_labels[best[l, h]] if best[l, h] >= 0 else "no clear role"]
                   + ["" if np.isnan(v) else csv_number(v) for v in scores[:, l, h]])
    return out.getvalue()


def layer_lines(values: dict[str, np.ndarray], *, title: str, ytitle: str) -> go.Figure:
    """One line per series over the layers (values: name -> (layer,)). The axis spans the layers alone (no tick
    before the first or after the last) and labels each one up to 16 layers, every fifth up to 60."""
    fig = go.Figure()
    n = max((len(v) for v in values.values()), default=0)
    for name, v in values.items():
        fig.add_trace(go.Scatter(x=np.arange(len(v)), y=np.asarray(v, dtype=float), mode="lines+markers", name=name,
                                 hovertemplate="layer %{x}: %{y:.4f}<extra>" + name + "</extra>"))
    xaxis = dict(title="layer", range=[-0.5, max(n, 1) - 0.5], tick0=0)
    if n <= 60:
        xaxis["dtick"] = 1 if n <= 16 else 5
    fig.update_layout(title=title, height=320, margin=dict(l=60, r=20, t=50, b=50), xaxis=xaxis, yaxis=dict(title=ytitle))
    return fig
