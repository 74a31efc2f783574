"""Activation patching on tiny random causal models: the metric's scale, and every patched component against a
plain loop that runs one full forward per component with the activation set by hand through the adapter."""
import numpy as np
import pytest
import torch

from attnviz.causal import patching
from attnviz.causal.tasks import Metric, ioi
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from tests.tiny_models import tiny_loaded


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def setup(request):
    loaded = tiny_loaded(request.param, seed=3)
    pair = ioi(loaded.tokenizer, n_pairs=2).pairs[0]
    return loaded, pair, patching.cache(loaded, pair)


def _by_hand(loaded, pair, replace=None) -> float:
    """The logit difference (answer - wrong) of one full corrupted forward with `replace`, computed here."""
    ids = pair.corrupted
    out, _ = run(loaded, {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids))},
                 replace=replace or {})
    last = out.logits[0, -1].double()
    return float(last[pair.answer] - last[pair.wrong])


def _raw(runs, got):
    """Normalised scores back to logit differences (random tiny models put clean and corrupted close together,
    so the comparison is made on the unscaled values)."""
    m = runs.metric
    return m.corrupted + np.asarray(got) * (m.clean - m.corrupted)


def test_the_metric_scores_clean_one_and_corrupted_zero(setup):
    loaded, pair, runs = setup
    assert runs.metric.corrupted == pytest.approx(_by_hand(loaded, pair), abs=1e-6)
    assert runs.metric(runs.metric.clean) == 1.0 and runs.metric(runs.metric.corrupted) == 0.0
    assert Metric(3.0, 1.0)(2.0) == 0.5 and Metric(3.0, 1.0)(-1.0) == -1.0 and Metric(1.0, 3.0)(0.0) == 1.5
    # the whole clean residual stream entering block 0 (its embeddings) restores the clean run
    whole = patching._from_layer(loaded, runs, 0, runs.clean["blocks.0.hook_resid_pre"])
    assert _raw(runs, whole[0]) == pytest.approx(runs.metric.clean, abs=2e-6)
    with pytest.raises(BadInput, match="same score"):
        Metric(2.0, 2.0)


def test_patching_the_residual_stream_equals_one_forward_per_position(setup):
    loaded, pair, runs = setup
    got = patching.patch_residual(loaded, runs)
    assert got.shape == (loaded.facts.n_layers, pair.n)
    changed = [p for p in range(pair.n) if pair.clean[p] != pair.corrupted[p]]
    assert len(changed) == 1  # the repeated name
    for i in range(loaded.facts.n_layers):
        for p in range(pair.n):
            clean = runs.clean[f"blocks.{i}.hook_resid_pre"]

            def put(x, point, p=p, clean=clean):
                x = x.clone()
                x[:, p] = clean[:, p]
                return x

            want = _by_hand(loaded, pair, {f"blocks.{i}.hook_resid_pre": put})
            assert _raw(runs, got[i, p]) == pytest.approx(want, abs=2e-6)
    # at block 0 the changed position carries the whole difference: patched, the input is the clean one
    unchanged = [p for p in range(pair.n) if p not in changed]
    np.testing.assert_allclose(_raw(runs, got[0, unchanged]), runs.metric.corrupted, atol=2e-6, rtol=0)
    in_three = patching.patch_residual(loaded, runs, batch=5)  # 14 positions in batches of 5, 5 and 4
    np.testing.assert_allclose(_raw(runs, in_three), _raw(runs, got), atol=1e-7, rtol=0)
    assert _raw(runs, got[0, changed[0]]) == pytest.approx(runs.metric.clean, abs=2e-6)  # the whole clean input


def test_patching_each_heads_output_equals_one_forward_per_head(setup):
    loaded, pair, runs = setup
    got = patching.patch_heads(loaded, runs)
    assert got.shape == (loaded.facts.n_layers, loaded.facts.n_heads)
    for i in range(loaded.facts.n_layers):
        clean = runs.clean[f"blocks.{i}.attn.hook_z"]
        for h in range(loaded.facts.n_heads):
            def put(z, point, h=h, clean=clean):
                z = z.clone()
                z[:, :, h] = clean[:, :, h]
                return z

            want = _by_hand(loaded, pair, {f"blocks.{i}.attn.hook_z": put})
            assert _raw(runs, got[i, h]) == pytest.approx(want, abs=2e-6)
    assert np.abs(_raw(runs, got) - runs.metric.corrupted).max() > 1e-4  # some head matters: the comparison is not between zeros


def test_patching_each_mlp_equals_one_forward_per_layer(setup):
    loaded, pair, runs = setup
    got = patching.patch_mlps(loaded, runs)
    want = [_by_hand(loaded, pair, {f"blocks.{i}.hook_mlp_out": runs.clean[f"blocks.{i}.hook_mlp_out"]})
            for i in range(loaded.facts.n_layers)]
    np.testing.assert_allclose(_raw(runs, got), want, atol=2e-6, rtol=0)
    assert np.abs(_raw(runs, got) - runs.metric.corrupted).max() > 1e-4


def test_heads_and_mlps_in_one_batch_equal_their_own_forwards(setup):
    loaded, pair, runs = setup
    heads, mlps = patching.patch_components(loaded, runs)
    np.testing.assert_allclose(_raw(runs, heads), _raw(runs, patching.patch_heads(loaded, runs)), atol=2e-6, rtol=0)
    np.testing.assert_allclose(_raw(runs, mlps), _raw(runs, patching.patch_mlps(loaded, runs)), atol=2e-6, rtol=0)


def test_clean_logits_are_each_clean_runs_last_position(setup):
    loaded, pair, runs = setup
    other = ioi(loaded.tokenizer, n_pairs=2).pairs[1]
    got = patching.clean_logits(loaded, [pair, other])
    assert got.shape == (2, loaded.model.config.vocab_size)
    np.testing.assert_allclose(got[0], runs.clean_logits.numpy(), atol=1e-6, rtol=0)
    out, _ = run(loaded, {"input_ids": torch.tensor([other.clean]), "attention_mask": torch.ones(1, other.n)})
    np.testing.assert_allclose(got[1], out.logits[0, -1].numpy(), atol=1e-6, rtol=0)


def test_a_model_is_refused_a_task_it_cannot_score():
    encoder, decoder = tiny_loaded("bert"), tiny_loaded("llama")
    with pytest.raises(BadInput, match="is an encoder, so it has no next-token prediction to score"):
        patching.cache(encoder, ioi(encoder.tokenizer, n_pairs=1).pairs[0])
    with pytest.raises(BadInput, match="needs a causal language model such as SmolLM2 .* or a sentence encoder"):
        patching.require_task(tiny_loaded("t5"))
    patching.require_task(decoder)  # no pair: the model kind alone is fine


def test_one_head_by_position_and_its_pattern_and_values_apart_equal_forwards_by_hand(setup):
    loaded, pair, runs = setup
    layer, head = 1, 3  # the tiny Llama's heads 2 and 3 share a key/value head
    got = patching.patch_head_detail(loaded, pair, layer, head)
    at = f"blocks.{layer}.attn"
    clean_z = runs.clean[f"{at}.hook_z"]
    for p in range(pair.n):
        def put(z, point, p=p):
            z = z.clone()
            z[:, p, head] = clean_z[:, p, head]
            return z

        assert _raw(runs, got.by_position[p]) == pytest.approx(_by_hand(loaded, pair, {f"{at}.hook_z": put}), abs=2e-6)
    assert got.whole == pytest.approx(patching.patch_heads(loaded, runs)[layer, head], abs=1e-6)
    # pattern only: this head's softmax weights from the clean run, applied by the model to its own (corrupted) values
    _, clean_rec = run(loaded, patching.inputs_of(pair.clean), hooks=[f"{at}.hook_pattern", f"{at}.hook_v"],
                       kernel="eager")
    _, bad_rec = run(loaded, patching.inputs_of(pair.corrupted), hooks=[f"{at}.hook_pattern"], kernel="eager")

    def pattern(w, point):
        w = w.clone()
        w[:, head] = clean_rec[f"{at}.hook_pattern"][:, head]
        return w

    assert _raw(runs, got.pattern_only) == pytest.approx(
        _by_hand(loaded, pair, {f"{at}.hook_pattern": pattern}), abs=2e-6)
    # values only: the corrupted weights over the clean values of the head's key/value head (Llama: heads 2 and 3
    # share key/value head 1; GPT-2: one per head)
    v = clean_rec[f"{at}.hook_v"][0]  # (n, kv_head, d_head)
    kv = {"llama": 1, "gpt2": 3}[loaded.key.split("-")[1]]
    assert v.shape[1] == {"llama": 2, "gpt2": 4}[loaded.key.split("-")[1]]
    z_values = bad_rec[f"{at}.hook_pattern"][0, head] @ v[:, kv]

    def values(z, point):
        z = z.clone()
        z[:, :, head] = z_values
        return z

    assert _raw(runs, got.values_only) == pytest.approx(_by_hand(loaded, pair, {f"{at}.hook_z": values}), abs=2e-6)
    assert len({round(v, 6) for v in (got.whole, got.pattern_only, got.values_only)}) == 3  # three different patches
    with pytest.raises(BadInput, match="head below 4"):
        patching.patch_head_detail(loaded, pair, 0, 4)
