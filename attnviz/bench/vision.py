"""Vision figures: the vision transformer trained on the digits (held-out accuracy, seconds) and the bytes the
grid of head overlays sends to the browser."""
from __future__ import annotations

import numpy as np


def grid_bytes(n_layers: int, n_heads: int, side: int, patch: int, channels: int = 3, seed: int = 0) -> int:
    """Bytes of the plotly JSON of the layers x heads overlay grid for one image of side x side pixels."""
    from attnviz.vision.figures import grid_figure
    from attnviz.vision.patches import PatchGrid

    rng = np.random.default_rng(seed)
    grid = PatchGrid(side, side, patch)
    image = rng.random((channels, side, side)).astype(np.float32)
    rows = rng.random((n_layers, n_heads, grid.n)).astype(np.float32)
    return len(grid_figure(image, rows, grid).to_json().encode("utf-8"))


def figures(quick: bool = False) -> dict[str, float]:
    """vit_digits_accuracy: held-out accuracy (359 digits never trained on) of the default run at seed 0;
    vit_train_seconds: its wall time, snapshots and evaluations included;
    vit_grid_bytes: what the grid of overlays sends to the browser for a ViT-B-shaped model (12 layers x 12 heads,
    224 x 224 pixels, 16-pixel patches), the largest grid the page draws for a standard ViT."""
    from attnviz.vision.train import VitTrainConfig, train_vit

    run = train_vit(VitTrainConfig(), keep_weights=False)
    return {
        "vit_digits_accuracy": float(run.meta["final_accuracy"]),
        "vit_train_seconds": float(run.meta["seconds"]),
        "vit_grid_bytes": float(grid_bytes(12, 12, 224, 16)),
    }


if __name__ == "__main__":
    print(figures())
