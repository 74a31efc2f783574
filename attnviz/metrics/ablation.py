"""Head ablation: zero chosen heads where their outputs enter each layer's attention output projection.

transformers 5 silently ignores `head_mask`, so the heads' slices of hook point blocks.{i}.attn.hook_z
(batch, pos, head, d_head) are replaced with zeros through the model adapter, for one forward pass.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from attnviz.attention import total_variation
from attnviz.errors import BadInput


def check_heads(heads, n_layers: int, n_heads: int) -> frozenset:
    """Validated frozenset of (layer, head); every head at once is refused."""
    out = set()
    for item in heads:
        try:
            layer, head = (int(v) for v in item)
        except (TypeError, ValueError):
            raise BadInput(f"A head must be given as (layer, head), got {item!r}.") from None
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise BadInput(f"Head ({layer}, {head}) does not exist: this model has layers 0-{n_layers - 1} "
                           f"and heads 0-{n_heads - 1}.")
        out.add((layer, head))
    if len(out) == n_layers * n_heads:
        raise BadInput("You chose every head of every layer. With all attention switched off the model "
                       "has nothing to compare against; leave at least one head on.")
    return frozenset(out)


def zero_heads(heads, stack: str = "blocks") -> dict:
    """The adapter replacements that switch off `heads` ({(layer, head)}): {hook point: function}, one per
    layer, each zeroing its heads' slices of hook_z (batch, pos, head, d_head)."""
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(int(layer), []).append(int(head))

    def zero(hs):
        def fn(z, point):
            z = z.clone()
            z[..., hs, :] = 0
            return z
        return fn
    return {f"{stack}.{layer}.attn.hook_z": zero(sorted(hs)) for layer, hs in by_layer.items()}


@dataclass(frozen=True)
class AblationRun:
    """What one forward pass (with or without ablated heads) produced."""

    heads: frozenset  # {(layer, head)} switched off
    attention: np.ndarray | None  # float32 (layer, head, n, n), the (encoder's) self-attention
    embedding: np.ndarray  # float32 (d_model,): masked mean of the last hidden states, L2-normalised
    next_probs: np.ndarray | None  # float32 (vocab,): next-token probabilities after the text (causal LM)
    argmax: np.ndarray | None  # int (n,): predicted token after each position (LM) / at each position (MLM)
    masked_probs: dict  # MLM only: position of a mask token -> float32 (vocab,) probabilities


def run(loaded, result, heads=frozenset(), *, with_attention: bool = True) -> AblationRun:
    """Forward pass of `loaded` on `result`'s tokens with `heads` ({(layer, head)}) switched off.
    with_attention=False skips returning the attention (faster; `attention` is then None)."""
    import torch

    from attnviz.models.adapter import run as forward

    facts = loaded.facts
    heads = check_heads(heads, result.n_layers, result.n_heads) if heads else frozenset()
    ids = torch.tensor([list(result.token_ids)])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    part = "encoder" if facts.kind == "encoder-decoder" else "model"
    if facts.kind == "encoder" and "token_type_ids" in inspect.signature(loaded.model.forward).parameters:
        inputs["token_type_ids"] = torch.tensor([np.asarray(result.segment_ids).tolist()])
    out, _ = forward(loaded, inputs, replace=zero_heads(heads), part=part, output_attentions=with_attention,
                     output_hidden_states=True)
    attention = np.stack([a[0].float().numpy() for a in out.attentions]) if with_attention else None
    last = out.last_hidden_state if getattr(out, "last_hidden_state", None) is not None else out.hidden_states[-1]
    emb = last[0].float().mean(dim=0)  # one sentence, no padding: the masked mean is the plain mean
    emb = (emb / emb.norm().clamp_min(1e-12)).numpy()
    next_probs = argmax = None
    masked = {}
    logits = getattr(out, "logits", None)
    if logits is not None and facts.kind != "encoder-decoder":
        logits = logits[0].float()
        argmax = logits.argmax(dim=-1).numpy()
        if facts.causal:
            next_probs = torch.softmax(logits[-1], dim=-1).numpy()
        else:
            mask_id = getattr(loaded.tokenizer, "mask_token_id", None)
            for pos in [i for i, t in enumerate(result.token_ids) if mask_id is not None and t == mask_id]:
                masked[pos] = torch.softmax(logits[pos], dim=-1).numpy()
    return AblationRun(heads, attention, emb.astype(np.float32), next_probs, argmax, masked)


def ablated_result(result, ablation: AblationRun):
    """The AttentionResult of the ablated model: its attention, marked with the ablated heads."""
    return replace(result, attention=ablation.attention, ablated=ablation.heads)


def cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    """1 - cos(a, b) for two vectors (d,)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    if denom == 0:
        raise BadInput("A zero vector has no direction to compare.")
    return float(1.0 - a @ b / denom)


def kl_divergence(p: np.ndarray, q: np.ndarray, eps: float = 1e-12) -> float:
    """KL(p || q) in nats for two probability vectors (vocab,)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    return float(np.sum(p * (np.log(p + eps) - np.log(q + eps))))


def attention_change(base: np.ndarray, other: np.ndarray) -> np.ndarray:
    """(layer,) mean total-variation distance between the rows of two (layer, head, n, n) stacks:
    0 = identical, 1 = disjoint."""
    if base.shape != other.shape:
        raise BadInput(f"attention shapes differ: {base.shape} vs {other.shape}")
    return total_variation(base, other).mean(axis=(1, 2))


def effect(base: AblationRun, other: AblationRun) -> float:
    """One number for how much the ablation changed the output: KL of the next-token
    distribution (causal LM), mean KL at the mask tokens (MLM with [MASK] in the text),
    else the cosine distance of the sentence embeddings."""
    if base.next_probs is not None and other.next_probs is not None:
        return kl_divergence(base.next_probs, other.next_probs)
    if base.masked_probs and other.masked_probs:
        return float(np.mean([kl_divergence(base.masked_probs[k], other.masked_probs[k]) for k in base.masked_probs]))
    return cosine_distance(base.embedding, other.embedding)


def effect_name(base: AblationRun) -> str:
    if base.next_probs is not None:
        return "KL divergence of the next-token distribution (nats)"
    if base.masked_probs:
        return "mean KL divergence at the mask tokens (nats)"
    return "cosine distance of the sentence embedding"


def rank_heads(loaded, result, base: AblationRun | None = None,
               progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """(layer, head) effect of switching off each head alone; progress(done, total) after each."""
    base = base or run(loaded, result)
    n_layers, n_heads = result.n_layers, result.n_heads
    out = np.zeros((n_layers, n_heads), dtype=np.float32)
    total = n_layers * n_heads
    for k in range(total):
        layer, head = divmod(k, n_heads)
        out[layer, head] = effect(base, run(loaded, result, {(layer, head)}, with_attention=False))
        if progress:
            progress(k + 1, total)
    return out


def effect_label(base: AblationRun) -> str:
    """effect_name as a label: first letter upper case, the rest kept ("KL", not "Kl")."""
    name = effect_name(base)
    return name[:1].upper() + name[1:]


# What a token made only of white space is shown as (a space is invisible in a table).
_BLANK = {" ": "␣", "\n": "⏎", "\t": "⇥", "\r": "⏎"}
_BLANK_NAMES = {" ": "space", "\n": "new line", "\t": "tab", "\r": "new line"}
# Raw markers of byte-level BPE (GPT-2, Llama 3, SmolLM2) and SentencePiece, should a tokenizer
# hand them back undecoded.
_RAW = {"Ġ": " ", "Ċ": "\n", "ĉ": "\t", "▁": " "}


def readable_token(tokenizer, token_id: int) -> str:
    """One vocabulary entry as a reader should see it in a table: decoded text without the
    tokenizer's markers. A word piece that continues a word (WordPiece '##ing') is shown as
    '…ing'; a token of only white space as its symbol and name ('␣ (space)', '⏎ (new line)')."""
    try:
        text = tokenizer.decode([int(token_id)])
    except Exception:  # a tokenizer that cannot decode one id on its own
        text = str(tokenizer.convert_ids_to_tokens(int(token_id)))
    text = "".join(_RAW.get(c, c) for c in text) if any(m in text for m in _RAW) else text
    if not text.strip():
        if not text:
            return "(empty)"
        kinds = {_BLANK_NAMES.get(c, "blank") for c in text}
        name = kinds.pop() if len(kinds) == 1 else "blank"
        name = name if len(text) == 1 else f"{len(text)} {name}s"
        return "".join(_BLANK.get(c, "␣") for c in text) + f" ({name})"
    text = text.strip()
    if text.startswith("##") and len(text) > 2:
        return "…" + text[2:]
    return text


def top_tokens(probs: np.ndarray, tokenizer, k: int = 5) -> list[tuple[str, float]]:
    """The k most probable tokens of a (vocab,) distribution: [(readable token, probability)]."""
    idx = np.argsort(-probs)[:k]
    return [(readable_token(tokenizer, int(i)), float(probs[i])) for i in idx]
