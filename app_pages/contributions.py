"""Contributions page: what attention actually moves (value norms, mixing ratios, ALTI)."""
import numpy as np
import streamlit as st

from attnviz.contrib import summary
from attnviz.contrib.figures import mixing_figure, shares_figure
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import head_picker, token_picker
from attnviz.ui.page import part
from attnviz.ui.page import stop as stop_page
from attnviz.ui.present import page_intro
from attnviz.ui.share import bind
from attnviz.ui.sidebar import current_contributions, require_result

page_intro("What attention moves",
    "An attention weight α says how much of token j's **value vector** f(x_j) = (x_j W_V + b_V) W_O token i "
    "takes; it does not say how large that vector is. A token can take most of the weight and move almost "
    "nothing: **value-weighted attention** ‖α f(x)‖ (Kobayashi et al., 2020) measures what is moved. Each "
    "token also keeps itself through the **residual** connection, and the LayerNorm rescales the sum: "
    "**mixing ratios** (Kobayashi et al., 2021) say how much of a token's new representation comes from "
    "the other tokens under each view, and **ALTI** (Ferrando et al., 2022) gives each token's share of the "
    "layer's output by how close its part is to the whole (L1 distance). The sidebar's **Show** control "
    "puts these quantities on the heatmap, entropy, rollout and head-role pages.")

result = require_result()
c = current_contributions()
if c is None:
    stop_page()
if c.seq_len != result.seq_len:
    st.warning("The contributions belong to another input than the one shown: change the text and back.")
    stop_page()
tokens, attention = result.tokens, result.attention
special = np.asarray(result.special_mask, dtype=bool)
st.caption(f"Included: {c.block_parts}. The parts rebuild each block's output to within "
           f"{c.rebuild_error:.1e} (relative), so nothing is left out or counted twice.")

# --- mixing ratios ----------------------------------------------------------------------------
bind({"ct_words": bool, "ct_query": int})
st.subheader("How much each token mixes in")
st.session_state.setdefault("ct_words", True)
words_only = st.toggle("Average over word tokens only (leave out [CLS], [SEP], …)", key="ct_words",
                       disabled=not special.any())
valid = ~special if (words_only and special.any() and (~special).any()) else None
by_layer = summary.mixing_by_layer(c, valid)
means = c.mean_mixing(valid)
left, right = st.columns([3, 2])
with left:
    show_figure(mixing_figure(by_layer), key="ct_mixing", name="mixing-ratios", in_place=True)
with right:
    cols = st.columns(2)
    for i, (name, value) in enumerate(means.items()):
        cols[i % 2].metric(name.replace("LayerNorm", "LN"), f"{value:.0%}", help=f"Mean mixing ratio over layers and tokens: {name}.")
    st.markdown(
        "Read it as: of what token i holds after the attention block, this share came from **other** tokens. "
        "The weights say most of it; the value norms say less; with the residual, far less. On BERT-base "
        "Kobayashi et al. (2021) measured 96% (weights), 85% (value-weighted), 22% (+ residual) and 19% "
        "(+ residual + LayerNorm).")
    if not c.post_norm:
        st.caption("This model normalises **before** attention (pre-norm), so there is no LayerNorm after the "
                   "residual to include: the norm is inside each value vector.")

# --- where the weight goes vs what moves --------------------------------------------------------
st.subheader("Where the weight goes, and what it moves")
layer, head = head_picker(c.n_layers, c.n_heads, "ct")
got = summary.received(attention, c, layer, head)
fig_col, text_col = st.columns([3, 1])
with fig_col:
    show_figure(shares_figure(got, tokens, title=f"What each token receives in layer {layer}, head {head} "
                              "(mean over the query rows)"), key="ct_received", name=f"received-l{layer}-h{head}",
                in_place=True)
with text_col:
    top = int(np.argmax(got["attention weight"]))
    weight, moved = got["attention weight"][top], got["value-weighted share"][top]
    st.metric(f"Weight on '{tokens[top]}'", f"{weight:.1%}",
              delta=f"{100 * (moved - weight):+.1f} points: {moved:.1%} value-weighted", delta_color="off",
              help="The largest mean attention weight of this head, and below it the value-weighted share of the same "
                   "token: the difference in percentage points, then the share itself.")
    norms = c.value_norms[layer, head]
    st.markdown(f"‖f(x)‖ of **{tokens[top]}** in this head: **{norms[top]:.3g}**, against a median of "
                f"**{float(np.median(norms)):.3g}** over the tokens. A token that takes much weight but has a "
                "short value vector moves little: Clark et al. (2019) found [SEP] soaking up attention in BERT "
                "as a no-op.")

# --- one output token ---------------------------------------------------------------------------
@part
def one_token() -> None:
    """One output token's sources. Another token reruns only this part: the mixing ratios and the head's shares
    above are neither computed nor sent again."""
    st.subheader("Where one token's information comes from")
    query = token_picker(tokens, "ct_query", label="Output token", default=min(1, len(tokens) - 1))
    a, b = st.columns(2)
    with a:
        show_figure(shares_figure(summary.sources(attention, c, layer, query), tokens,
                                  title=f"Layer {layer} alone: sources of '{tokens[query]}'"),
                    key="ct_sources", name=f"sources-l{layer}-q{query}", in_place=True)
    with b:
        show_figure(shares_figure(summary.rolled_sources(attention, c, query), tokens,
                                  title=f"Through every layer: sources of '{tokens[query]}'"),
                    key="ct_rolled", name=f"rolled-q{query}", in_place=True)
    st.caption("Left: one layer, three ways. Weights ignore the residual, so the token itself gets only its own "
               "weight; value-weighted counts vector lengths; ALTI adds the residual and the norm, so the token "
               "usually keeps most of itself. Right: the same multiplied through the layers (attention rollout "
               "adds the residual as w = 0.5; the other two hold it already).")


one_token()
