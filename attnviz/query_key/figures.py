"""Plotly figures for the query · key page: q, the keys, their products, the scores and the softmax row."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.metrics.figures import _ticks
from attnviz.plotting import built

PRODUCT_SCALE = "RdBu_r"  # diverging: red = pushes the score up, blue = pushes it down
VECTOR_SCALE = "PuOr_r"  # diverging for the raw q and k values
BAR_TICKS = 30  # most token labels under a bar chart (long inputs: every n-th key is labelled)


def _label(tokens, i: int) -> str:
    return f"{i}: {tokens[i]}"


def _sym(values: np.ndarray) -> float:
    m = float(np.nanmax(np.abs(values))) if values.size else 1.0
    return m if m > 0 else 1.0


def query_strip(q: np.ndarray, token: str, *, title: str) -> go.Figure:
    """q: (d_head,) one query vector as a 1 x d_head strip."""
    q = np.asarray(q, dtype=float)
    d = np.arange(q.size)
    m = _sym(q)
    traces = [go.Heatmap(
        z=q[None, :], x=d, y=[0], zmin=-m, zmax=m, zmid=0, colorscale=VECTOR_SCALE,
        colorbar=dict(title=dict(text="q_d", side="right"), thickness=10, len=1.2, nticks=3), xgap=1,
        customdata=d[None, :], hovertemplate="dimension %{x}<br>q_d = %{z:.4f}<extra></extra>")]
    return built(traces, title=title, height=220, margin=dict(l=90, r=20, t=50, b=45),
                 xaxis=dict(title="dimension d of the head", dtick=max(1, q.size // 16)),
                 yaxis=dict(tickvals=[0], ticktext=[f"q ({token})"], title=None))


def key_matrix(values: np.ndarray, keys: np.ndarray, tokens, *, title: str, what: str, colorscale: str,
               colorbar: str, hover: str, extra: np.ndarray | None = None) -> go.Figure:
    """values: (len(keys), d_head) one row per shown key (keys: their positions, int (n_shown,)).
    Rows are at integer positions 0..n_shown-1 labelled "position: token" (repeated tokens stay apart).
    extra: optional (n_shown,) number per row shown in the hover (e.g. the row's dot product)."""
    values = np.asarray(values, dtype=float)
    n_shown, d_head = values.shape
    m = _sym(values)
    labels = [_label(tokens, int(j)) for j in keys]
    row_extra = np.zeros(n_shown) if extra is None else np.asarray(extra, dtype=float)
    custom = np.stack([np.broadcast_to(np.asarray(labels, dtype=object)[:, None], values.shape),
                       np.broadcast_to(row_extra[:, None], values.shape)], axis=-1)
    traces = [go.Heatmap(
        z=values, x=np.arange(d_head), y=np.arange(n_shown), zmin=-m, zmax=m, zmid=0, colorscale=colorscale,
        colorbar=dict(title=colorbar, thickness=12), customdata=custom, xgap=0.5, ygap=0.5,
        hovertemplate="key %{customdata[0]}<br>dimension %{x}<br>" + hover + "<extra></extra>")]
    tv, tt = _ticks(labels, np.arange(n_shown))
    return built(traces, title=title, height=max(260, 16 * n_shown + 130), margin=dict(l=130, r=20, t=50, b=50),
                 xaxis=dict(title="dimension d of the head", dtick=max(1, d_head // 16)),
                 yaxis=dict(title=what, tickmode="array", tickvals=tv, ticktext=tt, autorange="reversed"))


def score_bars(row, tokens, *, title: str) -> go.Figure:
    """Bars of the scaled scores q·k_j × scaling for every visible key of a QueryRow."""
    keys = np.flatnonzero(row.visible)
    traces = [go.Bar(
        x=keys, y=row.scores[keys], marker_color=np.where(row.scores[keys] >= 0, "#d6604d", "#4393c3"),
        customdata=np.stack([np.asarray([_label(tokens, int(j)) for j in keys], dtype=object), row.dots[keys]], 1),
        hovertemplate="key %{customdata[0]}<br>q·k = %{customdata[1]:.4f}<br>score = q·k × "
                      f"{row.scaling:.4g} = " + "%{y:.4f}<extra></extra>")]
    tv, tt = _ticks([tokens[j] for j in keys], keys, max_ticks=BAR_TICKS)
    return built(traces, title=title, height=320, margin=dict(l=60, r=20, t=50, b=90), bargap=0.15,
                 xaxis=dict(title="key token", tickmode="array", tickvals=tv, ticktext=tt, tickangle=-60),
                 yaxis=dict(title="score q·k × scaling"))


def softmax_bars(row, tokens, *, title: str) -> go.Figure:
    """Bars of the softmax weights of a QueryRow over every key position (0 where not visible)."""
    n = row.weights.size
    pos = np.arange(n)
    colours = np.where(row.visible, "#2b8cbe", "#cccccc")
    colours[row.query] = "#e6550d"
    traces = [go.Bar(
        x=pos, y=row.weights, marker_color=colours,
        customdata=np.asarray([_label(tokens, j) for j in range(n)], dtype=object),
        hovertemplate="key %{customdata}<br>weight %{y:.4f}<extra></extra>")]
    tv, tt = _ticks(tokens, pos, max_ticks=BAR_TICKS)
    return built(traces, title=title, height=320, margin=dict(l=60, r=20, t=50, b=90), bargap=0.15,
                 xaxis=dict(title="key token", tickmode="array", tickvals=tv, ticktext=tt, tickangle=-60),
                 yaxis=dict(title="attention weight", rangemode="tozero"))


def dimension_bars(products: np.ndarray, *, title: str, sort: bool) -> go.Figure:
    """products: (d_head,) q_d·k_d for one key; bars in dimension order or sorted (largest first)."""
    p = np.asarray(products, dtype=float)
    order = np.argsort(-p, kind="stable") if sort else np.arange(p.size)
    x = np.arange(p.size)
    traces = [go.Bar(
        x=x, y=p[order], marker_color=np.where(p[order] >= 0, "#d6604d", "#4393c3"), customdata=order,
        hovertemplate="dimension %{customdata}<br>q_d·k_d = %{y:.4f}<extra></extra>")]
    xaxis = (dict(title="dimension (sorted by contribution)", tickmode="array", tickvals=x.tolist(),
                  ticktext=[str(d) for d in order], tickangle=-90) if sort else
             dict(title="dimension d of the head", dtick=max(1, p.size // 16)))
    return built(traces, title=title, height=320, margin=dict(l=60, r=20, t=50, b=70), bargap=0.1,
                 xaxis=xaxis, yaxis=dict(title="q_d · k_d"))
