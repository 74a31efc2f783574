"""Streamlit helpers shared by the head-analytics pages: cached analysis, clickable head grids, ablation state."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.examples import examples
from attnviz.metrics.analysis import analyse
from attnviz.metrics.roles import RoleScores, average_scores
from attnviz.types import AttentionResult, LoadedModel, Request
from attnviz.ui.cache import ablation_run, analysis, example_role_scores, get_result, induction_one
from attnviz.ui.page import stop as stop_page
from attnviz.ui.sidebar import model_key, sidebar_request, using_trained  # noqa: F401  (re-exported for pages)

HEATMAP_PAGE = "app_pages/heatmap.py"


def analysis_of_sidebar(max_tokens: int | None = None, result=None):
    """HeadAnalysis (entropy, role scores, default rollout) of the sidebar's current result
    (call after sidebar.require_result(max_tokens), which reports bad input), through the sidebar's
    lens; `result` is the one the page drew (the trained toy model's is analysed as it is)."""
    from attnviz.ui.sidebar import TRAINED_KEY, using_trained

    if using_trained():  # a small stored result: analyse it once per stored frame
        result = result if result is not None else st.session_state[TRAINED_KEY]
        cached = st.session_state.get("_trained_analysis")
        if cached is None or cached[0] is not result:
            cached = (result, analyse(result))
            st.session_state["_trained_analysis"] = cached
        return cached[1]
    from attnviz.ui.contrib import quantity

    request = sidebar_request(max_tokens)
    with st.spinner("Analysing every head…"):
        try:
            return analysis(request, result.quantity if result is not None else quantity(),
                            words=result is not None and result.word_starts is not None)
        except AttnvizError:  # the lens cannot apply (said where the result was drawn): weights
            return analysis(request)


def hf_inputs(what: str) -> tuple[AttentionResult, Request]:
    """(result, its Request) for a page that runs the model again; stops the page with a plain message when
    there is no result or the model is the toy one."""
    from attnviz.ui.sidebar import require_result

    result = require_result()
    require_hf_model(what)
    return result, sidebar_request()


def require_hf_model(what: str) -> None:
    """Stop the page with a plain message when the sidebar shows the trained toy model."""
    from attnviz.ui.sidebar import using_trained

    if using_trained():
        st.info(f"{what} needs a HuggingFace model (it runs the model again). The sidebar shows the trained "
                "toy model: pick the default model or another one to use this page.")
        stop_page()


CAUSAL_MODEL = "smollm2"  # the packaged causal LM that pages offer when the sidebar's model cannot serve


def _use_causal_model() -> None:
    st.session_state["model_choice"] = CAUSAL_MODEL


def switch_to_causal_button(key: str) -> bool:
    """A 'Switch to SmolLM2' button (it selects SmolLM2 in the sidebar) when SmolLM2 is installed and not chosen
    already; whether it was drawn."""
    from attnviz.models.registry import PACKAGED
    from attnviz.ui.sidebar import installed_models

    from attnviz.ui.jobs import load_hint

    if CAUSAL_MODEL not in installed_models() or st.session_state.get("model_choice") == CAUSAL_MODEL:
        return False
    hint = load_hint(CAUSAL_MODEL)
    st.button(f"Switch to {PACKAGED[CAUSAL_MODEL].label.split(' · ')[0]} ({load_hint(CAUSAL_MODEL, short=True)})",
              key=key, on_click=_use_causal_model, type="primary", icon=":material/swap_horiz:",
              help=f"{hint[:1].upper()}{hint[1:]}.")
    return True


def sidebar_model(what: str) -> tuple[Request, LoadedModel]:
    """(Request, LoadedModel) of the sidebar, the model loaded under a spinner; or stop the page with a plain
    message (the trained toy model, no model chosen, a model that does not load)."""
    from attnviz.ui.jobs import load_model

    require_hf_model(what)
    request = sidebar_request()
    key = request.model
    if not key:
        st.info("Type a HuggingFace hub id or a local model folder in the sidebar.")
        stop_page()
    try:
        loaded = load_model(key)  # a progress bar with the time left while it loads
    except AttnvizError as e:
        st.warning(str(e))
        stop_page()
    return request, loaded


ABLATED = "ablated_by_model"  # session key: {model key: set of ablated (layer, head)}


def ablated_heads() -> set:
    """The ablated (layer, head) pairs of the sidebar's model (a copy). Each model keeps its own:
    heads switched off on one model are not switched off on another."""
    return set(st.session_state.get(ABLATED, {}).get(model_key(), set()))


def ablation_note(marks: str, heads) -> str:
    """The sentence that explains ablation marks beside a figure. `marks` names the marks with their verb
    ("Red crosses mark"); heads: the ablated (layer, head) pairs the figure marks."""
    listed = ", ".join(f"L{int(l)} H{int(h)}" for l, h in sorted(heads))
    return (f"{marks} the heads switched off on the **Ablation** page ({listed}). The ablation applies there "
            "only: this figure comes from the model with every head on, so the marked heads show their own "
            "attention. The Ablation page shows what switching them off changes.")


def set_ablated_heads(heads) -> None:
    """Make `heads` the ablated (layer, head) pairs of the sidebar's model."""
    store = dict(st.session_state.get(ABLATED, {}))
    store[model_key()] = {(int(l), int(h)) for l, h in heads}
    st.session_state[ABLATED] = store


def current_head(n_layers: int, n_heads: int) -> tuple[int, int]:
    """The shared (layer, head), clipped to this model's range."""
    layer = int(st.session_state.setdefault("layer", 0))
    head = int(st.session_state.setdefault("head", 0))
    return min(max(layer, 0), n_layers - 1), min(max(head, 0), n_heads - 1)


def open_head(layer: int, head: int, text: str | None = None) -> None:
    """Open (layer, head) on the heatmap page; with `text`, on that text (it becomes the sidebar's)."""
    from attnviz.ui.sidebar import queue_text

    st.session_state["layer"], st.session_state["head"] = int(layer), int(head)
    if text is not None:
        queue_text(text)
    st.switch_page(HEATMAP_PAGE)


def clickable_head_grid(fig, key: str, text: str | None = None, on_click=None, in_place: bool = False) -> None:
    """Show a head-grid figure; a click on a cell opens that head: on_click(layer, head) when given, else on the
    heatmap page (on `text` when given, else on the sidebar's text). in_place: drawn and redrawn in place by
    plotly.js in the page (ui.figure.show_figure)."""
    from attnviz.ui.figure import show_figure
    from attnviz.ui.heads import clicked_head

    show_figure(fig, key=key, on_select="rerun", selection_mode="points", in_place=in_place)
    hit = clicked_head(key)
    if hit:
        (on_click or (lambda layer, head: open_head(layer, head, text)))(*hit)


def corpus_role_scores(key: str, words: bool = False) -> RoleScores | None:
    """Role scores averaged over the example sentences (at word level when `words`), with a progress
    bar; None on failure."""
    from attnviz import timings
    from attnviz.ui.jobs import Bar

    items = examples()
    scores = []
    detail = f"{len(items)} example sentences" + (", word level" if words else "")
    try:
        with Bar("Scoring the example sentences…", hint=timings.hint(key, timings.ROLES),
                 timing=(key, timings.ROLES, detail)) as bar:
            for i, (a, b) in enumerate(items):
                scores.append(example_role_scores(Request(key, a, b), words))
                bar(i + 1, len(items), f"Scored {i + 1} of {len(items)} example sentences")
    except AttnvizError as e:
        st.warning(str(e))
        return None
    return average_scores(scores)


def head_table(values: dict[str, np.ndarray]):
    """A pandas DataFrame with one row per head (layer, head, then the given (layer, head) columns)."""
    import pandas as pd

    first = next(iter(values.values()))
    n_layers, n_heads = first.shape
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    data = {"layer": layer.ravel(), "head": head.ravel()}
    data.update({name: np.round(np.asarray(v, dtype=float).ravel(), 4) for name, v in values.items()})
    return pd.DataFrame(data)


def rank_all_heads(request: Request) -> np.ndarray:
    """(layer, head) effect of ablating each head alone, with a progress bar; kept in session state."""
    from attnviz.metrics.ablation import rank_heads
    from attnviz.ui.cache import get_model

    store = st.session_state.setdefault("ab_rankings", {})
    if request in store:
        return store[request]
    from attnviz.ui.jobs import Bar

    with Bar("Switching off each head in turn…") as bar:
        out = rank_heads(get_model(request.model), get_result(request), ablation_run(request, ()),
                         progress=lambda done, total: bar(done, total, f"Head {done} of {total}"))
    if len(store) > 8:
        store.clear()
    store[request] = out
    return out


def induction_of_model(key: str, n_words: int, n_sequences: int) -> dict | None:
    """Induction and duplicate-token scores (layer, head) averaged over n_sequences random repeated
    sequences (seeds 0..n-1), with a progress bar; "text" is the first sequence. None on failure."""
    from attnviz.ui.jobs import Bar

    runs = []
    try:
        with Bar("Reading random repeated sequences…") as bar:
            for seed in range(n_sequences):
                runs.append(induction_one(key, n_words, seed))
                bar(seed + 1, n_sequences, f"Sequence {seed + 1} of {n_sequences}")
    except AttnvizError as e:
        st.warning(str(e))
        return None
    return {"text": runs[0]["text"],
            **{k: np.mean([r[k] for r in runs], axis=0) for k in ("induction", "duplicate")}}


def corpus_results(key: str) -> list:
    """AttentionResults of the example sentences for the model `key` (cached one by one)."""
    return [get_result(Request(key, a, b)) for a, b in examples()]
