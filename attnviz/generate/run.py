"""Generation one token at a time over the model's own KV cache, recording what each new token's query
attended to, through the model adapter.

Step s writes new token s: its query is the token at position q = prompt + s - 1, and its attention row
covers positions 0..q. Two ways to keep the rows:
- "recompute" (models whose attention is the plain softmax of q·k, e.g. Llama/SmolLM2, GPT-2): each step
  keeps its query vector after RoPE, one per layer and head, and the keys are the KV cache's own at the end;
  a row is softmax(q·k × scaling) over positions 0..q, recomputed when asked for. Memory grows with the
  keys only (what the model caches), never with steps x positions; sink mass and distance per step are
  summarised while generating.
- "stored" (any other causal model, and encoder-decoders): the eager attention's last row of every layer and
  head is copied each step, after a memory check.

An encoder-decoder (T5, BART) reads the prompt with its encoder once; its decoder starts from its start token
and writes after it. A step then also keeps its cross-attention row over the prompt, every decoder layer and
head. Positions, steps and rows are the decoder's: its "prompt" is the start token.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from attnviz.errors import BadInput
from attnviz.generate.sampling import Sampling, draw, warp
from attnviz.models.adapter import can_write_pattern_in_place, record, repeat_kv
from attnviz.progress import is_cancelled, report
from attnviz.types import LoadedModel, ModelFacts
from attnviz.units import count_text, human_bytes

TOP = 20  # next-token candidates kept per step
# Rows kept in "stored" mode, at most (bytes): above it the page says so before anything runs.
STORED_BUDGET = 2 * 1024 ** 3


@dataclass
class Step:
    """One generated token and what was computed to write it."""

    index: int  # 0 for the first new token
    query: int  # position of the token whose query produced it (prompt + index - 1)
    token_id: int  # the token written
    top_ids: np.ndarray  # (TOP,) the most likely next tokens before sampling's changes, most likely first
    p_before: np.ndarray  # (TOP,) their probabilities from the model (softmax of its logits)
    p_after: np.ndarray  # (TOP,) their probabilities after temperature, top-k and top-p
    chosen_before: float  # the written token's probability from the model
    chosen_after: float  # ... and after sampling's changes
    sink: np.ndarray  # (layer, head) attention weight on position 0
    distance: np.ndarray  # (layer, head) mean distance back, sum_j w_j (query - j), in tokens
    resid: np.ndarray  # (layer + 1, d_model) the query position's residual stream: embeddings, after each block
    q: np.ndarray | None = None  # (layer, head, d_head) the query after RoPE ("recompute")
    rows: np.ndarray | None = None  # (layer, head, query + 1) the attention row ("stored")
    cross: np.ndarray | None = None  # (layer, head, source) encoder-decoders: the cross-attention row over the prompt


@dataclass
class Generation:
    """A prompt and the tokens written after it, step by step."""

    model: str  # the model's name
    facts: ModelFacts  # the model's shape (layers, heads, key/value heads, d_head)
    prompt_ids: list[int]
    steps: list[Step]
    sampling: Sampling
    mode: str  # "recompute" or "stored"
    stopped: str = "length"  # "length", "eos" (the model ended), "cancelled" (the tokens so far are kept)
    seconds: float = 0.0  # generation time
    scaling: np.ndarray | None = None  # (layer,) q·k scaling of each layer ("recompute")
    keys: list = field(default_factory=list)  # per layer (kv_head, position, d_head) float32 ("recompute")
    cache_bytes: int = 0  # bytes of the KV cache the model used at the end, as measured
    eos_id: int | None = None
    source_ids: list[int] | None = None  # encoder-decoders: the prompt, read by the encoder (prompt_ids: the start token)
    kv_shape: tuple[int, int, int] | None = None  # (layers, key/value heads, d_head) of the KV cache, as measured

    @property
    def encoder_decoder(self) -> bool:
        return self.source_ids is not None

    @property
    def shape(self) -> tuple[int, int]:
        """(layers, heads) of the attention recorded: the decoder's in an encoder-decoder."""
        return tuple(self.steps[0].sink.shape) if self.steps else (self.facts.n_layers, self.facts.n_heads)

    @property
    def ids(self) -> list[int]:
        return list(self.prompt_ids) + [s.token_id for s in self.steps]

    @property
    def n_prompt(self) -> int:
        return len(self.prompt_ids)

    def row(self, step: int) -> np.ndarray:
        """(layer, head, query + 1): step `step`'s attention over positions 0..query, every layer and head."""
        s = self.steps[step]
        if s.rows is not None:
            return s.rows
        out = []
        for layer, k in enumerate(self.keys):
            kk = _repeat(k[:, : s.query + 1], s.q.shape[1])  # (head, key, d)
            scores = np.einsum("hd,hkd->hk", s.q[layer].astype(np.float64), kk.astype(np.float64)) * self.scaling[layer]
            out.append(_softmax(scores))
        return np.stack(out).astype(np.float32)

    def head_map(self, layer: int, head: int) -> np.ndarray:
        """(steps, positions) one head's rows, step by step (NaN right of each step's query): the causal map
        as it was written."""
        n = len(self.steps)
        width = self.n_prompt + n - 1
        out = np.full((n, max(width, 1)), np.nan, dtype=np.float32)
        for i in range(n):
            r = self.row(i)[layer, head]
            out[i, : len(r)] = r
        return out

    def sink_mass(self) -> np.ndarray:
        """(steps, layer, head) weight on the first position."""
        return np.stack([s.sink for s in self.steps]) if self.steps else np.zeros((0, 0, 0))

    def mean_distance(self) -> np.ndarray:
        """(steps, layer, head) mean distance back from each step's query, in tokens."""
        return np.stack([s.distance for s in self.steps]) if self.steps else np.zeros((0, 0, 0))

    def copying_scores(self) -> tuple[np.ndarray, int]:
        """(layer, head) mean weight on the token after an earlier copy of the current token (the induction
        pattern: ... A B ... A -> attend to B), over the steps whose query token occurred before; and the
        number of such steps (0: the text does not repeat, the scores are 0)."""
        ids = self.ids
        total, used = None, 0
        for i, s in enumerate(self.steps):
            q = s.query
            targets = [j + 1 for j in range(q) if ids[j] == ids[q] and j + 1 < q]
            if not targets:
                continue
            r = self.row(i)[:, :, targets].sum(-1)  # (layer, head)
            total = r if total is None else total + r
            used += 1
        if total is None:
            return np.zeros_like(self.steps[0].sink) if self.steps else np.zeros((0, 0)), 0
        return total / used, used


def _repeat(k: np.ndarray, n_heads: int) -> np.ndarray:
    """(kv_head, key, d) -> (head, key, d): grouped-query heads share their group's keys."""
    return k if k.shape[0] == n_heads else np.repeat(k, n_heads // k.shape[0], axis=0)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def check_model(loaded: LoadedModel) -> None:
    """BadInput unless `loaded` is a causal language model with its head."""
    facts = loaded.facts
    if facts.kind not in ("decoder", "encoder-decoder"):
        kind = {"encoder": "an encoder"}.get(facts.kind, facts.kind)
        raise BadInput(f"Generation writes text one token at a time, which needs a causal language model such "
                       f"as SmolLM2 (or an encoder-decoder such as T5 or BART); {facts.name} is {kind}. Switch to "
                       "SmolLM2 to generate.")
    if getattr(loaded.model, "get_output_embeddings", lambda: None)() is None:
        raise BadInput(f"{facts.name} was loaded without its language-model head, so it cannot score next tokens.")


def recomputable(loaded: LoadedModel) -> bool:
    """Whether a row is exactly softmax(q·k × scaling) over every earlier position: the plain-softmax
    families without a sliding window."""
    if loaded.facts.kind == "encoder-decoder":
        return False
    config = getattr(loaded.model, "config", None)
    sliding = getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True)
    return can_write_pattern_in_place(loaded) and not sliding


def decoder_shape(loaded: LoadedModel) -> tuple[int, int]:
    """(layers, heads) of the attention a generation step records: the decoder's in an encoder-decoder."""
    f = loaded.facts
    if f.kind != "encoder-decoder":
        return f.n_layers, f.n_heads
    c = loaded.model.config
    layers = next((getattr(c, a) for a in ("decoder_layers", "num_decoder_layers") if getattr(c, a, None)), f.n_layers)
    heads = next((getattr(c, a) for a in ("decoder_attention_heads", "num_heads") if getattr(c, a, None)), f.n_heads)
    return int(layers), int(heads)


def stored_bytes(loaded: LoadedModel, n_prompt: int, max_new: int) -> int:
    """Bytes of the rows kept in "stored" mode for a prompt of n_prompt tokens and max_new new ones (an
    encoder-decoder: the decoder's rows from its start token, and a cross-attention row over the prompt)."""
    layers, heads = decoder_shape(loaded)
    if loaded.facts.kind == "encoder-decoder":
        positions = max_new * (max_new + 1) // 2 + max_new * n_prompt
    else:
        positions = max_new * n_prompt + max_new * (max_new - 1) // 2  # sum over steps of query + 1
    return 4 * layers * heads * positions


def plan(loaded: LoadedModel, prompt_ids: list[int], s: Sampling) -> str:
    """The recording mode for this run, or BadInput when the prompt and the new tokens cannot fit."""
    check_model(loaded)
    s.checked()
    n, limit = len(prompt_ids), loaded.facts.max_positions
    if n == 0:
        raise BadInput("The prompt is empty. Type a few words in the sidebar for the model to continue.")
    if limit and n >= limit:
        raise BadInput(f"The prompt has {count_text(n)} tokens, which fills {loaded.facts.name}'s context of "
                       f"{count_text(limit)}: shorten it to leave room for new tokens.")
    if loaded.facts.kind == "encoder-decoder":  # the decoder writes from its start token, in positions of its own
        if limit and s.max_new_tokens + 1 > limit:
            raise BadInput(f"{loaded.facts.name}'s decoder has {count_text(limit)} positions, its start token "
                           f"included: ask for at most {count_text(limit - 1)} new tokens.")
    elif limit and n + s.max_new_tokens > limit:
        raise BadInput(f"{count_text(n)} prompt tokens and {count_text(s.max_new_tokens)} new ones exceed "
                       f"{loaded.facts.name}'s context of {count_text(limit)}: ask for at most "
                       f"{count_text(limit - n)} new tokens.")
    if recomputable(loaded):
        return "recompute"
    need = stored_bytes(loaded, n, s.max_new_tokens)
    if need > STORED_BUDGET:
        raise BadInput(f"Keeping every step's attention of {loaded.facts.name} for {count_text(s.max_new_tokens)} "
                       f"new tokens needs {human_bytes(need)}, more than the {human_bytes(STORED_BUDGET)} allowed: "
                       "ask for fewer new tokens or a shorter prompt.")
    return "stored"


def memory_estimate(loaded: LoadedModel, n_prompt: int, max_new: int) -> int:
    """Bytes the recording adds above the loaded model: keys, queries and summaries ("recompute") or the
    rows ("stored"), plus the KV cache and the residual streams kept for the logit lens."""
    f = loaded.facts
    n = n_prompt + max_new
    layers, heads = decoder_shape(loaded)
    cache = 2 * layers * f.n_kv_heads * f.d_head * n * 4
    resid = max_new * (layers + 1) * f.d_model * 4
    summaries = max_new * 2 * layers * heads * 8
    if recomputable(loaded):
        kept = cache // 2 + max_new * f.n_layers * f.n_heads * f.d_head * 4
    else:
        kept = stored_bytes(loaded, n_prompt, max_new)
    return cache + resid + summaries + kept


def _cache_bytes(cache) -> int:
    total = 0
    for layer in getattr(cache, "layers", []):
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if t is not None and hasattr(t, "numel"):
                total += t.numel() * t.element_size()
    return total


class StepHooks:
    """What one forward of a generation step records, through the adapter's recording context: `kernel` (the
    attention of "recompute" mode: the last query row computed from q and the cached keys, the prompt's output
    left to SDPA) and `replace` (read-only hooks: the query position's residual stream, and in "stored" mode the
    eager pattern's last row; in an encoder-decoder the decoder's, and its cross-attention's last row).
    take() returns the step's record and keeps the buffers for the next step."""

    def __init__(self, loaded: LoadedModel, mode: str):
        f = loaded.facts
        layers, heads = decoder_shape(loaded)
        self.mode = mode
        self.cross_too = f.kind == "encoder-decoder"
        stem = "decoder.blocks" if self.cross_too else "blocks"
        self.query = np.zeros((layers, heads, f.d_head), np.float32)
        self.sink = np.zeros((layers, heads), np.float64)
        self.dist = np.zeros((layers, heads), np.float64)
        self.rows: list = [None] * layers
        self.cross: list = [None] * layers
        self.resid = np.zeros((layers + 1, f.d_model), np.float32)
        self.scaling = np.zeros(layers, np.float64)
        self.replace = {f"{stem}.0.hook_resid_pre": self._keep_resid, f"{stem}.*.hook_resid_post": self._keep_resid}
        if mode == "stored":
            self.replace[f"{stem}.*.attn.hook_pattern"] = self._keep_row
            if self.cross_too:
                self.replace[f"{stem}.*.cross_attn.hook_pattern"] = self._keep_cross
            self.kernel = None
        else:
            self.kernel = self._kernel

    def _summarise(self, layer: int, w) -> None:  # w: (head, key) float64 of the last query
        n = w.shape[-1]
        self.sink[layer] = w[:, 0]
        self.dist[layer] = w @ (n - 1 - np.arange(n))

    def _kernel(self, call, q, k, v):  # transformers' (batch, head, pos, d_head); keys include this step's
        import torch

        kk, vv = repeat_kv(k, q.shape[1]), repeat_kv(v, q.shape[1])
        scores = torch.matmul(q[:, :, -1:], kk.transpose(2, 3)) * call.scaling  # (1, H, 1, T_k)
        mask = call.mask
        if mask is not None:
            last = mask[..., -1:, :]
            scores = scores.masked_fill(~last, float("-inf")) if last.dtype == torch.bool else scores + last
        w = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        self.query[call.layer] = q[0, :, -1].float().numpy()
        self.scaling[call.layer] = call.scaling
        self._summarise(call.layer, w[0, :, 0].double().numpy())
        if q.shape[2] > 1:
            return None  # the prompt: SDPA computes its output, the last row was taken above
        return torch.matmul(w, vv).transpose(1, 2).contiguous(), w

    def _keep_row(self, x, point):  # hook_pattern (1, head, query, key): the last query's row
        w = x[0, :, -1].double().numpy()
        self.rows[point.layer] = w.astype(np.float32)
        self._summarise(point.layer, w)

    def _keep_cross(self, x, point):  # cross_attn.hook_pattern (1, head, query, source)
        self.cross[point.layer] = x[0, :, -1].float().numpy().copy()

    def _keep_resid(self, x, point):  # (1, pos, d_model)
        at = 0 if point.name.endswith("hook_resid_pre") else point.layer + 1
        self.resid[at] = x[0, -1].float().numpy()

    def take(self) -> dict:
        return dict(sink=self.sink.astype(np.float32), distance=self.dist.astype(np.float32), resid=self.resid.copy(),
                    q=self.query.copy() if self.mode == "recompute" else None,
                    rows=np.stack(self.rows) if self.mode == "stored" else None,
                    cross=np.stack(self.cross) if self.cross_too else None)


def step_hooks(loaded: LoadedModel):
    """(kernel, replace) of one generation step's recording on `loaded` (the bench times a step with them)."""
    hooks = StepHooks(loaded, "recompute" if recomputable(loaded) else "stored")
    return hooks.kernel, hooks.replace


def generate(loaded: LoadedModel, prompt_ids: list[int], s: Sampling, *, progress=None, cancel=None,
             on_step=None) -> Generation:
    """Write up to s.max_new_tokens tokens after `prompt_ids`, one forward per token over the KV cache, and
    record each step (see the module docstring). progress.report(done, total, label) after each token;
    `cancel` (a threading.Event) stops after the current token, keeping what was written; on_step(step)
    is called with each Step as it is written.
    Raises BadInput for a model that cannot generate, or a prompt and length that do not fit."""
    import torch
    from transformers import DynamicCache

    mode = plan(loaded, prompt_ids, s)
    f = loaded.facts
    model = loaded.model
    eos = getattr(loaded.tokenizer, "eos_token_id", None)
    gen = Generation(f.name, f, list(prompt_ids), [], s, mode, eos_id=eos)
    generator = torch.Generator().manual_seed(int(s.seed))
    hooks = StepHooks(loaded, mode)
    kwargs = {}
    try:
        import inspect

        if "logits_to_keep" in inspect.signature(model.forward).parameters:
            kwargs["logits_to_keep"] = 1
    except (TypeError, ValueError):
        pass
    t0 = time.perf_counter()
    ids = torch.tensor([list(prompt_ids)])
    source = None
    if f.kind == "encoder-decoder":  # the encoder reads the prompt; the decoder writes from its start token
        source = ids
        gen.source_ids, gen.prompt_ids = list(prompt_ids), [decoder_start(loaded)]
        ids = torch.tensor([gen.prompt_ids])
    with record(loaded, replace=hooks.replace, kernel=hooks.kernel) as rec:
        cache = None if source is not None else DynamicCache(config=model.config)
        encoded = None
        for i in range(s.max_new_tokens):
            if source is None:
                out = rec.forward(input_ids=ids, past_key_values=cache, use_cache=True, **kwargs)
            elif encoded is None:  # first step: the encoder runs once
                out = rec.forward(input_ids=source, attention_mask=torch.ones_like(source), decoder_input_ids=ids,
                                  use_cache=True)
                encoded = (out.encoder_last_hidden_state,)
            else:
                out = rec.forward(encoder_outputs=encoded, attention_mask=torch.ones_like(source),
                                  decoder_input_ids=ids, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            logits = out.logits[0, -1].float()
            before = torch.softmax(logits, dim=-1)
            after = warp(logits, s)
            token = int(torch.argmax(logits)) if s.is_greedy else draw(after, generator)
            top = torch.topk(before, min(TOP, before.numel()))
            step = Step(i, gen.n_prompt + i - 1, token, top.indices.numpy().copy(), top.values.numpy().copy(),
                        after[top.indices].numpy().copy(), float(before[token]), float(after[token]), **hooks.take())
            gen.steps.append(step)
            if on_step is not None:
                on_step(step)
            report(progress, i + 1, s.max_new_tokens, f"token {i + 1:,} of {s.max_new_tokens:,}")
            if s.stop_at_eos and eos is not None and token == eos:
                gen.stopped = "eos"
                break
            if is_cancelled(cancel):
                gen.stopped = "cancelled"
                break
            ids = torch.tensor([[token]])
    gen.seconds = time.perf_counter() - t0
    own = getattr(cache, "self_attention_cache", cache)  # a decoder's own keys and values
    gen.cache_bytes = _cache_bytes(own)
    layers = [layer for layer in getattr(own, "layers", []) if getattr(layer, "keys", None) is not None]
    if layers:
        gen.kv_shape = (len(layers), int(layers[0].keys.shape[1]), int(layers[0].keys.shape[-1]))
    if mode == "recompute":
        gen.scaling = hooks.scaling.copy()
        gen.keys = [layer.keys[0].float().numpy().copy() for layer in cache.layers]
    return gen


LENS_LIMIT = 512  # tokens at most for the sidebar's lens over a generation: (layer, head, n, n) float32 maps


def lens_rows(loaded: LoadedModel, g: Generation, quantity: str) -> np.ndarray:
    """(layer, head or 1, query, key) the sidebar's lens ("value-weighted" or "ALTI") over the generated text:
    one forward over the positions the steps read, whose rows at a step's query are what that step computed
    (a causal model's row depends on the earlier positions only). BadInput for an encoder-decoder or a text
    longer than LENS_LIMIT."""
    from attnviz.contrib.compute import ids_contributions, lens_maps

    if g.encoder_decoder:
        raise BadInput("The lens is worked out for the self-attention of causal models and encoders, not for an "
                       "encoder-decoder's decoder.")
    fed = g.ids[:-1]  # the last token written is never read
    if len(fed) > LENS_LIMIT:
        raise BadInput(f"The lens keeps every layer and head's map, so it is shown for generations of up to "
                       f"{LENS_LIMIT:,} tokens; this one has {len(fed):,}.")
    return lens_maps(ids_contributions(loaded, fed), quantity)


def decoder_start(loaded: LoadedModel) -> int:
    """The token an encoder-decoder's decoder starts from."""
    c = loaded.model.config
    start = getattr(c, "decoder_start_token_id", None)
    if start is None:
        start = getattr(loaded.tokenizer, "pad_token_id", None) or 0
    return int(start)


def token_labels(loaded: LoadedModel, ids) -> list[str]:
    """Display labels of token ids (special tokens as the tokenizer names them)."""
    from attnviz.extract import display_tokens

    ids = [int(i) for i in ids]
    special = np.isin(ids, list(getattr(loaded.tokenizer, "all_special_ids", []) or []))
    labels, _ = display_tokens(loaded.tokenizer, ids, [None] * len(ids), special)
    return list(labels)


def step_lens(loaded: LoadedModel, step: Step, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The logit lens of one step: each residual-stream state of its query (embeddings, after each block)
    through the final norm and the unembedding. Returns (labels (state, k), probabilities (state, k)), the
    last state being the model's own output."""
    import torch

    from attnviz.logit_lens.lens import reader

    read = reader(loaded)
    with torch.inference_mode():
        logits = read(torch.from_numpy(step.resid)).float()  # (state, vocab): every state through the final norm
        top = torch.topk(logits, k, dim=-1)  # the most likely tokens: softmax keeps the order
        p = torch.exp(top.values.double() - torch.logsumexp(logits, dim=-1, keepdim=True).double())
    labels = np.asarray(token_labels(loaded, top.indices.reshape(-1).tolist()), dtype=object).reshape(top.indices.shape)
    return labels, p.numpy()


def generation_csv(g: Generation, labels, layer: int, head: int) -> str:
    """CSV of a generation: one line per step (the token written, its probabilities, the query) with the
    shown head's weights over every position (empty after the step's query), at full precision."""
    import csv
    import io

    from attnviz.plotting import csv_number

    out = io.StringIO()
    w = csv.writer(out)
    width = len(g.ids) - 1
    w.writerow([f"# {g.model}: generation, layer {layer} head {head} weights (rows: step, columns: key position)",
                "position_written", "token_written", "token_id", "probability_model", "probability_after_sampling",
                "query_position"] + [f"{i}:{labels[i]}" for i in range(width)])
    for i, s in enumerate(g.steps):
        row = g.row(i)[layer, head]
        w.writerow([i, g.n_prompt + i, labels[g.n_prompt + i], s.token_id, csv_number(s.chosen_before),
                    csv_number(s.chosen_after), s.query] + [csv_number(v) for v in row] + [""] * (width - len(row)))
    return out.getvalue()


def generation_npz(g: Generation, labels, layer: int, head: int) -> bytes:
    """.npz of a generation: token ids and labels (plain arrays), each step's probabilities, sink mass and
    distance per head, and the shown head's steps x positions map (NaN after each step's query)."""
    import io

    buf = io.BytesIO()
    np.savez_compressed(
        buf, token_ids=np.asarray(g.ids, dtype=np.int64), tokens=np.asarray(labels, dtype=str),
        n_prompt=np.int64(g.n_prompt), probability_model=np.asarray([s.chosen_before for s in g.steps], np.float32),
        probability_after_sampling=np.asarray([s.chosen_after for s in g.steps], np.float32),
        sink_mass=g.sink_mass().astype(np.float32), mean_distance=g.mean_distance().astype(np.float32),
        head_map=g.head_map(layer, head), head=np.asarray([layer, head], dtype=np.int64),
        settings=np.asarray(repr(g.sampling)))
    return buf.getvalue()
