"""Induction and duplicate-token scores: constructed patterns, the repeated text, bad input."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.metrics.induction import copy_positions, induction_scores, repeated_text


def _pattern(n_words, target):
    """(1, 1, N, N) attention of [BOS] + two copies: second-copy row i puts all weight on target(i)."""
    size = 1 + 2 * n_words
    att = np.zeros((1, 1, size, size))
    att[0, 0, np.arange(size), np.arange(size)] = 1.0  # everything else attends to itself
    for k in range(n_words):
        i = 1 + n_words + k
        j = target(k)
        if j is not None:
            att[0, 0, i] = 0.0
            att[0, 0, i, j] = 1.0
    return att


def test_constructed_heads_score_one_for_their_own_pattern_only():
    n = 6
    first, second = np.arange(1, 1 + n), np.arange(1 + n, 1 + 2 * n)
    induction = _pattern(n, lambda k: 1 + k + 1 if k + 1 < n else None)  # the word after the first occurrence
    duplicate = _pattern(n, lambda k: 1 + k)  # the first occurrence itself
    s = induction_scores(induction, first, second)
    assert s["induction"][0, 0] == pytest.approx(1.0) and s["duplicate"][0, 0] == pytest.approx(0.0)
    s = induction_scores(duplicate, first, second)
    assert s["duplicate"][0, 0] == pytest.approx(1.0) and s["induction"][0, 0] == pytest.approx(0.0)
    diagonal = _pattern(n, lambda k: None)
    s = induction_scores(diagonal, first, second)
    assert s["induction"][0, 0] == 0.0 and s["duplicate"][0, 0] == 0.0
    half = 0.5 * induction + 0.5 * duplicate  # half of each row on each target
    s = induction_scores(half, first, second)
    assert s["induction"][0, 0] == pytest.approx(0.5) and s["duplicate"][0, 0] == pytest.approx(0.5)


def test_repeated_text_is_one_token_per_word_for_bert_and_reproducible(minilm):
    rt = repeated_text(minilm.tokenizer, 20, seed=3)
    assert rt == repeated_text(minilm.tokenizer, 20, seed=3)
    assert rt.words != repeated_text(minilm.tokenizer, 20, seed=4).words
    assert len(set(rt.words)) == 20 and rt.text.split() == list(rt.words) * 2
    ids = minilm.tokenizer(rt.text)["input_ids"]
    special = minilm.tokenizer(rt.text, return_special_tokens_mask=True)["special_tokens_mask"]
    first, second = copy_positions(ids, special, 20)
    assert first.tolist() == list(range(1, 21)) and second.tolist() == list(range(21, 41))
    assert [ids[i] for i in first] == [ids[i] for i in second]


def test_bad_input():
    from tests.tiny_models import minilm_tokenizer

    tok = minilm_tokenizer()
    with pytest.raises(BadInput, match="4 to 200 random words"):
        repeated_text(tok, 2)
    with pytest.raises(BadInput, match="one token per word"):
        copy_positions([101, 7, 8, 9, 102], [1, 0, 0, 0, 1], 2)
    with pytest.raises(BadInput, match="same length"):
        induction_scores(np.zeros((1, 1, 5, 5)), np.array([1, 2]), np.array([3]))


@pytest.mark.slow
def test_smollm2_has_induction_heads_and_minilm_does_not(minilm):
    """The known phenomenon, found: a causal LM has strong induction heads, a sentence-embedding
    BERT has none (but it does have a duplicate-token head)."""
    from attnviz.extract import extract
    from attnviz.models import load_model

    def scores(loaded):
        rt = repeated_text(loaded.tokenizer, 30, seed=0)
        r = extract(loaded, rt.text)
        return induction_scores(r.attention, *copy_positions(r.token_ids, r.special_mask, 30))

    smol, mini = scores(load_model("smollm2")), scores(minilm)
    assert smol["induction"].max() > 0.5
    assert mini["induction"].max() < 0.1 and mini["duplicate"].max() > 0.4
