"""Induction and duplicate-token heads, scored on a random word sequence repeated twice.

On "w1 ... wn w1 ... wn" a token in the second copy can be predicted by finding its earlier
occurrence and copying what came next. An **induction head** (Olsson et al. 2022) does the looking:
from the second copy's token i it attends to the token just after i's first occurrence. A
**duplicate-token head** attends to the first occurrence itself. Random words make these patterns
the only way to do better than chance, so the scores isolate them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput

MIN_WORDS, MAX_WORDS = 4, 200


@dataclass(frozen=True)
class RepeatedText:
    """A random word sequence repeated twice, as text the sidebar's model reads."""

    text: str  # "w1 ... wn w1 ... wn"
    words: tuple  # the n words, each one token for this tokenizer
    seed: int  # the random seed that chose them


def _plain_words(tokenizer) -> list[str]:
    """Lower-case alphabetic vocabulary entries of 3 to 9 letters (word-start pieces only), sorted."""
    words = set()
    for piece in tokenizer.get_vocab():
        word = piece[1:] if piece[:1] in ("Ġ", "▁") else piece  # GPT-2/Llama mark a leading space
        if 3 <= len(word) <= 9 and word.isascii() and word.isalpha() and word.islower():
            words.add(word)
    return sorted(words)


def repeated_text(tokenizer, n_words: int, seed: int = 0) -> RepeatedText:
    """n_words distinct random words, each a single token for this tokenizer with and without a
    leading space (so the text's first word splits like its repeat), the sequence repeated."""
    if not MIN_WORDS <= int(n_words) <= MAX_WORDS:
        raise BadInput(f"Use {MIN_WORDS} to {MAX_WORDS} random words (it was {n_words}).")
    pool = _plain_words(tokenizer)
    rng = np.random.default_rng(seed)
    chosen: list[str] = []
    for i in rng.permutation(len(pool)):
        word = pool[i]
        pieces = tokenizer([word, " " + word], add_special_tokens=False)["input_ids"]
        if len(pieces[0]) == 1 and len(pieces[1]) == 1:
            chosen.append(word)
            if len(chosen) == n_words:
                break
    if len(chosen) < n_words:
        raise BadInput(f"This tokenizer has only {len(chosen)} plain single-token words; use fewer.")
    return RepeatedText(text=" ".join(chosen + chosen), words=tuple(chosen), seed=seed)


def copy_positions(token_ids, special_mask, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, second): positions of the two copies in the model's input, from its token ids.

    The content (non-special) tokens must be 2 * n_words long, one per word."""
    ids = np.asarray(token_ids)
    content = np.flatnonzero(~np.asarray(special_mask, dtype=bool))
    if content.size != 2 * n_words:
        raise BadInput("The repeated sequence did not tokenise into one token per word, so the induction "
                       "score cannot be read from it.")
    return content[:n_words], content[n_words:]


def induction_scores(attention: np.ndarray, first: np.ndarray, second: np.ndarray) -> dict[str, np.ndarray]:
    """Per-head scores (layer, head) from attention (layer, head, n, n) on a repeated sequence.

    The second copy's k-th word, at position second[k], first occurred at first[k], and the word that
    followed it then is at first[k + 1].
    induction: mean over k = 0..n-2 of the weight second[k] -> first[k + 1] (the word that came next);
    duplicate: mean over k = 0..n-1 of the weight second[k] -> first[k] (the same word).
    """
    att = np.asarray(attention)
    n = len(first)
    if len(second) != n or n < 2:
        raise BadInput("The two copies must have the same length, at least 2 words.")
    induction = att[:, :, second[:-1], first[1:]].mean(axis=-1)
    duplicate = att[:, :, second, first].mean(axis=-1)
    return {"induction": induction.astype(np.float32), "duplicate": duplicate.astype(np.float32)}
