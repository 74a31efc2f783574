"""Pruning curves: the task's normalised metric as more and more heads are removed (their output replaced by its
mean, or zeroed), in three orders: least important by patching first, random, and broadest attention first."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.causal.patching import inputs_of, last_only, require_task, scored_run
from attnviz.causal.tasks import Metric, score
from attnviz.metrics.entropy import row_entropy
from attnviz.models.adapter import run
from attnviz.progress import CancelFlag, Progress, check, report
from attnviz.types import LoadedModel

MODES = ("mean", "zero")  # what a removed head's output becomes: its mean over the clean prompts, or zero


@dataclass(frozen=True)
class Curves:
    """Pruning curves of one task set: metric[order][k] with counts[k] heads removed in that order."""

    counts: np.ndarray  # (point,) number of heads removed, 0 first
    metric: dict  # order name -> (point,) normalised metric (1 = the clean runs, 0 = the corrupted runs)
    orders: dict  # order name -> (layer * head,) flat head indices (layer * n_heads + head), first removed first
    mode: str  # "mean" or "zero"


def head_entropy(patterns) -> np.ndarray:
    """Per-layer attention patterns [(head, query, key)] of a causal prompt -> (layer, head) mean normalised row
    entropy (0 = every row on one key, 1 = uniform over the keys it may see)."""
    n = patterns[0].shape[-1]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    return np.stack([row_entropy(np.asarray(p), allowed)[1][:, 1:].mean(-1) for p in patterns])


def orders(importance: np.ndarray, entropy: np.ndarray, seed: int = 0) -> dict:
    """The three removal orders over flat head indices: the smallest |patching effect| first, a seeded random
    order, and the highest attention entropy first. importance, entropy: (layer, head)."""
    flat = np.abs(np.ravel(importance))
    return {"patching (least important first)": np.argsort(flat, kind="stable"),
            "random": np.random.default_rng(seed).permutation(flat.size),
            "entropy (broadest first)": np.argsort(-np.ravel(entropy), kind="stable")}


def counts_for(n_heads_total: int, n_points: int) -> np.ndarray:
    """About n_points + 1 evenly spread head counts from 0 to all heads."""
    return np.unique(np.round(np.linspace(0, n_heads_total, n_points + 1)).astype(int))


def removed_masks(order: np.ndarray, counts: np.ndarray, n_layers: int, n_heads: int) -> np.ndarray:
    """(point, layer, head) True where the head is among the first counts[point] of `order`."""
    rank = np.empty(order.size, dtype=int)
    rank[order] = np.arange(order.size)
    return (rank[None, :] < np.asarray(counts)[:, None]).reshape(len(counts), n_layers, n_heads)


def pruning_curves(loaded: LoadedModel, pairs, importance: np.ndarray, mode: str = "mean", n_points: int = 16,
                   seed: int = 0, progress: Progress | None = None, cancel: CancelFlag | None = None) -> Curves:
    """Run every pair's clean prompt with heads removed cumulatively in each order; one forward per pair and order
    whose batch rows are the points of the curve. The metric is scaled by the mean clean and mean corrupted logit
    differences over the pairs. importance: (layer, head) patching effects."""
    import torch

    for pair in pairs:
        require_task(loaded, pair)
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    z_points, pattern_points = "blocks.*.attn.hook_z", "blocks.*.attn.hook_pattern"
    clean_diffs, corrupted_diffs, sums, entropies, positions = [], [], 0, [], 0
    for pair in pairs:
        check(cancel, "The pruning curves")
        _, rec, value = scored_run(loaded, pair.clean, pair, hooks=[z_points, pattern_points])
        clean_diffs.append(float(value[0]))
        corrupted_diffs.append(float(scored_run(loaded, pair.corrupted, pair)[2][0]))
        z = torch.stack([rec[f"blocks.{i}.attn.hook_z"][0] for i in range(n_layers)])  # (layer, n, head, d_head)
        sums = sums + z.double().sum(1)  # (layer, head, d_head)
        positions += pair.n
        entropies.append(head_entropy([rec[f"blocks.{i}.attn.hook_pattern"][0].numpy() for i in range(n_layers)]))
    means = (sums / positions).float() if mode == "mean" else torch.zeros_like(sums).float()
    metric = Metric(float(np.mean(clean_diffs)), float(np.mean(corrupted_diffs)))
    counts = counts_for(n_layers * n_heads, n_points)
    chosen = orders(importance, np.mean(entropies, 0), seed)
    curves, done = {}, 0
    for name, order in chosen.items():
        mask = torch.from_numpy(removed_masks(order, counts, n_layers, n_heads))  # (point, layer, head)
        diffs = np.zeros(len(counts))
        for pair in pairs:
            check(cancel, "The pruning curves")

            def put(z, point, mask=mask):  # z: (point, n, head, d_head)
                gone = mask[:, point.layer][:, None, :, None]  # (point, 1, head, 1)
                return torch.where(gone, means[point.layer][None, None], z)

            out, _ = run(loaded, inputs_of(pair.clean, len(counts)), replace={z_points: put}, **last_only(loaded))
            diffs += score(out, pair).double().numpy() / len(pairs)
            done += 1
            report(progress, done, len(chosen) * len(pairs), f"removing heads in {name} order")
        curves[name] = np.asarray(metric(diffs))
    return Curves(counts, curves, chosen, mode)
