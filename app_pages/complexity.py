"""Complexity calculator: attention's compute and memory against n for a model config, and measured here."""
from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from attnviz.complexity import costs as cx
from attnviz.complexity import figures as cp
from attnviz.complexity.measure import (IMPLEMENTATIONS, PREDICTED_SLOPE, SHORT_NAMES, BenchConfig, input_bytes,
                                        measure, memory_budget, plan, predict_peak_bytes, slopes)
from attnviz.errors import AttnvizError
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind
from attnviz.ui.present import page_intro

LOADED = "The sidebar's model (its own config)"
CUSTOM = "Custom"
PRESET_NAMES = list(cx.PRESETS) + [LOADED, CUSTOM]
FIELDS = {  # widget key -> AttentionConfig field
    "cx_batch": "batch", "cx_d": "d_model", "cx_h": "n_heads", "cx_kv": "n_kv_heads",
    "cx_layers": "n_layers", "cx_window": "window", "cx_sparse": "sparse_block",
    "cx_flash": "flash_block", "cx_dff": "d_ff",
}
s = st.session_state


def _fill(cfg: cx.AttentionConfig) -> None:
    """Write a config into the widgets' session state (before the widgets are drawn)."""
    s["cx_n"] = f"{cfg.seq_len}"
    for key, field in FIELDS.items():
        s[key] = int(getattr(cfg, field))
    s["cx_dtype"] = cfg.dtype
    s["cx_gated"] = cfg.gated_ffn


def _loaded_config() -> cx.AttentionConfig | None:
    from attnviz.ui.cache import get_model
    from attnviz.ui.sidebar import model_key

    key = model_key()
    if not key:
        st.warning("Pick a model in the sidebar first.")
        return None
    try:
        with st.spinner(f"Loading {key} to read its config…"):
            loaded = get_model(key)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    d_ff, gated = cx.feed_forward_from_hf(getattr(loaded.model, "config", None), loaded.facts.d_model)
    return cx.config_from_facts(loaded.facts, d_ff=d_ff, gated=gated, dtype=s.get("cx_dtype", "fp16"))


def _on_preset():
    s["cx_apply"] = True


# What makes a preset a model: its architecture. n, batch, dtype and the variants' block sizes are
# settings of the calculation, so changing them keeps the preset's name (and its source).
ARCH = {"cx_d": "d_model", "cx_h": "n_heads", "cx_kv": "n_kv_heads", "cx_layers": "n_layers",
        "cx_dff": "d_ff", "cx_gated": "gated_ffn"}


def _arch(cfg: cx.AttentionConfig) -> dict:
    return {key: getattr(cfg, field) for key, field in ARCH.items()}


def _preset_arch(name: str | None) -> dict | None:
    if name in cx.PRESETS:
        return _arch(cx.PRESETS[name].config)
    if name == LOADED:
        return s.get("cx_loaded_arch")
    return None


def _on_arch_edit():
    """An architecture number changed: the sizes are the user's own unless they still match the preset."""
    arch = _preset_arch(s.get("cx_preset"))
    if arch is not None and any(s.get(key) != value for key, value in arch.items()):
        s["cx_preset"] = CUSTOM


# ---- state: defaults, then apply a newly picked preset before any widget exists
if "cx_n" not in s:
    _fill(cx.PRESETS["BERT-base"].config)
s.setdefault("cx_preset", "BERT-base")
bind({"cx_preset": str, "cx_n": str, "cx_batch": int, "cx_dtype": str, "cx_d": int, "cx_h": int, "cx_kv": int,
      "cx_layers": int, "cx_dff": int, "cx_window": int, "cx_sparse": int, "cx_flash": int, "cx_gated": bool,
      "cx_metric": str})
if s.pop("cx_apply", False):
    choice = s["cx_preset"]
    if choice in cx.PRESETS:
        _fill(cx.PRESETS[choice].config)
    elif choice == LOADED:
        cfg_loaded = _loaded_config()
        if cfg_loaded is not None:
            _fill(cfg_loaded)
            s["cx_loaded_name"] = cfg_loaded.name
            s["cx_loaded_arch"] = _arch(cfg_loaded)

page_intro("Attention complexity calculator",
    "How much compute and memory attention needs as the sequence length **n** grows, for a real "
    "model's sizes, and what each efficient variant changes. Pick a preset or type your own sizes; "
    "every number below follows from the formulas shown, and the last tab measures attention on "
    "this machine.")

# ---- inputs
with st.container(border=True):
    c = st.columns([2.2, 1.2, 1, 1])
    c[0].selectbox("Preset", PRESET_NAMES, key="cx_preset", on_change=_on_preset,
                   help="Fills the sizes below. The sidebar's model is loaded only when you pick it.")
    c[1].text_input("Sequence length n", key="cx_n",
                    help="Tokens per sequence: 512, 100k, 1.5M, 1e6 or 2^20 (at most 100 million).")
    c[2].number_input("Batch", key="cx_batch", step=1)
    c[3].selectbox("dtype", list(cx.DTYPE_BYTES), key="cx_dtype",
                   format_func=lambda k: f"{k} ({cx.DTYPE_BYTES[k]} B)")
    c = st.columns(5)
    c[0].number_input("d_model", key="cx_d", step=64, on_change=_on_arch_edit)
    c[1].number_input("Heads h", key="cx_h", step=1, on_change=_on_arch_edit)
    c[2].number_input("KV heads g", key="cx_kv", step=1, on_change=_on_arch_edit,
                      help="Key/value heads: equal to h for multi-head, fewer for GQA, 1 for MQA.")
    c[3].number_input("Layers L", key="cx_layers", step=1, on_change=_on_arch_edit)
    c[4].number_input("FFN width d_ff", key="cx_dff", step=256, on_change=_on_arch_edit,
                      help="Hidden width of the feed-forward block (4·d_model in BERT and GPT-2).")
    c = st.columns([1, 1, 1, 1.3, 2.7], vertical_alignment="bottom")
    c[0].number_input("Window w", key="cx_window", step=64,
                      help="Keys each query sees in sliding-window attention.")
    c[1].number_input("Sparse block s", key="cx_sparse", step=16,
                      help="Block size of the strided sparse pattern; 0 picks s = √n.")
    c[2].number_input("Flash block B", key="cx_flash", step=16,
                      help="Width of the key blocks FlashAttention processes at once.")
    c[3].toggle("Gated FFN", key="cx_gated", on_change=_on_arch_edit,
                help="Gated feed-forward blocks (SwiGLU, LLaMA) use three d×d_ff matrices instead of two.")
    preset = s["cx_preset"]
    if preset in cx.PRESETS:
        c[4].caption(f"**Source:** {cx.PRESETS[preset].source}")
    elif preset == LOADED:
        c[4].caption(f"**Source:** the config of `{s.get('cx_loaded_name', '?')}` as loaded "
                     "(ModelFacts and its transformers config).")
    else:
        c[4].caption("**Source:** your own sizes.")

cfg = None
try:
    cfg = cx.AttentionConfig(seq_len=cx.parse_length(s["cx_n"]), dtype=s["cx_dtype"],
                             gated_ffn=s["cx_gated"], name=preset,
                             **{field: s[key] for key, field in FIELDS.items()})
except AttnvizError as e:
    st.warning(str(e))

if cfg is not None:
    costs = cx.variant_costs(cfg)
    text = cx.sentences(cfg)
    m = st.columns(5)
    m[0].metric("One head's matrix", cx.human_bytes(cfg.seq_len ** 2 * cfg.bytes_per_value),
                help="n × n scores of one head, in the chosen dtype.")
    m[1].metric("Scores per layer (multi-head)", cx.human_bytes(costs["mha"].attention_matrix_bytes))
    m[2].metric("Attention FLOPs (forward)", cx.human_flops(costs["mha"].flops_forward))
    m[3].metric("KV cache at n", cx.human_bytes(costs["gqa"].kv_cache_bytes),
                help=f"With the config's {cfg.n_kv_heads} KV heads per layer.")
    m[4].metric("Attention passes FFN at", f"n ≈ {cx.ffn_crossover(cfg):,.0f}")


tab_names = ["Costs at n", "Curves against n", "Attention vs feed-forward", "Attention vs RNN",
             "Measured here"]
tabs = st.tabs(tab_names)

if cfg is not None:
    costs = cx.variant_costs(cfg)
    text = cx.sentences(cfg)
    with tabs[0]:
        rows = []
        for key, vc in costs.items():
            rows.append({
                "Variant": vc.variant.label + ("" if vc.variant.exact else " ≈"),
                "Time": vc.variant.big_o,
                "Keys/query": f"{vc.keys_per_query:,}" if key != "linear" else "none",
                "FLOPs fwd": cx.human_flops(vc.flops_forward),
                "FLOPs train": cx.human_flops(vc.flops_training),
                "Scores (1 layer)": cx.human_bytes(vc.attention_matrix_bytes),
                "Activations": cx.human_bytes(vc.activation_bytes),
                "KV / token": cx.human_bytes(vc.kv_cache_bytes_per_token) if key != "linear" else "fixed",
                "KV at n": cx.human_bytes(vc.kv_cache_bytes),
            })
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption("≈ marks approximations of softmax attention; the others compute it exactly. "
                   "FLOPs and activations cover all layers and the batch; scores are one layer's.")
        left, right = st.columns([3, 2])
        with left:
            st.markdown("\n".join(f"- {t}" for t in text.values()))
        with right:
            st.markdown(
                "**How to read this.** FLOPs count the two matrix products of attention (QKᵀ and PV), "
                "2 per multiply-add, over all layers and the batch. *Scores held* is what one layer must "
                "keep at once; *activations* are what training keeps for the backward pass. The KV cache is "
                "what generation stores per token: 2 × L × g × d_head values. Units are decimal "
                "(1 GB = 10⁹ bytes).")
            with st.expander("What each variant does"):
                st.markdown("\n".join(f"- **{v.label}**: {v.idea}" for v in cx.VARIANTS.values()))

    with tabs[1]:
        c = st.columns([1, 2])
        metric = c[0].radio("Quantity", list(cx.METRICS), key="cx_metric",
                            format_func=lambda k: cx.METRICS[k][0])
        chosen = c[1].multiselect("Variants", list(cx.VARIANTS), key="cx_variants",
                                  default=["mha", "flash", "linear", "window", "sparse"],
                                  format_func=lambda k: cx.VARIANTS[k].label)
        if chosen:
            show_figure(cp.variant_curves(cfg, metric, chosen), key="cx_curves")
        else:
            st.info("Pick at least one variant to draw.")
        st.caption(
            "Both axes are logarithmic, so a cost growing like nᵖ is a straight line of slope p: full and "
            "multi-head attention rise with slope 2, linear attention and a fixed window with slope 1, "
            "the √n-block sparse pattern with slope 1.5. FlashAttention has the same FLOPs as full "
            "attention but its scores stay at n × B per head. The dotted line marks your n.")

    with tabs[2]:
        m_ffn = cx.ffn_matrices(cfg)
        left, right = st.columns([3, 2])
        with left:
            show_figure(cp.ffn_crossover(cfg), key="cx_ffn")
        with right:
            st.markdown("Per token and layer, the attention core costs **4·n·d** FLOPs (n scores of "
                        "width d, then n values), the feed-forward block **2·m·d·d_ff** with m weight "
                        "matrices. They are equal at")
            st.latex(r"n^{*} = \frac{m\,d_{ff}}{2} = \frac{%d \cdot %s}{2} = %s" % (
                m_ffn, f"{cfg.d_ff:,}".replace(",", "{,}"), f"{cx.ffn_crossover(cfg):,.0f}".replace(",", "{,}")))
            st.markdown(f"Here m = {m_ffn} ({'gated, SwiGLU' if cfg.gated_ffn else 'plain'}). With the "
                        f"classic 4d-wide plain block, n* = 4d (3,072 for BERT-base); a gated block with "
                        f"d_ff ≈ 8d/3 moves it to about 4d as well, a wider one further out. Below n* the "
                        f"feed-forward dominates; above it, attention does. {text['ffn']}")

    with tabs[3]:
        left, right = st.columns([3, 2])
        with left:
            show_figure(cp.rnn_comparison(cfg), key="cx_rnn")
        with right:
            st.markdown("A recurrent layer of width d does two d×d matrix-vector products per token, "
                        "**4·n·d²** FLOPs in all; self-attention's core does **4·n²·d**. Attention is "
                        "cheaper while n < d, but the decisive difference is the depth of the work:")
            st.dataframe(pd.DataFrame([
                {"": "FLOPs per layer", "Self-attention": cx.human_flops(4 * cfg.seq_len ** 2 * cfg.d_model),
                 "RNN": cx.human_flops(4 * cfg.seq_len * cfg.d_model ** 2)},
                {"": "Sequential steps", "Self-attention": "1", "RNN": f"{cfg.seq_len:,}"},
                {"": "Path between two tokens", "Self-attention": "1", "RNN": f"up to {cfg.seq_len - 1:,}"},
            ]), hide_index=True, width="stretch")
            st.markdown(text["rnn"])
else:
    for t in tabs[:4]:
        with t:
            st.info("Fix the input above to see the costs.")


# ---- measured here: one (implementation, n) per fragment rerun, so the progress bar moves
# and the Cancel button is read between sizes.
SIZE_CHOICES = [256, 512, 1024, 2048, 4096, 8192, 16384]


def _bench_config() -> BenchConfig:
    sizes = tuple(n for n in SIZE_CHOICES if n <= s["cx_bench_max"])
    return BenchConfig(sizes=sizes, implementations=tuple(s["cx_bench_impls"]) or ("naive",),
                       n_heads=int(s["cx_bench_heads"]), d_head=64,
                       memory_budget=int(s["cx_bench_mem"] * 1e9))


def _start():
    """Button callback (runs before the rerun draws anything): plan a new measurement."""
    try:
        bcfg = _bench_config()
    except AttnvizError:
        return  # the page shows the message
    s["cx_bench"] = {"cfg": bcfg, "jobs": plan(bcfg), "results": [], "running": True, "status": "running"}


def _cancel():
    """Button callback: stop between sizes; what was measured stays."""
    bench = s.get("cx_bench")
    if bench and bench["running"]:
        bench["running"], bench["status"] = False, "cancelled"


@st.fragment
def measured_here():
    s.setdefault("cx_bench", None)
    s.setdefault("cx_bench_impls", list(IMPLEMENTATIONS))
    s.setdefault("cx_bench_max", 4096)
    s.setdefault("cx_bench_heads", 4)
    s.setdefault("cx_bench_mem", 2.0)
    bench = s["cx_bench"]
    running = bool(bench and bench["running"])
    st.markdown(
        "A bounded benchmark of one attention layer (float32, d_head = 64) at growing n: the naive "
        "version that builds the n×n matrix, torch's fused `scaled_dot_product_attention`, and linear "
        "attention. Time is one thread's CPU time (other programs barely disturb it). Memory is "
        "predicted first; sizes that would not fit the cap, or would take too long, are skipped.")
    c = st.columns([3, 2, 1, 1])
    c[0].multiselect("Implementations", list(IMPLEMENTATIONS), key="cx_bench_impls",
                     format_func=SHORT_NAMES.get, disabled=running)
    c[1].select_slider("Largest n", SIZE_CHOICES, key="cx_bench_max", disabled=running)
    c[2].number_input("Heads", key="cx_bench_heads", min_value=1, max_value=16, step=1, disabled=running)
    c[3].number_input("Memory cap (GB)", key="cx_bench_mem", min_value=0.1, max_value=16.0, step=0.5,
                      disabled=running)
    try:
        bcfg = _bench_config()
    except AttnvizError as e:
        st.warning(str(e))
        return
    b = st.columns([1, 1, 4])
    b[0].button("▶ Measure", key="cx_bench_start", type="primary", disabled=running, on_click=_start)
    b[1].button("■ Cancel", key="cx_bench_cancel", disabled=not running, on_click=_cancel)
    if bench is None:
        budget = memory_budget(bcfg)
        st.markdown("**Prediction before running** (peak bytes of one call, inputs excluded):")
        st.dataframe(pd.DataFrame([
            {"n": f"{n:,}", "Implementation": IMPLEMENTATIONS[impl],
             "Predicted peak": cx.human_bytes(predict_peak_bytes(impl, n, bcfg)),
             "Fits the cap": "yes" if predict_peak_bytes(impl, n, bcfg) + input_bytes(n, bcfg) <= budget
             else "no: skipped"}
            for impl, n in plan(bcfg)]), hide_index=True, width="stretch", height=220)
        return
    jobs, results = bench["jobs"], bench["results"]
    done = len(results)
    label = {"running": "Measuring", "cancelled": "Cancelled", "done": "Done"}[bench["status"]]
    nxt = f": next {IMPLEMENTATIONS[jobs[done][0]]} at n = {jobs[done][1]:,}" if bench["running"] else ""
    st.progress(done / len(jobs), text=f"{label}: {done} of {len(jobs)} sizes{nxt}")
    if bench["running"]:
        impl, n = jobs[done]
        results.append(measure(impl, n, bench["cfg"], results))
        if len(results) == len(jobs):
            bench["running"], bench["status"] = False, "done"
        try:  # only the fragment reruns when a fragment widget started this run
            st.rerun(scope="fragment")
        except StreamlitAPIException:  # a full-page run (first run, AppTest): rerun the page
            st.rerun()
    _show_results(bench)


def _show_results(bench) -> None:
    results = bench["results"]
    if not results:
        st.info("Nothing was measured: press Measure.")
        return
    fitted = slopes(results)
    c = st.columns(max(1, len(fitted)))
    for col, (impl, slope) in zip(c, fitted.items()):
        col.metric(f"{SHORT_NAMES[impl]}: fitted slope of time", f"{slope:.2f}",
                   delta=f"{slope - PREDICTED_SLOPE[impl]:+.2f} vs predicted {PREDICTED_SLOPE[impl]:g}",
                   delta_color="off")
    left, right = st.columns(2)
    with left:
        show_figure(cp.measured_times(results), key="cx_measured_t")
    with right:
        show_figure(cp.measured_memory(results), key="cx_measured_m")
    st.caption(
        "Slope = how the time grows on log-log axes: 2 means doubling n quadruples the time. Small n "
        "sits in the CPU caches and carries fixed overheads, so fitted slopes drift from the ideal. "
        "The fused kernel (sdpa) keeps the n² time but its memory grows only like n: it never stores "
        "the n×n matrix.")
    st.dataframe(pd.DataFrame([
        {"Implementation": IMPLEMENTATIONS[m.impl], "n": m.n,
         "Time (ms)": round(m.seconds * 1e3, 3) if m.seconds else None,
         "GFLOP/s": round(m.gflops_per_s, 2) if m.seconds else None,
         "Peak memory": cx.human_bytes(m.peak_bytes) if m.peak_bytes else "—",
         "Predicted": cx.human_bytes(m.predicted_bytes),
         "Note": f"skipped: {m.skipped}" if m.skipped else ""}
        for m in results]), hide_index=True, width="stretch")


with tabs[4]:
    measured_here()
