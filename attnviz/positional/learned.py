"""Read a model's learned position-embedding matrix (BERT, RoBERTa, GPT-2, OPT, BART...) as numpy."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import AttnvizError

SCHEME_TEXT = {
    "rope": "rotary position embedding (RoPE): positions enter by rotating the queries and keys "
            "inside every attention layer, so there is no table of position vectors to show",
    "alibi": "ALiBi: a fixed distance penalty is added to the attention scores, so there are "
             "no position vectors at all",
    "relative": "relative position biases: a learned number per distance bucket is added to the "
                "attention scores, so there is no table of absolute position vectors",
}


class NoPositionEmbeddings(AttnvizError):
    """The model has no table of absolute position vectors (RoPE, ALiBi, relative bias)."""


@dataclass(frozen=True)
class LearnedPositions:
    matrix: np.ndarray  # (n_rows, d_model) float32 read-only copy of the table's weights
    module: str  # dotted name of the embedding module inside the model
    offset: int  # rows before position 0 (RoBERTa/OPT/BART keep 2 reserved rows), else 0
    scheme: str  # the model's position scheme ("learned", or "sinusoidal" for a fixed table)

    @property
    def n_positions(self) -> int:
        """Usable positions: the longest input (special tokens included) the table covers."""
        return self.matrix.shape[0] - self.offset

    @property
    def positions(self) -> np.ndarray:
        """(n_positions, d_model) the rows that real positions 0, 1, ... use."""
        return self.matrix[self.offset:]


def rope_base(config) -> float | None:
    """RoPE base theta from a transformers config (rope_parameters in v5, rope_theta before)."""
    params = getattr(config, "rope_parameters", None) or {}
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    theta = theta or getattr(config, "rope_theta", None)
    return float(theta) if theta else None


def _no_table_message(name: str, scheme: str, config) -> str:
    what = SCHEME_TEXT.get(scheme, "a scheme without a table of absolute position vectors")
    extra = ""
    if scheme == "rope" and rope_base(config):
        extra = f" (base theta = {rope_base(config):,.0f}); the RoPE tab shows how that works"
    return f"{name} has no position-embedding matrix: it uses {what}{extra}."


def position_embeddings(loaded) -> LearnedPositions:
    """The learned (or fixed) absolute position table of a LoadedModel, as numpy.

    Returns LearnedPositions with matrix (n_rows, d_model). Raises NoPositionEmbeddings with a
    plain message for models that have none (RoPE such as SmolLM2/Llama, ALiBi, T5).
    """
    import torch

    from attnviz.models.families import table_module

    model, facts = loaded.model, loaded.facts
    found = table_module(model, "pos_embed")  # the encoder's table in encoder-decoders
    if found is None or not isinstance(found[1], torch.nn.Embedding):
        raise NoPositionEmbeddings(_no_table_message(facts.name, facts.position_scheme, model.config))
    name, module = found
    offset = getattr(module, "offset", None)  # BART / OPT tables shift positions by 2
    if offset is None:
        # RoBERTa-style tables number positions from padding_idx + 1; BERT has no padding_idx
        offset = module.padding_idx + 1 if module.padding_idx is not None else 0
    weights = module.weight.detach().to("cpu", torch.float32).numpy().copy()
    weights.setflags(write=False)
    scheme = facts.position_scheme if facts.position_scheme in ("learned", "sinusoidal") else "learned"
    return LearnedPositions(matrix=weights, module=name, offset=int(offset), scheme=scheme)


def vector_norms(table: np.ndarray, top: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """L2 length of each position vector and the positions of the `top` longest.

    table: (n_positions, d_model). Returns (norms (n_positions,), positions (top,), longest first).
    """
    norms = np.linalg.norm(np.asarray(table, dtype=np.float64), axis=1)
    return norms, np.argsort(norms)[::-1][:top]
