"""Lab 7: the KV cache during step-by-step generation, its cost, and its size."""
import numpy as np
import pandas as pd
import streamlit as st

from attnviz.errors import AttnvizError, BadInput
from attnviz.lab import kv_cache as kv
from attnviz.lab.figures import lines, matrix_heatmap
from attnviz.ui import generate as ug
from attnviz.ui.lab import keep_choice, keep_in_range, keep_text, lab_header, lecture_nav, stop_page
from attnviz.ui.page import part
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.units import dtype_bytes, dtype_label, human_bytes, count_text

bind({"kv_prompt": str, "kv_new": int, "kv_step": int, "kv_preset": str, "kv_tokens": int})

PAGE = "app_pages/lab_kv_cache.py"
lab_header(PAGE, """
A causal model generates one token at a time, and every new token attends to all the tokens before it. The keys
and values of those earlier tokens never change (the causal mask keeps them from seeing the new token), so
recomputing them at every step is wasted work. A **KV cache** stores each layer's K and V rows; each step then
pushes only the **newest** token through the model, appends its K and V, and attends over the cache. The output is
identical; the cost per step stops growing with the whole sequence, and the price is memory.
""")


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    keep_text("kv_prompt", "the cat sat on the", kv.MAX_PROMPT)
    c1, c2 = st.columns([3, 1])
    with c1:
        prompt = st.text_input("Prompt for the tiny model (letters, space, . , ! ?)", key="kv_prompt",
                               max_chars=kv.MAX_PROMPT)
    with c2:
        n_new = number_box(st, "Characters to generate", 1, kv.MAX_NEW, 12, key="kv_new")
    cfg = kv.TinyConfig()
    try:
        gen = kv.generate(prompt, int(n_new), cfg)
    except BadInput as e:
        st.warning(str(e))
        stop_page(PAGE)
    st.caption(f"The model: {cfg.n_layers} layers, {cfg.n_heads} query heads and {cfg.n_kv_heads} KV heads of width "
               f"{cfg.d_head}, d_model {cfg.d_model}, random weights (seed {cfg.seed}) and greedy decoding, so the text is "
               "gibberish; what matters is what gets computed and stored.")
    st.markdown(f"Generated: `{gen.prompt}`**`{gen.text[len(gen.prompt):]}`**")

    st.subheader("The cache, step by step")
    n_steps = len(gen.steps)
    # the slider starts at the last step, and goes back there when the number of steps changes
    # (a restored link keeps its step on the first run)
    if st.session_state.get("_kv_step_max") != n_steps:
        if "_kv_step_max" in st.session_state:
            st.session_state["kv_step"] = n_steps
        st.session_state["_kv_step_max"] = n_steps
    keep_in_range("kv_step", 1, n_steps, n_steps)
    if n_steps > 1:
        step = st.slider("Generation step", 1, n_steps, key="kv_step")
    else:  # nothing to slide over
        step = 1
        st.caption("One character is generated, so there is one step.")
    st_ = gen.steps[step - 1]
    before, after = st_.cache_before, st_.cache_tokens
    k0 = kv.keys_after_step(gen, step)[0]  # (tokens, d_head): KV head 1 of layer 1 after this step
    labels = [f"{i}:{c!r}" for i, c in enumerate(st_.text_so_far)]
    labels[-1] = f"<b>{labels[-1]} NEW</b>"
    fig = matrix_heatmap(k0.T, [f"d{j}" for j in range(cfg.d_head)], labels,
                         title=f"Layer 1, KV head 1: the cached keys after step {step}: {before} from before + 1 new",
                         colorscale="RdBu", zmid=0, digits=2, show_text=False, height=260)
    fig.add_shape(type="rect", x0=after - 1.5, x1=after - 0.5, y0=-0.5, y1=cfg.d_head - 0.5,
                  line={"color": "#111", "width": 3})  # the column this step appended
    show_figure(fig, key="kv_fig_cache", toolbar=False)
    left, right = st.columns([2, 3])
    with left:
        st.caption(f"Each column is one token's key vector. The framed last column (NEW) is the key of "
                   f"{st_.new_token!r}, computed and appended at this step; the {before} columns before it were "
                   "computed once, at their own step, and reused since. V is cached the same way, in every layer "
                   f"and for each of the {cfg.n_kv_heads} KV heads." + (
                       " At step 1 the newest token is the prompt's last character; the prompt's earlier characters "
                       "filled the cache before generation started." if step == 1 else ""))
    with right:
        st.markdown(f"""
    **Step {step}** pushes the newest token `{st_.new_token!r}` through the model and predicts `{st_.next_char!r}`.

    - Cache before the step: **{before} tokens** per layer; each layer holds K and V of shape
      {cfg.n_kv_heads} KV heads × {count_text(before)} tokens × {cfg.d_head}.
    - This step appends the newest token's K and V: **{after} tokens** after it (the figure's {after} columns).
    - Work with the cache: **{st_.madds_cached:,}** multiply-adds (one token).
    - Work without it: **{st_.madds_uncached:,}** (all {count_text(len(st_.text_so_far))} tokens again),
      **{st_.madds_uncached / st_.madds_cached:.1f}×** more.
    - Largest difference between the two next-token logits: **{st_.max_logit_diff:.1e}** (rounding only).
    """)

    xs = list(range(1, len(gen.steps) + 1))
    cum_c = np.cumsum([s.madds_cached for s in gen.steps])
    cum_u = np.cumsum([s.madds_uncached for s in gen.steps])
    show_figure(lines(xs, {"with KV cache": cum_c, "recomputing everything": cum_u},
                      "Total multiply-adds so far (the prompt's own pass not included)", "generation step",
                      "multiply-adds", marker_x=step, hover_digits=0), key="kv_fig_cost", toolbar=False)
    st.markdown("Without the cache step t redoes all t tokens, so the total grows like t²; with it each step costs "
                "about the same (only its attention over the cache grows, linearly).")

    st.subheader("How big is the cache?")
    st.markdown("**bytes = 2 (K and V) × layers × KV heads × d_head × tokens × batch × bytes per value.** "
                "Use the **KV** heads: a grouped-query model stores fewer heads than it attends with.")
    presets = dict(kv.PRESETS)
    if st.session_state.get("kv_model_facts"):
        presets["the sidebar's model (loaded)"] = st.session_state["kv_model_facts"]
    keep_choice("kv_preset", presets, next(iter(presets)))
    p1, p2 = st.columns([2, 1])
    with p1:
        name = st.selectbox("Preset", list(presets), key="kv_preset")
    with p2:
        st.write("")
        if st.button("Read the sidebar's model", key="kv_load",
                     help="Loads the model chosen in the sidebar and takes its layers, KV heads and head width."):
            from attnviz.ui.jobs import load_model
            from attnviz.ui.sidebar import model_key

            try:
                f = load_model(model_key()).facts
                if not f.causal:
                    st.warning(f"{f.name} is an encoder ({f.architecture}): encoders read the whole text at once and "
                               "keep no KV cache. Pick the causal SmolLM2 in the sidebar.")
                else:
                    st.session_state["kv_model_facts"] = kv.CacheShape(f.n_layers, f.n_kv_heads, f.d_head, f.n_heads)
                    st.rerun()
            except AttnvizError as e:
                st.warning(str(e))
    shape = presets[name]
    a, b, c, d, e, f_ = st.columns(6)
    n_layers = number_box(a, "layers", 0, 1000, shape.n_layers, key=f"kv_layers_{name}")
    n_kv = number_box(b, "KV heads", 0, 1000, shape.n_kv_heads, key=f"kv_kvh_{name}")
    d_head = number_box(c, "d_head", 0, 4096, shape.d_head, key=f"kv_dhead_{name}")
    tokens = number_box(d, "tokens", 0, 10_000_000, 2048, key="kv_tokens")
    batch = number_box(e, "batch", 0, 100_000, 1, key="kv_batch")
    dtype = f_.selectbox("dtype", kv.DTYPES, index=1, key="kv_dtype", format_func=dtype_label)
    per_value = dtype_bytes(dtype)
    try:
        size = kv.kv_cache_bytes(n_layers, n_kv, d_head, tokens, batch, per_value)
        wrong = kv.kv_cache_bytes(n_layers, shape.n_heads, d_head, tokens, batch, per_value)
    except BadInput as err:
        st.warning(str(err))
        stop_page(PAGE)
    st.metric("KV cache", human_bytes(size), help=f"{size:,} bytes (1 MiB = 1024 × 1024 bytes)")
    st.markdown(f"= 2 × {n_layers:,} × {n_kv:,} × {d_head:,} × {tokens:,} × {batch:,} × {per_value} = "
                f"**{size:,} bytes**. " + (
                    f"Counting the preset's {shape.n_heads} query heads instead of the {n_kv} KV heads would give "
                    f"{human_bytes(wrong)}, {shape.n_heads / n_kv:.3g}× too much." if 0 < n_kv < shape.n_heads and size
                    else ""))
    grid = [256, 512, 1024, 2048, 4096, 8192]
    table = pd.DataFrame({"tokens": grid, "KV cache": [
        human_bytes(kv.kv_cache_bytes(n_layers, n_kv, d_head, t, batch, per_value)) for t in grid]})
    st.table(table.set_index("tokens").T)
    ug.measured_cache_note(kv.kv_cache_bytes)
    lecture_nav(PAGE)


lab()
