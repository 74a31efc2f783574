"""The atlas store: a folder of Parquet files (pyarrow) written one chunk of sentences at a time, with a
manifest naming the model, the corpus and the settings. A chunk is finished when its marker file exists;
its files are written under temporary names and renamed, so a run that stops half-way leaves only whole
chunks behind, and the next run with the same model and corpus resumes from the first missing chunk.

Tables (one file per chunk each, parts/<table>-<chunk>.parquet):
  sentences  sid, text, n_pieces, n_tokens, truncated
  tokens     sid, pos, token, special, pword, upos, deprel, phead   (pword: the parse's word, -1 = none)
  stats      sid, layer, head, covered, and one column per statistic (attnviz.atlas.stats.STATS)
  edges      sid, layer, head, q, k, w       (each row's strongest pairs, stats.EDGE_TOP / EDGE_MIN)
  js         chunk, a, b, sum, rows          (Jensen-Shannon divergence between heads a < b, summed)
  syntax     chunk, relation, direction, layer, head, hits, count    (with parses)
  offsets    chunk, relation, offset, hits, count                    (fixed-offset baselines)
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from attnviz.atlas.stats import STATS
from attnviz.errors import BadInput

SCHEMA = 1
MANIFEST = "manifest.json"
TABLES = ("sentences", "tokens", "stats", "edges", "js", "syntax", "offsets")


def manifest(folder: Path) -> dict | None:
    path = Path(folder) / MANIFEST
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BadInput(f"{path} is not an atlas manifest (it cannot be read as JSON).") from None


def open_for_run(folder: Path, info: dict, *, restart: bool = False) -> set[int]:
    """Prepare `folder` for a run described by `info` (model, corpus digest, words, chunk size ...);
    returns the chunks already finished (resume). A folder holding another model's or corpus's run is
    refused with a plain message unless `restart`, which empties it."""
    folder = Path(folder)
    old = manifest(folder)
    if old is not None and not restart:
        for key, what in (("model", "model"), ("corpus_digest", "corpus"), ("words", "word-level setting"),
                          ("chunk_size", "chunk size"), ("schema", "store format")):
            if old.get(key) != info.get(key):
                raise BadInput(f"The store in {folder} was written by another {what} ({old.get(key)!r}, not "
                               f"{info.get(key)!r}). Choose another folder, or start it again from scratch.")
    if restart and folder.exists():
        shutil.rmtree(folder)
    (folder / "parts").mkdir(parents=True, exist_ok=True)
    _write_json(folder / MANIFEST, {**(old or {}), **info, "schema": SCHEMA})
    done = finished(folder)
    for tmp in (folder / "parts").glob("*.tmp"):  # a file cut off mid-write
        tmp.unlink()
    for part in (folder / "parts").glob("*.parquet"):  # files of a chunk that never finished
        if int(part.stem.rsplit("-", 1)[1]) not in done:
            part.unlink()
    return done


def finished(folder: Path) -> set[int]:
    return {int(p.stem.split("-")[1]) for p in (Path(folder) / "parts").glob("done-*.json")}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _write_table(folder: Path, name: str, chunk: int, columns: dict, row_group_size: int | None = None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(folder) / "parts" / f"{name}-{chunk:06d}.parquet"
    tmp = path.with_suffix(".tmp")
    # text columns are always strings, even in a chunk where every value is missing (no parses)
    cols = {k: pa.array(v, type=pa.string()) if isinstance(v, list) else v for k, v in columns.items()}
    pq.write_table(pa.table(cols), tmp, compression="zstd", row_group_size=row_group_size)
    os.replace(tmp, path)


def write_chunk(folder: Path, chunk: int, records: list, relations=None) -> None:
    """Write one chunk's SentenceRecords, then its marker (the chunk counts as done only after it)."""
    recs = sorted(records, key=lambda r: r.sid)
    n_l, n_h = recs[0].stats.shape[1:] if recs else (0, 0)
    _write_table(folder, "sentences", chunk, {
        "sid": np.array([r.sid for r in recs], np.int32), "text": [r.text for r in recs],
        "n_pieces": np.array([r.n_pieces for r in recs], np.int32),
        "n_tokens": np.array([len(r.tokens) for r in recs], np.int32),
        "truncated": np.array([r.truncated for r in recs], bool)})
    tok = {"sid": [], "pos": [], "token": [], "special": [], "pword": [], "upos": [], "deprel": [], "phead": []}
    for r in recs:
        n = len(r.tokens)
        tok["sid"].append(np.full(n, r.sid, np.int32))
        tok["pos"].append(np.arange(n, dtype=np.int16))
        tok["token"].extend(r.tokens)
        tok["special"].append(r.special)
        tok["pword"].append(r.parse_word.astype(np.int16))
        parse = getattr(r, "parse", None)
        for i in range(n):
            w = int(r.parse_word[i])
            ok = parse is not None and w >= 0
            tok["upos"].append(parse.upos[w] if ok else None)
            tok["deprel"].append(parse.deprels[w] if ok else None)
            tok["phead"].append(parse.heads[w] if ok else -1)
    _write_table(folder, "tokens", chunk, {
        "sid": np.concatenate(tok["sid"]), "pos": np.concatenate(tok["pos"]), "token": tok["token"],
        "special": np.concatenate(tok["special"]), "pword": np.concatenate(tok["pword"]),
        "upos": tok["upos"], "deprel": tok["deprel"], "phead": np.array(tok["phead"], np.int16)})
    lay, hd = np.meshgrid(np.arange(n_l, dtype=np.int8), np.arange(n_h, dtype=np.int8), indexing="ij")
    stats = {"sid": np.repeat(np.array([r.sid for r in recs], np.int32), n_l * n_h),
             "layer": np.tile(lay.ravel(), len(recs)), "head": np.tile(hd.ravel(), len(recs)),
             "covered": np.concatenate([r.covered.ravel() for r in recs])}
    for i, name in enumerate(STATS):
        stats[name] = np.concatenate([r.stats[i].ravel() for r in recs])
    _write_table(folder, "stats", chunk, stats)
    e = [np.concatenate([r.edges[i] for r in recs]) for i in range(5)]
    sid = np.concatenate([np.full(len(r.edges[0]), r.sid, np.int32) for r in recs])
    order = np.lexsort((e[2], sid, e[1], e[0]))  # by layer, head, sentence, query: row groups prune by head
    _write_table(folder, "edges", chunk, {"sid": sid[order], "layer": e[0][order].astype(np.int8),
                                          "head": e[1][order].astype(np.int8), "q": e[2][order], "k": e[3][order],
                                          "w": e[4][order]},
                 row_group_size=2048)  # small row groups sorted by head: a search for one head skips the rest
    a, b = np.triu_indices(n_l * n_h, 1)
    _write_table(folder, "js", chunk, {"chunk": np.full(a.size, chunk, np.int32), "a": a.astype(np.int16),
                                       "b": b.astype(np.int16), "sum": np.sum([r.js_sum for r in recs], axis=0),
                                       "rows": np.full(a.size, sum(r.js_rows for r in recs), np.int64)})
    with_syntax = [r for r in recs if r.syntax is not None]
    if with_syntax:
        hits, offsets = _syntax_columns(chunk, with_syntax)
        _write_table(folder, "syntax", chunk, hits)
        _write_table(folder, "offsets", chunk, offsets)
    _write_json(Path(folder) / "parts" / f"done-{chunk:06d}.json", {"chunk": chunk, "sentences": len(recs)})


def _syntax_columns(chunk: int, records: list) -> tuple[dict, dict]:
    """Per relation, direction and head: arcs hit and arcs counted over the chunk's parsed sentences; and
    per relation and fixed offset, the baseline's hits."""
    from attnviz.atlas import syntax as sx

    rel = sx.sum_relation_hits([r.syntax.relation for r in records])
    off = sx.sum_offset_hits([r.syntax.offset for r in records])
    n_rel, _, n_l, n_h = rel.hits.shape if rel.relations else (0, 2, 0, 0)
    r_, d_, l_, h_ = np.meshgrid(np.arange(n_rel), np.arange(2), np.arange(n_l), np.arange(n_h), indexing="ij")
    hits = {"chunk": np.full(r_.size, chunk, np.int32),
            "relation": [rel.relations[i] for i in r_.ravel()],
            "direction": [sx.DIRECTIONS[i] for i in d_.ravel()],
            "layer": l_.ravel().astype(np.int8), "head": h_.ravel().astype(np.int8),
            "hits": rel.hits.reshape(-1).astype(np.int32),
            "count": np.repeat(rel.counts.reshape(-1), n_l * n_h).astype(np.int32)}
    ro, oo = np.meshgrid(np.arange(len(off.relations)), np.arange(len(off.offsets)), indexing="ij")
    offsets = {"chunk": np.full(ro.size, chunk, np.int32), "relation": [off.relations[i] for i in ro.ravel()],
               "offset": np.array([off.offsets[i] for i in oo.ravel()], np.int16),
               "hits": off.hits.reshape(-1).astype(np.int32),
               "count": np.repeat(off.counts, len(off.offsets)).astype(np.int32)}
    return hits, offsets
