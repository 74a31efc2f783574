"""Corpora for the head atlas: a text file (one sentence or paragraph a line), a CSV column, a
CoNLL-U file (gold words and dependency heads), or the default corpus shipped with the app: the
example sentences plus sentences generated here from a small grammar whose structure (words, heads,
relations, parts of speech) is known exactly."""
from __future__ import annotations

import csv
import hashlib
import io
import random
from dataclasses import dataclass

from attnviz.errors import BadInput

MAX_BYTES = 200 * 1024 * 1024  # a corpus file larger than this is refused before reading it
MAX_LINE_CHARS = 20_000  # a longer line is cut (and counted); the model's own limit applies after


@dataclass(frozen=True)
class Corpus:
    """Sentences to run, with their dependency parses when known (gold from CoNLL-U or the grammar,
    silver from spaCy, None otherwise)."""

    name: str
    texts: tuple[str, ...]
    parses: tuple | None = None  # one attnviz.atlas.syntax.Parsed per text, or None
    n_cut: int = 0  # lines longer than MAX_LINE_CHARS that were cut
    parser: str = ""  # where the parses come from ("" without parses)

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def digest(self) -> str:
        """Identity of the corpus (its texts, in order) for a store's manifest."""
        h = hashlib.sha256()
        for t in self.texts:
            h.update(t.encode("utf-8") + b"\n")
        return h.hexdigest()[:16]


def _decode(data: bytes, what: str) -> str:
    if len(data) > MAX_BYTES:
        raise BadInput(f"The {what} is {len(data) / 2**20:.0f} MB; the atlas takes files up to "
                       f"{MAX_BYTES // 2**20} MB. Split it, or keep the first part.")
    if b"\x00" in data[:4096]:
        raise BadInput(f"The {what} is not a text file (it holds binary data).")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BadInput(f"The {what} is not UTF-8 text (byte {e.start} cannot be read).") from None


def _cut(lines) -> tuple[tuple[str, ...], int]:
    out, n_cut = [], 0
    for line in lines:
        line = " ".join(line.split())
        if not line:
            continue
        if len(line) > MAX_LINE_CHARS:
            line, n_cut = line[:MAX_LINE_CHARS], n_cut + 1
        out.append(line)
    return tuple(out), n_cut


def _nonempty(texts, what: str) -> None:
    if not texts:
        raise BadInput(f"The {what} holds no sentences: give one sentence or paragraph per line.")


def from_text(data: bytes, name: str = "text file") -> Corpus:
    """One sentence or paragraph per non-empty line."""
    texts, n_cut = _cut(_decode(data, name).splitlines())
    _nonempty(texts, name)
    return Corpus(name, texts, n_cut=n_cut)


def csv_columns(data: bytes) -> list[str]:
    """The header of a CSV file (for the column picker)."""
    text = _decode(data, "CSV file")
    try:
        header = next(csv.reader(io.StringIO(text)), [])
    except csv.Error as e:
        raise BadInput(f"The CSV file cannot be read: {e}.") from None
    if not header:
        raise BadInput("The CSV file is empty.")
    return header


def from_csv(data: bytes, column: str, name: str = "CSV file") -> Corpus:
    """The values of one column of a CSV file with a header row."""
    text = _decode(data, name)
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as e:
        raise BadInput(f"The CSV file cannot be read: {e}.") from None
    if rows and column not in rows[0]:
        raise BadInput(f"The CSV file has no column {column!r}; it has: {', '.join(rows[0])}.")
    texts, n_cut = _cut((r.get(column) or "") for r in rows)
    _nonempty(texts, f"column {column!r}")
    return Corpus(f"{name} [{column}]", texts, n_cut=n_cut)


def from_conllu(data: bytes, name: str = "CoNLL-U file") -> Corpus:
    """Gold words, heads and relations (attnviz.atlas.syntax.read_conllu)."""
    from attnviz.atlas.syntax import read_conllu

    parses = tuple(read_conllu(data))
    _nonempty(parses, name)
    return Corpus(name, tuple(p.text for p in parses), parses=parses, parser="gold (CoNLL-U)")


# ------------------------------------------------------------------ the default corpus
# A small grammar with known structure: [the|a] (adj) NOUN VERB [the|a] (adj) NOUN (PREP [the|a] (adj) NOUN) .
NOUNS = ("dog", "cat", "teacher", "student", "robot", "farmer", "child", "doctor", "bird", "painter", "pilot",
         "author", "lawyer", "baker", "queen", "king", "horse", "sailor", "singer", "judge")
VERBS = ("chased", "saw", "helped", "found", "followed", "met", "called", "watched", "praised", "visited",
         "trusted", "greeted")
ADJS = ("big", "small", "old", "young", "quiet", "happy", "clever", "tired", "brave", "kind")
PREPS = ("near", "behind", "beside", "under", "after", "with")
DETS = ("the", "a")


def _noun_phrase(rng, words, heads, rels, upos, head_of_np: int | None):
    """Appends det (adj) noun; returns the noun's index. Heads are filled in by the caller for the noun."""
    det = len(words)
    words.append(rng.choice(DETS)); rels.append("det"); upos.append("DET"); heads.append(None)
    adj = None
    if rng.random() < 0.5:
        adj = len(words)
        words.append(rng.choice(ADJS)); rels.append("amod"); upos.append("ADJ"); heads.append(None)
    noun = len(words)
    words.append(rng.choice(NOUNS)); rels.append(None); upos.append("NOUN"); heads.append(head_of_np)
    heads[det] = noun
    if adj is not None:
        heads[adj] = noun
    return noun


def grammar_sentence(rng: random.Random):
    """(words, heads (0-based, -1 = root), relations, parts of speech) of one generated sentence."""
    words, heads, rels, upos = [], [], [], []
    subj = _noun_phrase(rng, words, heads, rels, upos, None)
    verb = len(words)
    words.append(rng.choice(VERBS)); rels.append("root"); upos.append("VERB"); heads.append(-1)
    heads[subj], rels[subj] = verb, "nsubj"
    obj = _noun_phrase(rng, words, heads, rels, upos, verb)
    rels[obj] = "obj"
    if rng.random() < 0.6:
        prep = len(words)
        words.append(rng.choice(PREPS)); rels.append("case"); upos.append("ADP"); heads.append(None)
        pobj = _noun_phrase(rng, words, heads, rels, upos, verb)
        rels[pobj] = "obl"
        heads[prep] = pobj
    words.append("."); rels.append("punct"); upos.append("PUNCT"); heads.append(verb)
    return tuple(words), tuple(heads), tuple(rels), tuple(upos)


def grammar_corpus(n: int = 200, seed: int = 0) -> list:
    """`n` generated sentences as attnviz.atlas.syntax.Parsed (gold: the grammar made them)."""
    from attnviz.atlas.syntax import Parsed

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words, heads, rels, upos = grammar_sentence(rng)
        text = " ".join(words[:-1]) + "."
        text = text[0].upper() + text[1:]
        spans, at = [], 0
        for w in words:
            start = text.lower().index(w.lower(), at)
            spans.append((start, start + len(w)))
            at = start + len(w)
        out.append(Parsed(words=tuple(text[a:b] for a, b in spans), heads=heads, deprels=rels, upos=upos,
                          spans=tuple(spans), text=text, source="gold (generated by attnviz's grammar)"))
    return out


def default_corpus(n_generated: int = 200) -> Corpus:
    """The example sentences shipped with the app (no parses), then `n_generated` grammar sentences
    (gold parses). Parses are per sentence: None for the examples."""
    from attnviz.examples import examples

    ex = tuple(a for a, _ in examples())
    gen = grammar_corpus(n_generated)
    return Corpus("default (examples + generated)", ex + tuple(p.text for p in gen),
                  parses=(None,) * len(ex) + tuple(gen), parser="gold (generated by attnviz's grammar)")


def with_parses(corpus: Corpus, progress=None) -> Corpus:
    """`corpus` with silver dependency parses from spaCy's English pipeline (attnviz.atlas.syntax)."""
    from dataclasses import replace

    from attnviz.atlas.syntax import parse_spacy

    parses = tuple(parse_spacy(list(corpus.texts), progress=progress))
    return replace(corpus, parses=parses, parser=parses[0].source if parses else "")
