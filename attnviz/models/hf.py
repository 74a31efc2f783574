"""Load any HuggingFace model with eager attention, offline first; read its facts."""
from __future__ import annotations

import os
import socket
from pathlib import Path

from attnviz.errors import AttentionUnavailable, ModelMissing, ModelNotFound
from attnviz.runtime import cached_folder, check_fits, config_value
from attnviz.types import ModelFacts

# Model types whose base model is a bidirectional encoder. Everything in transformers'
# causal-LM mapping that is not listed here is treated as a causal decoder.
ENCODER_TYPES = frozenset({
    "bert", "roberta", "distilbert", "albert", "electra", "xlm-roberta", "camembert",
    "deberta", "deberta-v2", "mpnet", "ernie", "modernbert", "megatron-bert", "xlm",
    "flaubert", "layoutlm", "funnel", "squeezebert", "mobilebert", "nomic_bert",
})

# kind -> name of the transformers Auto class used to load it
AUTO_CLASS = {
    "encoder": "AutoModel",
    "decoder": "AutoModelForCausalLM",
    "encoder-decoder": "AutoModelForSeq2SeqLM",
}


def model_kind(config) -> str:
    """'encoder', 'decoder' or 'encoder-decoder' for a transformers config."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder"
    if config.model_type in ENCODER_TYPES:
        return "encoder"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or getattr(config, "is_decoder", False):
        return "decoder"
    return "encoder"


def position_scheme(config) -> str:
    mt = config.model_type
    if mt in ("t5", "mt5", "umt5", "longt5", "deberta", "deberta-v2"):
        return "relative"
    if mt in ("bloom", "mpt", "falcon") and not getattr(config, "rotary", False):
        return "alibi"
    if getattr(config, "rope_theta", None) is not None or getattr(config, "rope_parameters", None):
        return "rope"
    if mt in ("bart", "mbart", "marian", "pegasus") and getattr(config, "static_position_embeddings", False):
        return "sinusoidal"
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


def load_hf(name: str, *, gguf_file: str | None = None, source: str = ""):
    """(model, tokenizer, facts) for a hub id or a local folder, eager attention, eval mode.

    Tries the local files (folder or HF cache) first and the hub only when it is reachable.
    Raises ModelNotFound / AttentionUnavailable with plain messages.
    """
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

    kind = model_kind(config)
    auto_cls = getattr(transformers, AUTO_CLASS[kind])
    where = str(path) if is_folder else name
    # before any weights are read: a model that cannot fit would take the server down with it
    check_fits(name, config, str(path) if is_folder else cached_folder(name), gguf=bool(gguf_file))
    try:
        model = auto_cls.from_pretrained(
            where, config=config, attn_implementation="eager", local_files_only=local_only, **kwargs
        )
        tokenizer = AutoTokenizer.from_pretrained(where, local_files_only=local_only, **kwargs)
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
