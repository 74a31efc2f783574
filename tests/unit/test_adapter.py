"""The model adapter: named hook points read and replace activations exactly, on tiny random models of each
family (BERT, Llama with grouped-query attention and RoPE, GPT-2, T5, BART) and attnviz's own toy model."""
import copy
import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from attnviz.errors import BadInput
from attnviz.models import adapter
from attnviz.models.adapter import HOOK_POINTS, hook_points, record, repeat_kv, run
from attnviz.models.families import family_of, module
from attnviz.types import LoadedModel
from tests.tiny_models import tiny_loaded

ROOT = Path(__file__).resolve().parents[2]
# Token ids of two sentences of the same length (MiniLM's WordPiece vocabulary, which the tiny models share).
CLEAN = [101, 1996, 4937, 2938, 2006, 1996, 13523, 2138, 2009, 2001, 5458, 102]
OTHER = [101, 1037, 3899, 2743, 2046, 1996, 2160, 2043, 2009, 2001, 2058, 102]
# One tiny random model per family: a new family adds its architecture here (tests/tiny_models.py).
FAMILY_CASES = ("bert", "llama", "gpt2", "t5", "bart")


@pytest.fixture(scope="module", params=FAMILY_CASES)
def tiny(request):
    return tiny_loaded(request.param)


def _inputs(loaded, ids):
    t = torch.tensor([ids])
    inputs = {"input_ids": t, "attention_mask": torch.ones_like(t)}
    if loaded.facts.kind == "encoder-decoder":
        inputs["decoder_input_ids"] = t[:, :7]
    return inputs


def _blocks(loaded, prefix="blocks"):
    return sorted({int(n.split(".")[-3 if ".attn." in n else -2]) for n in hook_points(loaded)
                   if n.startswith(prefix + ".") and n.endswith("hook_resid_pre")})


def _final(out):
    return out.logits if getattr(out, "logits", None) is not None else out.last_hidden_state


def test_every_hook_point_has_its_documented_shape(tiny):
    out, rec = run(tiny, _inputs(tiny, CLEAN), hooks=["*"])
    f = tiny.facts
    d_head = f.d_model // f.n_heads
    n_kv = f.n_kv_heads
    n = len(CLEAN)
    for name, t in rec.acts.items():
        template = re.sub(r"blocks\.\d+", "blocks.{i}", name)
        if template not in HOOK_POINTS:  # a decoder's blocks have the same points as the encoder's
            template = template.removeprefix("decoder.")
        assert template in HOOK_POINTS, name
        pos = 7 if name.startswith("decoder") or (name.startswith("ln_final") and f.kind == "encoder-decoder") else n
        key_pos = n if ("cross_attn" in name or not name.startswith("decoder")) else 7
        want = {"[batch, pos, d_model]": (1, pos, f.d_model),
                "[batch, query_pos, head, d_head]": (1, pos, f.n_heads, d_head),
                "[batch, key_pos, kv_head, d_head]": (1, key_pos, n_kv, d_head),
                "[batch, encoder_pos, kv_head, d_head]": (1, n, n_kv, d_head),
                "[batch, head, query_pos, key_pos]": (1, f.n_heads, pos, key_pos),
                "[batch, head, query_pos, encoder_pos]": (1, f.n_heads, pos, n),
                "[batch, pos, head, d_head]": (1, pos, f.n_heads, d_head)}[HOOK_POINTS[template]]
        assert tuple(t.shape) == want, (name, tuple(t.shape), want)
    assert f"blocks.{f.n_layers - 1}.hook_resid_post" in rec
    if tiny.key == "tiny-llama":
        assert n_kv == 2 and f.n_heads == 4  # grouped-query attention: 2 key/value heads for 4 query heads


def test_recorded_pattern_equals_output_attentions(tiny):
    out, rec = run(tiny, _inputs(tiny, CLEAN), hooks=["*hook_pattern"], output_attentions=True)
    if tiny.facts.kind == "encoder-decoder":
        stacks = {"blocks.{i}.attn": out.encoder_attentions, "decoder.blocks.{i}.attn": out.decoder_attentions,
                  "decoder.blocks.{i}.cross_attn": out.cross_attentions}
    else:
        stacks = {"blocks.{i}.attn": out.attentions}
    for template, maps in stacks.items():
        assert len(maps) == tiny.facts.n_layers
        for i, a in enumerate(maps):
            assert torch.equal(rec[template.format(i=i) + ".hook_pattern"], a)
    assert tiny.model.config._attn_implementation == "eager"


@pytest.mark.parametrize("arch", ["bert", "llama", "gpt2", "bart"])
def test_q_and_k_after_rope_rebuild_the_pattern(arch):
    """softmax(q k^T / sqrt(d_head) + mask) from the recorded q and k is the recorded pattern."""
    loaded = tiny_loaded(arch)
    f = loaded.facts
    _, rec = run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.*.attn.hook_*"])
    n = len(CLEAN)
    for i in range(f.n_layers):
        q = rec[f"blocks.{i}.attn.hook_q"].transpose(1, 2)  # (1, H, n, d)
        k = repeat_kv(rec[f"blocks.{i}.attn.hook_k"].transpose(1, 2), f.n_heads)
        scores = q @ k.transpose(2, 3) / q.shape[-1] ** 0.5
        if f.causal:
            scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        torch.testing.assert_close(torch.softmax(scores, -1), rec[f"blocks.{i}.attn.hook_pattern"],
                                   atol=1e-6, rtol=0)
    if arch == "llama":  # the keys really are rotated: q_proj / k_proj of the normed input alone do not do it
        _, rec0 = run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.0.hook_resid_pre", "blocks.0.attn.hook_k"])
        with torch.inference_mode():
            x = module(loaded.model, "norm_attn", 0)(rec0["blocks.0.hook_resid_pre"])
            k_plain = module(loaded.model, "k", 0)(x).view(1, n, 2, -1)
        assert not torch.allclose(k_plain, rec0["blocks.0.attn.hook_k"], atol=1e-3)
        torch.testing.assert_close(k_plain[:, 0], rec0["blocks.0.attn.hook_k"][:, 0], atol=1e-6, rtol=0)  # position 0


def test_q_and_k_do_not_explain_t5_which_the_table_says():
    loaded = tiny_loaded("t5")
    assert "relative position bias" in family_of(loaded.model).why_not("query_key")
    _, rec = run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.0.attn.hook_*"])
    q, k = rec["blocks.0.attn.hook_q"].transpose(1, 2), rec["blocks.0.attn.hook_k"].transpose(1, 2)
    rebuilt = torch.softmax(q @ k.transpose(2, 3), -1)  # T5 does not scale its scores
    assert (rebuilt - rec["blocks.0.attn.hook_pattern"]).abs().max() > 1e-3  # the bias is missing


def _project(model, part, layer, z, stack=0):
    """z (batch, pos, head, d_head) through the output projection's weight and bias, by hand."""
    proj = module(model, part, layer, stack)
    flat = z.reshape(*z.shape[:2], -1).double()
    w = proj.weight.double()
    w = w if type(proj).__name__ == "Conv1D" else w.T  # GPT-2's Conv1D stores (in, out)
    out = flat @ w
    return out if getattr(proj, "bias", None) is None else out + proj.bias.double()


def test_z_through_the_output_projection_is_attn_out(tiny):
    _, rec = run(tiny, _inputs(tiny, CLEAN), hooks=["*hook_z", "*hook_attn_out", "*hook_cross_out"])
    for i in range(tiny.facts.n_layers):
        got = _project(tiny.model, "out", i, rec[f"blocks.{i}.attn.hook_z"])
        torch.testing.assert_close(got, rec[f"blocks.{i}.hook_attn_out"].double(), atol=1e-5, rtol=0)
        if tiny.facts.kind == "encoder-decoder":
            got = _project(tiny.model, "cross_out", i, rec[f"decoder.blocks.{i}.cross_attn.hook_z"], stack=1)
            torch.testing.assert_close(got, rec[f"decoder.blocks.{i}.hook_cross_out"].double(), atol=1e-5, rtol=0)


def test_the_residual_stream_adds_up_block_by_block(tiny):
    """resid_post[i] is resid_pre[i+1]; pre-norm: mid = pre + attn_out, post = mid + mlp_out; post-norm (BERT,
    BART): mid = LN(pre + attn_out), post = LN(mid + mlp_out), with the norms the family table names."""
    _, rec = run(tiny, _inputs(tiny, CLEAN), hooks=["blocks.*"])
    fam, L = family_of(tiny.model), tiny.facts.n_layers
    for i in range(L):
        if i + 1 < L:
            assert torch.equal(rec[f"blocks.{i}.hook_resid_post"], rec[f"blocks.{i + 1}.hook_resid_pre"])
        pre, mid, post = (rec[f"blocks.{i}.hook_resid_{w}"] for w in ("pre", "mid", "post"))
        attn, mlp = rec[f"blocks.{i}.hook_attn_out"], rec[f"blocks.{i}.hook_mlp_out"]
        with torch.inference_mode():
            if fam.post_norm:
                want_mid = module(tiny.model, "norm_attn", i)(pre + attn)
                want_post = module(tiny.model, "norm_mlp", i)(mid + mlp)
            else:
                want_mid, want_post = pre + attn, mid + mlp
        torch.testing.assert_close(mid, want_mid, atol=1e-5, rtol=0)
        torch.testing.assert_close(post, want_post, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ["bert", "llama", "gpt2"])
def test_zeroing_a_heads_z_equals_zeroed_output_weights_and_the_ablation(arch):
    from attnviz.extract import extract
    from attnviz.metrics.ablation import run as ablation_run

    loaded = tiny_loaded(arch)
    layer, head, d = 1, 2, loaded.facts.d_model // loaded.facts.n_heads

    def zero(z, point):
        z = z.clone()
        z[:, :, head] = 0
        return z

    out, _ = run(loaded, _inputs(loaded, CLEAN), replace={f"blocks.{layer}.attn.hook_z": zero},
                 output_hidden_states=True)
    clone = LoadedModel(loaded.key, copy.deepcopy(loaded.model), loaded.tokenizer, loaded.facts)
    proj = module(clone.model, "out", layer)
    with torch.no_grad():
        if type(proj).__name__ == "Conv1D":
            proj.weight[head * d:(head + 1) * d, :] = 0
        else:
            proj.weight[:, head * d:(head + 1) * d] = 0
    ref, _ = run(clone, _inputs(clone, CLEAN), output_hidden_states=True)
    torch.testing.assert_close(_final(out), _final(ref), atol=1e-5, rtol=0)
    plain, _ = run(loaded, _inputs(loaded, CLEAN))
    assert (_final(out) - _final(plain)).abs().max() > 1e-4  # the head mattered
    result = extract(loaded, "the cat sat on the mat because it was tired")
    abl = ablation_run(loaded, result, {(layer, head)})
    by_weights = ablation_run(clone, result)
    np.testing.assert_allclose(abl.embedding, by_weights.embedding, atol=1e-5)


def _everything(loaded):
    """Every point that determines the output: the embeddings entering each stack, each head's z, each MLP."""
    points = ["blocks.0.hook_resid_pre", "blocks.*.attn.hook_z", "blocks.*.hook_mlp_out"]
    if loaded.facts.kind == "encoder-decoder":
        points += ["decoder.blocks.0.hook_resid_pre", "decoder.blocks.*.attn.hook_z",
                   "decoder.blocks.*.cross_attn.hook_z", "decoder.blocks.*.hook_mlp_out"]
    return points


def test_patching_everything_from_another_run_reproduces_that_run(tiny):
    other_out, other = run(tiny, _inputs(tiny, OTHER), hooks=_everything(tiny))
    clean_out, _ = run(tiny, _inputs(tiny, CLEAN))
    assert not torch.allclose(_final(clean_out), _final(other_out), atol=1e-3)
    patched, _ = run(tiny, _inputs(tiny, CLEAN), replace={n: other[n] for n in other.acts})
    assert torch.equal(_final(patched), _final(other_out))  # exactly: the same operations on the same values


def test_patching_one_heads_z_changes_attn_out_by_its_projection_only(tiny):
    """attn_out(patched) = attn_out(clean) + (z_other - z_clean)[head] W_O[head]^T; earlier blocks untouched."""
    layer, head = 1, 2
    _, other = run(tiny, _inputs(tiny, OTHER), hooks=[f"blocks.{layer}.attn.hook_z"])
    _, clean = run(tiny, _inputs(tiny, CLEAN), hooks=[f"blocks.{layer}.*", "blocks.1.hook_resid_pre"])
    z_other = other[f"blocks.{layer}.attn.hook_z"]

    def patch(z, point):
        z = z.clone()
        z[:, :, head] = z_other[:, :, head]
        return z

    _, patched = run(tiny, _inputs(tiny, CLEAN), hooks=[f"blocks.{layer}.*", "blocks.1.hook_resid_pre"],
                     replace={f"blocks.{layer}.attn.hook_z": patch})
    assert torch.equal(patched["blocks.1.hook_resid_pre"], clean["blocks.1.hook_resid_pre"])
    delta = torch.zeros_like(z_other)
    delta[:, :, head] = z_other[:, :, head] - clean[f"blocks.{layer}.attn.hook_z"][:, :, head]
    proj = module(tiny.model, "out", layer)
    bias = getattr(proj, "bias", None)
    want = clean[f"blocks.{layer}.hook_attn_out"].double() + _project(tiny.model, "out", layer, delta) \
        - (0 if bias is None else bias.double())
    torch.testing.assert_close(patched[f"blocks.{layer}.hook_attn_out"].double(), want, atol=1e-5, rtol=0)


def test_a_replaced_pattern_weighs_the_values():
    """Pattern of block 0 taken from another input: z = pattern_other · v (grouped kv heads repeated)."""
    loaded = tiny_loaded("llama")
    _, other = run(loaded, _inputs(loaded, OTHER), hooks=["blocks.0.attn.hook_pattern"])
    p = other["blocks.0.attn.hook_pattern"]
    _, rec = run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.0.attn.hook_v", "blocks.0.attn.hook_z",
                                                        "blocks.0.attn.hook_pattern"],
                 replace={"blocks.0.attn.hook_pattern": p})
    v = repeat_kv(rec["blocks.0.attn.hook_v"].transpose(1, 2), 4)  # (1, H, n, d)
    torch.testing.assert_close(rec["blocks.0.attn.hook_z"], (p @ v).transpose(1, 2), atol=1e-6, rtol=0)
    assert torch.equal(rec["blocks.0.attn.hook_pattern"], p)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_kv_cache_steps_record_the_rows_of_the_full_forward(arch):
    """Prefill 5 tokens, then one token per forward over the KV cache: each step's new query rows equal the
    rows of one full forward over the whole sequence."""
    from transformers import DynamicCache

    loaded = tiny_loaded(arch)
    ids = torch.tensor([CLEAN])
    points = ["blocks.*.attn.hook_pattern", "blocks.*.attn.hook_q", "blocks.*.attn.hook_k", "blocks.*.attn.hook_z",
              "blocks.*.hook_resid_post"]
    _, full = run(loaded, {"input_ids": ids}, hooks=points, use_cache=False)
    start = 5
    with record(loaded, hooks=points) as rec:
        past = DynamicCache(config=loaded.model.config)
        out = rec.forward(input_ids=ids[:, :start], past_key_values=past, use_cache=True)
        for t in range(start, len(CLEAN)):
            out = rec.forward(input_ids=ids[:, t:t + 1], past_key_values=out.past_key_values, use_cache=True)
            for i in range(loaded.facts.n_layers):
                row = rec[f"blocks.{i}.attn.hook_pattern"]  # (1, H, 1, t + 1)
                assert row.shape[-2:] == (1, t + 1)
                torch.testing.assert_close(row[0, :, 0], full[f"blocks.{i}.attn.hook_pattern"][0, :, t, :t + 1],
                                           atol=1e-5, rtol=0)
                for name, rows in (("attn.hook_q", slice(t, t + 1)), ("attn.hook_k", slice(0, t + 1)),
                                   ("attn.hook_z", slice(t, t + 1)), ("hook_resid_post", slice(t, t + 1))):
                    torch.testing.assert_close(rec[f"blocks.{i}.{name}"], full[f"blocks.{i}.{name}"][:, rows],
                                               atol=1e-5, rtol=0)


def test_gradients_reach_the_kept_activations():
    """grad=True: d(logit)/d(z) through the output projection is the logit's gradient at attn_out times W_O."""
    loaded = tiny_loaded("gpt2")
    out, rec = run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.1.attn.hook_z", "blocks.1.hook_attn_out"],
                   grad=True)
    logit = out.logits[0, -1, 7]
    dz, dout = torch.autograd.grad(logit, [rec["blocks.1.attn.hook_z"], rec["blocks.1.hook_attn_out"]])
    w = module(loaded.model, "out", 1).weight  # Conv1D: (in = head * d_head, out = d_model)
    torch.testing.assert_close(dz.reshape(1, len(CLEAN), -1), dout @ w.T, atol=1e-6, rtol=0)
    assert dz.abs().sum() > 0
    assert not any(p.grad is not None for p in loaded.model.parameters())  # nothing accumulated in the model


def _clean_model(model) -> bool:
    return all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_hooks_are_removed_and_attention_restored_even_on_an_exception():
    loaded = tiny_loaded("llama")

    def boom(x, point):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        run(loaded, _inputs(loaded, CLEAN), hooks=["*"], replace={"blocks.1.hook_mlp_out": boom})
    assert _clean_model(loaded.model)
    assert loaded.model.config._attn_implementation == "eager"
    assert adapter._ACTIVE == {}
    assert loaded.lock.acquire(blocking=False)  # released
    loaded.lock.release()
    out, rec = run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.0.attn.hook_pattern"], output_attentions=True)
    assert torch.equal(rec["blocks.0.attn.hook_pattern"], out.attentions[0])  # still works afterwards


def test_bad_hook_points_and_replacements_are_plain_errors():
    loaded = tiny_loaded("gpt2")
    with pytest.raises(BadInput, match="no hook point blocks.9.attn.hook_z"):
        run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.9.attn.hook_z"])
    with pytest.raises(BadInput, match=r"has shape \(3,\), but the activation there has shape \(1, 12, 32\)"):
        run(loaded, _inputs(loaded, CLEAN), replace={"blocks.0.hook_mlp_out": torch.zeros(3)})
    with pytest.raises(ValueError, match="eager kernel"):
        run(loaded, _inputs(loaded, CLEAN), hooks=["blocks.0.attn.hook_pattern"], kernel="sdpa")
    assert _clean_model(loaded.model) and adapter._ACTIVE == {}


def test_one_recording_per_model_at_a_time():
    loaded = tiny_loaded("bert")
    with record(loaded, hooks=["blocks.0.attn.hook_q"]):
        with pytest.raises(RuntimeError, match="already being recorded"):
            with record(loaded, hooks=["blocks.1.attn.hook_k"]):
                pass
    assert adapter._ACTIVE == {}


def test_two_models_record_in_two_threads_at_once():
    """Each thread's forward waits inside its attention for the other's: both recordings are open together,
    and each keeps its own model's weights."""
    models = [tiny_loaded("llama", seed=s) for s in (0, 1)]
    meet = threading.Barrier(2, timeout=60)
    results = {}

    def wait(q, point):
        if point.layer == 0:
            meet.wait()
        return None

    def work(k):
        out, rec = run(models[k], _inputs(models[k], CLEAN), hooks=["blocks.*.attn.hook_pattern"],
                       replace={"blocks.*.attn.hook_q": wait}, output_attentions=True)
        results[k] = (out, rec)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert set(results) == {0, 1}
    for out, rec in results.values():
        for i, a in enumerate(out.attentions):
            assert torch.equal(rec[f"blocks.{i}.attn.hook_pattern"], a)
    assert not torch.allclose(results[0][1]["blocks.0.attn.hook_pattern"], results[1][1]["blocks.0.attn.hook_pattern"])


def test_the_toy_transformer_has_the_module_level_hook_points():
    from attnviz.models.scratch import ScratchConfig, ScratchTransformer, facts_for

    cfg = ScratchConfig(kind="decoder", vocab_size=12, d_model=16, n_heads=4, n_layers=2, d_ff=32, max_len=16)
    loaded = LoadedModel("toy", ScratchTransformer(cfg).eval(), None, facts_for(cfg))
    src = (torch.arange(10) % 12)[None]
    (logits, att), rec = run(loaded, (src,), hooks=["blocks.*"])
    for i in range(2):
        torch.testing.assert_close(_project(loaded.model, "out", i, rec[f"blocks.{i}.attn.hook_z"]),
                                   rec[f"blocks.{i}.hook_attn_out"].double(), atol=1e-5, rtol=0)
        torch.testing.assert_close(rec[f"blocks.{i}.hook_resid_mid"] + rec[f"blocks.{i}.hook_mlp_out"],
                                   rec[f"blocks.{i}.hook_resid_post"], atol=1e-6, rtol=0)
    assert torch.equal(rec["blocks.0.hook_resid_post"], rec["blocks.1.hook_resid_pre"])
    with pytest.raises(BadInput, match="no hook point blocks.0.attn.hook_q"):
        run(loaded, (src,), hooks=["blocks.0.attn.hook_q"])
    zeroed, _ = run(loaded, (src,), replace={"blocks.1.attn.hook_z": torch.zeros(1, 10, 4, 4)})
    clone = copy.deepcopy(loaded.model)
    with torch.no_grad():
        clone.layers[1].attn.out_proj.weight.zero_()
    torch.testing.assert_close(zeroed[0], clone(src)[0], atol=1e-6, rtol=0)


# ------------------------------------------------------------------ one forward entry
# A model called directly (model(**inputs), model(src, ...), runner(**kwargs)): only the adapter does that.
_CALL = re.compile(r"(?<!def )(\bmodel|\.model|\brunner|\bmlm)\(\s*[^)\s]")


def test_features_run_the_model_through_the_adapter():
    files = list((ROOT / "attnviz").rglob("*.py")) + list((ROOT / "app_pages").glob("*.py")) + [ROOT / "app.py"]
    def code(p):  # without comments
        return "\n".join(line.split("#")[0] for line in p.read_text(encoding="utf-8").splitlines())

    for stray in ("out = loaded.model(**e.inputs)", "logits, _ = model(src, tgt_in)", "model(torch.from_numpy(x))",
                  "s.model(inputs_embeds=x)", "return runner(*args)", "mlm(**inputs)"):
        assert _CALL.search(stray), stray
    assert not _CALL.search("def model(self):") and not _CALL.search("load_model(key)")
    calling = {p.relative_to(ROOT).as_posix() for p in files if _CALL.search(code(p))}
    calling -= {"attnviz/models/adapter.py"}
    assert calling == set()  # every feature runs the model through the adapter, training steps included


# ------------------------------------------------------------------ starting from a block
def _toy():
    from attnviz.models.scratch import ScratchConfig, ScratchTransformer, facts_for

    cfg = ScratchConfig(kind="decoder", vocab_size=12, d_model=16, n_heads=4, n_layers=3, d_ff=32, max_len=16)
    return LoadedModel("toy", ScratchTransformer(cfg).eval(), None, facts_for(cfg))


def _output(out):
    if isinstance(out, tuple):  # the toy model: (logits, attentions)
        return out[0]
    return out.logits if getattr(out, "logits", None) is not None else out.last_hidden_state


@pytest.mark.parametrize("which", ["minilm", "gpt2", "llama", "toy"])
def test_starting_from_a_block_equals_the_full_forward(which, request):
    """From every block i, given blocks.{i}.hook_resid_pre, run_from gives the full forward's output; a patched
    residual gives what a full forward with that residual replaced gives; the earlier blocks do not run."""
    if which == "minilm":
        loaded = request.getfixturevalue("minilm")
    else:
        loaded = _toy() if which == "toy" else tiny_loaded(which)
    inputs = ((torch.arange(10) % 12)[None],) if which == "toy" else _inputs(loaded, CLEAN)
    other = ((torch.arange(10) * 5 % 12)[None],) if which == "toy" else _inputs(loaded, OTHER)
    full, rec = run(loaded, inputs, hooks=["blocks.*.hook_resid_pre"])
    _, rec_other = run(loaded, other, hooks=["blocks.*.hook_resid_pre"])
    n_layers = loaded.facts.n_layers
    assert n_layers >= 2
    for i in range(n_layers):
        resid = rec[f"blocks.{i}.hook_resid_pre"]
        out, kept = adapter.run_from(loaded, i, resid, inputs, hooks=["blocks.*.hook_resid_post"])
        torch.testing.assert_close(_output(out), _output(full), atol=1e-5, rtol=0)
        assert sorted(kept.acts) == [f"blocks.{j}.hook_resid_post" for j in range(i, n_layers)]  # 0..i-1 skipped
        patched = rec_other[f"blocks.{i}.hook_resid_pre"]
        want, _ = run(loaded, inputs, replace={f"blocks.{i}.hook_resid_pre": patched})
        got, _ = adapter.run_from(loaded, i, patched, inputs)
        torch.testing.assert_close(_output(got), _output(want), atol=1e-5, rtol=0)
        if i:
            assert (_output(got) - _output(full)).abs().max() > 1e-3  # the patched residual really is used
    again, _ = run(loaded, inputs)  # every block is back in place afterwards
    torch.testing.assert_close(_output(again), _output(full), atol=0, rtol=0)


def test_starting_from_a_block_is_refused_where_the_first_block_is_special():
    with pytest.raises(BadInput, match="relative position bias in its first block"):
        adapter.run_from(tiny_loaded("t5"), 1, torch.zeros(1, len(CLEAN), 32), _inputs(tiny_loaded("t5"), CLEAN))
    loaded = tiny_loaded("gpt2")
    with pytest.raises(BadInput, match="has blocks 0 to 1"):
        adapter.run_from(loaded, 2, torch.zeros(1, len(CLEAN), 32), _inputs(loaded, CLEAN))


def test_the_toy_models_values_are_read_at_their_projection():
    loaded = _toy()
    src = (torch.arange(10) % 12)[None]
    _, rec = run(loaded, (src,), hooks=["blocks.*.hook_resid_pre", "blocks.*.attn.hook_v"])
    with torch.inference_mode():
        for i in range(3):
            block = loaded.model.layers[i]
            by_hand = block.attn.v_proj(block.ln1(rec[f"blocks.{i}.hook_resid_pre"])).view(1, 10, 4, 4)
            assert torch.equal(rec[f"blocks.{i}.attn.hook_v"], by_hand)
