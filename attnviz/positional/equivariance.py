"""Why positions: a small seeded attention layer is permutation-equivariant until positions are added."""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

import numpy as np

from attnviz.attention import scaled_dot_product
from attnviz.errors import BadInput
from attnviz.positional.rope import apply_rope
from attnviz.positional.sinusoidal import sinusoidal
from attnviz.units import count_text

SCHEMES = ("none", "sinusoidal", "rope")  # what the demo layer adds: nothing, PE to the input, RoPE on q/k
MAX_WORDS = 64
D_MODEL = 16  # width of the demo layer: small enough to print, large enough to be generic
TOLERANCE = 1e-9  # float64: differences below this count as "exactly permuted"


def words(text: str) -> list[str]:
    """Split a sentence into word and punctuation tokens (the demo's own tiny tokenizer)."""
    return re.findall(r"\w+|[^\w\s]", text or "")


def token_embedding(token: str, d_model: int = D_MODEL, seed: int = 0) -> np.ndarray:
    """(d_model,) a fixed random vector per token string: equal tokens get equal vectors."""
    rng = np.random.default_rng([zlib.crc32(token.lower().encode()), seed])
    return rng.standard_normal(d_model)


@dataclass(frozen=True)
class EquivarianceReport:
    tokens: tuple[str, ...]  # the sentence, in order
    perm: np.ndarray  # (n,) shuffled[i] = tokens[perm[i]]
    scheme: str  # one of SCHEMES
    weights: np.ndarray  # (n, n) attention of the original order (query, key)
    weights_shuffled: np.ndarray  # (n, n) attention of the shuffled order
    outputs: np.ndarray  # (n, d_model) layer outputs, original order
    outputs_shuffled: np.ndarray  # (n, d_model) layer outputs, shuffled order
    attention_error: float  # max |W_shuffled[i, j] - W[perm[i], perm[j]]|
    output_error: float  # max |Y_shuffled[i] - Y[perm[i]]|
    pooled_error: float  # max |mean_i Y_shuffled - mean_i Y|: the "sentence vector" change

    @property
    def shuffled_tokens(self) -> tuple[str, ...]:
        return tuple(self.tokens[i] for i in self.perm)

    @property
    def weights_permuted(self) -> np.ndarray:
        """(n, n) the original attention with rows and columns put in the shuffled order."""
        return self.weights[np.ix_(self.perm, self.perm)]

    @property
    def equivariant(self) -> bool:
        """True when shuffling the tokens just shuffled the attention and the outputs."""
        return self.attention_error < TOLERANCE and self.output_error < TOLERANCE


def attention_layer(x: np.ndarray, scheme: str = "none", seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One seeded single-head self-attention layer. x: (n, d_model) token embeddings.

    scheme "sinusoidal" adds sinusoidal PE to x first; "rope" rotates q and k by position.
    Returns (outputs (n, d_model), weights (n, n)).
    """
    if scheme not in SCHEMES:
        raise BadInput(f"Unknown position scheme {scheme!r}; choose one of {', '.join(SCHEMES)}.")
    n, d = x.shape
    rng = np.random.default_rng([7, seed])
    w_q, w_k, w_v = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    if scheme == "sinusoidal":
        x = x + sinusoidal(n, d)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (n, d) each
    if scheme == "rope":
        q, k = apply_rope(q, np.arange(n)), apply_rope(k, np.arange(n))
    out, weights = scaled_dot_product(q, k, v)
    return out, weights


def permutation_demo(text: str, scheme: str = "none", perm=None, seed: int = 0) -> EquivarianceReport:
    """Run the demo layer on a sentence and on a shuffle of its tokens, and compare.

    perm: (n,) the new order (shuffled[i] = tokens[perm[i]]); None draws a seeded shuffle that
    moves at least one token. Without positions the attention and outputs are the original
    ones permuted (errors ~1e-16); with sinusoidal PE or RoPE they are not.
    """
    tokens = words(text)
    if len(tokens) < 2:
        raise BadInput("Type a sentence of at least two words: one token has nothing to be shuffled with.")
    if len(tokens) > MAX_WORDS:
        raise BadInput(f"The demo takes at most {count_text(MAX_WORDS)} words; the sentence has {len(tokens)}.")
    n = len(tokens)
    if perm is None:
        rng = np.random.default_rng(seed)
        perm = rng.permutation(n)
        while np.array_equal(perm, np.arange(n)):
            perm = rng.permutation(n)
    perm = np.asarray(perm)
    if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
        raise BadInput(f"The new order must be a permutation of 0..{n - 1}.")
    x = np.stack([token_embedding(t, seed=seed) for t in tokens])  # (n, d_model)
    y, w = attention_layer(x, scheme, seed)
    y_s, w_s = attention_layer(x[perm], scheme, seed)
    return EquivarianceReport(
        tokens=tuple(tokens), perm=perm, scheme=scheme, weights=w, weights_shuffled=w_s,
        outputs=y, outputs_shuffled=y_s,
        attention_error=float(np.max(np.abs(w_s - w[np.ix_(perm, perm)]))),
        output_error=float(np.max(np.abs(y_s - y[perm]))),
        pooled_error=float(np.max(np.abs(y_s.mean(axis=0) - y.mean(axis=0)))),
    )
