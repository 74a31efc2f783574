"""Learned position embeddings read from real and tiny random models."""
from __future__ import annotations

import numpy as np
import pytest

from attnviz import positional as pe


def _loaded(model, name):
    from attnviz.models.hf import model_facts
    from attnviz.types import LoadedModel

    model.eval()
    return LoadedModel(key=name, model=model, tokenizer=None, facts=model_facts(model.config, name))


def test_minilm_table_is_the_models_own_weights(minilm):
    import torch

    lp = pe.position_embeddings(minilm)
    assert lp.matrix.shape == (512, 384) and lp.offset == 0 and lp.n_positions == 512
    assert lp.module == "embeddings.position_embeddings"
    weights = minilm.model.state_dict()["embeddings.position_embeddings.weight"].numpy()
    assert np.array_equal(lp.matrix, weights)
    assert not lp.matrix.flags.writeable
    assert not np.shares_memory(lp.matrix, weights)  # a copy: the shared model stays untouched
    # what the model really adds: capture the LayerNorm input (word + token type + position)
    ids = minilm.tokenizer("the cat sat", return_tensors="pt")["input_ids"]
    seen = {}
    handle = minilm.model.embeddings.LayerNorm.register_forward_pre_hook(lambda m, a: seen.setdefault("x", a[0]))
    try:
        with minilm.lock, torch.no_grad():
            minilm.model(input_ids=ids)
    finally:
        handle.remove()
    emb = minilm.model.embeddings
    added = seen["x"][0] - emb.word_embeddings.weight[ids[0]] - emb.token_type_embeddings.weight[0]
    assert np.allclose(added.detach().numpy(), lp.positions[: ids.shape[1]], atol=1e-6)


def test_gpt2_has_1024_learned_positions():
    from transformers import GPT2Config, GPT2Model

    lp = pe.position_embeddings(_loaded(GPT2Model(GPT2Config(n_layer=1, n_embd=16, n_head=2)), "tiny-gpt2"))
    assert lp.module == "wpe" and lp.matrix.shape == (1024, 16) and lp.n_positions == 1024


def test_roberta_reserved_rows_are_skipped():
    from transformers import RobertaConfig, RobertaModel

    cfg = RobertaConfig(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=66, vocab_size=100)
    lp = pe.position_embeddings(_loaded(RobertaModel(cfg), "tiny-roberta"))
    assert lp.offset == 2 and lp.n_positions == 64 and lp.positions.shape == (64, 16)


def test_rope_model_has_no_table_and_says_so():
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, num_key_value_heads=1,
                      intermediate_size=32, vocab_size=100, max_position_embeddings=64)
    with pytest.raises(pe.NoPositionEmbeddings) as info:
        pe.position_embeddings(_loaded(LlamaModel(cfg), "tiny-llama"))
    msg = str(info.value)
    assert "tiny-llama has no position-embedding matrix" in msg and "RoPE" in msg and "base theta" in msg
