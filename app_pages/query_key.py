"""Query · key page: one attention row rebuilt from the query and key vectors (BertViz's neuron view)."""
import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.query_key.figures import (PRODUCT_SCALE, VECTOR_SCALE, dimension_bars, key_matrix, query_strip, score_bars,
                              softmax_bars)
from attnviz.query_key.qk import query_row, top_keys
from attnviz.ui import choices, metrics as aw
from attnviz.ui.figure import show_figure
from attnviz.ui.cache import figure, get_query_key
from attnviz.ui.heads import head_picker
from attnviz.ui.share import bind
from attnviz.ui.present import page_intro
from attnviz.ui.page import stop as stop_page
from attnviz.ui.sidebar import require_result
from attnviz.units import count_text

bind({"qk_layer": int, "qk_head": int, "qk_query": int, "qk_key": int, "qk_topk": int, "qk_rank": str,
      "qk_sort": bool})

TOPK_OPTIONS = [8, 16, 24, 32, 48, 64]
RANKS = {"weight": "attention weight", "score": "|score|"}

page_intro("Query · key",
    "Where does one row of the attention heatmap come from? Each token is projected to a **query** vector "
    "q (what it is looking for) and a **key** vector k (what it offers), d_head numbers each per head. The "
    "score of key j is the dot product **q·k_j = Σ_d q_d k_jd**, multiplied by a scaling factor (1/√d_head "
    "in most models, so scores do not grow with the head size); a **softmax** over the keys the token may "
    "see turns the scores into weights that sum to 1. Below, every step is computed from the q and k the "
    "model really used (after its projections, and after rotary position encoding in models that use it), "
    "and the final row is checked against the heatmap page's row. BertViz calls this the *neuron view*.")
st.page_link("app_pages/lab_steps.py", label="The same steps on a 3-token toy example: Learn → 1 · Scaled dot-product",
             icon=":material/science:")

aw.require_hf_model("The query · key view")
result = require_result()
try:
    with st.spinner("Recording queries and keys…"):
        qk = get_query_key(aw.sidebar_request())
except AttnvizError as e:
    st.warning(str(e))
    stop_page()
if result.facts.kind == "encoder-decoder":
    st.info("This is an encoder-decoder model: the page shows the encoder's self-attention only.")
if qk.seq_len != result.seq_len:
    st.warning("The recorded queries and keys do not match the current text; change the text or reload the page.")
    stop_page()
tokens, n = result.tokens, result.seq_len

layer, head = head_picker(qk.n_layers, qk.n_heads, "qk")
words = [i for i in range(n) if not result.special_mask[i] and any(c.isalnum() for c in tokens[i])]
default_query = words[-1] if words else n - 1  # the last word (punctuation and [SEP] are less telling)
if st.session_state.get("qk_query") not in range(n):
    st.session_state["qk_query"] = default_query
query = choices.selectbox(st, "Query token (the row)", range(n), key="qk_query", format_func=lambda i: f"{i}: {tokens[i]}",
                          help="The token whose attention row is rebuilt below.")
try:
    row = query_row(qk, layer, head, query, result.attention[layer, head, query])
except AttnvizError as e:
    st.warning(str(e))
    stop_page()

n_visible = int(row.visible.sum())
gqa = (f" This model has {qk.n_kv_heads} key heads for {qk.n_heads} query heads (grouped-query attention): "
       f"head {head} uses key head {head // (qk.n_heads // qk.n_kv_heads)}.") if qk.n_kv_heads < qk.n_heads else ""
causal = f" The model is causal: token {query} sees keys 0–{query} only ({count_text(n_visible)} keys)." if qk.causal else ""
c1, c2, c3 = st.columns(3)
c1.metric("Scaling factor", f"{row.scaling:.4f}", help=f"1/√{qk.d_head} = {qk.d_head ** -0.5:.4f}")
c2.metric("Largest weight", f"{row.weights.max():.3f}", help=f"on key {int(row.weights.argmax())}: "
          f"{tokens[int(row.weights.argmax())]}")
c3.metric("max |softmax − heatmap row|", f"{row.max_error:.1e}",
          help="The rebuilt softmax against result.attention[layer, head, query] as the heatmap page shows it.")
st.caption(f"Layer {layer}, head {head}, query '{tokens[query]}' (position {query}); d_head = {qk.d_head}, "
           f"scaling = {row.scaling:.4g}.{causal}{gqa}")

left, right = st.columns(2)
with left:
    show_figure(figure(score_bars, row, tokens,
                       title=f"Scores q·k × {row.scaling:.3g} for '{tokens[query]}' ({query})"), key="qk_scores")
    st.caption("One bar per key: the dot product of this query with that key, times the scaling factor. Only the "
               "differences between scores matter: adding the same number to all of them leaves the softmax "
               "unchanged.")
with right:
    show_figure(figure(softmax_bars, row, tokens,
                       title=f"Softmax of the scores = attention row of '{tokens[query]}' ({query})"), key="qk_softmax")
    st.caption("exp(score) divided by the sum over the visible keys. This is exactly the row the heatmap page "
               f"draws for layer {layer}, head {head} (largest difference {row.max_error:.1e}). Orange: the query "
               "itself" + ("; grey: keys a causal model may not see." if qk.causal else "."))

st.subheader("Which dimensions make the scores")
visible = np.flatnonzero(row.visible)
o1, o2 = st.columns(2)
st.session_state.setdefault("qk_topk", 24)
st.session_state.setdefault("qk_rank", "weight")
if st.session_state["qk_topk"] not in TOPK_OPTIONS:
    st.session_state["qk_topk"] = 24
if st.session_state["qk_rank"] not in RANKS:
    st.session_state["qk_rank"] = "weight"
top_k = o1.select_slider("Keys shown in the matrices", TOPK_OPTIONS, key="qk_topk",
                         help="At most this many keys are drawn: long inputs would make the key matrices "
                              "unreadable, so only the keys that matter most for this row are.")
rank = o2.radio("Pick them by", list(RANKS), format_func=RANKS.get, key="qk_rank", horizontal=True)
shown = top_keys(row, top_k, by=rank)
if len(shown) < len(visible):
    st.caption(f"Showing the **{len(shown)} of {len(visible)}** visible keys with the largest {RANKS[rank]}, "
               "in text order (rows are labelled position: token).")
elif len(visible) < top_k:
    st.caption(f"All **{len(visible)}** visible keys are shown: the text has fewer than {top_k}.")

show_figure(figure(query_strip, qk.query[layer, head, query], tokens[query],
                   title=f"Query vector q of '{tokens[query]}' ({query}), layer {layer}, head {head}"),
            key="qk_q")
m1, m2 = st.columns(2)
with m1:
    show_figure(figure(key_matrix, qk.key[layer, head, shown], shown, tokens, title="Key vectors k_j",
                       what="key token", colorscale=VECTOR_SCALE, colorbar="k_jd", hover="k_jd = %{z:.4f}"),
                key="qk_keys")
    st.caption("Each row is one key's vector in this head. On its own it says little: what counts is how it lines "
               "up with q above.")
with m2:
    show_figure(figure(key_matrix, row.products[shown], shown, tokens,
                       title="Products q_d · k_jd (each row sums to q·k_j)", what="key token",
                       colorscale=PRODUCT_SCALE, colorbar="q_d·k_jd",
                       hover="q_d·k_jd = %{z:.4f}<br>row sum q·k_j = %{customdata[1]:.4f}",
                       extra=row.dots[shown]), key="qk_products")
    st.caption("Red: q and k have the same sign in that dimension, raising the score; blue: opposite signs, "
               "lowering it. Often a few dimensions with large q and k values carry most of the score (bright "
               "columns); they are the features this head matches on. A column bright for every key shifts all "
               "scores alike, which the softmax ignores.")

st.subheader("One key in detail")
k1, k2 = st.columns([2, 1])
if st.session_state.get("qk_key") not in set(visible.tolist()):
    st.session_state["qk_key"] = int(visible[np.argmax(row.weights[visible])])
key_j = choices.selectbox(k1, "Key token", visible.tolist(), key="qk_key", format_func=lambda j: f"{j}: {tokens[j]}",
                          help="Defaults to the key with the largest weight.")
st.session_state.setdefault("qk_sort", True)
sort = k2.toggle("Sort dimensions by contribution", key="qk_sort")
contrib = row.products[key_j]
show_figure(figure(dimension_bars, contrib, sort=sort,
                   title=f"q_d · k_d for query '{tokens[query]}' ({query}) and key '{tokens[key_j]}' ({key_j})"),
            key="qk_dims")
up, down = contrib[contrib > 0].sum(), contrib[contrib < 0].sum()
st.caption(f"Positive bars push the score of **{tokens[key_j]}** up (sum {up:+.3f}), negative bars push it down "
           f"(sum {down:+.3f}). Together q·k = {row.dots[key_j]:+.4f}; times {row.scaling:.4g} gives the score "
           f"{row.scores[key_j]:+.4f} and, after the softmax, the weight {row.weights[key_j]:.4f}.")
