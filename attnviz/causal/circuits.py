"""One head's OV and QK circuits on the vocabulary: which source tokens make it promote which output tokens, and
which query tokens it makes look at which key tokens, read from its weights on token embeddings alone."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.causal.dla import _weight_by_head
from attnviz.causal.patching import inputs_of, last_only, require_causal, require_head
from attnviz.causal.writes import frozen_norm
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from attnviz.models.families import family_of, module
from attnviz.types import LoadedModel

N_LOW = 2000  # the lowest token ids every candidate set holds besides the task's own tokens
BATCH = 256  # candidate rows per matrix product (OV: BATCH × vocab float32 at a time)
FUSED_SIDE_BY_SIDE = ("GPT-2", "Phi-3")  # families whose fused q/k/v projection stacks all q, then k, then v rows


@dataclass(frozen=True)
class Circuit:
    """The `k` largest entries of one head's circuit over a candidate set of tokens, largest first."""

    pairs: tuple  # ((left token id, right token id), ...): OV (source, promoted output), QK (query, key)
    values: np.ndarray  # (k,) OV: the direct logit change; QK: the pre-softmax score q · k × scaling
    n_candidates: int  # how many tokens the left side (and QK's right side) ranged over


def candidate_ids(pairs, vocab: int, n_low: int = N_LOW) -> np.ndarray:
    """(n,) sorted distinct token ids: every clean and corrupted prompt token, answer and wrong answer of `pairs`,
    and the `n_low` lowest ids of a `vocab`-token vocabulary."""
    task = [t for p in pairs for t in (*p.clean, *p.corrupted, p.answer, p.wrong)]
    ids = np.unique(np.concatenate([np.arange(min(n_low, vocab)), np.asarray(task, dtype=np.int64)]))
    return ids[(ids >= 0) & (ids < vocab)]


def _check(loaded: LoadedModel, layer: int, head: int):
    """The family row of `loaded`, or BadInput for a head it does not have or a layout without token circuits."""
    require_causal(loaded)
    require_head(loaded, layer, head)
    fam = family_of(loaded.model)
    if fam.post_norm or not fam.plain_scores:
        raise BadInput(f"Token circuits need a norm before each block and plain q·k scores, which a {fam.name} "
                       "model does not have.")
    return fam


def head_projection(loaded: LoadedModel, layer: int, which: str, fam=None):
    """The query ("q"), key ("k") or value ("v") projection's weight of block `layer` as (heads of that kind,
    d_head, d_model), biases left out; key and value heads are the model's key/value heads (fewer under GQA)."""
    fam = fam or family_of(loaded.model)
    facts = loaded.facts
    if getattr(fam.stack, which) is not None:
        weight = _out_by_in(module(loaded.model, which, layer, fam=fam))
    elif fam.name in FUSED_SIDE_BY_SIDE:
        fused = _out_by_in(module(loaded.model, "qkv", layer, fam=fam))  # (q rows, k rows, v rows) stacked
        d_head = fused.shape[0] // (facts.n_heads + 2 * facts.n_kv_heads)
        sizes = [facts.n_heads * d_head, facts.n_kv_heads * d_head, facts.n_kv_heads * d_head]
        weight = dict(zip("qkv", fused.split(sizes, 0)))[which]
    else:
        raise BadInput(f"A {fam.name} block fuses its query, key and value projections in a layout attnviz does not "
                       "split, so its token circuits cannot be read.")
    n = facts.n_heads if which == "q" else facts.n_kv_heads
    return weight.detach().float().reshape(n, -1, weight.shape[-1])  # (n, d_head, d_model)


def _out_by_in(proj):
    """A projection's weight as (out, in); GPT-2's Conv1D stores it as (in, out)."""
    return proj.weight if hasattr(proj, "in_features") else proj.weight.T


def kv_head(loaded: LoadedModel, head: int) -> int:
    """The key/value head query head `head` reads (grouped-query attention shares one among a group)."""
    facts = loaded.facts
    return head // (facts.n_heads // max(1, facts.n_kv_heads))


def _normed_embeddings(loaded: LoadedModel, layer: int, ids, fam):
    """(n, d_model) float32: the token embeddings of `ids` (no positions) through block `layer`'s attention norm."""
    import torch

    embed = module(loaded.model, "embed", fam=fam)
    norm = module(loaded.model, "norm_attn", layer, fam=fam)
    with torch.inference_mode():
        return norm(embed(torch.as_tensor(np.asarray(ids), dtype=torch.long))).float()


def _top(blocks, k: int, n_candidates: int) -> Circuit:
    """The k largest entries of a matrix given as row blocks (first row, (rows, columns) values), largest first,
    as a Circuit whose pairs are (row, column) indices."""
    import torch

    best_v, best_i, best_j = torch.empty(0), torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    for start, values in blocks:
        row_v, row_j = values.topk(min(k, values.shape[1]), dim=1)  # (rows, k): a row's top k hold its part of all
        v, flat = row_v.reshape(-1).topk(min(k, row_v.numel()))
        best_v = torch.cat([best_v, v])
        best_i = torch.cat([best_i, start + flat // row_v.shape[1]])
        best_j = torch.cat([best_j, row_j.reshape(-1)[flat]])
        keep = best_v.argsort(descending=True, stable=True)[:k]
        best_v, best_i, best_j = best_v[keep], best_i[keep], best_j[keep]
    return Circuit(tuple(zip(best_i.tolist(), best_j.tolist())), best_v.double().numpy(), n_candidates)


def final_state(loaded: LoadedModel, prompt):
    """(d_model,) the residual stream entering the final norm at the last position of the token ids `prompt`: the
    point whose norm scale the OV circuit freezes."""
    last = f"blocks.{loaded.facts.n_layers - 1}.hook_resid_post"
    _, rec = run(loaded, inputs_of(prompt), hooks=[last], **last_only(loaded))
    return rec[last][0, -1]


def _scaling(loaded: LoadedModel, layer: int, prompt, fam) -> float:
    """The factor block `layer`'s attention multiplies q · k by: the attention module's own, else the one it passes
    when it reads `prompt`."""
    try:
        found = getattr(module(loaded.model, "attention", layer, fam=fam), "scaling", None)
    except BadInput:  # the family attends in its own code
        found = None
    if isinstance(found, (int, float)):
        return float(found)
    _, rec = run(loaded, inputs_of(prompt), hooks=[f"blocks.{layer}.attn.hook_q"], **last_only(loaded))
    return rec.calls[f"blocks.{layer}.attn"].scaling


def ov_circuit(loaded: LoadedModel, layer: int, head: int, candidates, k: int = 12, prompt=None,
               final=None) -> Circuit:
    """The k largest (source, output) entries of head (layer, head)'s OV circuit: for each candidate source token
    s (ids, (n,)), norm_in(E[s]) · W_V · W_O of the head, read through the final norm with its scale frozen at the
    last position of `prompt` (default: the first 16 candidates; `final`, its final_state, spares the forward)
    and the unembedding, over the whole vocabulary. The logits the head would write attending only to s; biases
    left out. Pairs hold token ids."""
    import torch

    fam = _check(loaded, layer, head)
    ids = np.asarray(candidates, dtype=np.int64)
    if final is None:
        final = final_state(loaded, ids[:16] if prompt is None else prompt)
    with torch.inference_mode():
        w_v = head_projection(loaded, layer, "v", fam)[kv_head(loaded, head)]  # (d_head, d_model)
        w_o = _weight_by_head(module(loaded.model, "out", layer, fam=fam), loaded.facts.n_heads)[head]
        read = frozen_norm(loaded, final)(w_o.double()).float()  # (d_head, d_model): W_O then the frozen final norm
        unembed = loaded.model.get_output_embeddings().weight.float()  # (vocab, d_model)
        to_logits = read @ unembed.T  # (d_head, vocab)
        z = _normed_embeddings(loaded, layer, ids, fam) @ w_v.T  # (n, d_head): the value each source gives
        circuit = _top(((s, z[s:s + BATCH] @ to_logits) for s in range(0, len(ids), BATCH)), k, len(ids))
    return Circuit(tuple((int(ids[i]), j) for i, j in circuit.pairs), circuit.values, len(ids))


def qk_circuit(loaded: LoadedModel, layer: int, head: int, candidates, k: int = 12, prompt=None) -> Circuit:
    """The k largest (query, key) entries of head (layer, head)'s QK circuit over the candidate tokens (ids, (n,)):
    norm_in(E[q]) W_Q · (norm_in(E[k]) W_K)ᵀ × scaling, token embeddings without positions (with rotary positions:
    query and key at the same position, where the rotation cancels); biases left out. `prompt` (default: the first
    16 candidates) is run for the head's scaling when its attention module does not keep one. Pairs hold token
    ids."""
    import torch

    fam = _check(loaded, layer, head)
    ids = np.asarray(candidates, dtype=np.int64)
    scaling = _scaling(loaded, layer, ids[:16] if prompt is None else prompt, fam)
    with torch.inference_mode():
        x = _normed_embeddings(loaded, layer, ids, fam)  # (n, d_model)
        q = x @ head_projection(loaded, layer, "q", fam)[head].T  # (n, d_head)
        keys = (x @ head_projection(loaded, layer, "k", fam)[kv_head(loaded, head)].T).T * scaling  # (d_head, n)
        circuit = _top(((s, q[s:s + BATCH] @ keys) for s in range(0, len(ids), BATCH)), k, len(ids))
    return Circuit(tuple((int(ids[i]), int(ids[j])) for i, j in circuit.pairs), circuit.values, len(ids))
