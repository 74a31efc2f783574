"""Gradient attributions (gradient x input, integrated gradients) and the checks of whether a view is faithful."""
