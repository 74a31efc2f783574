"""Plotly figures of a training run: attention at a step, an animation, loss, entropy and settling."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attnviz.plotting import attach_numbers, matrix_csv
from attnviz.training.runs import Run

COLORSCALE = "Viridis"


def _label(token) -> str:
    """A token safe for plotly text: "<s>" would otherwise be read as a strike-through tag."""
    return str(token).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _ticks(tokens) -> dict:
    """Integer positions with token labels (repeated tokens stay separate rows)."""
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[_label(t) for t in tokens])


def stack_tokens(run: Run, stack: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(query tokens, key tokens) of a stack."""
    dec = run.decoder_tokens or ()
    if stack == "self":
        return run.tokens, run.tokens
    if stack == "decoder":
        return dec, dec
    return dec, run.tokens


def head_map(run: Run, stack: str, frame: int, layer: int, head: int | None) -> np.ndarray:
    """(query, key) map of one head, or the mean over heads when head is None."""
    a = run.attention[stack][frame, layer]
    return a.mean(axis=0) if head is None else a[head]


def _csv(maps, q_tokens, k_tokens, titles) -> str:
    """CSV blocks of (query, key) maps at full precision, one per title, rows and columns labelled "i:token"."""
    rows, cols = [f"{i}:{t}" for i, t in enumerate(q_tokens)], [f"{j}:{t}" for j, t in enumerate(k_tokens)]
    return "".join(matrix_csv(m, rows, cols, t, rows="query (attending)", columns="key (attended to)")
                   for m, t in zip(maps, titles))


def _hover(q_tokens, k_tokens):
    custom = np.empty((len(q_tokens), len(k_tokens), 2), dtype=object)
    custom[:, :, 0] = np.array([f"{i}: {_label(t)}" for i, t in enumerate(q_tokens)], dtype=object)[:, None]
    custom[:, :, 1] = np.array([f"{j}: {_label(t)}" for j, t in enumerate(k_tokens)], dtype=object)[None, :]
    return custom


def attention_heatmap(matrix: np.ndarray, q_tokens, k_tokens, title: str = "", height: int = 420) -> go.Figure:
    """One (query, key) map with token ticks and hover of query, key and weight (its CSV export at full
    precision)."""
    fig = go.Figure(go.Heatmap(
        z=np.round(np.asarray(matrix, dtype=np.float32), 4), x=np.arange(len(k_tokens)), y=np.arange(len(q_tokens)),
        zmin=0, zmax=1, colorscale=COLORSCALE, colorbar=dict(title="weight", thickness=12),
        customdata=_hover(q_tokens, k_tokens),
        hovertemplate="query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.3f}<extra></extra>"))
    fig.update_layout(title=dict(text=title, font=dict(size=15)), height=height,
                      margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                      xaxis=dict(title="key (attended to)", **_ticks(k_tokens)),
                      yaxis=dict(title="query (attending)", autorange="reversed", **_ticks(q_tokens)))
    return attach_numbers(fig, lambda: _csv([matrix], q_tokens, k_tokens, [title or "attention"]))


def heads_grid(run: Run, stack: str, frame: int, height_per_row: int = 230) -> go.Figure:
    """Every layer (rows) and head (columns) of a stack at one frame, small multiples."""
    a = run.attention[stack][frame]  # (layer, head, q, k)
    n_l, n_h = a.shape[:2]
    q_tokens, k_tokens = stack_tokens(run, stack)
    fig = make_subplots(rows=n_l, cols=n_h, horizontal_spacing=0.03, vertical_spacing=0.08,
                        subplot_titles=[f"L{l} H{h}" for l in range(n_l) for h in range(n_h)])
    custom = _hover(q_tokens, k_tokens)
    for l in range(n_l):
        for h in range(n_h):
            fig.add_trace(go.Heatmap(
                z=np.round(a[l, h], 4), zmin=0, zmax=1, colorscale=COLORSCALE, showscale=(l == 0 and h == n_h - 1),
                colorbar=dict(title="weight", thickness=10), customdata=custom,
                hovertemplate=f"layer {l} head {h}<br>query %{{customdata[0]}}<br>key %{{customdata[1]}}"
                              "<br>weight %{z:.3f}<extra></extra>"), row=l + 1, col=h + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_xaxes(showticklabels=False)
    fig.update_layout(height=max(260, height_per_row * n_l + 40), margin=dict(l=10, r=10, t=40, b=10))
    return attach_numbers(fig, lambda: _csv([a[l, h] for l, h in np.ndindex(n_l, n_h)], q_tokens, k_tokens,
                                            [f"layer {l} head {h}" for l, h in np.ndindex(n_l, n_h)]))


def animation(run: Run, stack: str, layer: int, head: int | None, height: int = 520) -> go.Figure:
    """A plotly animation over all frames of one head (or the mean of heads), with play and a slider."""
    q_tokens, k_tokens = stack_tokens(run, stack)
    raw = [head_map(run, stack, f, layer, head) for f in range(run.n_frames)]
    maps = [np.round(m, 3) for m in raw]
    fig = attention_heatmap(maps[0], q_tokens, k_tokens, height=height)
    attach_numbers(fig, lambda: _csv(raw, q_tokens, k_tokens, [f"step {s}" for s in run.frame_steps]))
    fig.frames = [go.Frame(data=[go.Heatmap(z=m)], name=str(i)) for i, m in enumerate(maps)]
    steps = [dict(method="animate", label=str(run.frame_steps[i]),
                  args=[[str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))])
             for i in range(run.n_frames)]
    fig.update_layout(
        margin=dict(l=10, r=10, t=20, b=10),
        updatemenus=[dict(type="buttons", direction="left", showactive=False, x=0, y=-0.2, xanchor="left",
                          yanchor="top", pad=dict(t=0, r=10),
                          buttons=[dict(label="▶ Play", method="animate",
                                        args=[None, dict(frame=dict(duration=120, redraw=True), fromcurrent=True,
                                                         transition=dict(duration=0))]),
                                   dict(label="Pause", method="animate",
                                        args=[[None], dict(mode="immediate", frame=dict(duration=0, redraw=False))])])],
        sliders=[dict(active=0, x=0.22, len=0.78, y=-0.16, yanchor="top", currentvalue=dict(prefix="step "),
                      steps=steps, pad=dict(t=0))],
    )
    fig.update_layout(height=height + 90, margin=dict(b=110))
    return fig


def curves(run: Run, frame: int | None = None, live_losses=None, height: int = 320) -> go.Figure:
    """Training loss per step (left axis) and held-out accuracy at the snapshots (right axis);
    a dashed line marks the chosen frame's step."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    if live_losses is not None:
        x, y = np.arange(1, len(live_losses) + 1), np.asarray(live_losses, dtype=np.float32)
    else:
        x, y = run.loss_steps, run.loss_values
    if len(y):
        stride = max(1, len(y) // 800)  # at most ~800 points on the wire
        fig.add_trace(go.Scatter(x=x[::stride], y=y[::stride], name="training loss", mode="lines",
                                 line=dict(color="#1f77b4"),
                                 hovertemplate="step %{x}<br>loss %{y:.4f}<extra></extra>"), secondary_y=False)
    if run is not None and np.isfinite(run.frame_accuracy).any():
        fig.add_trace(go.Scatter(x=run.frame_steps, y=run.frame_accuracy, name="held-out accuracy",
                                 mode="lines+markers", marker=dict(size=4), line=dict(color="#2ca02c"),
                                 hovertemplate="step %{x}<br>accuracy %{y:.1%}<extra></extra>"), secondary_y=True)
        fig.update_yaxes(title_text="accuracy", range=[0, 1.02], tickformat=".0%", dtick=0.25, secondary_y=True,
                         showgrid=False)
    if run is not None and frame is not None:
        fig.add_vline(x=float(run.frame_steps[frame]), line_dash="dash", line_color="#d62728")
    fig.update_yaxes(title_text="loss (cross-entropy)", secondary_y=False, rangemode="tozero")
    fig.update_xaxes(title_text="training step")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=1.12, x=0))
    return fig


def entropy_lines(run: Run, stack: str, layer: int, frame: int | None = None, height: int = 320) -> go.Figure:
    """Mean attention entropy (nats) of each head of one layer over the frames."""
    ent = run.entropy(stack)[:, layer]  # (frame, head)
    fig = go.Figure()
    for h in range(ent.shape[1]):
        fig.add_trace(go.Scatter(x=run.frame_steps, y=ent[:, h], mode="lines", name=f"head {h}",
                                 hovertemplate=f"head {h}<br>step %{{x}}<br>entropy %{{y:.3f}} nats<extra></extra>"))
    if frame is not None:
        fig.add_vline(x=float(run.frame_steps[frame]), line_dash="dash", line_color="#d62728")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), xaxis_title="training step",
                      yaxis_title="mean entropy (nats)", yaxis_rangemode="tozero",
                      legend=dict(orientation="h", y=1.12, x=0))
    return fig


def settle_grid(run: Run, stack: str, tol: float, height: int | None = None) -> go.Figure:
    """Layer x head grid: the step from which each head stays within `tol` of its final map."""
    frames = run.settled(stack, tol)  # (layer, head) frame index
    steps = run.frame_steps[np.minimum(frames, run.n_frames - 1)]
    n_l, n_h = frames.shape
    text = [[f"{steps[l, h]}" for h in range(n_h)] for l in range(n_l)]
    fig = go.Figure(go.Heatmap(
        z=steps, x=np.arange(n_h), y=np.arange(n_l), colorscale="Cividis", zmin=0,
        zmax=float(max(1, run.frame_steps[-1])), text=text, texttemplate="%{text}", textfont=dict(size=12),
        colorbar=dict(title="step", thickness=12),
        hovertemplate="layer %{y} head %{x}<br>settled from step %{z}<extra></extra>"))
    fig.update_layout(height=height or max(200, 46 * n_l + 110), margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(title="head", tickmode="array", tickvals=list(range(n_h))),
                      yaxis=dict(title="layer", tickmode="array", tickvals=list(range(n_l)), autorange="reversed"))
    return fig
