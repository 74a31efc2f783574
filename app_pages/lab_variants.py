"""Lab 6: Bahdanau and Luong alignment scores side by side; self-, cross- and causal patterns."""
import pandas as pd
import streamlit as st

from attnviz.errors import BadInput
from attnviz.lab import variants as va
from attnviz.lab.figures import matrix_heatmap
from attnviz.lab.multihead import multi_head_attention, random_params, token_embeddings
from attnviz.ui.lab import keep_text, lab_header, lecture_nav, matrix_input, stop_page
from attnviz.ui.page import part
from attnviz.ui.cache import figure
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind

bind({"var_da": int, "var_seed": int, "var_src": str, "var_tgt": str})

PAGE = "app_pages/lab_variants.py"
lab_header(PAGE, """
Before transformers, attention lived between an RNN encoder and decoder: at each output step the decoder state
**s** scored every encoder state **h**, a softmax turned the scores into an **alignment** over the source, and
the context was the weighted sum of the h. The variants differ only in the **score**. Bahdanau (additive) feeds
both states through a small tanh network; Luong's *dot* is a plain dot product, *general* puts a learned matrix
in between, *concat* is Bahdanau's network applied to [s; h]. Scaled dot-product attention is Luong's dot score
with learned projections and a 1/√d_k.
""")


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    st.subheader("Alignment scores on the same states")
    c1, c2, c3 = st.columns([2, 2, 1])
    with c1:
        h = matrix_input("Encoder states h (one source position per row)", va.ENCODER_STATES, "var_h")
    with c2:
        s = matrix_input("Decoder states s (one target step per row)", va.DECODER_STATES, "var_s")
    with c3:
        d_a = number_box(st, "d_a (alignment width)", 1, 64, 2, key="var_da")
        seed = number_box(st, "seed", 0, 9999, 0, key="var_seed")
    if h is None or s is None:
        stop_page(PAGE)
    d_s, d_h = s.shape[1], h.shape[1]
    p = va.random_variant_params(d_s, d_h, int(d_a), seed=int(seed))
    src = [f"h{j + 1}" for j in range(len(h))]
    tgt = [f"s{i + 1}" for i in range(len(s))]
    cols = st.columns(4)
    rows = []
    for col, variant in zip(cols, va.VARIANTS):
        with col:
            try:
                w, _ = va.alignment(variant, s, h, p)
            except BadInput as e:
                st.markdown(f"**{va.LABELS[variant]}**")
                st.warning(str(e))
                w = None
            if w is not None:
                show_figure(figure(matrix_heatmap, w, tgt, src, title=va.LABELS[variant].split(":")[0], zmin=0, zmax=1, digits=2),
                            key=f"var_fig_{variant}", toolbar=False)
                st.caption(va.LABELS[variant].split(": ")[1])
        rows.append({"score": va.LABELS[variant], "learned parameters": va.n_params(variant, d_s, d_h, int(d_a)),
                     f"multiply-adds for all {len(s)} × {len(h)} pairs": va.cost_madds(variant, len(s), len(h), d_s, d_h, int(d_a))})
    st.table(pd.DataFrame(rows).set_index("score"))
    st.markdown(f"""
    Parameters: Bahdanau has W_a ({int(d_a)} × {d_s}), U_a ({int(d_a)} × {d_h}) and v_a ({int(d_a)}); general has one
    {d_s} × {d_h} matrix; dot has none but needs d_s = d_h. Cost counts each state's projection once per sequence,
    then the per-pair work: a d_a-wide dot for the additive scores, a d-wide one for the others. The additive score
    is more flexible (the tanh makes it non-linear) and dearer; the dot score is the cheapest and became the default.
    Weights are random (seeded), so these alignments show the mechanics, not a trained translation.
    """)

    st.subheader("Self-, cross- and causal attention")
    st.markdown("""
    The same mechanism, three wirings. **Self-attention**: the source attends to itself, every token to every token.
    **Cross-attention**: target queries attend to source keys and values (the transformer form of Bahdanau/Luong).
    **Causal self-attention**: the target attends to itself, but only to the past.
    """)
    keep_text("var_src", "le chat est assis", 120)
    keep_text("var_tgt", "the cat is sitting", 120)
    c1, c2 = st.columns(2)
    with c1:
        src_text = st.text_input("Source sentence (encoder)", key="var_src", max_chars=120)
    with c2:
        tgt_text = st.text_input("Target sentence (decoder)", key="var_tgt", max_chars=120)
    src_tok, tgt_tok = src_text.split(), tgt_text.split()
    if not src_tok or not tgt_tok or len(src_tok) > 12 or len(tgt_tok) > 12:
        st.warning("Type 1 to 12 space-separated tokens in each sentence.")
        stop_page(PAGE)
    d = 16
    params = random_params(d, 1, seed=int(seed))
    xs, xt = token_embeddings(src_tok, d), token_embeddings(tgt_tok, d)
    masks = va.pattern_masks(len(src_tok), len(tgt_tok))
    panels = [
        ("Self (source → source)", multi_head_attention(xs, xs, params, 1).weights[0], src_tok, src_tok),
        ("Cross (target → source)", multi_head_attention(xt, xs, params, 1).weights[0], tgt_tok, src_tok),
        ("Causal (target → target)", multi_head_attention(xt, xt, params, 1, mask=masks["causal"]).weights[0], tgt_tok, tgt_tok),
    ]
    for col, (title, w, r, c) in zip(st.columns(3), panels):
        with col:
            show_figure(figure(matrix_heatmap, w, r, c, title=title, zmin=0, zmax=1, digits=2, show_text=max(len(r), len(c)) <= 6),
                        key=f"var_fig_{title.split()[0].lower()}", toolbar=False)
    st.caption("One random head (seeded); rows are queries, columns keys. Note the shapes: self and causal are square, "
               "cross is target length × source length, and causal is zero above the diagonal.")
    lecture_nav(PAGE)


lab()
