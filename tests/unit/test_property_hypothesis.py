"""Property test: 1,000 random texts (any Unicode, up to 5,000 characters) through tokenisation,
extraction and the head metrics of a tiny random BERT; only blank text may fail, with BadInput."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnviz.errors import BadInput
from attnviz.extract import clean_text, extract
from attnviz.metrics import head_entropy, result_role_scores, rollout
from attnviz.metrics.analysis import analyse
from attnviz.metrics.entropy import result_masks
from tests.tiny_models import tiny_loaded

MAX_CHARS = 5_000
# Characters that have broken text pipelines before: controls, format marks (ZWJ, BOM, bidi
# overrides), right-to-left scripts, combining marks, emoji with modifiers, odd whitespace.
AWKWARD = (
    "\x00", "\x07", "\x1b", "\x7f", "\x85", "\r", "\n", "\t", "\x0b", "\x0c", " ", "\u00a0", "\u2028",
    "\u2029", "\u3000", "\u200b", "\u200d", "\ufeff", "\u202e", "\u2066", "\u0301", "\u0300\u0300",
    "שלום", "مرحبا", "ﷺ", "😀", "👩🏽‍💻", "🇩🇪", "\U0001f3f3\ufe0f\u200d\U0001f308", "𝔘𝔫𝔦",
    "漢字", "ｶﾀｶﾅ", "ﬁ", "[CLS]", "[SEP]", "[MASK]", "[PAD]", "##", "<s>", "\ufffd", "\U000e0041",
    "\uf8ff", "a", "The cat", ".", ",", "!?", "0123",
)

short_texts = st.text(max_size=200)  # any Unicode except surrogates, incl. controls, emoji, RTL
awkward_texts = st.lists(st.sampled_from(AWKWARD), max_size=60).map("".join)
# long texts cheaply: a random chunk repeated up to MAX_CHARS characters
chunks = st.text(min_size=1, max_size=40) | st.lists(st.sampled_from(AWKWARD), min_size=1, max_size=20).map("".join)
long_texts = st.builds(lambda chunk, n: (chunk * n)[:MAX_CHARS], chunks, st.integers(1, MAX_CHARS))
blank_texts = st.lists(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2028\u3000\u200b\ufeff\x00\x1b"),
                       max_size=50).map("".join)
texts = st.one_of(short_texts, awkward_texts, long_texts, blank_texts)


@pytest.fixture(scope="module")
def tiny_bert():
    return tiny_loaded("bert")  # 2 layers x 4 heads, 64 positions, the packaged MiniLM tokenizer


def check_result(result, text):
    att = result.attention
    n = result.seq_len
    assert 2 <= n <= 64  # [CLS] ... [SEP], truncated to the tiny model's 64 positions
    assert att.shape == (2, 4, n, n)
    assert np.isfinite(att).all()
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-4)
    assert len(result.tokens) == n and all(isinstance(t, str) and t for t in result.tokens)
    assert result.truncation.n_tokens_kept == n <= result.truncation.n_tokens_requested

    ent = head_entropy(result)
    allowed, _ = result_masks(result)
    log_n = np.log(allowed.sum(-1))  # (query,) log of the number of keys each row may see
    assert np.isfinite(ent["nats"]).all()
    assert (ent["nats"] >= 0).all() and (ent["nats"] <= log_n + 1e-4).all()
    assert ((ent["normalised"] >= 0) & (ent["normalised"] <= 1)).all()

    rolled = rollout(att)
    assert rolled.shape == (2, n, n) and np.isfinite(rolled).all()
    np.testing.assert_allclose(rolled.sum(-1), 1.0, atol=1e-4)

    roles = result_role_scores(result).scores
    defined = roles[~np.isnan(roles)]
    assert defined.size and ((defined >= -1e-6) & (defined <= 1 + 1e-6)).all()

    both = analyse(result)  # the one-pass version the pages use must agree
    np.testing.assert_allclose(both.entropy["head_nats"], ent["head_nats"], atol=1e-5)
    np.testing.assert_allclose(both.rollout, rolled, atol=1e-5)
    np.testing.assert_allclose(both.roles.scores, roles, atol=1e-6)  # nan (undefined) in the same places


@settings(max_examples=1000, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.data_too_large])
@given(text=texts, pair=st.none() | short_texts)
def test_any_text_extracts_or_says_it_is_empty(tiny_bert, text, pair):
    assert len(text) <= MAX_CHARS
    tok = tiny_bert.tokenizer
    ids = tok(text, truncation=True, max_length=64)["input_ids"]  # tokenisation of the raw text
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    blank = not clean_text(text).strip()
    if blank:
        with pytest.raises(BadInput, match="empty"):
            extract(tiny_bert, text, pair)
        return
    result = extract(tiny_bert, text, pair)
    check_result(result, text)
