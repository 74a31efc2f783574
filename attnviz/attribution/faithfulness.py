"""How far each importance method can be trusted on one input: deletion and insertion curves,
comprehensiveness and sufficiency (DeYoung et al. 2020), rank agreement between methods (Spearman), and
the model-randomisation check (Adebayo et al. 2018).

Removing a token = replacing its word embedding with the scorer's baseline (the one integrated gradients
start from: zero embeddings for an encoder, a neutral token's embedding for a causal model, see
targets.neutral_baseline); the position and type embeddings stay, so the sequence keeps its length. Special
tokens are never removed, and for a next-token target neither the first token nor positions after the
target's (they cannot affect it).
Tokens are ranked by their SIGNED score, largest first: the top-k are the tokens a method says push
the output up most.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from attnviz.attribution.gradients import DEFAULT_STEPS, Attribution, Cancelled, batch_size, check_steps
from attnviz.attribution.importance import GRADIENT_METHODS, METHODS, Context, compute
from attnviz.attribution.targets import ZERO_BASELINE, Target, make_scorer
from attnviz.errors import BadInput

# DeYoung et al.'s bins: the top 1, 5, 10, 20 and 50% of the removable tokens (at least one token each).
# Comprehensiveness and sufficiency are the means over these bins; the curves add the end points 0 and 100%.
AOPC_BINS = (0.01, 0.05, 0.10, 0.20, 0.50)
CURVE_FRACTIONS = (0.0,) + AOPC_BINS + (1.0,)
RANDOM_SEED = 0
RANDOM_ORDERS = 16  # random token orders whose comprehensiveness is the verdict's yardstick for noise


def k_tokens(fraction: float, m: int) -> int:
    """How many of m removable tokens a fraction means: 0 for 0, else round(fraction * m), at least 1."""
    if fraction <= 0:
        return 0
    return int(min(m, max(1, round(fraction * m))))


def ranking(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Removable positions, highest signed score first (ties: earlier position first)."""
    pos = np.flatnonzero(candidates)
    return pos[np.argsort(-np.asarray(scores, dtype=np.float64)[pos], kind="stable")]


def check_removable(candidates: np.ndarray) -> int:
    m = int(np.sum(candidates))
    if m < 2:
        raise BadInput(f"The text is too short for deletion curves: they need at least 2 tokens that can be removed "
                       f"(special tokens never are; for a next-token output neither are the first token and the "
                       f"tokens after the position read), and this input has {m}. "
                       "Type a longer sentence.")
    return m


@dataclass(frozen=True)
class Curves:
    """One method's perturbation curves: f after removing (deletion) or keeping only (insertion) the top k."""

    method: str
    fractions: tuple  # CURVE_FRACTIONS
    ks: tuple  # tokens removed / kept at each fraction
    deletion: np.ndarray  # float64 (len(fractions),): f(x without its top k)
    insertion: np.ndarray  # float64 (len(fractions),): f(only the top k of the removable tokens)
    f_input: float  # f(x)
    comprehensiveness: float  # mean over AOPC_BINS of f(x) - f(x without top k): higher = more faithful
    sufficiency: float  # mean over AOPC_BINS of f(x) - f(only top k): lower = more faithful


class Evaluator:
    """f at perturbed inputs, batched, each distinct perturbation computed once."""

    def __init__(self, scorer, cancel=None):
        self.scorer, self.cancel = scorer, cancel
        self.cache: dict[bytes, float] = {}

    def values(self, keeps: list[np.ndarray]) -> np.ndarray:
        """f(x with the positions where keep is False set to the baseline) for each bool (n,) keep."""
        import torch

        todo = [k for k in dict.fromkeys(np.asarray(k, dtype=bool).tobytes() for k in keeps) if k not in self.cache]
        s = self.scorer
        step = batch_size(s, len(todo) or 1) * 2  # no backward pass: about half the memory per input
        for i in range(0, len(todo), step):
            if self.cancel is not None and self.cancel.is_set():
                raise Cancelled()
            chunk = todo[i:i + step]
            keep = torch.tensor(np.stack([np.frombuffer(k, dtype=bool) for k in chunk]))  # (b, n)
            x = torch.where(keep[:, :, None], s.embeds, s.baseline_embeds)  # (b, n, d)
            with s.lock, torch.inference_mode():
                out = s(x).double().numpy()
            self.cache.update(zip(chunk, out))
        return np.array([self.cache[np.asarray(k, dtype=bool).tobytes()] for k in keeps])


def curves(evaluator: Evaluator, name: str, scores: np.ndarray, fractions=CURVE_FRACTIONS) -> Curves:
    cand = evaluator.scorer.candidates
    m = check_removable(cand)
    order = ranking(scores, cand)
    ks = tuple(k_tokens(f, m) for f in fractions)
    n = len(cand)
    deletions, insertions = [], []
    for k in ks:
        keep = np.ones(n, dtype=bool)
        keep[order[:k]] = False  # deletion: the top k removed
        deletions.append(keep)
        only = ~cand.copy()
        only[order[:k]] = True  # insertion: non-removable positions and the top k kept
        insertions.append(only)
    vals = evaluator.values(deletions + insertions + [np.ones(n, dtype=bool)])
    dele, ins, fx = vals[:len(ks)], vals[len(ks):-1], float(vals[-1])
    in_bins = [i for i, f in enumerate(fractions) if f in AOPC_BINS]
    comp = float(np.mean([fx - dele[i] for i in in_bins])) if in_bins else math.nan
    suff = float(np.mean([fx - ins[i] for i in in_bins])) if in_bins else math.nan
    return Curves(name, tuple(fractions), ks, dele, ins, fx, comp, suff)


# ------------------------------------------------------------------ agreement between methods

def spearman(a, b) -> float:
    """Spearman rank correlation; NaN when either side is constant (the correlation is undefined)."""
    from scipy.stats import spearmanr

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.nan
    return float(spearmanr(a, b).statistic)


def spearman_matrix(scores: dict[str, np.ndarray], positions: np.ndarray | None = None
                    ) -> tuple[tuple[str, ...], np.ndarray]:
    """(names, (m, m) matrix) of Spearman correlations between every pair of methods over `positions`
    (bool (n,), default all); NaN where undefined (a constant method)."""
    names = tuple(scores)
    sel = (lambda v: np.asarray(v)[positions]) if positions is not None else np.asarray
    mat = np.full((len(names), len(names)), math.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if j >= i:
                mat[i, j] = mat[j, i] = spearman(sel(scores[a]), sel(scores[b]))
    return names, mat


def corr_text(value: float) -> str:
    """A correlation for people: two decimals, or 'undefined' for NaN."""
    return "undefined" if value is None or not np.isfinite(value) else f"{value:.2f}"


def random_comprehensiveness(evaluator: Evaluator, orders: int = RANDOM_ORDERS, seed: int = RANDOM_SEED) -> np.ndarray:
    """float64 (orders,): the comprehensiveness of `orders` random rankings of the removable tokens (seeded).
    Their spread is how much comprehensiveness moves with WHICH tokens are removed, on this input: the
    noise against which the methods' differences are read (verdict)."""
    cand = evaluator.scorer.candidates
    m = check_removable(cand)
    pos = np.flatnonzero(cand)
    ks = [k_tokens(b, m) for b in AOPC_BINS]
    rng = np.random.default_rng(seed)
    n = len(cand)
    keeps = []
    for _ in range(orders):
        order = rng.permutation(pos)
        for k in ks:
            keep = np.ones(n, dtype=bool)
            keep[order[:k]] = False
            keeps.append(keep)
    vals = evaluator.values(keeps + [np.ones(n, dtype=bool)])
    return (vals[-1] - vals[:-1].reshape(orders, len(ks))).mean(axis=1)


def verdict(curves_by_method: dict[str, Curves], noise: np.ndarray | None = None) -> str:
    """One line: which method tracks the output best and worst on this input, by comprehensiveness, and
    (given the comprehensiveness of random token orders, `noise`) whether the lead is beyond noise: methods
    within one standard deviation of the random orders of the best are named as indistinguishable from it."""
    good = {k: c for k, c in curves_by_method.items() if np.isfinite(c.comprehensiveness)}
    if not good:
        return "No method could be tested on this input."
    order = sorted(good, key=lambda k: -good[k].comprehensiveness)
    best, worst = order[0], order[-1]
    top = good[best].comprehensiveness
    line = f"For this input, {best} tracks the output best (comprehensiveness {top:.3g})"
    if noise is not None and len(noise) > 1:
        sd, mean = float(np.std(noise, ddof=1)), float(np.mean(noise))
        spread = f"the spread of random token orders (standard deviation {sd:.2g} over {len(noise)} orders)"
        tied = [k for k in order[1:] if top - good[k].comprehensiveness <= sd]
        if tied:
            names = ", ".join(tied[:-1]) + (" and " if len(tied) > 1 else "") + tied[-1]
            line += (f", but {names} {'is' if len(tied) == 1 else 'are'} within {spread} of it: "
                     f"on this input {'it' if len(tied) == 1 else 'they'} cannot be told apart from {best}")
        elif len(order) > 1:
            second = order[1]
            margin = top - good[second].comprehensiveness
            line += f", {margin:.2g} ahead of {second}: {margin / sd:.1f} times {spread}" if sd > 0 else \
                f", {margin:.2g} ahead of {second}"
        if top - mean <= sd:
            line += f"; no method beats random token orders ({mean:.3g} on average) by more than their spread"
    if worst != best:
        line += f"; {worst} worst ({good[worst].comprehensiveness:.3g})"
    return line + "."


# ------------------------------------------------------------------ model randomisation (Adebayo et al. 2018)

def transformer_blocks(model):
    """The ModuleList of the model's transformer blocks (length = number of layers, most parameters)."""
    import torch

    n_layers = getattr(model.config, "num_hidden_layers", None)
    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) > 0
             and (n_layers is None or len(m) == n_layers)]
    if not lists:
        raise BadInput("The randomisation check cannot find this model's transformer blocks.")
    return max(lists, key=lambda m: sum(p.numel() for p in m.parameters()))


def randomised_copy(model, seed: int = RANDOM_SEED):
    """A deep copy of `model` with every transformer block re-initialised by the model's own
    _init_weights (seeded; embeddings, final norm and output head kept). The original is untouched."""
    import torch

    clone = copy.deepcopy(model)
    blocks = transformer_blocks(clone)
    for p in blocks.parameters():
        if getattr(p, "_is_hf_initialized", False):  # transformers' init functions skip flagged tensors
            p._is_hf_initialized = False
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        blocks.apply(clone._init_weights)
    return clone.eval()


# ------------------------------------------------------------------ everything for one input

@dataclass(frozen=True)
class TrustReport:
    """Every method's scores on one input and how far each can be trusted. Shared through a cache:
    its arrays are read-only."""

    target: Target
    tokens: tuple  # display labels (n,)
    candidates: np.ndarray  # bool (n,): the removable positions
    f_input: float  # f(x)
    scores: dict  # method -> float64 (n,)
    skipped: dict  # method -> reason it did not run
    curves: dict  # method -> Curves
    spearman: tuple  # (names, (m, m) matrix over the removable positions, NaN = undefined)
    ig: Attribution | None  # integrated gradients in full (delta, f(baseline))
    ig_steps: int
    randomised: dict | None  # method -> Spearman(original, randomised-model scores); None if not run
    random_scores: dict | None  # method -> (n,) scores on the randomised model
    verdict: str
    seconds: float
    noise: np.ndarray | None = None  # float64 (RANDOM_ORDERS,): comprehensiveness of random token orders
    baseline: str = ZERO_BASELINE  # where integrated gradients start and what a removed token becomes, in words

    def __post_init__(self):
        for arrays in (self.scores, self.random_scores or {}, {"noise": self.noise} if self.noise is not None else {}):
            for v in arrays.values():
                v.flags.writeable = False
        self.candidates.flags.writeable = False


class _Progress:
    """report(step, total, message) over stages weighted by forward-pass equivalents."""

    def __init__(self, report, weights: dict[str, float]):
        self.report, self.weights = report, weights
        self.total = sum(weights.values())
        self.done = 0.0

    def inside(self, stage: str, label: str):
        def sub(i, n):
            self.say(self.done + self.weights[stage] * i / max(n, 1), f"{label}: {i} of {n} batches")
        return sub

    def finish(self, stage: str, message: str):
        self.done += self.weights.get(stage, 0)
        self.say(self.done, message)

    def say(self, value: float, message: str):
        if self.report is not None:
            self.report(int(round(1000 * value / self.total)), 1000, message)


def evaluate(loaded, encoded, target: Target, *, steps: int = DEFAULT_STEPS, methods=None, randomise: bool = True,
             mlm=None, seed: int = RANDOM_SEED, report: Callable | None = None, cancel=None) -> TrustReport:
    """Scores of every method (default: all of METHODS) for `target` on `encoded`, their perturbation
    curves, Spearman agreement and, with `randomise`, the model-randomisation check.

    mlm: the masked-LM model for the masked-token target. report(step, total, message) reports
    progress; a set `cancel` Event stops between batches (Cancelled)."""
    t0 = time.perf_counter()
    steps = check_steps(steps)
    names = list(methods or METHODS)
    scorer = make_scorer(loaded, encoded, target, model=mlm)
    check_removable(scorer.candidates)
    ig_weight = 3.0 * steps
    weights = {f"m:{k}": (ig_weight if k == "integrated gradients" else 3.0 if k in GRADIENT_METHODS else 1.0)
               for k in names}
    weights.update({f"f:{k}": 4.0 for k in names})
    weights["noise"] = 4.0 * RANDOM_ORDERS * len(AOPC_BINS) / (2 * len(CURVE_FRACTIONS))  # perturbations, as curves
    if randomise:
        weights.update({"copy": 2.0, **{f"r:{k}": weights[f"m:{k}"] for k in names}})
    prog = _Progress(report, weights)

    def run_methods(ctx, prefix, label):
        scores, skipped = {}, {}
        for k in names:
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            ctx.report = prog.inside(f"{prefix}{k}", f"{label}{k}")
            s, sk = compute(ctx, [k])
            scores.update(s)
            skipped.update(sk)
            prog.finish(f"{prefix}{k}", f"{label}{k} done")
        return scores, skipped

    ctx = Context(loaded, encoded, scorer, ig_steps=steps, cancel=cancel)
    scores, skipped = run_methods(ctx, "m:", "")
    evaluator = Evaluator(scorer, cancel)
    curves_by = {}
    for k in scores:
        curves_by[k] = curves(evaluator, k, scores[k])
        prog.finish(f"f:{k}", f"deletion and insertion curves of {k}")
    noise = random_comprehensiveness(evaluator, seed=seed)
    prog.finish("noise", f"{RANDOM_ORDERS} random token orders (the yardstick for noise)")
    spear = spearman_matrix(scores, scorer.candidates)
    ig = ctx._cache.get("integrated gradients")

    randomised = random_scores = None
    if randomise:
        with scorer.lock:
            clone = randomised_copy(scorer.model, seed)
        prog.finish("copy", "randomised copy of the model made")
        rscorer = make_scorer(loaded, encoded, target, model=clone, lock=scorer.lock)
        rctx = Context(loaded, encoded, rscorer, ig_steps=steps, cancel=cancel)
        random_scores, _ = run_methods(rctx, "r:", "randomised model: ")
        randomised = {k: spearman(scores[k][scorer.candidates], random_scores[k][scorer.candidates])
                      for k in scores if k in random_scores}
        del clone, rscorer, rctx
    return TrustReport(target=target, tokens=tuple(encoded.tokens), candidates=scorer.candidates.copy(),
                       f_input=scorer.value(), scores=scores, skipped=skipped, curves=curves_by, spearman=spear,
                       ig=ig, ig_steps=steps, randomised=randomised, random_scores=random_scores,
                       verdict=verdict(curves_by, noise), seconds=time.perf_counter() - t0, noise=noise,
                       baseline=scorer.baseline_label)
