"""Memory a long input will take (q/k record + summaries + the forward pass), checked against free memory
before running, as runtime.check_fits does before loading a model."""
from __future__ import annotations

import os

from attnviz.errors import BadInput
from attnviz.runtime import available_bytes
from attnviz.types import ModelFacts
from attnviz.units import human_bytes

F32 = 4
BLOCK_ROWS = 256  # query rows per block of the summaries pass (summaries.BLOCK_ROWS)
TILES = 64  # pooled tiles per axis (pooled.DEFAULT_TILES)


def long_memory_parts(facts: ModelFacts, n_tokens: int, d_ff: int | None = None) -> dict[str, int]:
    """Bytes by part for one long input of n_tokens on a model with these facts (beyond its weights):
    record   queries (layer, head, n, d_head) and keys once per KV head, float32;
    summaries per-row entropies (2 x float32), distance sums (float64) per head, pooled tiles, the block
             workspaces (scores and weights of 256 rows x n keys for every head);
    forward  the SDPA pass's live activations: a few (n, d_model) tensors, q/k/v, the MLP's (n, d_ff)
             tensors (d_ff defaults to 4 d_model) and, for a sliding window, its (n, n) bool mask."""
    n, L, H, KV = int(n_tokens), facts.n_layers, facts.n_heads, facts.n_kv_heads
    d_head, d = facts.d_head, facts.d_model
    d_ff = d_ff or 4 * d
    rows = min(BLOCK_ROWS, n)
    record = F32 * n * d_head * L * (H + KV)
    summaries = (L * H * n * (2 * F32 + 8) + 2 * L * n * 8 + 3 * L * H * min(TILES, n) ** 2 * F32
                 + 2 * F32 * H * (rows + 1) * n)
    forward = F32 * n * (8 * d + 3 * (H + 2 * KV) * d_head + 4 * d_ff) + n * n
    return {"record": int(record), "summaries": int(summaries), "forward": int(forward)}


def long_memory_estimate(facts: ModelFacts, n_tokens: int, d_ff: int | None = None) -> int:
    """Bytes a long input of n_tokens needs on top of the loaded model (see long_memory_parts)."""
    return sum(long_memory_parts(facts, n_tokens, d_ff).values())


def max_long_tokens(facts: ModelFacts, available: int | None = None, d_ff: int | None = None) -> int | None:
    """The longest input that fits in `available` bytes (default: free now), capped at the model's
    context; None when free memory is unknown."""
    free = available_bytes() if available is None else available
    if free is None:
        return facts.max_positions
    hi = facts.max_positions or 1 << 20
    if long_memory_estimate(facts, hi, d_ff) <= free:
        return hi
    lo = 1
    while lo < hi:  # the estimate grows with n: bisect for the largest n that fits
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if long_memory_estimate(facts, mid, d_ff) <= free else (lo, mid - 1)
    return lo


def check_long_fits(facts: ModelFacts, n_tokens: int, available: int | None = None, d_ff: int | None = None) -> int:
    """The estimate in bytes; raises BadInput when it would not fit in the memory free now.
    ATTNVIZ_SKIP_MEMORY_CHECK=1 turns the check off (as for model loading)."""
    need = long_memory_estimate(facts, n_tokens, d_ff)
    if os.environ.get("ATTNVIZ_SKIP_MEMORY_CHECK") == "1":
        return need
    free = available_bytes() if available is None else available
    if free is not None and need > free:
        fits = max_long_tokens(facts, free, d_ff)
        raise BadInput(f"{n_tokens:,} tokens on {facts.name} need about {human_bytes(need)} of memory, but only "
                       f"{human_bytes(free)} is free on this machine. Choose at most {fits:,} tokens, or free memory "
                       "and try again.")
    return need
