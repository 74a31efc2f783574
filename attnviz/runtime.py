"""Process-wide runtime settings: torch threads set once, the user's cache folder, writing a file atomically, free
memory, reading a transformers config's sizes under their many names, and a memory check before loading a model."""
from __future__ import annotations

import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from attnviz.errors import ModelTooLarge
from attnviz.units import dtype_bytes, human_bytes

# Share of the estimated weight bytes added for activations, the tokenizer and loading overhead.
LOAD_OVERHEAD = 0.25
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")

_threads_lock = threading.Lock()
_threads_set: int | None = None


def cpu_threads() -> int:
    """CPUs this process may run on (ATTNVIZ_THREADS overrides)."""
    env = os.environ.get("ATTNVIZ_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def configure_threads() -> int:
    """Set torch's intra-op threads to the CPU count and numpy's BLAS to one thread (one_blas_thread), once per
    process; returns the count.

    Forward passes are serialised per model by LoadedModel.lock, so one pass at a time uses
    every core and concurrent sessions queue instead of oversubscribing the cores."""
    global _threads_set
    with _threads_lock:
        if _threads_set is None:
            import torch

            one_blas_thread()
            _threads_set = cpu_threads()
            torch.set_num_threads(_threads_set)
        return _threads_set


_blas_lock = threading.Lock()
_blas_set = False


def one_blas_thread() -> None:
    """Hold numpy's BLAS to one thread, once per process (the app calls it on its first run, before any page).

    numpy's OpenBLAS keeps its threads spinning for about a tenth of a second after each multi-threaded product, on
    cores torch, numba and the browser then want: measured here, MiniLM's forward over 512 tokens took 164 ms right
    after six 512 x 512 numpy products and 75-100 ms otherwise. numpy's products in attnviz are small (rollout's
    go through torch), one thread does them."""
    global _blas_set
    with _blas_lock:
        if not _blas_set:
            from threadpoolctl import threadpool_limits

            threadpool_limits(1, user_api="blas")
            os.environ["OPENBLAS_NUM_THREADS"] = "1"  # for an OpenBLAS loaded later (scipy's own)
            _blas_set = True


# A forward pass over at most SMALL_TOKENS tokens (batch x positions) of a model whose weights take at most
# SMALL_WEIGHTS bytes runs on one torch thread.
SMALL_TOKENS = 128
SMALL_WEIGHTS = 256 * 2**20


def weights_bytes(model) -> int:
    """Bytes of a torch model's parameters (a weight shared by two layers counted once)."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


@contextmanager
def threads_for(tokens: int | None, cached: bool = False, weights: int = 0):
    """One torch thread inside the block for a short pass of a small model (at most SMALL_TOKENS tokens, weights
    of at most SMALL_WEIGHTS bytes), the process's count otherwise (tokens None: unchanged).

    In the app a short pass shares the cores with the server's other threads and the browser, which is busy with
    the run's first messages while the pass starts: measured here, MiniLM (87 MiB) over 16 tokens took about 70 ms
    on two threads and 20 ms on one in the server (12 and 14 ms alone), and over 115 tokens about 80 and 55 ms;
    over 512 tokens two threads win (195 against 280 ms). A larger model's short pass is bound by reading its
    weights, which two threads do faster, and lasts past the browser's burst: SmolLM2 (513 MiB) over 19 tokens
    took 146 ms on one thread and 91 ms on two alone, and a text edit on the heatmap page 401 and 382 ms; a
    random BERT-base (418 MiB) was as fast on either at 16 tokens and faster on two at about 100 (544 against 521
    ms), a BERT of 206 MiB slightly faster on one at about 100 (452 against 466 ms).
    A pass that continues from a cache of keys and values (cached: a generation step) keeps the process's count
    however few its tokens: it reads every weight of the model for one token (SmolLM2 writing 128 tokens,
    recorded: 6.6 s on two threads, 10.4 s on one). torch's count is the process's: a pass of another model
    running at that moment (the passes of one model take turns) may use one thread for a few milliseconds."""
    n = configure_threads()
    if tokens is None or cached or tokens > SMALL_TOKENS or weights > SMALL_WEIGHTS or n == 1:
        yield
        return
    import torch

    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def cache_dir() -> Path:
    """attnviz's folder in the user's cache: $ATTNVIZ_CACHE_DIR, else $XDG_CACHE_HOME/attnviz, else
    ~/.cache/attnviz (created by whoever writes into it)."""
    own = os.environ.get("ATTNVIZ_CACHE_DIR", "").strip()
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "attnviz"


def write_atomically(target: Path, data: str | bytes, mode: int | None = None, mtime: float | None = None) -> None:
    """Write `data` (text as UTF-8) to a temporary file beside `target`, give it `mode` and `mtime` when asked, and
    rename it over `target`, so that a reader (another process, a web server) sees the old file or the new one, never
    half; the folder is made if missing. OSError propagates, and no temporary file is left."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(tmp, mode)
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def available_bytes() -> int | None:
    """Memory available to new allocations (MemAvailable), or None when unknown."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # free pages only (less than what could be reclaimed): a safe underestimate
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


# What each size is called in the configs of different transformers architectures
# (BERT/Llama, GPT-2, T5/BART ...), in the order they are tried.
CONFIG_NAMES = {
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "n_heads": ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"),
    "n_kv_heads": ("num_key_value_heads",),
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers", "encoder_layers"),
    "d_ff": ("intermediate_size", "n_inner", "d_ff", "encoder_ffn_dim", "ffn_dim"),
    "max_positions": ("max_position_embeddings", "n_positions", "max_seq_len"),
    "vocab": ("vocab_size",),
    "encoder_layers": ("encoder_layers", "num_layers"),
    "decoder_layers": ("decoder_layers", "num_decoder_layers"),
}


def config_value(config, what, default=None):
    """The first attribute of a transformers config that is set (not None) among the names of
    `what` (a key of CONFIG_NAMES, or a tuple of attribute names); `default` when none is."""
    names = CONFIG_NAMES[what] if isinstance(what, str) else tuple(what)
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def estimate_parameters(config) -> int:
    """Parameter count of a transformer from its config: embeddings + per layer attention
    (Q, O: d x d; K, V: d x kv_dim) and MLP (2 or, gated, 3 matrices d x d_ff). Biases and
    norms are left out (well under 1 %). Cross-attention counts for encoder-decoder decoders."""
    d = int(config_value(config, "d_model", 0))
    vocab = int(config_value(config, "vocab", 0))
    n_heads = int(config_value(config, "n_heads", 1))
    kv_dim = int(config_value(config, "n_kv_heads", n_heads)) * (d // max(n_heads, 1))
    d_ff = int(config_value(config, "d_ff", 0) or 4 * d)
    gated = hasattr(config, "num_key_value_heads") or "gated" in str(getattr(config, "feed_forward_proj", ""))
    attn = 2 * d * d + 2 * d * kv_dim
    mlp = (3 if gated else 2) * d * d_ff
    if getattr(config, "is_encoder_decoder", False):
        enc = int(config_value(config, "encoder_layers", 0))
        dec = int(config_value(config, "decoder_layers", enc))
        layers = enc * (attn + mlp) + dec * (2 * attn + mlp)
    else:
        layers = int(config_value(config, "n_layers", 0)) * (attn + mlp)
    embeddings = vocab * d * (1 if getattr(config, "tie_word_embeddings", True) else 2)
    positions = int(config_value(config, "max_positions", 0) or 0) * d
    return int(embeddings + positions + layers)


def weight_file_bytes(folder: str | Path | None) -> int:
    """Total size of the weight files in a model folder (safetensors preferred, as transformers
    does); 0 when there is no folder or no weights."""
    if not folder:
        return 0
    path = Path(folder)
    if not path.is_dir():
        return 0
    files = [p for p in path.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file()]
    safe = [p for p in files if p.suffix == ".safetensors"]
    return sum(p.stat().st_size for p in (safe or files))  # stat follows HF cache symlinks


def cached_folder(name: str) -> str | None:
    """The HF-cache snapshot folder of a hub id, if its config is cached."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # bad repo id, no cache: nothing to measure
        return None
    return str(Path(found).parent) if isinstance(found, str) else None


def estimate_model_bytes(config, folder: str | Path | None = None, gguf: bool = False) -> int:
    """Bytes the loaded weights take: the larger of parameters x dtype size (float32 for GGUF,
    which is dequantised) and the weight files on disk."""
    dtype = config_value(config, ("dtype",), "float32")  # transformers 5 maps torch_dtype here
    per_param = 4 if gguf else dtype_bytes(dtype, default=4)
    return max(estimate_parameters(config) * per_param, 0 if gguf else weight_file_bytes(folder))


def check_fits(name: str, config, folder: str | Path | None = None, gguf: bool = False,
               available: int | None = None) -> None:
    """Raise ModelTooLarge when the model would not fit in the memory available now.

    available: bytes free (default: measured). ATTNVIZ_SKIP_MEMORY_CHECK=1 turns the check off."""
    if os.environ.get("ATTNVIZ_SKIP_MEMORY_CHECK") == "1":
        return
    free = available_bytes() if available is None else available
    if free is None:
        return
    weights = estimate_model_bytes(config, folder, gguf)
    needed = int(weights * (1 + LOAD_OVERHEAD))
    if needed > free:
        raise ModelTooLarge(
            f"{name} needs about {human_bytes(needed)} of memory to load (about "
            f"{estimate_parameters(config) / 1e6:,.0f} million parameters, {human_bytes(weights)} of weights), "
            f"but only {human_bytes(free)} is free on this machine. Choose a smaller model "
            "(the packaged ones fit), or free memory and try again."
        )
