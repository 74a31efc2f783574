"""Pruning curves on a tiny random Llama: removal orders and masks by hand, and every point of a curve against one
full forward per point with the removed heads replaced by a plain loop."""
import numpy as np
import pytest
import torch

from attnviz.causal import pruning
from attnviz.causal.tasks import ioi
from attnviz.models.adapter import run
from tests.tiny_models import tiny_loaded


def test_orders_and_masks_by_hand():
    importance = np.array([[0.3, -0.05], [0.0, -0.9]])
    entropy = np.array([[0.2, 0.9], [0.5, 0.1]])
    got = pruning.orders(importance, entropy)
    assert got["patching (least important first)"].tolist() == [2, 1, 0, 3]
    assert got["entropy (broadest first)"].tolist() == [1, 2, 0, 3]
    assert sorted(got["random"].tolist()) == [0, 1, 2, 3]
    masks = pruning.removed_masks(np.array([2, 1, 0, 3]), np.array([0, 1, 3]), 2, 2)
    assert masks[0].sum() == 0
    assert masks[1].tolist() == [[False, False], [True, False]]
    assert masks[2].tolist() == [[True, True], [True, False]]
    assert pruning.counts_for(270, 4).tolist() == [0, 68, 135, 202, 270]


def test_head_entropy_by_hand():
    # one layer, two heads on 3 tokens; row 0 sees one key and is left out
    sharp = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    flat = np.array([[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    got = pruning.head_entropy([np.stack([sharp, flat])])
    np.testing.assert_allclose(got, [[0.0, 1.0]], atol=1e-5)


@pytest.fixture(scope="module")
def tiny():
    loaded = tiny_loaded("llama", seed=3)
    return loaded, ioi(loaded.tokenizer, n_pairs=2).pairs


def _diff(loaded, pair, ids, removed=None, means=None) -> float:
    """The logit difference of one full forward of `ids` with the heads in `removed` set to `means`, by hand."""
    replace = {}
    for layer, head in removed or ():
        def put(z, point, head=head, layer=layer):
            z = z.clone()
            z[:, :, head] = means[layer, head]
            return z
        replace.setdefault(f"blocks.{layer}.attn.hook_z", []).append(put)
    chained = {name: (lambda z, point, fs=fs: _chain(z, point, fs)) for name, fs in replace.items()}
    out, _ = run(loaded, {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids))},
                 replace=chained)
    last = out.logits[0, -1].double()
    return float(last[pair.answer] - last[pair.wrong])


def _chain(z, point, fs):
    for f in fs:
        z = f(z, point)
    return z


@pytest.mark.parametrize("mode", ["mean", "zero"])
def test_each_point_equals_a_forward_with_those_heads_removed(tiny, mode):
    loaded, pairs = tiny
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    importance = np.arange(n_layers * n_heads, dtype=float).reshape(n_layers, n_heads)[::-1]
    got = pruning.pruning_curves(loaded, pairs, importance, mode=mode, n_points=4)
    assert got.counts.tolist() == [0, 2, 4, 6, 8]
    zs = []
    for pair in pairs:
        _, rec = run(loaded, {"input_ids": torch.tensor([pair.clean])}, hooks=["blocks.*.attn.hook_z"])
        zs.append(torch.cat([rec[f"blocks.{i}.attn.hook_z"][0][None] for i in range(n_layers)]))  # (layer, n, h, d)
    means = torch.cat(zs, 1).mean(1) if mode == "mean" else torch.zeros(n_layers, n_heads, zs[0].shape[-1])
    clean = np.mean([_diff(loaded, p, p.clean) for p in pairs])
    corrupted = np.mean([_diff(loaded, p, p.corrupted) for p in pairs])
    order = got.orders["patching (least important first)"]
    assert order[:2].tolist() == [4, 5]  # the smallest |importance| first: layer 1, heads 0 and 1
    for k, count in enumerate(got.counts):
        removed = [divmod(int(i), n_heads) for i in order[:count]]
        diff = np.mean([_diff(loaded, p, p.clean, removed, means) for p in pairs])
        want = (diff - corrupted) / (clean - corrupted)
        assert got.metric["patching (least important first)"][k] == pytest.approx(want, abs=1e-4)
    assert got.metric["random"][0] == pytest.approx(1.0, abs=1e-5)
    # every order ends with every head removed: the same point
    ends = [v[-1] for v in got.metric.values()]
    assert max(ends) - min(ends) < 1e-5
