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
# Hover names the tokens at every length: the axes are categories "position: token" (n labels per
# axis, not per cell), so a 512-token map carries 2 x 512 strings, not 512^2 customdata pairs.
HOVER_TOKENS_MAX = 160  # kept for callers; no longer limits hover
# Weights are shown with this d3 format: 4 significant digits, scientific for small weights
# (1.234e-05, never "0.0000" and never SI prefixes such as "12.3µ").
WEIGHT_FORMAT = ".4~g"
# Ticks of weight axes and colour bars: plain or scientific notation, never SI prefixes ("100µ").
NO_SI = dict(exponentformat="e")
# The Python attribute on a figure holding its exact numbers for the CSV export (never sent to
# the browser): a callable returning CSV text, see attnviz.export.figure_csv.
NUMBERS_ATTR = "_attnviz_numbers"
# Above this many tokens the axis shows every k-th label.
TICKS_MAX = 80


def token_ticks(tokens, positions=None) -> dict:
    """tickvals/ticktext for integer axis positions (repeated tokens stay separate rows)."""
    idx = np.arange(len(tokens)) if positions is None else np.asarray(positions)
    step = max(1, int(np.ceil(len(idx) / TICKS_MAX)))
    keep = np.arange(0, len(idx), step)
    return dict(tickmode="array", tickvals=keep.tolist(), ticktext=[str(tokens[idx[i]]) for i in keep])


def no_si_prefixes(fig: go.Figure) -> go.Figure:
    """Every axis and colour bar of `fig` formats numbers without SI prefixes (plotly's default
    writes 0.0001 as "100µ"). Returns fig (changed in place)."""
    fig.update_xaxes(**NO_SI)
    fig.update_yaxes(**NO_SI)
    for trace in fig.data:
        if "colorbar" in trace:
            trace.colorbar.exponentformat = NO_SI["exponentformat"]
        marker = getattr(trace, "marker", None)
        # only a marker that shows its scale: a colorbar spec on any other marker makes
        # Streamlit's plotly draw a stray colour bar
        if marker is not None and "colorbar" in marker and marker.showscale:
            marker.colorbar.exponentformat = NO_SI["exponentformat"]
    if _uses_coloraxis(fig):  # touching an unused colour axis would draw an extra colour bar
        fig.update_coloraxes(colorbar_exponentformat=NO_SI["exponentformat"])
    return fig


def _uses_coloraxis(fig: go.Figure) -> bool:
    return any(getattr(t, "coloraxis", None) or getattr(getattr(t, "marker", None), "coloraxis", None)
               for t in fig.data)


def matrix_csv(values, row_labels, col_labels, title: str = "") -> str:
    """CSV of a labelled matrix: a header row of column labels, then one row per row label."""
    import csv
    import io

    out = io.StringIO()
    w = csv.writer(out)
    w.writerow([f"# {title} (rows: query, columns: key)" if title else "# rows: query, columns: key"]
               + list(col_labels))
    for label, row in zip(row_labels, np.asarray(values, dtype=np.float64)):
        w.writerow([label] + [f"{v:.6g}" for v in row])
    return out.getvalue()


def attach_numbers(fig: go.Figure, csv_text) -> go.Figure:
    """Keep a callable returning the figure's exact numbers as CSV on the figure (server side only)."""
    setattr(fig, NUMBERS_ATTR, csv_text)
    return fig


def log_ticks(floor: float, top: float) -> tuple[list[float], list[str]]:
    """Tick weights for a log colour bar: powers of ten (and 1-2-5 steps within a short range)
    between floor and top, with their labels in plain or scientific notation."""
    lo, hi = np.floor(np.log10(floor)), np.ceil(np.log10(top))
    mults = (1, 2, 5) if hi - lo <= 3 else (1,)
    ticks = [m * 10.0 ** e for e in np.arange(lo, hi + 1) for m in mults]
    ticks = [t for t in ticks if floor * (1 - 1e-9) <= t <= top * (1 + 1e-9)]
    if len(ticks) < 2:
        ticks = [floor, top]
    return ticks, [f"{t:.3g}" if t >= 1e-3 else f"{t:.0e}".replace("e-0", "e-") for t in ticks]


def log_colorbar_trace(colorscale, floor: float, top: float, title: str) -> go.Scatter:
    """An invisible trace whose colour bar runs over log10(weight) from floor to top, labelled in
    the real weights at log positions (the heatmap keeps exact weights as z)."""
    vals, text = log_ticks(floor, top)
    lo, hi = float(np.log10(floor)), float(np.log10(top))
    return go.Scatter(x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
                      name="log colour bar",
                      marker=dict(color=[lo], cmin=lo, cmax=hi, colorscale=colorscale, showscale=True,
                                  colorbar=dict(title=title, tickmode="array",
                                                tickvals=[float(np.log10(v)) for v in vals],
                                                ticktext=text, **NO_SI)))


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
    fig = go.Figure(go.Heatmap(**trace))
    if log_top is not None:
        fig.add_trace(log_colorbar_trace(base_scale, log_floor, log_top, colorbar_title + " (log10)"))
    side = height or int(min(900, max(420, 22 * n_r + 160)))
    xt = token_ticks(col_tokens, cols)
    yt = token_ticks(row_tokens, rows)
    if causal:
        x_title = x_title + " · blank cells: future keys, masked"
    fig.update_layout(
        title=title, height=side, margin=dict(l=10, r=10, t=40 if title else 10, b=10),
        plot_bgcolor="rgba(0,0,0,0)",
        xaxis=dict(title=x_title, side="bottom", tickangle=-60, type="category", automargin=True,
                   tickmode="array", tickvals=[col_labels[i] for i in xt["tickvals"]], ticktext=xt["ticktext"],
                   showgrid=False, zeroline=False),
        yaxis=dict(title=y_title, autorange="reversed", type="category", automargin=True,
                   tickmode="array", tickvals=[row_labels[i] for i in yt["tickvals"]], ticktext=yt["ticktext"],
                   showgrid=False, zeroline=False),
    )
    attach_numbers(fig, lambda: matrix_csv(values, [f"{int(r)}:{row_tokens[int(r)]}" for r in rows],
                                           [f"{int(c)}:{col_tokens[int(c)]}" for c in cols], title or "attention"))
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
    hover = (f"head %{{y}}<br>key %{{x}}: %{{customdata}}<br>weight %{{z:{WEIGHT_FORMAT}}}<extra></extra>"
             if direction == "out" else
             f"head %{{y}}<br>query %{{x}}: %{{customdata}}<br>weight %{{z:{WEIGHT_FORMAT}}}<extra></extra>")
    custom = np.tile(np.array([str(t) for t in tokens], dtype=object), (n_heads, 1))
    fig = go.Figure(go.Heatmap(z=values, x=np.arange(n), y=np.arange(n_heads), colorscale=colorscale,
                               zmin=0, customdata=custom, hovertemplate=hover,
                               colorbar=dict(title="weight", **NO_SI)))
    fig.update_layout(
        title=what, height=int(max(260, 26 * n_heads + 140)), margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="key" if direction == "out" else "query", tickangle=-60, automargin=True,
                   **token_ticks(tokens)),
        yaxis=dict(tickmode="array", tickvals=list(range(n_heads)), ticktext=head_labels, autorange="reversed",
                   automargin=True),
    )
    attach_numbers(fig, lambda: matrix_csv(values, head_labels, [f"{i}:{t}" for i, t in enumerate(tokens)],
                                           what).replace("rows: query, columns: key",
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
        hover = [f"{i}: {t}" + (f" ← {side_w[i]:.4g}" if side_w is not None else "") for i, t in enumerate(labels)]
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
