"""A small vision transformer built from the toy models' blocks: patch embedding, a [CLS] token, learned 2-D
positions, pre-norm blocks whose attention is attnviz's own (`attnviz.attention.sdpa_torch`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from attnviz.errors import BadInput
from attnviz.models.adapter import run
from attnviz.models.scratch import Block, ScratchConfig
from attnviz.types import LoadedModel, ModelFacts
from attnviz.vision.patches import PatchGrid


@dataclass(frozen=True)
class VitConfig:
    image_size: int = 16  # image side in pixels (square images)
    patch: int = 4  # patch side in pixels; must divide image_size
    channels: int = 1  # 1 (gray) or 3 (RGB)
    n_classes: int = 10  # outputs of the classification head
    d_model: int = 64  # width of the residual stream
    n_heads: int = 4  # attention heads per layer; must divide d_model
    n_layers: int = 2  # transformer blocks
    d_ff: int = 128  # hidden width of each block's MLP
    seed: int = 0  # seed of the initial weights

    def __post_init__(self):
        PatchGrid(self.image_size, self.image_size, self.patch)  # raises BadInput when patches do not fit
        if self.channels not in (1, 3):
            raise BadInput("An image has 1 (gray) or 3 (red, green, blue) channels.")
        if self.n_classes < 2:
            raise BadInput("A classifier needs at least two classes.")
        self.blocks()  # d_model, heads and layers checked by the toy models' own rules

    @property
    def grid(self) -> PatchGrid:
        return PatchGrid(self.image_size, self.image_size, self.patch)

    @property
    def n_tokens(self) -> int:
        """[CLS] + one token per patch."""
        return 1 + self.grid.n

    def blocks(self) -> ScratchConfig:
        """The configuration of the blocks, in the toy models' terms (an encoder without masks)."""
        return ScratchConfig(kind="encoder", vocab_size=1, d_model=self.d_model, n_heads=self.n_heads,
                             n_layers=self.n_layers, d_ff=self.d_ff, max_len=self.n_tokens, positional="learned",
                             seed=self.seed)

    def to_dict(self) -> dict:
        return asdict(self)


def sincos_2d(grid: PatchGrid, d: int) -> np.ndarray:
    """(n_patches, d) 2-D sinusoidal positions: the first d/2 dimensions encode the patch's row, the last d/2 its
    column, each as the 1-D table sin(p / 10000^(2i/(d/2))), cos(same angle) (d divisible by 4)."""
    if d % 4:
        raise BadInput(f"2-D sinusoidal positions need d_model divisible by 4 (it is {d}).")
    half = d // 2
    freq = np.exp(-np.log(10000.0) * np.arange(0, half, 2) / half)  # (half / 2,)

    def table(p):  # (n,) -> (n, half)
        angle = p[:, None] * freq[None]
        out = np.empty((len(p), half))
        out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
        return out

    rc = grid.row_col().astype(np.float64)
    return np.concatenate([table(rc[:, 0]), table(rc[:, 1])], axis=1).astype(np.float32)


class VisionTransformer(nn.Module):
    """forward(images (B, C, H, W)) -> (logits (B, n_classes), {"self": [(B, H, T, T) per layer]}), T = 1 + patches;
    token 0 is [CLS], token 1 + k is patch k in row-major order."""

    def __init__(self, cfg: VitConfig):
        super().__init__()
        self.cfg = cfg
        blocks = cfg.blocks()
        with torch.random.fork_rng(devices=[]):  # seeded weights without touching the global RNG
            torch.manual_seed(cfg.seed)
            self.patch_embed = nn.Linear(cfg.channels * cfg.patch * cfg.patch, cfg.d_model)
            self.cls = nn.Parameter(torch.zeros(1, 1, cfg.d_model))
            self.pos = nn.Parameter(torch.zeros(1, cfg.n_tokens, cfg.d_model))  # learned, starting from 2-D sin/cos
            self.pos.data[0, 1:] = torch.from_numpy(sincos_2d(cfg.grid, cfg.d_model))
            self.layers = nn.ModuleList([Block(blocks, cross=False) for _ in range(cfg.n_layers)])
            self.norm = nn.LayerNorm(cfg.d_model)
            self.head = nn.Linear(cfg.d_model, cfg.n_classes)

    def patches(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, n_patches, C * p * p), as attnviz.vision.patches.patchify."""
        B, C, H, W = images.shape
        g, p = self.cfg.grid, self.cfg.patch
        if (C, H, W) != (self.cfg.channels, self.cfg.image_size, self.cfg.image_size):
            raise BadInput(f"This model reads {self.cfg.channels}-channel images of {self.cfg.image_size} x "
                           f"{self.cfg.image_size} pixels; got {C} x {H} x {W}.")
        x = images.reshape(B, C, g.rows, p, g.cols, p).permute(0, 2, 4, 1, 3, 5)  # (B, rows, cols, C, p, p)
        return x.reshape(B, g.n, C * p * p)

    def forward(self, images: torch.Tensor):
        x = self.patch_embed(self.patches(images))  # (B, n, d_model)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos  # (B, 1 + n, d_model)
        maps = []
        for block in self.layers:
            x, w, _ = block(x, None, None, False)
            maps.append(w)  # (B, H, T, T)
        return self.head(self.norm(x[:, 0])), {"self": maps}

    def position_table(self) -> np.ndarray:
        """(n_patches, d_model): the learned position embedding of each patch ([CLS]'s row left out)."""
        return self.pos[0, 1:].detach().float().numpy()


def vit_facts(cfg: VitConfig, name: str = "trained ViT") -> ModelFacts:
    return ModelFacts(name=name, kind="encoder", architecture="VisionTransformer", n_layers=cfg.n_layers,
                      n_heads=cfg.n_heads, n_kv_heads=cfg.n_heads, d_model=cfg.d_model, max_positions=cfg.n_tokens,
                      position_scheme="learned", source="trained in attnviz")


def patch_tokens(n_patches: int, cols: int, prefix=("[CLS]",)) -> tuple[str, ...]:
    """Token labels: the prefix tokens, then "r0c1" (row 0, column 1) for each patch in row-major order."""
    return tuple(prefix) + tuple(f"r{k // cols}c{k % cols}" for k in range(n_patches))


def as_loaded(model: VisionTransformer) -> LoadedModel:
    """The model as the LoadedModel the model adapter runs."""
    return LoadedModel("vit", model, None, vit_facts(model.cfg))


def forward(model: VisionTransformer, images: np.ndarray | torch.Tensor, grad: bool = False):
    """(logits (B, n_classes), {"self": [(B, H, T, T) per layer]}) of images (B, C, H, W), one forward through
    the model adapter; grad=True for a training step."""
    x = images if isinstance(images, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))
    out, _ = run(as_loaded(model), (x,), grad=grad)
    return out
