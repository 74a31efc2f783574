"""DenseAttention: a dense AttentionResult behind LongAttention's interface, so the Long inputs views and the
blockwise summaries serve both: a recording of queries and keys (any length) and the dense weights every other
page holds (up to the dense limit, and the only way for a model whose q and k cannot be recorded: an
encoder-decoder, T5's position bias, ...).

The weights are the model's own, so `head`, `rows`, `window` and `top_k` are slices; `scores` hands the blockwise
summaries log(weights) (a softmax of which gives the weights back exactly where they are not 0; a weight of 0 is
a hidden key for them, as it is for the model), so one summaries pass works on either."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput
from attnviz.long.maps import check_request, tensor
from attnviz.types import AttentionResult
from attnviz.units import count_text

@dataclass(frozen=True)
class DenseAttention:
    """LongAttention's reading interface over one AttentionResult's (encoder or decoder) self-attention."""

    result: AttentionResult

    # ------------------------------------------------------------------ what LongAttention holds
    @property
    def weights(self) -> np.ndarray:
        return self.result.attention  # float32 (layer, head, n, n)

    @property
    def n_layers(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.weights.shape[1])

    @property
    def seq_len(self) -> int:
        return int(self.weights.shape[2])

    @property
    def n_kv_heads(self) -> int:
        return self.n_heads  # the weights are per query head: nothing is shared to show

    @property
    def group(self) -> int:
        return 1

    def kv_head(self, head: int) -> int:
        return int(head)

    @property
    def nbytes(self) -> int:
        return int(self.weights.nbytes)

    # the result's own fields, read through: tokens, ids, special tokens, facts, text, truncation, continuation
    tokens = property(lambda self: self.result.tokens)
    token_ids = property(lambda self: self.result.token_ids)
    special_mask = property(lambda self: self.result.special_mask)
    facts = property(lambda self: self.result.facts)
    text = property(lambda self: self.result.text)
    truncation = property(lambda self: self.result.truncation)
    continuation = property(lambda self: self.result.continuation)

    @property
    def causal(self) -> np.ndarray:
        return np.full(self.n_layers, bool(self.result.facts.causal))

    @property
    def sliding_window(self) -> np.ndarray:
        return np.zeros(self.n_layers, dtype=np.int64)  # the weights already hold whatever the model hid

    @property
    def key_mask(self) -> np.ndarray:
        return np.ones(self.seq_len, dtype=bool)

    @property
    def scaling(self) -> np.ndarray:
        return np.full(self.n_layers, np.nan)  # not needed: the weights are given

    # ------------------------------------------------------------------ reading
    def key_range(self, layer: int, q0: int, q1: int) -> tuple[int, int]:
        return 0, (q1 if self.result.facts.causal else self.seq_len)

    def _check(self, layer, head, q0, q1) -> tuple[int, int, int, int]:
        return check_request(self, layer, head, q0, q1)

    def scores(self, layer: int, heads, q0: int, q1: int, k0: int | None = None, out=None,
               fill: float = float("-inf")):
        """(log weights, k0) as LongAttention.scores: a softmax of them is the weights; 0 weights -> `fill`."""
        import torch

        lo, k1 = self.key_range(layer, q0, q1)
        k0 = lo if k0 is None else min(int(k0), lo)
        sel = slice(None) if heads is None else list(heads)
        w = tensor(np.ascontiguousarray(self.weights[layer, sel, q0:q1, k0:k1]))
        H, B, K = w.shape
        res = torch.empty(H * B * K, dtype=torch.float32) if out is None else out
        res = res[: H * B * K].view(H, B, K)
        torch.log(w, out=res)
        res.masked_fill_(w <= 0, fill)
        return res, k0

    def block(self, layer: int, heads, q0: int, q1: int):
        lo, k1 = self.key_range(layer, q0, q1)
        sel = slice(None) if heads is None else list(heads)
        return tensor(np.ascontiguousarray(self.weights[layer, sel, q0:q1, lo:k1])), lo

    def rows(self, layer: int, head: int, q0: int, q1: int) -> np.ndarray:
        layer, head, q0, q1 = self._check(layer, head, q0, q1)
        return np.array(self.weights[layer, head, q0:q1], dtype=np.float32)

    def head(self, layer: int, head: int) -> np.ndarray:
        return self.rows(layer, head, 0, self.seq_len)

    def window(self, layer: int, head: int, q0: int, q1: int, k0: int, k1: int) -> np.ndarray:
        if not 0 <= int(k0) < int(k1) <= self.seq_len:
            raise BadInput(f"Key columns {k0} to {int(k1) - 1} are not inside the input's {count_text(self.seq_len)} positions.")
        layer, head, q0, q1 = self._check(layer, head, q0, q1)
        return np.array(self.weights[layer, head, q0:q1, int(k0):int(k1)], dtype=np.float32)

    def top_k(self, layer: int, head: int, q0: int, q1: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        layer, head, q0, q1 = self._check(layer, head, q0, q1)
        if int(k) < 1:
            raise BadInput("Show at least one key per query.")
        w = self.weights[layer, head, q0:q1]
        m = min(int(k), w.shape[-1])
        idx = np.argsort(-w, axis=-1, kind="stable")[:, :m]
        val = np.take_along_axis(w, idx, axis=-1)
        keys = np.full((q1 - q0, int(k)), -1, dtype=np.int64)
        weights = np.zeros((q1 - q0, int(k)), dtype=np.float32)
        keep = val > 0
        keys[:, :m] = np.where(keep, idx, -1)
        weights[:, :m] = np.where(keep, val, 0.0)
        return keys, weights
