"""The head atlas: corpus statistics equal the per-sentence functions averaged by hand, the
confidence interval agrees with a straightforward bootstrap, Jensen-Shannon sums agree with scipy, classical
MDS recovers a planar configuration, pattern scores and search equal a filter written by hand over the
stored pairs, a cancelled run resumes to the same store, the embedded engine (worker processes) writes the
same store as the inline one, and bad input gives plain messages."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnviz.atlas import corpus as cp
from attnviz.atlas.query import Atlas, Pattern, classical_mds
from attnviz.atlas.run import run_corpus
from attnviz.atlas.stats import STATS, head_stats, js_pair_sums
from attnviz.errors import BadInput
from attnviz.extract import extract
from attnviz.words.merge import merge_words

TEXTS = ["The cat sat on the mat because it was tired.", "Unbelievably, the tokenizer splits words.",
         "A dog chased a small cat near the old house.", "How many heads does BERT have?",
         "Paris is the capital of France.", "She gave him the book, and he read it twice."]


@pytest.fixture(scope="module")
def store(minilm, tmp_path_factory):
    folder = tmp_path_factory.mktemp("atlas") / "store"
    corpus = cp.from_text("\n".join(TEXTS).encode(), "six.txt")
    summary = run_corpus("minilm", corpus, folder, loaded=minilm, chunk_size=4)
    assert summary.n_done == len(TEXTS) and not summary.cancelled
    with Atlas(folder) as atlas:
        yield folder, atlas


def _parquet(folder, table):
    return pd.read_parquet(sorted((folder / "parts").glob(f"{table}-*.parquet"))).sort_values(
        [c for c in ("sid", "layer", "head", "q", "k", "a", "b") if c in pd.read_parquet(
            next((folder / "parts").glob(f"{table}-*.parquet"))).columns]).reset_index(drop=True)


def test_corpus_statistics_are_the_per_sentence_values_averaged(store, minilm):
    _, atlas = store
    per = np.stack([head_stats(merge_words(extract(minilm, t))) for t in TEXTS])  # (sentence, stat, layer, head)
    for i, stat in enumerate(STATS):
        m = atlas.stat_map(stat)
        vals = per[:, i]
        expected = np.nanmean(vals, axis=0) if np.isfinite(vals).any() else np.full(vals.shape[1:], np.nan)
        np.testing.assert_allclose(m["mean"], expected, atol=1e-5, err_msg=stat)
    # entropy by hand for one head: -Σ p log p of each word-level row, mean over rows, mean over sentences
    by_hand = []
    for t in TEXTS:
        a = merge_words(extract(minilm, t)).attention[2, 5].astype(np.float64)
        by_hand.append(np.mean([-(r[r > 0] * np.log(r[r > 0])).sum() for r in a]))
    assert atlas.stat_map("entropy")["mean"][2, 5] == pytest.approx(np.mean(by_hand), abs=1e-5)
    assert atlas.n_sentences == len(TEXTS) and (atlas.n_layers, atlas.n_heads) == (6, 12)


def test_confidence_interval_agrees_with_a_bootstrap(store):
    _, atlas = store
    m = atlas.stat_map("entropy")
    rng = np.random.default_rng(0)
    for layer, head in ((0, 0), (3, 7), (5, 11)):
        v = atlas.values("entropy", layer, head)
        means = [rng.choice(v, size=v.size, replace=True).mean() for _ in range(4000)]
        lo, hi = np.percentile(means, [2.5, 97.5])
        half = (m["hi"][layer, head] - m["lo"][layer, head]) / 2
        assert m["mean"][layer, head] == pytest.approx(v.mean(), abs=1e-6)
        # normal interval vs bootstrap percentile interval: same centre, widths within 35% (n = 6 sentences)
        assert abs((lo + hi) / 2 - v.mean()) < 0.35 * half
        assert 0.65 < (hi - lo) / (2 * half) < 1.35


def test_js_sums_equal_scipy():
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(1)
    maps = rng.dirichlet(np.ones(7), size=(5, 7))  # (head, row, key)
    maps[1, 2] = 0.0
    maps[1, 2, 3] = 1.0  # a one-hot row (zeros inside the logarithms)
    rows = np.array([0, 2, 5])
    got = js_pair_sums(maps, rows)
    a, b = np.triu_indices(5, 1)
    want = [sum(jensenshannon(maps[i, r], maps[j, r]) ** 2 for r in rows) for i, j in zip(a, b)]
    np.testing.assert_allclose(got, want, atol=2e-6)  # float32 products, float64 sums


def test_classical_mds_recovers_planar_points():
    pts = np.array([[0, 0], [3, 0], [0, 4], [2, 2], [-1, 1.5]], dtype=float)
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    xy = classical_mds(d)
    np.testing.assert_allclose(np.linalg.norm(xy[:, None] - xy[None], axis=-1), d, atol=1e-9)


def test_related_heads_and_map(store):
    _, atlas = store
    d = atlas.js_divergence()
    assert d.shape == (72, 72) and np.allclose(d, d.T) and np.all(np.diag(d) == 0) and d.max() < np.log(2) + 1e-9
    near = atlas.related(0, 2, 3)
    assert [r["js"] for r in near] == sorted(r["js"] for r in near)
    assert near[0]["js"] == pytest.approx(np.sort(np.delete(d[2], 2))[0])
    assert atlas.head_map().shape == (72, 2)


def test_pattern_scores_equal_a_hand_filter_of_the_stored_pairs(store, minilm):
    folder, atlas = store
    edges, sents = _parquet(folder, "edges"), _parquet(folder, "sentences")
    ranked = atlas.rank(Pattern("offset", offset=-1))
    by_hand = edges[edges.k - edges.q == -1].groupby(["layer", "head"]).w.sum() / sents.n_tokens.sum()
    best = by_hand.idxmax()
    assert (ranked[0]["layer"], ranked[0]["head"]) == best
    assert ranked[0]["score"] == pytest.approx(by_hand.max(), rel=1e-6)
    # the exact score over the full maps (every weight, not only the stored pairs) picks the same head, and
    # the stored pairs' score is below it by at most the weight they leave out
    maps = [merge_words(extract(minilm, t)).attention.astype(np.float64) for t in TEXTS]
    exact = sum(np.diagonal(m, offset=-1, axis1=2, axis2=3).sum(-1) for m in maps) / sum(m.shape[2] for m in maps)
    assert np.unravel_index(exact.argmax(), exact.shape) == best
    assert 0 <= exact[best] - ranked[0]["score"] <= 1 - ranked[0]["covered"] + 1e-6
    nothing = atlas.rank(Pattern("regex", q_regex="^zzzz$", k_regex=""))
    assert max(r["score"] for r in nothing) == 0.0


def test_a_pattern_is_queried_once_per_view_and_its_answer_copied(store, monkeypatch):
    """The second rank of a pattern asks DuckDB nothing and gives the same answer; changing an answer changes
    neither the view's nor a later caller's."""
    _, atlas = store
    p = Pattern("first")
    first = atlas.rank(p)
    queries = []
    run = atlas._x
    monkeypatch.setattr(atlas, "_x", lambda *a, **k: queries.append(a) or run(*a, **k))
    again = atlas.rank(p)
    assert again == first and not queries
    assert atlas.rank(p, top=3) == first[:3] and not queries
    again[0]["score"] = -1.0
    again.clear()
    assert atlas.rank(p) == first
    atlas.rank(Pattern("first", exclude_first=True))  # another pattern: queried
    assert queries


def test_search_equals_a_hand_filter(store):
    folder, atlas = store
    hits = atlas.search(0, 2, 0.3, "", r"^[a-z]+$")
    edges, toks = _parquet(folder, "edges"), _parquet(folder, "tokens")
    key = toks.set_index(["sid", "pos"]).token
    want = edges[(edges.layer == 0) & (edges["head"] == 2) & (edges.w > 0.3)]
    want = want[[bool(pd.Series([key[(s, k)]]).str.match(r"^[a-z]+$")[0]) for s, k in zip(want.sid, want.k)]]
    assert len(hits) == min(50, len(want)) > 0
    assert all(h["w"] > 0.3 and h["tokens"][h["k"]].isalpha() for h in hits)
    assert [h["w"] for h in hits] == sorted((h["w"] for h in hits), reverse=True)
    with pytest.raises(BadInput, match="not a valid regular expression"):
        atlas.search(0, 2, 0.3, "(unclosed", "")
    with pytest.raises(BadInput, match="layers 0-5"):
        atlas.search(9, 0)


def test_a_cancelled_run_resumes_to_the_same_store(store, minilm, tmp_path):
    folder, _ = store
    corpus = cp.from_text("\n".join(TEXTS).encode(), "six.txt")
    calls = []
    s1 = run_corpus("minilm", corpus, tmp_path / "s", loaded=minilm, chunk_size=4,
                    cancelled=lambda: calls.append(1) or len(calls) > 1)
    assert s1.cancelled and s1.n_done == 4
    (tmp_path / "s" / "parts" / "stats-000001.parquet.tmp").write_bytes(b"half-written")  # a crash mid-write
    s2 = run_corpus("minilm", corpus, tmp_path / "s", loaded=minilm, chunk_size=4)
    assert s2.n_resumed == 4 and s2.n_done == 6 and not list((tmp_path / "s" / "parts").glob("*.tmp"))
    for table in ("stats", "edges", "tokens", "sentences"):
        pd.testing.assert_frame_equal(_parquet(tmp_path / "s", table), _parquet(folder, table))
    with pytest.raises(BadInput, match="another model"):
        run_corpus("smollm2", corpus, tmp_path / "s", loaded=minilm, chunk_size=4)


def test_embedded_workers_write_the_same_store(store, tmp_path):
    folder, _ = store
    corpus = cp.from_text("\n".join(TEXTS).encode(), "six.txt")
    s = run_corpus("minilm", corpus, tmp_path / "e", engine="embedded", workers=2, chunk_size=4)
    assert s.n_done == 6
    for table in ("stats", "edges", "tokens", "sentences", "js"):
        pd.testing.assert_frame_equal(_parquet(tmp_path / "e", table), _parquet(folder, table), atol=1e-6)


def test_default_corpus_has_gold_structure():
    c = cp.default_corpus(30)
    gen = [p for p in c.parses if p is not None]
    assert len(gen) == 30 and len(c) == 30 + sum(p is None for p in c.parses)
    for p in gen:
        assert p.heads.count(-1) == 1 and p.deprels[p.heads.index(-1)] == "root"
        assert all(p.text[a:b] == w for (a, b), w in zip(p.spans, p.words))
        for i, (h, rel) in enumerate(zip(p.heads, p.deprels)):
            if rel in ("det", "amod"):
                assert p.upos[h] == "NOUN" and h > i  # determiners and adjectives precede their noun


def test_bad_corpora_give_plain_messages(monkeypatch):
    with pytest.raises(BadInput, match="holds no sentences"):
        cp.from_text(b"\n  \n\n")
    with pytest.raises(BadInput, match="not a text file"):
        cp.from_text(b"\x00\x01\x02binary")
    with pytest.raises(BadInput, match="not UTF-8"):
        cp.from_text(b"caf\xe9 au lait")
    monkeypatch.setattr(cp, "MAX_BYTES", 100)
    with pytest.raises(BadInput, match="files up to"):
        cp.from_text(b"word " * 50)
    monkeypatch.undo()
    long = cp.from_text(("x" * (cp.MAX_LINE_CHARS + 5) + "\nshort line").encode())
    assert long.n_cut == 1 and len(long.texts[0]) == cp.MAX_LINE_CHARS
    with pytest.raises(BadInput, match="no column 'body'"):
        cp.from_csv(b"title,text\na,b\n", "body")
    assert cp.from_csv(b"title,text\na,hello there\n", "text").texts == ("hello there",)
    with pytest.raises(BadInput, match="Line"):
        cp.from_conllu(b"1\tThe\tthe\tDET\n")
    with pytest.raises(BadInput, match="no atlas store"):
        Atlas("/nonexistent/atlas/folder")
