"""Per-token importance for one chosen output, by several methods: a registry name -> (ctx) -> (n,) scores.

Adding a method is one line: `METHODS["my method"] = my_scores`, where `my_scores(ctx: Context) -> np.ndarray`
returns one number per input token (higher = more important for the target). Raise `Skipped(reason)`
when a method does not apply to this input (the page shows the reason).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from attnviz.attribution.gradients import DEFAULT_STEPS, Attribution, input_x_gradient, integrated_gradients
from attnviz.errors import AttnvizError
from attnviz.extract import Encoded
from attnviz.types import AttentionResult
from attnviz.units import count_text

ROLLOUT_RESIDUAL = 0.5  # the Rollout page's default


class Skipped(AttnvizError):
    """A method that does not apply to this input; str(e) says why."""


@dataclass
class Context:
    """What an importance method may read: the model and input, the target and its score function."""

    loaded: Any  # LoadedModel (tokenizer, facts, lock); its model may differ from `scorer.model`
    encoded: Encoded  # the input as tokenised (for the masked-token target, before masking)
    scorer: Any  # targets.Scorer: the target, the model run, f(inputs_embeds) and the candidates
    ig_steps: int = DEFAULT_STEPS
    report: Callable[[int, int], None] | None = None  # progress inside a slow method (done, total)
    cancel: Any = None  # threading.Event: stop between batches
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def target(self):
        return self.scorer.target

    @property
    def model(self):
        return self.scorer.model

    @property
    def n(self) -> int:
        return self.scorer.n

    @property
    def attention(self) -> np.ndarray:
        """float32 (layer, head, n, n): the attention of `model` on the scored input (with the [MASK]
        in place for the masked-token target), computed once."""
        if "attention" not in self._cache:
            import torch

            from attnviz.models.adapter import run

            s = self.scorer
            with s.lock, torch.inference_mode():
                out, _ = run(s.runner, {"inputs_embeds": s.embeds, **s.kwargs(1)}, part=s.part,
                             output_attentions=True)
            if not out.attentions or any(a is None for a in out.attentions):
                raise Skipped("the model returned no attention weights (it must run with eager attention)")
            self._cache["attention"] = np.stack([a[0].float().numpy() for a in out.attentions])
        return self._cache["attention"]

    @property
    def result(self) -> AttentionResult:
        """The same attention as an AttentionResult (for methods written against the app's record)."""
        if "result" not in self._cache:
            e = self.encoded
            ids = tuple(int(i) for i in self.scorer.ids)  # with the [MASK] for the masked-token target
            self._cache["result"] = AttentionResult(
                attention=self.attention, tokens=e.tokens, token_ids=ids, special_mask=e.special,
                continuation=e.continuation, segment_ids=e.segments, facts=self.loaded.facts, text=e.text)
        return self._cache["result"]

    def read_rows(self, matrix: np.ndarray) -> np.ndarray:
        """(n,) importance from a token-to-token matrix (output, input) -> (n, n): the target's row, or
        for a pooled output (the similarity targets read the mean of every position) the mean of all rows."""
        m = np.asarray(matrix, dtype=np.float64)
        return m.mean(axis=0) if self.target.pooled else m[self.target.position].copy()

    def attribution(self, name: str) -> Attribution:
        """A gradient method's full result (kept, with its delta) once computed."""
        if name not in self._cache:
            if name == "integrated gradients":
                self._cache[name] = integrated_gradients(self.scorer, self.ig_steps, report=self.report,
                                                         cancel=self.cancel)
            else:
                self._cache[name] = input_x_gradient(self.scorer)
        return self._cache[name]


def raw_attention(ctx: Context) -> np.ndarray:
    """The last layer's attention, mean of its heads: the target's row (mean of rows when pooled)."""
    return ctx.read_rows(ctx.attention[-1].mean(axis=0))


def rollout_scores(ctx: Context) -> np.ndarray:
    """Rollout through every layer (mean of heads, residual 0.5): the target's row."""
    from attnviz.metrics.rollout import rollout

    return ctx.read_rows(rollout(ctx.attention, residual=ROLLOUT_RESIDUAL)[-1])


def flow_scores(ctx: Context) -> np.ndarray:
    """Attention flow (max flow through the same mixing matrices as rollout), as shares of the target's
    flow (mean over rows when pooled). Short inputs only."""
    from attnviz.metrics.flow import MAX_FLOW_TOKENS, attention_flow, flow_shares
    from attnviz.metrics.rollout import fuse_heads, mixing_matrices

    if ctx.n > MAX_FLOW_TOKENS:
        raise Skipped(f"attention flow solves a max-flow problem per token pair, so it runs on inputs of at most "
                      f"{count_text(MAX_FLOW_TOKENS)} tokens; this one has {ctx.n}")
    mixes = mixing_matrices(fuse_heads(ctx.attention), residual=ROLLOUT_RESIDUAL)
    rows = list(range(ctx.n)) if ctx.target.pooled else [ctx.target.position]
    return flow_shares(attention_flow(mixes, rows)).mean(axis=0)


def gradient_x_input(ctx: Context) -> np.ndarray:
    """Gradient x input summed over the embedding dimension (signed)."""
    return ctx.attribution("gradient x input").per_token


def integrated_gradients_scores(ctx: Context) -> np.ndarray:
    """Integrated gradients from the scorer's baseline, summed over the embedding dimension (signed)."""
    return ctx.attribution("integrated gradients").per_token


def _contributions(ctx: Context):
    """Value-weighted attention and ALTI of every layer of `ctx.model` on the scored input (attnviz.contrib),
    computed once; Skipped with the reason for a model whose blocks the maths does not cover."""
    if "contributions" not in ctx._cache:
        from attnviz.contrib.decompose import decompose
        from attnviz.contrib.parts import record
        from attnviz.errors import BadInput

        s = ctx.scorer
        try:
            _, layers = record(s.runner, {"inputs_embeds": s.embeds, **s.kwargs(1)}, part=s.part)
        except BadInput as e:
            raise Skipped(str(e)) from e
        ctx._cache["contributions"] = decompose(layers)
    return ctx._cache["contributions"]


def value_rollout_scores(ctx: Context) -> np.ndarray:
    """Norm-based rollout with the residual (value-weighted, Kobayashi et al. 2021): the target's row."""
    from attnviz.contrib.decompose import value_rollout

    return ctx.read_rows(value_rollout(_contributions(ctx))[-1])


def alti_scores(ctx: Context) -> np.ndarray:
    """ALTI contributions rolled out through every layer (Ferrando et al. 2022): the target's row."""
    from attnviz.contrib.decompose import alti_rollout

    return ctx.read_rows(alti_rollout(_contributions(ctx))[-1])


# name -> (ctx) -> (n,) scores, in display order
METHODS: dict[str, Callable[[Context], np.ndarray]] = {
    "raw attention (last layer, mean of heads)": raw_attention,
    "rollout": rollout_scores,
    "attention flow": flow_scores,
    "value-weighted rollout": value_rollout_scores,
    "ALTI": alti_scores,
    "gradient x input": gradient_x_input,
    "integrated gradients": integrated_gradients_scores,
}
# What each method includes of the model (the page's explanation)
GRADIENT_METHODS = frozenset({"gradient x input", "integrated gradients"})


def compute(ctx: Context, names=None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(scores, skipped): (n,) float64 scores of every method in `names` (default: all of METHODS), and
    the reason for each one skipped."""
    scores, skipped = {}, {}
    for name in names or METHODS:
        try:
            values = np.asarray(METHODS[name](ctx), dtype=np.float64).reshape(-1)
        except Skipped as e:
            skipped[name] = str(e)
            continue
        if values.shape != (ctx.n,):
            raise ValueError(f"method {name!r} returned {values.shape} scores for {ctx.n} tokens")
        scores[name] = values
    return scores, skipped
