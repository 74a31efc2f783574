"""Top attention pairs of one head over several sentences."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.metrics.top_pairs import offset_counts, top_pairs

A = ("[CLS]", "the", "cat", "sat", "[SEP]")
B = ("[CLS]", "a", "dog", "[SEP]")
SA = np.array([1, 0, 0, 0, 1], bool)
SB = np.array([1, 0, 0, 1], bool)


def _prev(n):
    m = np.full((n, n), 0.01)
    for i in range(1, n):
        m[i, i - 1] = 0.9
    return m


def test_largest_weights_first_across_sentences_with_context():
    ma, mb = _prev(5), _prev(4)
    ma[3, 2] = 0.95  # "sat" -> "cat" is the strongest pair
    pairs = top_pairs([(ma, A, SA), (mb, B, SB)], k=3)
    assert [(p.sentence, p.query_token, p.key_token) for p in pairs] == [(0, "sat", "cat"), (0, "cat", "the"),
                                                                         (1, "dog", "a")]
    assert [p.weight for p in pairs] == pytest.approx([0.95, 0.9, 0.9])
    assert pairs[0].context == "[CLS] the [[cat]] «sat» [SEP]"
    assert offset_counts(pairs) == {-1: 3}


def test_special_and_self_filters():
    m = np.eye(5) * 0.5 + 0.1
    m[:, 0] = 0.99  # everyone on [CLS]
    pairs = top_pairs([(m, A, SA)], k=50, skip_special=False)
    assert pairs[0].key_token == "[CLS]" and len(pairs) == 25
    kept = top_pairs([(m, A, SA)], k=50)
    assert all(p.query not in (0, 4) and p.key not in (0, 4) for p in kept) and len(kept) == 9
    assert kept[0].query == kept[0].key  # the diagonal 0.6 wins
    no_self = top_pairs([(m, A, SA)], k=50, skip_self=True)
    assert len(no_self) == 6 and all(p.query != p.key for p in no_self)
    assert no_self[0].context.count("«") == 1


def test_long_context_is_cut_and_bad_input():
    tokens = tuple(f"w{i}" for i in range(30))
    m = np.zeros((30, 30))
    m[15, 14] = 1.0
    (p,) = top_pairs([(m, tokens, np.zeros(30, bool))], k=1, context_width=2)
    assert p.context == "… w12 w13 [[w14]] «w15» w16 w17 …"
    with pytest.raises(BadInput):
        top_pairs([(m, tokens[:5], np.zeros(5, bool))])
    with pytest.raises(BadInput):
        top_pairs([(m, tokens, np.zeros(30, bool))], k=0)
