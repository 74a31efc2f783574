"""Figures of the heatmap page: one head's matrix, one token across heads, the lines view, and
the all-heads grid (a PNG with a click layer)."""
from __future__ import annotations

import base64

import numpy as np
import plotly.graph_objects as go

from attnviz.heatmap.raster import GridLayout, grid_csv
from attnviz.plotting import NO_SI, WEIGHT_FORMAT, attach_numbers, log_colorbar_trace, log_colorscale, matrix_csv, token_ticks
from attnviz.types import SUMMED, head_name


def heatmap_figure(values: np.ndarray, row_tokens, col_tokens, *, rows=None, cols=None,
                   zmin=None, zmax=None, colorscale="Viridis", log_floor: float | None = None,
                   title: str = "", colorbar_title: str = "weight", height: int | None = None,
                   x_title: str = "key (attended to)", y_title: str = "query (attending)",
                   causal: bool = False) -> go.Figure:
    """Heatmap of a (query, key) matrix with token tick labels, one row per position.

    values: (n_rows, n_cols) exact weights (plotted, hovered and exported as they are);
    rows/cols: original positions of each row/column (for labels); log_floor: colour by
    log10 of the weight from this floor up (see log_colorscale; the colour bar is labelled in
    weights at log positions); causal: cells whose key comes after the query are masked by the
    model, so they are drawn blank (NaN) rather than as weight 0 (the CSV keeps the 0).
    The axes are categories "position: token" (unique, so repeated tokens stay apart).
    """
    values = np.asarray(values, dtype=np.float32)
    n_r, n_c = values.shape
    rows = np.arange(n_r) if rows is None else np.asarray(rows)
    cols = np.arange(n_c) if cols is None else np.asarray(cols)
    log_top = None
    if log_floor is not None:
        zmin, zmax = 0.0, float(zmax if zmax is not None else max(values.max(), 1e-6))
        log_top = zmax
        base_scale = colorscale
        colorscale = log_colorscale(colorscale, log_floor, zmax)
    row_labels = [f"{int(rows[i])}: {row_tokens[int(rows[i])]}" for i in range(n_r)]
    col_labels = [f"{int(cols[j])}: {col_tokens[int(cols[j])]}" for j in range(n_c)]
    z = values
    if causal:
        future = cols[None, :] > rows[:, None]  # (query, key): the model cannot see these keys
        z = np.where(future, np.nan, values).astype(np.float32)
    trace = dict(z=z, x=col_labels, y=row_labels, zmin=zmin, zmax=zmax, hoverongaps=False,
                 colorscale=colorscale, colorbar=dict(title=colorbar_title, **NO_SI), xgap=0, ygap=0,
                 hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{colorbar_title} %{{z:{WEIGHT_FORMAT}}}<extra></extra>")
    if log_top is not None:
        trace["showscale"] = False
    traces = [go.Heatmap(**trace)]
    if log_top is not None:
        traces.append(log_colorbar_trace(base_scale, log_floor, log_top, colorbar_title + " (log10)"))
    side = height or int(min(900, max(420, 22 * n_r + 160)))
    xt = token_ticks(col_tokens, cols)
    yt = token_ticks(row_tokens, rows)
    if causal:
        x_title = x_title + " · blank cells: future keys, masked"
    # the layout goes into the constructor: fig.update_layout takes plotly's batch relayout, about ten times as long
    fig = go.Figure(traces, layout=dict(
        title=title, height=side, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(title=x_title, side="bottom", tickangle=-60, type="category", automargin=True, **NO_SI,
                   tickmode="array", tickvals=[col_labels[i] for i in xt["tickvals"]], ticktext=xt["ticktext"],
                   showgrid=False, zeroline=False),
        yaxis=dict(title=y_title, autorange="reversed", type="category", automargin=True, **NO_SI,
                   tickmode="array", tickvals=[row_labels[i] for i in yt["tickvals"]], ticktext=yt["ticktext"],
                   showgrid=False, zeroline=False),
    ))
    attach_numbers(fig, lambda: matrix_csv(values, [f"{int(r)}:{row_tokens[int(r)]}" for r in rows],
                                           [f"{int(c)}:{col_tokens[int(c)]}" for c in cols], title or "attention"))
    return fig


def focus_figure(layer_attention: np.ndarray, token: int, tokens, *, direction: str = "out",
                 colorscale="Viridis", ablated_heads=(), what: str = "weight", special_mask=None,
                 key_special_mask=None, hide_special: bool = False, renormalise: bool = True,
                 summed: bool = False) -> go.Figure:
    """Heads x tokens heatmap for one token of one layer (`what`: the name of the numbers; summed: the layer's one
    map, its heads summed, an ALTI view).

    layer_attention: (head, query, key). direction 'out': what `token` attends to (its row in
    every head); 'in': what attends to `token` (its column in every head). hide_special (with the
    special masks) leaves special tokens off the token axis and, with renormalise, rescales each
    query's weights over the keys left, as the heatmap does (see views.focus_view).
    """
    from attnviz.heatmap.views import focus_view

    view = focus_view(layer_attention, token, special_mask, direction=direction, hide_special=hide_special,
                      renormalise=renormalise, key_special_mask=key_special_mask)
    values, positions = view.values, view.positions
    n_heads = values.shape[0]
    head_labels = [head_name(h, summed) + (" ✂" if h in ablated_heads else "") for h in range(n_heads)]
    label = tokens[token]
    heading = (f"what {label!r} attends to (its row)" if direction == "out"
               else f"what attends to {label!r} (its column)")
    if hide_special:
        heading += " · special tokens hidden" + (", renormalised" if view.renormalised else "")
    what_shown = ("renormalised " if view.renormalised else "") + what
    head = SUMMED if summed else "head %{y}"
    hover = f"{head}<br>{'key' if direction == 'out' else 'query'} %{{x}}<br>{what_shown} %{{z:{WEIGHT_FORMAT}}}<extra></extra>"
    # the x axis is categories "position: token" (hover names the token without a per-cell customdata: a
    # heads x tokens array of strings was most of this figure's size and build time)
    labels = [f"{int(i)}: {tokens[int(i)]}" for i in positions]
    ticks = token_ticks([tokens[int(i)] for i in positions])
    fig = go.Figure(go.Heatmap(z=values, x=labels, y=np.arange(n_heads), colorscale=colorscale,
                               zmin=0, hovertemplate=hover, colorbar=dict(title=what_shown, **NO_SI)), layout=dict(
        title=heading, height=int(max(260, 26 * n_heads + 140)), margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="key" if direction == "out" else "query", tickangle=-60, automargin=True, **NO_SI,
                   type="category", tickmode="array", tickvals=[labels[i] for i in ticks["tickvals"]],
                   ticktext=ticks["ticktext"]),
        yaxis=dict(tickmode="array", tickvals=list(range(n_heads)), ticktext=head_labels, autorange="reversed", **NO_SI,
                   automargin=True),
    ))
    attach_numbers(fig, lambda: matrix_csv(values, head_labels, [f"{int(i)}:{tokens[int(i)]}" for i in positions],
                                           heading).replace("rows: query, columns: key",
                                                         "rows: head, columns: " + ("key" if direction == "out" else "query")))
    return fig


def lines_figure(matrix: np.ndarray, tokens, *, focus: int | None = None, threshold: float = 0.02,
                 color: str = "#1f77b4", title: str = "") -> go.Figure:
    """BertViz-style view: tokens in two columns, a line from each query (left) to each key
    (right) whose opacity grows with the weight. Weights below `threshold` are not drawn.
    With `focus`, only that query's lines are drawn, in full colour.
    """
    m = np.asarray(matrix, dtype=np.float32)
    n = m.shape[0]
    traces = []
    queries = range(n) if focus is None else [focus]
    bins = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 1.01])
    for lo, hi in zip(bins[:-1], bins[1:]):
        xs, ys = [], []
        for q in queries:
            for k in np.flatnonzero((m[q] >= max(lo, threshold)) & (m[q] < hi)):
                xs += [0, 1, None]
                ys += [q, k, None]
        if xs:
            traces.append(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                     line=dict(color=color, width=1 + 4 * hi), opacity=float(min(1.0, 0.15 + hi * 0.85))))
    labels = [str(t) for t in tokens]
    for x, anchor in ((0, "right"), (1, "left")):
        side_w = m[focus] if (focus is not None and x == 1) else None
        hover = [f"{i}: {t}" + (f" ← {side_w[i]:.4g}" if side_w is not None else "") for i, t in enumerate(labels)]
        traces.append(go.Scatter(
            x=[x] * n, y=list(range(n)), mode="markers+text", text=labels,
            textposition="middle left" if anchor == "right" else "middle right",
            marker=dict(size=6, color=["#d62728" if (focus == i and x == 0) else "#555" for i in range(n)]),
            hovertext=hover, hoverinfo="text", showlegend=False))
    return go.Figure(traces, layout=dict(
        title=title, height=int(max(300, 18 * n + 80)), margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        xaxis=dict(visible=False, range=[-0.6, 1.6], **NO_SI), yaxis=dict(visible=False, autorange="reversed", **NO_SI),
        plot_bgcolor="white",
    ))


OPEN_FRAME, ABLATED_FRAME = "rgb(220,30,30)", "rgb(140,140,140)"


def grid_frame(layout: GridLayout, layer: int, head: int, colour: str = OPEN_FRAME) -> dict:
    """A plotly rectangle around one thumbnail of the grid, in the gap around it: red for the open head (drawn
    over a cached grid figure by show_figure's shapes), grey for an ablated one."""
    step, half = layout.thumb + layout.gap, layout.gap / 2
    x0, y0 = layout.gap + head * step, layout.gap + layer * step
    return dict(type="rect", x0=x0 - half, x1=x0 + layout.thumb + half, y0=y0 - half, y1=y0 + layout.thumb + half,
                line=dict(color=colour, width=max(3, layout.gap)), layer="above")


def grid_figure(png: bytes, layout: GridLayout, *, head_means=None, ablated=(), selected=None, attention=None,
                tokens=None, key_tokens=None, summed: bool = False) -> go.Figure:
    """Plotly figure: the PNG as one go.Image plus transparent markers at thumbnail centres,
    so a click reports (layer, head) through st.plotly_chart(on_select=...). summed: one thumbnail per layer,
    its heads summed (an ALTI view), named so on the axis and in the hover.

    attention (layer, head, query, key) and tokens (key_tokens when keys differ), when given, are the numbers its CSV export
    holds (kept on the figure, never sent to the browser); without them the CSV says so."""
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    xs, ys, custom, text = [], [], [], []
    ablated = set(map(tuple, ablated))
    for layer in range(layout.n_layers):
        for head in range(layout.n_heads):
            x, y = layout.centre(layer, head)
            xs.append(x)
            ys.append(y)
            custom.append([layer, head])
            extra = f"<br>{head_means[layer][head]}" if head_means is not None else ""
            text.append(f"layer {layer}, {head_name(head, summed)}"
                        f"{' (ablated)' if (layer, head) in ablated else ''}{extra}"
                        "<br>click to open")
    clicks = go.Scatter(x=xs, y=ys, mode="markers", customdata=custom, hovertext=text, hoverinfo="text",
                        marker=dict(size=max(8, layout.thumb * 0.8), symbol="square", opacity=0.01, color="white"),
                        showlegend=False)
    step = layout.thumb + layout.gap
    # frames around the ablated heads (grey) and the open head (red)
    frames = [grid_frame(layout, *lh, ABLATED_FRAME) for lh in sorted(ablated)]
    if selected is not None:
        frames.append(grid_frame(layout, *selected))
    fig = go.Figure([go.Image(source=uri, hoverinfo="skip"), clicks], layout=dict(
        shapes=frames, height=int(layout.height * 1.0 + 70), margin=dict(l=60, r=10, t=30, b=10), dragmode=False,
        xaxis=dict(range=[0, layout.width], showgrid=False, zeroline=False, side="top", title=SUMMED if summed else "head",
                   **NO_SI, tickvals=[layout.gap + h * step + layout.thumb / 2 for h in range(layout.n_heads)],
                   ticktext=["" if summed else str(h) for h in range(layout.n_heads)], constrain="domain"),
        yaxis=dict(range=[layout.height, 0], showgrid=False, zeroline=False, title="layer", **NO_SI,
                   tickvals=[layout.gap + l * step + layout.thumb / 2 for l in range(layout.n_layers)],
                   ticktext=[str(l) for l in range(layout.n_layers)], scaleanchor="x", constrain="domain"),
    ))
    if attention is not None and tokens is not None:
        attach_numbers(fig, lambda: grid_csv(attention, tokens, layout.thumb, key_tokens))
    else:
        attach_numbers(fig, "# the grid is a picture of every head; its numbers are in the heatmap's CSV\n")
    return fig
