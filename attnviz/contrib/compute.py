"""Model + text -> Contributions, through the same encoding as extract; and the lens that shows a
contribution quantity in place of the attention weights on every view.

  quantity         per head?   what each (query i, key j) cell holds
  weights          yes         alpha_ij, the softmax weights (the model's own)
  value-weighted   yes         ||alpha_ij f(x_j)|| / sum_k ||alpha_ik f(x_k)||  (Kobayashi et al. 2020)
  ALTI             no          token j's share of layer output i, heads summed, residual and norm
                               included (Ferrando et al. 2022): one map per layer"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnviz.contrib import parts
from attnviz.contrib.decompose import Contributions, decompose, rows_normalised
from attnviz.errors import BadInput
from attnviz.extract import encode
from attnviz.types import AttentionResult

QUANTITIES = ("weights", "value-weighted", "ALTI")
LABELS = {  # what a colour bar or hover calls the number
    "weights": "weight",
    "value-weighted": "value-weighted share",
    "ALTI": "ALTI contribution",
}
DESCRIPTIONS = {
    "weights": "the softmax attention weights",
    "value-weighted": "each weight times the length of the value vector it moves (‖α f(x)‖, Kobayashi et al. "
                      "2020), rows rescaled to sum to 1",
    "ALTI": "each token's share of the layer's output, heads summed, residual and norm included (Ferrando et "
            "al. 2022); one map per layer, so there is one 'head' per layer",
}


def contributions(loaded, text: str, text_pair: str | None = None, *, max_tokens: int | None = None,
                  decoder_text: str | None = None) -> Contributions:
    """Contributions of every layer of `loaded` (a LoadedModel) on the text, encoded exactly as
    extract encodes it (for encoder-decoders: the encoder). Raises BadInput for a model whose
    blocks the maths does not cover (the message names the covered families)."""
    parts.family_of(loaded.model)  # a plain message before any work
    e = encode(loaded, text, text_pair, max_tokens=max_tokens, decoder_text=decoder_text)
    _, layers = parts.record(loaded, e.inputs)
    return decompose(layers)


def ids_contributions(loaded, ids) -> Contributions:
    """Contributions of every layer of a causal `loaded` on token ids as they are (a generated text: no
    re-tokenisation)."""
    import torch

    parts.family_of(loaded.model)
    _, layers = parts.record(loaded, {"input_ids": torch.tensor([[int(i) for i in ids]])})
    return decompose(layers)


def lens_maps(contrib: Contributions, quantity: str) -> np.ndarray:
    """(layer, head, query, key) of `quantity` for a view: value-weighted rows as shares, or ALTI's one map per
    layer as (layer, 1, query, key)."""
    if quantity == "value-weighted":
        return rows_normalised(contrib.value_weighted)
    if quantity == "ALTI":
        return np.ascontiguousarray(contrib.alti[:, None])
    raise BadInput(f"Unknown quantity {quantity!r}; choose one of {', '.join(QUANTITIES[1:])}.")


def scratch_contributions(model, src_ids) -> Contributions:
    """Contributions of attnviz's own toy transformer on one source sequence (its encoder, or the
    whole stack of a causal toy model)."""
    import torch

    from attnviz.models.scratch import facts_for
    from attnviz.types import LoadedModel

    src = torch.as_tensor(np.asarray(src_ids), dtype=torch.long)[None]
    was_training = model.training
    model.eval()
    try:
        _, layers = parts.record(LoadedModel("scratch", model, None, facts_for(model.cfg)), (src,), part="encoder")
    finally:
        model.train(was_training)
    return decompose(layers)


def run_contributions(run, frame: int):
    """Contributions of a toy training run's probe input at `frame`, or None when that step's
    weights are not known (a run keeps only its final weights)."""
    if not run.weights or frame not in (-1, run.n_frames - 1):
        return None
    from attnviz.training.trainer import model_from_run

    vocab = list(run.meta.get("vocab", []))
    try:
        ids = [vocab.index(t) for t in run.tokens]
    except ValueError:
        return None
    return scratch_contributions(model_from_run(run), ids)


def lens(result: AttentionResult, contrib: Contributions | None, quantity: str) -> AttentionResult:
    """`result` with its (self-)attention replaced by `quantity` (QUANTITIES), so that every view
    draws it; `result.quantity` says which. Weights return the result itself."""
    if quantity not in QUANTITIES:
        raise BadInput(f"Unknown quantity {quantity!r}; choose one of {', '.join(QUANTITIES)}.")
    if quantity == "weights":
        return result
    if contrib is None:
        raise BadInput("No contributions were computed for this input.")
    if contrib.seq_len != result.seq_len or contrib.n_layers != result.n_layers:
        raise BadInput("The contributions belong to another input than the one shown.")
    maps = lens_maps(contrib, quantity)
    # a lens shows the encoder's self-attention only: the decoder stacks keep their weights
    return replace(result, attention=maps, quantity=quantity)
