"""Block-pooled maps for the all-heads grid: every layer x head map shrunk to tiles x tiles, blockwise.

Tiles follow np.array_split: with n = tiles * s + r, the first r tiles span s + 1 positions and the rest s,
on both axes. A tile holds the mean or the max of the weights in it (hidden cells count as 0, as in the
dense map). Query blocks are whole tile rows, or parts of one tile row when a tile row is taller than a block
may be (long inputs: the block's weights must stay in the cache); the parts of a tile row add up in its tiles."""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput

POOLINGS = ("mean", "max")
DEFAULT_TILES = 64  # 64 x 64 per head: 30 x 9 heads of SmolLM2 = 1.1 M cells


def tile_edges(n: int, tiles: int) -> np.ndarray:
    """int64 (t+1,): tile boundaries over n positions, t = min(tiles, n), np.array_split sizes."""
    if tiles < 1:
        raise BadInput("The grid needs at least one tile per head.")
    t = min(int(tiles), int(n))
    s, r = divmod(n, t)
    sizes = np.full(t, s, dtype=np.int64)
    sizes[:r] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


def row_blocks(edges: np.ndarray, rows: int) -> list[tuple[int, int]]:
    """[(q0, q1)]: consecutive whole tile rows, about `rows` positions each; a tile row taller than `rows` is
    cut into near-equal parts of at most `rows` rows."""
    out, start = [], 0
    for i in range(1, len(edges)):
        a, b = int(edges[start]), int(edges[i])
        if i == start + 1 and b - a > rows:  # a tile row taller than a block (the tall tiles come first)
            cuts = np.linspace(a, b, -(-(b - a) // rows) + 1).round().astype(int)
            out.extend((int(c0), int(c1)) for c0, c1 in zip(cuts[:-1], cuts[1:]))
            start = i
        elif b - a >= rows or i == len(edges) - 1:
            out.append((a, b))
            start = i
    return out


@dataclass(frozen=True)
class PooledGrid:
    """Every head's map pooled to tiles (read-only)."""

    mean: np.ndarray  # float32 (layer, head, t, t): mean weight per tile
    max: np.ndarray  # float32 (layer, head, t, t): largest weight per tile
    edges: np.ndarray  # int64 (t+1,): tile boundaries (token positions) on both axes

    def __post_init__(self):
        for a in (self.mean, self.max, self.edges):
            a.flags.writeable = False

    def tiles(self, how: str = "mean") -> np.ndarray:
        if how not in POOLINGS:
            raise BadInput(f"Pool the grid by 'mean' or 'max', not {how!r}.")
        return self.mean if how == "mean" else self.max

    def payload_bytes(self, how: str = "mean", encoding: str = "png") -> int:
        """Bytes the grid would send: "float16" (raw tiles), "uint8" (one byte per tile, each head scaled
        to its own maximum) or "png" (those bytes as one greyscale PNG, tiles side by side)."""
        t = self.tiles(how)
        if encoding == "float16":
            return int(t.size * 2)
        L, H, s, _ = t.shape
        peak = t.reshape(L, H, -1).max(axis=-1)[:, :, None, None]
        u8 = np.round(np.divide(t, peak, out=np.zeros_like(t), where=peak > 0) * 255).astype(np.uint8)
        if encoding == "uint8":
            return int(u8.size)
        from PIL import Image

        canvas = u8.transpose(0, 2, 1, 3).reshape(L * s, H * s)  # (layer*t, head*t)
        buf = io.BytesIO()
        Image.fromarray(canvas).save(buf, format="PNG", optimize=True)
        return len(buf.getvalue())


class Pooler:
    """Accumulates tile sums and maxima from blocks of weights (whole tile rows at a time)."""

    def __init__(self, n_layers: int, n_heads: int, n: int, tiles: int = DEFAULT_TILES):
        self.edges = tile_edges(n, tiles)
        t = len(self.edges) - 1
        self.big = int((n % t) if n % t else 0)  # tiles of size s + 1 come first
        self.size = n // t
        self.sum = np.zeros((n_layers, n_heads, t, t), dtype=np.float32)
        self.max = np.zeros((n_layers, n_heads, t, t), dtype=np.float32)

    def key_start(self, k0: int) -> int:
        """The tile edge at or before key k0 (blocks start their keys there)."""
        return int(self.edges[np.searchsorted(self.edges, k0, side="right") - 1])

    def row_tiles(self, q0: int, rows: int) -> np.ndarray:
        """int64 (rows,): the tile row of each of the rows q0.., counted from the block's first (as add's `rows`)."""
        t = np.searchsorted(self.edges, np.arange(q0, q0 + rows), side="right") - 1
        return t - t[0]

    def add(self, layer: int, w, q0: int, k0: int, rows=None):
        """w: torch float32 (head, q1-q0, K) weights of rows q0.. (whole tile rows, or part of one tile row) over
        keys k0..k0+K-1, k0 a tile edge and k0+K a tile edge or the end of a causal part row's keys (the rest of
        that key tile is hidden from its rows); cells outside are 0. Rows first (one pass over w, its last axis
        contiguous; tile rows of one size in one call), then the small (head, tile rows, K) sums are cut into
        key tiles. Returns torch float32 (head, K): the weights summed over all the block's rows.
        rows: (sums, maxima), numpy float32 (head, R, K), of w's rows over each of its R tile rows (row_tiles),
        when they are already made."""
        import torch

        e = self.edges
        H, B, K = w.shape
        a = int(np.searchsorted(e, k0))  # first key tile
        b = int(np.searchsorted(e, k0 + K))  # one past the last key tile (a part of it included)
        split = min(int(e[min(max(self.big, a), b)]) - k0, K)  # key tiles before `big` span s + 1 positions
        ta = int(np.searchsorted(e, q0, side="right")) - 1  # the tile row of the first row
        if e[ta] != q0 or e[ta + 1] > q0 + B:  # part of one tile row: its rows go in whole
            if rows is None:
                rows_sum, rows_max = w.sum(1, keepdim=True), w.amax(1, keepdim=True)  # (H, 1, K)
            else:
                rows_sum, rows_max = (torch.from_numpy(x) for x in rows)
            self.sum[layer, :, ta:ta + 1, a:b] += self._tiles(rows_sum, split, "sum")
            np.maximum(self.max[layer, :, ta:ta + 1, a:b], self._tiles(rows_max, split, "max"),
                       out=self.max[layer, :, ta:ta + 1, a:b])
            return rows_sum[:, 0]
        tb = int(np.searchsorted(e, q0 + B))  # one past this block's last tile row
        mid = min(max(self.big, ta), tb)  # tile rows before `big` span s + 1 rows
        total = None
        for t0, t1, size in ((ta, mid, self.size + 1), (mid, tb, self.size)):
            if t1 <= t0:
                continue
            if rows is None:
                r0 = int(e[t0]) - q0
                v = w[:, r0:r0 + (t1 - t0) * size].view(H, t1 - t0, size, K)  # (H, tile rows, rows, K)
                rows_sum, rows_max = v.sum(2), v.amax(2)  # (H, tile rows, K)
            else:
                rows_sum, rows_max = (torch.from_numpy(x[:, t0 - ta:t1 - ta]) for x in rows)
            self.sum[layer, :, t0:t1, a:b] += self._tiles(rows_sum, split, "sum")
            np.maximum(self.max[layer, :, t0:t1, a:b], self._tiles(rows_max, split, "max"),
                       out=self.max[layer, :, t0:t1, a:b])
            rows_total = rows_sum.sum(1)
            total = rows_total if total is None else total.add_(rows_total)
        return total

    def _tiles(self, x, split: int, how: str) -> np.ndarray:
        """(H, R, K) -> (H, R, key tiles): sum or max over each tile's columns (sizes s + 1 up to `split`, then s;
        the last tile may be cut short at K)."""
        import torch

        H, R, K = x.shape
        parts = []
        for lo, hi, size in ((0, split, self.size + 1), (split, K, self.size)):
            whole = lo + (hi - lo) // size * size
            if whole > lo:
                v = x[:, :, lo:whole].reshape(H, R, (whole - lo) // size, size)
                parts.append(v.sum(-1) if how == "sum" else v.amax(-1))
            if hi > whole:  # the cut-short last tile
                rest = x[:, :, whole:hi]
                parts.append(rest.sum(-1, keepdim=True) if how == "sum" else rest.amax(-1, keepdim=True))
        return (parts[0] if len(parts) == 1 else torch.cat(parts, -1)).numpy()

    def result(self) -> PooledGrid:
        sizes = np.diff(self.edges).astype(np.float32)
        mean = self.sum / (sizes[:, None] * sizes[None, :])
        return PooledGrid(mean=mean.astype(np.float32), max=self.max, edges=self.edges)


def pooled_grid(long, tiles: int = DEFAULT_TILES, rows: int = 256) -> PooledGrid:
    """PooledGrid of a LongAttention, recomputed blockwise (summaries.summarise makes it in its own pass)."""
    pooler = Pooler(long.n_layers, long.n_heads, long.seq_len, tiles)
    for layer in range(long.n_layers):
        for q0, q1 in row_blocks(pooler.edges, rows):
            w, k0 = long.block(layer, None, q0, q1)
            kk = pooler.key_start(k0)
            if kk < k0:
                import torch

                w = torch.nn.functional.pad(w, (k0 - kk, 0))
            pooler.add(layer, w, q0, kk)
    return pooler.result()
