"""The embedded engine: local worker processes (spawned, so each starts clean), each loading the model
once and writing the chunks it is given straight into the store. One torch thread per worker: the
workers share the machine's cores instead of fighting over them."""
from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

_STATE: dict = {}


def process_chunk(loaded, items, *, words: bool = True, max_tokens: int | None = None) -> list:
    """SentenceRecords of one chunk's sentences [(sentence id, text, parse or None)]: the unit every
    engine runs."""
    from attnviz.atlas.stats import sentence_record
    from attnviz.extract import extract

    out = []
    for sid, text, parse in items:
        result = extract(loaded, text, max_tokens=max_tokens)
        out.append(sentence_record(sid, result, parse, words=words, tokenizer=loaded.tokenizer))
    return out


def _init(model_key: str, folder: str, words: bool, max_tokens, threads: int) -> None:
    import torch
    import transformers

    from attnviz.models import load_model

    torch.set_num_threads(threads)
    transformers.logging.set_verbosity_error()
    _STATE.update(loaded=load_model(model_key), folder=Path(folder), words=words, max_tokens=max_tokens)


def _work(job):
    from attnviz.atlas import store

    chunk, items = job
    records = process_chunk(_STATE["loaded"], items, words=_STATE["words"], max_tokens=_STATE["max_tokens"])
    store.write_chunk(_STATE["folder"], chunk, records)
    return chunk, len(records), sum(r.truncated for r in records)


def run_embedded(model_key: str, todo, folder, *, workers: int = 2, words: bool = True, max_tokens=None,
                 cancelled=None):
    """Yields (chunk, sentences, truncated) as chunks finish; (None, 0, 0) once if cancelled (the pool is
    stopped; finished chunks stay stored, the chunk being written is dropped by the next run)."""
    if not todo:
        return
    workers = max(1, min(workers, len(todo)))
    threads = max(1, (mp.cpu_count() or 1) // workers)
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=_init, initargs=(model_key, str(folder), words, max_tokens, threads)) as pool:
        for out in pool.imap_unordered(_work, todo):
            yield out
            if cancelled and cancelled():
                pool.terminate()
                pool.join()
                yield None, 0, 0
                return
        pool.close()
        pool.join()
