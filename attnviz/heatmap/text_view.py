"""The text itself, each token shaded by an attention weight (as CircuitsVis shows attention), as HTML."""
from __future__ import annotations

import html

import numpy as np

from attnviz.errors import BadInput
from attnviz.units import count_text

SHADE = (31, 119, 180)  # the colour of full weight; lighter = less (alpha = weight / largest weight)
FOCUS = "#d62728"  # outline of the chosen token


def shaded_text_html(tokens, weights, *, focus: int | None = None, continuation=None, special=None,
                     what: str = "weight") -> str:
    """HTML of the tokens in order, each on a background whose opacity is its weight divided by the
    largest weight (so the strongest token is fully coloured); hovering a token shows its exact weight.

    tokens: display labels ("##" marks a word piece, joined to the previous one without a space);
    weights: (seq_len,) non-negative; focus: position outlined; special: bool (seq_len,) shown in
    brackets-style grey text. Text is escaped, so any token is safe to show."""
    w = np.asarray(weights, dtype=np.float64)
    n = len(tokens)
    if w.shape != (n,):
        raise BadInput(f"{w.size} weights for {count_text(n)} tokens")
    if n and (not np.isfinite(w).all() or w.min() < 0):
        raise BadInput("Weights must be finite and non-negative.")
    top = w.max() if n and w.max() > 0 else 1.0
    cont = np.zeros(n, bool) if continuation is None else np.asarray(continuation, dtype=bool)
    spec = np.zeros(n, bool) if special is None else np.asarray(special, dtype=bool)
    parts = []
    for i, token in enumerate(tokens):
        label = token[2:] if cont[i] and token.startswith("##") else token
        alpha = w[i] / top
        style = [f"background: rgba({SHADE[0]}, {SHADE[1]}, {SHADE[2]}, {alpha:.3f})",
                 "border-radius: 3px", "padding: 0.05em 0.12em"]
        if alpha > 0.55:
            style.append("color: white")
        if spec[i]:
            style.append("font-size: 0.8em; opacity: 0.85")
        if focus == i:
            style.append(f"outline: 2px solid {FOCUS}")
        gap = "" if (i == 0 or cont[i]) else " "
        parts.append(f'{gap}<span title="{html.escape(token)} ({i}): {what} {w[i]:.4f}" '
                     f'data-weight="{w[i]:.6f}" style="{"; ".join(style)}">{html.escape(label)}</span>')
    return f'<div class="attnviz-text" style="line-height: 2.1; font-size: 1.15em">{"".join(parts)}</div>'
