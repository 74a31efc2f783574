"""One task set studied whole: exact patching, attribution patching and (next-token tasks) direct logit attribution
of every pair, pooled over the pairs, with the clean accuracy and both runs' predictions on the first pair."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.causal.attribution import attribution_patching
from attnviz.causal.dla import direct_attribution
from attnviz.causal.patching import (HeadDetail, cache, last_logits, patch_components, patch_head_detail,
                                     patch_residual, require_task, scored_run)
from attnviz.causal.tasks import COSINE, Metric, TaskSet
from attnviz.progress import CancelFlag, Progress, check, report
from attnviz.types import LoadedModel

STAGES = ("clean and corrupted runs", "head and MLP patching", "attribution patching", "direct logit attribution")


@dataclass(frozen=True)
class Preview:
    """What the model predicts on a task set, from one clean and one corrupted run per pair: shown before the
    analysis, and part of it."""

    task: TaskSet
    clean_diffs: np.ndarray  # (pair,): score (logit difference answer - wrong, or cosine) of each clean prompt
    corrupted_diffs: np.ndarray  # (pair,): and of each corrupted prompt
    top_clean: tuple  # ((token id, probability), ...) the first clean prompt's most likely next tokens (() for
    # a similarity task)
    top_corrupted: tuple  # and the first corrupted prompt's

    @property
    def metric(self) -> Metric:
        """The pooled scale: mean clean and mean corrupted logit differences."""
        return Metric(float(self.clean_diffs.mean()), float(self.corrupted_diffs.mean()))

    @property
    def accuracy(self) -> float:
        """Share of pairs answered right: the clean prompt puts the answer above the wrong answer, or (similarity)
        the clean sentence is closer to the reference than the corrupted one."""
        if self.task.measure == COSINE:
            return float(np.mean(self.clean_diffs > self.corrupted_diffs))
        return float(np.mean(self.clean_diffs > 0))


@dataclass(frozen=True)
class Study(Preview):
    """Everything the causal page draws for one task set; maps on the normalised scale (0 = corrupted, 1 = clean)
    pooled over the pairs (see `pool`), the direct attributions in logit-difference units averaged over them."""

    heads: np.ndarray  # (layer, head): exact patching of each head's output
    heads_estimate: np.ndarray  # (layer, head): attribution patching's estimate of the same
    mlps: np.ndarray  # (layer,): exact patching of each MLP
    mlps_estimate: np.ndarray  # (layer,)
    residual: np.ndarray  # (layer, pos): exact patching of the residual stream, first pair only
    residual_estimate: np.ndarray  # (layer, pos): its estimate, first pair only
    dla_heads: np.ndarray | None  # (layer, head): direct logit attribution of the clean prompts, mean over pairs;
    # None for a similarity task (no logits to attribute)
    dla_mlps: np.ndarray | None  # (layer,)

    @property
    def correlation(self) -> float:
        """Pearson correlation of attribution patching's estimate with exact patching over every head."""
        return pearson(self.heads, self.heads_estimate)


def pool(per_pair, metrics) -> np.ndarray:
    """Normalised per-pair scores (pair, ...) -> one pooled map (...): each pair's scores back to logit
    differences, averaged over the pairs, then scaled by the mean clean and mean corrupted differences. A pair whose
    two runs lie close together thus weighs no more than one with a large effect."""
    per_pair = np.asarray(per_pair, dtype=np.float64)
    clean = np.array([m.clean for m in metrics], dtype=np.float64)
    corrupted = np.array([m.corrupted for m in metrics], dtype=np.float64)
    shape = (-1,) + (1,) * (per_pair.ndim - 1)
    diffs = corrupted.reshape(shape) + per_pair * (clean - corrupted).reshape(shape)
    return Metric(float(clean.mean()), float(corrupted.mean()))(diffs.mean(0))


def pearson(a, b) -> float:
    """Pearson correlation of two arrays of the same size (nan when either is constant)."""
    x, y = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    x, y = x - x.mean(), y - y.mean()
    den = np.sqrt((x @ x) * (y @ y))
    return float(x @ y / den) if den > 0 else float("nan")


def top_tokens(logits, k: int = 5) -> tuple:
    """((token id, probability), ...) of the k most likely tokens of last-position logits (vocab,)."""
    import torch

    probs = torch.softmax(logits.double(), -1)
    values, ids = torch.topk(probs, k)
    return tuple((int(i), float(p)) for i, p in zip(ids, values))


def preview(loaded: LoadedModel, task: TaskSet) -> Preview:
    """Both runs of every pair (last position only where the model allows): the scores and the first pair's top
    tokens."""
    clean, corrupted, tops = [], [], []
    for pair in task.pairs:
        require_task(loaded, pair)
        for ids, diffs in ((pair.clean, clean), (pair.corrupted, corrupted)):
            out, _, value = scored_run(loaded, ids, pair)
            diffs.append(float(value[0]))
            if len(tops) < 2:  # the first pair's clean, then corrupted prompt
                tops.append(() if pair.similarity else top_tokens(last_logits(out)[0]))
    return Preview(task, np.array(clean), np.array(corrupted), tops[0], tops[1])


def study(loaded: LoadedModel, task: TaskSet, progress: Progress | None = None,
          cancel: CancelFlag | None = None) -> Study:
    """Every map of the causal page for `task`: per pair the clean and corrupted runs, exact patching of each
    head and MLP, attribution patching and direct logit attribution, pooled over the pairs; the residual stream
    (layer × position) of the first pair. Reports progress per pair and stage; Cancelled when asked to stop."""
    pairs = task.pairs
    for pair in pairs:
        require_task(loaded, pair)
    attribute = task.measure != COSINE  # an encoder has no logits to attribute directly
    stages = STAGES if attribute else STAGES[:-1]
    total = len(pairs) * len(stages) + 1
    metrics, heads, mlps, est_heads, est_mlps, dla_heads, dla_mlps = ([] for _ in range(7))
    first = None
    for p, pair in enumerate(pairs):
        def step(s: int, what: str) -> None:
            check(cancel, "The causal analysis")
            report(progress, p * len(stages) + s, total, f"pair {p + 1} of {len(pairs)}: {what}")

        step(0, STAGES[0])
        runs = cache(loaded, pair)
        metrics.append(runs.metric)
        step(1, STAGES[1])
        exact = patch_components(loaded, runs)
        heads.append(exact[0])
        mlps.append(exact[1])
        step(2, STAGES[2])
        estimate = attribution_patching(loaded, pair, runs)
        est_heads.append(estimate.heads)
        est_mlps.append(estimate.mlps)
        if attribute:
            step(3, STAGES[3])
            dla = direct_attribution(loaded, pair)
            dla_heads.append(dla.heads)
            dla_mlps.append(dla.mlps)
        if p == 0:
            first = (runs, estimate)
    check(cancel, "The causal analysis")
    report(progress, total - 1, total, "first pair: the residual stream, layer by position")
    runs, estimate = first
    residual = patch_residual(loaded, runs)
    report(progress, total, total, "done")
    return Study(task=task, clean_diffs=np.array([m.clean for m in metrics]),
                 corrupted_diffs=np.array([m.corrupted for m in metrics]),
                 top_clean=() if runs.clean_logits is None else top_tokens(runs.clean_logits),
                 top_corrupted=() if runs.corrupted_logits is None else top_tokens(runs.corrupted_logits),
                 heads=pool(heads, metrics), heads_estimate=pool(est_heads, metrics), mlps=pool(mlps, metrics),
                 mlps_estimate=pool(est_mlps, metrics), residual=residual, residual_estimate=estimate.residual,
                 dla_heads=np.mean(dla_heads, 0) if dla_heads else None,
                 dla_mlps=np.mean(dla_mlps, 0) if dla_mlps else None)


def head_detail(loaded: LoadedModel, task: TaskSet, layer: int, head: int) -> HeadDetail:
    """One head patched in parts (patching.patch_head_detail) on every pair: the whole output, pattern only and
    values only pooled over the pairs as the maps are; by position the first pair's (the pairs' positions need
    not mean the same)."""
    parts = [patch_head_detail(loaded, pair, layer, head) for pair in task.pairs]
    pooled = pool([[d.whole, d.pattern_only, d.values_only] for d in parts], [d.metric for d in parts])
    return HeadDetail(parts[0].by_position, *(float(v) for v in pooled))
