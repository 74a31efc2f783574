"""The one way to run a model and look inside it: `record`, a context over named hook points that reads and
replaces activations, and `run`, the forward entry every feature calls.

Hook points (TransformerLens's names and layout). Block i of the encoder, or of the only stack, is
"blocks.{i}"; block i of an encoder-decoder's decoder is "decoder.blocks.{i}" (same points, plus cross_attn):

  blocks.{i}.hook_resid_pre       [batch, pos, d_model]              the residual stream entering block i
  blocks.{i}.attn.hook_q          [batch, query_pos, head, d_head]   queries after RoPE, one per query head
  blocks.{i}.attn.hook_k          [batch, key_pos, kv_head, d_head]  keys after RoPE, one per key/value head
                                                                     (grouped-query models share them), every
                                                                     position attended to (KV cache included)
  blocks.{i}.attn.hook_v          [batch, key_pos, kv_head, d_head]  values, like the keys
  blocks.{i}.attn.hook_pattern    [batch, head, query_pos, key_pos]  the softmax weights
  blocks.{i}.attn.hook_z          [batch, pos, head, d_head]         each head's output (pattern · v), before the
                                                                     output projection: a head's slice can be
                                                                     read, zeroed or patched here
  blocks.{i}.hook_attn_out        [batch, pos, d_model]              the output projection's output, bias included
  blocks.{i}.hook_resid_mid       [batch, pos, d_model]              between attention and MLP: x + attn_out
                                                                     (pre-norm), LN(x + attn_out) (post-norm)
  blocks.{i}.hook_mlp_out         [batch, pos, d_model]              what the MLP adds
  blocks.{i}.hook_resid_post      [batch, pos, d_model]              the residual stream leaving block i
  ln_final.hook_normalized        [batch, pos, d_model]              after the final norm (pre-norm models; the
                                                                     decoder's in encoder-decoders)
  decoder.blocks.{i}.cross_attn.hook_{q,k,v,pattern,z}, decoder.blocks.{i}.hook_cross_out: cross-attention

    out, rec = run(loaded, encoded.inputs, hooks=["blocks.*.attn.hook_pattern"])      # one forward pass
    rec["blocks.0.attn.hook_pattern"]                                                # (1, head, n, n)
    with record(loaded, replace={"blocks.3.attn.hook_z": zero_head_5}) as rec:      # several forwards
        out = rec.forward(**inputs)                 # e.g. generation steps over a KV cache
    out, rec = run_from(loaded, 3, resid, encoded.inputs)   # from block 3, given blocks.3.hook_resid_pre

Models whose attention is computed in their own code (attnviz's toy model) have no q, k or pattern points; their
blocks.{i}.attn.hook_v [batch, key_pos, kv_head, d_head] is read at the value projection's output.
`grad`: True runs with gradients (kept tensors stay in the graph), False in inference mode, None in the caller's
own autograd mode (a score function that a gradient method and a no_grad loop both call; a training step).
`run_from` starts a forward at block i from the residual stream entering it: the blocks before it are not run
(activation patching of the residual stream, layer by layer).

`hooks` names the points kept in `rec` (exact names, or fnmatch patterns that may match nothing). `replace`
maps names or patterns to a tensor (used instead of the activation) or to a function fn(activation, point) ->
tensor or None: a tensor replaces the activation, None leaves it as it is (so a function may also just read,
e.g. copy rows into an array as they pass). The replacement is what the rest of the model sees, and what is
kept; rec holds the last forward's activations. With a KV cache, each forward's points hold its new positions
(hook_pattern: the new query rows over every cached key); a replaced hook_k / hook_v changes this step's
attention only, not what was written into the cache.

How: forward hooks and pre-hooks on the modules the family table (`families.py`) names, and, for q, k, v and the
pattern, an attention function registered with transformers that runs the family's own eager attention (or SDPA,
or a kernel the caller gives). The model's lock is held for the whole block; every hook is removed and the model's
attention implementation restored on exit, even on an exception. Active recordings are found through one
module-level map from attention module to recording (no thread-local state)."""
from __future__ import annotations

import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Callable

from attnviz.errors import BadInput
from attnviz.hooks import attention_function, register_attention
from attnviz.models.families import Family, family_of, module_at
from attnviz.runtime import threads_for, weights_bytes

# name template -> shape, for documentation, listings and tests
HOOK_POINTS: dict[str, str] = {
    "blocks.{i}.hook_resid_pre": "[batch, pos, d_model]",
    "blocks.{i}.attn.hook_q": "[batch, query_pos, head, d_head]",
    "blocks.{i}.attn.hook_k": "[batch, key_pos, kv_head, d_head]",
    "blocks.{i}.attn.hook_v": "[batch, key_pos, kv_head, d_head]",
    "blocks.{i}.attn.hook_pattern": "[batch, head, query_pos, key_pos]",
    "blocks.{i}.attn.hook_z": "[batch, pos, head, d_head]",
    "blocks.{i}.hook_attn_out": "[batch, pos, d_model]",
    "blocks.{i}.hook_resid_mid": "[batch, pos, d_model]",
    "blocks.{i}.hook_mlp_out": "[batch, pos, d_model]",
    "blocks.{i}.hook_resid_post": "[batch, pos, d_model]",
    "ln_final.hook_normalized": "[batch, pos, d_model]",
    "decoder.blocks.{i}.cross_attn.hook_q": "[batch, query_pos, head, d_head]",
    "decoder.blocks.{i}.cross_attn.hook_k": "[batch, encoder_pos, kv_head, d_head]",
    "decoder.blocks.{i}.cross_attn.hook_v": "[batch, encoder_pos, kv_head, d_head]",
    "decoder.blocks.{i}.cross_attn.hook_pattern": "[batch, head, query_pos, encoder_pos]",
    "decoder.blocks.{i}.cross_attn.hook_z": "[batch, pos, head, d_head]",
    "decoder.blocks.{i}.hook_cross_out": "[batch, pos, d_model]",
}
_ATTENTION_POINTS = ("q", "k", "v", "pattern")
# Registered attention implementations: the same function, with eager's or SDPA's mask builder.
_EAGER, _SDPA = "attnviz_adapter", "attnviz_adapter_sdpa"
_REGISTERED = False
_ACTIVE: dict[int, "Recording"] = {}  # id(attention module) -> the recording driving it (under the model's lock)


@dataclass
class AttentionCall:
    """One call of a block's attention: what the model passed to its attention function."""

    name: str  # "blocks.3.attn" or "decoder.blocks.3.cross_attn"
    layer: int  # the block index in its stack
    module: Any  # the attention module (layer_idx, is_causal, sliding_window, ...)
    scaling: float  # the factor q·k is multiplied by (1/sqrt(d_head) usually)
    mask: Any  # the mask the model built: float (batch, 1, query, key) added to the scores, bool, or None
    kwargs: dict  # the other keyword arguments (is_causal, sliding_window, position_bias, softcap, ...)
    dropout: float = 0.0


@dataclass(frozen=True)
class HookPoint:
    """Where an activation was taken: handed to replacement functions with the activation."""

    name: str  # e.g. "blocks.3.attn.hook_z"
    layer: int  # the block index in its stack
    stack: str  # "blocks" or "decoder.blocks"
    call: AttentionCall | None = None  # q, k, v and pattern points: the attention call


@dataclass(frozen=True)
class _Spec:
    """How one hook point is reached: a module, and where on it the activation is."""

    kind: str  # resid_pre | resid_post | resid_mid_in | resid_mid_out | z | out | mlp | final | attention | value
    module: Any
    layer: int
    stack: str


def _register() -> None:
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    register_attention(_EAGER, _attend)
    register_attention(_SDPA, _attend)
    ALL_MASK_ATTENTION_FUNCTIONS.register(_SDPA, sdpa_mask)  # a plain causal mask stays None: SDPA's fast path
    _REGISTERED = True


def family_eager(module):
    """The eager attention function of the module's own family (its modeling file), or None."""
    return getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)


def _sdpa(module, query, key, value, mask, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    return sdpa_attention_forward(module, query, key, value, mask, **kwargs)


def _attend(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The registered attention function: the recording that drives this module runs the call."""
    rec = _ACTIVE.get(id(module))
    if rec is None:  # a module the recording does not know: the family's own eager attention
        fn = family_eager(module) or _sdpa
        return fn(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    return rec._attention(module, query, key, value, attention_mask, scaling, dropout, kwargs)


def repeat_kv(x, n_heads: int):
    """(batch, kv_head, pos, d) -> (batch, head, pos, d): each key/value head repeated for its query heads."""
    groups = n_heads // x.shape[1]
    return x if groups == 1 else x.repeat_interleave(groups, dim=1)


def _shape_error(name: str, got, want) -> BadInput:
    return BadInput(f"The replacement for {name} has shape {tuple(got)}, but the activation there has shape "
                    f"{tuple(want)}.")


class Recording:
    """The hooks of one `record` block and what its last forward kept: rec[name] -> tensor."""

    def __init__(self, loaded, fam: Family | None, keep: set, replace: dict, kernel, pattern_into, grad: bool):
        self.loaded, self.family = loaded, fam
        self.keep, self.replace = keep, replace
        self.kernel, self.pattern_into, self.grad = kernel, pattern_into, grad
        self.acts: dict[str, Any] = {}  # name -> tensor of the last forward
        self.weights = weights_bytes(loaded.model)  # how many threads a short pass runs on (runtime.threads_for)
        self.calls: dict[str, AttentionCall] = {}  # "blocks.{i}.attn" -> that block's attention call, last forward
        self.n_heads = int(loaded.facts.n_heads)
        self.d_head = int(loaded.facts.d_model) // self.n_heads
        self._attn_modules: dict[int, tuple] = {}  # id(attention module) -> (name, layer, stack)
        self._attn_points: dict[str, set] = {}  # "blocks.{i}.attn" -> hooked points among q, k, v, pattern

    # ---- reading
    def __getitem__(self, name: str):
        try:
            return self.acts[name]
        except KeyError:
            raise KeyError(f"{name} was not recorded (ask for it in hooks=[...]); recorded: "
                           f"{', '.join(sorted(self.acts)) or 'nothing'}") from None

    def __contains__(self, name: str) -> bool:
        return name in self.acts

    def get(self, name: str, default=None):
        return self.acts.get(name, default)

    def stack(self, template: str, n: int | None = None):
        """torch.stack of template.format(i=i) over blocks 0..n-1 (default: every block recorded)."""
        import torch

        if n is None:
            n = 0
            while template.format(i=n) in self.acts:
                n += 1
        return torch.stack([self[template.format(i=i)] for i in range(n)])

    # ---- running
    def forward(self, *args, part: str = "model", **kwargs):
        """Run the model (part="model"), its base model without the head ("base") or an encoder-decoder's
        encoder ("encoder") with the hooks; keyword arguments go to the model. Earlier results are dropped."""
        import torch

        model = self.loaded.model
        runner = {"model": model, "base": getattr(model, "base_model", model)}.get(part)
        if part == "encoder":  # transformers' encoder-decoders, or attnviz's toy model (its `encode`)
            runner = model.get_encoder() if hasattr(model, "get_encoder") else model.encode
        if runner is None:
            raise ValueError(f"part must be 'model', 'base' or 'encoder', not {part!r}")
        if hasattr(model, "config"):  # transformers models: named outputs
            kwargs.setdefault("return_dict", True)
        self.acts.clear()
        self.calls.clear()
        with _grad_mode(self.grad), threads_for(_tokens(args, kwargs), cached=_continues(kwargs),
                                                      weights=self.weights):
            return runner(*args, **kwargs)

    # ---- what the hooks do
    def _visit(self, name: str, x, point: HookPoint):
        """The activation at `name` after its replacement (if any); kept when asked for."""
        how = self.replace.get(name)
        if how is not None:
            new = how(x, point) if callable(how) else how
            if new is not None:
                if tuple(new.shape) != tuple(x.shape):
                    try:
                        new = new.expand(x.shape)
                    except RuntimeError:
                        raise _shape_error(name, new.shape, x.shape) from None
                x = new.to(x.dtype)
        if name in self.keep:
            self.acts[name] = x if _keeps_graph(self.grad) else x.detach()
        return x

    def _attention(self, module, query, key, value, mask, scaling, dropout, kwargs):
        import torch

        name, layer, stack = self._attn_modules[id(module)]
        if scaling is None:
            scaling = query.size(-1) ** -0.5
        call = AttentionCall(name, layer, module, float(scaling), mask, kwargs, dropout)
        self.calls[name] = call
        points = self._attn_points.get(name, ())
        point = HookPoint(name, layer, stack, call)
        # transformers' layout (batch, head, pos, d) <-> the hook points' (batch, pos, head, d): views, no copies
        if "q" in points:
            query = self._visit(f"{name}.hook_q", query.transpose(1, 2), _named(point, "q")).transpose(1, 2)
        if "k" in points:
            key = self._visit(f"{name}.hook_k", key.transpose(1, 2), _named(point, "k")).transpose(1, 2)
        if "v" in points:
            value = self._visit(f"{name}.hook_v", value.transpose(1, 2), _named(point, "v")).transpose(1, 2)
        result = None
        if callable(self.kernel):
            result = self.kernel(call, query, key, value)
        if result is None:
            if self.pattern_into is not None and stack == "blocks" and name.endswith(".attn"):
                result = self._plain(query, key, value, mask, float(scaling), self.pattern_into[layer])
            elif self.kernel not in (None, "eager"):  # "sdpa", or a kernel that passed: SDPA (and SDPA's mask)
                result = _sdpa(module, query, key, value, mask, dropout=dropout, scaling=scaling, **kwargs)
            else:
                fn = family_eager(module) or _sdpa
                result = fn(module, query, key, value, mask, scaling=scaling, dropout=dropout, **kwargs)
        out, weights = result
        if "pattern" in points:
            if weights is None:
                raise BadInput(f"{name} computed no attention weights, so its pattern cannot be read.")
            new = self._visit(f"{name}.hook_pattern", weights, _named(point, "pattern"))
            if new is not weights:  # the replaced pattern weighs the values
                out = torch.matmul(new, repeat_kv(value, new.shape[1])).transpose(1, 2).contiguous()
                weights = new
        return out, weights

    @staticmethod
    def _plain(query, key, value, mask, scaling: float, into):
        """softmax(q·k × scaling + mask) · v with the weights written into `into` (batch, head, query, key):
        transformers' eager attention of the plain_softmax families, operation for operation."""
        import torch

        n_heads = query.shape[1]
        key, value = repeat_kv(key, n_heads), repeat_kv(value, n_heads)
        scores = torch.matmul(query, key.transpose(2, 3)).mul_(scaling)  # (B, H, T_q, T_k); in place: no new block
        if mask is not None and mask.dtype == torch.bool:
            scores.masked_fill_(~mask, float("-inf"))
        elif mask is not None:
            scores.add_(mask)
        torch.softmax(scores, dim=-1, out=into)
        return torch.matmul(into, value).transpose(1, 2).contiguous(), into  # (B, T_q, H, d)


def _grad_mode(grad: bool | None):
    """The autograd mode of a forward: gradients (True), inference mode (False), the caller's own mode (None)."""
    import torch

    if grad is None:
        return nullcontext()
    return torch.enable_grad() if grad else torch.inference_mode()


def _keeps_graph(grad: bool | None) -> bool:
    import torch

    return bool(grad) or (grad is None and torch.is_grad_enabled())


def _named(point: HookPoint, what: str) -> HookPoint:
    """The point of the attention call `point` for one of q, k, v, pattern."""
    return HookPoint(f"{point.name}.hook_{what}", point.layer, point.stack, point.call)


# ------------------------------------------------------------------ the catalogue of a model's hook points
def hook_points(loaded, fam: Family | None = None) -> dict[str, _Spec]:
    """name -> how it is reached, for every hook point `loaded`'s model has."""
    model = loaded.model
    fam = fam or family_of(model)
    out: dict[str, _Spec] = {}
    for s in fam.stacks:
        blocks = module_at(model, s.blocks)
        if blocks is None:
            continue
        for i in range(len(blocks)):
            p = f"{s.prefix}.{i}"

            def at(template, i=i):
                return None if template is None else module_at(model, template.format(i=i))

            block = blocks[i]
            out[f"{p}.hook_resid_pre"] = _Spec("resid_pre", block, i, s.prefix)
            out[f"{p}.hook_resid_post"] = _Spec("resid_post", block, i, s.prefix)
            if (m := at(s.out)) is not None:
                out[f"{p}.attn.hook_z"] = _Spec("z", m, i, s.prefix)
                out[f"{p}.hook_attn_out"] = _Spec("out", m, i, s.prefix)
            if (m := at(s.mlp)) is not None:
                out[f"{p}.hook_mlp_out"] = _Spec("mlp", m, i, s.prefix)
            if fam.post_norm and (m := at(s.norm_attn)) is not None:
                out[f"{p}.hook_resid_mid"] = _Spec("resid_mid_out", m, i, s.prefix)
            elif not fam.post_norm and not fam.parallel and (m := at(s.norm_mlp)) is not None:
                out[f"{p}.hook_resid_mid"] = _Spec("resid_mid_in", m, i, s.prefix)
            if (m := at(s.attention)) is not None:
                for what in _ATTENTION_POINTS:
                    out[f"{p}.attn.hook_{what}"] = _Spec("attention", m, i, s.prefix)
            elif (m := at(s.v)) is not None:  # attention computed in the model's own code: v from its projection
                out[f"{p}.attn.hook_v"] = _Spec("value", m, i, s.prefix)
            if (m := at(s.cross_attention)) is not None:
                for what in _ATTENTION_POINTS:
                    out[f"{p}.cross_attn.hook_{what}"] = _Spec("attention", m, i, s.prefix)
            if (m := at(s.cross_out)) is not None:
                out[f"{p}.cross_attn.hook_z"] = _Spec("z", m, i, s.prefix)
                out[f"{p}.hook_cross_out"] = _Spec("out", m, i, s.prefix)
    final = fam.stacks[-1].final_norm if fam.kind == "encoder-decoder" else fam.stack.final_norm
    if final and (m := module_at(model, final)) is not None:
        out["ln_final.hook_normalized"] = _Spec("final", m, 0, "")
    return out


def _expand(names, catalogue: dict, fam: Family) -> list[str]:
    """Concrete hook point names for exact names or fnmatch patterns; BadInput for an exact name the model does
    not have (a pattern may match nothing: "*hook_cross_out" on a model without cross-attention)."""
    out = []
    for pattern in names:
        hits = [n for n in catalogue if fnmatchcase(n, pattern)]
        if not hits and not any(c in pattern for c in "*?["):
            raise BadInput(f"A {fam.name} model has no hook point {pattern}, so it cannot be read or replaced "
                           "there.")
        out += hits
    return list(dict.fromkeys(out))


def can_write_pattern_in_place(loaded) -> bool:
    """True when `record(..., pattern_into=...)` applies: a float32 model in eval mode of a family whose eager
    attention is the plain softmax (written straight into the caller's array, no copy)."""
    import torch

    model = loaded.model
    try:
        fam = family_of(model)
    except BadInput:
        return False
    config = getattr(model, "config", None)
    return (fam.plain_softmax and fam.kind != "encoder-decoder" and not model.training
            and getattr(model, "dtype", None) == torch.float32
            and not (fam.kind == "encoder" and getattr(config, "is_decoder", False)))


# ------------------------------------------------------------------ the context and the entry
def _module_hooks(rec: Recording, name: str, spec: _Spec):
    """(register function, hook) putting hook point `name` on spec.module."""
    point = HookPoint(name, spec.layer, spec.stack)
    kind = spec.kind

    def first(output):
        return output[0] if isinstance(output, tuple) else output

    def with_first(output, x):
        return (x,) + tuple(output[1:]) if isinstance(output, tuple) else x

    if kind == "resid_pre":
        def hook(module, args, kwargs):
            if args:
                x = args[0]
                new = rec._visit(name, x, point)
                return None if new is x else ((new,) + tuple(args[1:]), kwargs)
            x = kwargs["hidden_states"]
            new = rec._visit(name, x, point)
            return None if new is x else (args, {**kwargs, "hidden_states": new})
        return "pre_kwargs", hook
    if kind in ("z", "resid_mid_in"):
        def hook(module, args):
            x = args[0]
            view = x.view(*x.shape[:-1], rec.n_heads, -1) if kind == "z" else x  # (B, T, H, d_head) for z
            new = rec._visit(name, view, point)
            if new is view and not (_keeps_graph(rec.grad) and kind == "z"):  # with gradients the kept view is fed
                return None
            return (new.reshape(x.shape) if kind == "z" else new,) + tuple(args[1:])
        return "pre", hook

    if kind == "value":  # the value projection's (B, T, kv_heads * d_head) seen as (B, T, kv_head, d_head)
        def hook(module, args, output):
            view = output.view(*output.shape[:-1], -1, rec.d_head)
            new = rec._visit(name, view, point)
            return None if new is view else new.reshape(output.shape)
        return "post", hook

    def hook(module, args, output):
        x = first(output)
        new = rec._visit(name, x, point)
        return None if new is x else with_first(output, new)
    return "post", hook


@contextmanager
def record(loaded, hooks=(), replace: dict | None = None, *, kernel: str | Callable | None = None,
           pattern_into=None, grad: bool | None = False):
    """Open the recording context on `loaded` (a LoadedModel): yields a Recording whose forward() runs the
    model with the hook points in `hooks` kept and those in `replace` replaced (see the module docstring).

    kernel: the attention computation behind q/k/v/pattern points: "eager" (default; the family's own eager
    attention, weights materialised), "sdpa" (no weights: q/k/v points without the pattern), or a function
    kernel(call, query, key, value) -> (output (batch, query, head, d_head), weights or None), or None to let
    SDPA run that call; it gets q, k, v in transformers' (batch, head, pos, d_head) after their replacements,
    and SDPA's mask in call.mask (None for a plain causal or unpadded input).
    pattern_into: a float32 torch tensor (layer, batch, head, query, key) the softmax of each block is written
    into, no copy (only where can_write_pattern_in_place(loaded)).
    grad: True runs with gradients (kept tensors are not detached), False in inference mode, None in the
    autograd mode the caller set.
    Raises BadInput for a hook point the model does not have, or a replacement of the wrong shape."""
    model = loaded.model
    hooks = [hooks] if isinstance(hooks, str) else list(hooks)
    if not hooks and not replace and kernel is None and pattern_into is None:  # a plain forward: any model
        with loaded.lock:
            yield Recording(loaded, None, set(), {}, None, None, grad)
        return
    fam = family_of(model)
    catalogue = hook_points(loaded, fam)
    keep = set(_expand(hooks, catalogue, fam))
    repl: dict[str, Any] = {}
    for pattern, how in (replace or {}).items():
        for name in _expand([pattern], catalogue, fam):
            repl[name] = how
    if pattern_into is not None and not can_write_pattern_in_place(loaded):
        raise ValueError(f"pattern_into needs a float32 {fam.name} model in eval mode whose attention is the plain "
                         "softmax; read hook_pattern instead.")
    rec = Recording(loaded, fam, keep, repl, kernel, pattern_into, grad)

    attention_names = [n for n in keep | set(repl) if catalogue[n].kind == "attention"]
    if kernel not in (None, "eager") and any(n.endswith("hook_pattern") for n in attention_names):
        raise ValueError("hook_pattern needs the eager kernel: SDPA computes no weights.")
    swap = bool(attention_names) or pattern_into is not None or (kernel is not None and kernel != "eager")
    if swap:  # every attention module of the model goes through the registered function
        for name, spec in catalogue.items():
            if spec.kind == "attention":
                stem = name.rsplit(".", 1)[0]  # "blocks.3.attn"
                rec._attn_modules[id(spec.module)] = (stem, spec.layer, spec.stack)
        for name in attention_names:
            stem, what = name.rsplit(".hook_", 1)
            rec._attn_points.setdefault(stem, set()).add(what)

    with loaded.lock:
        busy = [i for i in rec._attn_modules if i in _ACTIVE]
        if busy:
            raise RuntimeError("This model is already being recorded; one recording at a time per model.")
        handles = []
        try:
            for name in sorted(keep | set(repl)):
                spec = catalogue[name]
                if spec.kind == "attention":
                    continue
                how, hook = _module_hooks(rec, name, spec)
                if how == "pre_kwargs":
                    handles.append(spec.module.register_forward_pre_hook(hook, with_kwargs=True))
                elif how == "pre":
                    handles.append(spec.module.register_forward_pre_hook(hook))
                else:
                    handles.append(spec.module.register_forward_hook(hook))
            if not swap:
                yield rec
                return
            _register()
            configs = [model.config] + [getattr(m, "config", None) for m in _modules_by_id(catalogue, rec)]
            configs = [c for c in configs if c is not None]
            for key in rec._attn_modules:
                _ACTIVE[key] = rec
            name = _EAGER if kernel in (None, "eager") else _SDPA
            with attention_function(configs, name):
                yield rec
        finally:
            for key in rec._attn_modules:
                if _ACTIVE.get(key) is rec:
                    del _ACTIVE[key]
            for h in handles:
                h.remove()


def _continues(kwargs) -> bool:
    """Whether a pass continues from a cache of keys and values that already holds positions (a generation step
    after the prompt's pass)."""
    cache = kwargs.get("past_key_values")
    if cache is None:
        return False
    length = getattr(cache, "get_seq_length", None)
    return bool(length()) if callable(length) else True


def _tokens(args, kwargs) -> int | None:
    """Tokens (batch x positions) of a pass's input, read off input_ids, inputs_embeds or a toy model's first
    argument (token ids); None when there are none of them (images, say)."""
    ids = kwargs.get("input_ids")
    if ids is None:
        ids = kwargs.get("inputs_embeds")
    if ids is None and args and hasattr(args[0], "is_floating_point") and not args[0].is_floating_point():
        ids = args[0]
    if ids is None or ids.dim() == 0:
        return None
    return int(ids.shape[0]) * (int(ids.shape[1]) if ids.dim() >= 2 else 1)


def _modules_by_id(catalogue: dict, rec: Recording) -> list:
    seen = {}
    for spec in catalogue.values():
        if spec.kind == "attention" and id(spec.module) in rec._attn_modules:
            seen[id(spec.module)] = spec.module
    return list(seen.values())


def run(loaded, inputs=None, *, hooks=(), replace: dict | None = None, part: str = "model",
        kernel: str | Callable | None = None, pattern_into=None, grad: bool | None = False, **kwargs):
    """One forward pass of `loaded` through the recording context: (the model's output, the Recording).

    inputs: keyword tensors for the model (a dict, e.g. Encoded.inputs) or positional arguments (a tuple, for
    attnviz's toy models); kwargs go to the model too (output_attentions=True, past_key_values=...).
    part: "model", "base" (no language-model head) or "encoder" (an encoder-decoder's encoder).
    hooks / replace / kernel / pattern_into / grad: as for `record`."""
    args, kw = ((), dict(inputs or {})) if not isinstance(inputs, tuple) else (inputs, {})
    with record(loaded, hooks, replace, kernel=kernel, pattern_into=pattern_into, grad=grad) as rec:
        out = rec.forward(*args, part=part, **kw, **kwargs)
    return out, rec


# ------------------------------------------------------------------ starting from a block
@contextmanager
def _starting_at(blocks, layer: int, resid):
    """Blocks 0..layer-1 of `blocks` replaced by stand-ins that pass their input on, and block `layer` fed
    `resid` as its input, for the length of the block. The caller holds the model's lock."""
    import torch

    class PassOn(torch.nn.Module):
        """Stands in for a skipped block: hands its input on as the first item of a tuple (a block's output
        form), where the next stand-in or block `layer` (whose input is replaced) receives it."""

        def __init__(self, block):
            super().__init__()
            for attr in ("attention_type", "layer_idx"):  # read by some models' loops (the mask of each block)
                if hasattr(block, attr):
                    setattr(self, attr, getattr(block, attr))

        def forward(self, *args, **kwargs):
            return (args[0] if args else kwargs.get("hidden_states"), None, None)

    def enter(module, args, kwargs):
        if args:
            return (resid,) + tuple(args[1:]), kwargs
        return args, {**kwargs, "hidden_states": resid}

    saved = [blocks[j] for j in range(layer)]
    handle = blocks[layer].register_forward_pre_hook(enter, with_kwargs=True, prepend=True)
    try:
        for j, block in enumerate(saved):
            blocks[j] = PassOn(block)
        yield
    finally:
        for j, block in enumerate(saved):
            blocks[j] = block
        handle.remove()


def run_from(loaded, layer: int, resid, inputs=None, *, hooks=(), replace: dict | None = None,
             kernel: str | Callable | None = None, grad: bool | None = False, **kwargs):
    """Run `loaded` from block `layer` of its first stack to its output, given the residual stream entering
    that block (resid: blocks.{layer}.hook_resid_pre, (batch, pos, d_model)), without running blocks
    0..layer-1: (the model's output, the Recording), as `run` returns them.

    inputs: the inputs of the forward `resid` came from (the model builds its masks and positions from them;
    its embeddings are looked up and not used). Hook points of blocks before `layer` record nothing; the
    hidden states of skipped blocks (output_hidden_states) are not meaningful. Raises BadInput for a block
    outside the model and for families whose first block computes something later blocks reuse (a relative
    position bias)."""
    model = loaded.model
    fam = family_of(model)
    if fam.positions == "relative":
        raise BadInput(f"A {fam.name} model computes its relative position bias in its first block and reuses it "
                       f"in the others, so it cannot start from block {layer}.")
    blocks = module_at(model, fam.stack.blocks)
    if not 0 <= int(layer) < len(blocks):
        raise BadInput(f"This {fam.name} model has blocks 0 to {len(blocks) - 1}, so it cannot start from block "
                       f"{layer}.")
    args, kw = ((), dict(inputs or {})) if not isinstance(inputs, tuple) else (inputs, {})
    if hasattr(model, "config") and hasattr(model.config, "use_cache"):
        kw.setdefault("use_cache", False)  # a KV cache would hold nothing for the skipped blocks
    with record(loaded, hooks, replace, kernel=kernel, grad=grad) as rec:
        with _starting_at(blocks, int(layer), resid):
            out = rec.forward(*args, **kw, **kwargs)
    return out, rec
