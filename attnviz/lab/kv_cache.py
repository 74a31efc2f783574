"""A tiny seeded causal decoder in numpy that generates with and without a KV cache, and
cache-size presets (the formula itself, 2 x layers x KV heads x d_head x tokens x batch x bytes,
is attnviz.complexity.costs.kv_cache_bytes, re-exported here)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attnviz.complexity.costs import kv_cache_bytes  # noqa: F401  (the one formula, used by lab 7)
from attnviz.errors import BadInput
from attnviz.lab.multihead import MHAParams, random_params

VOCAB = "abcdefghijklmnopqrstuvwxyz .,!?"  # character vocabulary of the tiny model


@dataclass(frozen=True)
class TinyConfig:
    n_layers: int = 2  # decoder blocks
    d_model: int = 24  # hidden size
    n_heads: int = 6  # query heads per layer
    n_kv_heads: int = 2  # key/value heads per layer (grouped-query attention, like SmolLM2)
    d_ff: int = 48  # hidden units of each MLP
    seed: int = 0  # weights are random but fixed by this seed

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class TinyWeights:
    embed: np.ndarray  # (vocab, d_model) input embeddings
    unembed: np.ndarray  # (vocab, d_model) output projection (untied, so it does not just echo)
    attn: tuple[MHAParams, ...]  # one per layer
    mlp_in: tuple[np.ndarray, ...]  # (d_ff, d_model) per layer
    mlp_out: tuple[np.ndarray, ...]  # (d_model, d_ff) per layer


def tiny_weights(cfg: TinyConfig = TinyConfig()) -> TinyWeights:
    rng = np.random.default_rng(cfg.seed)
    embed = rng.standard_normal((len(VOCAB), cfg.d_model))
    attn = tuple(random_params(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, seed=cfg.seed * 100 + i + 1, bias=False)
                 for i in range(cfg.n_layers))
    mlp_in = tuple(rng.standard_normal((cfg.d_ff, cfg.d_model)) / np.sqrt(cfg.d_model) for _ in range(cfg.n_layers))
    mlp_out = tuple(rng.standard_normal((cfg.d_model, cfg.d_ff)) / np.sqrt(cfg.d_ff) for _ in range(cfg.n_layers))
    unembed = rng.standard_normal((len(VOCAB), cfg.d_model))
    return TinyWeights(embed=embed, unembed=unembed, attn=attn, mlp_in=mlp_in, mlp_out=mlp_out)


def encode(text: str) -> list[int]:
    """Characters -> ids; BadInput naming the first character outside VOCAB."""
    text = text.lower()
    bad = sorted({c for c in text if c not in VOCAB})
    if bad:
        raise BadInput(f"The tiny model only knows lower-case letters, space and . , ! ?; "
                       f"remove {', '.join(repr(c) for c in bad)}.")
    if not text:
        raise BadInput("Type a prompt of at least one character.")
    return [VOCAB.index(c) for c in text]


def _norm(x: np.ndarray) -> np.ndarray:
    """Parameter-free layer norm over the last axis."""
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _positions(start: int, n: int, d: int) -> np.ndarray:
    """(n, d) sinusoidal position vectors for positions start..start+n-1."""
    pos = np.arange(start, start + n)[:, None]
    i = np.arange(d)[None, :]
    angle = pos / 10000 ** ((i - i % 2) / d)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))


def _block_attention(x: np.ndarray, p: MHAParams, cfg: TinyConfig, past_k, past_v):
    """Causal GQA attention for new rows x (n_new, d_model) after cached past_k/v (H_kv, n_past, d_head).

    Returns (output (n_new, d_model), all keys, all values) with the new keys/values appended.
    """
    n_new = x.shape[0]
    H, Hkv, dh = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    q = (x @ p.w_q.T).reshape(n_new, H, dh).transpose(1, 0, 2)  # (H, n_new, dh)
    k_new = (x @ p.w_k.T).reshape(n_new, Hkv, dh).transpose(1, 0, 2)  # (Hkv, n_new, dh)
    v_new = (x @ p.w_v.T).reshape(n_new, Hkv, dh).transpose(1, 0, 2)
    k = np.concatenate([past_k, k_new], axis=1)  # (Hkv, n_past + n_new, dh)
    v = np.concatenate([past_v, v_new], axis=1)
    n_past = past_k.shape[1]
    group = H // Hkv
    scores = q @ np.repeat(k, group, axis=0).transpose(0, 2, 1) / np.sqrt(dh)  # (H, n_new, n_all)
    allowed = np.arange(n_past + n_new)[None, :] <= (n_past + np.arange(n_new))[:, None]  # causal
    scores = np.where(allowed, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    out = (w @ np.repeat(v, group, axis=0)).transpose(1, 0, 2).reshape(n_new, H * dh)  # (n_new, d_model)
    return out @ p.w_o.T, k, v


def forward(ids, weights: TinyWeights, cfg: TinyConfig, cache: list | None = None):
    """Run new token ids (n_new,) after an optional cache [(k, v) per layer].

    Returns (logits (n_new, vocab), new cache). With cache=None the ids are the whole sequence.
    """
    n_past = 0 if cache is None else cache[0][0].shape[1]
    x = weights.embed[np.asarray(ids)] + _positions(n_past, len(ids), cfg.d_model)  # (n_new, d_model)
    new_cache = []
    for layer in range(cfg.n_layers):
        if cache is None:
            empty = np.zeros((cfg.n_kv_heads, 0, cfg.d_head))
            past_k, past_v = empty, empty
        else:
            past_k, past_v = cache[layer]
        a, k, v = _block_attention(_norm(x), weights.attn[layer], cfg, past_k, past_v)
        x = x + a
        x = x + np.maximum(_norm(x) @ weights.mlp_in[layer].T, 0) @ weights.mlp_out[layer].T
        new_cache.append((k, v))
    return _norm(x) @ weights.unembed.T, new_cache


def token_madds(cfg: TinyConfig, context: int) -> int:
    """Multiply-adds to push ONE token through the model when it attends over `context` keys
    (itself included): projections, scores, weighted sum, MLP and the output layer."""
    d, H, Hkv, dh = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    per_layer = d * H * dh + 2 * d * Hkv * dh + H * dh * d  # Q, K, V, O projections
    per_layer += 2 * H * context * dh  # q.k for every key, then weights @ V
    per_layer += 2 * d * cfg.d_ff  # MLP in and out
    return cfg.n_layers * per_layer + d * len(VOCAB)


def step_madds(cfg: TinyConfig, t: int, cached: bool) -> int:
    """Multiply-adds for the generation step that sees t tokens: with a cache only the newest
    token is computed; without one all t tokens are recomputed from scratch."""
    if cached:
        return token_madds(cfg, t)
    return sum(token_madds(cfg, i) for i in range(1, t + 1))


@dataclass(frozen=True)
class Step:
    text_so_far: str  # the sequence fed in at this step (prompt + generated so far)
    next_char: str  # the greedy prediction
    cache_tokens: int  # tokens held in the cache after this step
    madds_cached: int  # multiply-adds of this step with the cache
    madds_uncached: int  # ... and recomputing everything
    max_logit_diff: float  # |logits with cache - logits without| for the predicted position

    @property
    def new_token(self) -> str:
        """The token this step pushes through the model: the newest one of text_so_far."""
        return self.text_so_far[-1]

    @property
    def cache_before(self) -> int:
        """Tokens cached before this step: all of text_so_far but the newest, whose K and V this
        step computes and appends (step 1's newest token is the prompt's last character)."""
        return self.cache_tokens - 1


@dataclass(frozen=True)
class Generation:
    prompt: str
    steps: tuple[Step, ...]
    cache: tuple = field(repr=False)  # final cache: per layer (k, v), each (n_kv_heads, tokens, d_head)
    config: TinyConfig = TinyConfig()

    @property
    def text(self) -> str:
        return self.prompt + "".join(s.next_char for s in self.steps)


MAX_NEW = 40  # longest generation the demo runs
MAX_PROMPT = 80  # longest prompt


def generate(prompt: str, n_new: int = 12, cfg: TinyConfig = TinyConfig()) -> Generation:
    """Greedy generation of n_new characters, once with a KV cache and once recomputing the
    full sequence at each step; records the cache and the cost of both at every step."""
    ids = encode(prompt)
    if len(ids) > MAX_PROMPT:
        raise BadInput(f"Keep the prompt under {MAX_PROMPT} characters.")
    if not 1 <= n_new <= MAX_NEW:
        raise BadInput(f"Generate between 1 and {MAX_NEW} characters.")
    w = tiny_weights(cfg)
    logits, cache = forward(ids, w, cfg)  # prefill: the prompt fills the cache in one pass
    last = logits[-1]
    seq = list(ids)
    steps = []
    for _ in range(n_new):
        t = len(seq)
        full_logits, _ = forward(seq, w, cfg)  # without a cache: recompute everything
        diff = float(np.abs(full_logits[-1] - last).max())
        nxt = int(np.argmax(last))
        steps.append(Step(text_so_far="".join(VOCAB[i] for i in seq), next_char=VOCAB[nxt],
                          cache_tokens=cache[0][0].shape[1], madds_cached=step_madds(cfg, t, True),
                          madds_uncached=step_madds(cfg, t, False), max_logit_diff=diff))
        seq.append(nxt)
        new_logits, cache = forward([nxt], w, cfg, cache)  # with the cache: one new token only
        last = new_logits[-1]
    return Generation(prompt=prompt.lower(), steps=tuple(steps), cache=tuple(cache), config=cfg)


def keys_after_step(gen: Generation, step: int, layer: int = 0) -> np.ndarray:
    """(n_kv_heads, tokens, d_head) keys held by `layer` after generation step `step` (1-based):
    the cache before the step, then the newest token's key as the last column."""
    if not 1 <= step <= len(gen.steps):
        raise BadInput(f"Pick a step from 1 to {len(gen.steps)}.")
    return gen.cache[layer][0][:, :gen.steps[step - 1].cache_tokens, :]


# ----------------------------------------------------------------------------- cache size

@dataclass(frozen=True)
class CacheShape:
    n_layers: int  # decoder layers
    n_kv_heads: int  # heads that store keys/values (fewer than query heads under GQA/MQA)
    d_head: int  # width of one head
    n_heads: int  # query heads (only to show the mistake of caching per query head)


PRESETS = {
    # SmolLM2-135M (the packaged causal model): 30 layers, 9 query heads, 3 KV heads, d_head 64
    "SmolLM2-135M (packaged)": CacheShape(n_layers=30, n_kv_heads=3, d_head=64, n_heads=9),
    # the tiny model of this page
    "tiny demo model": CacheShape(n_layers=TinyConfig().n_layers, n_kv_heads=TinyConfig().n_kv_heads,
                                  d_head=TinyConfig().d_head, n_heads=TinyConfig().n_heads),
}
# dtypes the size calculator offers (bytes per value from attnviz.units.DTYPE_BYTES)
DTYPES = ("float32", "float16", "bfloat16", "int8")
