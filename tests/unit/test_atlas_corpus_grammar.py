"""The default atlas corpus's generated sentences: grammatical English (articles agree, verbs take their forms),
gold parses that are trees, varied structure (relative clauses, passives, copulas, fronted and attached
prepositional phrases, two objects, adjectives at several distances), so that no fixed offset finds the head of an
adjective or a subject: the syntax table can then tell heads that follow syntax from position heuristics."""
import numpy as np
import pytest

from attnviz.atlas import corpus as cp
from attnviz.atlas import syntax as S


@pytest.fixture(scope="module")
def generated():
    return [p for p in cp.default_corpus().parses if p is not None]


def _best_offsets(parses) -> dict[str, tuple[int, float, int]]:
    hits = S.sum_offset_hits([S.offset_hits(p) for p in parses])
    out = {}
    for rel, h, n in zip(hits.relations, hits.hits, hits.counts):
        k = int(np.argmax(h))
        out[rel] = (hits.offsets[k], float(h[k]) / n, int(n))
    return out


def test_no_fixed_offset_finds_the_heads_of_adjectives_or_subjects(generated):
    best = _best_offsets(generated)
    for rel in ("amod", "nsubj"):
        offset, accuracy, arcs = best[rel]
        assert arcs >= 150, (rel, arcs)
        assert accuracy < 0.9, f"{rel}: offset {offset:+d} finds {accuracy:.0%} of {arcs} heads"
    # adjectives sit one, two or three words before their noun; subjects one to many words before their verb
    for rel, distances in (("amod", {1, 2, 3}), ("nsubj", {1, 2, 3, 4, 5})):
        seen = {h - i for p in generated for i, (h, r) in enumerate(zip(p.heads, p.deprels)) if r == rel}
        assert distances <= seen, (rel, sorted(seen))


def test_the_grammar_varies_its_structure(generated):
    relations = {r for p in generated for r in p.deprels}
    assert {"acl:relcl", "nsubj:pass", "aux:pass", "aux", "cop", "advmod", "nmod", "obl", "case", "iobj", "obj",
            "compound", "conj", "cc", "amod", "det", "nsubj", "punct", "root"} <= relations
    fronted = [p for p in generated if p.words[1:].count(",") and p.deprels[0] == "case"]
    assert len(fronted) >= 5  # "Behind the station, ..."
    assert len({len(p.words) for p in generated}) >= 10


def test_generated_sentences_are_grammatical_and_their_parses_are_trees(generated):
    for p in generated:
        text = p.text
        assert text[0].isupper() and text.endswith(".") and " ." not in text and " ," not in text, text
        assert all(text[a:b] == w for (a, b), w in zip(p.spans, p.words))
        for w, nxt in zip(p.words, p.words[1:]):
            if w.lower() == "a":
                assert nxt[0] not in "aeiou", text
            if w.lower() == "an":
                assert nxt[0] in "aeiou", text
        for i, (w, rel) in enumerate(zip(p.words, p.deprels)):
            if rel == "aux":  # has/had + participle, will/could/would + base form
                verb = p.words[p.heads[i]]
                forms = {f[1] for f in cp.VERBS_PEOPLE + cp.VERBS_THINGS} | {f[0] for f in cp.VERBS_GIVE.values()} \
                    if w in ("has", "had") else {f[2] for f in cp.VERBS_PEOPLE + cp.VERBS_THINGS} | \
                    {f[1] for f in cp.VERBS_GIVE.values()}
                assert verb in forms, text
        assert p.heads.count(-1) == 1 and p.deprels[p.heads.index(-1)] == "root"
        for start in range(len(p.words)):  # every word reaches the root
            seen, w = set(), start
            while p.heads[w] != -1:
                assert w not in seen, (text, start)
                seen.add(w)
                w = p.heads[w]


def test_the_corpus_is_the_same_every_time():
    a, b = cp.grammar_corpus(30), cp.grammar_corpus(30)
    assert [p.text for p in a] == [p.text for p in b] and [p.heads for p in a] == [p.heads for p in b]
    assert len({p.text for p in cp.grammar_corpus(200)}) >= 195  # hardly a sentence twice
