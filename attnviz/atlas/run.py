"""Corpus runs: every sentence through the model, its SentenceRecord computed, written to the store one
chunk at a time (attnviz.atlas.store). Engines:
  inline    in the calling thread with a model already loaded (the app's background job);
  embedded  local worker processes, each loading the model once (the command line's default);
  ray       Ray Data with the model held by actors (attnviz.atlas.ray_engine), same files.
Every engine calls workers.process_chunk on the same chunks, so the stores they write are identical."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from attnviz.atlas.corpus import Corpus
from attnviz.atlas.workers import process_chunk, run_embedded
from attnviz.atlas import store
from attnviz.errors import AttnvizError, BadInput
from attnviz.units import count_text

CHUNK_SIZE = 64
ENGINES = ("inline", "embedded", "ray")


@dataclass(frozen=True)
class RunSummary:
    folder: str
    n_sentences: int  # in the corpus
    n_done: int  # stored (earlier runs included)
    n_resumed: int  # already stored when this run started
    n_truncated: int  # sentences cut at the model's limit, in this run
    seconds: float
    cancelled: bool


def chunk_items(corpus: Corpus, size: int = CHUNK_SIZE) -> list[tuple[int, list[tuple[int, str, object]]]]:
    """[(chunk id, [(sentence id, text, parse or None), ...]), ...] in corpus order."""
    parses = corpus.parses or (None,) * len(corpus)
    items = [(i, t, p) for i, (t, p) in enumerate(zip(corpus.texts, parses))]
    return [(c, items[s:s + size]) for c, s in enumerate(range(0, len(items), size))]


def run_info(model_key: str, corpus: Corpus, words: bool, chunk_size: int, max_tokens: int | None) -> dict:
    return {"model": model_key, "corpus": corpus.name, "corpus_digest": corpus.digest, "n_sentences": len(corpus),
            "words": words, "chunk_size": chunk_size, "max_tokens": max_tokens, "parser": corpus.parser,
            "schema": store.SCHEMA}


def run_corpus(model_key: str, corpus: Corpus, folder, *, loaded=None, engine: str = "inline", workers: int = 2,
               words: bool = True, chunk_size: int = CHUNK_SIZE, max_tokens: int | None = None,
               restart: bool = False, progress: Callable | None = None,
               cancelled: Callable[[], bool] | None = None) -> RunSummary:
    """Run `corpus` on the model `model_key` into the store `folder`, resuming finished chunks.
    progress(done, total, message) after every chunk; cancelled() is asked between chunks (a cancelled
    run keeps every finished chunk). `loaded` (an attnviz LoadedModel) is needed by the inline engine."""
    if engine not in ENGINES:
        raise BadInput(f"Unknown engine {engine!r}; choose one of {', '.join(ENGINES)}.")
    if len(corpus) == 0:
        raise BadInput("The corpus is empty: give one sentence or paragraph per line.")
    folder = Path(folder)
    done = store.open_for_run(folder, run_info(model_key, corpus, words, chunk_size, max_tokens), restart=restart)
    chunks = chunk_items(corpus, chunk_size)
    todo = [(c, items) for c, items in chunks if c not in done]
    n_resumed = sum(len(items) for c, items in chunks if c in done)
    start, n_done, n_trunc, stop = time.perf_counter(), n_resumed, 0, False
    report = progress or (lambda *a: None)
    report(n_done, len(corpus), f"{count_text(n_resumed)} sentences already stored" if n_resumed else "starting")
    if engine == "inline":
        if loaded is None:
            raise AttnvizError("The inline engine needs the loaded model.")
        for c, items in todo:
            if cancelled and cancelled():
                stop = True
                break
            records = process_chunk(loaded, items, words=words, max_tokens=max_tokens)
            store.write_chunk(folder, c, records)
            n_done += len(records)
            n_trunc += sum(r.truncated for r in records)
            report(n_done, len(corpus), f"chunk {c + 1} of {len(chunks)}")
    else:  # engines that yield (chunk, sentences, truncated) as chunks finish, (None, 0, 0) once if cancelled
        if engine == "embedded":
            finished_chunks = run_embedded
        else:
            from attnviz.atlas.ray_engine import run_ray as finished_chunks
        for c, n, t in finished_chunks(model_key, todo, folder, workers=workers, words=words, max_tokens=max_tokens,
                                       cancelled=cancelled):
            if c is None:
                stop = True
                break
            n_done += n
            n_trunc += t
            report(n_done, len(corpus), f"chunk {c + 1} of {len(chunks)}")
    return RunSummary(str(folder), len(corpus), n_done, n_resumed, n_trunc, time.perf_counter() - start, stop)
