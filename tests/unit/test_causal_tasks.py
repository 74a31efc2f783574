"""The prompt pairs of causal analysis, read back token by token (MiniLM's WordPiece tokenizer, which the tiny
models share), the user's own pair and its plain errors, and clean accuracy on hand-made logits."""
import re

import numpy as np
import pytest

from attnviz.causal.tasks import NAMES, TASKS, Pair, clean_accuracy, task_set, user_pair
from attnviz.errors import BadInput
from tests.tiny_models import minilm_tokenizer


@pytest.fixture(scope="module")
def tok():
    return minilm_tokenizer()


def _word(tok, i):
    return tok.decode([i]).strip()


def test_every_task_has_several_pairs_of_equal_length(tok):
    for name in TASKS:
        found = task_set(tok, name, n_pairs=6)
        assert len(found.pairs) == 6, name
        for p in found.pairs:
            assert len(p.clean) == len(p.corrupted) == len(p.clean_tokens) and p.clean != p.corrupted
            assert p.answer != p.wrong
    with pytest.raises(BadInput, match="no task called 'sst2'"):
        task_set(tok, "sst2")


def test_indirect_object_pairs_replace_the_repeated_name(tok):
    names = {n.lower() for n in NAMES}
    for p in task_set(tok, "ioi").pairs:
        changed = [i for i in range(p.n) if p.clean[i] != p.corrupted[i]]
        assert len(changed) == 1
        a, b = _word(tok, p.answer), _word(tok, p.wrong)
        assert p.clean_tokens[1] == a and p.clean_tokens[3] == b  # "When Mary and John ..."
        assert p.clean_tokens[changed[0]] == b  # the repeated name ...
        third = p.corrupted_tokens[changed[0]]
        assert third in names and third not in (a, b)  # ... is a third name in the corrupted prompt


def test_induction_pairs_repeat_their_first_half(tok):
    for p in task_set(tok, "induction").pairs:
        first = p.clean[:10]
        assert p.clean[10:] == first[:5] and p.answer == first[5]  # the repeat's next token
        assert p.corrupted[10:] == first[:5] and p.wrong == p.corrupted[5]
        assert not set(p.corrupted[:10]) & set(first)


def test_year_pairs_compare_a_later_with_an_earlier_year(tok):
    for p in task_set(tok, "greater_than").pairs:
        clean = re.fullmatch(r"the war lasted from the year (\d\d)(\d\d) to the year (\d\d)", tok.decode(p.clean))
        corrupted = re.fullmatch(r"the war lasted from the year (\d\d)01 to the year (\d\d)", tok.decode(p.corrupted))
        assert clean[1] == clean[3] == corrupted[1] == corrupted[2]  # one century throughout
        start = int(clean[2])
        later, earlier = int(_word(tok, p.answer)), int(_word(tok, p.wrong))
        assert earlier < start % 100 < later


def test_factual_pairs_answer_with_the_landmarks_city(tok):
    cities = {"paris", "rome", "berlin", "london", "barcelona", "new", "athens", "moscow", "san", "beijing"}
    for p in task_set(tok, "factual").pairs:
        assert _word(tok, p.answer) in cities and _word(tok, p.wrong) in cities
        assert p.clean_tokens[-3:] == ("city", "of") or p.clean_tokens[-2:] == ("city", "of")


def test_the_users_pair_and_its_plain_errors(tok):
    p = user_pair(tok, "The cat sat on the", "The dog sat on the", " mat", " new york")
    assert (p.n, _word(tok, p.answer), _word(tok, p.wrong)) == (5, "mat", "new")
    assert "only its first token, 'new', is compared" in p.note and "wrong answer" in p.note
    with pytest.raises(BadInput, match=r"clean prompt has 3 tokens and the corrupted prompt 4.*Clean: the \| cat \| sat. "
                                       r"Corrupted: the \| big \| dog \| sat"):
        user_pair(tok, "The cat sat", "The big dog sat", " a", " b")
    with pytest.raises(BadInput, match="are the same"):
        user_pair(tok, "The cat sat", "The cat sat", " a", " b")
    with pytest.raises(BadInput, match="begin with the same token"):
        user_pair(tok, "The cat sat", "The dog sat", " new york", " new jersey")
    with pytest.raises(BadInput, match="wrong answer is empty"):
        user_pair(tok, "The cat sat", "The dog sat", " a", " ")
    with pytest.raises(ValueError):
        Pair((1, 2), (1,), 3, 4, "x")


def test_clean_accuracy_counts_the_pairs_whose_answer_wins():
    pairs = [Pair((1,), (2,), answer=0, wrong=1, label="a"), Pair((1,), (2,), answer=2, wrong=0, label="b"),
             Pair((1,), (2,), answer=1, wrong=2, label="c")]
    logits = np.array([[2.0, 1.0, 0.0], [0.5, 0.0, 0.4], [0.0, 3.0, -1.0]])
    assert clean_accuracy(logits, pairs) == pytest.approx(2 / 3)  # a: 2 > 1; b: 0.4 < 0.5; c: 3 > -1
