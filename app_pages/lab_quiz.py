"""Lab 8: quick checks with immediate feedback, and the common mistakes shown live."""
import secrets

import numpy as np
import pandas as pd
import streamlit as st

from attnviz.errors import BadInput
from attnviz.lab import kv_cache as kv
from attnviz.lab import worked_example as ex
from attnviz.lab.figures import bars, lines
from attnviz.lab.masks import future_leak
from attnviz.lab.mistakes import MISTAKES, inverted_padding, rank_collapse, ratio_check, wrong_axis
from attnviz.lab.multihead import head_dim
from attnviz.lab.quiz import QUESTIONS, arrange, check, score
from attnviz.lab.scaling import saturation_row
from attnviz.ui.lab import lab_header, lecture_nav
from attnviz.ui.page import part
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.units import fixed_list, human_bytes

bind({"quiz_dmodel": int, "quiz_heads": int})

PAGE = "app_pages/lab_quiz.py"
lab_header(PAGE, """
Test yourself: pick an answer and the feedback appears at once, with the reason. Then the common mistakes, each
one happening live on small numbers, so you can recognise its symptom in your own code.
""")


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    st.subheader("Quick checks")
    # The choices are shown in an order drawn once per session (the seed below), with the correct answers
    # spread over the positions; "Start again" clears the answers and draws a new order.
    if "quiz_seed" not in st.session_state:
        st.session_state["quiz_seed"] = secrets.randbelow(2 ** 31)
    order = arrange(int(st.session_state["quiz_seed"]))


    def _start_again():
        for q in QUESTIONS:
            st.session_state.pop(f"quiz_{q.key}", None)
        st.session_state["quiz_seed"] = secrets.randbelow(2 ** 31)


    answers = {}
    for n, q in enumerate(QUESTIONS, start=1):
        with st.container(border=True):
            # options are the original choice indices in the shuffled order, so an answer keeps its meaning
            choice = st.radio(f"**{n}. {q.prompt}**", order[q.key], index=None, key=f"quiz_{q.key}",
                              format_func=lambda i, q=q: q.choices[i])
            answers[q.key] = choice
            ok = check(q, choice)
            if ok is True:
                st.success(f"Right. {q.why}")
            elif ok is False:
                st.error(f"Not quite. The answer is “{q.choices[q.answer]}”. {q.why}")
    right, answered = score(answers)
    p1, p2 = st.columns([4, 1], vertical_alignment="center")
    p1.progress(right / len(QUESTIONS), text=f"{right} right out of {answered} answered ({len(QUESTIONS)} questions)")
    p2.button("Start again", key="quiz_reset", on_click=_start_again, width="stretch",
              help="Clears every answer and shows the choices in a new order.")

    st.subheader("Common mistakes, live")


    def demo(key: str) -> None:
        if key == "causal":
            leak = future_leak(6)
            show_figure(bars([f"t{j + 1}" for j in range(6)], {"with causal mask": leak.change_with_mask,
                                                               "without": leak.change_without_mask},
                             "Change only t6: how far each output moves", "‖Δ output‖", digits=3), key="quiz_fig_causal", toolbar=False)
        elif key == "divisible":
            c1, c2 = st.columns(2)
            d = number_box(c1, "d_model", 1, 4096, 256, key="quiz_dmodel")
            h = number_box(c2, "n_heads", 1, 256, 6, key="quiz_heads")
            try:
                st.success(f"d_head = {head_dim(int(d), int(h))}: fine.")
            except BadInput as e:
                st.error(str(e))
        elif key == "residual":
            rc = rank_collapse(8)
            show_figure(lines(list(range(9)), rc, "Spread of the token vectors through 8 attention layers", "layer",
                              "mean distance to the mean token", log_y=True), key="quiz_fig_residual", toolbar=False)
            st.caption("Each attention layer replaces every token by an average of tokens; stacked without the "
                       "residual x + attn(x), the tokens collapse onto one vector within a few layers.")
        elif key == "mask_sign":
            w = inverted_padding((4,), 6)
            show_figure(bars(["t1", "t2", "t3", "t4", "pad", "pad"], {"correct mask": w["correct"], "sign flipped": w["flipped"]},
                             "Weights of query t1 (4 real tokens, 2 padding)", "weight", digits=3, y_range=(0, 1.1)),
                        key="quiz_fig_sign", toolbar=False)
        elif key == "no_scale":
            r = saturation_row(512)
            st.markdown(f"At d_k = 512 over 16 keys: largest weight **{r.max_weight_raw:.3f}** unscaled vs "
                        f"**{r.max_weight_scaled:.3f}** scaled; gradient size **{r.grad_raw:.3f}** vs "
                        f"**{r.grad_scaled:.3f}**. (Page 2 sweeps d_k.)")
        elif key == "hand_softmax":
            rc = ratio_check(ex.SEED_PRINTED_ROW1, [0.5, 0.5, 1.0])
            st.table(pd.DataFrame({"printed w_i / w_3": [f"{x:.4f}" for x in rc[:, 0]],
                                   "exp(s_i − s_3)": [f"{x:.4f}" for x in rc[:, 1]]},
                                  index=["key 1", "key 2", "key 3"]))
            st.caption(f"The printed weights sum to {ex.SEED_PRINTED_ROW1.sum():.4f}, yet their ratios are wrong: "
                       "they are not the softmax of [0.5, 0.5, 1.0] (which is 0.2741, 0.2741, 0.4519).")
        elif key == "axis":
            res = wrong_axis(np.array([[2.0, 0.0, 1.0], [0.5, 0.5, 0.0], [1.0, 3.0, 0.5]]))
            st.markdown("Row sums with softmax over keys (right): " + fixed_list(res["right_row_sums"])
                        + ". Over queries (wrong): **" + fixed_list(res["wrong_row_sums"]) + "**.")
        elif key == "cache_heads":
            right_ = kv.kv_cache_bytes(30, 3, 64, 2048, 1, 2)
            wrong_ = kv.kv_cache_bytes(30, 9, 64, 2048, 1, 2)
            st.markdown(f"SmolLM2-135M at 2048 tokens in 16-bit: **{human_bytes(right_)}** with its 3 KV heads; "
                        f"counting its 9 query heads gives {human_bytes(wrong_)}, 3× too much.")


    for m in MISTAKES:
        with st.expander(m.title):
            st.markdown(f"**Mistake:** {m.wrong}  \n**Fix:** {m.fix}")
            demo(m.key)
    lecture_nav(PAGE)


lab()
