"""Figures of the Contributions page and the "not explanation" lesson (plotly)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.metrics.figures import grouped_token_bars, head_grid, layer_lines


def mixing_figure(by_layer: dict[str, np.ndarray]) -> go.Figure:
    """Mean mixing ratio per layer, one line per way of measuring it, in percent."""
    fig = layer_lines({k: 100 * np.asarray(v) for k, v in by_layer.items()},
                      title="Mixing ratio per layer (mean over tokens)",
                      ytitle="mixing ratio (%)")
    fig.update_yaxes(range=[0, 100])
    fig.update_traces(hovertemplate="layer %{x}: %{y:.1f}%<extra>%{fullData.name}</extra>")
    # the legend sits at the figure's bottom edge, below the axis title (placed in the plot's own units it
    # lands on the title when the column is narrow or the fonts large)
    fig.update_layout(legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0),
                      margin=dict(t=50, b=130), height=400)
    return fig


def shares_figure(series: dict[str, np.ndarray], tokens, *, title: str) -> go.Figure:
    """Several per-token shares side by side (each series sums to 1 or is a mean of such rows)."""
    fig = grouped_token_bars(series, tokens, title=title, ytitle="share", fmt=".4f")
    # the legend under the axis: in a half-width column it would cover the title
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.42, xanchor="left", x=0),
                      margin=dict(b=150), height=450)
    return fig


def stripe_figure(values: np.ndarray, *, title: str, zmax: float) -> go.Figure:
    """Layers x heads map of the share every head gives one token."""
    return head_grid(values, title=title, colorbar="share", zmin=0.0, zmax=zmax, colorscale="Viridis")
