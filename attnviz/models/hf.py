"""Load any HuggingFace model with eager attention, offline first; read its facts."""
from __future__ import annotations

import os
import socket
from dataclasses import replace
from pathlib import Path

from attnviz.errors import AttentionUnavailable, ModelMissing, ModelNotFound, ModelTooLarge
from attnviz.models import converted
from attnviz.progress import Progress, report
from attnviz.runtime import cached_folder, check_fits, config_value
from attnviz.types import ModelFacts

# kind -> name of the transformers Auto class used to load it
AUTO_CLASS = {
    "encoder": "AutoModel",
    "decoder": "AutoModelForCausalLM",
    "encoder-decoder": "AutoModelForSeq2SeqLM",
}


def model_kind(config) -> str:
    """'encoder', 'decoder' or 'encoder-decoder' for a transformers config: the family table's kind, else
    an encoder when transformers has a masked-LM head for the type (BERT-like) and the config is no decoder,
    a decoder when it has a causal-LM head."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    from attnviz.models.families import family_for_type

    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder"
    fam = family_for_type(config.model_type)
    if fam is not None:
        return fam.kind
    is_decoder = getattr(config, "is_decoder", False)
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not is_decoder:
        return "encoder"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or is_decoder:
        return "decoder"
    return "encoder"


def position_scheme(config) -> str:
    """"learned", "rope", "relative", "alibi", "sinusoidal" or "unknown": the family table's, else read off
    the config (RoPE parameters, a maximum number of positions)."""
    from attnviz.models.families import family_for_type

    if getattr(config, "alibi", False) is True:  # Falcon can run either way
        return "alibi"
    fam = family_for_type(config.model_type)
    if fam is not None:
        return fam.positions
    if getattr(config, "rope_theta", None) is not None or getattr(config, "rope_parameters", None):
        return "rope"
    if config_value(config, ("max_position_embeddings", "n_positions")) is not None:
        return "learned"
    return "unknown"


def model_facts(config, name: str, source: str = "", architecture: str | None = None) -> ModelFacts:
    n_heads = int(config_value(config, "n_heads"))
    kind = model_kind(config)
    max_pos = config_value(config, "max_positions")
    if kind == "encoder-decoder" and position_scheme(config) == "relative":
        max_pos = None
    return ModelFacts(
        name=name,
        kind=kind,
        architecture=architecture or (getattr(config, "architectures", None)
                                      or [type(config).__name__.replace("Config", "Model")])[0],
        n_layers=int(config_value(config, "n_layers")),
        n_heads=n_heads,
        n_kv_heads=int(config_value(config, "n_kv_heads", n_heads)),
        d_model=int(config_value(config, "d_model")),
        max_positions=int(max_pos) if max_pos else None,
        position_scheme=position_scheme(config),
        source=source,
    )


def hub_reachable(timeout: float = 1.5) -> bool:
    """True if the HF hub answers quickly (offline machines fail at once on DNS)."""
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("ATTNVIZ_OFFLINE") == "1":
        return False
    try:
        with socket.create_connection(("huggingface.co", 443), timeout=timeout):
            return True
    except OSError:
        return False


def cached_hub_models() -> list[str]:
    """Model repos already in the local HF cache (usable offline)."""
    try:
        from huggingface_hub import scan_cache_dir

        return sorted(r.repo_id for r in scan_cache_dir().repos if r.repo_type == "model")
    except Exception:  # no cache folder, unreadable cache: nothing cached
        return []


# Share of a load's time spent once the config, the weights and the tokenizer are read (the rest of a
# GGUF load saves the converted copy). Measured here (machine load ~19 on 2 cores): SmolLM2's GGUF file,
# config 39 s, weights 119 s, tokenizer 47 s, saving the copy 5 s; its converted copy, config 0.02 s,
# weights 0.7 s, tokenizer 1.1-2.4 s; MiniLM's folder, mostly its weights.
FOLDER_STAGES = (0.02, 0.5, 1.0)
GGUF_STAGES = (0.18, 0.75, 0.97)  # then saving the converted copy up to 1.0
UNITS = 100  # progress is reported in hundredths of the load


def one_call_at_a_time(tokenizer):
    """The tokenizer, its calls made one at a time. A fast (Rust) tokenizer keeps its truncation and padding
    settings in its backend and sets them at the start of each call: a page's run and a background job (a long
    recording, a generation) tokenising at once could otherwise see each other's settings, and a text truncated to
    2,048 tokens come out whole. Slow tokenizers are returned as they are."""
    import threading

    encode = getattr(tokenizer, "_encode_plus", None)
    if encode is None or not hasattr(tokenizer, "_tokenizer") or getattr(encode, "one_at_a_time", False):
        return tokenizer
    lock = threading.RLock()

    def locked(*args, **kwargs):
        with lock:
            return encode(*args, **kwargs)

    locked.one_at_a_time = True
    tokenizer._encode_plus = locked
    return tokenizer


def load_hf(name: str, *, gguf_file: str | None = None, source: str = "", progress: Progress | None = None):
    """(model, tokenizer, facts) for a hub id or a local folder, eager attention, eval mode.

    Tries the local files (folder or HF cache) first and the hub only when it is reachable. A GGUF file
    in a folder is dequantised once and read from its converted copy in the user's cache afterwards
    (attnviz.models.converted). progress(done, 100, label) after each stage. Raises ModelNotFound /
    AttentionUnavailable with plain messages.
    """
    if gguf_file and Path(name).expanduser().is_dir():
        return _load_gguf(Path(name).expanduser(), gguf_file, source, progress)
    return _load(name, gguf_file=gguf_file, source=source, progress=progress,
                 stages=GGUF_STAGES if gguf_file else FOLDER_STAGES)


def _load_gguf(folder: Path, gguf_file: str, source: str, progress: Progress | None):
    """A GGUF model from its converted copy when there is a complete one, else from the file (then saving a copy)."""
    gguf = folder / gguf_file
    if not gguf.is_file():
        raise ModelNotFound(f"There is no GGUF file {gguf}.")
    copy = converted.folder_for(gguf)
    if converted.is_complete(copy, gguf):
        try:
            model, tokenizer, facts = _load(str(copy), source=source, progress=progress)
            return model, tokenizer, replace(facts, name=str(folder))  # named as when read from the file
        except ModelTooLarge:  # the GGUF file's weights would not fit either
            raise
        except Exception:  # a damaged copy: drop it, read the GGUF file again below and save a new one
            converted.discard(copy)
    model, tokenizer, facts = read_gguf(folder, gguf_file, source, progress)
    report(progress, int(UNITS * GGUF_STAGES[-1]), UNITS, "saving a converted copy for the next loads")
    converted.save(model, tokenizer, copy, gguf)
    report(progress, UNITS, UNITS, "loaded")
    return model, tokenizer, facts


def read_gguf(folder: Path, gguf_file: str, source: str, progress: Progress | None = None):
    """(model, tokenizer, facts) dequantised from the GGUF file by transformers (the slow way)."""
    return _load(str(folder), gguf_file=gguf_file, source=source, progress=progress, stages=GGUF_STAGES)


def _load(name: str, *, gguf_file: str | None = None, source: str = "", progress: Progress | None = None,
          stages: tuple[float, float, float] = FOLDER_STAGES):
    """load_hf's work for one source (a folder, a hub id, or a folder's GGUF file read by transformers);
    `stages`: the shares of the load reported after the config, the weights and the tokenizer."""
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    path = Path(name).expanduser()
    is_folder = path.exists()
    if is_folder:
        if not path.is_dir():
            raise ModelNotFound(f"{path} is a file, not a model folder. Give the folder that holds config.json.")
        if gguf_file is None and not (path / "config.json").exists():
            raise ModelNotFound(
                f"The folder {path} has no config.json, so it is not a HuggingFace model folder "
                "(it needs config.json, the weights and the tokenizer files)."
            )
    elif name.startswith((".", "/", "~")):
        raise ModelNotFound(f"There is no folder {path}.")
    kwargs = {"trust_remote_code": False}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file

    attempts = [True] if is_folder or not hub_reachable() else [True, False]
    last_error: Exception | None = None
    for local_only in attempts:
        try:
            config = AutoConfig.from_pretrained(str(path) if is_folder else name, local_files_only=local_only, **kwargs)
            break
        except ValueError as e:  # e.g. a config that needs remote code
            raise ModelNotFound(f"{name} cannot be loaded: {e}") from e
        except OSError as e:
            last_error = e
    else:
        raise ModelMissing(name) from last_error
    report(progress, int(UNITS * stages[0]), UNITS, "config read; reading the weights")

    kind = model_kind(config)
    auto_cls = getattr(transformers, AUTO_CLASS[kind])
    where = str(path) if is_folder else name
    # before any weights are read: a model that cannot fit would take the server down with it
    check_fits(name, config, str(path) if is_folder else cached_folder(name), gguf=bool(gguf_file))
    try:
        model = auto_cls.from_pretrained(
            where, config=config, attn_implementation="eager", local_files_only=local_only, **kwargs
        )
        report(progress, int(UNITS * stages[1]), UNITS, "weights read; reading the tokenizer")
        tokenizer = one_call_at_a_time(AutoTokenizer.from_pretrained(where, local_files_only=local_only, **kwargs))
        report(progress, int(UNITS * stages[2]), UNITS, "tokenizer read")
    except ValueError as e:
        text = str(e)
        if "eager" in text or "attn_implementation" in text:
            raise AttentionUnavailable(
                f"{name} cannot run with eager attention, so it cannot return attention weights."
            ) from e
        raise ModelNotFound(f"{name} could not be loaded: {text.splitlines()[0]}") from e
    except OSError as e:
        raise ModelNotFound(f"{name} is incomplete here (weights or tokenizer missing): {str(e).splitlines()[0]}") from e
    model.eval()
    if getattr(model.config, "_attn_implementation", "eager") != "eager":
        raise AttentionUnavailable(f"{name} does not support eager attention, so it returns no attention weights.")
    facts = model_facts(config, name, source or ("folder" if is_folder else "hub / HF cache"),
                        architecture=type(model).__name__)
    return model, tokenizer, facts
