"""Images cut into patches: the patch sequence a vision transformer reads, patch positions and distances, and
images read from uploaded files (checked, converted and resized, with a note saying what was done)."""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput
from attnviz.units import count_text

MAX_PIXELS = 40_000_000  # larger uploads are refused before their pixels are decoded
MAX_BYTES = 20_000_000  # larger files are refused unread


@dataclass(frozen=True)
class PatchGrid:
    """How an image of height x width pixels is cut into square patches, in row-major order."""

    height: int  # image height in pixels
    width: int  # image width in pixels
    patch: int  # patch side in pixels

    def __post_init__(self):
        if self.patch < 1 or self.height % self.patch or self.width % self.patch:
            raise BadInput(f"A {self.height} x {self.width} image cannot be cut into whole {self.patch} x "
                           f"{self.patch} patches: the patch side must divide both sides.")

    @property
    def rows(self) -> int:
        return self.height // self.patch

    @property
    def cols(self) -> int:
        return self.width // self.patch

    @property
    def n(self) -> int:
        return self.rows * self.cols

    def row_col(self) -> np.ndarray:
        """int (n, 2): (row, column) of patch k = (k // cols, k % cols)."""
        k = np.arange(self.n)
        return np.stack([k // self.cols, k % self.cols], axis=1)

    def centres(self) -> np.ndarray:
        """float (n, 2): (y, x) pixel centre of each patch, the image's top-left pixel corner at (0, 0)."""
        return (self.row_col() + 0.5) * self.patch

    def distances(self) -> np.ndarray:
        """float (n, n): Euclidean distance in pixels between the centres of patches i and j."""
        c = self.centres()
        return np.sqrt(((c[:, None, :] - c[None, :, :]) ** 2).sum(-1))


def patchify(images: np.ndarray, patch: int) -> np.ndarray:
    """(N, C, H, W) -> (N, n_patches, C * patch * patch), patches in row-major order, each flattened as
    (channel, y, x)."""
    x = np.asarray(images)
    if x.ndim != 4:
        raise BadInput(f"Images must be (N, channels, height, width); got shape {x.shape}.")
    N, C, H, W = x.shape
    g = PatchGrid(H, W, patch)
    x = x.reshape(N, C, g.rows, patch, g.cols, patch)  # (N, C, rows, p, cols, p)
    x = x.transpose(0, 2, 4, 1, 3, 5)  # (N, rows, cols, C, p, p)
    return x.reshape(N, g.n, C * patch * patch)


def attention_distance(attention: np.ndarray, grid: PatchGrid, n_prefix: int = 1) -> np.ndarray:
    """Mean attention distance per head (the ViT paper's Figure 7), in pixels.

    attention: (layer, head, n_prefix + n, n_prefix + n), the first n_prefix tokens not patches ([CLS]).
    For every patch query i: sum_j a_ij d_ij / sum_j a_ij over the patch keys j (d = centre distance),
    then the mean over the patch queries. Returns float (layer, head)."""
    a = np.asarray(attention, dtype=np.float64)[..., n_prefix:, n_prefix:]  # patch queries, patch keys
    if a.shape[-1] != grid.n or a.shape[-2] != grid.n:
        raise BadInput(f"The attention covers {count_text(a.shape[-1])} patches but the image has {grid.n}.")
    mass = a.sum(-1)  # (L, H, n)
    dist = (a * grid.distances()).sum(-1) / np.maximum(mass, 1e-12)
    return dist.mean(-1)


def position_similarity(table: np.ndarray) -> np.ndarray:
    """Cosine similarity of every patch's position embedding with every other's (the ViT paper's Figure 7,
    centre). table: (n, d) -> (n, n)."""
    t = np.asarray(table, dtype=np.float64)
    t = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    return t @ t.T


# ------------------------------------------------------------------ uploaded images

@dataclass(frozen=True)
class ReadImage:
    """An uploaded image as the model sees it, and what was done to it."""

    pixels: np.ndarray  # float32 (C, H, W) in [0, 1]
    notes: tuple[str, ...]  # sentences saying how the file was converted


def read_image(data: bytes, name: str, size: tuple[int, int], channels: int, invert_light: bool = False
               ) -> ReadImage:
    """Decode an uploaded PNG/JPEG (or any image Pillow reads), convert it to `channels` (1 or 3) and resize
    it to size = (height, width). invert_light: a light background (mean above one half) is inverted, so that
    dark ink on paper looks like the bright strokes on black of the digits set."""
    from PIL import Image, UnidentifiedImageError

    if len(data) == 0:
        raise BadInput(f"'{name}' is empty: upload a PNG or JPEG image.")
    if len(data) > MAX_BYTES:
        raise BadInput(f"'{name}' is {len(data) / 1e6:.0f} MB; upload an image of at most {MAX_BYTES // 1_000_000} MB.")
    try:
        img = Image.open(io.BytesIO(data))
        w, h = img.size
    except Image.DecompressionBombError:
        raise BadInput(f"'{name}' has more than {MAX_PIXELS // 1_000_000} million pixels; make it smaller and upload "
                       "it again.") from None
    except (UnidentifiedImageError, OSError, ValueError):
        raise BadInput(f"'{name}' is not an image that can be read here. Upload a PNG or JPEG file.") from None
    if w * h > MAX_PIXELS:
        raise BadInput(f"'{name}' is {w:,} x {h:,} pixels, more than {MAX_PIXELS // 1_000_000} million; "
                       "make it smaller and upload it again.")
    try:
        img.load()
    except (OSError, ValueError, Image.DecompressionBombError):
        raise BadInput(f"'{name}' is damaged or truncated, so it cannot be read. Upload a PNG or JPEG file.") from None
    notes = []
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(white, rgba).convert("RGB")
        notes.append("Its transparency was dropped: transparent parts are shown on white.")
    gray_in = img.mode in ("1", "L", "I", "I;16", "F")
    if channels == 1:
        if not gray_in:
            notes.append("It was turned into gray levels: this model reads one channel.")
        img = img.convert("L")
    else:
        if gray_in:
            notes.append("It is a grayscale image: its one channel was copied into red, green and blue.")
        img = img.convert("RGB")
    H, W = size
    if (h, w) != (H, W):
        notes.append(f"It was resized from {w} x {h} to {W} x {H} pixels, the size the model reads.")
        img = img.resize((W, H), Image.Resampling.BOX if w >= W and h >= H else Image.Resampling.BILINEAR)
    px = np.asarray(img, dtype=np.float32) / 255.0
    px = px[None] if px.ndim == 2 else px.transpose(2, 0, 1)  # (C, H, W)
    if invert_light and px.mean() > 0.5:
        px = 1.0 - px
        notes.append("Its light background was inverted to dark, like the training images.")
    return ReadImage(np.ascontiguousarray(px), tuple(notes))
