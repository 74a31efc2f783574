"""The Ray engine of corpus runs: Ray Data with the model held by actors, writing the same Parquet files as
the embedded engine (attnviz.atlas.workers).

A dataset of chunks (one row per chunk: its id and its items pickled to bytes, so the parses - frozen
`Parsed` dataclasses - reach the actors as they are instead of being turned into Arrow structs) goes through
`map_batches` with a callable class on an actor pool (`concurrency=workers`, one chunk per batch). Each
actor loads the model once, runs `workers.process_chunk` on its chunk and writes it into the store with
`store.write_chunk`; the driver only collects (chunk, sentences, truncated) counts as chunks finish.

Where it runs: `RAY_ADDRESS` set (`ray://head:10001`, `auto`, `host:6379`) -> that cluster; otherwise a
local Ray instance with `workers` CPUs, no dashboard, started here and shut down after the run. A Ray
already initialised by the caller is used as it is and left running. On a cluster the store folder must be
a path every node can write (a shared filesystem mounted at the same path): the actors write the files.
The attnviz package is shipped to the actors with the job (`py_modules`); its dependencies and the
packaged models must be installed on every node (docs/atlas.md)."""
from __future__ import annotations

import logging
import os
import pickle
import warnings
from pathlib import Path

import numpy as np

from attnviz.errors import AttnvizError

# environment passed on to the actors when the driver has it (offline hub, tokenizer threads, caches)
PASS_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "HF_HUB_CACHE", "TOKENIZERS_PARALLELISM")
_QUIET = ("ray", "ray.data", "ray.data._internal")


class ChunkWriter:
    """One Ray actor: loads the model once, then computes and stores one chunk per call."""

    def __init__(self, model_key: str, folder: str, words: bool, max_tokens: int | None, threads: int = 1):
        import torch
        import transformers

        from attnviz.models import load_model

        torch.set_num_threads(threads)
        transformers.logging.set_verbosity_error()
        self.loaded = load_model(model_key)
        self.folder, self.words, self.max_tokens = Path(folder), words, max_tokens

    def __call__(self, batch: dict) -> dict:
        """batch: {"chunk": (b,) ints, "payload": (b,) pickled [(sid, text, parse or None), ...]}
        -> {"chunk", "n", "truncated"}: (b,) ints each (b = 1 with batch_size=1)."""
        from attnviz.atlas import store
        from attnviz.atlas.workers import process_chunk

        out = {"chunk": [], "n": [], "truncated": []}
        for chunk, payload in zip(batch["chunk"], batch["payload"]):
            items = pickle.loads(payload)
            records = process_chunk(self.loaded, items, words=self.words, max_tokens=self.max_tokens)
            store.write_chunk(self.folder, int(chunk), records)
            out["chunk"].append(int(chunk))
            out["n"].append(len(records))
            out["truncated"].append(int(sum(r.truncated for r in records)))
        return {k: np.array(v, np.int64) for k, v in out.items()}


def runtime_env() -> dict:
    """The job's runtime environment: the attnviz package itself (small: shipped through the cluster's own
    object store, nothing is downloaded) and the driver's offline/cache settings."""
    import attnviz

    env = {k: os.environ[k] for k in PASS_ENV if k in os.environ}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return {"py_modules": [str(Path(attnviz.__file__).parent)], "env_vars": env,
            "excludes": ["__pycache__", "*.pyc"]}


def start_ray(workers: int) -> bool:
    """Connect to RAY_ADDRESS or start a local instance; True when this call started/connected Ray (and so
    must shut it down), False when the caller had Ray running already."""
    import ray

    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never report usage over the network
    address = os.environ.get("RAY_ADDRESS", "").strip()
    common = dict(runtime_env=runtime_env(), include_dashboard=False, configure_logging=True,
                  logging_level=logging.ERROR, log_to_driver=False)
    try:
        if address:
            _check_reachable(address)
            ray.init(address=address, **common)
        else:
            os.environ.pop("RAY_ADDRESS", None)  # an empty value would mean "connect"
            ray.init(num_cpus=max(1, workers), _node_ip_address="127.0.0.1",
                     object_store_memory=128 * 2**20, **common)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at RAY_ADDRESS={address!r}" if address else "a local Ray instance"
        raise AttnvizError(f"Could not start or reach {where}: {str(e).splitlines()[0] if str(e) else e}") from None
    return True


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on a host:port (or ray://host:port) nobody listens on: Ray itself would wait minutes."""
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    if address == "auto" or ":" not in hostport:
        return
    host, _, port = hostport.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as e:
        raise ConnectionError(f"nothing answers at {hostport} ({e.__class__.__name__}: {e})") from None


def run_ray(model_key: str, todo, folder, *, workers: int = 2, words: bool = True, max_tokens=None,
            cancelled=None):
    """Yields (chunk, sentences, truncated) as chunks finish, like workers.run_embedded.
    todo: [(chunk id, [(sentence id, text, parse or None), ...]), ...]. With `cancelled`, stops between
    chunks (finished chunks stay stored) and yields (None, 0, 0) once."""
    if not todo:
        return
    if workers < 1:
        raise AttnvizError("--workers must be at least 1.")
    import ray
    import ray.data

    workers = min(workers, len(todo))
    address = os.environ.get("RAY_ADDRESS", "").strip()
    started = start_ray(workers)
    ctx = ray.data.DataContext.get_current()
    saved = {k: getattr(ctx, k) for k in ("enable_progress_bars", "print_on_execution_start",
                                          "enable_auto_log_stats")}
    levels = {name: logging.getLogger(name).level for name in _QUIET}
    try:
        for k in saved:
            setattr(ctx, k, False)
        ctx.execution_options.preserve_order = False  # yield chunks as they finish
        for name in _QUIET:
            logging.getLogger(name).setLevel(logging.ERROR)
        rows = [{"chunk": int(c), "payload": pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)}
                for c, items in todo]
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))  # one block a chunk: any actor takes any
        # one chunk in flight per actor: the first actor ready must not queue every chunk while the others load
        pool = ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1)
        # a local instance: an actor that dies fails the run (re-running resumes); on a cluster Ray Data
        # restarts lost actors (it then logs once that their constructor arguments live in the object store)
        restarts = {} if address else {"max_restarts": 0}
        with warnings.catch_warnings():  # max_restarts has no named parameter yet (Ray 2.60)
            warnings.simplefilter("ignore", DeprecationWarning)
            out = ds.map_batches(ChunkWriter, batch_size=1, compute=pool,
                                 num_cpus=1, batch_format="numpy", **restarts,
                                 fn_constructor_kwargs=dict(model_key=model_key, folder=str(Path(folder).resolve()),
                                                            words=words, max_tokens=max_tokens, threads=1))
        try:
            for row in out.iter_rows():
                yield int(row["chunk"]), int(row["n"]), int(row["truncated"])
                if cancelled and cancelled():
                    yield None, 0, 0
                    return
        except ray.exceptions.RayError as e:
            raise AttnvizError(f"The Ray run failed: {_first_cause(e)}") from None
    finally:
        for k, v in saved.items():
            setattr(ctx, k, v)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        if started:
            ray.shutdown()


def _first_cause(e: BaseException) -> str:
    """The innermost error's message of a Ray failure (an actor's exception arrives wrapped)."""
    cause = getattr(e, "cause", None) or e.__cause__
    while cause is not None and (getattr(cause, "cause", None) or cause.__cause__) is not None:
        cause = getattr(cause, "cause", None) or cause.__cause__
    msg = str(cause if cause is not None else e).strip().splitlines()
    return msg[-1] if msg else type(e).__name__
