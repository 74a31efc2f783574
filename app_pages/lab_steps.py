"""Lab 1: scaled dot-product attention step by step on an editable Q, K, V."""
import numpy as np
import pandas as pd
import streamlit as st

from attnviz.attention import attention_steps
from attnviz.errors import BadInput
from attnviz.lab import worked_example as ex
from attnviz.lab.figures import matrix_heatmap
from attnviz.lab.matrix_text import format_number
from attnviz.ui.lab import keep_choice, lab_header, lecture_nav, matrix_input, reset_button, stop_page
from attnviz.ui.page import part
from attnviz.ui.cache import figure
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind
from attnviz.units import fixed_list

bind({"steps_q": str, "steps_k": str, "steps_v": str, "steps_scale": bool, "steps_row": int})

PAGE = "app_pages/lab_steps.py"
lab_header(PAGE, """
Attention turns each **query** into a weighted average of **values**: compare the query with every
**key** (a dot product), scale, turn each row of scores into weights that sum to 1 (softmax), and mix
the value rows with those weights: **Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V**.
Edit any number below; every step updates. The default is a classic 3-token, d_k = 4 worked example,
with the softmax computed correctly.
""")


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    c1, c2, c3 = st.columns(3)
    with c1:
        q = matrix_input("Q (queries: one row per token)", ex.Q, "steps_q")
    with c2:
        k = matrix_input("K (keys: one row per token)", ex.K, "steps_k")
    with c3:
        v = matrix_input("V (values: one row per key)", ex.V, "steps_v")
    o1, o2 = st.columns([1, 3])
    with o1:
        reset_button(["steps_q", "steps_k", "steps_v"], key="steps_reset")
    with o2:
        st.session_state.setdefault("steps_scale", True)
        scale = st.toggle("Divide by √d_k", key="steps_scale",
                          help="Turn off to see the raw scores go straight into the softmax.")

    if q is None or k is None or v is None:
        st.info("Fix the matrix above to see the steps.")
        stop_page(PAGE)
    try:
        s = attention_steps(q, k, v, scale=scale)
    except BadInput as e:
        st.warning(str(e))
        stop_page(PAGE)

    n_q, n_k, d_v = q.shape[0], k.shape[0], v.shape[1]
    qs = [f"query {i + 1}" for i in range(n_q)]
    ks = [f"key {j + 1}" for j in range(n_k)]
    dims = [f"dim {j + 1}" for j in range(d_v)]
    st.caption(f"Shapes: Q is {n_q} × {s.d_k}, K is {n_k} × {s.d_k}, V is {n_k} × {d_v}  →  "
               f"weights {n_q} × {n_k}, output {n_q} × {d_v}.")

    left, right = st.columns(2)
    with left:
        st.subheader("Step 1 · Scores Q Kᵀ")
        st.markdown("Entry (i, j) is the dot product of query i with key j: how well they match.")
        show_figure(figure(matrix_heatmap, s.scores, qs, ks, colorscale="Greys", digits=4), key="steps_fig_scores", toolbar=False)
    with right:
        st.subheader(f"Step 2 · Divide by √{s.d_k} = {format_number(s.divisor)}" if scale else "Step 2 · (scaling off)")
        st.markdown("Scaling keeps the scores near unit size whatever d_k is (page 2 shows why that matters).")
        show_figure(figure(matrix_heatmap, s.scaled, qs, ks, colorscale="Greys", digits=4), key="steps_fig_scaled", toolbar=False)

    left, right = st.columns(2)
    with left:
        st.subheader("Step 3 · Softmax of each row")
        st.markdown("Each row is exponentiated and divided by its sum, so it is a probability distribution over the keys.")
        show_figure(figure(matrix_heatmap, s.weights, qs, ks, zmin=0, zmax=1, digits=4), key="steps_fig_weights", toolbar=False)
    with right:
        st.subheader("Step 4 · Weights × V")
        st.markdown("Each output row mixes the value rows with that query's weights.")
        show_figure(figure(matrix_heatmap, s.output, qs, dims, colorscale="Greens", digits=4), key="steps_fig_output", toolbar=False)

    st.subheader("Check a row by hand")
    st.markdown("Hand calculations of a softmax are easy to get wrong. Two checks catch most slips: "
                "**the row sums to 1**, and **the ratio of two weights equals e to the power of the difference of "
                "their scores** (so equal scores get equal weights).")
    keep_choice("steps_row", range(n_q), 0)
    row = st.selectbox("Row", range(n_q), format_func=lambda i: qs[i], key="steps_row")
    sc = s.scaled[row]
    e = np.exp(sc - sc.max())
    table = pd.DataFrame({
        "key": ks, "scaled score": [f"{x:.4f}" for x in sc],
        "exp(score − max)": [f"{x:.4f}" for x in e],
        "weight = exp / sum": [f"{x:.4f}" for x in s.weights[row]],
        "weight × value row": ["[" + ", ".join(format_number(w * x) for x in v[j]) + "]" for j, w in enumerate(s.weights[row])],
    })
    st.table(table.set_index("key"))
    st.markdown(f"Sum of exp = {format_number(e.sum())}; sum of weights = **{format_number(s.weights[row].sum())}**; "
                f"output {qs[row]} = **[{', '.join(format_number(x) for x in s.output[row])}]**. "
                "Subtracting the row's maximum before exp changes nothing in the weights and avoids overflow.")

    if np.array_equal(q, ex.Q) and np.array_equal(k, ex.K) and np.array_equal(v, ex.V) and scale:
        w1 = s.weights[0]
        st.info(
            f"**A slip to watch for.** For row 1 (scores 0.5, 0.5, 1.0) a printed version of this example gives weights "
            f"{fixed_list(ex.SEED_PRINTED_ROW1)}. They do sum to 1, but their ratio "
            f"0.2312 / 0.5376 = {0.2312 / 0.5376:.4f} is not e^(0.5 − 1.0) = {np.exp(-0.5):.4f}. "
            f"The correct weights are {fixed_list(w1)}, and output row 1 is "
            f"[{fixed_list(s.output[0])}], not the printed [6.2288, 7.2288, 8.2288, 9.2288].")
    lecture_nav(PAGE)


lab()
