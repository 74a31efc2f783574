"""The heatmap page's backend: what a head's matrix shows, the all-heads raster, the shaded text, and its figures."""
