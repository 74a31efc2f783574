"""Every Streamlit cache of the app, bounded (max_entries): models, attention results and the
features' slow computations. Shared by all sessions: never mutate what a cache_resource returns."""
from __future__ import annotations

import os

import streamlit as st

import numpy as np

from attnviz.extract import extract
from attnviz.heatmap.raster import GridLayout, grid_png
from attnviz.lab.scaling import D_K_GRID, SaturationRow, ScalingConfig, dot_products, saturation_row, saturation_sweep
from attnviz.metrics.analysis import analyse
from attnviz.metrics.roles import RoleScores, result_role_scores
from attnviz.models import load_model
from attnviz.query_key.qk import QueryKey, query_key
from attnviz.training.runs import Run, load, recorded_runs
from attnviz.types import AttentionResult, LoadedModel, Request


@st.cache_resource(max_entries=3, show_spinner=False)
def get_model(key: str, _progress=None) -> LoadedModel:
    """LoadedModel for a registry key, hub id or folder. Shared: never mutate it. _progress: the load's
    attnviz.progress.Progress (left out of the key; ui.jobs.load_model draws it)."""
    import transformers

    transformers.logging.set_verbosity_error()
    loaded = load_model(key, progress=_progress)
    settle_collector()
    return loaded


def settle_collector() -> None:
    """Collect, then move every object alive now (torch, transformers, plotly, the loaded models) out of the
    cyclic garbage collector's sight (gc.freeze). A full collection over the ~435,000 objects of a server with a
    model loaded takes 240 ms with the GIL held; Streamlit's collection after every run is off
    (.streamlit/config.toml), and with the freeze Python's own full collections come often and walk only what
    runs created, so memory stays bounded. Frozen objects are still freed by reference counting. At exit they
    are handed back to the collector, so the interpreter's last collection frees them too (extension modules
    such as DuckDB's otherwise report their types and constants as leaked)."""
    import atexit
    import gc

    gc.collect()
    gc.freeze()
    atexit.unregister(gc.unfreeze)  # registered once however many models load
    atexit.register(gc.unfreeze)


# How many attention results the server keeps (all sessions together): each holds layers x heads x n x n float32,
# 25-45 MB for MiniLM at 300-350 tokens. ATTNVIZ_RESULT_CACHE sets another bound (a server with little memory).
RESULT_CACHE = max(1, int(os.environ.get("ATTNVIZ_RESULT_CACHE", "16")))


# cache_resource, not cache_data: an AttentionResult's arrays are read-only, so sessions can
# share it without the ~45 ms unpickled copy cache_data makes per hit at 512 tokens.
@st.cache_resource(max_entries=RESULT_CACHE, show_spinner=False)
def get_result(request: Request) -> AttentionResult:
    """The AttentionResult of a request (shared by all sessions: read-only arrays, never mutate it).

    A new result first collects the cyclic garbage: results the caches have evicted can sit in reference cycles
    (figures and their export closures), and Python's own collections, counted in objects, seldom come for a few
    objects that hold tens of MB each."""
    import gc

    gc.collect()
    return extract(get_model(request.model), request.text, request.pair, max_tokens=request.max_tokens)


@st.cache_resource(max_entries=8, show_spinner=False)
def recorded(name: str) -> Run | None:
    """The recorded run shipped in assets/runs/<name>.npz (shared: never mutate it)."""
    path = recorded_runs().get(name)
    return load(path) if path else None


@st.cache_resource(max_entries=2, show_spinner=False)
def vision_model(name: str):
    """A ViT or DeiT from a folder, with eager attention (shared: never mutate it)."""
    from attnviz.vision.hf import load_vision_model

    return load_vision_model(name)


# q and k of every layer: 9.4 MB for MiniLM at 512 tokens, ~70 MB for SmolLM2; a few entries only.
@st.cache_resource(max_entries=4, show_spinner=False)
def get_query_key(request: Request) -> QueryKey:
    """QueryKey of the request (shared by all sessions: read-only arrays, never mutate it)."""
    return query_key(get_model(request.model), request.text, request.pair, max_tokens=request.max_tokens)


@st.cache_resource(max_entries=8, show_spinner=False)
def analysis(request: Request, quantity: str = "weights", words: bool = False):
    """HeadAnalysis of the result through the lens `quantity`, at word level when `words`."""
    result = lensed_result(request, quantity)
    if words:
        result = word_level(result, request, quantity)
    return analyse(result)


# Value-weighted attention, ALTI and mixing ratios of every layer (Contributions page, the lens):
# (layer, head, n, n) + 3 x (layer, n, n) float32, ~100 MB for MiniLM at 512 tokens: a few entries.
@st.cache_resource(max_entries=4, show_spinner=False)
def get_contributions(request: Request):
    from attnviz.contrib.compute import contributions

    return contributions(get_model(request.model), request.text, request.pair, max_tokens=request.max_tokens)


@st.cache_resource(max_entries=8, show_spinner=False)
def lensed_result(request: Request, quantity: str) -> AttentionResult:
    """The AttentionResult with `quantity` (weights, value-weighted, ALTI) in place of the weights."""
    from attnviz.contrib.compute import lens

    result = get_result(request)
    if quantity == "weights":
        return result
    return lens(result, get_contributions(request), quantity)


@st.cache_resource(max_entries=64, show_spinner=False)
def example_role_scores(request: Request, words: bool = False) -> RoleScores:
    result = get_result(request)
    if words:
        result = word_level(result, request, result.quantity)
    return result_role_scores(result)


@st.cache_resource(max_entries=8, show_spinner=False)
def ablation_run(request: Request, heads: tuple):
    """AblationRun of the request with `heads` (sorted tuple of (layer, head)) off."""
    from attnviz.metrics.ablation import run

    return run(get_model(request.model), get_result(request), frozenset(heads))


@st.cache_data(max_entries=512, show_spinner=False)
def flow_row(mixes: np.ndarray, target: int, layer: int) -> np.ndarray:
    """Attention-flow values (n,) from output `target` after `layer`, cached per (matrices, target, layer)
    so that the all-outputs view reuses rows already computed."""
    from attnviz.metrics.flow import attention_flow

    return attention_flow(mixes, [target], layer)[0]


@st.cache_resource(max_entries=16, show_spinner=False)
def induction_one(key: str, n_words: int, seed: int) -> dict:
    from attnviz.metrics.induction import copy_positions, induction_scores, repeated_text

    rt = repeated_text(get_model(key).tokenizer, n_words, seed)
    result = get_result(Request(key, rt.text))
    first, second = copy_positions(result.token_ids, result.special_mask, n_words)
    return {"text": rt.text, **induction_scores(result.attention, first, second)}


@st.cache_data(max_entries=64, show_spinner=False)
def scaling_samples(d_k: int, n_keys: int) -> tuple[np.ndarray, SaturationRow]:
    """The Scaling lab's samples at one d_k (fixed seeds): 4,000 dot products q·k and the softmax statistics over
    n_keys keys. Raises BadInput for a d_k out of range."""
    return dot_products(d_k, n=4000), saturation_row(d_k, ScalingConfig(n_keys=n_keys))


@st.cache_data(max_entries=4, show_spinner=False)
def scaling_sweep(n_keys: int, n_trials: int):
    return saturation_sweep(D_K_GRID, ScalingConfig(n_keys=n_keys, n_trials=n_trials))


@st.cache_data(max_entries=8, show_spinner=False)
def rope_relative_errors(d_head: int, base: float) -> dict:
    """How exactly RoPE scores depend on the offset alone, in float64 and float32 (Positional page, RoPE tab)."""
    from attnviz.positional.rope import relative_property_error

    return {"float64": relative_property_error(d_head, base, 4096, dtype=np.float64),
            "float32": relative_property_error(d_head, base, 4096, dtype=np.float32)}


# Logit lens of a causal LM (the Logit lens page) at the positions shown (a window and one position;
# None = all): top 10 ids, labels and probabilities per layer, read-only, shared (never mutate it).
@st.cache_resource(max_entries=8, show_spinner=False)
def get_logit_lens(request: Request, positions: tuple | None = None):
    """LogitLens of the request's text (its pair is not read)."""
    from attnviz.logit_lens.lens import MAX_TOP_K, logit_lens

    return logit_lens(get_model(request.model), request.text, top_k=MAX_TOP_K, max_tokens=request.max_tokens,
                      positions=positions)


# Trust the view?: the masked-LM head loaded beside the encoder (only for models whose config
# names one), and the whole attribution report: read-only arrays, shared (never mutate them).
@st.cache_resource(max_entries=2, show_spinner=False)
def get_masked_lm(model_key: str):
    from attnviz.attribution.targets import load_masked_lm

    return load_masked_lm(get_model(model_key))


@st.cache_resource(max_entries=8, show_spinner=False)
def trust_report(request: Request, kind: str, position: int | None, token: str | None, second: str | None,
                 steps: int, randomise: bool, _report=None, _cancel=None):
    """TrustReport of one input (the request's text; its pair is not read) and target (runs in a background job:
    _report and _cancel are its progress callback and cancel Event, left out of the key; a cancelled run is not
    cached)."""
    from attnviz.attribution.faithfulness import evaluate
    from attnviz.attribution.targets import MASKED_TOKEN, make_target, token_id_of
    from attnviz.extract import encode

    loaded = get_model(request.model)
    mlm = get_masked_lm(request.model) if kind == MASKED_TOKEN else None
    enc = encode(loaded, request.text, max_tokens=request.max_tokens)
    target = make_target(loaded, enc, kind, position, token_id_of(loaded, token), second, mlm=mlm)
    return evaluate(loaded, enc, target, steps=steps, randomise=randomise, mlm=mlm, report=_report, cancel=_cancel)


def _fingerprint(a: np.ndarray) -> tuple:
    """A cheap identity of a large read-only array for a cache key: shape, dtype and a digest of
    about 64k evenly spaced values (hashing all of a 512-token result's 75 MB would cost more
    than what the cache saves)."""
    import hashlib

    flat = np.ascontiguousarray(a).reshape(-1)
    sample = flat[:: max(1, flat.size // 65536)]
    return a.shape, str(a.dtype), hashlib.blake2b(sample.tobytes(), digest_size=16).hexdigest()


def _array_key(a: np.ndarray) -> tuple:
    """A figure's input array as a cache key: every value up to 2M of them (a 512-token head is 262k), the
    sampled fingerprint beyond (a whole result, whose every head's picture is already in the key's other
    arguments)."""
    import hashlib

    if a.size > 2_000_000:
        return _fingerprint(a)
    return a.shape, str(a.dtype), hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=16).hexdigest()


def _list_key(items: list):
    """A list argument as a cache key: a list of strings (the tokens, 512 of them on a long text) as one digest
    of its JSON, where Streamlit's hasher would take the strings one by one; any other list as a tuple."""
    import hashlib
    import json

    if all(type(v) is str for v in items):
        return "strings", hashlib.blake2b(json.dumps(items).encode(), digest_size=16).hexdigest()
    return tuple(items)


@st.cache_resource(max_entries=96, show_spinner=False, hash_funcs={np.ndarray: _array_key, list: _list_key})
def _shared_figure(name: str, _build, args: tuple, kwargs: dict):
    from attnviz.plotting import no_si_prefixes

    fig = no_si_prefixes(_build(*args, **kwargs))
    fig._attnviz_shared = True  # show_figure copies it before any change (presentation mode)
    return fig


def figure(build, *args, **kwargs):
    """`build(*args, **kwargs)` (a plotly figure builder) once per distinct input for every session: a class
    opening the same view, or a head change that leaves the token-focus figures as they were, reuses the
    figure instead of building it again (plotly's validation is most of a warm page run). Read-only: the
    figure is shared."""
    return _shared_figure(f"{build.__module__}.{build.__qualname__}", build, args, kwargs)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={np.ndarray: _fingerprint})
def grid_image(attention: np.ndarray, n_layers: int, n_heads: int, thumb: int, gap: int, colorscale: str) -> bytes:
    """The all-heads grid picture of one stack of a result (PNG bytes): the same for every head
    choice, so a rerun after a head change only rebuilds the figure around it."""
    return grid_png(attention, GridLayout(n_layers, n_heads, thumb, gap), colorscale)


@st.cache_resource(max_entries=16, show_spinner=False)
def word_level(_result: AttentionResult, request: Request, quantity: str) -> AttentionResult:
    """The request's result (through the lens `quantity`, which with the request names _result in the key) with
    word pieces merged into words."""
    from attnviz.words.merge import merge_words

    return merge_words(_result)


@st.cache_resource(max_entries=4, show_spinner=False)
def atlas_view(folder: str, done: tuple):
    """The Atlas (DuckDB over the Parquet files) of a store folder with these finished chunks: a new chunk
    opens a new view."""
    from attnviz.atlas.query import Atlas

    return Atlas(folder)


# Long inputs: one recording (q and k of every layer + the blockwise summaries), run in a background
# job (_report, _cancel: its progress callback and cancel Event, left out of the key; a cancelled or failed run
# raises and is not cached). SmolLM2 at 4,096 tokens holds ~0.4 GB: two entries only. Read-only, shared.
@st.cache_resource(max_entries=2, show_spinner=False)
def long_recording(request: Request, tiles: int, _report=None, _cancel=None):
    """(LongAttention, LongSummaries) of the request's text up to its token limit (its pair is not read)."""
    from attnviz.long.record import record_with_summaries

    def progress(done, total):
        if _report is not None:
            _report(done, total, f"layer {done} of {total} recorded and summarised")

    return record_with_summaries(get_model(request.model), request.text, max_tokens=request.max_tokens, tiles=tiles,
                                 progress=progress, cancelled=_cancel.is_set if _cancel is not None else None)


@st.cache_resource(max_entries=2, show_spinner=False)
def dense_recording(request: Request, tiles: int):
    """(DenseAttention, LongSummaries) of the dense result: the Long inputs views for a model whose q and k
    cannot be recorded, up to the dense pages' limit."""
    from attnviz.long.dense import DenseAttention
    from attnviz.long.summaries import summarise

    dense = DenseAttention(get_result(request))
    return dense, summarise(dense, tiles=tiles)


@st.cache_resource(max_entries=16, show_spinner=False)
def long_head_overview(recording_id: str, _la, layer: int, head: int, tiles: int, how: str):
    """(tiles (t, t) float32, edges) of one head of a recording pooled to `tiles` per side (mean or max),
    computed block by block from its recorded q and k (recording_id names _la in the key)."""
    from attnviz.long.pooled import Pooler, row_blocks

    import torch

    pooler = Pooler(1, 1, _la.seq_len, tiles)
    for q0, q1 in row_blocks(pooler.edges, 256):
        w, k0 = _la.block(layer, [head], q0, q1)
        kk = pooler.key_start(k0)
        if kk < k0:
            w = torch.nn.functional.pad(w, (k0 - kk, 0))
        pooler.add(0, w, q0, kk)
    grid = pooler.result()
    return np.asarray(grid.tiles(how)[0, 0]), np.asarray(grid.edges)


@st.cache_resource(max_entries=4, show_spinner=False)
def sink_run(request: Request, cache: int, sinks: int, _report=None, _cancel=None):
    """SinkRun of the attention-sink experiment on the request's text (background job; a cancelled run raises,
    nothing cached)."""
    from attnviz.long.sinks import sink_experiment

    def progress(done, total):
        if _report is not None:
            _report(done, total, f"{done:,} of {total:,} positions (3 cache policies)")

    return sink_experiment(get_model(request.model), request.text, cache=cache, sinks=sinks,
                           max_tokens=request.max_tokens, progress=progress, cancelled=_cancel.is_set if _cancel is not None else None)


@st.cache_resource(max_entries=8, show_spinner=False)
def causal_study(run_id: str, _task, _report=None, _cancel=None):
    """Study of a causal task set (run_id: the model key and the pairs, naming _task in the key); a background job,
    a cancelled run raises and nothing is cached."""
    from attnviz.causal.study import study

    return study(get_model(run_id.rsplit("|", 1)[0]), _task, progress=_report, cancel=_cancel)
