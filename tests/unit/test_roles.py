"""Role scores on constructed attention patterns, averaging, and the strongest role."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.metrics.roles import (ROLE_KEYS, RoleScores, average_scores, is_punctuation, role_scores,
                                   strongest_role, top_heads)

TOKENS = ("[CLS]", "the", "cat", "sat", ".", "[SEP]")
SPECIAL = np.array([True, False, False, False, False, True])
N = len(TOKENS)


def _one(m):
    return np.asarray(m, dtype=np.float32)[None, None]


def test_pure_diagonal_scores_self_one_previous_zero():
    s = role_scores(_one(np.eye(N)), TOKENS, SPECIAL)
    assert s["self"][0, 0] == pytest.approx(1.0)
    assert s["prev"][0, 0] == pytest.approx(0.0)
    assert s["next"][0, 0] == pytest.approx(0.0)
    assert s["broad"][0, 0] == pytest.approx(0.0, abs=1e-6)
    assert s["cls"][0, 0] == pytest.approx(1 / N)  # only row 0 puts weight on [CLS]


def test_previous_and_next_token_heads():
    prev = np.eye(N, k=-1)
    prev[0, 0] = 1.0
    s = role_scores(_one(prev), TOKENS, SPECIAL)
    assert s["prev"][0, 0] == pytest.approx(1.0)
    assert s["self"][0, 0] == pytest.approx(1 / N)
    nxt = np.eye(N, k=1)
    nxt[-1, -1] = 1.0
    s = role_scores(_one(nxt), TOKENS, SPECIAL)
    assert s["next"][0, 0] == pytest.approx(1.0)
    assert s["prev"][0, 0] == pytest.approx(0.0)


def test_cls_sep_punct_first_and_broad():
    cls = np.zeros((N, N))
    cls[:, 0] = 1
    s = role_scores(_one(cls), TOKENS, SPECIAL)
    assert s["cls"][0, 0] == pytest.approx(1.0) and s["first"][0, 0] == pytest.approx(1.0)
    sep = np.zeros((N, N))
    sep[:, 5] = 1
    s = role_scores(_one(sep), TOKENS, SPECIAL)
    assert s["sep"][0, 0] == pytest.approx(1.0) and s["cls"][0, 0] == pytest.approx(0.0)
    half = np.zeros((N, N))
    half[:, 4] = 0.5  # half of every row on "."
    half[:, 2] = 0.5
    s = role_scores(_one(half), TOKENS, SPECIAL)
    assert s["punct"][0, 0] == pytest.approx(0.5)
    # two keys of six: effective number e^H = 2, broad = (2 - 1) / (6 - 1)
    assert s["broad"][0, 0] == pytest.approx(0.2, abs=1e-5)
    s = role_scores(_one(np.full((N, N), 1 / N)), TOKENS, SPECIAL)
    assert s["broad"][0, 0] == pytest.approx(1.0, abs=1e-5)
    assert s["sep"][0, 0] == pytest.approx(1 / N)


def test_undefined_roles_are_nan():
    tokens = ("a", "b", "c")
    s = role_scores(_one(np.eye(3)), tokens, np.zeros(3, dtype=bool), causal=True)
    for role in ("cls", "sep", "punct", "next"):
        assert np.isnan(s[role]).all(), role
    assert s["self"][0, 0] == pytest.approx(1.0)


def test_padding_rows_excluded():
    tokens = ("[CLS]", "a", "[SEP]", "[PAD]")
    special = np.array([True, False, True, True])
    m = np.eye(4)
    m[3] = [1, 0, 0, 0]  # the padding row attends to [CLS]; it must not count
    s = role_scores(_one(m), tokens, special)
    assert s["self"][0, 0] == pytest.approx(1.0)
    assert s["cls"][0, 0] == pytest.approx(1 / 3)
    assert s["sep"][0, 0] == pytest.approx(1 / 3)  # [PAD] is not a separator


def test_average_strongest_and_top():
    a = np.zeros((len(ROLE_KEYS), 1, 2), dtype=np.float32)
    b = np.zeros_like(a)
    a[ROLE_KEYS.index("prev"), 0, 0] = 0.9
    b[ROLE_KEYS.index("prev"), 0, 0] = 0.5
    a[ROLE_KEYS.index("punct")] = np.nan  # undefined in the first input
    b[ROLE_KEYS.index("punct"), 0, 1] = 0.6
    avg = average_scores([RoleScores(a), RoleScores(b)])
    assert avg.n_inputs == 2
    assert avg["prev"][0, 0] == pytest.approx(0.7)
    assert avg["punct"][0, 1] == pytest.approx(0.6)  # averaged over the input where it is defined
    best, value = strongest_role(avg, min_score=0.65)
    assert best[0, 0] == ROLE_KEYS.index("prev") and value[0, 0] == pytest.approx(0.7)
    assert best[0, 1] == -1  # 0.6 is below the threshold: no clear role
    assert top_heads(avg, "prev", k=1) == [(0, 0, pytest.approx(0.7))]
    with pytest.raises(BadInput):
        average_scores([])


def test_punctuation_detection():
    assert is_punctuation(".") and is_punctuation("##,") and is_punctuation("...")
    assert not is_punctuation("cat") and not is_punctuation("a.")


def test_real_model_has_a_previous_token_head(minilm):
    from attnviz.extract import extract
    from attnviz.metrics.roles import result_role_scores

    result = extract(minilm, "The quick brown fox jumps over the lazy dog.")
    s = result_role_scores(result)
    assert s.scores.shape == (len(ROLE_KEYS), 6, 12)
    finite = s.scores[~np.isnan(s.scores)]
    assert finite.min() >= 0 and finite.max() <= 1 + 1e-5
    # BERT: [CLS] is the first token, so the two scores coincide
    np.testing.assert_allclose(s["cls"], s["first"])
    assert s["prev"].max() > 0.8  # MiniLM layer 0 has a strong previous-token head


def _head_by_rows(reader, m):
    """The plain definitions on one head's (query, key) matrix, row by row: the reference that
    RoleReader.layer's vectorised column means must match."""
    out = np.full(len(ROLE_KEYS), np.nan, dtype=np.float32)
    rows = m[reader.q]  # (valid query, key)
    out[ROLE_KEYS.index("first")] = rows[:, 0].mean()
    for i, cols in reader.col_groups:
        out[i] = rows[:, cols].sum(axis=1).mean()
    out[ROLE_KEYS.index("self")] = m[reader.q, reader.q].mean()
    if reader.qp.size:
        out[ROLE_KEYS.index("prev")] = m[reader.qp, reader.qp - 1].mean()
    if reader.qn.size:
        out[ROLE_KEYS.index("next")] = m[reader.qn, reader.qn + 1].mean()
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_layer_scores_equal_head_by_head_scores(minilm, causal):
    """RoleReader.layer (vectorised over heads) gives head()'s numbers for every head."""
    from attnviz.extract import extract
    from attnviz.metrics.roles import RoleReader

    r = extract(minilm, "The keys, said Mary, are on the table; John took them.")
    reader = RoleReader(r.tokens, r.special_mask, causal=causal)
    for layer in range(r.n_layers):
        together = reader.layer(r.attention[layer])
        one_by_one = np.stack([_head_by_rows(reader, r.attention[layer, h]) for h in range(r.n_heads)], axis=1)
        np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-7, equal_nan=True)


def test_layer_scores_skip_padding_rows_like_head_by_head():
    """With padding, layer() (weighted column means) still averages over the valid rows only,
    as head() does row by row; and a padded row's weights do not move any score."""
    from attnviz.metrics.roles import RoleReader

    tokens = ("[CLS]", "a", ",", "b", ".", "[SEP]", "[PAD]", "[PAD]")
    special = np.array([1, 0, 0, 0, 0, 1, 1, 1], dtype=bool)
    rng = np.random.default_rng(3)
    ms = rng.random((4, 8, 8)).astype(np.float32)
    ms /= ms.sum(axis=-1, keepdims=True)
    reader = RoleReader(tokens, special)
    together = reader.layer(ms)
    one_by_one = np.stack([_head_by_rows(reader, m) for m in ms], axis=1)
    np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-7, equal_nan=True)
    # by hand for head 0: first = mean of column 0 over rows 0..5; punct = columns 2 and 4
    assert together[ROLE_KEYS.index("first"), 0] == pytest.approx(ms[0, :6, 0].mean(), rel=1e-5)
    assert together[ROLE_KEYS.index("punct"), 0] == pytest.approx((ms[0, :6, 2] + ms[0, :6, 4]).mean(), rel=1e-5)
    moved = ms.copy()
    moved[:, 6:] = np.roll(moved[:, 6:], 3, axis=-1)  # change only the padded rows
    np.testing.assert_allclose(reader.layer(moved), together, rtol=1e-6, equal_nan=True)


def test_a_causal_model_is_shown_only_the_roles_it_can_have():
    from attnviz.metrics.roles import applicable_roles

    sink = np.zeros((N, N))
    sink[:, 0] = 1.0  # every row on the first position: an attention sink
    s = role_scores(_one(sink), TOKENS, SPECIAL, causal=True)  # [CLS] ... [SEP] around a causal model's input
    shown, left_out = applicable_roles(s, causal=True)
    assert shown == ("self", "prev", "broad", "punct", "first")
    assert set(left_out) == {"cls", "sep", "next"} and "next token" in left_out["next"]
    only = s.only(shown)
    assert only.roles == shown and only.scores.shape == (5, 1, 1)
    for role in shown:
        np.testing.assert_array_equal(only[role], s[role])
    # the strongest role of the restricted scores is read in their own order
    best, _ = strongest_role(only)
    assert shown[best[0, 0]] == "first"


def test_an_encoder_keeps_every_defined_role_and_names_the_undefined_ones():
    from attnviz.metrics.roles import applicable_roles

    s = role_scores(_one(np.full((4, 4), 0.25)), ("[CLS]", "a", "b", "[SEP]"), np.array([1, 0, 0, 1], bool))
    shown, left_out = applicable_roles(s, causal=False)
    assert shown == tuple(r for r in ROLE_KEYS if r != "punct")
    assert left_out == {"punct": "the inputs hold no punctuation"}
