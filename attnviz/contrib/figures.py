"""Figures of the Contributions page and the "not explanation" lesson (plotly)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.metrics.figures import grouped_token_bars, head_grid, layer_lines


def mixing_figure(by_layer: dict[str, np.ndarray]) -> go.Figure:
    """Mean mixing ratio per layer, one line per way of measuring it, in percent."""
    fig = layer_lines({k: 100 * np.asarray(v) for k, v in by_layer.items()},
                      title="How much of each token's new representation comes from the other tokens",
                      ytitle="mixing ratio (%)")
    fig.update_yaxes(range=[0, 100])
    fig.update_traces(hovertemplate="layer %{x}: %{y:.1f}%<extra>%{fullData.name}</extra>")
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1),
                      margin=dict(t=80))
    return fig


def shares_figure(series: dict[str, np.ndarray], tokens, *, title: str) -> go.Figure:
    """Several per-token shares side by side (each series sums to 1 or is a mean of such rows)."""
    return grouped_token_bars(series, tokens, title=title, ytitle="share", fmt=".4f")


def stripe_figure(values: np.ndarray, *, title: str, zmax: float) -> go.Figure:
    """Layers x heads map of the share every head gives one token."""
    return head_grid(values, title=title, colorbar="share", zmin=0.0, zmax=zmax, colorscale="Viridis")
