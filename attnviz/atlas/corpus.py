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
# A small English grammar whose sentences come with their Universal Dependencies parse, built with them.
# It varies the structure so that no fixed offset finds the heads of a relation: adjectives one, two or three
# words before their noun ("the old stone bridge", "a kind and clever child"), subjects right before their verb,
# after an adverb or an auxiliary, with a prepositional phrase or a relative clause between them, passives,
# copulas, fronted phrases, two objects. Past tense and singular nouns throughout, so verbs always agree.
PEOPLE = ("teacher", "student", "farmer", "child", "doctor", "painter", "pilot", "author", "lawyer", "baker",
          "queen", "king", "sailor", "singer", "judge", "artist", "engineer", "officer", "uncle", "neighbour")
ANIMALS = ("dog", "cat", "bird", "horse", "owl", "fox", "rabbit")
THINGS = ("key", "letter", "book", "map", "lamp", "basket", "ticket", "umbrella", "painting", "box", "coat",
          "apple", "clock", "message", "envelope")
PLACES = ("garden", "river", "station", "market", "kitchen", "park", "library", "harbour", "office", "orchard")
COMPOUNDS = {"teacher": "school", "doctor": "village", "painter": "street", "officer": "police", "singer": "opera",
             "letter": "love", "book": "story", "box": "shoe", "clock": "kitchen", "ticket": "train", "lamp": "desk",
             "garden": "rose", "station": "train", "office": "post", "market": "fish"}
# (past, participle, base) of verbs taking a person or animal as object, and of verbs taking a thing
VERBS_PEOPLE = (("chased", "chased", "chase"), ("saw", "seen", "see"), ("helped", "helped", "help"),
                ("followed", "followed", "follow"), ("met", "met", "meet"), ("called", "called", "call"),
                ("watched", "watched", "watch"), ("praised", "praised", "praise"), ("visited", "visited", "visit"),
                ("trusted", "trusted", "trust"), ("greeted", "greeted", "greet"), ("warned", "warned", "warn"),
                ("thanked", "thanked", "thank"))
VERBS_THINGS = (("found", "found", "find"), ("carried", "carried", "carry"), ("opened", "opened", "open"),
                ("dropped", "dropped", "drop"), ("bought", "bought", "buy"), ("hid", "hidden", "hide"),
                ("painted", "painted", "paint"), ("fixed", "fixed", "fix"))
# verbs with two objects ("gave the child a book"): past -> (participle, base)
VERBS_GIVE = {"gave": ("given", "give"), "showed": ("shown", "show"), "sent": ("sent", "send"),
              "handed": ("handed", "hand"), "brought": ("brought", "bring")}
VERBS_ALONE = ("slept", "waited", "smiled", "laughed", "arrived", "danced", "rested", "sang")
# Adjectives by what they describe, with their place in English adjective order (opinion, size, age, colour,
# material): two adjectives before a noun come in that order and from different places.
ADJS = {
    "people": (("clever", 0), ("kind", 0), ("brave", 0), ("honest", 0), ("famous", 0), ("quiet", 0), ("tired", 0),
               ("happy", 0), ("tall", 1), ("short", 1), ("old", 2), ("young", 2)),
    "animals": (("clever", 0), ("quiet", 0), ("hungry", 0), ("friendly", 0), ("big", 1), ("small", 1), ("old", 2),
                ("young", 2), ("brown", 3), ("white", 3), ("black", 3)),
    "things": (("beautiful", 0), ("useful", 0), ("strange", 0), ("big", 1), ("small", 1), ("heavy", 1), ("old", 2),
               ("new", 2), ("red", 3), ("blue", 3), ("green", 3), ("wooden", 4), ("leather", 4)),
    "places": (("quiet", 0), ("busy", 0), ("beautiful", 0), ("crowded", 0), ("big", 1), ("small", 1), ("old", 2),
               ("new", 2)),
}
PREDICATIVE = ("happy", "tired", "brave", "kind", "quiet", "clever", "angry", "honest", "late", "busy")
ADVERBS = ("quietly", "suddenly", "often", "never", "finally", "always", "slowly", "once")
PREPS = ("near", "behind", "beside", "outside")  # before a place
AUXES = (("had", "participle"), ("has", "participle"), ("will", "base"), ("could", "base"), ("would", "base"))
PRONOUNS = ("She", "He", "They", "We", "I")
DETS = ("the", "the", "the", "a", "a", "this", "every")
VOWEL_SOUND = ("a", "e", "i", "o", "u")  # no word here starts with a silent h or a "yoo" sound


class _Sentence:
    """Words with their heads, relations and parts of speech, filled in as a sentence is generated."""

    def __init__(self):
        self.words, self.heads, self.rels, self.upos = [], [], [], []

    def add(self, word: str, upos: str, rel: str | None = None, head: int | None = None) -> int:
        self.words.append(word); self.upos.append(upos); self.rels.append(rel); self.heads.append(head)
        return len(self.words) - 1

    def attach(self, i: int, head: int, rel: str) -> None:
        self.heads[i], self.rels[i] = head, rel


def _kind_of(nouns) -> str:
    return {PEOPLE: "people", ANIMALS: "animals", THINGS: "things", PLACES: "places"}.get(nouns, "people")


def _two_adjectives(rng: random.Random, kind: str, joined: bool = False) -> tuple[str, str]:
    """Two adjectives for a noun of `kind`: of different places in adjective order, in that order ("big old"),
    or with `joined` of the same place (for "kind and clever")."""
    adjs = ADJS[kind]
    while True:
        (a, ra), (b, rb) = rng.sample(adjs, 2)
        if (ra == rb) == joined:
            return (a, b) if ra <= rb else (b, a)


def _noun_phrase(rng: random.Random, s: _Sentence, nouns, adjectives: bool = True) -> int:
    """Appends det, adjectives (none, one, two, "very" + one, or two joined by "and"), maybe a compound noun,
    and the noun; returns the noun's index (its own head and relation are set by the caller). `nouns` is
    PEOPLE, ANIMALS, THINGS, PLACES or PEOPLE + ANIMALS (the adjectives suit the noun)."""
    det = s.add("", "DET")  # the article is chosen once the next word is known (a / an)
    noun_word = rng.choice(nouns)
    kind = "animals" if noun_word in ANIMALS else _kind_of(nouns)
    mods = []  # indices of words that modify the noun directly (amod / compound)
    r = rng.random() if adjectives else 1.0
    if r < 0.30:
        mods.append(s.add(rng.choice(ADJS[kind])[0], "ADJ"))
    elif r < 0.45:
        a, b = _two_adjectives(rng, kind)
        mods.append(s.add(a, "ADJ")); mods.append(s.add(b, "ADJ"))
    elif r < 0.52:
        very = s.add("very", "ADV")
        adj = s.add(rng.choice(ADJS[kind])[0], "ADJ")
        s.attach(very, adj, "advmod")
        mods.append(adj)
    elif r < 0.58:
        a, b = _two_adjectives(rng, kind, joined=True)
        first = s.add(a, "ADJ")
        cc = s.add("and", "CCONJ")
        second = s.add(b, "ADJ")
        s.attach(cc, second, "cc"); s.attach(second, first, "conj")
        mods.append(first)
    compound = None
    if noun_word in COMPOUNDS and rng.random() < 0.45:
        compound = s.add(COMPOUNDS[noun_word], "NOUN")
    noun = s.add(noun_word, "NOUN")
    for m in mods:
        s.attach(m, noun, "amod")
    if compound is not None:
        s.attach(compound, noun, "compound")
    article = rng.choice(DETS)
    if article == "a" and s.words[det + 1].startswith(VOWEL_SOUND):
        article = "an"
    s.words[det] = article
    s.attach(det, noun, "det")
    return noun


def _pp(rng: random.Random, s: _Sentence, head: int, rel: str, prep: str | None = None, nouns=PLACES) -> int:
    """Appends "prep NP" attached to `head` with `rel` (obl for a verb, nmod for a noun); returns the noun."""
    case = s.add(prep or rng.choice(PREPS), "ADP")
    noun = _noun_phrase(rng, s, nouns)
    s.attach(noun, head, rel)
    s.attach(case, noun, "case")
    return noun


def _subject(rng: random.Random, s: _Sentence, nouns=PEOPLE + ANIMALS,
             pronouns: bool = True) -> tuple[int, callable]:
    """Appends the subject: a pronoun, a noun phrase, a noun phrase with a prepositional phrase, or one with a
    relative clause. Returns (its head word, a function attaching it to the clause's head)."""
    r = rng.random()
    if r < 0.12 and pronouns:
        pron = s.add(rng.choice(PRONOUNS), "PRON")
        return pron, lambda head, rel="nsubj": s.attach(pron, head, rel)
    noun = _noun_phrase(rng, s, nouns)
    if r < 0.30:
        _pp(rng, s, noun, "nmod", prep=rng.choice(("near", "beside", "behind", "from")))
    elif r < 0.48:
        that = s.add("that", "PRON")
        past = rng.choice(VERBS_PEOPLE)[0]
        if rng.random() < 0.5:  # "the dog that chased the cat": "that" is the subject of the clause
            verb = s.add(past, "VERB")
            s.attach(that, verb, "nsubj")
            s.attach(_noun_phrase(rng, s, PEOPLE + ANIMALS, adjectives=False), verb, "obj")
        else:  # "the dog that the cat chased": "that" is its object
            inner = _noun_phrase(rng, s, PEOPLE + ANIMALS, adjectives=False)
            verb = s.add(past, "VERB")
            s.attach(inner, verb, "nsubj")
            s.attach(that, verb, "obj")
        s.attach(verb, noun, "acl:relcl")
    return noun, lambda head, rel="nsubj": s.attach(noun, head, rel)


def grammar_sentence(rng: random.Random):
    """(words, heads (0-based, -1 = root), relations, parts of speech) of one generated sentence: UD relations,
    the punctuation attached to the root."""
    s = _Sentence()
    kind = rng.choices(("transitive", "adverb", "auxiliary", "passive", "copula", "fronted", "alone", "give"),
                       weights=(24, 10, 12, 12, 10, 10, 10, 12))[0]
    fronted = None
    if kind == "fronted":  # "In the garden, the cat saw a bird."
        fronted = _pp(rng, s, -1, "obl")
        comma = s.add(",", "PUNCT")
    things = kind in ("give", "passive") or (kind in ("transitive", "adverb", "auxiliary") and rng.random() < 0.4)
    if kind == "passive":  # the subject is what the verb was done to
        _, subject_to = _subject(rng, s, THINGS if rng.random() < 0.5 else PEOPLE + ANIMALS, pronouns=False)
        things = s.upos[-1] == "NOUN" and s.words[-1] in THINGS
    else:
        _, subject_to = _subject(rng, s, PEOPLE if things else PEOPLE + ANIMALS)
    if kind == "copula":  # "The old dog was very tired (near the river)."
        cop = s.add("was", "AUX")
        very = s.add("very", "ADV") if rng.random() < 0.4 else None
        root = s.add(rng.choice(PREDICATIVE), "ADJ", "root", -1)
        s.attach(cop, root, "cop")
        if very is not None:
            s.attach(very, root, "advmod")
        subject_to(root)
        if rng.random() < 0.4:
            _pp(rng, s, root, "obl")
    elif kind == "passive":  # "The key was found by the child (in the kitchen)."
        aux = s.add("was", "AUX")
        root = s.add(rng.choice(VERBS_THINGS if things else VERBS_PEOPLE)[1], "VERB", "root", -1)
        s.attach(aux, root, "aux:pass")
        subject_to(root, "nsubj:pass")
        if rng.random() < 0.8:
            _pp(rng, s, root, "obl", prep="by", nouns=PEOPLE)
        if rng.random() < 0.3:
            _pp(rng, s, root, "obl")
    elif kind == "alone":  # "The child slept in the park."
        root = s.add(rng.choice(VERBS_ALONE), "VERB", "root", -1)
        subject_to(root)
        _pp(rng, s, root, "obl")
    else:
        adverb = s.add(rng.choice(ADVERBS), "ADV") if kind == "adverb" else None
        aux_form = rng.choice(AUXES) if kind == "auxiliary" else None
        aux = s.add(aux_form[0], "AUX") if aux_form else None
        if kind == "give":
            verb = rng.choice(sorted(VERBS_GIVE))
            form = VERBS_GIVE[verb]
        else:
            verb, *form = rng.choice(VERBS_THINGS if things else VERBS_PEOPLE)
        word = verb if aux_form is None else (form[0] if aux_form[1] == "participle" else form[1])
        root = s.add(word, "VERB", "root", -1)
        if adverb is not None:
            s.attach(adverb, root, "advmod")
        if aux is not None:
            s.attach(aux, root, "aux")
        subject_to(root)
        if kind == "give":  # "gave the child a book"
            s.attach(_noun_phrase(rng, s, PEOPLE), root, "iobj")
            s.attach(_noun_phrase(rng, s, THINGS), root, "obj")
        else:
            obj = _noun_phrase(rng, s, THINGS if things else PEOPLE + ANIMALS)
            s.attach(obj, root, "obj")
            r = rng.random()
            if r < 0.25:
                _pp(rng, s, root, "obl")
            elif r < 0.4:  # "the lamp beside the old clock": the phrase belongs to the object
                _pp(rng, s, obj, "nmod", prep=rng.choice(("near", "beside", "behind")),
                    nouns=THINGS if things else PEOPLE + ANIMALS)
    if fronted is not None:
        s.attach(fronted, root, "obl")
        s.attach(comma, root, "punct")
    s.add(".", "PUNCT", "punct", root)
    return tuple(s.words), tuple(s.heads), tuple(s.rels), tuple(s.upos)


def grammar_corpus(n: int = 200, seed: int = 0) -> list:
    """`n` generated sentences as attnviz.atlas.syntax.Parsed (gold: the grammar made them)."""
    from attnviz.atlas.syntax import Parsed

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words, heads, rels, upos = grammar_sentence(rng)
        words = (words[0][0].upper() + words[0][1:],) + words[1:]
        text, spans = "", []
        for w in words:
            if text and w not in (",", "."):  # punctuation leans on the word before it
                text += " "
            spans.append((len(text), len(text) + len(w)))
            text += w
        out.append(Parsed(words=words, heads=heads, deprels=rels, upos=upos, spans=tuple(spans), text=text,
                          source="gold (generated by attnviz's grammar)"))
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
