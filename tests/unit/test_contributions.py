"""Value-weighted attention, mixing ratios and ALTI: hand-computed cases, the block rebuilt from its
parts, and an independent straightforward implementation (the whole (query, key, d) tensor at once,
as the reference code of Ferrando et al. does) on tiny models and on the packaged MiniLM and SmolLM2."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from attnviz.contrib import compute
from attnviz.contrib.decompose import Contributions, decompose, layer, rolled, rows_normalised
from attnviz.contrib.parts import LayerParts, family_of, record
from attnviz.errors import BadInput
from attnviz.extract import encode, extract
from tests.tiny_models import tiny_loaded


def _parts(A, V, W, b, x, norm=None):
    """LayerParts of one block from small arrays; y computed from the definition."""
    A, V, W, b, x = (torch.tensor(np.asarray(t, dtype=np.float32)) for t in (A, V, W, b, x))
    H = A.shape[0]
    z = torch.einsum("hij,jhk->ihk", A, V).reshape(A.shape[1], -1)  # heads side by side
    out = z @ W.T + b
    if norm is None:
        y = x + out
    else:
        gamma, beta, eps = (torch.tensor(np.asarray(t, dtype=np.float32)) for t in norm[:2]) + (norm[2],)
        pre = x + out
        y = torch.nn.functional.layer_norm(pre, (pre.shape[-1],), gamma, beta, eps)
        norm = (gamma, beta, eps, pre)
    assert A.shape[0] == H
    return LayerParts(attention=A, values=V, w_out=W, b_out=b, x=x, y=y, norm=norm)


def test_value_norms_by_hand_one_layer_two_heads():
    # 2 tokens, 2 heads of d_head 1, d_model 2; W_O = identity: f_h(x_j) = value_j^h on axis h
    A = [[[0.75, 0.25], [0.5, 0.5]], [[1.0, 0.0], [0.2, 0.8]]]
    V = [[[3.0], [4.0]], [[0.0], [2.0]]]  # (key, head, d_head): token 0 = (3, 4), token 1 = (0, 2)
    W, b, x = np.eye(2), np.zeros(2), np.zeros((2, 2))
    out = layer(_parts(A, V, W, b, x))
    # per head: alpha * |v|: head 0: |3|, |0|; head 1: |4|, |2|
    np.testing.assert_allclose(out["value_weighted"][0], [[0.75 * 3, 0.25 * 0], [0.5 * 3, 0.5 * 0]], atol=1e-6)
    np.testing.assert_allclose(out["value_weighted"][1], [[1.0 * 4, 0.0], [0.2 * 4, 0.8 * 2]], atol=1e-6)
    # heads summed: u_00 = (0.75*3, 1.0*4) -> 4.589; u_01 = (0, 0); u_10 = (1.5, 0.8) -> 1.7; u_11 = (0, 1.6)
    np.testing.assert_allclose(out["value_layer"], [[np.hypot(2.25, 4.0), 0.0], [1.7, 1.6]], atol=1e-5)
    # mixing, no residual (x = 0): token 1 gets 1.7 from token 0, keeps 1.6 of itself
    assert out["mixing"]["value-weighted"][1] == pytest.approx(1.7 / (1.7 + 1.6), abs=1e-6)
    assert out["mixing"]["weights"][1] == pytest.approx(1 - (0.5 + 0.8) / 2, abs=1e-6)


def test_zero_values_give_zero_contribution_and_identity_keeps_all():
    n, H, d = 4, 2, 4
    eye = np.stack([np.eye(n)] * H)
    V = np.zeros((n, H, 2))
    x = np.random.default_rng(0).normal(size=(n, d))
    out = layer(_parts(eye, V, np.ones((d, 4)), np.zeros(d), x))
    assert np.abs(out["value_weighted"]).max() == 0 and np.abs(out["value_layer"]).max() == 0
    # all of y_i is x_i: ALTI gives every token all of itself
    np.testing.assert_allclose(out["alti"], np.eye(n), atol=1e-6)
    np.testing.assert_allclose(out["mixing"]["+ residual"], 0.0, atol=1e-6)


def _straightforward(p) -> dict:
    """ALTI and value norms the plain way: every T_i(x_j) as a (q, k, d) tensor, LayerNorm's linear
    part as the matrix (I - 11^T/d) diag(gamma) (Ferrando et al.'s l_transform), y from the model."""
    A, V, W, b, x, y = (t.double() for t in (p.attention, p.values, p.w_out, p.b_out, p.x, p.y))
    H, n, _ = A.shape
    d = W.shape[0]
    F = torch.stack([V[:, h, :] @ W[:, h * V.shape[-1]:(h + 1) * V.shape[-1]].T for h in range(H)])  # (H, n, d)
    u = torch.einsum("hij,hjd->ijd", A, F)
    T = u + torch.einsum("ij,id->ijd", torch.eye(n, dtype=torch.float64), x)
    if p.norm is not None:
        gamma, beta, eps, pre = (t.double() if torch.is_tensor(t) else t for t in p.norm)
        L = (torch.eye(d, dtype=torch.float64) - torch.ones(d, d, dtype=torch.float64) / d) @ torch.diag(gamma)
        s = torch.sqrt(pre.var(-1, unbiased=False) + eps)
        T = torch.einsum("ijd,de->ije", T, L) / s[:, None, None]
    c = (torch.linalg.vector_norm(y, ord=1, dim=-1)[:, None]
         - torch.linalg.vector_norm(y[:, None, :] - T, ord=1, dim=-1)).clamp_min(0)
    return dict(alti=(c / c.sum(-1, keepdim=True)).numpy(), value_layer=torch.linalg.vector_norm(u, dim=-1).numpy(),
                value_weighted=(A * torch.linalg.vector_norm(F, dim=-1)[:, None, :]).numpy())


def _record_hf(lm, text):
    return record(lm, encode(lm, text).inputs)


@pytest.mark.parametrize("arch", ["bert", "llama", "bart", "t5"])
def test_parts_rebuild_the_block_and_match_the_straightforward_way(arch):
    lm = tiny_loaded(arch)
    out, layers = _record_hf(lm, "The quick brown fox jumps over the lazy dog again and again.")
    c = decompose(layers)
    assert c.rebuild_error < 1e-5  # y rebuilt from the parts equals what the model computed
    assert c.post_norm == (arch in ("bert", "bart"))
    for l, p in enumerate(layers):
        ref = _straightforward(p)
        np.testing.assert_allclose(c.alti[l], ref["alti"], atol=2e-5)
        np.testing.assert_allclose(c.value_layer[l], ref["value_layer"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(c.value_weighted[l], ref["value_weighted"], rtol=1e-4, atol=1e-6)
        for h in range(c.n_heads):  # one head's map made alone is the same map
            np.testing.assert_array_equal(c.value_weighted_head(l, h), c.value_weighted[l, h])
    np.testing.assert_allclose(c.alti.sum(-1), 1.0, atol=1e-5)  # ALTI rows sum to 1
    if arch == "llama":  # causal: nothing flows from later tokens
        assert np.abs(np.triu(c.alti[0], 1)).max() == 0 and np.abs(np.triu(c.value_layer[0], 1)).max() == 0


@pytest.mark.parametrize("heads, d", [(3, 7), (12, 16)])  # an odd width is padded; each head count compiles
def test_pairs_match_every_pair_built_in_float64(heads, d):
    from attnviz.contrib.pairs import pairs

    rng = np.random.default_rng(heads)
    n_q, n_k = 9, 11
    A = rng.random((n_k, heads, n_q)).astype(np.float32)
    A[4] = 0  # a key no head attends to
    A[6, :, 2] = 0  # nor to this one from query 2
    F = rng.standard_normal((heads, n_k, d)).astype(np.float32)
    G = np.einsum("hjd,mjd->jhm", F, F) * 0.5  # a Gram matrix of other vectors than F
    y = rng.standard_normal((n_q, d)).astype(np.float32)
    y[0, 0] = 0  # sign +1
    unaligned = np.empty(A.size + 1, np.float32)[1:].reshape(A.shape)  # 4 bytes past numpy's boundary
    unaligned[...] = A
    gain, norm2 = pairs(unaligned, F, G, y)
    A64, F64, y64 = A.astype(np.float64), F.astype(np.float64), y.astype(np.float64)
    T = np.einsum("jhi,hjk->ijk", A64, F64)  # (q, k, d)
    expected = np.abs(y64).sum(-1)[:, None] - np.abs(y64[:, None, :] - T).sum(-1)
    expected = np.where(A64.sum(1).T > 0, np.maximum(expected, 0), 0)
    np.testing.assert_allclose(gain, expected, atol=2e-5)
    assert gain[:, 4].max() == 0 and gain[2, 6] == 0
    np.testing.assert_allclose(norm2, np.einsum("jhi,jhm,jmi->ij", A64, G.astype(np.float64), A64), rtol=1e-5)


def test_weights_below_the_smallest_normal_float32_are_written_as_zero():
    """Denormal weights (a softmax over many keys leaves some) are 0 in both arrays spread() writes; the smallest
    normal one and larger ones are kept exactly."""
    from attnviz.contrib.pairs import spread

    tiny = np.finfo(np.float32).tiny
    A = np.array([[[1e-40, tiny, 0.25], [3e-39, 0.5, 1e-45]]], np.float32)  # (head, q, k): 1 head, 2 rows, 3 keys
    assert A[0, 0, 0] > 0 and A[0, 1, 2] > 0  # denormal, not 0, as given
    fnorm = np.array([[2.0, 3.0, 4.0]], np.float32)
    vw, Ak = spread(A, fnorm)
    np.testing.assert_array_equal(vw[0], [[0, tiny * 3, 1.0], [0, 1.5, 0]])
    np.testing.assert_array_equal(Ak[:, 0, :], [[0, 0], [tiny, 0.5], [0.25, 0]])  # (key, q)


def test_rollout_of_contributions():
    c = np.random.default_rng(1).random((3, 4, 4)).astype(np.float32)
    c = rows_normalised(c)
    r = rolled(c)
    np.testing.assert_allclose(r[2], c[2].astype(np.float64) @ c[1] @ c[0], rtol=1e-5)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(rows_normalised(np.zeros((2, 2))), 0)


def test_lens_replaces_the_attention_and_says_so():
    lm = tiny_loaded("bert")
    text = "Attention moves values, not weights."
    result = extract(lm, text)
    c = compute.contributions(lm, text)
    vw = compute.lens(result, c, "value-weighted")
    assert vw.quantity == "value-weighted" and vw.attention.shape == result.attention.shape
    np.testing.assert_allclose(vw.attention.sum(-1), 1.0, atol=1e-5)
    assert not np.allclose(vw.attention, result.attention, atol=1e-3)  # the value norms re-weight the rows
    alti = compute.lens(result, c, "ALTI")
    assert alti.attention.shape == (result.n_layers, 1, result.seq_len, result.seq_len) and alti.n_heads == 1
    assert compute.lens(result, c, "weights") is result
    with pytest.raises(BadInput):
        compute.lens(result, c, "gradients")
    other = extract(lm, text + " And more words here.")
    with pytest.raises(BadInput, match="another input"):
        compute.lens(other, c, "ALTI")


def test_uncovered_model_says_which_are_covered():
    lm = tiny_loaded("gpt2")
    with pytest.raises(BadInput, match="knows the blocks of BERT, ") as e:
        compute.contributions(lm, "hello there")
    assert "A gpt2 model is not among them" in str(e.value) and "one fused projection" in str(e.value)
    with pytest.raises(BadInput):
        family_of(lm.model)


def test_scratch_model_contributions_rebuild_its_blocks():
    from attnviz.models.scratch import ScratchConfig, ScratchTransformer

    for kind in ("encoder", "decoder", "encoder-decoder"):
        model = ScratchTransformer(ScratchConfig(kind=kind, vocab_size=20, d_model=16, n_heads=2, n_layers=2,
                                                 d_ff=32, max_len=16, seed=3))
        c = compute.scratch_contributions(model, [1, 5, 7, 2, 9, 3])
        assert isinstance(c, Contributions) and c.n_layers == 2 and c.n_heads == 2
        assert c.rebuild_error < 1e-5
        np.testing.assert_allclose(c.alti.sum(-1), 1.0, atol=1e-5)


def test_alti_matches_a_float64_reference_at_128_tokens(minilm):
    """ALTI's shares are small differences of large L1 norms: at 128 tokens on MiniLM they agree with the
    float64 reference to 1e-6 (float32 norms subtracted whole were off by 1e-4, small shares by 0.1%)."""
    from attnviz.examples import long_text

    e = encode(minilm, long_text() * 2, max_tokens=128)
    assert len(e.ids) == 128

    _, layers = record(minilm, e.inputs)
    with torch.inference_mode():
        c = decompose(layers)
    for l, p in enumerate(layers):
        ref = _straightforward(p)["alti"]
        assert np.abs(c.alti[l] - ref).max() <= 2e-6, l
        shares = ref > 1e-3
        assert (np.abs(c.alti[l] - ref)[shares] / ref[shares]).max() <= 1e-4, l


@pytest.mark.parametrize("key", ["minilm", "smollm2"])
def test_real_models_match_the_straightforward_way(key, minilm):
    from attnviz.models import load_model
    from attnviz.models.registry import PACKAGED, package_dir

    if package_dir(PACKAGED[key].package) is None:
        pytest.skip(f"{key} is not installed")
    lm = minilm if key == "minilm" else load_model(key)
    _, layers = _record_hf(lm, "The keys to the cabinet are on the table, said the [SEP] of the story.")
    c = decompose(layers)
    assert c.rebuild_error < 1e-4
    for l in (0, len(layers) - 1):
        ref = _straightforward(layers[l])
        np.testing.assert_allclose(c.alti[l], ref["alti"], atol=1e-4)
        np.testing.assert_allclose(c.value_layer[l], ref["value_layer"], rtol=1e-3, atol=1e-4)
    means = c.mean_mixing()
    # the ordering Kobayashi et al. (2021) report: weights overstate mixing, the residual shrinks it
    assert means["weights"] > means["value-weighted"] > means["+ residual"]


def test_compiled_loops_keep_torch_thread_count():
    """numba's OpenMP threads share the process's OpenMP default with torch: after a compiled loop has run,
    torch still has the thread count attnviz set (one here), and so does numba."""
    import subprocess
    import sys

    code = ("import numpy as np, torch, numba\n"
            "from attnviz import runtime\n"
            "from attnviz.contrib.pairs import spread\n"
            "runtime.configure_threads()\n"
            "spread(np.ones((2, 8, 8), np.float32), np.ones((2, 8), np.float32))\n"
            "print(torch.get_num_threads(), numba.get_num_threads())\n")
    env = {**os.environ, "ATTNVIZ_THREADS": "1"}
    env.pop("NUMBA_NUM_THREADS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]
