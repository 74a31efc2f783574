"""Any HuggingFace ViT or DeiT from a folder (or the local HF cache) through the model adapter: loaded with
eager attention, its attention over an image recorded at the family table's hook points."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnviz.errors import BadInput, ModelNotFound
from attnviz.types import LoadedModel
from attnviz.vision.patches import PatchGrid

IMAGE_TYPES = ("vit", "deit")  # config.model_type values the Vision page reads (the ViT row of the family table)


@dataclass(frozen=True)
class VisionModel:
    """A loaded image model and how it reads an image. Shared between sessions: never mutate it."""

    loaded: LoadedModel  # the model (eval mode, eager attention) as the adapter runs it
    grid: PatchGrid  # how its input image is cut into patches
    channels: int  # 3 for RGB, 1 for gray
    n_prefix: int  # tokens before the patches: 1 ([CLS]) for ViT, 2 ([CLS], [DIST]) for DeiT
    mean: tuple[float, ...]  # per-channel normalisation: (pixel - mean) / std
    std: tuple[float, ...]

    @property
    def tokens(self) -> tuple[str, ...]:
        from attnviz.vision.model import patch_tokens

        prefix = ("[CLS]", "[DIST]")[: self.n_prefix]
        return patch_tokens(self.grid.n, self.grid.cols, prefix)


def _config_json(folder: Path) -> dict:
    if not folder.exists():
        raise ModelNotFound(f"There is no folder {folder}.")
    if folder.is_file():
        raise ModelNotFound(f"{folder} is a file, not a model folder. Give the folder that holds config.json.")
    path = folder / "config.json"
    if not path.is_file():
        raise ModelNotFound(f"The folder {folder} has no config.json, so it is not a HuggingFace model folder.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ModelNotFound(f"The config.json in {folder} cannot be read as JSON.") from None


def load_vision_model(name: str) -> VisionModel:
    """A ViT or DeiT from a local folder, or a hub id found in the local HF cache (never downloaded here).
    Raises ModelNotFound / BadInput with a plain sentence (a text model says it reads no images)."""
    import transformers
    from huggingface_hub import snapshot_download

    from attnviz.models.hf import model_facts

    name = name.strip()
    if not name:
        raise BadInput("Type the folder of a ViT or DeiT model (or a hub id in the local HuggingFace cache).")
    folder = Path(name).expanduser()
    if not folder.exists() and not name.startswith((".", "/", "~")) and name.count("/") == 1:
        try:
            folder = Path(snapshot_download(name, local_files_only=True))
        except Exception:
            raise ModelNotFound(f"No model called {name!r} is in the local HuggingFace cache, and models are not "
                                "downloaded here. Give a folder that holds a ViT or DeiT model.") from None
    raw = _config_json(folder)
    model_type = raw.get("model_type", "unknown")
    if model_type not in IMAGE_TYPES:
        raise BadInput(f"{folder.name} is a {model_type} model, which reads text, not images. The Vision page needs "
                       f"an image model: a ViT or DeiT ({', '.join(IMAGE_TYPES)}).")
    config = transformers.AutoConfig.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, config=config, attn_implementation="eager")
    model.eval()
    grid = PatchGrid(int(config.image_size), int(config.image_size), int(config.patch_size))
    channels = int(config.num_channels)
    mean, std = (0.5,) * channels, (0.5,) * channels
    prep = folder / "preprocessor_config.json"
    if prep.is_file():
        try:
            p = json.loads(prep.read_text(encoding="utf-8"))
            mean = tuple(float(v) for v in p.get("image_mean", mean))
            std = tuple(float(v) for v in p.get("image_std", std))
        except (OSError, ValueError, TypeError):
            pass  # an unreadable preprocessor file: the ViT default normalisation
    facts = model_facts(config, folder.name, source=str(folder))
    n_prefix = 2 if model_type == "deit" else 1
    return VisionModel(LoadedModel(str(folder), model, None, facts), grid, channels, n_prefix, mean, std)


def hf_attention(vm: VisionModel, image: np.ndarray) -> np.ndarray:
    """(layer, head, T, T) float32 attention of one image (C, H, W) in [0, 1], recorded at the adapter's
    blocks.{i}.attn.hook_pattern points."""
    import torch

    from attnviz.models.adapter import run

    x = np.asarray(image, dtype=np.float32)
    if x.shape != (vm.channels, vm.grid.height, vm.grid.width):
        raise BadInput(f"This model reads {vm.channels}-channel images of {vm.grid.height} x {vm.grid.width} pixels; "
                       f"got {' x '.join(str(s) for s in x.shape)}.")
    x = (x - np.array(vm.mean, dtype=np.float32)[:, None, None]) / np.array(vm.std, dtype=np.float32)[:, None, None]
    _, rec = run(vm.loaded, {"pixel_values": torch.from_numpy(x[None])}, hooks=["blocks.*.attn.hook_pattern"])
    n = vm.loaded.facts.n_layers
    return np.stack([rec[f"blocks.{i}.attn.hook_pattern"][0].float().numpy() for i in range(n)]).astype(np.float32)


def position_table(vm: VisionModel) -> np.ndarray | None:
    """(n_patches, d_model) the learned position embeddings of the patches, found by shape (one row per token,
    batch axis first), or None when the model has no such table."""
    d = vm.loaded.facts.d_model
    want = (1, vm.n_prefix + vm.grid.n, d)
    for _, p in vm.loaded.model.named_parameters():
        if tuple(p.shape) == want:
            return p.detach()[0, vm.n_prefix:].float().numpy().copy()
    return None
