"""The records that flow through attnviz: a loaded model with its facts, a request (model, text, pair, token
limit) and one AttentionResult per input."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

# Which attention maps an AttentionResult can hold; encoder-decoders have all three.
STACKS = ("self", "decoder", "cross")


class LayerHeadShape:
    """n_layers, n_heads and seq_len read off a (layer, head, position, ...) array of the record:
    the attribute named by _SHAPE_OF."""

    _SHAPE_OF: ClassVar[str] = "attention"

    def _dim(self, axis: int) -> int:
        return getattr(self, self._SHAPE_OF).shape[axis]

    @property
    def n_layers(self) -> int:
        return self._dim(0)

    @property
    def n_heads(self) -> int:
        return self._dim(1)

    @property
    def seq_len(self) -> int:
        return self._dim(2)


@dataclass(frozen=True)
class ModelFacts:
    name: str  # what the user chose: registry key, hub id or folder
    kind: str  # "encoder", "decoder" (causal) or "encoder-decoder"
    architecture: str  # class name, e.g. "BertModel"
    n_layers: int  # attention layers (of the encoder for encoder-decoders)
    n_heads: int  # query heads per layer
    n_kv_heads: int  # key/value heads per layer (< n_heads for grouped-query attention)
    d_model: int  # hidden size
    max_positions: int | None  # longest input the model accepts; None if unbounded
    position_scheme: str = "unknown"  # "learned", "rope", "relative", "sinusoidal", ...
    source: str = ""  # where the weights came from (package, folder, hub cache)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def causal(self) -> bool:
        return self.kind == "decoder"



@dataclass
class LoadedModel:
    """A model ready for extraction. Shared between sessions: never mutate it."""

    key: str
    model: Any  # a transformers PreTrainedModel in eval mode, eager attention
    tokenizer: Any
    facts: ModelFacts
    # one forward pass at a time per model: concurrent sessions must not oversubscribe cores.
    # Re-entrant, so code holding it may call extract() (which takes it too) without deadlock.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)


@dataclass(frozen=True)
class Request:
    """One input to run a model on: the key of its result and of everything computed from that result."""

    model: str  # registry key, hub id or folder
    text: str
    pair: str | None = None  # the second sentence of a pair, or None
    max_tokens: int | None = None  # the token limit; None: the dense pages' limit

    def with_limit(self, max_tokens: int | None) -> "Request":
        """The same input under another token limit."""
        return Request(self.model, self.text, self.pair, max_tokens)


@dataclass(frozen=True)
class Truncation:
    n_tokens_requested: int  # tokens the text produced, special tokens included
    n_tokens_kept: int  # tokens actually fed to the model
    max_tokens: int | None  # the limit that applied

    @property
    def n_dropped(self) -> int:
        return self.n_tokens_requested - self.n_tokens_kept

    @property
    def truncated(self) -> bool:
        return self.n_dropped > 0


SUMMED = "heads summed"  # what a view calls a layer's one map when its heads are summed (ALTI)


def head_name(head: int, summed: bool) -> str:
    """What a view calls head `head`: "head 3", or the one map of a layer whose heads are summed."""
    return SUMMED if summed else f"head {head}"


@dataclass(frozen=True)
class AttentionResult(LayerHeadShape):
    """Attention of one model on one input.

    attention: float32 (layer, head, query, key); for encoder-decoders the encoder's
    self-attention. Rows sum to 1 over the keys a query may see.
    tokens: display strings, one per position; continuation pieces start with "##".
    """

    attention: np.ndarray
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    special_mask: np.ndarray  # bool (seq_len,): [CLS], [SEP], <s>, padding ...
    continuation: np.ndarray  # bool (seq_len,): piece continues the previous word
    segment_ids: np.ndarray  # int (seq_len,): 0 = sentence A, 1 = sentence B
    facts: ModelFacts
    text: str
    text_pair: str | None = None
    truncation: Truncation | None = None
    # encoder-decoder only: decoder self-attention (layer, head, tgt, tgt) and
    # cross-attention (layer, head, tgt, src), with the decoder's tokens.
    decoder_attention: np.ndarray | None = None
    cross_attention: np.ndarray | None = None
    decoder_tokens: tuple[str, ...] | None = None
    decoder_special_mask: np.ndarray | None = None  # bool (tgt,)
    ablated: frozenset = field(default_factory=frozenset)  # {(layer, head)} switched off
    # what `attention` holds: "weights" (the softmax weights), or a contribution quantity shown
    # through the lens (contrib/compute.py): "value-weighted" or "ALTI" (one map per layer)
    quantity: str = "weights"
    # word level (attnviz/words): the first piece of each word in the tokenised input; None = one
    # position per token as the tokenizer made them
    word_starts: tuple | None = None

    def __post_init__(self):
        att = self.attention
        if att.ndim != 4 or att.shape[2] != att.shape[3]:
            raise ValueError(f"attention must be (layer, head, n, n), got {att.shape}")
        n = att.shape[2]
        for name in ("tokens", "token_ids", "special_mask", "continuation", "segment_ids"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {n} positions")
        # Results are shared between sessions through caches: make them read-only.
        for arr in (att, self.special_mask, self.continuation, self.segment_ids,
                    self.decoder_attention, self.cross_attention, self.decoder_special_mask):
            if arr is not None:
                arr.flags.writeable = False

    @property
    def is_pair(self) -> bool:
        return bool(self.text_pair) and bool(np.any(self.segment_ids == 1))

    @property
    def heads_summed(self) -> bool:
        """One map per layer, its heads summed (ALTI through the lens), rather than one per head."""
        return self.quantity == "ALTI"

    def head_name(self, head: int) -> str:
        """What a view calls head `head` of this result: "head 3", or "heads summed"."""
        return head_name(head, self.heads_summed)

    @property
    def stacks(self) -> tuple[str, ...]:
        """The attention stacks present: ("self",) or all three for encoder-decoders."""
        return STACKS if self.cross_attention is not None else ("self",)

    def specials(self, which: str = "self") -> tuple[np.ndarray, np.ndarray]:
        """(query special mask, key special mask) of one stack."""
        enc, dec = self.special_mask, self.decoder_special_mask
        if dec is None:
            dec = np.zeros(len(self.decoder_tokens or ()), dtype=bool)
        return {"self": (enc, enc), "decoder": (dec, dec), "cross": (dec, enc)}[which]

    def stack(self, which: str = "self") -> tuple[np.ndarray, tuple[str, ...], tuple[str, ...]]:
        """(attention, query tokens, key tokens) of one stack: self (the encoder's, for
        encoder-decoders), decoder or cross."""
        if which == "self":
            return self.attention, self.tokens, self.tokens
        if which == "decoder" and self.decoder_attention is not None:
            return self.decoder_attention, self.decoder_tokens, self.decoder_tokens
        if which == "cross" and self.cross_attention is not None:
            return self.cross_attention, self.decoder_tokens, self.tokens
        raise ValueError(f"this result has no {which!r} attention (it has {', '.join(self.stacks)})")
