"""The image sets that ship: scikit-learn's 8x8 digits upsampled to 16x16, and generated shapes whose label is
where they are. Nothing is downloaded; both are seeded, so every run sees the same images."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from attnviz.errors import BadInput

SIDE = 16  # image side in pixels of both sets
HELDOUT_SHARE = 0.2  # share of each set never trained on


@dataclass(frozen=True)
class ImageSet:
    """Images (N, 1, SIDE, SIDE) float32 in [0, 1] with integer labels, split into training and held-out."""

    name: str  # "digits" or "shapes"
    title: str  # shown in menus
    classes: tuple[str, ...]  # label names, indexed by label
    expect: str  # what attention should learn to do, one sentence
    make: Callable[[], tuple[np.ndarray, np.ndarray]]  # () -> (images (N, 1, H, W), labels (N,))

    def split(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(train images, train labels, held-out images, held-out labels): a seeded shuffle, the last
        HELDOUT_SHARE held out."""
        images, labels = self.make()
        order = np.random.default_rng(seed).permutation(len(labels))
        n_held = int(round(len(labels) * HELDOUT_SHARE))
        train, held = order[:-n_held], order[-n_held:]
        return images[train], labels[train], images[held], labels[held]


def upsample(images: np.ndarray, factor: int) -> np.ndarray:
    """(..., h, w) -> (..., h * factor, w * factor): each pixel repeated factor x factor times."""
    return np.repeat(np.repeat(images, factor, axis=-2), factor, axis=-1)


@lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits  # ships with scikit-learn: 1,797 images of 8x8 pixels, 0..16

    d = load_digits()
    images = upsample(d.images.astype(np.float32) / 16.0, SIDE // 8)[:, None]  # (N, 1, 16, 16)
    images.setflags(write=False)
    labels = d.target.astype(np.int64)
    labels.setflags(write=False)
    return images, labels


def _stamp(canvas: np.ndarray, shape: str, y: int, x: int) -> None:
    """Draw a 4x4 square outline or plus sign with its top-left corner at (y, x)."""
    if shape == "square":
        canvas[y:y + 4, x:x + 4] = 1.0
        canvas[y + 1:y + 3, x + 1:x + 3] = 0.0
    else:
        canvas[y + 1:y + 3, x:x + 4] = 1.0
        canvas[y:y + 4, x + 1:x + 3] = 1.0


def shapes(n: int = 2000, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """n images holding one square outline and one plus sign at random places in different columns of the
    4x4 grid of 4-pixel cells; label 1 when the square is left of the plus, else 0. Neither shape alone
    tells the label: a patch must look at the other shape's patch."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 1, SIDE, SIDE), dtype=np.float32)
    labels = np.zeros(n, dtype=np.int64)
    for i in range(n):
        cols = rng.choice(SIDE // 4, size=2, replace=False)
        rows = rng.integers(0, SIDE // 4, size=2)
        _stamp(images[i, 0], "square", 4 * rows[0], 4 * cols[0])
        _stamp(images[i, 0], "plus", 4 * rows[1], 4 * cols[1])
        labels[i] = int(cols[0] < cols[1])
    return images, labels


IMAGE_SETS: dict[str, ImageSet] = {
    "digits": ImageSet("digits", "Handwritten digits (scikit-learn, 8x8 upsampled to 16x16)",
                       tuple(str(d) for d in range(10)),
                       "The class token learns to look at the strokes that tell digits apart, not the empty border.",
                       _digits),
    "shapes": ImageSet("shapes", "Where are the shapes? (square left or right of a plus)",
                       ("square right of plus", "square left of plus"),
                       "The label depends on where the two shapes are, so the class token must find both of them.",
                       shapes),
}


def image_set(name: str) -> ImageSet:
    try:
        return IMAGE_SETS[name]
    except KeyError:
        raise BadInput(f"Unknown image set {name!r}; choose one of {', '.join(IMAGE_SETS)}.") from None
