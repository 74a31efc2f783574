"""Streamlit helpers for the query · key page (its capture is cached in ui/cache.py)."""
from __future__ import annotations

from attnviz.ui.heads import head_picker


def head_choice(n_layers: int, n_heads: int) -> tuple[int, int]:
    """The shared layer/head picker with this page's keys (qk_layer / qk_head, in the link)."""
    return head_picker(n_layers, n_heads, "qk")
