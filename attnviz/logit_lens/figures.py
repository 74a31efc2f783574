"""Figures of the logit lens (plotly): the layers x positions table of top-1 guesses, and one
position's probabilities and KL divergence layer by layer."""
from __future__ import annotations

import csv
import html
import io

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attnviz.logit_lens.lens import LogitLens
from attnviz.plotting import NO_SI, attach_numbers, csv_number

# Positions shown at once in the table: 31 states x 32 positions x the top-5 hover stays ~200 KB.
DEFAULT_WINDOW = 32
MAX_WINDOW = 64
# Cell texts (the top-1 token) get the characters that fit a cell of a PLOT_PX-wide table (the
# plot area on a 1280 px screen with the sidebar open), at most TEXT_CHARS, and none below 3.
PLOT_PX = 620
CHAR_PX = 6.2  # average width of a 10 px character
TEXT_CHARS = 6  # characters of a cell's token before it is cut with "…"
ROW_PX = 16  # height of one layer row in the table (31 rows of SmolLM2 fit one 800 px screen)
Y_TITLE = "layer (0 = embeddings, at the bottom)"


def window(n: int, start: int | None, width: int = DEFAULT_WINDOW) -> tuple[int, int]:
    """(start, stop) of the shown positions: `width` positions from `start` (default: the last
    `width`), clipped to the input."""
    width = max(1, min(int(width), n))
    if start is None:
        start = n - width
    start = min(max(int(start), 0), n - width)
    return start, start + width


def short(label: str, chars: int = TEXT_CHARS) -> str:
    """A token label cut to `chars` characters (with "…")."""
    label = str(label)
    return label if len(label) <= chars else label[: chars - 1] + "…"


def _state_label(s: int) -> str:
    return "emb" if s == 0 else str(s)


def _quote(label: str) -> str:
    return html.escape(f"'{label}'")


def _hover(lens: LogitLens, s: int, i: int, k: int) -> str:
    """Hover text of state s at position i (the lens read position i)."""
    j = lens.index(i)
    nxt = lens.tokens[i + 1] if i + 1 < lens.seq_len else None
    lines = [f"<b>{'embeddings (layer 0)' if s == 0 else f'layer {s}'}</b>, position {i}: {_quote(lens.tokens[i])}",
             f"next in the text: {_quote(nxt)}" if nxt is not None else "end of the text"]
    for r in range(k):
        lines.append(f"{r + 1}. {_quote(lens.top_labels[s, j, r])}  {lens.top_probs[s, j, r]:.4g}")
    return "<br>".join(lines)


def lens_csv(lens: LogitLens, start: int, stop: int, k: int) -> str:
    """The shown window's numbers as CSV: one row per (layer, position, rank)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["layer", "position", "input token", "next token in text", "rank", "predicted token", "probability"])
    for s in range(lens.n_states):
        for i in range(start, stop):
            nxt, j = (lens.tokens[i + 1] if i + 1 < lens.seq_len else ""), lens.index(i)
            for r in range(k):
                w.writerow([s, i, lens.tokens[i], nxt, r + 1, lens.top_labels[s, j, r], csv_number(lens.top_probs[s, j, r])])
    return out.getvalue()


def lens_heatmap(lens: LogitLens, start: int | None = None, width: int = DEFAULT_WINDOW, top_k: int = 5,
                 colorscale: str = "Viridis") -> go.Figure:
    """Layers x positions table of the window [start, start + width): colour = the top-1
    probability, cell text = the top-1 token (when columns are wide enough), hover = the top_k
    guesses with their probabilities. Layer 0 (the embeddings) is the bottom row. The lens must
    have read every position of the window."""
    start, stop = window(lens.seq_len, start, width)
    k = max(1, min(int(top_k), lens.top_k))
    pos = np.arange(start, stop)
    n_states, w = lens.n_states, len(pos)
    cols = [lens.index(i) for i in pos]
    z = lens.top_probs[:, cols, 0].astype(float)  # (S, w)
    hover = [[_hover(lens, s, i, k) for i in pos] for s in range(n_states)]
    chars = min(TEXT_CHARS, int(PLOT_PX / w / CHAR_PX))  # what fits in a cell at 10 px
    show_text = chars >= 3
    trace = dict(z=z, x=pos, y=np.arange(n_states), zmin=0.0, zmax=1.0, colorscale=colorscale,
                 colorbar=dict(title="top-1<br>probability", **NO_SI), hovertext=hover,
                 hovertemplate="%{hovertext}<extra></extra>", xgap=1, ygap=1)
    if show_text:
        trace.update(text=[[short(lens.top_labels[s, j, 0], chars) for j in cols] for s in range(n_states)],
                     texttemplate="%{text}", textfont=dict(size=10))
    fig = go.Figure(go.Heatmap(**trace))
    fig.update_layout(
        title=f"Top-1 next-token guess of every layer · "
              + (f"positions {start}–{stop - 1} of {lens.seq_len}" if stop - start > 1 else f"position {start} of {lens.seq_len}"),
        height=max(320, ROW_PX * n_states + 170), margin=dict(l=70, r=20, t=50, b=90),
        xaxis=dict(title="input token (each cell guesses the token after it)", tickmode="array",
                   tickvals=pos.tolist(), ticktext=[str(lens.tokens[i]) for i in pos],
                   range=[start - 0.5, stop - 0.5], showgrid=False, zeroline=False),
        yaxis=dict(title=Y_TITLE, tickmode="array", tickvals=list(range(n_states)),
                   ticktext=[_state_label(s) for s in range(n_states)], range=[-0.5, n_states - 0.5],
                   showgrid=False, zeroline=False),
        hoverlabel=dict(align="left"), dragmode=False,
    )
    return attach_numbers(fig, lambda: lens_csv(lens, start, stop, k))


def position_lines(lens: LogitLens, position: int, log: bool = False) -> go.Figure:
    """One position, layer by layer: the probability of the model's final prediction and of the
    text's actual next token (top), and KL(final || layer) in nats (bottom)."""
    i = min(max(int(position), 0), lens.seq_len - 1)
    j = lens.index(i)
    layers = np.arange(lens.n_states)
    final = lens.top_labels[-1, j, 0]

    def prob(values):  # on a log axis a probability that underflowed to 0 is a gap, not a plunge to -inf
        values = values.astype(float)
        return np.where(values > 0, values, np.nan) if log else values

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.62, 0.38])
    fig.add_trace(go.Scatter(x=layers, y=prob(lens.p_final[:, j]), mode="lines+markers",
                             name=f"final prediction {_quote(final)}",
                             hovertemplate="layer %{x}: p = %{y:.4g}<extra>final prediction</extra>"), 1, 1)
    if i + 1 < lens.seq_len:
        nxt = lens.tokens[i + 1]
        fig.add_trace(go.Scatter(x=layers, y=prob(lens.p_next[:, j]), mode="lines+markers",
                                 name=f"next token in the text {_quote(nxt)}", line=dict(dash="dash"),
                                 hovertemplate="layer %{x}: p = %{y:.4g}<extra>next token in the text</extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=layers, y=lens.kl[:, j].astype(float), mode="lines+markers", showlegend=True,
                             name="KL(final ‖ layer)", line=dict(color="#7f7f7f"),
                             hovertemplate="layer %{x}: KL = %{y:.4g} nats<extra></extra>"), 2, 1)
    fig.update_layout(
        title=f"Position {i}: {_quote(lens.tokens[i])}, layer by layer",
        # the legend under the axes: long token names wrap it onto more rows, which above would cover the title
        height=520, margin=dict(l=70, r=20, t=50, b=120), hovermode="x unified",
        legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0),
    )
    fig.update_yaxes(title_text="probability (log)" if log else "probability", row=1, col=1,
                     **(dict(type="log") if log else dict(range=[0, 1.02])))
    fig.update_yaxes(title_text="KL (nats)", rangemode="tozero", row=2, col=1)
    step = 1 if lens.n_states <= 16 else 5  # every layer is a point; labels every 5th on deep models
    ticks = layers[::step].tolist()
    fig.update_xaxes(tickmode="array", tickvals=ticks, ticktext=[_state_label(s) for s in ticks], showgrid=False)
    fig.update_xaxes(title_text="layer (0 = embeddings)", row=2, col=1)
    return fig
