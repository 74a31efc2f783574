"""The logit lens: every layer's residual stream read through the final norm and the unembedding."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.extract import display_tokens, encode
from attnviz.models.adapter import run
from attnviz.models.families import module
from attnviz.types import LoadedModel, ModelFacts, Truncation
from attnviz.units import count_text

# Most predictions kept per (layer, position); the page shows the first k of these.
MAX_TOP_K = 10
# Logits computed at once: positions per chunk x vocabulary floats (~32 MB of float32 per
# array). Memory stays bounded by this, never by layers x positions x vocabulary.
CHUNK_FLOATS = 8_000_000
# Values summed in float32 before the partial sums are added in float64 (_sum64).
SUM_BLOCK = 256
_KIND_NAMES = {"encoder": "an encoder", "encoder-decoder": "an encoder-decoder"}


@dataclass(frozen=True)
class LogitLens:
    """What each layer of a causal LM would predict next at every position.

    S = n_layers + 1 states: 0 is the embeddings, s is the residual stream after block s
    (the last state is the model's own output). m = positions read (all n of the text, or a
    subset), k = top_k. Arrays are read-only.
    """

    top_ids: np.ndarray  # int64 (S, m, k): the k most likely next-token ids, best first
    top_probs: np.ndarray  # float32 (S, m, k): their probabilities (sorted, descending)
    top_labels: np.ndarray  # str (S, m, k): their display labels
    p_final: np.ndarray  # float32 (S, m): probability of the final layer's top-1 token
    p_next: np.ndarray  # float32 (S, m): probability of the text's actual next token (NaN at the end)
    kl: np.ndarray  # float32 (S, m): KL(final || layer s) in nats, from float64 sums; 0 at the last state
    tokens: tuple[str, ...]  # input display labels of the whole text (n,)
    token_ids: tuple[int, ...]  # input ids (n,)
    facts: ModelFacts
    text: str
    truncation: Truncation | None = None
    last_state_normed: bool = True  # the model returned its last hidden state after the final norm
    positions: np.ndarray | None = None  # int (m,): the positions read, ascending; None = all n

    def __post_init__(self):
        s, n, _ = self.top_ids.shape
        for name in ("top_probs", "top_labels"):
            if getattr(self, name).shape != self.top_ids.shape:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {self.top_ids.shape}")
        for name in ("p_final", "p_next", "kl"):
            if getattr(self, name).shape != (s, n):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {(s, n)}")
        if self.positions is None:
            object.__setattr__(self, "positions", np.arange(len(self.tokens)))
        if len(self.positions) != n or (n and not 0 <= self.positions.min() <= self.positions.max() < len(self.tokens)):
            raise ValueError(f"{len(self.positions)} positions for {n} columns of a {len(self.tokens)}-token text")
        for name in ("positions", "top_ids", "top_probs", "top_labels", "p_final", "p_next", "kl"):
            getattr(self, name).flags.writeable = False

    @property
    def n_states(self) -> int:
        return self.top_ids.shape[0]

    @property
    def seq_len(self) -> int:
        """Tokens of the whole text (the lens may have read only some positions)."""
        return len(self.tokens)

    def index(self, position: int) -> int:
        """The column of `position` in the arrays; ValueError if the lens did not read it."""
        hit = np.flatnonzero(self.positions == int(position))
        if not len(hit):
            raise ValueError(f"position {position} was not read by this lens")
        return int(hit[0])

    @property
    def top_k(self) -> int:
        return self.top_ids.shape[2]

    @property
    def final_ids(self) -> np.ndarray:
        """(m,) the model's own top-1 prediction at each position read."""
        return self.top_ids[-1, :, 0]

    def first_top1(self) -> np.ndarray:
        """(m,) the first state whose top-1 is the final prediction (the last state at the latest)."""
        hits = self.top_ids[:, :, 0] == self.final_ids[None, :]  # (S, n)
        return hits.argmax(axis=0)

    def settled_from(self) -> np.ndarray:
        """(m,) the first state from which the top-1 stays the final prediction up to the output."""
        hits = self.top_ids[:, :, 0] == self.final_ids[None, :]  # (S, n)
        misses = ~hits
        last_miss = np.where(misses.any(axis=0), self.n_states - 1 - misses[::-1].argmax(axis=0), -1)
        return last_miss + 1

    @staticmethod
    def state_name(s: int) -> str:
        return "embeddings" if s == 0 else f"after block {s}"


def _final_norm(model):
    """The final norm module of a causal LM (from the family table), or None."""
    try:
        return module(model, "final_norm")
    except BadInput:
        return None


def _sum64(a):
    """Row sums of a float32 (c, V) array in float64: float32 sums of blocks of SUM_BLOCK values (torch's
    vectorised reduction), the blocks added in float64: close to a float64 sum at about a float32 cost."""
    import torch

    c, v = a.shape
    whole = v - v % SUM_BLOCK
    out = a[:, :whole].reshape(c, -1, SUM_BLOCK).sum(-1).sum(-1, dtype=torch.float64)  # (c,)
    if whole < v:
        out = out + a[:, whole:].sum(-1, dtype=torch.float64)
    return out


def _head(model, head, config):
    """hidden (..., d) -> logits (..., vocab): the unembedding plus any logit post-processing the
    model's own forward applies (Cohere's logit_scale, Gemma 2's final soft-capping)."""
    import torch

    scale = getattr(config, "logit_scale", None)
    cap = getattr(config, "final_logit_softcapping", None)

    def apply(h):
        logits = head(h).float()
        if scale is not None:
            logits = logits * scale
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    return apply


def _check_causal(loaded: LoadedModel):
    facts = loaded.facts
    if facts.kind != "decoder":
        kind = _KIND_NAMES.get(facts.kind, f"a {facts.kind} model")
        raise BadInput(f"The logit lens reads next-token predictions, so it needs a causal language model "
                       f"such as SmolLM2; {facts.name} is {kind}.")
    head = loaded.model.get_output_embeddings() if hasattr(loaded.model, "get_output_embeddings") else None
    if head is None:
        raise BadInput(f"{facts.name} was loaded without its language-model head (the unembedding that turns "
                       "a hidden state into next-token scores), so the logit lens has nothing to read "
                       "predictions with. Load it as a causal language model.")
    norm = _final_norm(loaded.model)
    if norm is None:
        raise BadInput(f"The logit lens could not find the final norm of {facts.name} "
                       f"({facts.architecture}), so it cannot read its layers the way its output is read.")
    return head, norm


def reader(loaded: LoadedModel):
    """The lens of a causal LM as one function: residual-stream states (..., d_model) -> logits (..., vocab),
    through the final norm and the unembedding, as the model reads its last state. BadInput as logit_lens."""
    head, norm = _check_causal(loaded)
    unembed = _head(loaded.model, head, loaded.model.config)
    return lambda states: unembed(norm(states))


def _labels(tokenizer, ids: np.ndarray) -> np.ndarray:
    """Display labels for an int array of token ids (each distinct id decoded once)."""
    uniq, inverse = np.unique(ids, return_inverse=True)
    special = np.isin(uniq, list(getattr(tokenizer, "all_special_ids", []) or []))
    labels, _ = display_tokens(tokenizer, [int(i) for i in uniq], [None] * len(uniq), special)
    return np.asarray(labels, dtype=str)[inverse].reshape(ids.shape)


def logit_lens(loaded: LoadedModel, text: str, *, top_k: int = 5, max_tokens: int | None = None,
               chunk_positions: int | None = None, positions=None) -> LogitLens:
    """Run a causal LM on `text` and read every residual-stream state through the final norm
    and the unembedding: top-k next tokens per (state, position), the probability of the final
    prediction and of the actual next token, and KL(final || state).

    chunk_positions: positions whose logits are computed at once (default: CHUNK_FLOATS / vocab).
    positions: the positions to read (ints; default all). The model still runs on the whole text,
    but a window of 32 positions costs 1/16 of the unembedding work of 512.
    Raises BadInput for encoders, encoder-decoders, models without an LM head, empty text."""
    import torch

    head, norm = _check_causal(loaded)
    if not 1 <= top_k <= MAX_TOP_K:
        raise BadInput(f"top_k must be between 1 and {MAX_TOP_K}, got {top_k}.")
    model, config = loaded.model, loaded.model.config
    e = encode(loaded, text, max_tokens=max_tokens)
    n_text = len(e.ids)
    read = np.arange(n_text) if positions is None else np.unique(np.asarray(list(positions), dtype=np.int64))
    if len(read) == 0 or read.min() < 0 or read.max() >= n_text:
        raise BadInput(f"The positions to read must lie between 0 and {n_text - 1} (the text has {count_text(n_text)} tokens).")
    n = len(read)
    unembed = _head(model, head, config)
    kwargs = {}
    try:  # only the last position's logits: the lens recomputes the rest chunk by chunk
        import inspect

        if "logits_to_keep" in inspect.signature(model.forward).parameters:
            kwargs["logits_to_keep"] = 1
    except (TypeError, ValueError):
        pass
    with loaded.lock, torch.inference_mode():
        # the residual stream entering block 0 (the embeddings), leaving every block, and after the final norm
        out, rec = run(loaded, e.inputs, hooks=["blocks.0.hook_resid_pre", "blocks.*.hook_resid_post",
                                                "ln_final.hook_normalized"], **kwargs)
        n_blocks = sum(1 for name in rec.acts if name.endswith("hook_resid_post"))
        if "ln_final.hook_normalized" not in rec or not n_blocks:
            raise AttentionUnavailable(f"{loaded.facts.name} ran without passing its final norm, so the logit lens "
                                       "cannot read its layers.")
        # S = n_blocks + 1 states: the embeddings, after each block but the last, and the model's own last state
        states = ([rec["blocks.0.hook_resid_pre"]] + [rec[f"blocks.{i}.hook_resid_post"] for i in range(n_blocks - 1)]
                  + [rec["ln_final.hook_normalized"]])
        sel = torch.from_numpy(read)
        hidden = [h[0, sel] for h in states]  # S x (m, d): the positions read
        own = out.logits[0, -1].float()  # (vocab,) the model's own last-position logits
        # HF returns the last state after the final norm (Llama, GPT-2, ...): find out, don't assume
        last = states[-1][0, -1:]  # the text's last position, where `own` was computed
        tol = dict(rtol=1e-3, atol=1e-3 * max(1.0, float(own.abs().max())))
        if torch.allclose(unembed(last)[0], own, **tol):
            last_normed = True
        elif torch.allclose(unembed(norm(last))[0], own, **tol):
            last_normed = False
        else:
            raise AttentionUnavailable(
                f"The logit lens could not reproduce {loaded.facts.name}'s own predictions from its last "
                "hidden state through its final norm and unembedding, so its layers cannot be read this way.")

        n_states = len(hidden)
        vocab = int(own.shape[-1])
        chunk = chunk_positions or max(1, CHUNK_FLOATS // vocab)
        next_ids = torch.tensor(e.ids[1:] + [-1])[sel]  # (m,) the text's next token, -1 at the end
        top_ids = np.zeros((n_states, n, top_k), dtype=np.int64)
        top_probs = np.zeros((n_states, n, top_k), dtype=np.float32)
        p_final = np.zeros((n_states, n), dtype=np.float32)
        p_next = np.full((n_states, n), np.nan, dtype=np.float32)
        kl = np.zeros((n_states, n), dtype=np.float32)
        for start in range(0, n, chunk):
            sl = slice(start, min(n, start + chunk))
            h_last = hidden[-1][sl]
            final_logits = unembed(h_last if last_normed else norm(h_last))  # (c, V)
            # the final distribution in float64, once per chunk: log p = log_softmax(z_final)
            final_logp = torch.log_softmax(final_logits.double(), dim=-1)  # (c, V)
            final_p = final_logp.exp().float()  # sums to 1 up to float64 rounding (float32: 1 +- 1e-5)
            final_lse = torch.logsumexp(final_logits.double(), dim=-1)  # (c,)
            final_top = final_logits.argmax(dim=-1)  # (c,)
            nxt = next_ids[sl]
            has_next = nxt >= 0
            for s in range(n_states):
                # one pass each: logits, their log-sum-exp, top-k, two gathers, one weighted row sum
                logits = final_logits if s == n_states - 1 else unembed(norm(hidden[s][sl]))  # (c, V)
                lse = torch.logsumexp(logits, dim=-1)  # (c,)
                vals, idx = torch.topk(logits, top_k, dim=-1)  # sorted, best first
                top_ids[s, sl] = idx.numpy()
                top_probs[s, sl] = (vals - lse[:, None]).exp().numpy()
                p_final[s, sl] = (logits.gather(1, final_top[:, None])[:, 0] - lse).exp().numpy()
                if has_next.any():
                    pn = (logits.gather(1, nxt.clamp(min=0)[:, None])[:, 0] - lse).exp()
                    p_next[s, sl] = torch.where(has_next, pn, torch.nan).numpy()
                if s < n_states - 1:
                    # KL(final || s) = sum_v p_v (log p_v - log q_v) with log q = z_s - lse_s, written as
                    # sum_v p_v (z_final - z_s) - lse_final + lse_s (p sums to 1 in float64): the logit
                    # differences are exact in float32, the weighted sum is accumulated in float64
                    cross = _sum64(final_p * (final_logits - logits))  # (c,) float64
                    kl[s, sl] = (cross - final_lse + lse.double()).clamp(min=0).numpy()
    kl[-1] = 0.0
    return LogitLens(top_ids=top_ids, top_probs=top_probs, top_labels=_labels(loaded.tokenizer, top_ids),
                     p_final=p_final, p_next=p_next, kl=kl, tokens=tuple(e.tokens),
                     token_ids=tuple(int(i) for i in e.ids), facts=loaded.facts, text=e.text,
                     truncation=e.truncation, last_state_normed=last_normed, positions=read)
