"""Attention sinks, live (Xiao et al. 2023, StreamingLLM): next-token loss with a window-only KV cache
against the same window with the first tokens kept.

How it runs: the text goes through the causal model in chunks of query tokens over a KV cache of every
earlier token, in one recording context of the model adapter whose attention kernel hides the keys the
policy has evicted:
  "full"          every earlier token (the ordinary model);
  "window"        the last `cache` tokens only (a rolling cache of size `cache`);
  "sinks+window"  the first `sinks` tokens plus the last `cache - sinks` (the same cache size).
Hiding evicted keys with a mask over a full cache gives exactly what a rolling cache computes: every
token's keys and values were themselves computed under the policy (earlier chunks ran with it too).
Chunks, not one token at a time: 128 positions per forward instead of one, and cancellable between them.
Positions: every token keeps its position in the text (RoPE sees the true distance). For the recent
window this is what a rolling cache sees too (RoPE depends only on i - j); StreamingLLM re-numbers
positions inside the cache, so its kept first tokens sit at distance ~cache from the query, here at the
true distance i. Texts are capped at the model's context, so no position is one it was not trained on."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.extract import encode
from attnviz.progress import check

POLICIES = ("full", "window", "sinks+window")


@dataclass(frozen=True)
class SinkRun:
    """Per-position next-token loss of one text under each cache policy."""

    positions: np.ndarray  # int64 (m,): position i of the query; it predicts token i + 1
    loss: dict  # policy -> float64 (m,) loss in nats at each position
    cache: int  # tokens the cache holds (window), sinks included for "sinks+window"
    sinks: int  # first tokens kept by "sinks+window"
    tokens: tuple  # display labels of the text's tokens

    def curve(self, policy: str, smooth: int = 64) -> np.ndarray:
        """Running mean of the loss over the last `smooth` positions (the curves the page draws)."""
        x = self.loss[policy]
        c = np.concatenate([[0.0], np.cumsum(x)])
        t = np.arange(1, len(x) + 1)
        k = np.minimum(t, smooth)
        return (c[t] - c[t - k]) / k

    def mean_after(self, policy: str, start: int | None = None) -> float:
        """Mean loss over the positions at or after `start` (default: where the window first evicts)."""
        start = self.cache if start is None else start
        keep = self.positions >= start
        return float(self.loss[policy][keep].mean()) if keep.any() else float("nan")


def _visible(q_pos, k_len: int, policy: str, cache: int, sinks: int):
    """bool torch (q, k_len): may query at absolute position q_pos[r] see key j under the policy."""
    import torch

    i = q_pos[:, None]
    j = torch.arange(k_len)[None, :]
    ok = j <= i
    if policy == "window":
        ok &= j > i - cache
    elif policy == "sinks+window":
        ok &= (j > i - (cache - sinks)) | (j < sinks)
    return ok


def _arange(n: int):
    import torch

    return torch.arange(n)


class _Pass:
    """One policy's run: its cache, and the adapter kernel that applies it."""

    def __init__(self, policy: str, cache: int, sinks: int):
        self.policy, self.cache, self.sinks = policy, cache, sinks
        self.offset = 0
        self.calls = 0
        self.problem: str | None = None

    def kernel(self, call, query, key, value):
        """SDPA over the cached keys the policy keeps (query (B, H, q, d), key (B, H_kv, k, d))."""
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        n_q, n_k = query.shape[2], key.shape[2]
        q_pos = self.offset + _arange(n_q)
        if n_k != self.offset + n_q:
            self.problem = "its attention does not see the whole cache of earlier tokens."
        mask = _visible(q_pos, n_k, self.policy, self.cache, self.sinks)[None, None]  # (1, 1, q, k)
        kwargs = {k: v for k, v in call.kwargs.items() if k != "is_causal"}
        self.calls += 1
        return sdpa_attention_forward(call.module, query, key, value, mask, dropout=call.dropout,
                                      scaling=call.scaling, is_causal=False, **kwargs)


def policy_losses(loaded, ids, policy: str, cache: int, sinks: int, chunk: int = 128,
                  progress=None, cancelled=None) -> np.ndarray:
    """float64 (n-1,): loss at positions 0..n-2 (predicting tokens 1..n-1) of token ids under one policy."""
    import torch
    from transformers import DynamicCache

    from attnviz.models.adapter import record

    model = loaded.model
    n = len(ids)
    ids_t = torch.tensor([ids])
    out = np.zeros(n - 1)
    state = _Pass(policy, cache, sinks)
    past = DynamicCache(config=model.config)
    with record(loaded, kernel=state.kernel) as rec:  # holds the model's lock for every chunk
        for a in range(0, n - 1, chunk):
            check(cancelled, "The sink experiment")
            b = min(n - 1, a + chunk)
            state.offset = a
            res = rec.forward(input_ids=ids_t[:, a:b], position_ids=torch.arange(a, b)[None], past_key_values=past,
                              use_cache=True)
            past = res.past_key_values
            logp = torch.log_softmax(res.logits[0].float(), dim=-1)  # (b-a, vocab)
            out[a:b] = -logp.gather(-1, ids_t[0, a + 1:b + 1, None])[:, 0].double().numpy()
            if progress is not None:
                progress(b)
    if state.problem or state.calls == 0:
        raise AttentionUnavailable(
            "The sink experiment needs a causal model whose attention runs through transformers' attention "
            f"functions over a KV cache; this one does not: {state.problem or 'its attention was never called.'}")
    return out


def sink_experiment(loaded, text: str, *, cache: int = 256, sinks: int = 4, max_tokens: int | None = None,
                    policies=POLICIES, chunk: int = 128, progress=None, cancelled=None) -> SinkRun:
    """Next-token loss of `loaded` (a causal LoadedModel) over text under each policy in `policies`.

    progress(done, total) is called after every chunk (positions summed over the policies); cancelled()
    returning True stops the run with attnviz.progress.Cancelled (nothing half-computed is returned).
    Raises BadInput for an encoder, a cache that keeps nothing recent, or a text of fewer than 2 tokens."""
    facts = loaded.facts
    if facts.kind != "decoder":
        raise BadInput("The attention-sink experiment needs a causal language model (a decoder such as SmolLM2); "
                       f"{facts.name} is an {facts.kind}, which does not predict the next token.")
    if not 0 <= sinks < cache:
        raise BadInput(f"The cache must hold more than the {sinks} kept first tokens (it holds {cache}).")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise BadInput(f"Unknown cache policy {unknown[0]!r}: choose from {', '.join(POLICIES)}.")
    e = encode(loaded, text, max_tokens=max_tokens or facts.max_positions)
    n = len(e.ids)
    if n < 2:
        raise BadInput("The text needs at least two tokens: the loss is about predicting the next one.")
    total, done = (n - 1) * len(policies), 0
    losses = {}
    for policy in policies:
        def step(b, base=done):
            if progress is not None:
                progress(base + b, total)

        losses[policy] = policy_losses(loaded, e.ids, policy, cache, sinks, chunk, step, cancelled)
        done += n - 1
    return SinkRun(positions=np.arange(n - 1), loss=losses, cache=cache, sinks=sinks, tokens=e.tokens)
