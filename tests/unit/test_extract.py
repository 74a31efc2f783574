"""Extraction: shapes, row sums, token alignment, special tokens, pairs, truncation, architectures."""
import numpy as np
import pytest
import torch

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.extract import extract
from tests.tiny_models import ARCHES, tiny_loaded

SENTENCE = "The cat sat on the mat because it was tired."


def test_shape_dtype_and_rows_sum_to_one(minilm):
    r = extract(minilm, SENTENCE)
    assert r.attention.dtype == np.float32
    assert r.attention.shape == (6, 12, r.seq_len, r.seq_len)
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    assert not r.attention.flags.writeable  # shared through caches: read-only


def test_tokens_align_with_tokenizer(minilm):
    r = extract(minilm, "Unbelievably, the cats sat.")
    raw = minilm.tokenizer.convert_ids_to_tokens(list(r.token_ids))
    assert raw[0] == "[CLS]" and raw[-1] == "[SEP]"
    assert [t for t in r.tokens] == raw  # WordPiece display keeps "##" on continuation pieces
    assert r.continuation.tolist() == [t.startswith("##") for t in raw]
    assert r.special_mask.tolist() == [t in ("[CLS]", "[SEP]") for t in raw]


def test_first_layer_matches_independent_computation(minilm):
    """Layer 0 recomputed by hand from BERT's own Q/K weights and embedding output."""
    r = extract(minilm, SENTENCE)
    model = minilm.model
    ids = torch.tensor([r.token_ids])
    with torch.no_grad():
        x = model.embeddings(input_ids=ids)[0].double()  # (T, d_model)
        att = model.encoder.layer[0].attention.self
        q = x @ att.query.weight.double().T + att.query.bias.double()
        k = x @ att.key.weight.double().T + att.key.bias.double()
    n_heads, d_head = 12, 32
    q = q.view(-1, n_heads, d_head).transpose(0, 1)  # (H, T, d_head)
    k = k.view(-1, n_heads, d_head).transpose(0, 1)
    expected = torch.softmax(q @ k.transpose(1, 2) / d_head ** 0.5, dim=-1).numpy()
    np.testing.assert_allclose(r.attention[0], expected, atol=2e-5)


def test_sentence_pair_segments(minilm):
    r = extract(minilm, "I went to the bank.", "The river was wide.")
    assert r.is_pair
    sep = [i for i, t in enumerate(r.tokens) if t == "[SEP]"]
    assert len(sep) == 2
    assert (r.segment_ids[: sep[0] + 1] == 0).all() and (r.segment_ids[sep[0] + 1:] == 1).all()


def test_truncation_reports_dropped_tokens(minilm):
    text = "word " * 700
    r = extract(minilm, text)
    assert r.seq_len == 512
    assert r.truncation.n_tokens_requested == 702  # 700 words + [CLS] + [SEP]
    assert r.truncation.n_dropped == 190
    assert r.tokens[-1] == "[SEP]"
    small = extract(minilm, text, max_tokens=64)
    assert small.seq_len == 64 and small.truncation.n_dropped == 702 - 64


@pytest.mark.parametrize("text", ["", "   ", "\n\t  ", None])
def test_empty_text_is_a_plain_error(minilm, text):
    with pytest.raises(BadInput, match="empty"):
        extract(minilm, text)


@pytest.mark.parametrize("text", ["😀🎉 emoji only", "café naïve résumé", "שלום עולם", "مرحبا بالعالم",
                                  "bell\x07 and\x00nul\x1b[31m escape", "\u200b\u200d zero width"])
def test_unusual_text_gives_valid_attention(minilm, text):
    r = extract(minilm, text)
    np.testing.assert_allclose(r.attention.sum(-1), 1.0, atol=1e-5)
    assert len(r.tokens) == r.seq_len and all(isinstance(t, str) and t for t in r.tokens)


@pytest.mark.parametrize("arch", ARCHES)
def test_every_architecture_extracts(arch):
    loaded = tiny_loaded(arch)
    r = extract(loaded, "the cat sat on the mat")
    a = r.attention
    assert a.shape[:2] == (2, 4)
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
    if loaded.facts.kind == "decoder":
        assert loaded.facts.causal
        upper = np.triu(np.ones(a.shape[-2:], dtype=bool), k=1)
        assert np.abs(a[..., upper]).max() == 0.0  # nothing from the future
    else:
        upper = np.triu(np.ones(a.shape[-2:], dtype=bool), k=1)
        assert a[..., upper].sum() > 0.1  # encoders look both ways
    if loaded.facts.kind == "encoder-decoder":
        assert r.stacks == ("self", "decoder", "cross")
        dec, cross = r.decoder_attention, r.cross_attention
        assert cross.shape[2] == dec.shape[2] and cross.shape[3] == r.seq_len
        np.testing.assert_allclose(dec.sum(-1), 1.0, atol=1e-5)
        np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-5)
        assert np.abs(np.triu(dec[0, 0], k=1)).max() == 0.0  # decoder self-attention is causal
    else:
        assert r.decoder_attention is None and r.stacks == ("self",)


def test_llama_grouped_kv_heads_reported():
    loaded = tiny_loaded("llama")
    assert loaded.facts.n_heads == 4 and loaded.facts.n_kv_heads == 2
    assert loaded.facts.position_scheme == "rope"
    r = extract(loaded, "a b c")
    assert r.n_heads == 4  # one map per query head, not per KV head


def test_model_without_attention_weights_is_a_plain_error():
    loaded = tiny_loaded("bert")

    class NoAttention(torch.nn.Module):
        config = loaded.model.config

        def forward(self, **kwargs):
            from transformers.modeling_outputs import BaseModelOutput

            return BaseModelOutput(last_hidden_state=torch.zeros(1, 3, 32), attentions=())

    loaded.model = NoAttention()
    with pytest.raises(AttentionUnavailable, match="eager"):
        extract(loaded, "hello world")


def test_in_place_capture_equals_eager_exactly(minilm):
    """The BERT capture path writes the weights eager attention computes, bit for bit."""
    from attnviz.models.adapter import can_write_pattern_in_place

    text = "Capture must not change a single weight, even for long inputs. " * 20
    r = extract(minilm, text)
    assert can_write_pattern_in_place(minilm)
    assert minilm.model.config._attn_implementation == "eager"  # restored after the forward
    assert not r.attention.flags.owndata  # a view of the array the model wrote into: no stack copy
    inputs = minilm.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        ref = minilm.model(**inputs, output_attentions=True)
    expected = np.stack([a[0].numpy() for a in ref.attentions])
    np.testing.assert_array_equal(r.attention, expected)



def test_in_place_capture_equals_eager_for_grouped_query_llama():
    """Llama (causal, 4 query heads sharing 2 key/value heads): the capture path repeats the kv heads
    and applies the causal mask exactly as eager does."""
    from attnviz.models.adapter import can_write_pattern_in_place
    from tests.tiny_models import tiny_loaded

    loaded = tiny_loaded("llama")
    assert can_write_pattern_in_place(loaded)
    text = "the capture of a causal model must match eager bit for bit " * 3
    r = extract(loaded, text)
    assert not r.attention.flags.owndata  # written in place
    assert loaded.model.config._attn_implementation == "eager"
    ids = torch.tensor([list(r.token_ids)])
    with torch.inference_mode():
        ref = loaded.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    np.testing.assert_array_equal(r.attention, np.stack([a[0].numpy() for a in ref.attentions]))
    assert np.triu(r.attention, k=1).max() == 0.0  # no weight on later tokens