"""The Head atlas page's Streamlit parts: choosing a corpus, running it in the background (progress, cancel,
resume), picking a stored run, and the five views over a store (every head, patterns, related heads,
syntax, search)."""
from __future__ import annotations

import html
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import streamlit as st

from attnviz.atlas import corpus as cp
from attnviz.atlas import figures as af
from attnviz.atlas.query import PATTERN_KINDS, SEARCH_NOTE, Pattern
from attnviz.atlas.run import CHUNK_SIZE
from attnviz.atlas.stats import STAT_LABELS, STATS
from attnviz.errors import AttnvizError
from attnviz.ui import choices, jobs
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import clicked_head
from attnviz.ui.numbers import number_box
from attnviz.ui.page import part
from attnviz.units import count_text

JOB = "at_job"
TAB = "at_tab"  # the open view of the stored run
KEYS = {"at_stat": str, "at_kind": str, "at_offset": int, "at_s_layer": int, "at_s_head": int, "at_s_w": float,
        "at_s_q": str, "at_s_k": str}  # the views' settings kept in the link (beside the open tab)
TABS = ("Every head", "Patterns", "Related heads", "Syntax", "Search")
SOURCES = ("The default corpus", "A file (.txt, .csv, .conllu)")


def store_root() -> Path:
    """Where corpus runs are stored: $ATTNVIZ_ATLAS_DIR, else ~/.cache/attnviz/atlas."""
    return Path(os.environ.get("ATTNVIZ_ATLAS_DIR") or Path.home() / ".cache" / "attnviz" / "atlas")


def folder_for(model_key: str, corpus: cp.Corpus, words: bool) -> Path:
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in model_key)[-40:]
    return store_root() / f"{slug}-{corpus.digest}-{'words' if words else 'pieces'}"


def stored_runs(model_key: str) -> list[tuple[Path, dict]]:
    """Runs stored for this model, newest first: (folder, manifest)."""
    from attnviz.atlas.store import finished, manifest

    out = []
    root = store_root()
    for folder in sorted(root.glob("*"), key=lambda p: p.stat().st_mtime, reverse=True) if root.exists() else []:
        try:
            info = manifest(folder)
        except AttnvizError:
            continue
        if info and info.get("model") == model_key and finished(folder):
            out.append((folder, info))
    return out


def run_label(folder: Path, info: dict) -> str:
    from attnviz.atlas.store import finished

    n = sum(1 for _ in finished(folder))
    chunks = -(-info.get("n_sentences", 0) // max(info.get("chunk_size", 1), 1))
    state = "complete" if n >= chunks else f"{n} of {chunks} chunks"
    sentences = count_text(info["n_sentences"], "sentence") if "n_sentences" in info else "? sentences"
    return f"{info.get('corpus', '?')} · {sentences} · " + \
        f"{'words' if info.get('words') else 'word pieces'} · {state}"


def corpus_picker():
    """The corpus chosen on the page (a Corpus), or None after a plain message."""
    source = st.radio("Corpus", SOURCES, key="at_source", horizontal=True,
                      help="The default corpus: the example sentences and 200 sentences generated from a small "
                           "English grammar of varied structure (relative clauses, passives, prepositional phrases, "
                           "adjectives one to three words from their noun) whose dependency parses are known exactly "
                           "(gold), so no fixed offset finds their heads.")
    if source == SOURCES[0]:
        return cp.default_corpus()
    up = st.file_uploader("One sentence or paragraph a line (.txt), a CSV file, or a CoNLL-U file",
                          type=["txt", "csv", "conllu"], key="at_upload")
    if up is None:
        st.info("Choose a file, or run the default corpus.")
        return None
    data = up.getvalue()
    try:
        name = up.name.lower()
        if name.endswith(".conllu"):
            return cp.from_conllu(data, up.name)
        if name.endswith(".csv"):
            col = st.selectbox("Column holding the text", cp.csv_columns(data), key="at_column")
            corpus = cp.from_csv(data, col, up.name)
        else:
            corpus = cp.from_text(data, up.name)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    if st.toggle("Parse with spaCy (English, silver dependencies) for the syntax report", key="at_parse"):
        return replace(corpus, parser="spaCy (to parse)")
    return corpus


def run_panel(model_key: str, corpus) -> None:
    """Run / resume button, the job's progress with Cancel, and what the last run did."""
    from attnviz.atlas.store import finished

    words = st.toggle("Merge word pieces into words (Clark et al.)", value=True, key="at_words",
                      help="Statistics about words, as Clark et al.; off: about the tokenizer's pieces.")
    folder = folder_for(model_key, corpus, words)
    n_done = len(finished(folder)) if folder.exists() else 0
    running = jobs.running(JOB)
    c1, c2, c3 = st.columns([2, 1, 3])
    n_chunks = -(-len(corpus) // CHUNK_SIZE)
    complete = n_done >= n_chunks
    label = "Stored: complete" if complete else ("▶ Resume the run" if n_done else "▶ Run the corpus")
    if c1.button(label, key="at_run", type="primary", disabled=running or complete,
                 help="A finished run is found again on every visit; choose another corpus to run more."):
        _start(model_key, corpus, folder, words)
        st.rerun()
    c2.button("■ Cancel", key="at_cancel", disabled=not running, on_click=jobs.cancel, args=(JOB,))
    c3.caption(f"{count_text(len(corpus))} sentences" + (f" ({corpus.n_cut} long lines cut)" if corpus.n_cut else "")
               + (f" · parses: {corpus.parser}" if corpus.parser else " · no parses (no syntax report)")
               + f" · stored in `{folder}`")
    jobs.watch(JOB, jobs.bar, on_done=_collect)
    done = st.session_state.get("at_last")
    if done:
        st.success(done) if not done.startswith("Cancelled") else st.info(done)
    job = jobs.current(JOB)
    if job is not None and job.done and job.error:
        st.warning(job.error)


def _start(model_key: str, corpus, folder: Path, words: bool) -> None:
    from attnviz.atlas.run import run_corpus
    from attnviz.ui.cache import get_model

    def work(report, cancel):
        loaded = get_model(model_key)
        c = corpus
        if c.parser == "spaCy (to parse)":
            c = cp.with_parses(replace(c, parser=""), progress=lambda d, t: report(0, 1, f"parsing {d} of {t}"))
        return run_corpus(model_key, c, folder, loaded=loaded, engine="inline", words=words,
                          progress=lambda d, t, m: report(d, t, f"{d} of {count_text(t)} sentences · {m}"),
                          cancelled=cancel.is_set)

    st.session_state.pop("at_last", None)
    jobs.start(JOB, work, "atlas run")


def _collect(job) -> None:
    s = job.result
    if s is None:
        return
    st.session_state["at_store"] = s.folder
    st.session_state["at_last"] = (("Cancelled: " if s.cancelled else "Done: ")
                                   + f"{s.n_done} of {count_text(s.n_sentences)} sentences stored ({s.n_resumed} from an earlier "
                                   f"run, {s.n_truncated} cut at the model's limit) in {s.seconds:.1f} s.")


def choose_store(model_key: str):
    """The Atlas of the run chosen among this model's stored runs, or None (with a message)."""
    from attnviz.ui.cache import atlas_view

    runs = stored_runs(model_key)
    if not runs:
        st.info(f"No corpus run is stored for **{model_key}** yet: run one above.")
        return None
    folders = [str(f) for f, _ in runs]
    if st.session_state.get("at_store") not in folders:
        st.session_state["at_store"] = folders[0]
    labels = {str(f): run_label(f, info) for f, info in runs}
    chosen = st.selectbox("Stored run", folders, key="at_store", format_func=labels.get)
    try:
        from attnviz.atlas.store import finished

        return atlas_view(chosen, tuple(sorted(finished(Path(chosen)))))
    except AttnvizError as e:
        st.warning(str(e))
        return None


def open_head_on_typical(atlas, layer: int, head: int) -> None:
    """Open (layer, head) on the heatmap page on its most typical corpus sentence, at the run's level (words or
    pieces); the sidebar says its text was replaced and offers the previous one back."""
    from attnviz.ui.metrics import open_head
    from attnviz.ui.sidebar import replace_text

    _, text = atlas.typical_sentence(layer, head)
    replace_text(text, f"The Head atlas opened layer {layer}, head {head} on its most typical corpus sentence, "
                       "which replaced your text.", words=bool(atlas.info.get("words")))
    open_head(layer, head)


def head_grid_clicks(atlas, fig, key: str) -> None:
    """Show a head grid of the atlas, drawn in place (a new statistic or pattern redraws it once); a click opens that
    head on its most typical corpus sentence."""
    from attnviz.ui.metrics import clickable_head_grid

    clickable_head_grid(fig, key, on_click=lambda layer, head: open_head_on_typical(atlas, layer, head), in_place=True)


# ------------------------------------------------------------------ the five views
def heads_view(atlas) -> None:
    choices.keep_choice("at_stat", STATS, STATS[0])
    stat = st.selectbox("Statistic", STATS, format_func=STAT_LABELS.get, key="at_stat")
    m = atlas.stat_map(stat)
    head_grid_clicks(atlas, af.stat_map(m, STAT_LABELS[stat], atlas.n_sentences), "at_stat_map")
    st.caption("Each cell is the mean over the corpus's sentences; hover for the 95% interval (mean ± 1.96 standard "
               "errors, the sentences as the sample). Click a head to open it on the heatmap page on its most typical "
               "sentence: that sentence replaces the sidebar's text (and Word level follows the run); the sidebar "
               "then offers your text back.")


@part
def pattern_view(atlas) -> None:
    """A pattern's rank map and table: reruns alone when the pattern changes."""
    c1, c2, c3 = st.columns([2, 2, 2])
    choices.keep_choice("at_kind", PATTERN_KINDS, next(iter(PATTERN_KINDS)))
    kind = c1.selectbox("Pattern", list(PATTERN_KINDS), format_func=lambda k: PATTERN_KINDS[k].split(":")[0],
                        key="at_kind")
    args = {}
    if kind == "offset":
        args["offset"] = int(number_box(c2, "Offset (key − query)", -20, 20, -1, key="at_offset"))
    elif kind == "regex":
        args["q_regex"] = c2.text_input("Query token (regex)", "^[A-Za-z]+$", key="at_qre")
        args["k_regex"] = c3.text_input("Key token (regex)", r"^[.,;!?]$", key="at_kre")
    elif kind == "pos":
        tags = ["", "NOUN", "VERB", "ADJ", "ADV", "DET", "ADP", "PRON", "PROPN", "AUX", "PUNCT", "NUM", "CCONJ"]
        args["q_pos"] = c2.selectbox("Query part of speech", tags, index=tags.index("ADJ"), key="at_qpos")
        args["k_pos"] = c3.selectbox("Key part of speech", tags, index=tags.index("NOUN"), key="at_kpos")
    elif kind == "dep":
        rels = atlas.relations()
        args["relation"] = c2.selectbox("Relation", rels or ["det"], key="at_rel")
        args["direction"] = c3.selectbox("Direction", ["dependent → head", "head → dependent"], key="at_dir")
    p = Pattern(kind, **args)
    try:
        ranked = atlas.rank(p)
    except AttnvizError as e:
        st.warning(str(e))
        return
    score = np.zeros((atlas.n_layers, atlas.n_heads))
    for r in ranked:
        score[r["layer"], r["head"]] = r["score"]
    if score.max() <= 0:
        st.info(f"No head attends along this pattern ({p.describe()}) in the stored pairs: nothing matches.")
        return
    left, right = st.columns([3, 2])
    with left:
        head_grid_clicks(atlas, af.pattern_map(score, p.describe()), "at_pattern_map")
    with right:
        import pandas as pd

        st.dataframe(pd.DataFrame(ranked[:10]).rename(columns={"covered": "weight in stored pairs"}),
                     hide_index=True, width="stretch")
        st.caption("Score (TransformerLens's detector score): the weight each head's rows put on the pattern's "
                   "cells over the weight of all its rows, summed over the corpus. Computed from each row's "
                   "strongest stored pairs; 'weight in stored pairs' says how much of the head they hold.")


def related_view(atlas) -> None:
    best, best_score = atlas.strongest_role()
    min_score = st.slider("Colour a head by its strongest role when its score is at least", 0.0, 1.0, 0.4, 0.05,
                          key="at_min_role")
    chosen = st.session_state.get("at_related_head")
    fig = af.head_scatter(atlas.head_map(), best, best_score, atlas.n_heads, min_score, selected=chosen)
    left, right = st.columns([3, 2])
    with left:
        show_figure(fig, key="at_mds", on_select="rerun", selection_mode="points")
    hit = clicked_head("at_mds")
    if hit and hit != chosen:
        st.session_state["at_related_head"] = chosen = hit
        st.rerun()
    with right:
        if chosen is None:
            st.markdown("Click a head to list the heads that attend most like it.")
        else:
            layer, head = chosen
            st.markdown(f"**Heads nearest to layer {layer}, head {head}** (mean Jensen-Shannon divergence of "
                        "their attention rows over the corpus, in nats; 0 = identical):")
            import pandas as pd

            st.dataframe(pd.DataFrame(atlas.related(layer, head, 8)), hide_index=True, width="stretch")
            if st.button("Open this head on its most typical sentence", key="at_open_related"):
                open_head_on_typical(atlas, layer, head)
    st.caption("Heads are placed by classical multidimensional scaling of the Jensen-Shannon distance between their "
               "attention (as Clark et al.'s Figure 6): heads close together attend alike.")


def syntax_view(atlas) -> None:
    import pandas as pd

    if not atlas.has_syntax:
        st.info("This run has no dependency parses. Run the default corpus (its generated sentences have gold "
                "parses), a CoNLL-U file, or a text file with 'Parse with spaCy'.")
        return
    parser = atlas.info.get("parser") or "unknown"
    st.caption(f"Parses: **{parser}**." + (" spaCy's parses are *silver*: a parser's guesses, not gold annotation; "
                                          "accuracies against them inherit its errors." if "spaCy" in parser else ""))
    rows = atlas.syntax_report(min_arcs=int(number_box(st, "Relations with at least this many arcs", 1, 10_000, 10,
                                                        key="at_min_arcs")))
    if not rows:
        st.info("No relation has that many arcs in this corpus.")
        return
    table = pd.DataFrame([{"relation": r["relation"], "arcs": r["arcs"], "best head": f"{r['layer']}-{r['head']}",
                           "direction": r["direction"], "accuracy": r["accuracy"],
                           "best offset": r["baseline_offset"], "offset accuracy": r["baseline_accuracy"]}
                          for r in rows])
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="percent") for c in ("accuracy", "offset accuracy")})
    rel = st.selectbox("Relation", [r["relation"] for r in rows], key="at_syn_rel")
    row = next(r for r in rows if r["relation"] == rel)
    relations, hits, counts, off, _ = atlas.syntax_sums()
    i = relations.index(rel)
    d = 0 if row["direction"].startswith("dependent") else 1
    acc = hits[i, d] / max(counts[i, d], 1)
    head_grid_clicks(atlas, af.relation_heads(acc, rel, row["direction"], row["baseline_accuracy"]), "at_syn_map")
    sentence_arcs(atlas, row["layer"], row["head"])


def sentence_arcs(atlas, layer: int, head: int) -> None:
    """One parsed sentence: its dependency arcs, and where a head's attention goes (each word's strongest target)."""
    from attnviz.atlas.syntax import word_attention
    from attnviz.types import Request
    from attnviz.ui.cache import get_model, get_result

    st.markdown("**One sentence**: its dependencies above the words, and below them where the chosen head looks "
                "(each word's strongest target at word level; thicker = more weight).")
    sents = atlas.parsed_sentences()
    c1, c2, c3 = st.columns([4, 1, 1])
    sid = choices.selectbox(c1, "Sentence", [s for s, _ in sents], key="at_arc_sid",
                            format_func=dict(sents).get)  # another stored run: the same ids, other sentences
    layer = int(number_box(c2, "Layer", 0, atlas.n_layers - 1, layer, key="at_arc_layer"))
    head = int(number_box(c3, "Head", 0, atlas.n_heads - 1, head, key="at_arc_head"))
    try:
        parse = atlas.parse_of(sid)
        key = atlas.info["model"]
        get_model(key)
        result = get_result(Request(key, dict(sents)[sid], None, atlas.info.get("max_tokens")))
    except AttnvizError as e:
        st.warning(str(e))
        return
    from attnviz.words.merge import word_starts

    starts = word_starts(result.continuation, result.special_mask) if atlas.info.get("words") else \
        np.arange(result.seq_len)
    piece_token = np.searchsorted(starts, np.arange(result.seq_len), side="right") - 1
    piece_word = parse["pword"][piece_token]
    w = word_attention(result.attention[layer:layer + 1, head:head + 1], piece_word, len(parse["words"]))[0, 0]
    np.fill_diagonal(w, 0.0)
    show_figure(af.dependency_arcs(parse["words"], parse["heads"], parse["deprels"], w,
                                   title=f"Dependencies (blue) and layer {layer}, head {head} (red)"), key="at_arcs")


def search_view(atlas) -> None:
    c = st.columns([1, 1, 1, 2, 2])
    layer = int(number_box(c[0], "Layer", 0, atlas.n_layers - 1, 0, key="at_s_layer"))
    head = int(number_box(c[1], "Head", 0, atlas.n_heads - 1, 0, key="at_s_head"))
    w = float(number_box(c[2], "Weight above", 0.0, 1.0, 0.3, step=0.05, key="at_s_w"))
    qx = c[3].text_input("From a token matching", "", key="at_s_q", placeholder="regex, e.g. ^(he|she|it)$")
    kx = c[4].text_input("To a token matching", "", key="at_s_k", placeholder="regex; empty = any")
    try:
        hits = atlas.search(layer, head, w, qx, kx, limit=50)
    except AttnvizError as e:
        st.warning(str(e))
        return
    st.caption(f"{len(hits)} contexts (at most 50, strongest first). " + SEARCH_NOTE)
    if not hits:
        st.info("No stored pair matches: lower the weight or widen the patterns.")
    for h in hits:
        parts = []
        for i, t in enumerate(h["tokens"]):
            t = html.escape(t)
            if i == h["q"] and i == h["k"]:
                t = f"<mark style='background:#f2cf5b'><b>{t}</b></mark>"
            elif i == h["q"]:
                t = f"<mark style='background:#9ecae9'><b>{t}</b></mark>"
            elif i == h["k"]:
                t = f"<mark style='background:#f2cf5b'><b>{t}</b></mark>"
            parts.append(t)
        st.html(f"<div style='margin:2px 0'><code>{h['w']:.2f}</code> · sentence {h['sid']} · " + " ".join(parts)
                + "</div>")
