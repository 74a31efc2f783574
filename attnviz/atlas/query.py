"""Questions to an atlas store, answered by DuckDB over its Parquet files: every head's statistic with a 95%
confidence interval, a user-defined pattern ranked over all heads (TransformerLens's detector score),
corpus search, related heads by Jensen-Shannon divergence and a 2-D map of all heads."""
from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attnviz.atlas import store
from attnviz.atlas.stats import EDGE_MIN, EDGE_TOP, STATS
from attnviz.errors import BadInput

Z95 = 1.959964  # two-sided 95% quantile of the normal distribution
PATTERN_KINDS = {
    "offset": "attend to the token at a fixed offset (−1 = previous, +1 = next)",
    "same": "attend to another occurrence of the same token",
    "first": "attend to the first token",
    "special": "attend to special tokens ([CLS], [SEP], <s>, …)",
    "regex": "from a token matching one pattern to a token matching another",
    "pos": "from one part of speech to another",
    "dep": "a dependency relation: the dependent attends to its head (or the head to its dependent)",
}


@dataclass(frozen=True)
class Pattern:
    """Which (query, key) cells a head should attend to. Unused fields are ignored for each kind."""

    kind: str
    offset: int = -1
    q_regex: str = ""
    k_regex: str = ""
    q_pos: str = ""
    k_pos: str = ""
    relation: str = ""
    direction: str = "dependent → head"
    exclude_first: bool = field(default=False)  # leave out rows of the first token (TransformerLens's exclude_bos)

    def describe(self) -> str:
        if self.kind == "offset":
            return f"offset {self.offset:+d}"
        if self.kind == "regex":
            return f"/{self.q_regex or '.*'}/ → /{self.k_regex or '.*'}/"
        if self.kind == "pos":
            return f"{self.q_pos or 'any'} → {self.k_pos or 'any'}"
        if self.kind == "dep":
            return f"{self.relation} ({self.direction})"
        return PATTERN_KINDS.get(self.kind, self.kind)


class Atlas:
    """A read-only view of one store folder (DuckDB in memory, views over the Parquet files). Close it with
    close() or a `with` block; one still open when it is dropped, or when the interpreter exits (a view
    held by a cache), is closed then."""

    def __init__(self, folder):
        import duckdb

        self.folder = Path(folder)
        self.info = store.manifest(self.folder)
        if self.info is None:
            raise BadInput(f"There is no atlas store in {self.folder}: run a corpus into it first.")
        if self.info.get("schema") != store.SCHEMA:
            raise BadInput(f"The store in {self.folder} has format {self.info.get('schema')}; this attnviz reads "
                           f"format {store.SCHEMA}. Run the corpus again into a new folder.")
        self.done = store.finished(self.folder)
        if not self.done:
            raise BadInput(f"The store in {self.folder} holds no finished chunk yet.")
        # The connection lives in a list the finalizer empties: closing also lets go of the connection
        # object, so none is left for the interpreter's shutdown to find (DuckDB then reports it leaked).
        self._held = [duckdb.connect()]
        self._closer = weakref.finalize(self, _release, self._held)  # runs at exit too (cached views)
        self._lock = threading.Lock()  # one DuckDB connection, shared by the app's sessions: one query at a time
        self._ranked: dict = {}  # rank's answers by pattern: the view's files do not change
        try:
            self._open_views()
        except BaseException:
            self.close()
            raise

    def _open_views(self) -> None:
        self._x("SET threads TO 2")
        self.tables = set()
        for name in store.TABLES:
            files = sorted(str(p) for p in (self.folder / "parts").glob(f"{name}-*.parquet")
                           if int(p.stem.rsplit("-", 1)[1]) in self.done)
            if files:
                self._x(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({files!r}, union_by_name = true)")
                self.tables.add(name)
        self.n_layers, self.n_heads = (int(v) + 1 for v in self._x(
            "SELECT max(layer), max(head) FROM stats").fetchone())
        self.n_sentences = self._x("SELECT count(*) FROM sentences").fetchone()[0]

    @property
    def closed(self) -> bool:
        return not self._held

    def close(self) -> None:
        """Close the DuckDB connection (again: nothing happens)."""
        with self._lock:
            self._closer()

    def __enter__(self) -> "Atlas":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _x(self, sql: str, params=None):
        """Run one query; returns a list of rows."""
        with self._lock:
            if not self._held:
                raise BadInput(f"The view of the store in {self.folder} was closed: open the store again.")
            return _Rows(self._held[0].execute(sql, params or []).fetchall())

    # ------------------------------------------------------------------ statistics
    def stat_map(self, stat: str) -> dict[str, np.ndarray]:
        """Mean over sentences of a statistic per head, with its 95% interval (mean ± 1.96 s/√n; the
        sentences are the sample), n and the standard deviation. Undefined values (NaN) are left out."""
        if stat not in STATS + ("covered",):
            raise BadInput(f"Unknown statistic {stat!r}; choose one of {', '.join(STATS)}.")
        rows = self._x(
            f'SELECT layer, head, avg("{stat}"), stddev_samp("{stat}"), count("{stat}") FROM stats '
            f'WHERE NOT isnan("{stat}") GROUP BY layer, head').fetchall()
        out = {k: np.full((self.n_layers, self.n_heads), np.nan) for k in ("mean", "sd", "lo", "hi")}
        out["n"] = np.zeros((self.n_layers, self.n_heads), dtype=np.int64)
        for layer, head, mean, sd, n in rows:
            half = Z95 * (sd or 0.0) / np.sqrt(n) if n > 1 else np.nan
            out["mean"][layer, head], out["sd"][layer, head], out["n"][layer, head] = mean, sd if sd is not None else np.nan, n
            out["lo"][layer, head], out["hi"][layer, head] = mean - half, mean + half
        return out

    def values(self, stat: str, layer: int, head: int) -> np.ndarray:
        """One head's statistic in every sentence (sentence order)."""
        return np.array([v for (v,) in self._x(
            f'SELECT "{stat}" FROM stats WHERE layer = ? AND head = ? ORDER BY sid', [layer, head]).fetchall()])

    def strongest_role(self) -> tuple[np.ndarray, np.ndarray]:
        """(role index in ROLE_KEYS, its mean score) per head, from the corpus means."""
        from attnviz.metrics.roles import ROLE_KEYS

        means = np.stack([np.nan_to_num(self.stat_map(r)["mean"], nan=-1.0) for r in ROLE_KEYS])
        return means.argmax(axis=0), means.max(axis=0)

    def typical_sentence(self, layer: int, head: int) -> tuple[int, str]:
        """(sentence id, text) of the sentence where this head is most like its corpus average: the
        smallest distance between its statistics there and their means, each statistic in units of its
        standard deviation over the corpus."""
        cols = ", ".join(f'"{s}"' for s in STATS)
        data = np.array(self._x(f"SELECT sid, {cols} FROM stats WHERE layer = ? AND head = ? ORDER BY sid",
                                         [layer, head]).fetchall(), dtype=float)
        if not len(data):
            raise BadInput(f"Layer {layer}, head {head} is not in this store.")
        vals = data[:, 1:]
        mean, sd = np.nanmean(vals, axis=0), np.nanstd(vals, axis=0)
        z = np.nan_to_num((vals - mean) / np.where(sd > 0, sd, 1.0))
        sid = int(data[int(np.argmin((z ** 2).sum(axis=1))), 0])
        return sid, self.sentence(sid)[0]

    def sentence(self, sid: int) -> tuple[str, list[str]]:
        """(text, tokens as stored) of one sentence."""
        row = self._x("SELECT text FROM sentences WHERE sid = ?", [sid]).fetchone()
        if row is None:
            raise BadInput(f"Sentence {sid} is not in this store.")
        toks = [t for (t,) in self._x("SELECT token FROM tokens WHERE sid = ? ORDER BY pos", [sid]).fetchall()]
        return row[0], toks

    # ------------------------------------------------------------------ patterns and search
    def _check_regex(self, pattern: str, what: str) -> None:
        if not pattern:
            return
        try:
            re.compile(pattern)
            self._x("SELECT regexp_matches('', ?)", [pattern]).fetchone()
        except Exception as e:  # noqa: BLE001 (re.error or duckdb's RE2 error: one plain message)
            raise BadInput(f"The {what} pattern {pattern!r} is not a valid regular expression ({e}).") from None

    def _predicate(self, p: Pattern) -> tuple[str, list]:
        """SQL condition on an edge e with its query token tq and key token tk, and its parameters."""
        if p.kind == "offset":
            return "e.k - e.q = ?", [int(p.offset)]
        if p.kind == "same":
            return "e.k <> e.q AND lower(tq.token) = lower(tk.token)", []
        if p.kind == "first":
            return "e.k = 0", []
        if p.kind == "special":
            return "tk.special", []
        if p.kind == "regex":
            self._check_regex(p.q_regex, "query")
            self._check_regex(p.k_regex, "key")
            return "regexp_matches(tq.token, ?) AND regexp_matches(tk.token, ?)", [p.q_regex or "", p.k_regex or ""]
        if p.kind == "pos":
            return "(? = '' OR tq.upos = ?) AND (? = '' OR tk.upos = ?)", [p.q_pos, p.q_pos, p.k_pos, p.k_pos]
        if p.kind == "dep":
            if p.direction.startswith("dependent"):
                return "tq.deprel = ? AND tq.phead >= 0 AND tk.pword = tq.phead", [p.relation]
            return "tk.deprel = ? AND tk.phead >= 0 AND tq.pword = tk.phead", [p.relation]
        raise BadInput(f"Unknown pattern kind {p.kind!r}; choose one of {', '.join(PATTERN_KINDS)}.")

    def rank(self, p: Pattern, top: int | None = None) -> list[dict]:
        """Every head's detector score for the pattern, best first: the weight its rows put on the
        pattern's cells, over the weight of all its rows (TransformerLens's "mul" score, summed over the
        corpus). Computed from the stored pairs (each row's strongest EDGE_TOP with weight >= EDGE_MIN):
        `covered` says how much of the heads' weight those pairs hold. Each pattern is queried once per view
        (24-79 ms on MiniLM's default corpus, 634k stored pairs); later calls copy the answer."""
        if p not in self._ranked:
            self._ranked[p] = self._rank(p)
        out = [dict(r) for r in self._ranked[p]]
        return out[:top] if top else out

    def _rank(self, p: Pattern) -> list[dict]:
        cond, params = self._predicate(p)
        first = " AND e.q > 0" if p.exclude_first else ""
        n_rows = self._x("SELECT sum(n_tokens - ?) FROM sentences", [1 if p.exclude_first else 0]).fetchone()[0]
        joins = "".join(j for alias, j in (
            ("tq.", " JOIN tokens tq ON tq.sid = e.sid AND tq.pos = e.q"),
            ("tk.", " JOIN tokens tk ON tk.sid = e.sid AND tk.pos = e.k")) if alias in cond)  # only what it reads
        rows = self._x(f"SELECT e.layer, e.head, sum(e.w) AS s FROM edges e{joins} "
                       f"WHERE {cond}{first} GROUP BY e.layer, e.head", params).fetchall()
        score = np.zeros((self.n_layers, self.n_heads))
        for layer, head, s in rows:
            score[layer, head] = s / max(n_rows, 1)
        covered = self.stat_map("covered")["mean"]
        order = np.argsort(-score, axis=None, kind="stable")
        return [{"layer": int(i // self.n_heads), "head": int(i % self.n_heads), "score": float(score.flat[i]),
                 "covered": float(covered.flat[i])} for i in order]

    def search(self, layer: int, head: int, min_weight: float = 0.3, q_regex: str = "", k_regex: str = "",
               limit: int = 50) -> list[dict]:
        """Contexts where head (layer, head) puts more than `min_weight` from a token matching q_regex to a
        token matching k_regex (empty = any), strongest first, with the sentence's tokens."""
        self._check_regex(q_regex, "query")
        self._check_regex(k_regex, "key")
        if not (0 <= layer < self.n_layers and 0 <= head < self.n_heads):
            raise BadInput(f"This model has layers 0-{self.n_layers - 1} and heads 0-{self.n_heads - 1}.")
        rows = self._x(
            """SELECT e.sid, e.q, e.k, e.w FROM edges e
               JOIN tokens tq ON tq.sid = e.sid AND tq.pos = e.q
               JOIN tokens tk ON tk.sid = e.sid AND tk.pos = e.k
               WHERE e.layer = ? AND e.head = ? AND e.w > ?
                 AND regexp_matches(tq.token, ?) AND regexp_matches(tk.token, ?)
               ORDER BY e.w DESC, e.sid, e.q LIMIT ?""",
            [layer, head, max(float(min_weight), 0.0), q_regex or "", k_regex or "", int(limit)]).fetchall()
        sids = sorted({r[0] for r in rows})
        toks: dict[int, list[str]] = {s: [] for s in sids}
        if sids:
            for sid, tok in self._x("SELECT sid, token FROM tokens WHERE list_contains(?, sid) ORDER BY sid, pos",
                                             [sids]).fetchall():
                toks[sid].append(tok)
        return [{"sid": s, "q": q, "k": k, "w": float(w), "tokens": toks[s]} for s, q, k, w in rows]

    # ------------------------------------------------------------------ syntax
    @property
    def has_syntax(self) -> bool:
        return "syntax" in self.tables

    def syntax_sums(self):
        """(relations, hits (relation, direction, layer, head), counts (relation, direction), offset hits
        (relation, offset), offsets) summed over the corpus."""
        from attnviz.atlas.syntax import DIRECTIONS, OFFSETS

        if not self.has_syntax:
            raise BadInput("This store has no dependency parses: run a CoNLL-U corpus, the default corpus, or a "
                           "text corpus with 'parse with spaCy'.")
        rows = self._x("SELECT relation, direction, layer, head, sum(hits), sum(count) FROM syntax "
                       "GROUP BY relation, direction, layer, head")
        relations = tuple(sorted({r[0] for r in rows}))
        pos = {r: i for i, r in enumerate(relations)}
        hits = np.zeros((len(relations), 2, self.n_layers, self.n_heads), dtype=np.int64)
        counts = np.zeros((len(relations), 2), dtype=np.int64)
        for rel, d, layer, head, h, c in rows:
            hits[pos[rel], DIRECTIONS.index(d), layer, head] = h
            counts[pos[rel], DIRECTIONS.index(d)] = c
        off = np.zeros((len(relations), len(OFFSETS)), dtype=np.int64)
        for rel, o, h in self._x("SELECT relation, \"offset\", sum(hits) FROM offsets GROUP BY relation, \"offset\""):
            if rel in pos and o in OFFSETS:
                off[pos[rel], OFFSETS.index(o)] = h
        return relations, hits, counts, off, OFFSETS

    def relations(self) -> list[str]:
        """The dependency relations in the store's parses (empty without parses)."""
        return [r for (r,) in self._x("SELECT DISTINCT deprel FROM tokens WHERE deprel IS NOT NULL ORDER BY 1")]

    def parsed_sentences(self, limit: int = 500) -> list[tuple[int, str]]:
        """(sentence id, text) of sentences with a parse, in corpus order."""
        return self._x("SELECT s.sid, s.text FROM sentences s WHERE EXISTS (SELECT 1 FROM tokens t WHERE t.sid = s.sid "
                       "AND t.pword >= 0) ORDER BY s.sid LIMIT ?", [limit])

    def parse_of(self, sid: int) -> dict:
        """One sentence's stored parse: its words (the stored tokens of each parse word joined), heads,
        relations, and the parse word of every stored token (pword)."""
        rows = self._x("SELECT pos, token, pword, deprel, phead FROM tokens WHERE sid = ? ORDER BY pos", [sid])
        if not rows or max(r[2] for r in rows) < 0:
            raise BadInput(f"Sentence {sid} has no parse in this store.")
        n = max(r[2] for r in rows) + 1
        words, heads, rels = [""] * n, [-1] * n, ["?"] * n
        for _, tok, pw, rel, ph in rows:
            if pw >= 0:
                words[pw] += tok
                heads[pw], rels[pw] = int(ph), rel or "?"
        return {"words": words, "heads": heads, "deprels": rels, "pword": np.array([r[2] for r in rows])}

    def syntax_report(self, min_arcs: int = 10) -> list[dict]:
        """Clark et al.'s Table 1 for this corpus (attnviz.atlas.syntax.syntax_table)."""
        from attnviz.atlas.syntax import syntax_table

        relations, hits, counts, off, offsets = self.syntax_sums()
        return syntax_table(hits, counts, off, relations, offsets, min_arcs=min_arcs)

    # ------------------------------------------------------------------ related heads
    def js_divergence(self) -> np.ndarray:
        """(head, head) mean Jensen-Shannon divergence (nats) between two heads' rows over the corpus;
        heads are numbered layer · n_heads + head."""
        n = self.n_layers * self.n_heads
        d = np.zeros((n, n))
        for a, b, s, r in self._x("SELECT a, b, sum(sum), sum(rows) FROM js GROUP BY a, b").fetchall():
            d[a, b] = d[b, a] = s / max(r, 1)
        return d

    def related(self, layer: int, head: int, k: int = 5) -> list[dict]:
        """The k heads nearest to (layer, head) by Jensen-Shannon divergence."""
        d = self.js_divergence()
        i = layer * self.n_heads + head
        order = [j for j in np.argsort(d[i], kind="stable") if j != i][:k]
        return [{"layer": int(j // self.n_heads), "head": int(j % self.n_heads), "js": float(d[i, j])} for j in order]

    def head_map(self) -> np.ndarray:
        """(head, 2) coordinates of every head by classical multidimensional scaling of the Jensen-Shannon
        distance (the square root of the divergence, a metric), as Clark et al.'s Figure 6."""
        return classical_mds(np.sqrt(self.js_divergence()))


def _release(held: list) -> None:
    """Close the connections in `held` and drop them (the finalizer of an Atlas)."""
    while held:
        held.pop().close()


class _Rows(list):
    """Query rows, with DuckDB's fetchone/fetchall so call sites read naturally."""

    def fetchone(self):
        return self[0] if self else None

    def fetchall(self):
        return list(self)


def classical_mds(dist: np.ndarray, dims: int = 2) -> np.ndarray:
    """Torgerson's classical scaling: the top eigenvectors of the double-centred squared distances."""
    n = dist.shape[0]
    j = np.eye(n) - 1.0 / n
    b = -0.5 * j @ (dist ** 2) @ j
    vals, vecs = np.linalg.eigh(b)
    top = np.argsort(vals)[::-1][:dims]
    coords = vecs[:, top] * np.sqrt(np.maximum(vals[top], 0.0))
    signs = np.sign(coords[np.argmax(np.abs(coords), axis=0), range(dims)])  # a fixed orientation
    return coords * np.where(signs == 0, 1.0, signs)


SEARCH_NOTE = (f"Only each row's {EDGE_TOP} strongest pairs with weight ≥ {EDGE_MIN} are stored, so a search "
               f"below {EDGE_MIN} finds the same as {EDGE_MIN}.")
