"""Small transformers built on attnviz's own attention (encoder, causal decoder, encoder-decoder).

Every attention call goes through `attnviz.attention.sdpa_torch`, so the weights the model
uses are exactly the weights it reports. `attention_result` turns one forward pass into the
same `AttentionResult` the pretrained models produce, so every inspection page works on it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from attnviz.attention import causal_mask, sdpa_torch
from attnviz.errors import BadInput
from attnviz.positional.alibi import alibi_slopes
from attnviz.types import AttentionResult, LoadedModel, ModelFacts
from attnviz.units import count_text

KINDS = ("encoder", "decoder", "encoder-decoder")
POSITIONAL = ("none", "sinusoidal", "learned", "rope", "alibi")


@dataclass(frozen=True)
class ScratchConfig:
    kind: str = "encoder-decoder"  # "encoder", "decoder" (causal) or "encoder-decoder"
    vocab_size: int = 16  # number of token ids, special tokens included
    d_model: int = 64  # width of the residual stream
    n_heads: int = 4  # attention heads per layer; must divide d_model
    n_layers: int = 1  # layers of the encoder, or of the decoder when kind="decoder"
    n_decoder_layers: int = 1  # decoder layers of an encoder-decoder (ignored otherwise)
    d_ff: int = 128  # hidden width of each block's MLP; 0 = attention-only blocks
    max_len: int = 32  # longest sequence the positions are built for
    positional: str = "learned"  # "none", "sinusoidal", "learned", "rope" or "alibi"
    seed: int = 0  # seed of the initial weights

    def __post_init__(self):
        if self.kind not in KINDS:
            raise BadInput(f"Unknown model kind {self.kind!r}; choose one of {', '.join(KINDS)}.")
        if self.positional not in POSITIONAL:
            raise BadInput(f"Unknown positional scheme {self.positional!r}; choose one of {', '.join(POSITIONAL)}.")
        for name in ("vocab_size", "d_model", "n_heads", "max_len"):
            if int(getattr(self, name)) < 1:
                raise BadInput(f"{name} must be at least 1 (it is {getattr(self, name)}).")
        if self.n_layers < 1 or (self.kind == "encoder-decoder" and self.n_decoder_layers < 1):
            raise BadInput("A transformer needs at least one layer (the number of layers is 0).")
        if self.d_model % self.n_heads:
            raise BadInput(f"d_model = {self.d_model} cannot be split evenly over {self.n_heads} heads: "
                           "choose a number of heads that divides d_model.")
        if self.positional == "rope" and self.d_head % 2:
            raise BadInput(f"RoPE rotates pairs of dimensions, so the head width (d_model / heads = {self.d_head}) "
                           "must be even.")
        if self.d_ff < 0:
            raise BadInput("d_ff must be 0 (no MLP) or more.")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------- positional maths (private)

def _sinusoidal_table(n: int, d: int) -> torch.Tensor:
    """(n, d): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same angle)."""
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)[:, : d // 2]
    return table


def _rope(x: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Rotate each pair (x_2i, x_2i+1) of x (B, H, T, d_head) by angle p * 10000^(-2i/d_head)."""
    T, d = x.shape[-2], x.shape[-1]
    pos = torch.arange(offset, offset + T, dtype=torch.float32)[:, None]
    theta = pos * torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)  # (T, d/2)
    cos, sin = torch.cos(theta), torch.sin(theta)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x1 * sin + x2 * cos
    return out


def _alibi_slopes(n_heads: int) -> torch.Tensor:
    """(H,) the ALiBi reference slopes (attnviz.positional.alibi.alibi_slopes, the one definition):
    1/2 ... 1/256 for 8 heads; for head counts that are not powers of two, interleaved as in get_slopes."""
    return torch.tensor(alibi_slopes(n_heads), dtype=torch.float32)


def _alibi_bias(n_heads: int, t_q: int, t_k: int) -> torch.Tensor:
    """(1, H, T_q, T_k): -slope * |i - j|, the linear distance penalty of ALiBi."""
    dist = (torch.arange(t_q)[:, None] - torch.arange(t_k)[None, :]).abs().float()
    return -_alibi_slopes(n_heads)[None, :, None, None] * dist


# ---------------------------------------------------------------- building blocks

class MultiHeadAttention(nn.Module):
    """Multi-head attention: per-head projections, sdpa_torch, concatenation, output projection."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x_q, x_kv, mask=None, bias=None, rope: bool = False):
        """x_q: (B, T_q, d_model); x_kv: (B, T_k, d_model); mask: bool, True = may attend.
        Returns output (B, T_q, d_model) and weights (B, H, T_q, T_k)."""
        B, Tq, C = x_q.shape
        Tk = x_kv.shape[1]
        q = self.q_proj(x_q).view(B, Tq, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, Tq, dh)
        k = self.k_proj(x_kv).view(B, Tk, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, Tk, dh)
        v = self.v_proj(x_kv).view(B, Tk, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, Tk, dh)
        if rope:
            q, k = _rope(q), _rope(k)
        out, weights = sdpa_torch(q, k, v, mask=mask, bias=bias)  # (B, H, Tq, dh), (B, H, Tq, Tk)
        out = out.transpose(1, 2).reshape(B, Tq, C)  # heads side by side again
        return self.out_proj(out), weights


class Block(nn.Module):
    """Pre-norm block: self-attention, optional cross-attention, MLP, each added to the residual."""

    def __init__(self, cfg: ScratchConfig, cross: bool):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.cross = MultiHeadAttention(cfg.d_model, cfg.n_heads) if cross else None
        self.ln_cross = nn.LayerNorm(cfg.d_model) if cross else None
        self.mlp = None
        if cfg.d_ff:
            self.ln2 = nn.LayerNorm(cfg.d_model)
            self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Linear(cfg.d_ff, cfg.d_model))

    def forward(self, x, mask, bias, rope, memory=None):
        h, w_self = self.attn(self.ln1(x), self.ln1(x), mask=mask, bias=bias, rope=rope)
        x = x + h
        w_cross = None
        if self.cross is not None:
            h, w_cross = self.cross(self.ln_cross(x), memory)  # sees every source position
            x = x + h
        if self.mlp is not None:
            x = x + self.mlp(self.ln2(x))
        return x, w_self, w_cross


class ScratchTransformer(nn.Module):
    """Encoder, causal decoder or encoder-decoder, chosen by `cfg.kind`.

    forward(src, tgt=None) -> (logits, attentions): for "encoder"/"decoder" only src
    (B, T) is used and logits are (B, T, vocab); for "encoder-decoder" src (B, S) is the
    source and tgt (B, T) the decoder input, logits (B, T, vocab). attentions maps
    "self" / "decoder" / "cross" to a list (one per layer) of (B, H, T_q, T_k) weights.
    """

    def __init__(self, cfg: ScratchConfig):
        super().__init__()
        self.cfg = cfg
        with torch.random.fork_rng(devices=[]):  # seeded weights without touching the global RNG
            torch.manual_seed(cfg.seed)
            self._build(cfg)

    def _build(self, cfg: ScratchConfig):
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        n_pos_tables = 2 if cfg.kind == "encoder-decoder" else 1
        self.pos = nn.ModuleList([nn.Embedding(cfg.max_len, cfg.d_model) for _ in range(n_pos_tables)]) \
            if cfg.positional == "learned" else None
        self.layers = nn.ModuleList([Block(cfg, cross=False) for _ in range(cfg.n_layers)])
        self.dec_layers = nn.ModuleList(
            [Block(cfg, cross=True) for _ in range(cfg.n_decoder_layers)]) if cfg.kind == "encoder-decoder" else None
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.ln_enc = nn.LayerNorm(cfg.d_model) if cfg.kind == "encoder-decoder" else None
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    # -- helpers
    def _check(self, ids: torch.Tensor, what: str):
        if ids.dim() != 2:
            raise BadInput(f"The {what} must be a batch of id sequences (B, T); got shape {tuple(ids.shape)}.")
        if ids.shape[1] == 0:
            raise BadInput(f"The {what} is empty.")
        if ids.shape[1] > self.cfg.max_len and self.cfg.positional in ("learned", "sinusoidal"):
            raise BadInput(f"The {what} has {count_text(ids.shape[1])} tokens but the model's positions "
                           f"({self.cfg.positional}) only go up to {count_text(self.cfg.max_len)}.")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.cfg.vocab_size):
            raise BadInput(f"Token ids must lie in 0..{self.cfg.vocab_size - 1}.")

    def _embed(self, ids: torch.Tensor, table: int) -> torch.Tensor:
        x = self.embed(ids) * math.sqrt(self.cfg.d_model) if self.cfg.positional == "sinusoidal" else self.embed(ids)
        T = ids.shape[1]
        if self.cfg.positional == "learned":
            x = x + self.pos[table](torch.arange(T))
        elif self.cfg.positional == "sinusoidal":
            x = x + _sinusoidal_table(T, self.cfg.d_model)
        return x

    def _self_bias(self, T: int):
        if self.cfg.positional == "alibi":
            return _alibi_bias(self.cfg.n_heads, T, T)
        return None

    def _stack(self, x, layers, mask, memory=None):
        rope = self.cfg.positional == "rope"
        bias = self._self_bias(x.shape[1])
        selfs, crosses = [], []
        for block in layers:
            x, w_self, w_cross = block(x, mask, bias, rope, memory)
            selfs.append(w_self)
            crosses.append(w_cross)
        return x, selfs, crosses

    # -- passes
    def encode(self, src: torch.Tensor):
        """src (B, S) -> (memory (B, S, d_model), encoder self-attention per layer)."""
        self._check(src, "source sequence")
        causal = self.cfg.kind == "decoder"
        mask = torch.from_numpy(causal_mask(src.shape[1])) if causal else None
        x, selfs, _ = self._stack(self._embed(src, 0), self.layers, mask)
        return x, selfs

    def decode(self, memory: torch.Tensor, tgt: torch.Tensor):
        """Encoder-decoder only: tgt (B, T) decoder input -> (logits (B, T, V), self, cross)."""
        self._check(tgt, "decoder input")
        mask = torch.from_numpy(causal_mask(tgt.shape[1]))
        x, selfs, crosses = self._stack(self._embed(tgt, 1), self.dec_layers, mask, memory)
        return self.head(self.ln_f(x)), selfs, crosses

    def forward(self, src: torch.Tensor, tgt: torch.Tensor | None = None):
        if self.cfg.kind == "encoder-decoder":
            if tgt is None:
                raise BadInput("An encoder-decoder needs a decoder input as well as a source.")
            memory, enc = self.encode(src)
            logits, dec, cross = self.decode(self.ln_enc(memory), tgt)
            return logits, {"self": enc, "decoder": dec, "cross": cross}
        x, selfs = self.encode(src)
        return self.head(self.ln_f(x)), {"self": selfs}

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, n_out: int, bos: int) -> torch.Tensor:
        """Encoder-decoder: decode n_out tokens greedily after `bos`; returns (B, n_out) ids."""
        memory, _ = self.encode(src)
        memory = self.ln_enc(memory)
        out = torch.full((src.shape[0], 1), bos, dtype=torch.long)
        for _ in range(n_out):
            logits, _, _ = self.decode(memory, out)
            out = torch.cat([out, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        return out[:, 1:]


def facts_for(cfg: ScratchConfig, name: str = "scratch") -> ModelFacts:
    """ModelFacts describing a scratch model, as the pretrained loaders produce them."""
    return ModelFacts(
        name=name, kind=cfg.kind, architecture="ScratchTransformer", n_layers=cfg.n_layers,
        n_heads=cfg.n_heads, n_kv_heads=cfg.n_heads, d_model=cfg.d_model,
        max_positions=cfg.max_len if cfg.positional in ("learned", "sinusoidal") else None,
        position_scheme=cfg.positional, source="trained in attnviz",
    )


def stacks_to_numpy(attentions: dict, index: int = 0) -> dict[str, np.ndarray]:
    """{stack: (layer, head, q, k) float32} for batch item `index` of a forward's attentions."""
    return {name: np.stack([w[index].detach().float().numpy() for w in maps]).astype(np.float32)
            for name, maps in attentions.items()}


def result_from_arrays(arrays: dict[str, np.ndarray], facts: ModelFacts, tokens, token_ids,
                       decoder_tokens=None, special=(), text: str = "") -> AttentionResult:
    """AttentionResult from captured stacks {"self": (L, H, S, S), ["decoder", "cross"]}.

    tokens / token_ids: the (encoder) input; decoder_tokens for encoder-decoders;
    special: the token strings to flag as special (e.g. "<s>").
    """
    tokens = tuple(str(t) for t in tokens)
    n = len(tokens)
    return AttentionResult(
        attention=np.array(arrays["self"], dtype=np.float32),
        tokens=tokens, token_ids=tuple(int(i) for i in token_ids),
        special_mask=np.array([t in special for t in tokens], dtype=bool),
        continuation=np.zeros(n, dtype=bool), segment_ids=np.zeros(n, dtype=np.int64),
        facts=facts, text=text or " ".join(tokens),
        decoder_attention=None if "decoder" not in arrays else np.array(arrays["decoder"], dtype=np.float32),
        cross_attention=None if "cross" not in arrays else np.array(arrays["cross"], dtype=np.float32),
        decoder_tokens=None if decoder_tokens is None else tuple(str(t) for t in decoder_tokens),
    )


@torch.no_grad()
def attention_result(model: ScratchTransformer, src_ids, tgt_ids=None, vocab=None, name: str = "scratch",
                     special=("<s>",)) -> AttentionResult:
    """Run the model on one sequence and capture its attention as an AttentionResult.

    src_ids: ids (S,); tgt_ids: decoder input ids (T,) for encoder-decoders; vocab: list of
    token strings indexed by id (defaults to the ids as text).
    """
    from attnviz.models.adapter import run

    src = torch.as_tensor(np.asarray(src_ids), dtype=torch.long)[None]
    tgt = None if tgt_ids is None else torch.as_tensor(np.asarray(tgt_ids), dtype=torch.long)[None]
    facts = facts_for(model.cfg, name)
    was_training = model.training
    model.eval()
    try:
        (_, att), _ = run(LoadedModel(name, model, None, facts), (src, tgt))
    finally:
        model.train(was_training)
    name_of = (lambda i: vocab[i]) if vocab is not None else str
    return result_from_arrays(
        stacks_to_numpy(att), facts,
        [name_of(int(i)) for i in src[0]], src[0].tolist(),
        None if tgt is None else [name_of(int(i)) for i in tgt[0]], special)
