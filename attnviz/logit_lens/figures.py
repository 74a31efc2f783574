"""Figures of this feature (plotly)."""
