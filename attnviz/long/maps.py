"""LongAttention: one input's recorded queries and keys, and any head's weights recomputed from them on demand.

The record holds no n x n map: `head`, `rows`, `window` and `top_k` rebuild exactly the weights the model
used (softmax over every key a query may see, with the layer's scaling, causal flag, key padding and
sliding window) for one head at a time, in float32, block of query rows by block."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from attnviz.errors import BadInput
from attnviz.types import LayerHeadShape, ModelFacts, Truncation
from attnviz.units import count_text

def tensor(arr: np.ndarray):
    """A torch view of a (possibly read-only) numpy array; callers never write through it."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "The given NumPy array is not writable"
        return torch.from_numpy(arr)


@contextmanager
def flush_denormals():
    """Within the block, torch treats floats below ~1e-38 as 0 (restored to the default after). Softmax
    rows of real models are full of such weights, and denormal arithmetic is slow: one SmolLM2 head at
    2,048 tokens took 0.26 s with them and 0.09 s without; the summaries pass ran 2.5x faster."""
    import torch

    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def check_request(maps, layer, head, q0, q1) -> tuple[int, int, int, int]:
    """(layer, head, q0, q1) as ints, or BadInput naming what does not exist in `maps` (n_layers, n_heads, seq_len)."""
    layer, head, q0, q1 = (int(x) for x in (layer, head, q0, q1))
    if not 0 <= layer < maps.n_layers:
        raise BadInput(f"Layer {layer} does not exist: this model has layers 0 to {maps.n_layers - 1}.")
    if not 0 <= head < maps.n_heads:
        raise BadInput(f"Head {head} does not exist: this model has heads 0 to {maps.n_heads - 1}.")
    if not 0 <= q0 < q1 <= maps.seq_len:
        raise BadInput(f"Query rows {q0} to {q1 - 1} are not inside the input's {count_text(maps.seq_len)} positions.")
    return layer, head, q0, q1


# Query rows computed together when a request covers many rows: (heads x) 256 x n float32 at a time.
BLOCK_ROWS = 256


@dataclass(frozen=True)
class LongAttention(LayerHeadShape):
    """Queries and keys of every layer for one input (read-only arrays), enough to rebuild any map.

    Keys are stored once per key/value head: query head h reads key head h // (n_heads // n_kv_heads),
    as transformers' repeat_kv does for grouped-query attention."""

    query: np.ndarray  # float32 (layer, head, n, d_head): queries after projection and RoPE
    key: np.ndarray  # float32 (layer, kv_head, n, d_head): keys after RoPE, once per key/value head
    scaling: np.ndarray  # float64 (layer,): factor on q·k (1/sqrt(d_head) usually)
    causal: np.ndarray  # bool (layer,): query i sees keys j <= i only
    sliding_window: np.ndarray  # int64 (layer,): sliding window w (query i sees j > i - w); 0 = the whole input
    key_mask: np.ndarray  # bool (n,): keys the model may attend to at all (its attention mask)
    tokens: tuple  # display labels, one per position
    token_ids: tuple  # token ids fed to the model
    special_mask: np.ndarray  # bool (n,): special tokens
    facts: ModelFacts
    text: str
    truncation: Truncation | None = None
    continuation: np.ndarray | None = None  # bool (n,): word-continuation pieces (for the shaded text)

    _SHAPE_OF: ClassVar[str] = "query"

    def __post_init__(self):
        L, H, n, d = self.query.shape
        if self.key.shape[0] != L or self.key.shape[2:] != (n, d) or H % self.key.shape[1]:
            raise ValueError(f"key {self.key.shape} does not match query {self.query.shape}")
        for name in ("scaling", "causal", "sliding_window"):
            if getattr(self, name).shape != (L,):
                raise ValueError(f"{name} must have one entry per layer")
        if len(self.tokens) != n or self.key_mask.shape != (n,) or len(self.special_mask) != n:
            raise ValueError("tokens, key_mask and special_mask need one entry per position")
        for arr in (self.query, self.key, self.scaling, self.causal, self.sliding_window, self.key_mask, self.special_mask):
            arr.flags.writeable = False  # shared between sessions through caches

    @property
    def d_head(self) -> int:
        return self._dim(3)

    @property
    def n_kv_heads(self) -> int:
        return self.key.shape[1]

    @property
    def group(self) -> int:
        """Query heads per key/value head (1 without grouped-query attention)."""
        return self.n_heads // self.n_kv_heads

    def kv_head(self, head: int) -> int:
        return head // self.group

    @property
    def nbytes(self) -> int:
        return int(self.query.nbytes + self.key.nbytes)

    # ------------------------------------------------------------------ masks
    def key_range(self, layer: int, q0: int, q1: int) -> tuple[int, int]:
        """[k0, k1): the keys any of the queries q0..q1-1 of `layer` may see (a superset)."""
        k1 = q1 if self.causal[layer] else self.seq_len
        w = int(self.sliding_window[layer])
        k0 = max(0, q0 - w + 1) if w and self.causal[layer] else 0
        return k0, k1

    def visible(self, layer: int, q0: int, q1: int, k0: int = 0, k1: int | None = None) -> np.ndarray:
        """bool (q1-q0, k1-k0): may query i see key j in `layer` (causal, window, key padding)."""
        k1 = self.seq_len if k1 is None else k1
        i = np.arange(q0, q1)[:, None]
        j = np.arange(k0, k1)[None, :]
        ok = np.broadcast_to(self.key_mask[k0:k1][None, :], (q1 - q0, k1 - k0)).copy()
        if self.causal[layer]:
            ok &= j <= i
            w = int(self.sliding_window[layer])
            if w:
                ok &= j > i - w
        return ok

    # ------------------------------------------------------------------ weights
    def _check(self, layer, head, q0, q1) -> tuple[int, int, int, int]:
        return check_request(self, layer, head, q0, q1)

    def hidden_regions(self, layer: int, q0: int, q1: int, k0: int, k1: int) -> list[tuple[int, int, np.ndarray]]:
        """[(c0, c1, visible bool (q1-q0, c1-c0))]: the only key columns c0..c1-1 (relative to k0) of rows
        q0..q1-1 where some key is hidden; every other column in [k0, k1) is visible to every row."""
        if not self.key_mask[k0:k1].all():
            return [(0, k1 - k0, self.visible(layer, q0, q1, k0, k1))]
        spans = []
        if self.causal[layer]:
            spans.append((max(q0, k0), k1))  # the diagonal block: j > i for some row
            w = int(self.sliding_window[layer])
            if w and q1 - w > k0:
                spans.append((k0, min(q1 - w, k1)))  # j <= i - w for some row
        spans = [(a, b) for a, b in sorted(spans) if a < b]
        merged: list[list[int]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return [(a - k0, b - k0, self.visible(layer, q0, q1, a, b)) for a, b in merged]

    def scores(self, layer: int, heads, q0: int, q1: int, k0: int | None = None, out=None,
               fill: float = float("-inf")):
        """(scores, k0): float32 torch tensor (len(heads), q1-q0, k1-k0) of q·k × scaling over the keys
        [k0, k1) the rows may see (k0 may be given lower), hidden keys set to `fill`.
        heads: a list of head indices, or None for every head of the layer (grouped by key/value head:
        each key head is multiplied once with all the query heads that share it).
        out: optional contiguous float32 tensor with at least that many elements, written in place."""
        import torch

        lo, k1 = self.key_range(layer, q0, q1)
        k0 = lo if k0 is None else min(int(k0), lo)
        B, K = q1 - q0, k1 - k0
        scale = float(self.scaling[layer])
        if heads is None:
            q = tensor(self.query[layer, :, q0:q1]).reshape(self.n_kv_heads, self.group * B, self.d_head) * scale
            k = tensor(self.key[layer, :, k0:k1])  # (kv, K, d)
            H = self.n_heads
        else:
            q = tensor(self.query[layer, heads, q0:q1]) * scale  # (h, B, d)
            k = tensor(self.key[layer, [self.kv_head(h) for h in heads], k0:k1])  # (h, K, d)
            H = len(heads)
        if out is None:
            out = torch.empty(q.shape[0] * q.shape[1] * K, dtype=torch.float32)
        res = out[: q.shape[0] * q.shape[1] * K].view(q.shape[0], q.shape[1], K)
        torch.matmul(q, k.transpose(1, 2), out=res)
        res = res.view(H, B, K)  # (H, B, K)
        for c0, c1, ok in self.hidden_regions(layer, q0, q1, k0, k1):
            res[:, :, c0:c1].masked_fill_(~tensor(ok), fill)
        return res, k0

    def block(self, layer: int, heads, q0: int, q1: int):
        """(weights, k0): float32 torch tensor (len(heads), q1-q0, k1-k0) of exact softmax weights over the
        key range [k0, k1) that the rows may see (every visible key is inside it); heads as in scores()."""
        import torch

        s, k0 = self.scores(layer, heads, q0, q1)
        with flush_denormals():
            return torch.softmax(s, dim=-1), k0

    def rows(self, layer: int, head: int, q0: int, q1: int) -> np.ndarray:
        """float32 (q1-q0, n): attention rows q0..q1-1 of one head, exact, zeros where a key is hidden."""
        layer, head, q0, q1 = self._check(layer, head, q0, q1)
        out = np.zeros((q1 - q0, self.seq_len), dtype=np.float32)
        for a in range(q0, q1, BLOCK_ROWS):
            b = min(q1, a + BLOCK_ROWS)
            w, k0 = self.block(layer, [head], a, b)
            out[a - q0:b - q0, k0:k0 + w.shape[-1]] = w[0].numpy()
        return out

    def head(self, layer: int, head: int) -> np.ndarray:
        """float32 (n, n): the full map of one head, recomputed on demand."""
        return self.rows(layer, head, 0, self.seq_len)

    def window(self, layer: int, head: int, q0: int, q1: int, k0: int, k1: int) -> np.ndarray:
        """float32 (q1-q0, k1-k0): an exact zoom. Each row's softmax runs over every key the query may
        see (not only those in the window), then the window is cut out, so the numbers are the model's."""
        if not 0 <= int(k0) < int(k1) <= self.seq_len:
            raise BadInput(f"Key columns {k0} to {int(k1) - 1} are not inside the input's {count_text(self.seq_len)} positions.")
        layer, head, q0, q1 = self._check(layer, head, q0, q1)
        out = np.zeros((q1 - q0, int(k1) - int(k0)), dtype=np.float32)
        for a in range(q0, q1, BLOCK_ROWS):
            b = min(q1, a + BLOCK_ROWS)
            w, kk = self.block(layer, [head], a, b)
            lo, hi = max(int(k0), kk), min(int(k1), kk + w.shape[-1])
            if lo < hi:
                out[a - q0:b - q0, lo - int(k0):hi - int(k0)] = w[0, :, lo - kk:hi - kk].numpy()
        return out

    def top_k(self, layer: int, head: int, q0: int, q1: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(keys int64 (q1-q0, k), weights float32 (q1-q0, k)): the k heaviest keys of each query row,
        heaviest first (sparse lines per query); rows that see fewer than k keys pad with key -1, weight 0."""
        import torch

        layer, head, q0, q1 = self._check(layer, head, q0, q1)
        if int(k) < 1:
            raise BadInput("Show at least one key per query.")
        k = int(k)
        keys = np.full((q1 - q0, k), -1, dtype=np.int64)
        weights = np.zeros((q1 - q0, k), dtype=np.float32)
        for a in range(q0, q1, BLOCK_ROWS):
            b = min(q1, a + BLOCK_ROWS)
            w, k0 = self.block(layer, [head], a, b)
            m = min(k, w.shape[-1])
            val, idx = torch.topk(w[0], m, dim=-1)  # (B, m), largest first
            val, idx = val.numpy(), idx.numpy() + k0
            keep = val > 0
            keys[a - q0:b - q0, :m] = np.where(keep, idx, -1)
            weights[a - q0:b - q0, :m] = np.where(keep, val, 0.0)
        return keys, weights
