"""Lab 3: temperature, from soft averaging to a hard dictionary lookup."""
import numpy as np
import streamlit as st

from attnviz.attention import attention_steps
from attnviz.errors import BadInput
from attnviz.lab import lookup as lk
from attnviz.lab import worked_example as ex
from attnviz.lab.figures import bars, lines, matrix_heatmap
from attnviz.lab.matrix_text import format_number
from attnviz.ui.lab import keep_choice, lab_header, lecture_nav, matrix_editor, reset_button, stop_page
from attnviz.ui.cache import figure
from attnviz.ui.figure import show_figure
from attnviz.ui.page import part
from attnviz.ui.share import bind
from attnviz.units import fixed_list

bind({"temp_T": float, "temp_typed": str, "temp_row": int})

PAGE = "app_pages/lab_temperature.py"
lab_header(PAGE, """
Divide the scores by a **temperature T** before the softmax: **softmax(Q Kᵀ / (√d_k · T)) V** (T = 1 is ordinary
attention). A large T flattens every row towards uniform weights, so each output becomes the plain average of
the values. A small T stretches the gaps between scores, and as T → 0 all the weight goes to the best-matching
key: attention becomes a **hard lookup** (argmax), like reading one entry of a dictionary. Keys that tie for the
best score share the weight equally, even at T → 0.
""")

@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    GRID = lk.temperature_grid()
    st.session_state.setdefault("temp_T", 1.0)
    if st.session_state["temp_T"] not in GRID and 0 < st.session_state["temp_T"] < np.inf:  # a hand-edited link: nearest notch
        st.session_state["temp_T"] = min(GRID, key=lambda t: abs(np.log(t / st.session_state["temp_T"])))
    keep_choice("temp_T", GRID, 1.0)
    try:  # a typed T puts the slider on its nearest notch, so the slider shows about the T the figures use
        exact = lk.read_temperature(st.session_state.get("temp_typed") or "")[0]
        st.session_state["temp_T"] = min(GRID, key=lambda t: abs(np.log(t / exact)))
    except BadInput:  # nothing typed, or a T refused below
        pass

    def slider_moved() -> None:  # the last control touched wins: the slider's T replaces a typed one
        st.session_state["temp_typed"] = ""

    c1, c2 = st.columns([3, 1])
    with c1:
        st.select_slider("Temperature T (log scale)", options=GRID, key="temp_T", on_change=slider_moved,
                         help="Drag left to sharpen, right to flatten. Arrow keys move one notch. Moving it clears "
                              "a typed T.")
    with c2:
        typed = st.text_input("…or type T exactly", key="temp_typed", placeholder="e.g. 0.3",
                              help="A number here is used instead of the slider, which moves to its nearest notch; "
                                   "moving the slider clears it.")
    T = st.session_state["temp_T"]
    if typed.strip():
        try:
            T, note = lk.read_temperature(typed)
            if note:
                st.warning(note)
        except BadInput as e:
            st.warning(f"{e} Using the slider's T = {format_number(T, 3)} meanwhile.")

    st.subheader(f"The worked example at T = {format_number(T, 3)}")
    # The editors are drawn on every run (never skipped by an early stop), so the user's matrices are kept;
    # their messages go below the closed section, where they are seen.
    with st.expander("Edit Q, K, V (default: the worked example of page 1)"):
        e1, e2, e3 = st.columns(3)
        with e1:
            q, q_err = matrix_editor("Q", ex.Q, "temp_q")
        with e2:
            k, k_err = matrix_editor("K", ex.K, "temp_k")
        with e3:
            v, v_err = matrix_editor("V", ex.V, "temp_v")
        reset_button(["temp_q", "temp_k", "temp_v"], label="Reset Q, K, V to the worked example", key="temp_reset")
    for err in (q_err, k_err, v_err):
        if err:
            st.warning(f"{err} Open “Edit Q, K, V” above to fix it.")
    if q is None or k is None or v is None:
        stop_page(PAGE)
    try:
        s = attention_steps(q, k, v, temperature=T)
        s1 = attention_steps(q, k, v)
    except BadInput as e:
        st.warning(f"{e} Open “Edit Q, K, V” above to fix it.")
        stop_page(PAGE)
    qs = [f"query {i + 1}" for i in range(q.shape[0])]
    ks = [f"key {j + 1}" for j in range(k.shape[0])]
    left, right = st.columns(2)
    with left:
        show_figure(figure(matrix_heatmap, s.weights, qs, ks, title=f"Weights at T = {format_number(T, 3)}", zmin=0, zmax=1),
                    key="temp_fig_weights", toolbar=False, in_place=True)
    with right:
        hard = (s1.scaled == s1.scaled.max(axis=1, keepdims=True)).astype(float)
        hard = hard / hard.sum(axis=1, keepdims=True)
        show_figure(figure(matrix_heatmap, hard, qs, ks, title="The T → 0 limit: hard lookup (ties share)", zmin=0, zmax=1),
                    key="temp_fig_hard", toolbar=False, in_place=True)
    gap = np.abs(s.weights - hard).max()
    tied = [qs[i] for i in range(q.shape[0]) if (hard[i] > 0).sum() > 1]
    st.markdown(f"Largest difference from the hard lookup: **{gap:.4f}**. Output of query 1: [{fixed_list(s.output[0])}]"
                + (f" (at T = 1: [{fixed_list(s1.output[0])}]). " if T != 1 else ". ")
                + (f"{', '.join(tied).capitalize()} {'has' if len(tied) == 1 else 'have'} tied best scores, so even a tiny T "
                   "splits the weight evenly between them." if tied else ""))

    keep_choice("temp_row", range(q.shape[0]), 0)
    r = st.selectbox("Follow one query across temperatures", range(q.shape[0]), format_func=lambda i: qs[i],
                     key="temp_row")
    curve = lk.weights_vs_temperature(s1.scaled[r], GRID)
    show_figure(figure(lines, GRID, {ks[j]: curve[:, j] for j in range(curve.shape[1])},
                      f"Weights of {qs[r]} as T changes (dotted line: the current T)", "T", "weight",
                      log_x=True, marker_x=T), key="temp_fig_curve", toolbar=False, in_place=True)

    st.subheader("Attention as a soft dictionary lookup")
    st.markdown("""
A dictionary returns the value whose key matches the query exactly. Attention instead scores **every** key
against the query and returns a weighted average of **all** values. Below, six animals are keys (four made-up
features each) and their typical lifespan is the value. Set what you are looking for; the exact-match
dictionary answers with one animal, attention with a blend that turns into that one animal as T → 0.
    """)
    cols = st.columns(len(lk.FEATURES))
    query = []
    for j, (col, name) in enumerate(zip(cols, lk.FEATURES)):
        with col:
            query.append(st.slider(f"query: {name}", -1.0, 1.0, float(lk.DEFAULT_QUERY[j]), 0.1, key=f"temp_feat_{j}"))
    res = lk.soft_lookup(np.array(query), temperature=T)
    left, right = st.columns([3, 2])
    with left:
        show_figure(figure(bars, list(lk.ENTRIES), {"weight": res.weights}, f"Attention weights over the dictionary, T = {format_number(T, 3)}",
                         "weight", y_range=(0, 1.15)), key="temp_fig_lookup", toolbar=False, in_place=True)
    with right:
        st.metric("Attention returns (weighted lifespan)", f"{res.soft_value:.2f} years")
        st.metric(f"Hard lookup returns ({lk.ENTRIES[res.hard_index]})", f"{res.hard_value:.2f} years",
                  delta=f"{res.soft_value - res.hard_value:+.2f} years from attention", delta_color="off")
        st.caption("Because every step is smooth, gradients flow to every key and value: that is what makes "
                   "the soft lookup trainable, and the hard one not.")
    lecture_nav(PAGE)


lab()
