"""The one output an attribution explains: next-token logit, masked-token logit or sentence similarity,
as a score function of the input embeddings that gradients and perturbations share."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from attnviz.errors import BadInput
from attnviz.extract import Encoded, encode
from attnviz.models import adapter
from attnviz.types import LoadedModel
from attnviz.units import count_text

# Target kinds: key -> (label for the picker, which model kinds have it).
NEXT_TOKEN = "next-token"
MASKED_TOKEN = "masked-token"
SIMILARITY_PAIR = "similarity-pair"
SIMILARITY_MASKED = "similarity-masked"
KIND_LABELS = {
    NEXT_TOKEN: "Next-token logit (causal LM)",
    MASKED_TOKEN: "Masked-token logit (masked-LM head)",
    SIMILARITY_PAIR: "Similarity to a second sentence (sentence embedding)",
    SIMILARITY_MASKED: "Similarity to this sentence with one token masked",
}
# kinds that read one chosen position
POSITIONAL = frozenset({NEXT_TOKEN, MASKED_TOKEN, SIMILARITY_MASKED})
ZERO_BASELINE = "all-zero word embeddings"
# Tokenizer roles tried, in order, for a causal model's neutral baseline token (Captum's BERT tutorial builds
# its reference input from the padding token); the first one the tokenizer has is used.
NEUTRAL_ROLES = (("pad_token_id", "padding token"), ("eos_token_id", "end-of-text token"),
                 ("unk_token_id", "unknown-word token"))
NO_MLM_HEAD = ("This model has no masked-LM head (its config names no ...ForMaskedLM architecture: the packaged "
               "MiniLM is a sentence encoder without one), so the masked-token target is not available. "
               "Use a similarity target, or a model such as bert-base-uncased.")


@dataclass(frozen=True)
class Target:
    """One chosen output of the model for one input."""

    kind: str  # one of KIND_LABELS
    position: int | None  # next-token: the position whose next token is predicted; masked: the [MASK]
    # position; similarity-masked: the position masked in the reference; similarity-pair: None
    token_id: int | None  # the token whose logit is explained (logit targets), else None
    label: str  # human wording: "next-token logit of ' cat' after position 5 ('the')"
    second: str | None = None  # similarity-pair: the second sentence

    @property
    def causal(self) -> bool:
        return self.kind == NEXT_TOKEN

    @property
    def pooled(self) -> bool:
        """True when the output reads every position (a mean-pooled sentence embedding)."""
        return self.kind in (SIMILARITY_PAIR, SIMILARITY_MASKED)


@dataclass
class Scorer:
    """f: inputs_embeds (batch, n, d) -> (batch,) for one target, and the input it was built for.

    Gradients and perturbations both call it; it never changes the model."""

    target: Target
    model: Any  # the torch module run (encoder, causal LM or masked LM)
    embeds: Any  # torch float32 (1, n, d): the word embeddings of the input (no grad)
    extra: dict  # keyword tensors (1, n) besides inputs_embeds: attention_mask, token_type_ids
    candidates: np.ndarray  # bool (n,): positions that faithfulness tests may remove
    fn: Callable  # (inputs_embeds (batch, n, d), extra expanded to batch) -> (batch,)
    ids: tuple = ()  # the token ids scored (the [MASK] in place for the masked-token target)
    lock: Any = field(default_factory=threading.RLock, repr=False)
    # the LoadedModel the model adapter runs (its model holds `model`; its lock is `lock`) and which part of it
    # ("model", or "base" for the encoder under a task head)
    runner: Any = None
    part: str = "model"
    # torch float32 (1, n, d): what a removed token becomes and where integrated gradients start;
    # None = zero embeddings (see neutral_baseline)
    baseline: Any = None
    baseline_label: str = ZERO_BASELINE  # the baseline in words, for the page

    def kwargs(self, batch: int) -> dict:
        return {k: v.expand(batch, -1) for k, v in self.extra.items()}

    def __call__(self, inputs_embeds):
        return self.fn(inputs_embeds, self.kwargs(inputs_embeds.shape[0]))

    @property
    def n(self) -> int:
        return int(self.embeds.shape[1])

    @property
    def baseline_embeds(self):
        """torch float32 (1, n, d): the baseline (zeros when none was set)."""
        import torch

        return torch.zeros_like(self.embeds) if self.baseline is None else self.baseline

    def value(self, inputs_embeds=None) -> float:
        """f at the input (or at the given (1, n, d) embeddings), without gradients."""
        import torch

        with self.lock, torch.no_grad():
            return float(self(self.embeds if inputs_embeds is None else inputs_embeds)[0])


# ------------------------------------------------------------------ which targets a model has

def mlm_architecture(config) -> str | None:
    """The ...ForMaskedLM architecture named in a config, or None."""
    return next((a for a in (getattr(config, "architectures", None) or []) if a.endswith("ForMaskedLM")), None)


def supported_kinds(loaded) -> list[str]:
    """Target kinds this model offers: causal decoders the next token; encoders the two similarity
    targets and, when their config names a masked-LM head, the masked token."""
    kind = loaded.facts.kind
    if kind == "decoder":
        return [NEXT_TOKEN]
    if kind == "encoder":
        out = [SIMILARITY_PAIR, SIMILARITY_MASKED]
        if mlm_architecture(loaded.model.config):
            out.insert(0, MASKED_TOKEN)
        return out
    return []


def check_kind(loaded, kind: str) -> None:
    if kind not in KIND_LABELS:
        raise BadInput(f"Unknown target {kind!r}; choose one of {', '.join(KIND_LABELS)}.")
    if kind == MASKED_TOKEN and loaded.facts.kind == "encoder" and not mlm_architecture(loaded.model.config):
        raise BadInput(NO_MLM_HEAD)
    offered = supported_kinds(loaded)
    if kind not in offered:
        what = {"decoder": "a causal decoder", "encoder": "an encoder",
                "encoder-decoder": "an encoder-decoder"}.get(loaded.facts.kind, loaded.facts.kind)
        raise BadInput(f"The target '{KIND_LABELS[kind]}' is not available for {loaded.facts.name}, which is "
                       f"{what}. " + (f"It offers: {', '.join(KIND_LABELS[k] for k in offered)}." if offered else
                                      "Attributions here support encoders and causal decoders."))


def load_masked_lm(loaded):
    """The masked-LM model (AutoModelForMaskedLM, eager attention, eval) from the folder or hub id
    `loaded` came from, when its config names a ...ForMaskedLM architecture; else BadInput.
    Local files only unless the hub is reachable; never remote code."""
    from transformers import AutoModelForMaskedLM

    from attnviz.models.hf import hub_reachable

    config = loaded.model.config
    if not mlm_architecture(config):
        raise BadInput(NO_MLM_HEAD)
    where = getattr(config, "_name_or_path", "") or loaded.key
    local_only = Path(where).exists() or not hub_reachable()
    try:
        model = AutoModelForMaskedLM.from_pretrained(where, attn_implementation="eager", local_files_only=local_only,
                                                     trust_remote_code=False)
    except (OSError, ValueError) as e:
        raise BadInput(f"The masked-LM head of {loaded.facts.name} could not be loaded here: "
                       f"{str(e).splitlines()[0]}") from e
    return model.eval()


# ------------------------------------------------------------------ building a target and its score function

def _check_position(position, n: int, what: str, low: int = 0, high: int | None = None) -> int:
    high = n - 1 if high is None else high
    if position is None or isinstance(position, bool) or not isinstance(position, (int, np.integer)) \
            or not low <= int(position) <= high:
        raise BadInput(f"The {what} must be a token position from {low} to {high} (it was {position}).")
    return int(position)


def _piece(tokenizer, token_id: int) -> str:
    text = tokenizer.decode([int(token_id)])
    return text if text.strip() else repr(text)


def _word_embeddings(model, ids):
    import torch

    with torch.no_grad():
        return model.get_input_embeddings()(ids).detach().float().clone()  # (1, n, d)


def _base(model):
    """The encoder under a task head (bert under BertForMaskedLM), or the model itself."""
    return getattr(model, "base_model", model)


def _mean_pool(hidden, attention_mask):
    """Masked mean over positions, as sentence-transformers pools: hidden (b, n, d) -> (b, d)."""
    m = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (b, n, 1)
    return (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)


def _forward(runner, inputs: dict, part: str = "model", **kwargs):
    """The model's output on keyword `inputs`, through the model adapter, in the caller's autograd mode."""
    return adapter.run(runner, inputs, part=part, grad=None, **kwargs)[0]


def _sentence_embedding(runner, enc: Encoded, part: str):
    import torch

    with torch.no_grad():
        out = _forward(runner, enc.inputs, part)
        return _mean_pool(out.last_hidden_state.float(), enc.inputs["attention_mask"])[0]  # (d,)


def _runner(loaded, model, lock=None) -> LoadedModel:
    """`model` (the loaded model or a masked-LM sibling) as a LoadedModel the adapter can run, under `lock`."""
    if model is loaded.model and lock in (None, loaded.lock):
        return loaded
    return LoadedModel(loaded.key, model, loaded.tokenizer, loaded.facts, lock=lock or loaded.lock)


def _extra(model, inputs: dict) -> dict:
    import inspect

    params = inspect.signature(model.forward).parameters
    return {k: v for k, v in inputs.items() if k in ("attention_mask", "token_type_ids") and k in params}


def _candidates(enc: Encoded, target_kind: str, position: int | None) -> np.ndarray:
    cand = ~np.asarray(enc.special, dtype=bool)
    if target_kind == NEXT_TOKEN:
        cand[position + 1:] = False  # later tokens cannot affect a causal prediction
        cand[0] = False  # the first position keeps its token in the baseline (neutral_baseline)
    if target_kind == MASKED_TOKEN:
        cand[position] = False  # the [MASK] slot itself is the question, not evidence
    return cand


def _masked(enc: Encoded, position: int, mask_id: int) -> Encoded:
    import dataclasses

    ids = list(enc.ids)
    ids[position] = mask_id
    inputs = dict(enc.inputs)
    inputs["input_ids"] = inputs["input_ids"].clone()
    inputs["input_ids"][0, position] = mask_id
    return dataclasses.replace(enc, ids=ids, inputs=inputs)


def _mask_id(tokenizer) -> int:
    mask_id = getattr(tokenizer, "mask_token_id", None)
    if mask_id is None:
        raise BadInput("This tokenizer has no mask token, so no position can be masked.")
    return int(mask_id)


def make_target(loaded, enc: Encoded, kind: str, position: int | None = None, token_id: int | None = None,
                second: str | None = None, mlm=None) -> Target:
    """Check the choice against the model and the input and word its label. The next and masked token
    default to the model's top prediction there (read with `loaded.model`, or `mlm` for the masked LM)."""
    import torch

    check_kind(loaded, kind)
    n, tok = len(enc.ids), loaded.tokenizer
    if kind == SIMILARITY_PAIR:
        if not (second or "").strip():
            raise BadInput("Type a second sentence to compare with: the similarity target is the cosine between "
                           "the two sentence embeddings.")
        return Target(kind, None, None, f"cosine similarity of the sentence embedding to “{second.strip()}”",
                      second=second.strip())
    content = np.flatnonzero(~np.asarray(enc.special, dtype=bool))
    if kind == NEXT_TOKEN:
        position = _check_position(position, n, "position whose next token is explained")
    else:
        if content.size == 0:
            raise BadInput("The text has no ordinary tokens to mask.")
        position = _check_position(position, n, "masked position", int(content[0]), int(content[-1]))
        if enc.special[position]:
            raise BadInput(f"Position {position} is a special token ({enc.tokens[position]}); choose a word.")
    shown = enc.tokens[position]
    if kind == SIMILARITY_MASKED:
        return Target(kind, position, None, f"cosine similarity of the sentence embedding to the same sentence "
                                            f"with '{shown}' (position {position}) masked")
    if token_id is not None and not 0 <= int(token_id) < loaded.model.config.vocab_size:
        raise BadInput(f"The token id must be from 0 to {loaded.model.config.vocab_size - 1} (it was {token_id}).")
    model, inputs = loaded.model, enc.inputs
    if kind == MASKED_TOKEN:
        model = mlm if mlm is not None else load_masked_lm(loaded)
        inputs = _masked(enc, position, _mask_id(tok)).inputs
    if token_id is None:
        with torch.no_grad():
            logits = _forward(_runner(loaded, model), inputs).logits  # (1, n, vocab)
        token_id = int(logits[0, position].argmax())
    piece = _piece(tok, token_id)
    if kind == NEXT_TOKEN:
        label = f"next-token logit of '{piece}' after position {position} ('{shown}')"
    else:
        label = f"masked-token logit of '{piece}' at position {position} (was '{shown}')"
    return Target(kind, position, int(token_id), label)


def neutral_token(tokenizer) -> tuple[int, str] | None:
    """(id, role) of the tokenizer's first token among NEUTRAL_ROLES, or None."""
    for attr, role in NEUTRAL_ROLES:
        tid = getattr(tokenizer, attr, None)
        if isinstance(tid, (int, np.integer)) and not isinstance(tid, bool) and tid >= 0:
            return int(tid), role
    return None


def neutral_baseline(run, tokenizer, enc: Encoded, embeds):
    """A causal model's baseline: (embeddings (1, n, d), label). Every position holds the word embedding of
    a neutral token (padding, else end-of-text, else unknown-word; zeros if the tokenizer has none) except
    the special tokens and the first position, which keep their own.

    Why not zero embeddings: a model whose blocks start with an RMSNorm (Llama, SmolLM2) maps any non-zero
    input, however small, to full size, so the straight path from zero jumps at its start (SmolLM2 on "The
    capital of France is": f(0) = 0 but f(1e-8 x) = 7.9 for a logit of 17.4). Why the first position stays:
    a causal model parks attention on its first token (the attention sink, with activations near 800 on
    SmolLM2); a path that replaces it moves the sink, and the logit jumps by up to 23 along it."""
    import torch

    keep = np.asarray(enc.special, dtype=bool).copy()
    keep[0] = True
    found = neutral_token(tokenizer)
    if found is None:
        base = torch.zeros_like(embeds)
        what = "zero word embeddings (this tokenizer has no padding, end-of-text or unknown-word token)"
    else:
        tid, role = found
        with torch.no_grad():
            row = run.get_input_embeddings()(torch.tensor([tid])).detach().float()  # (1, d)
        base = row[None].expand_as(embeds).clone()  # (1, n, d)
        what = f"the embedding of '{_piece(tokenizer, tid)}' (the {role}, id {tid})"
    sel = torch.from_numpy(keep)
    base[0, sel] = embeds[0, sel]
    kept = ("the first token and the special tokens, which keep their own" if keep[1:].any() else
            "the first token, which keeps its own")
    return base, f"{what} at every position except {kept}"


def make_scorer(loaded, enc: Encoded, target: Target, model=None, lock=None) -> Scorer:
    """The score function of `target` on `enc`, run with `model` (default: the loaded model, or for
    the masked-token target a masked-LM model that must be given). Never changes the model."""
    import torch

    model = loaded.model if model is None else model
    tok = loaded.tokenizer
    if target.kind == MASKED_TOKEN:
        enc = _masked(enc, target.position, _mask_id(tok))
    runner = _runner(loaded, model, lock)
    part, run = "model", model
    if target.pooled:
        part, run = "base", _base(model)
        if target.kind == SIMILARITY_PAIR:
            ref_enc = encode(loaded, target.second)
        else:
            ref_enc = _masked(enc, target.position, _mask_id(tok))
        reference = _sentence_embedding(runner, ref_enc, part)  # (d,)
    extra = _extra(run, enc.inputs)
    embeds = _word_embeddings(run, enc.inputs["input_ids"])
    pos, tid = target.position, target.token_id

    if target.pooled:
        def fn(x, kw):
            hidden = _forward(runner, {"inputs_embeds": x, **kw}, part).last_hidden_state  # (b, n, d)
            pooled = _mean_pool(hidden.float(), kw["attention_mask"])  # (b, d)
            return torch.nn.functional.cosine_similarity(pooled, reference[None].to(pooled.dtype), dim=-1)
    else:
        def fn(x, kw):
            logits = _forward(runner, {"inputs_embeds": x, **kw}, part).logits  # (b, n, vocab)
            return logits[:, pos, tid].float()

    baseline, label = None, ZERO_BASELINE
    if target.causal:
        baseline, label = neutral_baseline(run, tok, enc, embeds)
    return Scorer(target=target, model=run, embeds=embeds, extra=extra,
                  candidates=_candidates(enc, target.kind, pos), fn=fn, ids=tuple(int(i) for i in enc.ids),
                  lock=lock or loaded.lock, runner=runner, part=part, baseline=baseline, baseline_label=label)


def check_text(text: str | None) -> None:
    if not (text or "").strip():
        raise BadInput("The text is empty. Type a sentence to see which of its tokens the output depends on.")


def token_id_of(loaded, word: str | None) -> int | None:
    """The id of the one token `word` is for this model (None for a blank word). A word of several
    pieces is refused: a logit belongs to one token. Causal LMs usually want the leading space (' cat')."""
    if word is None or not word.strip():
        return None
    tok = loaded.tokenizer
    ids = tok(word, add_special_tokens=False)["input_ids"]
    if loaded.facts.causal and len(ids) != 1 and not word.startswith(" "):
        ids = tok(" " + word, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        pieces = tok.convert_ids_to_tokens(ids)
        raise BadInput(f"'{word}' is {count_text(len(ids))} tokens for this model ({', '.join(map(str, pieces))}); the target "
                       "must be one token. Type one of its pieces, or leave it empty for the model's top prediction.")
    return int(ids[0])
