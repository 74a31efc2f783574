"""Plotly figure builders for the attention lab: labelled matrices and small line/bar charts."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from attnviz.lab.matrix_text import format_number
from attnviz.plotting import built, cell_colours, readable_ink

TEXT_LIMIT = 14  # print numbers in the cells only up to this many rows and columns
FONT = 15  # base font size: readable from the back of a lecture room
COLORWAY = ["#d1495b", "#2e86ab", "#edae49", "#66a182", "#8d6a9f", "#00798c"]  # distinct line colours
PLOT_BG, PLOT_BG_RGB = "#f3f3f3", (243, 243, 243)  # behind the matrices: what a masked (-inf) cell shows


def _labels(labels: Sequence[str] | None, n: int, prefix: str) -> list[str]:
    return list(labels) if labels is not None else [f"{prefix}{i + 1}" for i in range(n)]


def matrix_heatmap(m: np.ndarray, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None,
                   title: str = "", digits: int = 4, colorscale: str = "Blues", zmin: float | None = None,
                   zmax: float | None = None, show_text: bool | None = None, height: int | None = None,
                   row_title: str = "", col_title: str = "", showscale: bool = False,
                   zmid: float | None = None) -> go.Figure:
    """A labelled heatmap of m (n_rows, n_cols) with each value printed to `digits` decimals.

    Rows and columns are plotted at integer positions (repeated labels stay separate);
    -inf cells (masked scores) are left blank and printed as '-inf'.
    """
    m = np.atleast_2d(np.asarray(m, dtype=np.float64))
    n_r, n_c = m.shape
    rows, cols = _labels(rows, n_r, "q"), _labels(cols, n_c, "k")
    finite = np.where(np.isfinite(m), m, np.nan)
    if show_text is None:
        show_text = n_r <= TEXT_LIMIT and n_c <= TEXT_LIMIT
    fin = m[np.isfinite(m)]
    integers = bool(np.all(fin == np.round(fin))) and (fin.size == 0 or np.abs(fin).max() < 1e6)
    fmt = (lambda x: format_number(x, digits)) if integers else (
        lambda x: f"{x:.{digits}f}" if np.isfinite(x) else format_number(x))
    text = [[fmt(x) for x in row] for row in m]
    traces = [go.Heatmap(
        z=finite, x=list(range(n_c)), y=list(range(n_r)), colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid,
        text=text, showscale=showscale,
        customdata=[[[rows[i], cols[j]] for j in range(n_c)] for i in range(n_r)],
        hovertemplate="%{customdata[0]} → %{customdata[1]}: %{text}<extra></extra>", xgap=2, ygap=2)]
    if show_text:
        # each number in black or white, whichever reads better on its cell (at least 4.5:1, WCAG AA), drawn as
        # a text layer: a heatmap's own cell text takes one colour, and plotly's automatic choice gives dark grey
        # on mid grey (3.3:1)
        colours = cell_colours(finite, colorscale, zmin, zmax, zmid)
        ink = [readable_ink(c) if np.isfinite(c).all() else readable_ink(PLOT_BG_RGB) for c in colours.reshape(-1, 3)]
        ii, jj = np.indices((n_r, n_c))
        traces.append(go.Scatter(
            x=jj.ravel().tolist(), y=ii.ravel().tolist(), mode="text", text=[t for row in text for t in row],
            textfont={"size": FONT if max(n_r, n_c) <= 6 else FONT - 3, "color": ink}, hoverinfo="skip",
            showlegend=False, name="cell values"))
    return built(
        traces, title={"text": title, "font": {"size": FONT + 1}, "automargin": True, "yref": "container"},
        height=height or max(190, 110 + 46 * n_r),
        margin={"l": 10, "r": 10, "t": (50 if max(len(c) for c in cols) <= 6 else 75) if title else 30, "b": 10}, font={"size": FONT - 2},
        # fixed ranges: the cells exactly, whatever the text layer's points would add to an automatic range
        xaxis={"tickvals": list(range(n_c)), "ticktext": cols, "side": "top", "title": col_title, "showgrid": False,
               "range": [-0.5, n_c - 0.5], "zeroline": False, "automargin": True},
        yaxis={"tickvals": list(range(n_r)), "ticktext": rows, "range": [n_r - 0.5, -0.5], "title": row_title,
               "showgrid": False, "zeroline": False},
        plot_bgcolor=PLOT_BG)


def lines(x: Sequence[float], series: dict[str, Sequence[float]], title: str, x_title: str, y_title: str,
          log_x: bool = False, log_y: bool = False, marker_x: float | None = None, height: int = 340,
          hover_digits: int = 4) -> go.Figure:
    """One line per series over x; an optional vertical marker at marker_x."""
    traces = [go.Scatter(x=list(x), y=list(y), mode="lines+markers", name=name,
                         line={"color": COLORWAY[i % len(COLORWAY)]},
                         hovertemplate=f"{x_title} = %{{x}}<br>{name}: %{{y:.{hover_digits}f}}<extra></extra>")
              for i, (name, y) in enumerate(series.items())]
    fig = built(traces, title={"text": title, "font": {"size": FONT}}, height=height, font={"size": FONT - 2},
                margin={"l": 10, "r": 10, "t": 45, "b": 10}, colorway=COLORWAY,
                legend={"orientation": "h", "y": -0.25, "x": 0},
                xaxis={"title": x_title, "type": "log" if log_x else "linear"},
                yaxis={"title": y_title, "type": "log" if log_y else "linear"})
    if marker_x is not None:
        fig.add_vline(x=marker_x, line_dash="dot", line_color="#888")
    return fig


def bars(labels: Sequence[str], series: dict[str, Sequence[float]], title: str, y_title: str,
         height: int = 300, digits: int = 4, y_range: tuple[float, float] | None = None) -> go.Figure:
    """Grouped bars at integer positions labelled with `labels`, values printed on the bars."""
    traces = [go.Bar(x=list(range(len(labels))), y=list(y), name=name, marker_color=COLORWAY[i % len(COLORWAY)],
                     text=[format_number(v, digits) for v in y], textposition="outside", customdata=list(labels),
                     hovertemplate=f"%{{customdata}} · {name}: %{{y:.{digits}f}}<extra></extra>")
              for i, (name, y) in enumerate(series.items())]
    return built(traces, title={"text": title, "font": {"size": FONT}}, height=height, font={"size": FONT - 2},
                 margin={"l": 10, "r": 10, "t": 45, "b": 10}, barmode="group", colorway=COLORWAY,
                 # a gap between the bars of a group: plotly shrinks each value label to its bar's width, so
                 # neighbouring labels can no longer touch ("3.3673.367")
                 bargroupgap=0.3 if len(series) > 1 else None,
                 showlegend=len(series) > 1, legend={"orientation": "h", "y": -0.2, "x": 0},
                 xaxis={"tickvals": list(range(len(labels))), "ticktext": list(labels)},
                 yaxis={"title": y_title, "range": list(y_range) if y_range else None})


HEAD_COLOURS = ["#d1495b", "#2e86ab", "#edae49", "#66a182", "#8d6a9f", "#00798c", "#f4a259", "#5b8e7d"]


def head_split(d_model: int, n_heads: int) -> go.Figure:
    """One stacked bar: the columns of Q that each head owns (d_head = d_model / n_heads each)."""
    d_head = d_model // n_heads
    traces = []
    for i in range(n_heads):
        lo, hi = i * d_head, (i + 1) * d_head - 1
        traces.append(go.Bar(x=[d_head], y=["columns of Q"], base=[lo], orientation="h", name=f"head {i + 1}",
                             marker_color=HEAD_COLOURS[i % len(HEAD_COLOURS)], text=[f"head {i + 1}: {lo}–{hi}"],
                             textposition="inside", hovertemplate=f"head {i + 1}: columns {lo}–{hi}<extra></extra>"))
    return built(traces, height=130, showlegend=False, barmode="stack", margin={"l": 10, "r": 10, "t": 10, "b": 30},
                 font={"size": FONT - 2}, xaxis={"range": [0, d_model], "title": f"d_model = {d_model} columns"})


def score_histograms(raw: np.ndarray, d_k: int) -> go.Figure:
    """Overlaid histograms of raw q·k scores and of the same scores divided by √d_k."""
    span = max(4.0, float(np.percentile(np.abs(raw), 99.5)))
    bins = {"start": -span, "end": span, "size": span / 40}
    return built(
        [go.Histogram(x=raw, name="q·k (unscaled)", xbins=bins, opacity=0.6, marker_color="#d1495b",
                      hovertemplate="score %{x}<br>count %{y}<extra>unscaled</extra>"),
         go.Histogram(x=raw / np.sqrt(d_k), name="q·k / √d_k", xbins=bins, opacity=0.6, marker_color="#2e86ab",
                      hovertemplate="score %{x}<br>count %{y}<extra>scaled</extra>")],
        barmode="overlay", height=330, margin={"l": 10, "r": 10, "t": 10, "b": 10}, font={"size": FONT - 2},
        xaxis_title="score", yaxis_title=f"count of {len(raw)} random pairs",
        legend={"orientation": "h", "y": 1.12, "x": 0})
