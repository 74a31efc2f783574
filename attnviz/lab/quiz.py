"""Quick-check questions as data (the seeds' own and a few more), with an answer checker."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Question:
    key: str  # stable id, used for widget keys
    prompt: str  # the question
    choices: tuple[str, ...]  # the options shown
    answer: int  # index of the correct choice
    why: str  # explanation shown after answering
    source: str  # "seeds" (asked in the teaching texts) or "lab" (added here)


QUESTIONS: tuple[Question, ...] = (
    Question("sqrt_dk", "Why divide by √d_k in scaled dot-product attention?",
             ("To normalise the size of the output vectors",
              "To stop the softmax from saturating when d_k is large",
              "To make training faster"), 1,
             "With unit-variance entries, q·k has variance d_k. Dividing by √d_k brings it back to 1, "
             "so the softmax stays soft and its gradients do not vanish (see the 'Why √d_k' page).", "seeds"),
    Question("memory", "How does the memory of standard self-attention grow with the sequence length n?",
             ("O(n·d)", "O(n²)", "O(n log n)"), 1,
             "The weight matrix has one entry per (query, key) pair: n × n per head.", "seeds"),
    Question("positions", "Why do transformers need positional encodings?",
             ("To make the model run faster",
              "Self-attention is permutation-equivariant: without them it cannot tell positions apart",
              "To reduce memory use"), 1,
             "Shuffle the tokens and self-attention shuffles its outputs the same way; nothing in "
             "Q Kᵀ says which token came first.", "seeds"),
    Question("worked_row", "The scaled scores of a row are [0.5, 0.5, 1.0]. What is the first softmax weight?",
             ("0.2312", "0.2741", "0.3333", "0.5000"), 1,
             "e^0.5 = 1.6487 and e^1 = 2.7183; 1.6487 / (1.6487 + 1.6487 + 2.7183) = 0.2741. "
             "0.2312 is a wrong value that appears in a published worked example: it sums to 1 with the others but its ratio "
             "to the third weight is 0.43, not e^-0.5 = 0.61.", "lab"),
    Question("row_sum", "What does each row of an (unmasked) attention-weight matrix sum to?",
             ("d_k", "1", "The number of keys", "It depends on the values"), 1,
             "Each row is a softmax over the keys, a probability distribution.", "lab"),
    Question("temperature", "What does softmax(Q Kᵀ / T) become as T → 0?",
             ("Uniform weights", "A hard lookup: all weight on the highest-scoring key (ties share it)",
              "All zeros", "It does not change"), 1,
             "Dividing by a tiny T stretches the gaps between scores, so the largest one takes everything.", "lab"),
    Question("causal", "With a causal mask, which keys j may query i attend to?",
             ("j ≥ i", "j ≤ i", "Only j = i", "All j"), 1,
             "Position i may see itself and everything before it, never the future.", "lab"),
    Question("divisible", "d_model = 256 and n_heads = 6. What happens?",
             ("Each head gets 42 dimensions", "Each head gets 42.67 dimensions",
              "An error: 256 is not divisible by 6"), 2,
             "Heads split d_model into equal integer slices; 256 / 6 is not an integer.", "lab"),
    Question("cross", "In encoder-decoder cross-attention, where do the queries come from?",
             ("The encoder", "The decoder", "Both"), 1,
             "The decoder asks (queries); the encoder's states are the keys and values it reads.", "lab"),
    Question("kv_heads", "SmolLM2-135M attends with 9 query heads and 3 KV heads per layer. "
             "How many heads' keys and values does its KV cache store per layer?",
             ("9", "3", "1", "12"), 1,
             "Only KV heads are cached; 3 query heads share each KV head (grouped-query attention).", "lab"),
    Question("mha_params", "Compared with one head of width d_model, multi-head attention with h heads "
             "of width d_model / h has how many projection parameters?",
             ("The same (4 d_model² without biases)", "h times more", "h times fewer"), 0,
             "W_Q, W_K, W_V and W_O are d_model × d_model either way; heads only slice them.", "lab"),
    Question("dot_params", "Which alignment score has no learned parameters?",
             ("Bahdanau additive", "Luong general", "Luong dot"), 2,
             "sᵀh needs nothing learned, but it requires decoder and encoder states of equal width.", "lab"),
)


def check(question: Question, choice: int | None) -> bool | None:
    """True/False for an answered question, None when nothing is chosen yet."""
    if choice is None:
        return None
    return int(choice) == question.answer


def score(answers: dict[str, int | None]) -> tuple[int, int]:
    """(correct, answered) over QUESTIONS for answers keyed by Question.key."""
    results = [check(q, answers.get(q.key)) for q in QUESTIONS]
    return sum(r is True for r in results), sum(r is not None for r in results)


def arrange(seed: int, questions: tuple[Question, ...] = QUESTIONS) -> dict[str, tuple[int, ...]]:
    """The order to show each question's choices in: key -> original choice indices, first shown first.

    Deterministic for a seed. The correct answers are spread over the positions: each question puts
    its answer at a position used least so far by the earlier questions (ties drawn at random), and
    the other choices fill the remaining positions in random order."""
    rng = np.random.default_rng(seed)
    used = np.zeros(max(len(q.choices) for q in questions), dtype=int)
    out = {}
    for q in questions:
        n = len(q.choices)
        fewest = np.flatnonzero(used[:n] == used[:n].min())
        at = int(rng.choice(fewest))
        used[at] += 1
        others = [i for i in rng.permutation(n).tolist() if i != q.answer]
        order = others[:at] + [q.answer] + others[at:]
        out[q.key] = tuple(int(i) for i in order)
    return out
