"""Widgets of the complexity page: presets and sizes, the headline numbers, and the benchmark run as a job."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from attnviz.complexity import costs as cx
from attnviz.complexity import figures as cp
from attnviz.complexity import measure as cm
from attnviz.errors import AttnvizError
from attnviz.ui import jobs
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.units import dtype_label, human_bytes, human_flops

LOADED = "The sidebar's model (its own config)"
CUSTOM = "Custom"
PRESET_NAMES = list(cx.PRESETS) + [LOADED, CUSTOM]
FIELDS = {  # widget key -> AttentionConfig field
    "cx_batch": "batch", "cx_d": "d_model", "cx_h": "n_heads", "cx_kv": "n_kv_heads",
    "cx_layers": "n_layers", "cx_window": "window", "cx_sparse": "sparse_block",
    "cx_flash": "flash_block", "cx_dff": "d_ff",
}
# What makes a preset a model: its architecture. n, batch, dtype and the variants' block sizes are
# settings of the calculation, so changing them keeps the preset's name (and its source).
ARCH = {"cx_d": "d_model", "cx_h": "n_heads", "cx_kv": "n_kv_heads", "cx_layers": "n_layers",
        "cx_dff": "d_ff", "cx_gated": "gated_ffn"}
URL_KEYS = {"cx_preset": str, "cx_n": str, "cx_batch": int, "cx_dtype": str, "cx_d": int, "cx_h": int, "cx_kv": int,
            "cx_layers": int, "cx_dff": int, "cx_window": int, "cx_sparse": int, "cx_flash": int, "cx_gated": bool,
            "cx_metric": str, "cx_tab": str}
TABS = ["Costs at n", "Curves against n", "Attention vs feed-forward", "Attention vs RNN", "Measured here"]
BENCH = "cx_bench"  # session key of the benchmark job
s = st.session_state


def _fill(cfg: cx.AttentionConfig) -> None:
    """Write a config into the widgets' session state (before the widgets are drawn)."""
    s["cx_n"] = f"{cfg.seq_len}"
    for key, field in FIELDS.items():
        s[key] = int(getattr(cfg, field))
    s["cx_dtype"] = cfg.dtype
    s["cx_gated"] = cfg.gated_ffn


def _loaded_config() -> cx.AttentionConfig | None:
    from attnviz.ui.sidebar import model_key

    key = model_key()
    if not key:
        st.warning("Pick a model in the sidebar first.")
        return None
    try:
        loaded = jobs.load_model(key)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    d_ff, gated = cx.feed_forward_from_hf(getattr(loaded.model, "config", None), loaded.facts.d_model)
    return cx.config_from_facts(loaded.facts, d_ff=d_ff, gated=gated, dtype=s.get("cx_dtype", "fp16"))


def _on_preset():
    s["cx_apply"] = True


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


def init_state() -> None:
    """Defaults, the URL's settings, then a newly picked preset, all before any widget exists."""
    if "cx_n" not in s:
        _fill(cx.PRESETS["BERT-base"].config)
    s.setdefault("cx_preset", "BERT-base")
    bind(URL_KEYS)
    if s.get("cx_tab") not in TABS:  # absent, or a hand-edited link's unknown tab
        s["cx_tab"] = TABS[0]
    if s.pop("cx_apply", False):
        choice = s["cx_preset"]
        if choice in cx.PRESETS:
            _fill(cx.PRESETS[choice].config)
        elif choice == LOADED:
            loaded = _loaded_config()
            if loaded is not None:
                _fill(loaded)
                s["cx_loaded_name"] = loaded.name
                s["cx_loaded_arch"] = _arch(loaded)


def inputs() -> str:
    """The preset, n, batch, dtype and the architecture's sizes; returns the preset's name."""
    with st.container(border=True):
        c = st.columns([2.2, 1.2, 1, 1])
        c[0].selectbox("Preset", PRESET_NAMES, key="cx_preset", on_change=_on_preset,
                       help="Fills the sizes below. The sidebar's model is loaded only when you pick it.")
        c[1].text_input("Sequence length n", key="cx_n",
                        help="Tokens per sequence: 512, 100k, 1.5M, 1e6 or 2^20 (at most 100 million).")
        c[2].number_input("Batch", key="cx_batch", step=1)
        c[3].selectbox("dtype", cx.DTYPES, key="cx_dtype", format_func=dtype_label)
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
    return preset


def config(preset: str) -> cx.AttentionConfig | None:
    """The AttentionConfig of the widgets, or None after a plain warning."""
    try:
        return cx.AttentionConfig(seq_len=cx.parse_length(s["cx_n"]), dtype=s["cx_dtype"],
                                  gated_ffn=s["cx_gated"], name=preset,
                                  **{field: s[key] for key, field in FIELDS.items()})
    except AttnvizError as e:
        st.warning(str(e))
        return None


def headline(cfg: cx.AttentionConfig) -> None:
    """Five numbers at the chosen n: one head's matrix, a layer's scores, FLOPs, KV cache, crossover."""
    costs = cx.variant_costs(cfg)
    # five numbers side by side: a smaller value font so "9.66 GFLOP" is not cut short
    st.html("<style>.st-key-cx_headline [data-testid='stMetricValue'] { font-size: 1.75rem; }</style>")
    m = st.container(key="cx_headline").columns(5)
    m[0].metric("One head's matrix", human_bytes(cx.one_head_matrix_bytes(cfg)),
                help="n × n scores of one head, in the chosen dtype.")
    m[1].metric("Scores per layer", human_bytes(costs["mha"].attention_matrix_bytes),
                help="All heads' n × n scores of one layer (multi-head attention), in the chosen dtype.")
    m[2].metric("Attention FLOPs (forward)", human_flops(costs["mha"].flops_forward))
    m[3].metric("KV cache at n", human_bytes(costs["gqa"].kv_cache_bytes),
                help=f"With the config's {cfg.n_kv_heads} KV heads per layer.")
    m[4].metric("Attention passes FFN at", f"n ≈ {cx.ffn_crossover(cfg):,.0f}")


def curves(cfg: cx.AttentionConfig) -> None:
    """The "Curves against n" tab: a quantity, the variants to draw, their log-log curves."""
    c = st.columns([1, 2])
    metric = c[0].radio("Quantity", list(cx.METRICS), key="cx_metric", format_func=lambda k: cx.METRICS[k][0])
    chosen = c[1].multiselect("Variants", list(cx.VARIANTS), key="cx_variants",
                              default=["mha", "flash", "linear", "window", "sparse"],
                              format_func=lambda k: cx.VARIANTS[k].label)
    if chosen:
        show_figure(cp.variant_curves(cfg, metric, chosen), key="cx_curves")
    else:
        st.info("Pick at least one variant to draw.")


# ------------------------------------------------------------------ measured here (a background job)

def _bench_config() -> cm.BenchConfig:
    return cm.page_config(s["cx_bench_max"], s["cx_bench_impls"], s["cx_bench_heads"], s["cx_bench_mem"])


def _start():
    """Measure button callback: plan the sizes and run them in the background."""
    try:
        bcfg = _bench_config()
    except AttnvizError:
        return  # the tab shows the message
    results: list[cm.Measurement] = []
    jobs.start(BENCH, lambda report, cancel: cm.run(bcfg, report, cancel, into=results), "measuring",
               cfg=bcfg, plan=cm.plan(bcfg), results=results)


def _progress(job: jobs.Job) -> None:
    plan, done = job.data["plan"], len(job.data["results"])
    if not job.done:
        if job.cancelled:
            state = ": stopping after the current size"
        else:
            impl, n = plan[min(done, len(plan) - 1)]
            state = f": next {cm.IMPLEMENTATIONS[impl]} at n = {n:,}"
        label = "Measuring"
    else:
        label, state = ("Cancelled" if done < len(plan) else "Done"), ""
    jobs.bar(job, f"{label}: {done} of {len(plan)} sizes{state}")


def _live(job: jobs.Job) -> None:
    _progress(job)
    _show_results(list(job.data["results"]))


def measured_here() -> None:
    """The benchmark's settings, Measure and Cancel, the prediction, then progress and results."""
    s.setdefault("cx_bench_impls", list(cm.IMPLEMENTATIONS))
    s.setdefault("cx_bench_max", 4096)
    s.setdefault("cx_bench_heads", 4)
    s.setdefault("cx_bench_mem", 2.0)
    job = jobs.current(BENCH)
    running = jobs.running(BENCH)
    st.markdown(
        "A bounded benchmark of one attention layer (float32, d_head = 64) at growing n: the naive "
        "version that builds the n×n matrix, torch's fused `scaled_dot_product_attention`, and linear "
        "attention. Time is one thread's CPU time (other programs barely disturb it). Memory is "
        "predicted first; sizes that would not fit the cap, or would take too long, are skipped. "
        "It runs in the background: the page stays usable, and Cancel stops it between sizes.")
    c = st.columns([3, 2, 1, 1])
    c[0].multiselect("Implementations", list(cm.IMPLEMENTATIONS), key="cx_bench_impls",
                     format_func=cm.SHORT_NAMES.get, disabled=running)
    c[1].select_slider("Largest n", cm.SIZE_CHOICES, key="cx_bench_max", disabled=running)
    number_box(c[2], "Heads", 1, 16, key="cx_bench_heads", disabled=running)
    number_box(c[3], "Memory cap (GiB)", 0.1, 16.0, key="cx_bench_mem", step=0.5,
               disabled=running, help="1 GiB = 2³⁰ bytes.")
    try:
        bcfg = _bench_config()
    except AttnvizError as e:
        st.warning(str(e))
        return
    b = st.columns([1, 1, 4])
    b[0].button("▶ Measure", key="cx_bench_start", type="primary", disabled=running, on_click=_start)
    b[1].button("■ Cancel", key="cx_bench_cancel", disabled=not running, on_click=jobs.cancel, args=(BENCH,))
    if job is None:
        st.markdown("**Prediction before running** (peak bytes of one call, inputs excluded):")
        st.dataframe(pd.DataFrame(cm.prediction_rows(bcfg)), hide_index=True, width="stretch", height=220)
        return
    if running:
        jobs.watch(BENCH, _live, every=0.5)
        return
    if job.error:
        st.warning(job.error)
    _progress(job)
    _show_results(list(job.data["results"]))


def _show_results(results: list[cm.Measurement]) -> None:
    if not results:
        st.info("Nothing measured yet." if jobs.running(BENCH) else "Nothing was measured: press Measure.")
        return
    fitted = cm.slopes(results)
    c = st.columns(max(1, len(fitted)))
    for col, (impl, slope) in zip(c, fitted.items()):
        col.metric(f"{cm.SHORT_NAMES[impl]}: fitted slope of time", f"{slope:.2f}",
                   delta=f"{slope - cm.PREDICTED_SLOPE[impl]:+.2f} vs predicted {cm.PREDICTED_SLOPE[impl]:g}",
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
    st.dataframe(pd.DataFrame(cm.result_rows(results)), hide_index=True, width="stretch")
