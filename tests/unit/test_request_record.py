"""The Request record (model id, text, pair, max tokens) is the cache key of a result: equal requests share one
computation, a request differing in any field gets its own, and nobody can change a request after the fact."""
from __future__ import annotations

import dataclasses

import pytest

from attnviz.types import Request


def test_a_request_is_frozen_and_compares_by_its_fields():
    a = Request("minilm", "The cat sat.", None, 64)
    assert a == Request("minilm", "The cat sat.", None, 64) and hash(a) == hash(Request("minilm", "The cat sat.", None, 64))
    assert a != Request("minilm", "The cat sat.", "It slept.", 64)
    assert a.with_limit(None) == Request("minilm", "The cat sat.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.text = "another"


def test_the_result_cache_runs_once_per_distinct_request(monkeypatch):
    from attnviz.ui import cache

    calls = []

    def fake_extract(loaded, text, pair, max_tokens=None):
        calls.append((loaded, text, pair, max_tokens))
        return len(calls)

    monkeypatch.setattr(cache, "extract", fake_extract)
    monkeypatch.setattr(cache, "get_model", lambda key: f"loaded {key}")
    cache.get_result.clear()
    try:
        first = cache.get_result(Request("m", "a b c"))
        assert cache.get_result(Request("m", "a b c")) == first == 1  # the same request: no second run
        assert cache.get_result(Request("m", "a b c", "d e")) == 2
        assert cache.get_result(Request("m", "a b c", None, 8)) == 3
        assert cache.get_result(Request("other", "a b c")) == 4
        assert calls == [("loaded m", "a b c", None, None), ("loaded m", "a b c", "d e", None),
                         ("loaded m", "a b c", None, 8), ("loaded other", "a b c", None, None)]
    finally:
        cache.get_result.clear()
