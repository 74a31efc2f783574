"""Model + text -> AttentionResult, for encoders, causal decoders and encoder-decoders."""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.types import AttentionResult, Truncation

# Longest input extracted by default: the attention of a 30-layer model at 512 tokens is
# already ~280 MB of float32; longer inputs are truncated and the result says so.
DEFAULT_MAX_TOKENS = 512
# Spaces and control characters are shown with visible stand-ins in token labels.
_VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥"}
_WORD_MARKERS = ("##", "Ġ", "▁", "Ċ")


def clean_text(text: str | None) -> str:
    """Text with control characters (other than newline and tab) replaced by spaces."""
    if text is None:
        return ""
    return "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") and ch not in "\n\t" else ch
        for ch in str(text)
    )


def token_limit(loaded, max_tokens: int | None) -> int:
    limits = [max_tokens or DEFAULT_MAX_TOKENS]
    if loaded.facts.max_positions:
        limits.append(loaded.facts.max_positions)
    tok_max = getattr(loaded.tokenizer, "model_max_length", None)
    if tok_max and tok_max < 1_000_000:
        limits.append(int(tok_max))
    return min(limits)


def display_tokens(tokenizer, ids: list[int], word_ids: list, special: np.ndarray):
    """(labels, continuation flags): readable labels, continuation pieces prefixed "##"."""
    raw = tokenizer.convert_ids_to_tokens(ids)
    labels, cont = [], np.zeros(len(ids), dtype=bool)
    for i, piece in enumerate(raw):
        if special[i]:
            labels.append(piece)
            continue
        cont[i] = i > 0 and word_ids[i] is not None and word_ids[i] == word_ids[i - 1]
        try:
            text = tokenizer.convert_tokens_to_string([piece])
        except Exception:  # tokenizers without a detokenizer for single pieces
            text = piece
        for marker in _WORD_MARKERS:
            if text.startswith(marker) and len(text) > len(marker):
                text = text[len(marker):]
        text = text.strip(" ") or "".join(_VISIBLE.get(c, c) for c in text) or "␣"
        text = "".join(_VISIBLE.get(c, c) for c in text)
        labels.append(("##" + text) if cont[i] else text)
    return tuple(labels), cont


def _encode(tokenizer, text, text_pair, limit):
    kwargs = dict(return_special_tokens_mask=True, return_attention_mask=True)
    enc = tokenizer(text, text_pair, truncation=False, **kwargs)
    n_requested = len(enc["input_ids"])
    if n_requested > limit:
        enc = tokenizer(text, text_pair, truncation="longest_first" if text_pair else True,
                        max_length=limit, **kwargs)
    return enc, n_requested


def _segments(enc, n: int) -> np.ndarray:
    if "token_type_ids" in enc and len(enc["token_type_ids"]) == n:
        return np.asarray(enc["token_type_ids"], dtype=np.int64)
    seg = np.zeros(n, dtype=np.int64)
    try:
        seq_ids = enc.sequence_ids()
    except Exception:  # slow tokenizers: one segment
        return seg
    current = 0
    for i, s in enumerate(seq_ids):
        current = s if s is not None else current
        seg[i] = current
    return seg


def _filled_by(captured: np.ndarray, attentions) -> bool:
    """True when every returned layer tensor is the captured array's own memory."""
    if not attentions or len(attentions) != captured.shape[0]:
        return False
    return all(a is not None and a.data_ptr() == captured[i].ctypes.data for i, a in enumerate(attentions))


def _stack(attentions, what: str) -> np.ndarray:
    if not attentions or any(a is None for a in attentions):
        raise AttentionUnavailable(
            f"The model returned no {what} attention weights. It must run with eager attention "
            "(attn_implementation='eager'); this model or its configuration does not provide them."
        )
    # per-layer (1, head, q, k) tensors -> numpy first, then stack: faster than torch.stack
    return np.stack([a[0].detach().float().numpy() for a in attentions])


@dataclass(frozen=True)
class Encoded:
    """One input tokenised for a model: the model's keyword inputs and what to show for each token."""

    ids: list  # token ids fed to the model, special tokens included
    tokens: tuple  # display labels, one per position
    continuation: np.ndarray  # bool (seq_len,): word-continuation pieces
    special: np.ndarray  # bool (seq_len,): special tokens ([CLS], [SEP], <s>, ...)
    segments: np.ndarray  # int (seq_len,): sentence A = 0, B = 1
    inputs: dict  # keyword tensors for model(**inputs): input_ids, attention_mask, ...
    truncation: Truncation  # tokens requested vs kept
    text: str  # the cleaned text
    text_pair: str | None  # the cleaned second sentence, None when absent or blank
    decoder_tokens: tuple | None = None  # encoder-decoders: decoder input labels
    decoder_special: np.ndarray | None = None  # encoder-decoders: decoder special-token flags


def encode(loaded, text: str, text_pair: str | None = None, *, max_tokens: int | None = None,
           decoder_text: str | None = None) -> Encoded:
    """Clean and tokenise text (and an optional second sentence) for `loaded` the way `extract`
    feeds it to the model. Raises BadInput for empty text."""
    import torch

    text = clean_text(text)
    text_pair = clean_text(text_pair) if text_pair is not None else None
    if not text.strip():
        raise BadInput("The text is empty. Type a sentence (or pick an example) to see its attention.")
    if text_pair is not None and not text_pair.strip():
        text_pair = None
    tok, facts = loaded.tokenizer, loaded.facts
    limit = token_limit(loaded, max_tokens)
    enc, n_requested = _encode(tok, text, text_pair, limit)
    ids = list(enc["input_ids"])
    if not ids:
        raise BadInput("The text produced no tokens for this model. Try some words.")
    special = np.asarray(enc["special_tokens_mask"], dtype=bool)
    try:
        word_ids = enc.word_ids()
    except Exception:
        word_ids = [None] * len(ids)
    tokens, cont = display_tokens(tok, ids, word_ids, special)
    segments = _segments(enc, len(ids))

    inputs = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
    if "token_type_ids" in enc and facts.kind == "encoder":
        inputs["token_type_ids"] = torch.tensor([enc["token_type_ids"]])
    dec_tokens = dec_special = None
    if facts.kind == "encoder-decoder":
        target = clean_text(decoder_text) if decoder_text and decoder_text.strip() else text
        dec_ids = tok(target, truncation=True, max_length=limit)["input_ids"]
        start = loaded.model.config.decoder_start_token_id
        if start is None:
            start = tok.pad_token_id or 0
        dec_in = [start] + dec_ids[:-1]
        inputs["decoder_input_ids"] = torch.tensor([dec_in])
        dec_special = np.isin(dec_in, tok.all_special_ids)
        dec_tokens, _ = display_tokens(tok, dec_in, [None] * len(dec_in), dec_special)
    return Encoded(ids=ids, tokens=tokens, continuation=cont, special=special, segments=segments,
                   inputs=inputs, truncation=Truncation(n_requested, len(ids), limit), text=text, text_pair=text_pair,
                   decoder_tokens=dec_tokens, decoder_special=dec_special)


def extract(loaded, text: str, text_pair: str | None = None, *, max_tokens: int | None = None,
            decoder_text: str | None = None) -> AttentionResult:
    """Run `loaded` (a LoadedModel) on text (and an optional second sentence) and return
    every layer's and head's attention as an AttentionResult.

    Encoder-decoders get `decoder_text` (default: the text itself) as the decoder input,
    shifted right as in teacher forcing. Raises BadInput / AttentionUnavailable.
    """
    import torch

    from attnviz.models.adapter import can_write_pattern_in_place, run

    e = encode(loaded, text, text_pair, max_tokens=max_tokens, decoder_text=decoder_text)
    facts, ids, inputs = loaded.facts, e.ids, e.inputs
    captured = None
    if can_write_pattern_in_place(loaded):
        # each layer's softmax is written straight into one (layer, 1, head, query, key) array: no stacking copy.
        # torch's allocator, not np.empty: its large blocks are first written 3-8x faster here (0.08 s against
        # 0.2-0.7 s to fill SmolLM2's 283 MB at 512 tokens); the numpy view keeps it alive
        buffer = torch.empty((facts.n_layers, 1, facts.n_heads, len(ids), len(ids)), dtype=torch.float32)
        captured = buffer.numpy()[:, 0]  # (layer, head, query, key)
        out, _ = run(loaded, inputs, pattern_into=buffer, output_attentions=True)
    else:
        out, _ = run(loaded, inputs, output_attentions=True)

    extra = {}
    if captured is not None and _filled_by(captured, out.attentions):
        attention = captured  # written in place by the model: no copy
    elif facts.kind == "encoder-decoder":
        attention = _stack(out.encoder_attentions, "encoder")
        extra = dict(decoder_attention=_stack(out.decoder_attentions, "decoder"),
                     cross_attention=_stack(out.cross_attentions, "cross"),
                     decoder_tokens=e.decoder_tokens, decoder_special_mask=e.decoder_special)
    else:
        attention = _stack(out.attentions, "")
    return AttentionResult(
        attention=attention,
        tokens=e.tokens,
        token_ids=tuple(int(i) for i in ids),
        special_mask=e.special,
        continuation=e.continuation,
        segment_ids=e.segments,
        facts=facts,
        text=e.text,
        text_pair=e.text_pair,
        truncation=e.truncation,
        **extra,
    )
