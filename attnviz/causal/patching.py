"""Exact activation patching: the corrupted run with one clean activation put in, scored by the task's normalised
score (0 = corrupted, 1 = clean), for the residual stream, every head's output and every MLP."""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from attnviz.causal.tasks import Metric, Pair, score, sentence_embedding
from attnviz.errors import BadInput
from attnviz.models.adapter import run, run_from
from attnviz.types import LoadedModel

# What each cache keeps, for every block: the points patching reads from and restarts at.
CACHED = ("blocks.*.hook_resid_pre", "blocks.*.attn.hook_z", "blocks.*.hook_mlp_out")


@dataclass(frozen=True)
class Runs:
    """The clean and corrupted forwards of one pair, each run once: their activations and the metric."""

    pair: Pair
    clean: dict  # hook point name -> tensor (1, ...) of the clean run (CACHED points)
    corrupted: dict  # the same points of the corrupted run
    clean_logits: object  # (vocab,) tensor at the last position (None for a similarity pair)
    corrupted_logits: object  # (vocab,) or None
    metric: Metric  # the clean and corrupted scores
    n_layers: int
    n_heads: int


def require_causal(loaded: LoadedModel) -> None:
    """BadInput unless `loaded` predicts next tokens."""
    if loaded.facts.kind != "decoder":
        raise BadInput(f"Causal analysis compares next-token predictions, so it needs a causal language model such "
                       f"as SmolLM2; {loaded.facts.name} is not one.")


def require_task(loaded: LoadedModel, pair: Pair | None = None) -> None:
    """BadInput unless `loaded` is a causal LM (next-token tasks) or an encoder (sentence similarity), and, given a
    pair, unless the pair's score is one the model gives."""
    kind, name = loaded.facts.kind, loaded.facts.name
    if kind not in ("decoder", "encoder"):
        raise BadInput(f"Causal analysis needs a causal language model such as SmolLM2 (next-token tasks) or a "
                       f"sentence encoder such as MiniLM (sentence similarity); {name} is neither.")
    if pair is not None and pair.similarity != (kind == "encoder"):
        what = ("an encoder, so it has no next-token prediction to score" if kind == "encoder" else
                "a causal language model, so it has no sentence embedding to compare")
        raise BadInput(f"{name} is {what}: choose one of its own tasks.")


def require_head(loaded: LoadedModel, layer: int, head: int) -> None:
    """BadInput unless block `layer` of `loaded` has a head `head`."""
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise BadInput(f"Choose a layer below {n_layers} and a head below {n_heads}.")


def scored_run(loaded: LoadedModel, ids, pair: Pair, **kwargs):
    """(output, Recording, score (batch,)) of one run of the prompt `ids`, asking for the last position's logits
    only where the model takes that; kwargs go to the adapter's run (hooks, replace, grad)."""
    out, rec = run(loaded, inputs_of(ids), **last_only(loaded), **kwargs)
    return out, rec, score(out, pair)


def sentence_embedder(loaded: LoadedModel):
    """text -> an encoder's sentence embedding, the mean of its last hidden states over every token (special
    tokens included, as the Trust page's similarity target pools them), as a tuple of floats."""

    def embed(text: str) -> tuple:
        out, _ = run(loaded, inputs_of(loaded.tokenizer(text)["input_ids"]))
        return tuple(sentence_embedding(out)[0].tolist())

    return embed


def inputs_of(ids, batch: int = 1) -> dict:
    """Model inputs for token ids (n,), repeated `batch` times: input_ids and attention_mask (batch, n)."""
    import torch

    row = torch.tensor([list(ids)], dtype=torch.long)  # (1, n)
    return {"input_ids": row.expand(batch, -1), "attention_mask": torch.ones(batch, row.shape[1], dtype=torch.long)}


def last_only(loaded: LoadedModel) -> dict:
    """Keyword arguments asking the model for the last position's logits only, where it accepts them."""
    try:
        return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(loaded.model.forward).parameters else {}
    except (TypeError, ValueError):
        return {}


def last_logits(out):
    """(batch, vocab) float logits at the last position of a model output."""
    return out.logits[:, -1].float()


def cache(loaded: LoadedModel, pair: Pair) -> Runs:
    """Run the clean and the corrupted prompt once each, keeping every block's residual stream, head outputs
    and MLP outputs."""
    require_task(loaded, pair)
    kept = {}
    for which in ("clean", "corrupted"):
        out, rec, value = scored_run(loaded, getattr(pair, which), pair, hooks=CACHED)
        kept[which] = (dict(rec.acts), None if pair.similarity else last_logits(out)[0], float(value[0]))
    (clean, clean_logits, a), (corrupted, corrupted_logits, b) = kept["clean"], kept["corrupted"]
    return Runs(pair, clean, corrupted, clean_logits, corrupted_logits, Metric(a, b), loaded.facts.n_layers,
                loaded.facts.n_heads)


def _from_layer(loaded: LoadedModel, runs: Runs, layer: int, resid, replace: dict | None = None) -> np.ndarray:
    """Run from block `layer` on a batch of residual streams (batch, n, d_model), each row one patch; returns
    the normalised metric per row (batch,)."""
    out, _ = run_from(loaded, layer, resid, inputs_of(runs.pair.corrupted, resid.shape[0]), replace=replace,
                      **last_only(loaded))
    return runs.metric(score(out, runs.pair)).numpy().astype(np.float64)


def patch_residual(loaded: LoadedModel, runs: Runs, batch: int = 64) -> np.ndarray:
    """(layer, pos): the metric when the residual stream entering block `layer` at position `pos` is the clean
    one. Per layer forwards from that block whose batches hold one patched position per row (`batch` rows at
    most, which bounds the memory of long prompts). In a causal LM, positions before the first token where the
    prompts differ hold the same residual stream in both runs: they score 0 without a forward. An encoder's
    positions all see the difference after its first block, so only block 0 skips them."""
    n = runs.pair.n
    first = next((p for p in range(n) if runs.pair.clean[p] != runs.pair.corrupted[p]), n)
    causal = loaded.facts.kind == "decoder"
    out = np.zeros((runs.n_layers, n))
    for i in range(runs.n_layers):
        name = f"blocks.{i}.hook_resid_pre"
        for start in range(first if causal or i == 0 else 0, n, batch):
            rows = np.arange(start, min(n, start + batch))
            resid = runs.corrupted[name].expand(len(rows), -1, -1).clone()  # (rows, n, d): row r patched at rows[r]
            resid[np.arange(len(rows)), rows] = runs.clean[name][0, rows]
            out[i, rows] = _from_layer(loaded, runs, i, resid)
    return out


def patch_heads(loaded: LoadedModel, runs: Runs) -> np.ndarray:
    """(layer, head): the metric when one head's output (its hook_z slice, every position) is the clean one.
    Per layer one forward from that block, from the corrupted residual stream, with one head patched per row."""
    heads = runs.n_heads
    out = np.zeros((runs.n_layers, heads))
    for i in range(runs.n_layers):
        clean_z = runs.clean[f"blocks.{i}.attn.hook_z"][0]  # (n, head, d_head)

        def put(z, point, clean_z=clean_z):  # z: (head, n, head, d_head), row h patched at head h
            z = z.clone()
            rows = np.arange(heads)
            z[rows, :, rows] = clean_z.transpose(0, 1)  # (head, n, d_head)
            return z

        resid = runs.corrupted[f"blocks.{i}.hook_resid_pre"].expand(heads, -1, -1)
        out[i] = _from_layer(loaded, runs, i, resid, {f"blocks.{i}.attn.hook_z": put})
    return out


def patch_mlps(loaded: LoadedModel, runs: Runs) -> np.ndarray:
    """(layer,): the metric when block `layer`'s MLP output (every position) is the clean one."""
    out = np.zeros(runs.n_layers)
    for i in range(runs.n_layers):
        name = f"blocks.{i}.hook_mlp_out"
        out[i] = _from_layer(loaded, runs, i, runs.corrupted[f"blocks.{i}.hook_resid_pre"],
                             {name: runs.clean[name]})[0]
    return out


def patch_components(loaded: LoadedModel, runs: Runs) -> tuple[np.ndarray, np.ndarray]:
    """(heads (layer, head), mlps (layer,)): patch_heads and patch_mlps from one forward per layer, whose batch
    holds one patched head per row and the patched MLP in its last row."""
    heads = runs.n_heads
    out_heads, out_mlps = np.zeros((runs.n_layers, heads)), np.zeros(runs.n_layers)
    for i in range(runs.n_layers):
        clean_z, clean_mlp = runs.clean[f"blocks.{i}.attn.hook_z"][0], runs.clean[f"blocks.{i}.hook_mlp_out"][0]

        def put_z(z, point, clean_z=clean_z):  # z: (head + 1, n, head, d_head), row h < head patched at head h
            z = z.clone()
            rows = np.arange(heads)
            z[rows, :, rows] = clean_z.transpose(0, 1)  # (head, n, d_head)
            return z

        def put_mlp(m, point, clean_mlp=clean_mlp):  # m: (head + 1, n, d_model), the last row patched
            m = m.clone()
            m[-1] = clean_mlp
            return m

        resid = runs.corrupted[f"blocks.{i}.hook_resid_pre"].expand(heads + 1, -1, -1)
        got = _from_layer(loaded, runs, i, resid, {f"blocks.{i}.attn.hook_z": put_z,
                                                  f"blocks.{i}.hook_mlp_out": put_mlp})
        out_heads[i], out_mlps[i] = got[:heads], got[heads]
    return out_heads, out_mlps


def clean_logits(loaded: LoadedModel, pairs) -> np.ndarray:
    """(pairs, vocab): the last position's logits of each pair's clean prompt (for clean accuracy)."""
    require_causal(loaded)
    return np.stack([last_logits(scored_run(loaded, p.clean, p)[0])[0].numpy() for p in pairs])


@dataclass(frozen=True)
class HeadDetail:
    """One head patched in parts, on the normalised scale: its output at one position at a time, at every
    position, and its pattern and its values apart."""

    by_position: np.ndarray  # (pos,): the head's output taken from the clean run at that position only
    whole: float  # at every position (its cell of the layer × head map)
    pattern_only: float  # the clean run's attention pattern over the corrupted run's values
    values_only: float  # the corrupted run's pattern over the clean run's values
    metric: Metric | None = None  # the pair's clean and corrupted scores (None once pooled over pairs)


def patch_head_detail(loaded: LoadedModel, pair: Pair, layer: int, head: int) -> HeadDetail:
    """HeadDetail of head `head` of block `layer` on `pair`: one run of each prompt, then one forward from the
    block whose rows are the patches (one per position, the whole output, pattern only, values only). Under
    grouped-query attention the values are the head's shared key/value head's; values only puts the
    corrupted pattern of this head over them, so the other heads sharing them are untouched."""
    import torch

    require_task(loaded, pair)
    require_head(loaded, layer, head)
    n_heads = loaded.facts.n_heads
    at = f"blocks.{layer}.attn"
    points = [f"{at}.hook_z", f"{at}.hook_pattern", f"{at}.hook_v", f"blocks.{layer}.hook_resid_pre"]
    kept = {}
    for which in ("clean", "corrupted"):
        _, rec, value = scored_run(loaded, getattr(pair, which), pair, hooks=points, kernel="eager")
        kept[which] = (dict(rec.acts), float(value[0]))
    (clean, a), (corrupted, b) = kept["clean"], kept["corrupted"]
    metric = Metric(a, b)
    n = pair.n
    group = n_heads // clean[f"{at}.hook_v"].shape[2]  # query heads per key/value head
    values_only = corrupted[f"{at}.hook_pattern"][0, head].float() @ clean[f"{at}.hook_v"][0, :, head // group].float()
    clean_z = clean[f"{at}.hook_z"][0, :, head]  # (n, d_head)
    rows = n + 3  # n single positions, every position, pattern only, values only

    def put_z(z, point):  # (rows, n, head, d_head)
        z = z.clone()
        z[np.arange(n), np.arange(n), head] = clean_z
        z[n, :, head] = clean_z
        z[n + 2, :, head] = values_only.to(z.dtype)
        return z

    def put_pattern(p, point):  # (rows, head, n, n): row n + 1 weighs the corrupted values by the clean pattern
        p = p.clone()
        p[n + 1, head] = clean[f"{at}.hook_pattern"][0, head]
        return p

    resid = corrupted[f"blocks.{layer}.hook_resid_pre"].expand(rows, -1, -1)
    with torch.inference_mode():
        out, _ = run_from(loaded, layer, resid, inputs_of(pair.corrupted, rows), kernel="eager",
                          replace={f"{at}.hook_z": put_z, f"{at}.hook_pattern": put_pattern}, **last_only(loaded))
    got = metric(score(out, pair)).numpy().astype(np.float64)
    return HeadDetail(got[:n], float(got[n]), float(got[n + 1]), float(got[n + 2]), metric)
