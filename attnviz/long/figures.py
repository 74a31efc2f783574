"""Figures of long inputs: the attention-vs-distance profile, sink mass per head and the sink experiment's
loss curves (the pages that show them come later; the all-heads grid reuses heatmap's PNG raster)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


def distance_profile_figure(edges: np.ndarray, values: np.ndarray, names, title: str) -> go.Figure:
    """One line per row of values (curves, bins) against the bins' first distance, log-log axes.
    edges: int (bins+1,) as LongSummaries.profile returns them."""
    x = np.maximum(edges[:-1], 0.5)  # distance 0 drawn at 0.5 on the log axis
    fig = go.Figure()
    for name, row in zip(names, np.atleast_2d(values)):
        fig.add_trace(go.Scatter(x=x, y=row, mode="lines+markers", name=str(name),
                                 customdata=np.stack([edges[:-1], edges[1:] - 1], axis=-1),
                                 hovertemplate="distance %{customdata[0]}–%{customdata[1]}: mean weight %{y:.3g}"))
    fig.update_layout(title=title, xaxis=dict(title="distance |i − j| (tokens)", type="log"),
                      yaxis=dict(title="mean attention weight", type="log"), hovermode="closest")
    return fig


def sink_mass_figure(sink: np.ndarray, title: str = "Weight on the first token (sink mass)") -> go.Figure:
    """Heatmap of sink mass (layer, head) with exact values on hover."""
    fig = go.Figure(go.Heatmap(z=sink, zmin=0, zmax=1, colorscale="Viridis",
                               hovertemplate="layer %{y}, head %{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, xaxis=dict(title="head", dtick=1), yaxis=dict(title="layer", dtick=1,
                                                                                autorange="reversed"))
    return fig


def sink_curves_figure(curves: dict[str, np.ndarray], positions: np.ndarray,
                       title: str = "Next-token loss along the text") -> go.Figure:
    """One line per cache policy: loss (nats) against the position of the predicted token."""
    fig = go.Figure()
    for name, y in curves.items():
        fig.add_trace(go.Scatter(x=positions, y=y, mode="lines", name=name,
                                 hovertemplate="position %{x}: %{y:.3f} nats"))
    fig.update_layout(title=title, xaxis=dict(title="token position"), yaxis=dict(title="loss (nats)"),
                      hovermode="x unified")
    return fig
