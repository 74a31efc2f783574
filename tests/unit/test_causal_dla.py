"""Direct logit attribution on tiny random causal models: the parts add up to the model's logit difference, and
each head's part equals its output taken from the model's own output projection, read through the final norm's
frozen scale computed here by hand."""
import numpy as np
import pytest
import torch

from attnviz.causal.dla import direct_attribution
from attnviz.causal.tasks import ioi
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from tests.tiny_models import tiny_loaded


def _with_biases(loaded):
    """GPT-2 starts with zero biases: random ones make the bias part count."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in loaded.model.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    return loaded


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def case(request):
    loaded = tiny_loaded(request.param, seed=5)
    if request.param == "gpt2":
        loaded = _with_biases(loaded)
    return loaded, ioi(loaded.tokenizer, n_pairs=1).pairs[0]


def test_the_parts_add_up_to_the_logit_difference(case):
    loaded, pair = case
    for which in ("clean", "corrupted"):
        found = direct_attribution(loaded, pair, which)
        ids = torch.tensor([getattr(pair, which)])
        out, _ = run(loaded, {"input_ids": ids, "attention_mask": torch.ones_like(ids)})
        last = out.logits[0, -1].double()
        want = float(last[pair.answer] - last[pair.wrong])
        assert found.total == pytest.approx(want, abs=1e-6)
        assert found.parts_sum == pytest.approx(want, abs=1e-5)
        assert found.heads.shape == (loaded.facts.n_layers, loaded.facts.n_heads)
        assert np.abs(found.heads).min() > 0 and found.mlps.shape == (loaded.facts.n_layers,)
    if loaded.facts.architecture.startswith("GPT2"):
        assert abs(found.biases) > 1e-3  # the biases' part is really there


def test_each_heads_part_is_its_own_output_through_the_frozen_norm(case):
    """Head h's output = attn_out with only head h kept minus attn_out with no head kept (the bias), from the
    model's forward; read through w * (x - mean) / sd (LayerNorm) or w * x / rms (RMSNorm) of the final state."""
    loaded, pair = case
    found = direct_attribution(loaded, pair)
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    ids = torch.tensor([pair.clean])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    _, rec = run(loaded, inputs, hooks=[f"blocks.{n_layers - 1}.hook_resid_post"])
    x = rec[f"blocks.{n_layers - 1}.hook_resid_post"][0, -1].double()
    model = loaded.model
    if hasattr(model, "transformer"):  # GPT-2: LayerNorm
        norm = model.transformer.ln_f
        centre = lambda v: v - v.mean()  # noqa: E731
        sd = torch.sqrt(x.var(unbiased=False) + norm.eps)
    else:  # Llama: RMSNorm
        norm = model.model.norm
        centre = lambda v: v  # noqa: E731
        sd = torch.sqrt(x.pow(2).mean() + norm.variance_epsilon)
    w_u = model.get_output_embeddings().weight.double()
    delta = w_u[pair.answer] - w_u[pair.wrong]

    def read(v):
        with torch.no_grad():
            return float((norm.weight.double() * centre(v) / sd) @ delta)

    for i in range(n_layers):
        def keep(only):
            def fn(z, point):
                z = z.clone()
                for h in range(n_heads):
                    if h != only:
                        z[:, :, h] = 0
                return z
            _, r = run(loaded, inputs, hooks=[f"blocks.{i}.hook_attn_out"], replace={f"blocks.{i}.attn.hook_z": fn})
            return r[f"blocks.{i}.hook_attn_out"][0, -1].double()

        bias_only = keep(-1)
        for h in range(n_heads):
            assert found.heads[i, h] == pytest.approx(read(keep(h) - bias_only), abs=1e-6)


def test_a_heads_direct_attribution_split_by_the_position_it_reads():
    from attnviz.causal.dla import by_source

    loaded = tiny_loaded("llama", seed=3)
    pair = ioi(loaded.tokenizer, n_pairs=1).pairs[0]
    whole = direct_attribution(loaded, pair)
    for layer, head in ((0, 1), (1, 3)):
        parts = by_source(loaded, pair, layer, head)
        assert parts.shape == (pair.n,)
        assert parts.sum() == pytest.approx(whole.heads[layer, head], abs=1e-6)  # through hook_z, read apart
        assert np.abs(parts).max() > 0 and np.count_nonzero(np.abs(parts) > 1e-12) > 1
    with pytest.raises(BadInput, match="head below 4"):
        by_source(loaded, pair, 0, 9)
