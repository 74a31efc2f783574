"""The heatmap page's Streamlit parts: the numbers beside one head, and the token focus with its notes, shaded text
and lines view."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attnviz.errors import BadInput
from attnviz.heatmap.figures import focus_figure, lines_figure
from attnviz.heatmap.text_view import shaded_text_html
from attnviz.heatmap.views import MatrixView, block_weights, select_view
from attnviz.ui.cache import figure
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import token_picker
from attnviz.ui.html_view import show_html
from attnviz.ui.metrics import ablation_note
from attnviz.ui.page import stop as stop_page
from attnviz.ui.present import presenting
from attnviz.ui.share import hold


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
        st.metric("Mean on special tokens", f"{float(full[:, key_special].sum(axis=1).mean()):.1%}",
                  help=f"Average over the rows of their total {what} on [CLS], [SEP] and other special tokens.")
    else:
        st.metric("Mean on the first token", f"{float(full[:, 0].mean()):.1%}",
                  help=f"Average over the rows of their {what} on the first token. Many causal models park unused "
                       "attention there (an 'attention sink').")
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
    show_html(shaded_text_html(shown_tokens, row, focus=fi, continuation=cont, special=None if hide else special,
                               what=what), key="hm_text_row")
    st.caption(f"Who attends to **{tokens[focus]}** (its column: each token's {what} on it, darkest = "
               f"{col.max():.3f})")
    show_html(shaded_text_html(shown_tokens, col, focus=fi, continuation=cont, special=None if hide else special,
                               what=what), key="hm_text_col")


def token_focus(result, which: str, layer: int, head: int, head_name: str, palette, what: str, ablated,
                hide: bool, renorm: bool) -> None:
    """One token across the heads of the chosen layer (what it attends to, what attends to it), the text shaded by
    the chosen head, and the lines view."""
    attention, q_tokens, k_tokens = result.stack(which)
    q_special, k_special = result.specials(which)
    st.subheader("Token focus")
    if not presenting():  # the lecturer says it; the heading stays on the figures' screen
        st.markdown("Choose a token to see, " + ("in this layer's one map (its heads summed)" if result.heads_summed
                                                 else "for every head of this layer")
                    + ", what it attends to (its row) and what attends to it (its column).")
    n_q = attention.shape[2]
    # a new text keeps the position if it still exists, else the first word; hidden special tokens are not offered
    focus = token_picker(q_tokens, "hm_focus", default=1 if n_q > 2 else 0,
                         positions=[i for i in range(n_q) if not (hide and q_special[i])] if hide and not q_special.all() else None)
    layer_heads_ablated = tuple(sorted(h for (l, h) in ablated if l == layer))
    hidden = dict(special_mask=q_special, key_special_mask=k_special, hide_special=hide, renormalise=renorm,
                  summed=result.heads_summed)
    try:
        c_out, c_in = st.columns(2)
        if which == "self":
            with c_out:
                show_figure(figure(focus_figure, attention[layer], focus, q_tokens, direction="out", colorscale=palette,
                                   what=what, ablated_heads=layer_heads_ablated, **hidden),
                            key="hm_focus_out", name=f"layer{layer}-token{focus}-out", in_place=True)
            with c_in:
                show_figure(figure(focus_figure, attention[layer], focus, q_tokens, direction="in", colorscale=palette,
                                   what=what, ablated_heads=layer_heads_ablated, **hidden),
                            key="hm_focus_in", name=f"layer{layer}-token{focus}-in", in_place=True)
        else:
            show_figure(figure(focus_figure, attention[layer], focus, k_tokens, direction="out", colorscale=palette,
                               what=what, ablated_heads=layer_heads_ablated, **hidden),
                        key="hm_focus_out", name=f"layer{layer}-token{focus}-out", in_place=True)
    except BadInput as e:  # every token is a special one and they are hidden
        st.warning(str(e))
        stop_page()
    focus_notes(layer, layer_heads_ablated, hide, renorm)
    if which == "self":  # the focus head as the heatmap shows it: special tokens hidden (rows renormalised) when asked
        head_view = select_view(attention[layer, head], q_special, hide_special=hide, renormalise=renorm)
        shaded_text(head_view, q_tokens, focus, f"layer {layer}, {head_name}", what, result.continuation,
                    result.special_mask, hide)
    if which == "self" and n_q <= 128 and not presenting():
        st.markdown(f"**Lines view** (layer {layer}, {head_name}): each token on the left sends lines to the "
                    "tokens it attends to on the right; darker and thicker lines carry more weight. The "
                    "focus token's lines are drawn alone; untick to see every token's."
                    + (" Special tokens are hidden." if hide else ""))
        hold("hm_lines_focus")
        st.session_state.setdefault("hm_lines_focus", True)
        only_focus = st.checkbox("Only the focus token", key="hm_lines_focus")
        shown = [int(i) for i in head_view.rows]
        show_figure(figure(lines_figure, head_view.values, [q_tokens[i] for i in shown],
                           focus=shown.index(focus) if only_focus else None),
                    key="hm_lines", name=f"lines-layer{layer}-head{head}", in_place=True)
    elif which == "self" and not presenting():
        st.caption("The lines view is drawn for inputs up to 128 tokens.")
