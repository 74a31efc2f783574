"""Attribution patching against exact activation patching: equal on a tiny Llama made linear (uniform attention,
no norms, linear MLPs), where the first-order estimate is exact."""
import numpy as np
import pytest
import torch

from attnviz.causal import patching
from attnviz.causal.attribution import attribution_patching
from attnviz.causal.tasks import induction
from tests.tiny_models import tiny_loaded


def _linear_llama():
    """A tiny Llama whose logits are a linear function of its embeddings: queries and keys zero (every position
    attends uniformly to the ones before it), norms replaced by the identity, each MLP a random linear map; values
and output projections scaled up so that what a position reads from the others weighs as much as its own token."""
    loaded = tiny_loaded("llama", seed=7)
    model = loaded.model.model
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for layer in model.layers:
            layer.self_attn.q_proj.weight.zero_()
            layer.self_attn.k_proj.weight.zero_()
            layer.self_attn.v_proj.weight.mul_(10)  # the other positions' part comparable to the token's own
            layer.self_attn.o_proj.weight.mul_(10)
            layer.input_layernorm = torch.nn.Identity()
            layer.post_attention_layernorm = torch.nn.Identity()
            mlp = torch.nn.Linear(32, 32, bias=True)
            mlp.weight.copy_(torch.randn(32, 32, generator=gen) * 0.3)
            mlp.bias.copy_(torch.randn(32, generator=gen) * 0.3)
            layer.mlp = mlp
        model.norm = torch.nn.Identity()
    return loaded


def test_the_estimate_equals_exact_patching_on_a_linear_model():
    loaded = _linear_llama()
    pair = induction(loaded.tokenizer, n_pairs=1, length=6).pairs[0]
    runs = patching.cache(loaded, pair)
    got = attribution_patching(loaded, pair)
    assert got.metric.clean == pytest.approx(runs.metric.clean, abs=1e-6)
    assert got.metric.corrupted == pytest.approx(runs.metric.corrupted, abs=1e-6)
    gap = abs(runs.metric.clean - runs.metric.corrupted)
    tol = 1e-5 / gap  # float32 logit differences, on the normalised scale
    assert tol < 2e-3
    exact_resid = patching.patch_residual(loaded, runs)
    exact_heads = patching.patch_heads(loaded, runs)
    exact_mlps = patching.patch_mlps(loaded, runs)
    np.testing.assert_allclose(got.residual, exact_resid, atol=tol, rtol=0)
    np.testing.assert_allclose(got.heads, exact_heads, atol=tol, rtol=0)
    np.testing.assert_allclose(got.mlps, exact_mlps, atol=tol, rtol=0)
    # linear: the patches of one layer's positions add up to patching them all (the clean run, 1)
    np.testing.assert_allclose(exact_resid.sum(axis=1), 1.0, atol=tol * pair.n)
    assert np.abs(exact_heads).max() > 0.01 and np.abs(exact_mlps).max() > 0.01  # not a comparison of zeros


def test_the_estimate_reuses_the_clean_cache():
    loaded = tiny_loaded("llama", seed=3)
    pair = induction(loaded.tokenizer, n_pairs=1, length=6).pairs[0]
    runs = patching.cache(loaded, pair)
    alone, reused = attribution_patching(loaded, pair), attribution_patching(loaded, pair, runs)
    np.testing.assert_allclose(alone.heads, reused.heads, atol=1e-9, rtol=0)
    # on the real (non-linear) model the estimate of the first block's residual stream is near, not equal
    exact = patching.patch_residual(loaded, runs)
    assert np.abs(alone.residual - exact).max() > 1e-7
