"""Compare page: two sentences, or two models with the same tokenizer, and their attention difference."""
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.metrics.compare import check_same_length, check_same_tokens, difference, head_distance
from attnviz.metrics.figures import head_grid, matrix_heatmap, shared_colour_max
from attnviz.types import Request
from attnviz.ui import metrics as aw
from attnviz.ui.heads import head_picker
from attnviz.ui.cache import get_result
from attnviz.ui.jobs import load_model
from attnviz.ui.sidebar import DEFAULT_MODEL, installed_models, model_label
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind, hold, link_note
from attnviz.ui.present import page_intro
from attnviz.ui.page import stop as stop_page
from attnviz.units import count_text

page_intro("Compare attention",
    "Lay two attention maps on top of each other. **Two sentences**: the same model reads two texts that "
    "split into the same number of tokens (swap one word), so you can see which heads react to the change. "
    "**Two models**: two models with the same tokenizer read the sidebar's text. The difference map is "
    "A − B: red where A attends more, blue where B does."
)

result_a, request_a = aw.hf_inputs("Comparing")
key_a = request_a.model
bind({"cmp_mode": str, "cmp_text_b": str, "cmp_layer": int, "cmp_head": int, "cmp_model_pick": str})
hold("cmp_model_b")  # in the link only while model B is typed (below)
SHORT_TEXT = 300  # longer sidebar texts are shown cut, with their token count
mode = st.radio("Compare", ["Two sentences", "Two models"], horizontal=True, key="cmp_mode")

try:
    if mode == "Two sentences":
        st.session_state.setdefault("cmp_text_b", "The dog sat on the mat because it was tired.")
        if len(result_a.text) > SHORT_TEXT:
            st.markdown(f"**A** (from the sidebar, {count_text(result_a.seq_len)} tokens): {result_a.text[:SHORT_TEXT]}…")
        else:
            st.markdown(f"**A** (from the sidebar): {result_a.text}")
        b1, b2 = st.columns([4, 1], vertical_alignment="bottom")
        text_b = b1.text_input("**B**: a second sentence with the same number of tokens", key="cmp_text_b")
        b2.button("Copy A into B", key="cmp_copy_a", on_click=lambda: st.session_state.update(cmp_text_b=result_a.text),
                  help="Start B from A's text, then change a word: long texts are hard to retype.")
        if not text_b.strip():
            st.info("Sentence **B** is empty: type a sentence with as many tokens as A, or press **Copy A into B** "
                    "and change a word.")
            stop_page()
        result_b = get_result(Request(key_a, text_b))
        check_same_length(result_a, result_b)
        name_a, name_b = "A: " + key_a, "B: " + key_a
        if tuple(result_b.tokens) == tuple(result_a.tokens):
            st.caption("A and B are the same tokens, so every difference below is zero: change a word in B.")
    else:
        options = installed_models() + ["other"]
        if st.session_state.get("cmp_model_pick") not in options:
            wrong = st.session_state.get("cmp_model_pick")
            if wrong is not None:
                link_note(f"Model B {str(wrong)[:40]!r} in the link is not installed here: B is "
                          f"{model_label(options[0])}. Pick 'Other' to type a hub id or folder.")
            st.session_state["cmp_model_pick"] = options[0]
        choice = st.selectbox("Model B", options, key="cmp_model_pick",
                              format_func=lambda k: "Other: a hub id or folder…" if k == "other" else model_label(k))
        if choice == "other":
            bind({"cmp_model_b": str})
            key_b = st.text_input("Hub id or folder for model B", key="cmp_model_b").strip()
        else:
            key_b = choice
        if not key_b:
            st.info("Type a hub id or folder for model B.")
            stop_page()
        load_model(key_b)  # a progress bar with the time left while it loads
        with st.spinner("Computing attention…"):
            result_b = get_result(Request(key_b, request_a.text, request_a.pair))
        check_same_tokens(result_a, result_b)
        name_a, name_b = "A: " + key_a, "B: " + key_b
        if key_b == key_a:
            st.caption(f"Both sides are {key_a}, so the difference is zero: pick another model with the same "
                       f"tokenizer (for {DEFAULT_MODEL}, any BERT-uncased model folder or hub id).")
except AttnvizError as e:
    st.warning(str(e))
    stop_page()

tokens_a, tokens_b = result_a.tokens, result_b.tokens
n_layers, n_heads = min(result_a.n_layers, result_b.n_layers), min(result_a.n_heads, result_b.n_heads)
shared = (int(st.session_state.get("layer", 0)), int(st.session_state.get("head", 0)))  # the other pages' head
wanted = (int(st.session_state.get("cmp_layer", shared[0])), int(st.session_state.get("cmp_head", shared[1])))
layer, head = head_picker(n_layers, n_heads, "cmp", write_back=False)
missing = [w for w in (wanted, shared) if (w[0] >= n_layers or w[1] >= n_heads) and w != (layer, head)]
if missing:
    st.info(f"**The head changed.** A ({key_a}) has {result_a.n_layers} layers × {result_a.n_heads} heads and "
            f"B ({name_b[3:]}) has {result_b.n_layers} × {result_b.n_heads}, so only layers 0–{n_layers - 1} and "
            f"heads 0–{n_heads - 1} exist in both. L{missing[0][0]} H{missing[0][1]} is not one of them: "
            f"this page shows L{layer} H{head} instead.")
ma, mb = result_a.attention[layer, head], result_b.attention[layer, head]
top = shared_colour_max(ma, mb)  # one scale for both sides
c1, c2 = st.columns(2)
with c1:
    show_figure(matrix_heatmap(ma, tokens_a, tokens_a, title=f"{name_a} · L{layer} H{head}", zmin=0.0, zmax=top,
                               colorscale="Blues"), key="cmp_a")
with c2:
    show_figure(matrix_heatmap(mb, tokens_b, tokens_b, title=f"{name_b} · L{layer} H{head}", zmin=0.0, zmax=top,
                               colorscale="Blues"), key="cmp_b")
d1, d2 = st.columns(2)
with d1:
    diff = difference(ma, mb)
    lim = max(float(abs(diff).max()), 1e-6)
    labels = [a if a == b else f"{a}/{b}" for a, b in zip(tokens_a, tokens_b)]
    show_figure(matrix_heatmap(diff, labels, labels, title=f"A − B · L{layer} H{head}", zmin=-lim, zmax=lim,
                                   zmid=0.0, colorscale="RdBu_r", colorbar="A − B"), key="cmp_diff")
    st.caption("Tokens that differ between A and B are labelled 'a/b'. Red: A attends more; blue: B does.")
with d2:
    if result_a.attention.shape[:2] == result_b.attention.shape[:2]:
        ablated = {(l, h) for l, h in aw.ablated_heads() if l < n_layers and h < n_heads}
        dist = head_distance(result_a, result_b)
        fig = head_grid(dist, title="Difference per head (mean row distance)", colorbar="distance", zmin=0.0,
                        zmax=max(float(dist.max()), 1e-6),
                        # not Magma: its first colour, #000004, is one of the stand-in colours Streamlit's
                        # plotly theme replaces in the browser, which painted zero distance pink
                        colorscale="Viridis", fmt=".4f", ablated=ablated, selected=(layer, head))
        aw.clickable_head_grid(fig, "cmp_grid")
        st.caption("Mean total-variation distance between matching rows: 0 = same, 1 = disjoint. Click a head "
                   "to open it on the heatmap page (for the sidebar's text).")
        if ablated:
            st.caption(aw.ablation_note("Red crosses mark", ablated))
    else:
        st.info(f"The models have different layer x head grids ({result_a.n_layers} x {result_a.n_heads} and "
                f"{result_b.n_layers} x {result_b.n_heads}); only one head of each can be compared.")
