"""Per-head summaries of a LongAttention computed blockwise, never from a full n x n map held in memory.

One pass over every layer, 256 query rows (whole pooling tiles) at a time, every head of the layer at
once, yields: per-row entropy (metrics/entropy.py's definition, nats and normalised), the weight on
position 0 (sink mass, the 'first' role), the weight summed by distance |i - j| (from which come the
mean attention distance and the attention-vs-distance profile), the role scores of metrics/roles.py
(RoleReader's positions and row weights, broadness from its own function), and the pooled grid.

How a block stays cheap: workspace tensors are allocated once (fresh 40 MB tensors per block cost more
than the maths); the entropy is log Z - sum_j p_j (s_j - max s), so no log is taken of every weight; the
softmax, that sum, the pooled tiles' sums and maxima and a causal layer's weights by distance come from one
read of each row (rowpass.softmax_block); denormal weights are set to 0."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput
from attnviz.long.maps import LongAttention, flush_denormals
from attnviz.long.pooled import DEFAULT_TILES, PooledGrid, Pooler, row_blocks
from attnviz.long.rowpass import softmax_block
from attnviz.metrics.entropy import padding_positions
from attnviz.metrics.roles import ROLE_KEYS, RoleReader, RoleScores, broadness
from attnviz.progress import check

BLOCK_ROWS = 256
MASKED = -1e30  # finite stand-in for -inf: exp gives exactly 0 and 0 * MASKED stays 0 (not nan)


@dataclass(frozen=True)
class LongSummaries:
    """Blockwise summaries of every head of one LongAttention (read-only arrays)."""

    nats: np.ndarray  # float32 (layer, head, n): entropy of each query row in nats
    normalised: np.ndarray  # float32 (layer, head, n): nats / log(keys the row may see), in [0, 1]
    head_nats: np.ndarray  # float32 (layer, head): mean over valid (non-padding) rows
    head_normalised: np.ndarray  # float32 (layer, head)
    sink: np.ndarray  # float32 (layer, head): mean weight on position 0 (the 'first' role)
    mean_distance: np.ndarray  # float32 (layer, head): mean over rows of sum_j p_ij |i - j|, in tokens
    distance_weight: np.ndarray  # float64 (layer, head, n): weight summed over valid rows at |i - j| = d
    distance_count: np.ndarray  # int64 (layer, n): (valid row, visible key) pairs at |i - j| = d
    roles: RoleScores  # role scores (role, layer, head) as metrics/roles.py defines them
    pooled: PooledGrid  # every head pooled to tiles (mean and max)

    def __post_init__(self):
        for a in (self.nats, self.normalised, self.head_nats, self.head_normalised, self.sink,
                  self.mean_distance, self.distance_weight, self.distance_count):
            a.flags.writeable = False

    def profile(self, n_bins: int = 32, log: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(edges int64 (bins+1,), per head float64 (layer, head, bins), per layer (layer, bins)):
        the mean weight of a (query, visible key) pair whose distance |i - j| lies in [edges[b], edges[b+1]);
        bins log-spaced (distance 0 gets its own) or linear; nan where a bin holds no pair."""
        n = self.distance_weight.shape[-1]
        if n_bins < 1:
            raise BadInput("The distance profile needs at least one bin.")
        if log and n > 2:
            edges = np.unique(np.concatenate([[0, 1], np.geomspace(1, n, n_bins).round().astype(np.int64)]))
        else:
            edges = np.unique(np.linspace(0, n, n_bins + 1).round().astype(np.int64))
        edges[-1] = n
        w = np.add.reduceat(self.distance_weight, edges[:-1], axis=-1)  # (L, H, bins)
        c = np.add.reduceat(self.distance_count, edges[:-1], axis=-1).astype(np.float64)  # (L, bins)
        per_head = np.divide(w, c[:, None, :], out=np.full(w.shape, np.nan), where=c[:, None, :] > 0)
        per_layer = np.divide(w.mean(axis=1), c, out=np.full(c.shape, np.nan), where=c > 0)
        return edges, per_head, per_layer


def visible_counts(long: LongAttention, layer: int) -> np.ndarray:
    """int64 (n,): keys each query row of `layer` may see (causal, window and key padding)."""
    n = long.seq_len
    csum = np.concatenate([[0], np.cumsum(long.key_mask, dtype=np.int64)])
    i = np.arange(n)
    if not long.causal[layer]:
        return np.full(n, csum[-1])
    w = int(long.sliding_window[layer])
    lo = np.maximum(0, i - w + 1) if w else np.zeros(n, dtype=np.int64)
    return csum[i + 1] - csum[lo]


def distance_counts(long: LongAttention, layer: int, valid: np.ndarray) -> np.ndarray:
    """int64 (n,): pairs (valid query i, visible key j) with |i - j| = d, for each d."""
    n = long.seq_len
    km, v = long.key_mask.astype(np.int64), valid.astype(np.int64)
    w = int(long.sliding_window[layer]) if long.causal[layer] else 0
    out = np.zeros(n, dtype=np.int64)
    for d in range(n if not w else min(n, w)):
        out[d] = v[d:] @ km[: n - d]  # j = i - d
        if not long.causal[layer] and d:
            out[d] += v[: n - d] @ km[d:]  # j = i + d
    return out


class _Workspace:
    """Scores and weights buffers reused for every block (contiguous: softmax into a strided tensor is 5x slower)."""

    def __init__(self, n_heads: int, rows: int, n: int):
        import torch

        self.scores = torch.empty(n_heads * rows * n, dtype=torch.float32)
        self.buf = torch.empty(n_heads * rows * n, dtype=torch.float32)

    def weights(self, H: int, B: int, K: int):
        return self.buf[: H * B * K].view(H, B, K)


def _gather_distance(w, q0: int, k0: int, n: int):
    """float32 (H, n): the weights of w (H, B, K: rows q0.., keys k0..) summed at each distance |i - j| = d,
    both sides of the diagonal, by index (a causal layer's come from rowpass.softmax_block)."""
    import torch

    H, B, K = w.shape
    i = torch.arange(q0, q0 + B)[:, None]
    d = torch.arange(n)[None, :]
    out = torch.zeros(H, n)
    for j, side in ((i - d, d >= 0), (i + d, d > 0)):  # keys to the left (and the diagonal), then to the right
        ok = (j >= k0) & (j < k0 + K) & side
        if ok.any():
            g = torch.gather(w, -1, (j - k0).clamp(0, K - 1).expand(H, B, n))  # (H, B, n)
            out += (g * ok).sum(1)
    return out


class _Pass:
    """The accumulators of one summaries pass, filled block by block."""

    def __init__(self, long: LongAttention, tiles: int, rows: int, causal: bool | None = None):
        """causal: the model's causal flag for the role rows (default: every layer of `long` is causal; a pass
        run inside the forward, before the layers are known, gives the model's)."""
        import torch

        L, H, n = long.n_layers, long.n_heads, long.seq_len
        self.long = long
        self.valid = ~padding_positions(long.tokens, long.special_mask)  # query rows that count
        self.all_valid = bool(self.valid.all())
        self.reader = RoleReader(long.tokens, long.special_mask,
                                 causal=bool(long.causal.all()) if causal is None else causal)
        cols = sorted({0} | {int(c) for _, cs in self.reader.col_groups for c in cs})  # columns roles read
        self.col_pos = {c: i for i, c in enumerate(cols)}
        self.cols = np.array(cols, dtype=np.int64)  # sorted
        self.row_weight = torch.from_numpy(self.reader.row_weight)  # (n,): 1/|valid| on valid rows
        self.nats = np.zeros((L, H, n), dtype=np.float32)  # per-row entropy
        self.dist = np.zeros((L, H, n), dtype=np.float64)  # weight summed at |i - j| = d
        self.counts = np.zeros((L, n), dtype=np.int64)  # pairs at |i - j| = d
        self.col_mean = np.zeros((L, H, len(cols)), dtype=np.float64)  # mean weight on the role columns
        self.n_visible = np.zeros((L, n), dtype=np.int64)  # keys each row may see
        self.near = np.zeros((3, L, H), dtype=np.float64)  # weight summed on key i, i - 1, i + 1
        self.counted: dict[tuple, np.ndarray] = {}
        self.pooler = Pooler(L, H, n, tiles)
        self.blocks = row_blocks(self.pooler.edges, rows)
        self.ws = _Workspace(H, max(b - a for a, b in self.blocks), n)

    def near_from_dist(self, layer: int) -> bool:
        """A causal layer without padding rows reads the self / previous-token roles off the distance sums."""
        return bool(self.long.causal[layer]) and self.all_valid

    def start_layer(self, layer: int) -> None:
        """The counts of `layer` (its causal flag and window known)."""
        long = self.long
        self.n_visible[layer] = visible_counts(long, layer)
        shape = (bool(long.causal[layer]), int(long.sliding_window[layer]))
        if shape not in self.counted:
            self.counted[shape] = distance_counts(long, layer, self.valid)
        self.counts[layer] = self.counted[shape]

    def layer(self, layer: int, cancelled, value=None, out=None) -> None:
        """Every block of `layer`; with value (kv_head, n, d) also the layer's attention output into out
        (n, head, d), from the same weights (the pass run inside the forward instead of the kernel)."""
        self.start_layer(layer)
        for q0, q1 in self.blocks:
            check(cancelled, "The recording")
            self.block(layer, q0, q1, value, out)

    def run(self, progress, cancelled) -> None:
        for layer in range(self.long.n_layers):
            self.layer(layer, cancelled)
            if progress is not None:
                progress(layer + 1, self.long.n_layers)

    def block(self, layer: int, q0: int, q1: int, value=None, out=None) -> None:
        """Every head of `layer`, query rows q0..q1-1 (whole tile rows); with value and out, the rows' attention
        output too (weights x values, each key/value head once for the query heads that share it)."""
        import torch

        long, reader, H, B = self.long, self.reader, self.long.n_heads, q1 - q0
        lo, _ = long.key_range(layer, q0, q1)
        s, k0 = long.scores(layer, None, q0, q1, k0=self.pooler.key_start(lo), out=self.ws.scores, fill=MASKED)
        K = s.shape[-1]
        w = self.ws.weights(H, B, K)
        # one read of each row: its softmax into w, its entropy, the pooled tiles and (causal layers) the weights
        # by distance
        valid_rows = self.valid[q0:q1]
        causal = bool(long.causal[layer])
        nats, sums, maxes, by_distance = softmax_block(s, w, self.pooler.row_tiles(q0, B),
                                                       valid_rows if causal else None, q0 - k0)
        if value is not None:
            kv = value.shape[0]
            mixed = torch.matmul(w.view(kv, (H // kv) * B, K), value[:, k0:k0 + K].float())  # (kv, group * B, d)
            out[q0:q1] = mixed.view(H, B, -1).transpose(0, 1)
        self.nats[layer, :, q0:q1] = nats
        col_sum = self.pooler.add(layer, w, q0, k0, rows=(sums, maxes))  # (H, K): weights summed over the block's rows
        # column roles (first / [CLS] / [SEP] / punctuation): RoleReader's weighted column means
        a, b = np.searchsorted(self.cols, [k0, k0 + K])  # the role columns inside this block's keys
        if b > a:  # valid rows all weigh 1/|valid|: the pooler's column sums serve, else a gemv
            cs = col_sum * self.row_weight[q0] if valid_rows.all() else torch.matmul(self.row_weight[q0:q1], w)
            part = cs[:, torch.from_numpy(self.cols[a:b] - k0)]  # (H, c)
            self.col_mean[layer][:, a:b] += part.numpy()
        # self / previous / next token roles: the weights beside the diagonal, on RoleReader's rows (a causal
        # layer without padding rows reads them off the distance sums at d = 0 and 1 instead, in result())
        for r, (rows, step) in enumerate(() if self.near_from_dist(layer) else
                                         ((reader.q, 0), (reader.qp, -1), (reader.qn, 1))):
            i = rows[(rows >= q0) & (rows < q1)]
            i = i[(i + step >= k0) & (i + step < k0 + K)]
            if i.size:
                self.near[r, layer] += w[:, torch.from_numpy(i - q0), torch.from_numpy(i + step - k0)].sum(-1).numpy()
        # weight by distance, over valid rows only
        if causal:
            self.dist[layer, :, : by_distance.shape[-1]] += by_distance
        else:
            if not valid_rows.all():
                w[:, torch.from_numpy(~valid_rows)] = 0
            self.dist[layer] += _gather_distance(w, q0, k0, long.seq_len).numpy()

    def result(self) -> LongSummaries:
        L, H, n = self.long.n_layers, self.long.n_heads, self.long.seq_len
        nats, valid, reader = self.nats, self.valid, self.reader
        # every row's entropy, normalised by the keys it may see (as RowEntropy.finish does)
        log_n = np.log(np.maximum(self.n_visible, 1)).astype(np.float32)[:, None, :]
        norm = np.minimum(np.divide(nats, log_n, out=np.zeros_like(nats), where=log_n > 0), 1.0)
        # role scores, as RoleReader.layer and role_scores define them
        roles = np.full((len(ROLE_KEYS), L, H), np.nan, dtype=np.float32)
        idx = reader.idx
        roles[idx["first"]] = self.col_mean[:, :, self.col_pos[0]]
        for role, cs in reader.col_groups:
            roles[role] = self.col_mean[:, :, [self.col_pos[int(c)] for c in cs]].sum(axis=-1)
        by_dist = np.array([self.near_from_dist(layer) for layer in range(L)], dtype=bool)
        self.near[0, by_dist] = self.dist[by_dist, :, 0]
        if n > 1:
            self.near[1, by_dist] = self.dist[by_dist, :, 1]
        for r, (role, rows) in enumerate((("self", reader.q), ("prev", reader.qp), ("next", reader.qn))):
            if rows.size:
                roles[idx[role]] = self.near[r] / rows.size
        roles[idx["broad"]] = broadness(nats, self.n_visible[:, None, :])[..., reader.q].mean(axis=-1)
        mean_distance = (self.dist * np.arange(n)).sum(axis=-1) / max(valid.sum(), 1)
        return LongSummaries(nats=nats, normalised=norm.astype(np.float32),
                             head_nats=nats[..., valid].mean(axis=-1).astype(np.float32),
                             head_normalised=norm[..., valid].mean(axis=-1).astype(np.float32),
                             sink=roles[idx["first"]].copy(), mean_distance=mean_distance.astype(np.float32),
                             distance_weight=self.dist, distance_count=self.counts, roles=RoleScores(roles),
                             pooled=self.pooler.result())


def summarise(long: LongAttention, *, tiles: int = DEFAULT_TILES, rows: int = BLOCK_ROWS,
              progress=None, cancelled=None) -> LongSummaries:
    """Every summary of `long`, in one blockwise pass (every head of a layer at once, `rows` query rows at a
    time). progress(done, total) is called after each layer; cancelled() returning True stops the pass
    (attnviz.progress.Cancelled: nothing half-computed is returned)."""
    import torch

    state = _Pass(long, tiles, rows)
    with flush_denormals(), torch.inference_mode():  # weights below 1e-38 read as 0 (2.5x faster)
        state.run(progress, cancelled)
    return state.result()
