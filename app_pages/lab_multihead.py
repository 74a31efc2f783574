"""Lab 5: multi-head attention: split d_model into heads, attend per head, concatenate, W_O."""
import streamlit as st

from attnviz.errors import BadInput
from attnviz.lab.figures import head_split, matrix_heatmap
from attnviz.lab.multihead import head_dim, multi_head_attention, random_params, token_embeddings
from attnviz.ui.lab import keep_choice, keep_text, lab_header, lecture_nav, stop_page
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.page import part
from attnviz.ui.share import bind
from attnviz.units import count_text

bind({"mh_text": str, "mh_dmodel": int, "mh_heads": int, "mh_seed": int})

PAGE = "app_pages/lab_multihead.py"
lab_header(PAGE, """
One head gives each token **one** weighting of the others. Multi-head attention runs **h** heads side by side:
each projects the d_model-wide token vectors down to d_head = d_model / h dimensions with its own W_Q, W_K,
W_V, attends, and returns a d_head-wide result. The h results are **concatenated** back to d_model columns
and mixed by the output matrix **W_O**. Same parameter count as one wide head (4 · d_model² without biases),
but h different patterns. The weights here are random (a freshly initialised layer, fixed seed), so the
patterns differ by chance, not by learned roles.
""")


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    keep_text("mh_text", "the cat sat on the mat", 200)
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    with c1:
        text = st.text_input("Tokens (space-separated)", key="mh_text", max_chars=200)
    with c2:
        d_model = number_box(st, "d_model", 1, 512, 16, key="mh_dmodel")
    with c3:
        n_heads = number_box(st, "heads h", 1, 16, 4, key="mh_heads")
    with c4:
        seed = number_box(st, "seed", 0, 9999, 0, key="mh_seed")
    kv_key = f"mh_kv_{int(n_heads)}"  # one slider per head count: its options depend on it
    bind({kv_key: int}, replacing="mh_kv_")  # bound before any message, so the link never keeps another count's
    tokens = text.split()
    if not tokens:
        st.warning("Type at least one token.")
        stop_page(PAGE)
    if len(tokens) > 12:
        st.warning(f"{count_text(len(tokens))} tokens: the lab shows at most 12 so each head's matrix stays readable.")
        stop_page(PAGE)
    try:
        d_head = head_dim(int(d_model), int(n_heads))
    except BadInput as e:
        st.error(str(e))
        st.caption("A classic mistake: with d_model = 256 and 6 heads, d_k is not an integer.")
        stop_page(PAGE)
    kv_options = [k for k in range(1, int(n_heads) + 1) if int(n_heads) % k == 0]
    keep_choice(kv_key, kv_options, kv_options[-1])
    n_kv = st.select_slider("KV heads (grouped-query attention: several query heads share one key/value head)",
                            options=kv_options, key=kv_key)

    h, dm = int(n_heads), int(d_model)
    x = token_embeddings(tokens, dm, seed=int(seed))
    params = random_params(dm, h, n_kv, seed=int(seed))
    s = multi_head_attention(x, x, params, h)

    st.subheader("1 · Split d_model into heads")
    show_figure(head_split(dm, h), key="mh_fig_split", toolbar=False)
    st.markdown(f"d_head = {dm} / {h} = **{d_head}**. Shapes: X is {len(tokens)} × {dm}; Q = X W_Qᵀ is {len(tokens)} × {h * d_head}, "
                f"reshaped to {h} heads × {count_text(len(tokens))} tokens × {d_head}. K and V have {n_kv} head(s) "
                f"({n_kv * d_head} columns); each serves {h // n_kv} query head(s). "
                f"Parameters: {params.n_params:,} (W_Q {params.w_q.size}, W_K {params.w_k.size}, W_V {params.w_v.size}, "
                f"W_O {params.w_o.size}, biases {params.b_q.size + params.b_k.size + params.b_v.size + params.b_o.size}).")

    st.subheader("2 · One attention pattern per head")
    per_row = min(h, 4)
    for start in range(0, h, per_row):
        cols = st.columns(per_row)
        for i, col in zip(range(start, min(h, start + per_row)), cols):
            with col:
                show_figure(matrix_heatmap(s.weights[i], tokens, tokens, title=f"head {i + 1} (KV head {i // (h // n_kv) + 1})",
                                           zmin=0, zmax=1, digits=2, show_text=len(tokens) <= 6 and per_row <= 3,
                                           height=125 + 34 * len(tokens)), key=f"mh_fig_head_{i}", toolbar=False)
    st.caption("Rows are queries, columns keys; hover a cell for its weight. Repeated words keep separate rows.")

    st.subheader("3 · Concatenate the heads, then mix with W_O")
    left, right = st.columns(2)
    with left:
        st.markdown(f"**Concat(head 1 … head {h})**: {len(tokens)} × {h * d_head} (columns h·i = head h, dimension i)")
        show_figure(
                    matrix_heatmap(s.concat, tokens, [f"h{i // d_head + 1}.{i % d_head}" for i in range(h * d_head)],
                                   colorscale="RdBu", zmid=0, digits=2),
                    key="mh_fig_concat", toolbar=False)
    with right:
        st.markdown(f"**Output = Concat · W_Oᵀ + b**: {len(tokens)} × {dm}")
        show_figure(matrix_heatmap(s.output, tokens, [f"d{j}" for j in range(dm)], colorscale="RdBu", zmid=0, digits=2),
                    key="mh_fig_out", toolbar=False)
    st.markdown("The concatenation only places the heads' results next to each other (the column colours of step 1); "
                "W_O is what lets the heads' findings mix. Without it, head 1 could only ever write to the first "
                f"{d_head} columns.")
    lecture_nav(PAGE)


lab()
