"""The heatmap page's Streamlit parts: the numbers beside one head, and the token focus's notes and shaded text."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attnviz.heatmap.text_view import shaded_text_html
from attnviz.heatmap.views import MatrixView, block_weights
from attnviz.ui.metrics import ablation_note


def head_numbers(full: np.ndarray, view: MatrixView, block: str, what: str, key_special: np.ndarray,
                 hide: bool) -> None:
    """Metrics beside one head's heatmap. full: the head's (query, key) matrix; with a sentence-pair block
    drawn (block "A→B" and so on) they describe that block, from the model's own weights."""
    if block != "all":
        q_name, k_name = (f"sentence {side}" for side in block.split("→"))
        mass, largest = block_weights(full, view.rows, view.cols)
        visible = "visible " if hide else ""
        st.metric(f"{block}: mean {what}", f"{mass:.1%}",
                  help=f"Average over {q_name}'s {visible}tokens (the rows) of their total {what} on {k_name}'s "
                       f"{visible}tokens (the columns), before any renormalising.")
        st.metric(f"{block}: largest {what}", f"{largest:.4f}", help=f"The largest single {what} in the block.")
        return
    if key_special.any():
        st.metric(f"Mean {what} on special tokens", f"{float(full[:, key_special].sum(axis=1).mean()):.1%}",
                  help="Average over rows of the weight on [CLS], [SEP] and other special tokens.")
    else:
        st.metric(f"Mean {what} on the first token", f"{float(full[:, 0].mean()):.1%}",
                  help="Many causal models park unused attention on the first token (an 'attention sink').")
    st.metric(f"Largest {what}", f"{float(full.max()):.4f}")


def focus_notes(layer: int, ablated_in_layer, hide: bool, renorm: bool) -> None:
    """Captions under the token-focus figures: what their ✂ marks are, and that special tokens are hidden."""
    if ablated_in_layer:
        st.caption(ablation_note("A ✂ after a head's name marks", [(layer, h) for h in ablated_in_layer]))
    if hide:
        st.caption("Special tokens are hidden here too" + (": each row is renormalised to sum to 1 over the visible "
                                                          "tokens, as in the heatmap above." if renorm else
                                                          ", without renormalising (rows sum to less than 1)."))


def shaded_text(head_view: MatrixView, tokens, focus: int, where: str, what: str, continuation, special,
                hide: bool) -> None:
    """The text shaded by the focus token's row and column of one head ("layer 2, head 5": `where`), as the
    heatmap shows that head (head_view: its self-attention view, special tokens hidden when `hide`)."""
    shown = [int(i) for i in head_view.rows]  # self-attention, every block: the same positions both ways
    fi = shown.index(focus)
    shown_tokens = [tokens[i] for i in shown]
    cont = None if continuation is None else [continuation[i] for i in shown]
    st.markdown(f"**The text, shaded by {what}** ({where}): the darker a token, the more "
                f"it gets. Hover a token for the exact {what}; the outlined token is **{tokens[focus]}**.")
    row, col = head_view.values[fi], head_view.values[:, fi]
    st.caption(f"What **{tokens[focus]}** attends to (its row; sums to {float(row.sum()):.3f}, darkest = "
               f"{row.max():.3f})" + (" · special tokens hidden" + (", renormalised" if head_view.renormalised else "")
                                      if hide else ""))
    st.html(shaded_text_html(shown_tokens, row, focus=fi, continuation=cont, special=None if hide else special,
                             what=what))
    st.caption(f"Who attends to **{tokens[focus]}** (its column: each token's {what} on it, darkest = "
               f"{col.max():.3f})")
    st.html(shaded_text_html(shown_tokens, col, focus=fi, continuation=cont, special=None if hide else special,
                             what=what))
