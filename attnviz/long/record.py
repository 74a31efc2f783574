"""One forward pass with an efficient attention kernel (SDPA) that records every layer's queries and keys.

The model adapter's hook points blocks.{i}.attn.hook_q and hook_k (after projection and RoPE, keys once per
key/value head) are copied as they pass into (layer, head, n, d_head) and (layer, kv_head, n, d_head) arrays
(float32: stored as float16, MiniLM's rebuilt weights at 512 tokens were off by up to 2.7e-3, against 4e-6),
and the attention itself runs on SDPA, so no layer ever materialises its weights. Each layer's scaling, causal
flag and sliding window are read from the call and the config; the mask the model builds is checked
against them on a sample of rows, so a model whose mask is something else is refused, not misdrawn."""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from attnviz.errors import AttentionUnavailable
from attnviz.extract import encode
from attnviz.long.maps import LongAttention
from attnviz.long.memory import check_long_fits

# Query rows per layer whose mask from the model is compared with the one rebuilt from the config.
CHECK_ROWS = 64
# Keyword arguments that add something to q·k × scaling: the recorded q and k would not explain the weights.
_SCORE_EXTRAS = ("softcap", "s_aux", "sinks", "position_bias", "alibi")
# Query rows per block of the fused pass (every head of a layer x these rows x the keys they see: 19 MB at 4,096
# tokens on SmolLM2). Larger blocks make its two matrix products faster; measured here, the whole recording took
# 17.0 / 14.7 / 15.6 s at 4,096 tokens with 64 / 128 / 256 rows, and 58.0 / 50.8 / 49.9 / 51.7 s at 8,192 with
# 32 / 128 / 256 / 512 rows. A tile row taller than this is cut into parts (pooled.row_blocks).
FUSED_ROWS = 128


CAPPED = " Inputs are capped at the dense 512-token limit for it."  # the last sentence of every refusal


def unsupported(model_type: str, why: str) -> AttentionUnavailable:
    return AttentionUnavailable(
        f"Long inputs need a model whose attention is a plain softmax of q·k × scaling that attnviz can "
        f"record; the '{model_type}' model does not qualify: {why}{CAPPED}")


class _Recording:
    """Preallocated (torch-owned) arrays filled layer by layer while the model runs (batch of one)."""

    def __init__(self, config, n_layers: int, n_heads: int, n: int, key_mask: np.ndarray, causal: bool):
        self.config, self.n_layers, self.n_heads, self.n = config, n_layers, n_heads, n
        self.key_mask, self.model_causal = key_mask, causal
        self.query = self.key = None
        self.scaling = np.full(n_layers, np.nan)
        self.causal = np.zeros(n_layers, dtype=bool)
        self.window = np.zeros(n_layers, dtype=np.int64)
        self.seen: set[int] = set()
        self.calls = 0
        self.problem: str | None = None
        self.rows = np.unique(np.linspace(0, n - 1, min(n, CHECK_ROWS)).round().astype(int))
        self.fused: _Fused | None = None

    def window_of(self, module, layer: int, kwargs) -> int:
        """The layer's sliding window from the call, the module, or the config (layer_types)."""
        w = kwargs.get("sliding_window", getattr(module, "sliding_window", None))
        if w is None:
            types = getattr(self.config, "layer_types", None)
            if types and layer < len(types) and types[layer] == "sliding_attention":
                w = getattr(self.config, "sliding_window", None)
        return int(w) if w else 0

    def add_query(self, query, point) -> None:
        """Hook point blocks.{i}.attn.hook_q (1, n, head, d): check the call, copy the queries, note its facts."""
        import torch

        if self.problem:
            return None
        call, layer = point.call, point.layer
        self.calls += 1
        batch, n, n_heads, d = query.shape
        if layer in self.seen or not 0 <= layer < self.n_layers:
            self.problem = f"its attention layer {layer} ran twice or is not one of its {self.n_layers} layers."
            return None
        if batch != 1 or n_heads != self.n_heads or n != self.n:
            self.problem = "its attention layers do not see the whole input as one block of heads."
            return None
        extras = [k for k in _SCORE_EXTRAS if call.kwargs.get(k) is not None]
        if extras:
            self.problem = f"its scores get more than q·k × scaling ({', '.join(extras)})."
            return None
        if self.query is None:  # torch's allocator: large blocks are written faster than np.empty's
            self.query = torch.empty((self.n_layers, n_heads, n, d), dtype=torch.float32).numpy()
        elif self.query.shape[3] != d:
            self.problem = "its layers differ in head width."
            return None
        self.seen.add(layer)
        causal = call.kwargs.get("is_causal")
        causal = bool(getattr(call.module, "is_causal", self.model_causal) if causal is None else causal)
        self.causal[layer], self.scaling[layer] = causal, call.scaling
        self.window[layer] = self.window_of(call.module, layer, call.kwargs)
        torch.from_numpy(self.query[layer]).copy_(query[0].transpose(0, 1))  # (head, n, d), torch's threaded copy
        return None

    def add_key(self, key, point) -> None:
        """Hook point blocks.{i}.attn.hook_k (1, n, kv_head, d): copy the keys and check the layer's mask."""
        import torch

        layer = point.layer
        if self.problem or layer not in self.seen:
            return None
        _, n, n_kv, d = key.shape
        if n != self.n or self.n_heads % n_kv:
            self.problem = "its attention layers do not see the whole input as one block of heads."
            return None
        if self.key is None:
            self.key = torch.empty((self.n_layers, n_kv, n, d), dtype=torch.float32).numpy()
        elif self.key.shape[1] != n_kv or self.key.shape[3] != d:
            self.problem = "its layers differ in head count or head width."
            return None
        torch.from_numpy(self.key[layer]).copy_(key[0].transpose(0, 1))  # (kv_head, n, d)
        self.check_mask(layer, point.call.mask)
        return None

    def expected(self, layer: int):
        """bool (rows, n): the mask rebuilt from the causal flag, the window and the key padding."""
        i, j = self.rows[:, None], np.arange(self.n)[None, :]
        ok = np.broadcast_to(self.key_mask[None, :], (len(self.rows), self.n))
        if self.causal[layer]:
            ok = ok & (j <= i)
            if self.window[layer]:
                ok = ok & (j > i - self.window[layer])
        return ok

    def check_mask(self, layer: int, attention_mask) -> None:
        import torch

        want = self.expected(layer)
        if attention_mask is None:  # SDPA's own causal flag, or no mask at all
            got = np.arange(self.n)[None, :] <= self.rows[:, None] if self.causal[layer] else \
                np.ones((len(self.rows), self.n), dtype=bool)
        else:
            m = attention_mask[0, 0] if attention_mask.dim() == 4 else attention_mask
            m = m[torch.from_numpy(self.rows)]
            got = (m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2).numpy()
            if got.shape != want.shape:
                self.problem = "its attention mask does not cover the whole input."
                return
        if not np.array_equal(got, want):
            self.problem = ("its attention mask is not the causal / sliding-window / padding mask its config "
                            "describes (chunked or otherwise local attention).")


def long_inputs(loaded, inputs: dict) -> dict:
    """The keyword inputs of the recording pass, which runs the base model (part="base": without its LM head,
    at 4,096 tokens SmolLM2's logits alone would be 0.8 GB), without a KV cache."""
    kw = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    if loaded.facts.kind == "decoder":
        kw["use_cache"] = False
    return kw


@dataclass(frozen=True)
class _Open(LongAttention):
    """The record while the pass fills it: layer by layer, arrays still written (not checked, not frozen)."""

    def __post_init__(self):
        pass


class _Fused:
    """The summaries pass run inside the forward: each layer's weights are computed once, block by block, for
    its summaries and for its output (weights x values) in place of the SDPA kernel, so the separate pass
    that would compute q·k and the softmax a second time is not needed."""

    def __init__(self, state: _Recording, e, facts, tiles: int, rows: int, progress, cancelled):
        self.state, self.e, self.facts, self.tiles, self.rows = state, e, facts, tiles, rows
        self.progress, self.cancelled = progress, cancelled
        self.summaries = None  # summaries._Pass, opened at the first layer (the q/k arrays exist then)
        self.done = 0

    def kernel(self, call, query, key, value):
        """The adapter's attention kernel for this pass: the summaries' blocks compute the output of every
        recorded layer (None: the layer did not qualify, SDPA runs it)."""
        if self.state.problem or call.layer not in self.state.seen:
            return None
        return self.attend(call.layer, value), None

    def attend(self, layer: int, value):
        import torch

        from attnviz.long.summaries import _Pass

        st, e = self.state, self.e
        if self.summaries is None:
            long = _Open(query=st.query, key=st.key, scaling=st.scaling, causal=st.causal, sliding_window=st.window,
                         key_mask=st.key_mask, tokens=e.tokens, token_ids=(), special_mask=e.special,
                         facts=self.facts, text="")
            self.summaries = _Pass(long, self.tiles, self.rows, causal=self.facts.causal)
        _, n_kv, n, d = value.shape
        out = torch.empty((1, n, st.n_heads, d), dtype=value.dtype)
        self.summaries.layer(layer, self.cancelled, value=value[0], out=out[0])
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, st.n_layers)
        return out


def _run(loaded, text: str, max_tokens: int | None, check_memory: bool, fused: dict | None):
    """The recording pass; (LongAttention, the fused pass's summaries or None)."""
    from attnviz.long.maps import flush_denormals
    from attnviz.models.adapter import run
    from attnviz.models.families import why_not

    facts, model = loaded.facts, loaded.model
    model_type = getattr(model.config, "model_type", "unknown")
    if facts.kind == "encoder-decoder":
        raise unsupported(model_type, "it is an encoder-decoder.")
    why = why_not(model, "long")
    if why:
        raise unsupported(model_type, why)
    limit = max_tokens or facts.max_positions or None
    e = encode(loaded, text, max_tokens=limit)
    n = len(e.ids)
    if check_memory:
        check_long_fits(facts, n, d_ff=getattr(model.config, "intermediate_size", None))
    key_mask = e.inputs["attention_mask"][0].numpy().astype(bool)
    state = _Recording(model.config, facts.n_layers, facts.n_heads, n, key_mask, facts.causal)
    if fused is not None:
        state.fused = _Fused(state, e, facts, **fused)
    readers = {"blocks.*.attn.hook_q": state.add_query, "blocks.*.attn.hook_k": state.add_key}
    kernel = state.fused.kernel if fused is not None else "sdpa"
    with flush_denormals() if fused is not None else nullcontext():
        run(loaded, long_inputs(loaded, e.inputs), replace=readers, kernel=kernel, part="base")
    if state.problem:
        raise unsupported(model_type, state.problem)
    if len(state.seen) != facts.n_layers:
        raise unsupported(model_type, f"only {len(state.seen)} of its {facts.n_layers} attention layers go through "
                                      "transformers' attention functions, so their q and k cannot be read.")
    la = LongAttention(query=state.query, key=state.key, scaling=state.scaling, causal=state.causal,
                       sliding_window=state.window, key_mask=key_mask, tokens=e.tokens,
                       token_ids=tuple(int(i) for i in e.ids), special_mask=e.special, facts=facts,
                       text=e.text, truncation=e.truncation, continuation=e.continuation)
    if fused is None:
        return la, None
    summaries = state.fused.summaries
    if summaries is None or bool(la.causal.all()) != bool(facts.causal):  # role rows read the wrong way: redo
        return la, None
    summaries.long = la
    return la, summaries.result()


def record_with_summaries(loaded, text: str, *, max_tokens: int | None = None, tiles: int | None = None,
                          rows: int = FUSED_ROWS, progress=None, cancelled=None, check_memory: bool = True):
    """(LongAttention, LongSummaries) from one forward pass: each layer's weights are computed block by block
    once, for its summaries and its output (instead of SDPA plus a second pass over the record).
    progress(done, total) after each layer; cancelled() returning True stops the pass (attnviz.progress.Cancelled, nothing kept).
    Raises as record() does."""
    from attnviz.long.pooled import DEFAULT_TILES
    from attnviz.long.summaries import summarise

    la, s = _run(loaded, text, max_tokens, check_memory,
                 dict(tiles=tiles or DEFAULT_TILES, rows=rows, progress=progress, cancelled=cancelled))
    if s is None:  # a model whose layers are not all causal or all bidirectional like the model: the plain pass
        s = summarise(la, tiles=tiles or DEFAULT_TILES, cancelled=cancelled)
    return la, s


def record(loaded, text: str, *, max_tokens: int | None = None, check_memory: bool = True) -> LongAttention:
    """Run `loaded` (a LoadedModel) once over text with SDPA attention and return every layer's queries
    and keys as a LongAttention. max_tokens: default the model's context. check_memory: first check that
    the record, its summaries and the pass fit in the memory free now (memory.check_long_fits).

    Raises BadInput (empty text, a length that does not fit in free memory) or AttentionUnavailable (encoder-decoders, models whose attention is not
    plain q·k × scaling with a causal / sliding-window / padding mask, or that bypass transformers'
    attention functions)."""
    return _run(loaded, text, max_tokens, check_memory, None)[0]
