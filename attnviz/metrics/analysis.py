"""One pass over every head: entropy, role scores and the head-fused layers rollout needs."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from attnviz.metrics.entropy import RowEntropy, entropy_summary, result_masks
from attnviz.metrics.roles import ROLE_KEYS, RoleReader, RoleScores, broadness
from attnviz.metrics.rollout import rollout_fused


_WORKERS = max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(_WORKERS, thread_name_prefix="attnviz-analysis")
    return _POOL


@dataclass(frozen=True)
class HeadAnalysis:
    entropy: dict  # as entropy.head_entropy returns: nats / normalised per row, head means
    roles: RoleScores  # role scores of every head
    fused_mean: np.ndarray  # float32 (layer, n, n): mean over heads, the default rollout input
    rollout: np.ndarray  # float32 (layer, n, n): default rollout (mean, residual 0.5, no discard)


def analyse(result) -> HeadAnalysis:
    """Everything the analytics pages need for all heads, reading each head's (n, n) matrix once
    while it is in cache (the 512-token attention of a 6 x 12 model is 75 MB)."""
    att = result.attention
    n_layers, n_heads, n, _ = att.shape
    allowed, valid = result_masks(result)
    mask = None if allowed.all() else allowed
    ent = RowEntropy(mask, shape=(n, n))
    reader = RoleReader(result.tokens, result.special_mask, causal=result.facts.causal)
    plogp = np.empty((n_layers, n_heads, n), dtype=np.float32)
    roles = np.empty((len(ROLE_KEYS), n_layers, n_heads), dtype=np.float32)
    fused = np.zeros((n_layers, n, n), dtype=np.float32)

    def layers_pass(layers):  # numpy releases the GIL in log/einsum: threads share the work
        kernel = RowEntropy(mask, shape=(n, n))
        for layer in layers:
            acc = fused[layer]
            for head in range(n_heads):
                m = att[layer, head]
                plogp[layer, head] = kernel.plogp(m)
                acc += m
            acc /= n_heads
            roles[:, layer] = reader.layer(att[layer])

    n_workers = min(_WORKERS, n_layers)
    list(_pool().map(layers_pass, [range(w, n_layers, n_workers) for w in range(n_workers)]))
    nats, norm = ent.finish(plogp.reshape(-1, n), (n_layers, n_heads))
    roles[ROLE_KEYS.index("broad")] = broadness(nats, allowed.sum(axis=-1))[..., reader.q].mean(axis=-1)
    return HeadAnalysis(entropy=entropy_summary(nats, norm, valid), roles=RoleScores(roles),
                        fused_mean=fused, rollout=rollout_fused(fused, allowed=None if allowed.all() else allowed))
