"""Figures of a generation: one step's candidates, its attention in every head, the logit lens of the step,
and over all steps a head's map as it was written, sink mass and distance, and the heads that copy."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.plotting import attach_numbers, csv_number, matrix_csv, token_ticks

BEFORE, AFTER, DRAWN = "#9aa5b1", "#1f77b4", "#d62728"


def candidates_figure(labels, p_before: np.ndarray, p_after: np.ndarray, drawn: int | None, title: str) -> go.Figure:
    """Bars of the most likely next tokens: the model's probabilities and those after sampling's changes.
    labels: (k,) token labels, most likely first; drawn: index among them of the token written (None: not
    among them)."""
    y = list(range(len(labels)))
    names = [f"{'▶ ' if i == drawn else ''}{t}" for i, t in enumerate(labels)]
    fig = go.Figure([
        go.Bar(y=y, x=p_before, orientation="h", name="model (temperature 1)", marker_color=BEFORE,
               customdata=names, hovertemplate="%{customdata}<br>model %{x:.4f}<extra></extra>"),
        go.Bar(y=y, x=p_after, orientation="h", name="after temperature, top-k, top-p",
               marker_color=[DRAWN if i == drawn else AFTER for i in y], customdata=names,
               hovertemplate="%{customdata}<br>after sampling's changes %{x:.4f}<extra></extra>"),
    ])
    fig.update_layout(title=title, barmode="group", height=max(300, 26 * len(labels) + 120),
                      margin=dict(l=10, r=10, t=40, b=40), legend=dict(orientation="h", y=-0.12),
                      xaxis=dict(title="probability", range=[0, 1.02]),
                      yaxis=dict(tickmode="array", tickvals=y, ticktext=names, autorange="reversed"))
    attach_numbers(fig, lambda: "token,model_probability,probability_after_sampling_changes,written\n" + "".join(
        f"{_csv_text(t)},{csv_number(a)},{csv_number(b)},{int(i == drawn)}\n" for i, (t, a, b) in enumerate(zip(labels, p_before, p_after))))
    return fig


def _csv_text(s: str) -> str:
    return '"' + str(s).replace('"', '""') + '"'


def step_grid_figure(rows: np.ndarray, tokens, query: int | None, title: str) -> go.Figure:
    """(layer, head, key) one step's attention rows as one map: a line per head, grouped by layer, a column
    per earlier position (query None: per prompt position, for an encoder-decoder's cross-attention)."""
    n_layers, n_heads, n = rows.shape
    z = rows.reshape(n_layers * n_heads, n)
    y_labels = [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)]
    keys = [f"{i}: {t}" for i, t in enumerate(tokens[:n])]  # unique, so they serve as categories and in the hover
    ticks = token_ticks(tokens[:n])
    fig = go.Figure(go.Heatmap(
        z=z, x=keys, y=y_labels, colorscale="Blues", zmin=0, zmax=float(max(z.max(), 1e-6)),
        hovertemplate="%{y}<br>key %{x}<br>weight %{z:.4f}<extra></extra>", colorbar=dict(title="weight")))
    step = max(1, n_heads)
    fig.update_layout(
        title=title, height=int(min(900, max(360, 4 * len(y_labels) + 140))), margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="prompt position (read by the encoder)" if query is None
                   else f"earlier position (the query is {query}: {tokens[query]})", tickmode="array",
                   tickvals=[keys[i] for i in ticks["tickvals"]], ticktext=ticks["ticktext"], tickangle=-60,
                   type="category"),
        yaxis=dict(title="layer · head", tickmode="array", tickvals=y_labels[::step],
                   ticktext=[f"L{i}" for i in range(n_layers)], autorange="reversed", type="category"))
    attach_numbers(fig, lambda: matrix_csv(z, y_labels, [f"{i}:{t}" for i, t in enumerate(tokens[:n])], title,
                                           rows="head", columns="key"))
    return fig


def head_map_figure(m: np.ndarray, tokens, n_prompt: int, title: str) -> go.Figure:
    """(steps, positions) one head's rows as the text was written: row s is the step that wrote token
    n_prompt + s; blank cells lie after that step's query."""
    n_steps, width = m.shape
    written = [f"{s}: {tokens[n_prompt + s]}" for s in range(n_steps)]
    keys = [f"{i}: {t}" for i, t in enumerate(tokens[:width])]
    ticks = token_ticks(tokens[:width])
    fig = go.Figure(go.Heatmap(
        z=m, x=np.arange(width), y=np.arange(n_steps), colorscale="Viridis", zmin=0, hoverongaps=False,
        customdata=np.broadcast_to(np.asarray(keys, dtype=object), m.shape),
        text=np.broadcast_to(np.asarray(written, dtype=object)[:, None], m.shape),
        hovertemplate="step %{text}<br>key %{customdata}<br>weight %{z:.4f}<extra></extra>",
        colorbar=dict(title="weight")))
    fig.add_vline(x=n_prompt - 0.5, line=dict(color="white", dash="dot", width=1))
    ytick = max(1, n_steps // 20)
    fig.update_layout(
        title=title, height=int(min(800, max(360, 10 * n_steps + 160))), margin=dict(l=10, r=10, t=40, b=10),
        xaxis=dict(title="position attended to (dotted line: end of the prompt)", tickmode="array",
                   tickvals=ticks["tickvals"], ticktext=ticks["ticktext"], tickangle=-60),
        yaxis=dict(title="step (the token written)", tickmode="array", tickvals=list(range(0, n_steps, ytick)),
                   ticktext=[written[i] for i in range(0, n_steps, ytick)], autorange="reversed"))
    attach_numbers(fig, lambda: matrix_csv(np.nan_to_num(m, nan=0.0), written, keys, title, rows="step", columns="key"))
    return fig


def per_step_figure(sink: np.ndarray, distance: np.ndarray, labels, title: str) -> go.Figure:
    """Two lines over the steps: the mean weight on the first token (sink mass) and the mean distance back."""
    x = np.arange(len(sink))
    fig = go.Figure([
        go.Scatter(x=x, y=sink, name="sink mass (weight on the first token)", mode="lines+markers",
                   customdata=labels, hovertemplate="step %{x}: %{customdata}<br>sink mass %{y:.3f}<extra></extra>"),
        go.Scatter(x=x, y=distance, name="mean distance back (tokens)", mode="lines+markers", yaxis="y2",
                   customdata=labels, hovertemplate="step %{x}: %{customdata}<br>mean distance %{y:.1f}<extra></extra>"),
    ])
    fig.update_layout(title=title, height=380, margin=dict(l=10, r=10, t=40, b=70),
                      legend=dict(orientation="h", yanchor="top", y=-0.3, x=0),  # below the axis title, clear of the title
                      xaxis=dict(title="step"), yaxis=dict(title="sink mass", range=[0, 1]),
                      yaxis2=dict(title="distance (tokens)", overlaying="y", side="right", rangemode="tozero"))
    attach_numbers(fig, lambda: "step,token,sink_mass,mean_distance_tokens\n" + "".join(
        f"{i},{_csv_text(t)},{csv_number(a)},{csv_number(b)}\n" for i, (t, a, b) in enumerate(zip(labels, sink, distance))))
    return fig


def layer_head_figure(values: np.ndarray, title: str, colorbar: str, selected: tuple[int, int] | None = None) -> go.Figure:
    """(layer, head) values as a grid, one cell a head; transparent markers at cell centres carry clicks."""
    n_layers, n_heads = values.shape
    fig = go.Figure(go.Heatmap(z=values, x=np.arange(n_heads), y=np.arange(n_layers), colorscale="Viridis",
                               colorbar=dict(title=colorbar),
                               hovertemplate="layer %{y}, head %{x}<br>" + colorbar + " %{z:.3f}<extra></extra>"))
    yy, xx = np.mgrid[0:n_layers, 0:n_heads]
    fig.add_trace(go.Scatter(x=xx.ravel(), y=yy.ravel(), mode="markers", marker=dict(size=14, opacity=0),
                             customdata=np.stack([yy.ravel(), xx.ravel()], axis=1), hoverinfo="skip",
                             showlegend=False))
    if selected is not None:
        fig.add_shape(type="rect", x0=selected[1] - 0.5, x1=selected[1] + 0.5, y0=selected[0] - 0.5,
                      y1=selected[0] + 0.5, line=dict(color=DRAWN, width=2))
    fig.update_layout(title=title, height=int(min(700, max(300, 18 * n_layers + 140))),
                      margin=dict(l=10, r=10, t=40, b=10), clickmode="event+select",
                      xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", autorange="reversed"))
    attach_numbers(fig, lambda: matrix_csv(values, [f"layer {i}" for i in range(n_layers)],
                                           [f"head {h}" for h in range(n_heads)], title, rows="layer", columns="head"))
    return fig


def lens_figure(labels: np.ndarray, probs: np.ndarray, written: str, title: str) -> go.Figure:
    """(state, k) the logit lens of one step: each state's top guesses (the embeddings at the bottom)."""
    n_states, k = probs.shape
    fig = go.Figure(go.Heatmap(
        z=probs, x=np.arange(k), y=np.arange(n_states), text=labels, texttemplate="%{text}", zmin=0, zmax=1,
        colorscale="Blues", colorbar=dict(title="probability"),
        hovertemplate="state %{y}, guess %{x}: %{text}<br>probability %{z:.4f}<extra></extra>"))
    fig.update_layout(title=title, height=int(min(900, max(320, 20 * n_states + 120))),
                      margin=dict(l=10, r=10, t=40, b=10),
                      xaxis=dict(title=f"guesses, most likely first (written: {written})", dtick=1),
                      yaxis=dict(title="residual stream: 0 = embeddings, i = after block i", dtick=max(1, n_states // 16)))
    attach_numbers(fig, lambda: matrix_csv(probs, [f"state {i}" for i in range(n_states)],
                                           [f"guess {j}" for j in range(k)], title, rows="state", columns="guess"))
    return fig
