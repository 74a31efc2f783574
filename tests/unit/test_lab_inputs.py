"""The lab's edge cases: typed temperatures, the KV cache's steps, the quiz order."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.lab import lookup as lk


@pytest.mark.parametrize("typed, expected, clamped", [
    ("0.3", 0.3, False), (" 5 ", 5.0, False), ("1000", 1000.0, False), ("0.001", 0.001, False),
    ("1e9", lk.T_MAX, True), ("inf", lk.T_MAX, True), ("1e400", lk.T_MAX, True),
    ("1e-9", lk.T_MIN, True), ("1e-300", lk.T_MIN, True),
])
def test_read_temperature_clamps_into_range(typed, expected, clamped):
    t, note = lk.read_temperature(typed)
    assert t == expected and np.isfinite(t)
    assert (note is not None) == clamped
    if clamped:
        assert typed.strip() in note and f"{expected:g}" in note


@pytest.mark.parametrize("typed, fragment", [("0", "greater than 0"), ("-2", "greater than 0"),
                                             ("nan", "greater than 0"), ("abc", "not a number"),
                                             ("x" * 5000, "not a number")])
def test_read_temperature_refuses_with_a_sentence(typed, fragment):
    with pytest.raises(BadInput, match=fragment) as e:
        lk.read_temperature(typed)
    assert len(str(e.value)) < 300  # a 5,000-character paste is not echoed back whole


def test_a_matrix_entry_too_large_for_finite_scores_is_refused_by_name():
    """The steps lab's Q of 1e308 made its scores inf and its weights nan, and 1e200 filled the cells with 200
    digits: an entry beyond MAX_ENTRY either way is refused, naming where it is; MAX_ENTRY itself is kept."""
    from attnviz.lab.matrix_text import MAX_ENTRY, parse_matrix
    from attnviz.attention import attention_steps

    for bad in ("1e308", "-1e200", "1000.5"):
        with pytest.raises(BadInput, match=r"Q, row 2, entry 3: .* larger than the lab takes \(at most 1,000"):
            parse_matrix(f"1 0 0 0\n0 0 {bad} 0", "Q")
    q = parse_matrix(f"{MAX_ENTRY} {MAX_ENTRY} {MAX_ENTRY} {MAX_ENTRY}\n0 0 0 0", "Q")
    s = attention_steps(q, np.full((32, 4), -float(MAX_ENTRY)), np.ones((32, 4)))
    assert np.isfinite(s.scores).all() and np.isfinite(s.weights).all()
    np.testing.assert_allclose(s.weights.sum(axis=1), 1.0)


# ------------------------------------------------------------------------------ KV cache
def test_kv_cache_step_appends_the_newest_tokens_key():
    """Step t's cache: `cache_before` keys, then one new column, the key of the newest token of
    text_so_far, equal to the key a full forward pass without a cache computes for that token."""
    from attnviz.lab import kv_cache as kv

    cfg = kv.TinyConfig()
    prompt = "the cat sat on the"
    g = kv.generate(prompt, 5, cfg)
    w = kv.tiny_weights(cfg)
    for t, step in enumerate(g.steps, start=1):
        assert step.cache_before == len(prompt) + t - 2  # step 1: 17 before, the prompt's last character is new
        assert step.new_token == step.text_so_far[-1]
        keys = kv.keys_after_step(g, t)
        assert keys.shape == (cfg.n_kv_heads, step.cache_before + 1, cfg.d_head)
        _, full = kv.forward(kv.encode(step.text_so_far), w, cfg)  # no cache: everything recomputed
        np.testing.assert_allclose(keys, full[0][0], atol=1e-10)
    assert g.steps[0].cache_before == 17
    with pytest.raises(BadInput, match="from 1 to 5"):
        kv.keys_after_step(g, 6)


# ------------------------------------------------------------------------------ quiz
def test_quiz_arrangement_spreads_the_correct_answers():
    from collections import Counter

    from attnviz.lab.quiz import QUESTIONS, arrange

    original = Counter(q.answer for q in QUESTIONS)
    assert original.most_common(1)[0][1] > len(QUESTIONS) / 2  # the data's own order: mostly option 2
    orders = {}
    for seed in range(25):
        order = arrange(seed)
        assert order == arrange(seed)  # deterministic for a seed
        positions = Counter()
        for q in QUESTIONS:
            shown = order[q.key]
            assert sorted(shown) == list(range(len(q.choices)))  # every choice once
            positions[shown.index(q.answer)] += 1
        # 12 questions over 3 or 4 positions: no position holds more than 4 correct answers
        assert max(positions.values()) <= 4 and set(positions) >= {0, 1, 2}, (seed, positions)
        orders[seed] = tuple(order[q.key] for q in QUESTIONS)
    assert len(set(orders.values())) > 20  # seeds give different orders
