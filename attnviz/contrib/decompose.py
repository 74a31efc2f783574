"""What each attention block actually moves: value-weighted attention and mixing ratios (Kobayashi
et al. 2020, 2021) and ALTI (Ferrando et al. 2022), from one block's parts (parts.LayerParts).

Notation, one layer, query i, key j, head h (H heads, d = d_model):
  f_h(x_j)   = (x_j W_V^h + b_V^h) W_O^h                      token j's value as head h writes it (d,)
  u_ij       = sum_h alpha^h_ij f_h(x_j)                      what position i receives from token j
  attention output of i = sum_j u_ij + b_O
  pre-norm:  y_i = x_i + sum_j u_ij + b_O
  post-norm: y_i = LN(x_i + sum_j u_ij + b_O) = g_i(x_i + sum_j u_ij + b_O) + beta,
             g_i(v) = gamma * (v - mean(v)) / s_i,  s_i = sqrt(var(pre-norm sum_i) + eps)   (linear in v)

  value-weighted (per head)   ||alpha^h_ij f_h(x_j)|| = alpha^h_ij ||f_h(x_j)||
  value-weighted (layer)      ||u_ij||                                      (heads summed)
  ALTI (layer)  T_i(x_j) = u_ij + [i = j] x_i (pre-norm) or g_i(u_ij + [i = j] x_i) (post-norm);
                c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), each row divided by its sum.
                The bias b_O and beta belong to no token: they are in y but in no T_i(x_j).
  mixing ratio of token i (share of its new representation that comes from the other tokens):
                weights:                      1 - mean_h alpha^h_ii
                value-weighted:               ||c|| / (||c|| + ||u_ii||)          c = sum_{j != i} u_ij
                + residual:                   ||c|| / (||c|| + ||u_ii + x_i||)
                + residual + LayerNorm:       ||g_i(c)|| / (||g_i(c)|| + ||g_i(u_ii + x_i)||)  (post-norm only)

How ALTI is computed (off the diagonal, where T_i(x_j) = u_ij, in the LayerNorm's scaled space for post-norm):
with s_i = sign(y_i) (+1 where y_ik = 0),
  ||y_i||_1 - ||y_i - T||_1 = sum_k min(s_ik T_k, 2|y_ik| - s_ik T_k)
exactly, component by component: a term is s_ik T_k itself unless T overshoots y_i's component, so float32 keeps
a small contribution exact relative to its size (subtracting two whole L1 norms would not). The sum needs every
T_ijk = sum_h alpha^h_ij f_h(x_j)_k: pairs.pairs makes them key by key and reduces them in registers. The diagonal (T_i(x_i) holds the residual x_i) is computed directly.

Only (query, key) matrices are kept; ||u_ij|| comes from each token's head Gram matrix f_h(x_j) . f_k(x_j)
without building u at all (in the same pass)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from attnviz.compiled import TINY, aligned
from attnviz.contrib.pairs import pairs, spread
from attnviz.types import LayerHeadShape

MIXING = ("weights", "value-weighted", "+ residual", "+ residual + LayerNorm")
BLOCK_PARTS = {
    True: "attention heads summed, the residual connection and the LayerNorm after them (its bias and "
          "the output projection's bias belong to no token); the feed-forward sublayer is not included",
    False: "attention heads summed and the residual connection; the norm before attention is inside each "
           "token's value vector; the output projection's bias belongs to no token; the feed-forward "
           "sublayer is not included",
}


@dataclass(frozen=True)
class Contributions(LayerHeadShape):
    """Value-weighted attention, ALTI and mixing ratios of every layer of one input.

    attention      per layer, (head, query, key): the attention weights the parts were recorded with
    value_norms    (layer, head, key): ||f_h(x_j)||, the length of each token's value vector per head
    value_layer    (layer, query, key): ||u_ij||, heads summed
    with_residual  (layer, query, key): value_layer with ||u_ii + x_i|| on the diagonal
    alti           (layer, query, key): ALTI contributions, rows sum to 1
    mixing         {MIXING name: (layer, query)}; "+ residual + LayerNorm" only for post-norm blocks
    rebuild_error  largest |y - rebuilt y| / max |y| over layers: how exactly the parts rebuild the block
    and, made when first read from the weights and the value norms: value_weighted (layer, head, query, key),
    ||alpha f(x_j)|| per head (not normalised), or one head's map (value_weighted_head).
    """

    _SHAPE_OF = "value_norms"
    attention: tuple
    value_norms: np.ndarray
    value_layer: np.ndarray
    with_residual: np.ndarray
    alti: np.ndarray
    mixing: dict = field(default_factory=dict)
    post_norm: bool = False
    rebuild_error: float = 0.0

    def __post_init__(self):
        for arr in (*self.attention, self.value_norms, self.value_layer, self.with_residual, self.alti,
                    *self.mixing.values()):
            arr.flags.writeable = False

    # The per-head value-weighted maps are the weights times each key's value norm: 75 MB for MiniLM at 512 tokens,
    # made when a view asks for them (a lens over every head), not with the rest; one head's map is made alone.
    @cached_property
    def value_weighted(self) -> np.ndarray:
        """(layer, head, query, key): alpha^h_ij ||f_h(x_j)||, weights below the smallest normal float32 as 0."""
        out = aligned((self.n_layers, *self.attention[0].shape))
        key_major = aligned((self.seq_len, self.n_heads, self.attention[0].shape[1]))
        for layer, weights in enumerate(self.attention):
            spread(weights, self.value_norms[layer], out[layer], key_major)
        return _read_only(out)

    def value_weighted_head(self, layer: int, head: int) -> np.ndarray:
        """(query, key): one head's value-weighted map, as value_weighted[layer, head]."""
        weights = self.attention[layer][head]
        return np.where(weights >= TINY, weights * self.value_norms[layer, head][None, :], np.float32(0.0))

    # The rollouts are kept once computed: a cached Contributions is shared by every rerun of the pages
    # that draw them (30 products of n x n matrices per rollout for SmolLM2).
    @cached_property
    def alti_rolled(self) -> np.ndarray:
        """ALTI contributions rolled out across layers (Ferrando et al. 2022): (layer, n, n)."""
        return _read_only(rolled(self.alti))

    @cached_property
    def value_rolled(self) -> np.ndarray:
        """Norm-based rollout with the residual (Kobayashi et al. 2021's ATTN+RES-N per layer, rows
        normalised, multiplied through the layers): (layer, n, n)."""
        return _read_only(rolled(rows_normalised(self.with_residual)))

    @property
    def block_parts(self) -> str:
        return BLOCK_PARTS[self.post_norm]

    def mean_mixing(self, valid: np.ndarray | None = None) -> dict[str, float]:
        """Mean mixing ratio over layers and the `valid` tokens (all when None), per kind."""
        out = {}
        for name, r in self.mixing.items():
            rows = r if valid is None else r[:, np.asarray(valid, dtype=bool)]
            out[name] = float(rows.mean()) if rows.size else float("nan")
        return out


def layer(parts, value_weighted: np.ndarray | None = None, key_major: np.ndarray | None = None, *,
          head_maps: bool = True) -> dict:
    """Every contribution quantity of one layer (numpy float32 arrays; see the module docstring).
    value_weighted: a float32 (head, q, k) array to write the per-head value-weighted attention into;
    key_major: a (key, head, q) scratch array for the weights (pairs.spread), reused from layer to layer;
    head_maps: False leaves the per-head value-weighted maps out (value_weighted is then None)."""
    import torch

    A, V, W, b, x, y = parts.attention, parts.values, parts.w_out, parts.b_out, parts.x, parts.y
    H, n, _ = A.shape
    d = W.shape[0]
    d_head = V.shape[-1]
    # f_h(x_j): (head, key, d) = values (key, head, d_head) through head h's columns of W_O
    F = torch.bmm(V.permute(1, 0, 2), W.view(d, H, d_head).permute(1, 2, 0))
    # ||u_ij|| from the Gram matrix of each key's head vectors (key, head, head): ||u_ij||^2 = a_ij . G_j a_ij; its
    # diagonal holds the value norms ||f_h(x_j)||^2
    gram = torch.bmm(F.permute(1, 0, 2), F.permute(1, 2, 0))
    fnorm = torch.diagonal(gram, dim1=1, dim2=2).T.clamp_min(0).sqrt().contiguous()  # (head, key)
    vw_head, Ak = spread(A.numpy(), fnorm.numpy(), value_weighted if head_maps else False, key_major)

    # sum_j u_ij: (q, d), as the model computes it: the heads' outputs side by side through W_O
    received = torch.bmm(A, V.permute(1, 0, 2)).transpose(0, 1).reshape(n, H * d_head) @ W.T
    diag = torch.diagonal(A, dim1=1, dim2=2)  # (head, n): alpha^h_ii
    own_values = (V * diag.T[:, :, None]).reshape(n, H * d_head)  # alpha^h_ii values_i^h, heads side by side
    self_u = own_values @ W.T  # u_ii
    context = received - self_u
    kept = self_u + x  # what i keeps of itself, residual included

    post = parts.norm is not None
    if post:
        gamma, beta, eps, pre_sum = parts.norm
        s = (pre_sum - pre_sum.mean(dim=-1, keepdim=True)).square_().mean(dim=-1).add_(eps).sqrt_()  # (q,)

        def g(v):  # the LayerNorm's linear part at each query row: gamma * (v - mean) / s_i
            return gamma * (v - v.mean(dim=-1, keepdim=True)) / s[:, None]

        rebuilt = g(received + x + b) + beta
    else:
        rebuilt = received + x + b
    scale = float(y.abs().max()) or 1.0
    error = float((rebuilt - y).abs().max()) / scale

    def ratio(ctx, own):
        c, o = torch.linalg.vector_norm(ctx, dim=-1), torch.linalg.vector_norm(own, dim=-1)
        return c / (c + o).clamp_min(1e-30)

    mixing = {
        "weights": 1.0 - diag.mean(dim=0),
        "value-weighted": ratio(context, self_u),
        "+ residual": ratio(context, kept),
    }
    if post:
        mixing["+ residual + LayerNorm"] = ratio(g(context), g(kept))

    # ALTI works on the vectors themselves: centre and scale them once, so that u_ij built from them is already
    # g_i(u_ij) * s_i (post-norm), then compare with s_i * y_i
    if post:
        xn = (x - x.mean(dim=-1, keepdim=True)) * gamma
        # c_ij * s_i = ||s_i y_i||_1 - ||s_i y_i - s_i T_i(x_j)||_1: the row's shares are unchanged by s_i
        target = y * s[:, None]
        # f_h(x_j) centred and scaled: the mean over d is linear, so centring the head vectors equals centring W_O's
        # rows first (the Gram matrix above is of the vectors as they are; F is not read after this)
        Fn = F.sub_(F.mean(dim=-1, keepdim=True)).mul_(gamma)
    else:
        xn, target, Fn = x, y, F
    gain, norm2 = (torch.from_numpy(m) for m in pairs(Ak, Fn.numpy(), gram.numpy(), target.numpy()))
    vw_layer = norm2.clamp_min_(0).sqrt_()  # (q, k)
    # u_ii in target's space: self_u centred and scaled by gamma (post-norm), as the head vectors are above
    alti = _alti(gain, target, ((self_u - self_u.mean(dim=-1, keepdim=True)) * gamma if post else self_u) + xn)
    alti = alti.div_(alti.sum(dim=-1, keepdim=True, dtype=torch.float64).clamp_min_(1e-300).float())  # row shares
    with_res = vw_layer.clone()
    with_res[torch.arange(n), torch.arange(n)] = torch.linalg.vector_norm(kept, dim=-1)
    return dict(value_weighted=vw_head, value_norms=fnorm.numpy(), value_layer=vw_layer.numpy(), with_residual=with_res.numpy(),
                alti=alti.numpy(), mixing={k: v.numpy() for k, v in mixing.items()}, post_norm=post, error=error)


def _alti(gain, target, kept):
    """Unnormalised ALTI contributions c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1) of one layer: (q, k), from
    pairs.pairs's gain (off the diagonal) and, for the diagonal, kept (q, d) = T_i(x_i) = u_ii + x_i in target's
    space, subtracted component by component (|y_ik - T_ik| - |y_ik|)."""
    import torch

    own = ((target - kept).abs() - target.abs()).sum(-1).neg()
    idx = torch.arange(target.shape[0])
    gain[idx, idx] = own.clamp_min(0)
    return gain


def decompose(layers) -> Contributions:
    """Contributions of every layer from [parts.LayerParts] (one forward's record)."""
    import torch

    key_major = aligned(layers[0].attention.permute(2, 0, 1).shape)
    with torch.inference_mode():
        per = [layer(p, key_major=key_major, head_maps=False) for p in layers]
    names = per[0]["mixing"].keys()

    def stacked(key):  # every part is float32 already: one copy
        return np.stack([p[key] for p in per])

    return Contributions(
        attention=tuple(p.attention.numpy() for p in layers), value_norms=stacked("value_norms"),
        value_layer=stacked("value_layer"), with_residual=stacked("with_residual"), alti=stacked("alti"),
        mixing={k: np.stack([p["mixing"][k] for p in per]) for k in names},
        post_norm=per[0]["post_norm"],
        rebuild_error=max(p["error"] for p in per),
    )


def rows_normalised(m: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (rows of zeros stay zero): shares that sum to 1."""
    m = np.asarray(m, dtype=np.float32)
    sums = m.sum(axis=-1, keepdims=True)
    return np.divide(m, sums, out=np.zeros_like(m), where=sums > 0)


def rolled(per_layer: np.ndarray) -> np.ndarray:
    """Rollout of (layer, query, key) matrices whose rows already sum to 1, residual included:
    R_0 = C_0, R_l = C_l @ R_(l-1) (no residual added: the matrices hold it). (layer, n, n)."""
    out = np.empty_like(per_layer, dtype=np.float32)
    acc = None
    for l, c in enumerate(np.asarray(per_layer, dtype=np.float64)):
        acc = c if acc is None else c @ acc
        out[l] = acc
    return out


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def alti_rollout(c: Contributions) -> np.ndarray:
    """ALTI contributions rolled out across layers (Ferrando et al. 2022): (layer, n, n), read-only."""
    return c.alti_rolled


def value_rollout(c: Contributions) -> np.ndarray:
    """Norm-based rollout with the residual (see Contributions.value_rolled): (layer, n, n), read-only."""
    return c.value_rolled
