"""Ablation hooks: no heads = no change, a head = a change only downstream, same as zeroed weights."""
import copy

import numpy as np
import pytest
import torch

from attnviz.errors import BadInput
from attnviz.extract import extract
from attnviz.models.families import output_projection
from attnviz.metrics.ablation import (attention_change, check_heads, cosine_distance, effect,
                                      rank_heads, run)
from attnviz.models.hf import model_facts
from attnviz.types import LoadedModel

TEXT = "The cat sat on the mat because it was tired."


def _tiny(kind, tokenizer):
    import transformers as tf

    torch.manual_seed(0)
    vocab = tokenizer.vocab_size
    if kind == "bert":
        config = tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                               vocab_size=vocab)
        model = tf.BertModel(config, add_pooling_layer=False)
    elif kind == "bert-mlm":
        config = tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                               vocab_size=vocab)
        model = tf.BertForMaskedLM(config)
    elif kind == "llama":
        config = tf.LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                intermediate_size=64, vocab_size=vocab, max_position_embeddings=128)
        model = tf.LlamaForCausalLM(config)
    else:
        config = tf.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=vocab, n_positions=128)
        model = tf.GPT2LMHeadModel(config)
    model.config._attn_implementation = "eager"
    model.set_attn_implementation("eager") if hasattr(model, "set_attn_implementation") else None
    model.eval()
    return LoadedModel(kind, model, tokenizer, model_facts(model.config, kind))


@pytest.fixture(scope="module", params=["bert", "llama", "gpt2"])
def tiny(request, minilm):
    return _tiny(request.param, minilm.tokenizer)


def _no_hooks(model):
    return all(not m._forward_pre_hooks for m in model.modules())


def test_no_heads_changes_nothing(tiny):
    result = extract(tiny, TEXT)
    base = run(tiny, result)
    np.testing.assert_allclose(base.attention, result.attention, atol=1e-6)
    again = run(tiny, result, set())
    np.testing.assert_array_equal(base.embedding, again.embedding)
    assert cosine_distance(base.embedding, again.embedding) == pytest.approx(0.0, abs=1e-7)
    assert float(np.linalg.norm(base.embedding)) == pytest.approx(1.0, abs=1e-5)
    assert _no_hooks(tiny.model)


def test_ablating_a_head_changes_outputs_downstream_only(tiny):
    result = extract(tiny, TEXT)
    base = run(tiny, result)
    abl = run(tiny, result, {(0, 1)})
    assert _no_hooks(tiny.model)  # hooks removed afterwards
    assert effect(base, abl) > 1e-6
    change = attention_change(base.attention, abl.attention)
    assert change[0] == pytest.approx(0.0, abs=1e-6)  # the ablated layer's own weights do not change
    assert change[1] > 1e-5  # the next layer's do
    if tiny.facts.causal:
        assert base.next_probs is not None and base.next_probs.sum() == pytest.approx(1.0, abs=1e-4)


def test_hook_equals_zeroed_output_weights(tiny):
    """Independent check: zero the head's input columns of the output projection in a copy."""
    result = extract(tiny, TEXT)
    layer, head = 1, 2
    abl = run(tiny, result, {(layer, head)})
    clone = LoadedModel(tiny.key, copy.deepcopy(tiny.model), tiny.tokenizer, tiny.facts)
    proj = output_projection(clone.model, layer)
    with torch.no_grad():
        if type(proj).__name__ == "Conv1D":  # GPT-2 stores the weight as (in, out)
            d_head = proj.weight.shape[0] // 4
            proj.weight[head * d_head:(head + 1) * d_head, :] = 0
        else:
            d_head = proj.in_features // 4
            proj.weight[:, head * d_head:(head + 1) * d_head] = 0
    zeroed = run(clone, result)
    np.testing.assert_allclose(abl.embedding, zeroed.embedding, atol=1e-5)
    np.testing.assert_allclose(abl.attention, zeroed.attention, atol=1e-5)


def test_bad_heads_plain_messages():
    with pytest.raises(BadInput, match="every head"):
        check_heads({(l, h) for l in range(2) for h in range(4)}, 2, 4)
    with pytest.raises(BadInput, match="does not exist"):
        check_heads({(2, 0)}, 2, 4)
    with pytest.raises(BadInput, match="does not exist"):
        check_heads({(0, -1)}, 2, 4)
    assert check_heads([(1, 3), (1, 3)], 2, 4) == frozenset({(1, 3)})


def test_rank_heads_with_progress(minilm):
    loaded = _tiny("bert", minilm.tokenizer)
    result = extract(loaded, TEXT)
    calls = []
    ranking = rank_heads(loaded, result, progress=lambda done, total: calls.append((done, total)))
    assert ranking.shape == (2, 4)
    assert calls[-1] == (8, 8) and len(calls) == 8
    assert (ranking > 0).all()
    base = run(loaded, result)
    assert ranking[1, 2] == pytest.approx(effect(base, run(loaded, result, {(1, 2)})), rel=1e-5)


def test_masked_lm_prediction_change(minilm):
    loaded = _tiny("bert-mlm", minilm.tokenizer)
    result = extract(loaded, "The cat sat on the [MASK].")
    base = run(loaded, result)
    mask_pos = result.tokens.index("[MASK]")
    assert list(base.masked_probs) == [mask_pos]
    assert base.masked_probs[mask_pos].sum() == pytest.approx(1.0, abs=1e-4)
    assert effect(base, run(loaded, result, {(0, 0), (1, 3)})) > 0


def test_minilm_sentence_embedding_and_ablation(minilm):
    result = extract(minilm, TEXT)
    base = run(minilm, result)
    # the model's own definition: masked mean of the last hidden states, L2-normalised
    ids = torch.tensor([list(result.token_ids)])
    with torch.inference_mode():
        hidden = minilm.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state[0]
    ref = hidden.mean(0) / hidden.mean(0).norm()
    np.testing.assert_allclose(base.embedding, ref.numpy(), atol=1e-5)
    abl = run(minilm, result, {(0, 2), (3, 7)})
    assert 1e-5 < cosine_distance(base.embedding, abl.embedding) < 1
    change = attention_change(base.attention, abl.attention)
    assert change[0] == pytest.approx(0, abs=1e-6) and change[1:].min() > 1e-4
    assert _no_hooks(minilm.model)
