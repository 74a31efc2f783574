"""Seeded toy tasks (reverse, copy, sort, induction) with a fixed probe input each."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput

BOS = 0  # id of the start token "<s>"; symbols use ids 1..n_symbols
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Batch:
    src: np.ndarray  # int64 (B, S): encoder input, or the whole input of a decoder-only task
    tgt_in: np.ndarray | None  # int64 (B, T): decoder input (<s> + shifted target); None for decoder-only
    target: np.ndarray  # int64 (B, T): the ids to predict at each output position
    loss_mask: np.ndarray  # bool (B, T): positions that count for loss and accuracy


@dataclass(frozen=True)
class Task:
    name: str  # key: "reverse", "copy", "sort", "induction"
    kind: str  # model kind the task trains: "encoder-decoder" or "decoder"
    seq_len: int  # symbols per sequence (per half, for induction)
    n_symbols: int  # distinct symbols A, B, C, ...
    title: str  # one line for the page
    expect: str  # the attention pattern that should form, in plain words

    @property
    def vocab(self) -> tuple[str, ...]:
        """Token strings indexed by id: "<s>" then the symbols."""
        return ("<s>",) + tuple(LETTERS[i] for i in range(self.n_symbols))

    @property
    def vocab_size(self) -> int:
        return self.n_symbols + 1

    @property
    def input_len(self) -> int:
        """Length of the longest sequence the model sees (its positions must cover it)."""
        return self.seq_len + 1 if self.kind == "encoder-decoder" else 2 * self.seq_len + 1

    def output(self, src: np.ndarray) -> np.ndarray:
        """Encoder-decoder tasks: the target (B, L) for sources (B, L)."""
        if self.name == "reverse":
            return src[:, ::-1].copy()
        if self.name == "copy":
            return src.copy()
        if self.name == "sort":
            return np.sort(src, axis=1)
        raise BadInput(f"{self.name} has no source-to-target map.")

    def symbols(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, seq_len) random symbol ids (1..n_symbols).

        Induction rows hold a random number (3..seq_len) of distinct symbols followed by
        zeros: a varying length means no fixed offset solves the task, only induction does.
        """
        if self.kind == "encoder-decoder":
            return rng.integers(1, self.n_symbols + 1, size=(n, self.seq_len), dtype=np.int64)
        order = np.argsort(rng.random((n, self.n_symbols)), axis=1)[:, : self.seq_len] + 1  # distinct per row
        lengths = rng.integers(3, self.seq_len + 1, size=n)
        return np.where(np.arange(self.seq_len)[None] < lengths[:, None], order, 0).astype(np.int64)

    def make_batch(self, sym: np.ndarray) -> Batch:
        """The model inputs and targets for symbol rows sym (B, seq_len)."""
        B, L = sym.shape
        if self.kind == "encoder-decoder":
            tgt = self.output(sym)
            tgt_in = np.concatenate([np.full((B, 1), BOS, dtype=np.int64), tgt[:, :-1]], axis=1)
            return Batch(sym, tgt_in, tgt, np.ones((B, L), dtype=bool))
        # induction: <s> x1..xn x1..xn, padded with <s> to 2L+1; predict the next token;
        # only the second copy's x2..xn are predictable (from an earlier occurrence).
        seq = np.zeros((B, 2 * L + 1), dtype=np.int64)  # <s> = 0 also pads the end
        mask = np.zeros((B, 2 * L), dtype=bool)
        for r, row in enumerate(sym):
            n = int((row > 0).sum())
            seq[r, 1:1 + n] = row[:n]
            seq[r, 1 + n:1 + 2 * n] = row[:n]
            mask[r, n + 1:2 * n] = True  # target index j predicts seq[j + 1]
        return Batch(seq[:, :-1], None, seq[:, 1:], mask)

    def probe(self) -> Batch:
        """The fixed input whose attention is recorded: seq_len distinct symbols in a fixed shuffled order."""
        rng = np.random.default_rng(1234)
        sym = (rng.permutation(self.n_symbols)[: self.seq_len] + 1)[None].astype(np.int64)
        return self.make_batch(sym)

    def probe_tokens(self) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
        """(input tokens, decoder input tokens or None) of the probe."""
        p, v = self.probe(), self.vocab
        src = tuple(v[i] for i in p.src[0])
        return src, None if p.tgt_in is None else tuple(v[i] for i in p.tgt_in[0])


def _codes(sym: np.ndarray, base: int) -> np.ndarray:
    """One int64 per row (the row read as a number in `base`), to compare sequences quickly."""
    weights = base ** np.arange(sym.shape[1] - 1, -1, -1, dtype=np.int64)
    return sym @ weights


class Sampler:
    """Seeded training batches that never contain a held-out sequence."""

    def __init__(self, task: Task, seed: int, n_heldout: int = 512):
        self.task = task
        self.rng = np.random.default_rng(seed)
        held = task.symbols(np.random.default_rng(10_000 + seed), n_heldout)
        self.heldout = task.make_batch(held)
        self._held_codes = np.sort(_codes(held, task.n_symbols + 1))

    def batch(self, size: int) -> Batch:
        sym = self.task.symbols(self.rng, size)
        codes = _codes(sym, self.task.n_symbols + 1)
        pos = np.clip(np.searchsorted(self._held_codes, codes), 0, len(self._held_codes) - 1)
        clash = self._held_codes[pos] == codes
        while clash.any():  # redraw the (rare) rows that are held-out sequences
            sym[clash] = self.task.symbols(self.rng, int(clash.sum()))
            codes = _codes(sym, self.task.n_symbols + 1)
            pos = np.clip(np.searchsorted(self._held_codes, codes), 0, len(self._held_codes) - 1)
            clash = self._held_codes[pos] == codes
        return self.task.make_batch(sym)


TASKS: dict[str, Task] = {
    "reverse": Task("reverse", "encoder-decoder", 8, 12, "Reverse the sequence (encoder-decoder)",
                    "The decoder's cross-attention becomes the anti-diagonal: output i looks at input n-1-i."),
    "copy": Task("copy", "encoder-decoder", 8, 12, "Copy the sequence (encoder-decoder)",
                 "The cross-attention becomes the diagonal: output i looks at input i."),
    "sort": Task("sort", "encoder-decoder", 8, 12, "Sort the sequence (encoder-decoder)",
                 "Each output looks at the input holding the next-smallest symbol: a permutation, not a diagonal."),
    "induction": Task("induction", "decoder", 8, 12, "Continue a repeated sequence (causal decoder)",
                      "An induction head forms: in the second copy each token looks at the token just after "
                      "its earlier occurrence (a stripe one step right of the offset diagonal), helped by a "
                      "previous-token head in the first layer."),
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise BadInput(f"Unknown task {name!r}; choose one of {', '.join(TASKS)}.") from None
