"""Lab 2: why attention divides the scores by sqrt(d_k)."""
import numpy as np
import streamlit as st

from attnviz.errors import BadInput
from attnviz.lab.figures import lines, score_histograms
from attnviz.lab.scaling import D_K_GRID, ScalingConfig
from attnviz.ui.lab import keep_choice, lab_header, lecture_nav, stop_page
from attnviz.ui.page import part
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind
from attnviz.ui.cache import figure, scaling_samples, scaling_sweep
from attnviz.units import count_text

bind({"scaling_dk": int, "scaling_nkeys": int})

PAGE = "app_pages/lab_scaling.py"
lab_header(PAGE, """
Take a query and a key with d_k independent entries of mean 0 and variance 1. Their dot product is a sum
of d_k such products, so its variance is **d_k** and its spread is **√d_k**. At d_k = 512 typical scores are
around ±22: the softmax then puts almost all weight on one key, and its gradient (how much the weights move
when a score moves) nearly vanishes, so the layer stops learning. Dividing by √d_k brings the variance back
to 1 at every width. Everything below is sampled from a fixed random seed.
""")


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    KEY_COUNTS = [4, 8, 16, 32, 64, 128]
    keep_choice("scaling_dk", D_K_GRID, 512)
    keep_choice("scaling_nkeys", KEY_COUNTS, 16)
    c1, c2 = st.columns([2, 1])
    with c1:
        d_k = st.select_slider("d_k (width of queries and keys)", options=list(D_K_GRID), key="scaling_dk")
    with c2:
        n_keys = st.select_slider("Keys per softmax", options=KEY_COUNTS, key="scaling_nkeys",
                                  help="How many keys each query spreads its weight over.")

    try:
        raw, row = scaling_samples(d_k, n_keys)
    except BadInput as e:
        st.warning(str(e))
        stop_page(PAGE)

    st.subheader(f"Spread of q·k at d_k = {d_k}")
    left, right = st.columns([3, 2])
    with left:
        show_figure(figure(score_histograms, raw, d_k), key="scaling_hist", toolbar=False)
    with right:
        st.markdown(f"""
    | at d_k = {d_k} | unscaled | ÷ √d_k |
    |---|---:|---:|
    | standard deviation of q·k (theory: √{d_k} = {np.sqrt(d_k):.2f} and 1) | {raw.std():.2f} | {(raw / np.sqrt(d_k)).std():.2f} |
    | largest softmax weight, mean over {count_text(ScalingConfig().n_trials)} queries (uniform: {1 / n_keys:.4f}) | {row.max_weight_raw:.4f} | {row.max_weight_scaled:.4f} |
    | entropy in nats (uniform: ln {n_keys} = {np.log(n_keys):.4f}) | {row.entropy_raw:.4f} | {row.entropy_scaled:.4f} |
    | gradient size ‖∂softmax/∂scores‖ | {row.grad_raw:.4f} | {row.grad_scaled:.4f} |
    """)
        st.caption("The gradient size is the Frobenius norm of the softmax Jacobian diag(p) − p pᵀ: "
                   "near 0 means the weights barely move when the scores do.")

    st.subheader("As d_k grows from 1 to 1024")
    sweep = scaling_sweep(n_keys, ScalingConfig().n_trials)
    xs = [r.d_k for r in sweep]
    a, b, c = st.columns(3)
    with a:
        show_figure(figure(lines, xs, {"unscaled": [r.max_weight_raw for r in sweep], "÷ √d_k": [r.max_weight_scaled for r in sweep]},
                          "Largest weight (1 = one-hot)", "d_k", "mean max weight", log_x=True, marker_x=d_k),
                    key="scaling_fig_max", toolbar=False)
    with b:
        show_figure(figure(lines, xs, {"unscaled": [r.entropy_raw for r in sweep], "÷ √d_k": [r.entropy_scaled for r in sweep]},
                          f"Entropy (ln {n_keys} = {np.log(n_keys):.2f} is uniform)", "d_k", "nats", log_x=True,
                          marker_x=d_k), key="scaling_fig_entropy", toolbar=False)
    with c:
        show_figure(figure(lines, xs, {"unscaled": [r.grad_raw for r in sweep], "÷ √d_k": [r.grad_scaled for r in sweep]},
                          "Gradient size", "d_k", "‖Jacobian‖", log_x=True, marker_x=d_k), key="scaling_fig_grad", toolbar=False)
    st.markdown("""
    Without scaling, the largest weight creeps towards 1, the entropy towards 0 and the gradient towards 0 as
    d_k grows: the softmax **saturates**. With the 1/√d_k factor all three curves stay flat, so a head of width 64
    behaves like a head of width 4 at initialisation. Note what the scaling does *not* do: it does not normalise
    the output vectors; it only keeps the softmax inputs in a range where the softmax is still soft.
    """)
    lecture_nav(PAGE)


lab()
