"""Scratch transformer: attention equals torch's reference implementations, masks leak nothing."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.errors import BadInput
from attnviz.models.scratch import (MultiHeadAttention, ScratchConfig, ScratchTransformer, _alibi_slopes, _rope,
                                    attention_result)


def _copy_into_torch_mha(ours: MultiHeadAttention, d_model: int, n_heads: int) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref


@pytest.mark.parametrize("t_q,t_k", [(5, 5), (3, 7)])
def test_multihead_matches_nn_multiheadattention(t_q, t_k):
    torch.manual_seed(0)
    d, h = 16, 4
    ours = MultiHeadAttention(d, h)
    ref = _copy_into_torch_mha(ours, d, h)
    xq, xkv = torch.randn(2, t_q, d), torch.randn(2, t_k, d)
    out, w = ours(xq, xkv)
    ref_out, ref_w = ref(xq, xkv, xkv, need_weights=True, average_attn_weights=False)
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert torch.allclose(w, ref_w, atol=1e-6)


def test_causal_multihead_matches_sdpa():
    torch.manual_seed(1)
    d, h, T = 12, 3, 6
    ours = MultiHeadAttention(d, h)
    x = torch.randn(2, T, d)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    out, w = ours(x, x, mask=mask)
    q = ours.q_proj(x).view(2, T, h, d // h).transpose(1, 2)
    k = ours.k_proj(x).view(2, T, h, d // h).transpose(1, 2)
    v = ours.v_proj(x).view(2, T, h, d // h).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, T, d)
    assert torch.allclose(out, ours.out_proj(ref), atol=1e-5)
    assert torch.all(w.triu(1) == 0)  # no weight on future keys
    assert torch.allclose(w.sum(-1), torch.ones(2, h, T), atol=1e-6)


@pytest.mark.parametrize("positional", ["none", "sinusoidal", "learned", "rope", "alibi"])
def test_causal_decoder_leaks_nothing_from_the_future(positional):
    model = ScratchTransformer(ScratchConfig(kind="decoder", vocab_size=10, d_model=16, n_heads=2, n_layers=2,
                                             positional=positional)).eval()
    a = torch.tensor([[1, 2, 3, 4, 5, 6]])
    b = a.clone()
    b[0, 4:] = torch.tensor([9, 8])  # change only the last two tokens
    with torch.no_grad():
        la, att = model(a)
        lb, _ = model(b)
    assert torch.allclose(la[0, :4], lb[0, :4], atol=1e-6)  # earlier positions cannot see the change
    assert not torch.allclose(la[0, 4:], lb[0, 4:])
    for w in att["self"]:
        assert float(w.triu(1).abs().sum()) == 0.0


def test_encoder_decoder_decoder_is_causal_and_cross_sees_all():
    model = ScratchTransformer(ScratchConfig(vocab_size=10, d_model=16, n_heads=2, n_layers=1, n_decoder_layers=2)).eval()
    src, tgt = torch.tensor([[1, 2, 3, 4]]), torch.tensor([[0, 5, 6]])
    tgt2 = tgt.clone()
    tgt2[0, 2] = 9
    with torch.no_grad():
        l1, att = model(src, tgt)
        l2, _ = model(src, tgt2)
    assert torch.allclose(l1[0, :2], l2[0, :2], atol=1e-6)
    assert len(att["cross"]) == 2 and att["cross"][0].shape == (1, 2, 3, 4)
    assert bool((att["cross"][0] > 0).all())  # cross-attention has no mask


def test_attention_result_fills_every_stack():
    model = ScratchTransformer(ScratchConfig(vocab_size=6, d_model=8, n_heads=2, n_layers=2, n_decoder_layers=1))
    res = attention_result(model, [1, 2, 3], [0, 4], vocab=["<s>", "a", "b", "c", "d", "e"])
    assert res.attention.shape == (2, 2, 3, 3)
    assert res.decoder_attention.shape == (1, 2, 2, 2)
    assert res.cross_attention.shape == (1, 2, 2, 3)
    assert res.tokens == ("a", "b", "c") and res.decoder_tokens == ("<s>", "d")
    assert res.stacks == ("self", "decoder", "cross")
    np.testing.assert_allclose(res.cross_attention.sum(-1), 1.0, atol=1e-5)
    assert res.facts.kind == "encoder-decoder" and res.facts.n_heads == 2


def test_impossible_configs_raise_plain_messages():
    with pytest.raises(BadInput, match="cannot be split evenly"):
        ScratchConfig(d_model=30, n_heads=4)
    with pytest.raises(BadInput, match="at least one layer"):
        ScratchConfig(n_layers=0)
    with pytest.raises(BadInput, match="at least one layer"):
        ScratchConfig(n_decoder_layers=0)
    with pytest.raises(BadInput, match="Unknown positional"):
        ScratchConfig(positional="spiral")
    model = ScratchTransformer(ScratchConfig(kind="encoder", vocab_size=5, d_model=8, n_heads=2, max_len=4))
    with pytest.raises(BadInput, match="only go up to 4"):
        model(torch.tensor([[1, 2, 3, 4, 1]]))
    with pytest.raises(BadInput, match="0..4"):
        model(torch.tensor([[1, 7]]))


def test_alibi_slopes_are_consecutive_powers():
    # 8 heads: 1/2, 1/4, ..., 1/256 (a geometric sequence with ratio 1/2)
    np.testing.assert_allclose(_alibi_slopes(8).numpy(), [2.0 ** -(i + 1) for i in range(8)])
    np.testing.assert_allclose(_alibi_slopes(4).numpy(), [1 / 4, 1 / 16, 1 / 64, 1 / 256])


def test_rope_scores_depend_only_on_the_offset():
    torch.manual_seed(2)
    q, k = torch.randn(8), torch.randn(8)
    seq = lambda v: v.expand(1, 1, 10, 8).clone()  # the same vector at positions 0..9
    rq, rk = _rope(seq(q))[0, 0], _rope(seq(k))[0, 0]
    assert torch.allclose(rq.norm(dim=-1), q.norm().expand(10), atol=1e-5)  # rotations keep lengths
    assert torch.allclose(rq[5] @ rk[3], rq[7] @ rk[5], atol=1e-5)  # offset 2 both times
    assert torch.allclose(rq[0] @ rk[0], q @ k, atol=1e-5)  # position 0 is not rotated
