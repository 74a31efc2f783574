"""Figures of the head atlas: the statistic map with confidence intervals, pattern scores, the 2-D map of all
heads, the syntax chart, dependency arcs over one sentence."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.metrics.figures import ROLE_COLOURS, head_grid
from attnviz.metrics.roles import ROLE_KEYS, ROLES
from attnviz.units import count_text


def stat_map(m: dict, label: str, n_sentences: int) -> go.Figure:
    """layers x heads mean of a statistic; hover: mean, 95% interval, sentences."""
    extra = np.array([f"95% interval {lo:.3f} – {hi:.3f}<br>over {count_text(n)} sentences"
                      for lo, hi, n in zip(m["lo"].ravel(), m["hi"].ravel(), m["n"].ravel())]).reshape(m["mean"].shape)
    return head_grid(m["mean"], title=f"{label}: mean over {count_text(n_sentences)} sentences", colorbar="mean",
                     hover_extra=extra)


def pattern_map(score: np.ndarray, describe: str) -> go.Figure:
    return head_grid(score, title=f"Pattern score · {describe}", colorbar="score", zmin=0.0,
                     zmax=max(float(np.nanmax(score)), 1e-9))


LABEL_ROOM = 0.05  # the distance (a share of the map's width and height) a head's name needs to its nearest neighbour


def head_scatter(coords: np.ndarray, best_role: np.ndarray, best_score: np.ndarray, n_heads: int,
                 min_score: float = 0.4, selected: tuple[int, int] | None = None) -> go.Figure:
    """Every head as a point (classical MDS of the Jensen-Shannon distance), coloured by its strongest
    role; heads whose best role score is below `min_score` are grey. customdata (layer, head) for clicks."""
    fig = go.Figure()
    role = np.where(best_score.ravel() >= min_score, best_role.ravel(), -1)
    # a name only where it has room: a head whose nearest neighbour is closer than LABEL_ROOM of the map's span is
    # named in its hover alone (a cluster's names would be drawn over one another)
    span = np.ptp(coords, axis=0)
    unit = coords / np.where(span > 0, span, 1.0)
    gaps = np.linalg.norm(unit[:, None, :] - unit[None, :, :], axis=-1)
    np.fill_diagonal(gaps, np.inf)
    named = gaps.min(axis=1) >= LABEL_ROOM
    for r in range(-1, len(ROLE_KEYS)):
        idx = np.flatnonzero(role == r)
        if not idx.size:
            continue
        name = "no clear role" if r < 0 else ROLES[ROLE_KEYS[r]][0]
        fig.add_trace(go.Scatter(
            x=coords[idx, 0], y=coords[idx, 1], mode="markers+text", name=name,
            text=[f"{i // n_heads}-{i % n_heads}" if named[i] else "" for i in idx], textposition="top center",
            textfont=dict(size=9),
            customdata=[[int(i // n_heads), int(i % n_heads)] for i in idx],
            marker=dict(size=11, color="#bbbbbb" if r < 0 else ROLE_COLOURS[r % len(ROLE_COLOURS)],
                        line=dict(width=1, color="white")),
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>" + name
                          + "<br><i>click to open this head</i><extra></extra>"))
    if selected is not None:
        i = selected[0] * n_heads + selected[1]
        fig.add_trace(go.Scatter(x=[coords[i, 0]], y=[coords[i, 1]], mode="markers", name="chosen head",
                                 hoverinfo="skip", marker=dict(size=20, color="rgba(0,0,0,0)",
                                                               line=dict(width=3, color="#e45756"))))
    fig.update_layout(title="All heads by similarity (heads close together attend alike)", height=520,
                      xaxis=dict(title="MDS 1", zeroline=False), yaxis=dict(title="MDS 2", zeroline=False),
                      margin=dict(l=50, r=20, t=50, b=40), dragmode=False, hovermode="closest",
                      clickmode="event+select", legend=dict(orientation="v", x=1.02, y=1))
    return fig


def relation_heads(acc: np.ndarray, relation: str, direction: str, baseline: float) -> go.Figure:
    """Every head's accuracy on one relation (layers x heads), the best fixed offset in the title."""
    return head_grid(acc, title=f"{relation} ({direction}): accuracy of each head · best fixed offset {baseline:.1%}",
                     colorbar="accuracy", zmin=0.0, zmax=1.0, fmt=".1%")


def dependency_arcs(words, heads, deprels, weights: np.ndarray | None = None, title: str = "") -> go.Figure:
    """The sentence's words on a line with an arc from each word to its head (labelled with the relation);
    with `weights` (word, word), a second set of arcs below shows where the chosen head's attention goes
    (each word's strongest target)."""
    n = len(words)
    fig = go.Figure()
    xs = np.arange(n)
    for i, (h, rel) in enumerate(zip(heads, deprels)):
        if h < 0:
            continue
        t = np.linspace(0, np.pi, 30)
        mid, half = (i + h) / 2, abs(i - h) / 2
        fig.add_trace(go.Scatter(x=mid + half * np.cos(t), y=0.15 + 0.35 * half ** 0.7 * np.sin(t), mode="lines",
                                 line=dict(color="#4c78a8", width=1.5), hoverinfo="skip", showlegend=False))
        fig.add_annotation(x=mid, y=0.15 + 0.35 * half ** 0.7, text=rel, showarrow=False, yshift=8,
                           font=dict(size=10, color="#4c78a8"))
        fig.add_annotation(x=i, y=0.12, ax=i, ay=0.3, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                           arrowhead=2, arrowsize=0.8, arrowcolor="#4c78a8", text="")
    if weights is not None:
        best = np.asarray(weights).argmax(axis=1)
        for i, j in enumerate(best):
            if i == j:
                continue
            t = np.linspace(0, np.pi, 30)
            mid, half = (i + j) / 2, abs(i - j) / 2
            w = float(weights[i, j])
            fig.add_trace(go.Scatter(x=mid + half * np.cos(t), y=-0.15 - 0.35 * half ** 0.7 * np.sin(t), mode="lines",
                                     line=dict(color="#e45756", width=1 + 4 * w), opacity=0.35 + 0.6 * w,
                                     hovertemplate=f"{words[i]} → {words[j]}: {w:.3f}<extra></extra>",
                                     showlegend=False))
    fig.add_trace(go.Scatter(x=xs, y=np.zeros(n), mode="text", text=list(words), textfont=dict(size=14),
                             hoverinfo="skip", showlegend=False))
    depth = 0.35 * max(1.0, (n / 2)) ** 0.7 + 0.5
    fig.update_layout(title=title or "Dependencies (above) and where the head looks (below, red)", height=380,
                      xaxis=dict(visible=False, range=[-0.8, n - 0.2]),
                      yaxis=dict(visible=False, range=[-depth, depth]), margin=dict(l=10, r=10, t=40, b=10),
                      plot_bgcolor="white", dragmode=False)
    return fig
