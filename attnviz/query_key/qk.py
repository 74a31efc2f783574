"""Query and key vectors as the model really uses them, and one attention row rebuilt from them.

`query_key` runs the model once through the model adapter, reading hook points blocks.{i}.attn.hook_q
(after projection and RoPE) and hook_k of every layer, and checking them against hook_pattern (the model
family's own eager attention) as they go. `query_row` rebuilds one softmax row from them: products q_d·k_jd, scores
scaling·q·k_j, and the softmax over the keys the row may see."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.attention import softmax
from attnviz.extract import encode
from attnviz.types import LayerHeadShape
from attnviz.attention import allowed_keys
from attnviz.units import count_text

# Largest |softmax(q·k·scaling) - the model's attention| accepted as "the same row".
TOLERANCE = 1e-4
# Query rows per layer compared with the model's own weights while capturing (all rows up to this).
CHECK_ROWS = 64


@dataclass(frozen=True)
class QueryKey(LayerHeadShape):
    """Every layer's queries and keys for one input (read-only float32 arrays)."""

    query: np.ndarray  # (layer, head, seq_len, d_head): queries as the attention uses them
    key: np.ndarray  # (layer, head, seq_len, d_head): keys; grouped kv heads repeated per query head
    scaling: np.ndarray  # float64 (layer,): the factor the scores q·k are multiplied by (1/√d_head usually)
    key_mask: np.ndarray  # bool (seq_len,): keys the model may attend to at all (its attention mask)
    tokens: tuple  # display labels, one per position
    causal: bool  # True: query i sees keys 0..i only
    model_type: str  # config.model_type, e.g. "bert", "llama"
    n_kv_heads: int  # key heads the model computes (< n_heads for grouped-query attention)
    max_error: float  # largest |rebuilt softmax - the model's own weights| over the checked rows (nan: not checked)

    _SHAPE_OF: ClassVar[str] = "query"

    @property
    def d_head(self) -> int:
        return self._dim(3)


@dataclass(frozen=True)
class QueryRow:
    """One query's attention row rebuilt from q and k (float64 arrays)."""

    layer: int
    head: int
    query: int  # position of the query token
    products: np.ndarray  # (seq_len, d_head): q_d · k_jd for every key j and dimension d
    dots: np.ndarray  # (seq_len,): q · k_j (the products summed over d)
    scores: np.ndarray  # (seq_len,): dots × scaling; -inf where the key is not visible
    visible: np.ndarray  # bool (seq_len,): keys this row may see (causal mask, attention mask)
    weights: np.ndarray  # (seq_len,): softmax of the visible scores, 0 elsewhere
    scaling: float  # the factor applied to the dots
    max_error: float | None  # max |weights - the extracted attention row| (None: not compared)


def _unsupported(model_type: str, why: str) -> AttentionUnavailable:
    return AttentionUnavailable(
        f"The query · key view needs a model whose attention scores are plain scaled dot products "
        f"q·k × scaling followed by a softmax. The '{model_type}' model does not qualify: {why}")


class _Recording:
    """Preallocated arrays filled layer by layer while the model runs (batch of one)."""

    def __init__(self, n_layers: int, n_heads: int, seq_len: int, causal: bool, key_mask: np.ndarray):
        self.n_layers, self.n_heads, self.seq_len = n_layers, n_heads, seq_len
        self.causal, self.key_mask = causal, key_mask
        self.query = self.key = None
        self.scaling = np.full(n_layers, np.nan)
        self.seen: set[int] = set()
        self.n_kv_heads = n_heads
        self.max_error = 0.0
        self.problem: str | None = None
        self.allowed = None  # bool tensor (T, T) of visible keys, made on first use

    def add(self, layer: int, query, key, scaling: float, weights) -> None:
        """Layer `layer`'s query (head, T, d) and key (kv_head, T, d) tensors, checked against its weights."""
        n_heads, seq_len, d_head = query.shape
        n_kv = key.shape[0]
        if layer in self.seen or not 0 <= layer < self.n_layers:
            self.problem = (f"its attention layer {layer} ran more than once or is not one of its "
                            f"{self.n_layers} layers.")
            return
        if n_heads != self.n_heads or seq_len != self.seq_len or key.shape[1] != seq_len or n_heads % n_kv:
            self.problem = "its attention layers do not see the whole input as one block of heads."
            return
        if self.query is None:
            self.query = np.empty((self.n_layers, n_heads, seq_len, d_head), dtype=np.float32)
            self.key = np.empty_like(self.query)
        self.seen.add(layer)
        self.n_kv_heads = n_kv
        import torch

        q = query.detach().float()  # (H, T, d)
        k = key.detach().float().repeat_interleave(n_heads // n_kv, dim=0)  # (H_kv, T, d) -> (H, T, d)
        self.query[layer], self.key[layer], self.scaling[layer] = q.numpy(), k.numpy(), scaling
        if weights is None:
            self.max_error = float("nan")
            return
        if self.allowed is None:  # check at most CHECK_ROWS query rows per layer (evenly spread, last included)
            rows = np.linspace(0, seq_len - 1, min(seq_len, CHECK_ROWS)).round().astype(int)
            self.rows = torch.from_numpy(np.unique(rows))
            self.allowed = torch.from_numpy(visible_keys(seq_len, self.causal, self.key_mask))[self.rows]
        scores = torch.matmul(q[:, self.rows], k.transpose(1, 2)) * scaling  # (H, rows, T)
        rebuilt = torch.softmax(scores.masked_fill(~self.allowed, float("-inf")), dim=-1)
        err = float((rebuilt - weights[0, :, self.rows].detach().float()).abs().max())
        self.max_error = max(self.max_error, err)


def visible_keys(seq_len: int, causal: bool, key_mask: np.ndarray | None = None) -> np.ndarray:
    """bool (query, key): keys each query may see (all, or j <= i when causal; masked keys never)."""
    allowed = allowed_keys(seq_len, causal)
    return allowed if key_mask is None else allowed & np.asarray(key_mask, dtype=bool)[None, :]


def query_key(loaded, text: str, text_pair: str | None = None, max_tokens: int | None = None) -> QueryKey:
    """Queries and keys of every layer and head of `loaded` (a LoadedModel) on text, tokenised
    exactly as `extract` does. Encoder-decoders: the encoder's self-attention only.

    Raises BadInput (empty text) or AttentionUnavailable (a model whose attention is not plain
    scaled q·k: relative position biases, soft-capping, or no use of transformers' attention functions)."""
    from attnviz.models.adapter import record
    from attnviz.models.families import family_of

    facts, model = loaded.facts, loaded.model
    model_type = getattr(model.config, "model_type", "unknown")
    try:
        why = family_of(model).why_not("query_key")
    except BadInput as e:
        why = str(e)
    if why:
        raise _unsupported(model_type, why)
    e = encode(loaded, text, text_pair, max_tokens=max_tokens)
    n = len(e.ids)
    key_mask = e.inputs["attention_mask"][0].numpy().astype(bool)
    state = _Recording(facts.n_layers, facts.n_heads, n, facts.causal, key_mask)
    part, inputs = "model", dict(e.inputs)
    if facts.kind == "encoder-decoder":
        part, inputs = "encoder", {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask")}

    def check(weights, point):  # hook_pattern of block i: its q and k were just recorded
        q, k = rec[f"blocks.{point.layer}.attn.hook_q"], rec[f"blocks.{point.layer}.attn.hook_k"]  # (B, T, H, d)
        state.add(point.layer, q[0].transpose(0, 1), k[0].transpose(0, 1), point.call.scaling, weights)

    with record(loaded, hooks=["blocks.*.attn.hook_q", "blocks.*.attn.hook_k"],
                replace={"blocks.*.attn.hook_pattern": check}) as rec:
        rec.forward(**inputs, part=part)
    if state.problem:
        raise _unsupported(model_type, state.problem)
    if len(state.seen) != facts.n_layers:
        raise _unsupported(model_type, f"only {len(state.seen)} of its {facts.n_layers} attention layers go "
                                       "through transformers' attention functions, so their q and k cannot be read.")
    if state.max_error > TOLERANCE:
        raise _unsupported(model_type, f"softmax(q·k × scaling) differs from its attention weights by up to "
                                       f"{state.max_error:.2g} (it adds something to the scores, such as a "
                                       "relative position bias).")
    for arr in (state.query, state.key, state.scaling):
        arr.setflags(write=False)
    return QueryKey(query=state.query, key=state.key, scaling=state.scaling, key_mask=key_mask, tokens=e.tokens,
                    causal=facts.causal, model_type=model_type, n_kv_heads=state.n_kv_heads,
                    max_error=state.max_error)


def _index(value, n: int, what: str, plural: str) -> int:
    try:
        i = int(value)
        ok = i == value
    except (TypeError, ValueError):
        ok = False
    if not ok or not 0 <= i < n:
        raise BadInput(f"{what} {value!r} does not exist: this model has {plural} 0 to {n - 1}.")
    return i


def query_row(qk: QueryKey, layer: int, head: int, query: int, attention_row: np.ndarray | None = None) -> QueryRow:
    """Rebuild attention row `query` of (layer, head) from q and k.

    attention_row: optional (seq_len,) row the app extracted (result.attention[layer, head, query]);
    when given, the rebuilt softmax must match it within TOLERANCE, else AttentionUnavailable.
    Raises BadInput for a layer, head or query position that does not exist."""
    layer = _index(layer, qk.n_layers, "Layer", "layers")
    head = _index(head, qk.n_heads, "Head", "heads")
    query = _index(query, qk.seq_len, "Query position", "positions")
    q = qk.query[layer, head, query].astype(np.float64)  # (d_head,)
    k = qk.key[layer, head].astype(np.float64)  # (seq_len, d_head)
    products = k * q[None, :]  # (seq_len, d_head)
    dots = products.sum(axis=1)
    scaling = float(qk.scaling[layer])
    visible = visible_keys(qk.seq_len, qk.causal, qk.key_mask)[query]
    scores = np.where(visible, dots * scaling, -np.inf)
    weights = softmax(scores)  # the hidden keys are -inf: weight 0
    err = None
    if attention_row is not None:
        row = np.asarray(attention_row, dtype=np.float64)
        if row.shape != weights.shape:
            raise BadInput(f"The attention row has {count_text(row.shape[-1])} keys but the input has {count_text(qk.seq_len)} tokens.")
        err = float(np.abs(weights - row).max())
        if not err <= TOLERANCE:
            raise _unsupported(qk.model_type, f"the softmax rebuilt from q and k differs from the attention "
                                              f"row by {err:.2g}.")
    return QueryRow(layer=layer, head=head, query=query, products=products, dots=dots, scores=scores,
                    visible=visible, weights=weights, scaling=scaling, max_error=err)


def top_keys(row: QueryRow, k: int, by: str = "weight") -> np.ndarray:
    """Positions of at most k visible keys with the largest attention weight ("weight") or
    largest |score| ("score"), returned in text order (int array)."""
    if by not in ("weight", "score"):
        raise BadInput(f"Rank keys by 'weight' or 'score', not {by!r}.")
    idx = np.flatnonzero(row.visible)
    if k < 1:
        raise BadInput("Show at least one key.")
    value = row.weights[idx] if by == "weight" else np.abs(row.scores[idx])
    keep = idx[np.argsort(-value, kind="stable")[:k]]
    return np.sort(keep)
