"""The bilinear split of a head's pre-softmax score on a tiny random Llama (RoPE, grouped-query attention): the
terms add up to q · k × scaling read at the adapter's hook points, and a softmax over the split scores of every
key gives the head's attention row as the model's own eager attention computed it."""
import numpy as np
import pytest
import torch

from attnviz.causal.scores import split_score
from attnviz.causal.tasks import ioi
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from tests.tiny_models import tiny_loaded


@pytest.fixture(scope="module")
def llama():
    loaded = tiny_loaded("llama", seed=3)
    return loaded, ioi(loaded.tokenizer, n_pairs=1).pairs[0].clean


def test_the_terms_add_up_to_the_heads_score(llama):
    loaded, ids = llama
    for layer, head, query, key in [(0, 0, 5, 2), (1, 3, 13, 9), (1, 1, 7, 7)]:
        found = split_score(loaded, ids, layer, head, query, key)
        assert found.terms.shape == (2 * layer + 2, 2 * layer + 2)
        assert found.labels[0] == "embeddings" and found.labels[-1] == "bias"
        assert found.terms.sum() == pytest.approx(found.score, abs=1e-6)
        np.testing.assert_array_equal(found.terms[-1], 0.0)  # a Llama has no norm or projection biases
        if layer:
            assert np.abs(found.terms[1:-1, :-1]).max() > 1e-5  # the earlier block's outputs take part


def test_a_softmax_over_the_split_scores_is_the_models_attention_row(llama):
    loaded, ids = llama
    layer, head, query = 1, 2, 11
    _, rec = run(loaded, {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids))},
                 hooks=[f"blocks.{layer}.attn.hook_pattern"])
    want = rec[f"blocks.{layer}.attn.hook_pattern"][0, head, query, :query + 1].double().numpy()
    scores = np.array([split_score(loaded, ids, layer, head, query, k).terms.sum() for k in range(query + 1)])
    got = np.exp(scores - scores.max())
    np.testing.assert_allclose(got / got.sum(), want, atol=1e-6)


def test_models_without_separate_query_projections_are_refused(llama):
    loaded, ids = llama
    with pytest.raises(BadInput, match="key position at or before the query position"):
        split_score(loaded, ids, 0, 0, 3, 5)
    gpt2 = tiny_loaded("gpt2")
    with pytest.raises(BadInput, match="separate query and key projections"):
        split_score(gpt2, ids, 0, 0, 3, 1)
