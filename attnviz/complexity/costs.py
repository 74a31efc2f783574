"""Cost formulas for attention and its efficient variants: FLOPs, memory, KV cache, crossovers.

Conventions (used by every formula here, stated once):
- one multiply-add = 2 FLOPs; a matmul (a x b) @ (b x c) costs 2*a*b*c FLOPs;
- "attention core" = the two matmuls Q K^T and P V (the projections and softmax are
  counted separately or not at all); with k keys per query and h heads of width
  d_head = d_model / h, one forward pass of the core costs 2 matmuls * 2*n*k*d_head * h
  = 4*n*k*d_model FLOPs per layer and sequence;
- backward = 2x forward (gradients with respect to both matmul inputs), so training = 3x
  forward; FlashAttention recomputes Q K^T in its backward pass: one extra matmul;
- numbers are shown with attnviz.units: bytes in binary units (1 KiB = 1024 bytes), FLOPs with
  SI prefixes (1 GFLOP = 1e9 FLOPs).

All arithmetic is on Python ints (exact, no overflow); curves are float64.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace

import numpy as np

from attnviz.errors import BadInput
from attnviz.runtime import config_value
from attnviz.units import dtype_bytes, human_bytes, human_count, human_flops, human_ratio

# The dtypes the calculator offers (their bytes come from attnviz.units.DTYPE_BYTES).
DTYPES = ("fp32", "fp16", "bf16", "fp8")
STATS_BYTES = 4  # FlashAttention keeps its per-row softmax statistics in fp32

# Guards against absurd inputs (the formulas are exact ints, these keep the page sensible).
MAX_SEQ_LEN = 100_000_000
LIMITS = {  # field -> (smallest, largest) allowed
    "seq_len": (1, MAX_SEQ_LEN),
    "batch": (1, 1_000_000),
    "d_model": (1, 1_000_000),
    "n_heads": (1, 100_000),
    "n_kv_heads": (1, 100_000),
    "n_layers": (1, 10_000),
    "window": (1, MAX_SEQ_LEN),
    "sparse_block": (0, MAX_SEQ_LEN),
    "flash_block": (1, 1_000_000),
    "d_ff": (1, 10_000_000),
}
FIELD_NAMES = {  # how each size is called in messages
    "seq_len": "Sequence length n",
    "batch": "Batch size",
    "d_model": "d_model",
    "n_heads": "The number of heads",
    "n_kv_heads": "The number of KV heads (groups)",
    "n_layers": "The number of layers",
    "window": "The window w",
    "sparse_block": "The sparse block size",
    "flash_block": "The FlashAttention block size",
    "d_ff": "The feed-forward width d_ff",
}


def _whole(value, what: str) -> int:
    """value as an int, or BadInput when it is not a whole number."""
    if isinstance(value, bool):
        raise BadInput(f"{what} must be a whole number, got {value}.")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise BadInput(f"{what} must be a whole number, got {value}.")
        if float(value).is_integer():
            return int(value)
        raise BadInput(f"{what} must be a whole number, got {value:g}.")
    raise BadInput(f"{what} must be a whole number, got {value!r}.")


@dataclass(frozen=True)
class AttentionConfig:
    """A transformer's attention-relevant sizes; validated on construction (BadInput)."""

    seq_len: int = 512  # n: tokens per sequence
    batch: int = 1  # sequences processed together
    d_model: int = 768  # hidden size d
    n_heads: int = 12  # query heads h per layer
    n_kv_heads: int = 12  # key/value heads g (g = h: multi-head, 1 < g < h: GQA, g = 1: MQA)
    n_layers: int = 12  # attention layers L
    dtype: str = "fp16"  # storage type of activations, scores and the KV cache
    window: int = 512  # w: keys each query sees in sliding-window attention
    sparse_block: int = 0  # s: block size of the strided sparse pattern; 0 = round(sqrt(n))
    flash_block: int = 128  # B: key-block width of a FlashAttention tile
    d_ff: int = 3072  # feed-forward hidden width (4*d_model in BERT and GPT-2)
    gated_ffn: bool = False  # gated feed-forward (SwiGLU, LLaMA): three d x d_ff matrices, not two
    name: str = "custom"  # label shown with the results

    def __post_init__(self):
        for f in fields(self):
            if f.name in LIMITS:
                value = _whole(getattr(self, f.name), FIELD_NAMES[f.name])
                lo, hi = LIMITS[f.name]
                what = FIELD_NAMES[f.name]
                if value < lo:
                    need = "zero or more" if lo == 0 else "at least 1"
                    raise BadInput(f"{what} must be {need}, got {value:,}.")
                if value > hi:
                    raise BadInput(f"{what} = {value:,} is beyond what this calculator handles "
                                   f"(at most {hi:,}).")
                object.__setattr__(self, f.name, value)
        if self.dtype not in DTYPES:
            raise BadInput(f"Unknown dtype {self.dtype!r}: choose one of {', '.join(DTYPES)}.")
        if self.d_model % self.n_heads:
            raise BadInput(f"d_model = {self.d_model:,} is not divisible by {self.n_heads:,} heads: "
                           f"every head needs the same width d_model / heads.")
        if self.n_kv_heads > self.n_heads:
            raise BadInput(f"There are more KV heads ({self.n_kv_heads:,}) than query heads "
                           f"({self.n_heads:,}): each KV head must serve at least one query head.")
        if self.n_heads % self.n_kv_heads:
            raise BadInput(f"{self.n_heads:,} heads cannot be split evenly into {self.n_kv_heads:,} "
                           f"KV groups: the number of heads must be a multiple of the KV heads.")
        object.__setattr__(self, "gated_ffn", bool(self.gated_ffn))

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def bytes_per_value(self) -> int:
        return dtype_bytes(self.dtype)

    @property
    def sparse_block_used(self) -> int:
        """The block size s of the sparse pattern at this n (sqrt(n) when set to 0)."""
        return self.sparse_block or max(1, math.isqrt(self.seq_len))

    def with_(self, **changes) -> "AttentionConfig":
        return replace(self, **changes)


@dataclass(frozen=True)
class Preset:
    config: AttentionConfig
    source: str  # where the numbers come from


PRESETS = {
    "BERT-base": Preset(
        AttentionConfig(seq_len=512, d_model=768, n_heads=12, n_kv_heads=12, n_layers=12,
                        d_ff=3072, gated_ffn=False, window=128, name="BERT-base"),
        "Devlin et al. 2019, BERT (arXiv:1810.04805), Table/Sec. 3: L=12, H=768, A=12, "
        "feed-forward 4H = 3072, at most 512 positions."),
    "GPT-2 small": Preset(
        AttentionConfig(seq_len=1024, d_model=768, n_heads=12, n_kv_heads=12, n_layers=12,
                        d_ff=3072, gated_ffn=False, window=256, name="GPT-2 small"),
        "Radford et al. 2019, Language Models are Unsupervised Multitask Learners (117M/124M "
        "model): 12 layers, d=768, 12 heads, feed-forward 4d = 3072, context 1024."),
    "LLaMA-7B-like": Preset(
        AttentionConfig(seq_len=2048, d_model=4096, n_heads=32, n_kv_heads=32, n_layers=32,
                        d_ff=11008, gated_ffn=True, window=4096, name="LLaMA-7B-like"),
        "Touvron et al. 2023, LLaMA (arXiv:2302.13971), Table 2: 7B model with 32 layers, "
        "d=4096, 32 heads, SwiGLU feed-forward 11008 wide, context 2048 (set KV heads "
        "below 32 to see grouped-query attention)."),
}

def feed_forward_from_hf(hf_config, d_model: int) -> tuple[int, bool]:
    """(d_ff, gated) read from a transformers config object: the width by attribute name, gating from the
    family table (SwiGLU / GeGLU families) or T5's feed_forward_proj ("gated-gelu")."""
    from attnviz.models.families import family_for_type

    d_ff = config_value(hf_config, "d_ff") or 4 * d_model
    fam = family_for_type(str(getattr(hf_config, "model_type", "")))
    gated = (fam is not None and fam.gated_mlp) or "gated" in str(getattr(hf_config, "feed_forward_proj", ""))
    return int(d_ff), gated


def config_from_facts(facts, d_ff: int | None = None, gated: bool = False, **overrides) -> AttentionConfig:
    """An AttentionConfig for a loaded model's ModelFacts (n defaults to its longest input)."""
    n = facts.max_positions or 2048
    base = dict(seq_len=min(n, MAX_SEQ_LEN), d_model=facts.d_model, n_heads=facts.n_heads,
                n_kv_heads=facts.n_kv_heads or facts.n_heads, n_layers=facts.n_layers,
                d_ff=d_ff or 4 * facts.d_model, gated_ffn=gated, window=min(n, 512),
                name=str(facts.name))
    base.update(overrides)
    return AttentionConfig(**base)


# ---------------------------------------------------------------- variants

@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    big_o: str  # time of the attention core
    exact: bool  # computes the same result as full softmax attention
    idea: str  # one sentence


VARIANTS = {
    "full": Variant("full", "Full (one head)", "O(n²d)", True,
                    "Every token scores every token with one d-wide head: one n×n matrix per layer."),
    "mha": Variant("mha", "Multi-head", "O(n²d)", True,
                   "h heads of width d/h: the same FLOPs as one wide head, but h score matrices."),
    "flash": Variant("flash", "FlashAttention", "O(n²d), O(n) memory", True,
                     "Exact attention computed tile by tile; the n×n matrix is never stored, and the "
                     "backward pass recomputes it."),
    "linear": Variant("linear", "Linear attention", "O(n·d·d_head)", False,
                      "A kernel feature map replaces softmax so Σ φ(k)vᵀ is summed once: no n×n matrix."),
    "window": Variant("window", "Sliding window", "O(n·w·d)", False,
                      "Each token sees only the w most recent or nearest tokens."),
    "sparse": Variant("sparse", "Sparse (strided)", "O(n·√n·d)", False,
                      "Each token sees its own block of s tokens and one summary token per block; "
                      "s ≈ √n gives about 2√n keys per query."),
    "gqa": Variant("gqa", "GQA (config's KV heads)", "O(n²d)", True,
                   "Groups of query heads share one key/value head: same scores, smaller KV cache."),
    "mqa": Variant("mqa", "MQA (1 KV head)", "O(n²d)", True,
                   "All query heads share a single key/value head: the smallest KV cache."),
}


def keys_per_query(cfg: AttentionConfig, variant: str) -> int:
    """How many keys one query scores (k) under a variant; n for the full-attention family."""
    n = cfg.seq_len
    if variant == "window":
        return min(cfg.window, n)
    if variant == "sparse":
        s = cfg.sparse_block_used
        return min(n, s + -(-n // s))  # own block + one summary per block (ceil(n / s))
    if variant == "linear":
        return 0  # no scores at all
    return n


def kv_heads(cfg: AttentionConfig, variant: str) -> int:
    """Key/value heads the variant caches per layer."""
    return {"gqa": cfg.n_kv_heads, "mqa": 1}.get(variant, cfg.n_heads)


def core_flops(cfg: AttentionConfig, variant: str) -> int:
    """Forward FLOPs of the attention core (Q Kᵀ and P V), all layers, whole batch."""
    n, d, dh = cfg.seq_len, cfg.d_model, cfg.d_head
    if variant == "linear":
        # per head: φ(K)ᵀV and φ(Q)(KᵀV) are 2*n*dh*dh each; the normaliser Σφ(k) is n*dh adds
        # and φ(q)·z is 2*n*dh; summed over h heads (h*dh = d):
        per_layer = 4 * n * d * dh + 3 * n * d
    else:
        per_layer = 4 * n * keys_per_query(cfg, variant) * d
    return per_layer * cfg.batch * cfg.n_layers


def training_flops(cfg: AttentionConfig, variant: str) -> int:
    """Forward + backward FLOPs of the core; FlashAttention adds one recomputed Q Kᵀ."""
    fwd = core_flops(cfg, variant)
    extra = fwd // 2 if variant == "flash" else 0  # Q Kᵀ is one of the forward's two matmuls
    return 3 * fwd + extra


def attention_matrix_bytes(cfg: AttentionConfig, variant: str) -> int:
    """Scores held at once in one layer for the whole batch (bytes).

    full: one n×n matrix; multi-head family: h of them; flash: one B-wide tile strip per query
    row (n×B per head, in on-chip memory); window/sparse: n×k per head; linear: no scores, the
    dh×dh state per head instead."""
    b, h, n, B = cfg.batch, cfg.n_heads, cfg.seq_len, cfg.bytes_per_value
    if variant == "full":
        return b * n * n * B
    if variant == "flash":
        return b * h * n * min(n, cfg.flash_block) * B
    if variant == "linear":
        return b * h * cfg.d_head * cfg.d_head * B
    return b * h * n * keys_per_query(cfg, variant) * B


def activation_bytes(cfg: AttentionConfig, variant: str) -> int:
    """Attention-block activations kept for the backward pass, all layers (bytes).

    Per layer: the block input x, Q, K, V and the attention output (n·(3d + 2·d_kv) values)
    plus what the core keeps: the probability matrix (full, multi-head, window, sparse, GQA),
    fp32 softmax statistics per query row (flash), or the dh×dh state per head (linear)."""
    b, n, d, h, B = cfg.batch, cfg.seq_len, cfg.d_model, cfg.n_heads, cfg.bytes_per_value
    d_kv = kv_heads(cfg, variant) * cfg.d_head
    tensors = b * n * (3 * d + 2 * d_kv) * B
    if variant == "flash":
        core = b * h * n * STATS_BYTES
    else:
        core = attention_matrix_bytes(cfg, variant)
    return cfg.n_layers * (tensors + core)


def kv_cache_bytes(n_layers: int, n_kv_heads: int, d_head: int, tokens: int, batch: int = 1,
                   bytes_per_value: int = 2) -> int:
    """The KV cache formula (the one place it is written; lab 7 uses it too):
    2 (K and V) x layers x KV heads x d_head x tokens x batch x bytes per value."""
    for name, x in (("layers", n_layers), ("KV heads", n_kv_heads), ("d_head", d_head),
                    ("tokens", tokens), ("batch", batch), ("bytes per value", bytes_per_value)):
        if int(x) < 0:
            raise BadInput(f"The number of {name} cannot be negative.")
    return 2 * n_layers * n_kv_heads * d_head * tokens * batch * bytes_per_value


def kv_cache_bytes_per_token(cfg: AttentionConfig, variant: str) -> int:
    """Bytes the KV cache grows by per generated token, all layers (one sequence);
    0 for linear attention (fixed state)."""
    if variant == "linear":
        return 0
    return kv_cache_bytes(cfg.n_layers, kv_heads(cfg, variant), cfg.d_head, 1, 1, cfg.bytes_per_value)


def variant_kv_cache_bytes(cfg: AttentionConfig, variant: str) -> int:
    """KV cache of a variant for n tokens and the whole batch. A sliding window keeps only the
    last w tokens (rolling buffer); linear attention keeps a dh×dh matrix + dh normaliser per head."""
    if variant == "linear":
        dh = cfg.d_head
        return cfg.batch * cfg.n_layers * cfg.n_heads * (dh * dh + dh) * cfg.bytes_per_value
    tokens = min(cfg.window, cfg.seq_len) if variant == "window" else cfg.seq_len
    return kv_cache_bytes(cfg.n_layers, kv_heads(cfg, variant), cfg.d_head, tokens, cfg.batch, cfg.bytes_per_value)


@dataclass(frozen=True)
class VariantCost:
    variant: Variant
    keys_per_query: int  # keys one query scores (0 for linear attention)
    flops_forward: int  # attention core, all layers, whole batch
    flops_training: int  # forward + backward of the core
    attention_matrix_bytes: int  # scores held at once in one layer
    activation_bytes: int  # attention activations kept for backward, all layers
    kv_cache_bytes_per_token: int  # all layers, one sequence
    kv_cache_bytes: int  # n tokens, whole batch


def variant_costs(cfg: AttentionConfig) -> dict[str, VariantCost]:
    """Every variant's costs at cfg.seq_len, keyed like VARIANTS."""
    return {
        key: VariantCost(v, keys_per_query(cfg, key), core_flops(cfg, key), training_flops(cfg, key),
                         attention_matrix_bytes(cfg, key), activation_bytes(cfg, key),
                         kv_cache_bytes_per_token(cfg, key), variant_kv_cache_bytes(cfg, key))
        for key, v in VARIANTS.items()
    }


# ---------------------------------------------------------------- the rest of the layer

def projection_flops(cfg: AttentionConfig, variant: str = "mha") -> int:
    """Q, K, V and output projections, all layers, whole batch: 4nd² + 4n·d·d_kv per layer."""
    n, d = cfg.seq_len, cfg.d_model
    d_kv = kv_heads(cfg, variant) * cfg.d_head
    return cfg.batch * cfg.n_layers * (4 * n * d * d + 4 * n * d * d_kv)


def ffn_matrices(cfg: AttentionConfig) -> int:
    """d x d_ff weight matrices in the feed-forward block: 2 (plain) or 3 (gated)."""
    return 3 if cfg.gated_ffn else 2


def ffn_flops(cfg: AttentionConfig) -> int:
    """Feed-forward FLOPs, all layers, whole batch: 2·m·n·d·d_ff with m matrices."""
    return cfg.batch * cfg.n_layers * 2 * ffn_matrices(cfg) * cfg.seq_len * cfg.d_model * cfg.d_ff


def ffn_crossover(cfg: AttentionConfig) -> float:
    """The n where attention's per-token core cost 4·n·d equals the feed-forward's 2·m·d·d_ff:
    n* = m·d_ff / 2 (= 4d for a plain 4d-wide feed-forward)."""
    return ffn_matrices(cfg) * cfg.d_ff / 2


def rnn_flops(cfg: AttentionConfig) -> int:
    """A vanilla RNN layer of width d over n tokens, all layers and batch: per token
    W_h·h + W_x·x = 4d² FLOPs, so 4·n·d² per layer."""
    return cfg.batch * cfg.n_layers * 4 * cfg.seq_len * cfg.d_model ** 2


def rnn_crossover(cfg: AttentionConfig) -> int:
    """The n where attention's 4n²d equals the RNN's 4nd²: n = d."""
    return cfg.d_model


def sequential_steps(cfg: AttentionConfig) -> dict[str, int]:
    """Steps that must run one after another in one layer: attention 1, RNN n."""
    return {"attention": 1, "rnn": cfg.seq_len}


# ---------------------------------------------------------------- curves

METRICS = {  # key -> (label, unit kind)
    "flops_forward": ("Forward FLOPs of the attention core (all layers)", "flops"),
    "flops_training": ("Training FLOPs (forward + backward, all layers)", "flops"),
    "attention_matrix_bytes": ("Scores held at once (one layer)", "bytes"),
    "activation_bytes": ("Activation memory for backward (all layers)", "bytes"),
    "kv_cache_bytes": ("KV cache for n tokens", "bytes"),
}
_METRIC_FN = {
    "flops_forward": core_flops,
    "flops_training": training_flops,
    "attention_matrix_bytes": attention_matrix_bytes,
    "activation_bytes": activation_bytes,
    "kv_cache_bytes": variant_kv_cache_bytes,
}


def length_grid(n: int, points_per_octave: int = 4, lo: int = 16) -> np.ndarray:
    """Sequence lengths (int64, increasing, unique) from lo up to max(4n, 2^17), capped at
    MAX_SEQ_LEN, spaced evenly in log n; n itself is included."""
    hi = min(MAX_SEQ_LEN, max(4 * n, 2 ** 17))
    k = max(2, int(math.ceil(math.log2(hi / lo) * points_per_octave)) + 1)
    grid = np.unique(np.round(np.geomspace(lo, hi, k)).astype(np.int64))
    return np.unique(np.append(grid, min(n, MAX_SEQ_LEN)))


def curve(cfg: AttentionConfig, metric: str, variant: str, ns) -> np.ndarray:
    """float64 (len(ns),): metric of a variant at each length in ns (other sizes from cfg)."""
    if metric not in _METRIC_FN:
        raise BadInput(f"Unknown metric {metric!r}: choose one of {', '.join(_METRIC_FN)}.")
    fn = _METRIC_FN[metric]
    return np.array([float(fn(cfg.with_(seq_len=int(n)), variant)) for n in ns], dtype=np.float64)


# ---------------------------------------------------------------- input and sentences

_LENGTH_RE = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?)\s*([kmb]?)\s*$", re.I)


def parse_length(text: str, what: str = "Sequence length n") -> int:
    """'512', '100k', '1.5M', '1e6', '2^20', '1,000,000' -> int; BadInput with a plain
    message for anything else (fractions, zero, negatives, absurd sizes)."""
    s = str(text).strip().replace(" ", "")
    if not s:
        raise BadInput(f"{what} is empty: type a number of tokens such as 512, 100k or 1M.")
    if s.startswith("-"):
        raise BadInput(f"{what} must be at least 1, got {s}.")
    m = re.fullmatch(r"([0-9]+)\^([0-9]+)", s)
    if m:
        base, exp = int(m.group(1)), int(m.group(2))
        if exp > 64 or (base > 1 and exp * math.log10(base) > 12):
            raise BadInput(f"{what} = {s} is beyond what this calculator handles "
                           f"(at most {MAX_SEQ_LEN:,}).")
        value = base ** exp
    else:
        m = _LENGTH_RE.match(s)
        if not m:
            raise BadInput(f"{what} must be a number of tokens such as 512, 100k or 1M, got {text!r}.")
        number, suffix = m.group(1).replace(",", "").replace("_", ""), m.group(2).lower()
        try:
            exact = float(number) * {"": 1, "k": 1e3, "m": 1e6, "b": 1e9}[suffix]
        except ValueError:
            raise BadInput(f"{what} must be a number of tokens such as 512, 100k or 1M, got {text!r}.")
        if not math.isfinite(exact) or exact > 1e15:
            raise BadInput(f"{what} = {s} is beyond what this calculator handles "
                           f"(at most {MAX_SEQ_LEN:,}).")
        if not exact.is_integer():
            raise BadInput(f"{what} must be a whole number of tokens, got {s}.")
        value = int(exact)
    if value < 1:
        raise BadInput(f"{what} must be at least 1, got {value}.")
    if value > MAX_SEQ_LEN:
        raise BadInput(f"{what} = {value:,} is beyond what this calculator handles "
                       f"(at most {MAX_SEQ_LEN:,}).")
    return value


def one_head_matrix_bytes(cfg: AttentionConfig) -> int:
    """n × n scores of one head in the config's dtype (one sequence)."""
    return cfg.seq_len ** 2 * cfg.bytes_per_value


def cost_rows(cfg: AttentionConfig) -> list[dict[str, str]]:
    """The "Costs at n" table: one row per variant, numbers in human units (≈ marks approximations)."""
    rows = []
    for key, vc in variant_costs(cfg).items():
        scores_free = key == "linear"
        rows.append({
            "Variant": vc.variant.label + ("" if vc.variant.exact else " ≈"),
            "Time": vc.variant.big_o,
            "Keys/query": "none" if scores_free else f"{vc.keys_per_query:,}",
            "FLOPs fwd": human_flops(vc.flops_forward),
            "FLOPs train": human_flops(vc.flops_training),
            "Scores (1 layer)": human_bytes(vc.attention_matrix_bytes),
            "Activations": human_bytes(vc.activation_bytes),
            "KV / token": "fixed" if scores_free else human_bytes(vc.kv_cache_bytes_per_token),
            "KV at n": human_bytes(vc.kv_cache_bytes),
        })
    return rows


def rnn_rows(cfg: AttentionConfig) -> list[dict[str, str]]:
    """Self-attention against an RNN of width d, one layer: FLOPs, sequential steps, path length."""
    n, d = cfg.seq_len, cfg.d_model
    return [
        {"": "FLOPs per layer", "Self-attention": human_flops(4 * n ** 2 * d), "RNN": human_flops(4 * n * d ** 2)},
        {"": "Sequential steps", "Self-attention": "1", "RNN": f"{n:,}"},
        {"": "Path between two tokens", "Self-attention": "1", "RNN": f"up to {n - 1:,}"},
    ]


def sentences(cfg: AttentionConfig) -> dict[str, str]:
    """One plain sentence per result at cfg.seq_len, keyed by topic."""
    c = variant_costs(cfg)
    n = cfg.seq_len
    one_head = one_head_matrix_bytes(cfg)
    out = {
        "one_head": (f"One head's attention matrix at n = {n:,} in {cfg.dtype} holds {human_count(n * n)} "
                     f"scores: {human_bytes(one_head)}."),
        "mha": (f"With {cfg.n_heads} heads and batch {cfg.batch}, one layer holds "
                f"{human_bytes(c['mha'].attention_matrix_bytes)} of scores at once; FlashAttention holds "
                f"{human_bytes(c['flash'].attention_matrix_bytes)} of tiles "
                f"({cfg.flash_block}-wide) instead."),
        "flops": (f"The attention core costs {human_flops(c['mha'].flops_forward)} per forward pass over "
                  f"{cfg.n_layers} layers; a {cfg.window:,}-token window cuts that to "
                  f"{human_flops(c['window'].flops_forward)}."),
        "training": (f"Training adds the backward pass: {human_flops(c['mha'].flops_training)} "
                     f"(FlashAttention {human_flops(c['flash'].flops_training)}, because it recomputes the "
                     f"scores instead of storing them)."),
        "activations": (f"Kept for the backward pass: {human_bytes(c['mha'].activation_bytes)} of attention "
                        f"activations with multi-head attention, {human_bytes(c['flash'].activation_bytes)} "
                        f"with FlashAttention."),
        "kv": (f"Generating, the KV cache grows by {human_bytes(c['mha'].kv_cache_bytes_per_token)} per token "
               f"and reaches {human_bytes(c['mha'].kv_cache_bytes)} at {n:,} tokens"
               + (f"; with {cfg.n_kv_heads} KV heads (GQA) {human_bytes(c['gqa'].kv_cache_bytes)}"
                  if cfg.n_kv_heads < cfg.n_heads else "")
               + f"; with one KV head (MQA) {human_bytes(c['mqa'].kv_cache_bytes)}."),
        "ffn": (f"Attention's core passes the feed-forward block at n ≈ {ffn_crossover(cfg):,.0f} tokens; at "
                f"n = {n:,} it is {human_ratio(core_flops(cfg, 'mha') / ffn_flops(cfg))} the feed-forward cost."),
        "rnn": (f"Against an RNN of width {cfg.d_model:,}: attention costs {human_ratio(n / cfg.d_model)} as much "
                f"per layer (n/d), but runs in 1 parallel step where the RNN needs {n:,} sequential ones."),
    }
    return out
