"""One head's OV and QK circuits on tiny random models, against the circuits computed here step by step from the
HF model's own weights (norms by hand, the projections' weight slices of the head and of its key/value head, the
final norm's scale from the input the model's own final norm receives); a value/output pair built into the weights;
the candidate set."""
import numpy as np
import pytest
import torch

from attnviz.causal import circuits
from attnviz.causal.circuits import Circuit, candidate_ids, ov_circuit, qk_circuit
from attnviz.causal.tasks import Pair, ioi
from attnviz.errors import BadInput
from tests.tiny_models import tiny_loaded


def _final_norm_input(m, norm, prompt):
    """The input of the model's own final norm at the last position of `prompt` (d_model,)."""
    seen = []
    handle = norm.register_forward_pre_hook(lambda mod, args: seen.append(args[0][0, -1].double()))
    with torch.no_grad():
        m(torch.tensor([list(prompt)]))
    handle.remove()
    return seen[0]


def _by_hand(arch, m, layer, head, ids, prompt):
    """(OV (n, vocab), QK (n, n)) of head (layer, head) over tokens `ids`, straight from the weights, in double."""
    n_heads, n_kv = m.config.num_attention_heads, getattr(m.config, "num_key_value_heads", m.config.num_attention_heads)
    d = m.config.hidden_size
    dh = d // n_heads
    kv = head // (n_heads // n_kv)  # grouped-query attention: consecutive query heads share a key/value head
    e = m.get_input_embeddings().weight.double()[list(ids)]  # (n, d): token embeddings, no positions
    with torch.no_grad():
        if arch == "llama":
            block, norm = m.model.layers[layer], m.model.norm
            ln = block.input_layernorm
            x = ln.weight.double() * e / torch.sqrt(e.pow(2).mean(-1, keepdim=True) + ln.variance_epsilon)
            att = block.self_attn
            q = (x @ att.q_proj.weight.double().T).view(-1, n_heads, dh)[:, head]
            k = (x @ att.k_proj.weight.double().T).view(-1, n_kv, dh)[:, kv]
            v = (x @ att.v_proj.weight.double().T).view(-1, n_kv, dh)[:, kv]
            out = v @ att.o_proj.weight.double()[:, head * dh:(head + 1) * dh].T  # (n, d)
            f = _final_norm_input(m, norm, prompt)
            read = norm.weight.double() * out / torch.sqrt(f.pow(2).mean() + norm.variance_epsilon)
        else:
            block, norm = m.transformer.h[layer], m.transformer.ln_f
            ln = block.ln_1
            x = (e - e.mean(-1, keepdim=True)) / torch.sqrt(e.var(-1, unbiased=False, keepdim=True) + ln.eps)
            x = x * ln.weight.double() + ln.bias.double()
            qkv = x @ block.attn.c_attn.weight.double()  # Conv1D: (in, 3 d), no bias: the circuits leave it out
            q, k, v = (t.view(-1, n_heads, dh)[:, head] for t in qkv.split(d, -1))
            out = v @ block.attn.c_proj.weight.double()[head * dh:(head + 1) * dh]  # (n, d)
            f = _final_norm_input(m, norm, prompt)
            read = norm.weight.double() * (out - out.mean(-1, keepdim=True)) / torch.sqrt(
                f.var(unbiased=False) + norm.eps)
        ov = read @ m.get_output_embeddings().weight.double().T  # (n, vocab)
        qk = (q @ k.T) / np.sqrt(dh)  # (n, n)
    return ov.numpy(), qk.numpy()


def _top(matrix, k):
    flat = np.argsort(-matrix.ravel(), kind="stable")[:k]
    return list(zip(*np.unravel_index(flat, matrix.shape))), matrix.ravel()[flat]


@pytest.mark.parametrize("arch,head", [("llama", 1), ("llama", 2), ("gpt2", 3)])
def test_circuits_equal_the_weights_read_by_hand(arch, head, monkeypatch):
    monkeypatch.setattr(circuits, "BATCH", 50)  # several blocks, so the running top-k merge is exercised
    loaded = tiny_loaded(arch, seed=7)
    pair = ioi(loaded.tokenizer, n_pairs=1).pairs[0]
    ids = candidate_ids([pair], loaded.model.config.vocab_size, n_low=150)
    layer, k = 1, 12
    ov_want, qk_want = _by_hand(arch, loaded.model, layer, head, ids, pair.clean)
    ov = ov_circuit(loaded, layer, head, ids, k=k, prompt=pair.clean)
    cells, values = _top(ov_want, k)
    assert ov.pairs == tuple((int(ids[i]), int(j)) for i, j in cells)
    np.testing.assert_allclose(ov.values, values, rtol=1e-4, atol=1e-6)
    assert ov.n_candidates == len(ids) and np.all(np.diff(ov.values) <= 0)
    qk = qk_circuit(loaded, layer, head, ids, k=k, prompt=pair.clean)
    cells, values = _top(qk_want, k)
    assert qk.pairs == tuple((int(ids[i]), int(ids[j])) for i, j in cells)
    np.testing.assert_allclose(qk.values, values, rtol=1e-4, atol=1e-6)
    assert np.all(np.diff(qk.values) <= 0)


def test_grouped_query_heads_read_their_shared_key_value_head():
    loaded = tiny_loaded("llama", seed=7)  # 4 query heads over 2 key/value heads: heads 0, 1 read 0; 2, 3 read 1
    ids = np.arange(300)
    prompt = (5, 6, 7)
    same = [qk_circuit(loaded, 0, h, ids, k=5, prompt=prompt) for h in range(4)]
    ov = [ov_circuit(loaded, 0, h, ids, k=5, prompt=prompt) for h in range(4)]
    _, qk_h1 = _by_hand("llama", loaded.model, 0, 1, ids, prompt)
    cells, values = _top(qk_h1, 5)
    assert same[1].pairs == tuple((int(i), int(j)) for i, j in cells)
    # the value head is shared, the output slices differ: heads 0 and 1 write different logits from the same values
    assert ov[0].pairs != ov[1].pairs and same[0].pairs != same[1].pairs
    with torch.no_grad():  # heads 1 and 2 read different key/value heads: zero key/value head 1, head 2 goes flat
        att = loaded.model.model.layers[0].self_attn
        att.v_proj.weight[8:16] = 0
    assert np.all(ov_circuit(loaded, 0, 2, ids, k=5, prompt=prompt).values == 0)
    assert np.all(ov_circuit(loaded, 0, 3, ids, k=5, prompt=prompt).values == 0)
    kept = ov_circuit(loaded, 0, 1, ids, k=5, prompt=prompt)  # only the frozen final-norm scale moved: one factor
    assert kept.pairs == ov[1].pairs
    np.testing.assert_allclose(kept.values / ov[1].values, kept.values[0] / ov[1].values[0], rtol=1e-5)


def test_a_value_to_output_map_built_into_the_weights_is_the_top_pair():
    loaded = tiny_loaded("llama", seed=2)
    m = loaded.model
    layer, head, dh, a = 1, 3, 8, 1037  # head 3 reads key/value head 1: value rows 8..15
    unembed = m.get_output_embeddings().weight.detach().double()
    b = 2000 + int(unembed[2000:].norm(dim=-1).argmax())  # the longest unembedding row outside the candidates
    with torch.no_grad():
        ln = m.model.layers[layer].input_layernorm
        e = m.get_input_embeddings().weight[a].double()
        x_a = ln.weight.double() * e / torch.sqrt(e.pow(2).mean() + ln.variance_epsilon)
        att = m.model.layers[layer].self_attn
        att.v_proj.weight[8:16] = 0
        att.v_proj.weight[8] = (x_a / x_a.pow(2).sum()).float()  # value dim 0 of the head: 1 for token a
        att.o_proj.weight[:, head * dh:(head + 1) * dh] = 0
        att.o_proj.weight[:, head * dh] = (unembed[b] / m.model.norm.weight.double()).float()  # onto row b of W_U
    prompt = (11, 12, 13, 14)
    got = ov_circuit(loaded, layer, head, np.arange(2000), k=3, prompt=prompt)
    f = _final_norm_input(m, m.model.norm, prompt)
    want = float(unembed[b] @ unembed[b]) / float(torch.sqrt(f.pow(2).mean() + m.model.norm.variance_epsilon))
    assert got.pairs[0] == (a, b)
    assert got.values[0] == pytest.approx(want, rel=1e-4)
    assert got.values[1] < got.values[0]


def test_the_candidate_set_and_refusals(monkeypatch):
    pairs = [Pair((40, 7, 9), (40, 8, 9), 31, 2, "x"), Pair((5000, 7, 9), (6000, 7, 9), 7000, 40, "y")]
    assert candidate_ids(pairs, 30522, n_low=4).tolist() == [0, 1, 2, 3, 7, 8, 9, 31, 40, 5000, 6000, 7000]
    assert candidate_ids(pairs, 6500, n_low=3).tolist() == [0, 1, 2, 7, 8, 9, 31, 40, 5000, 6000]
    loaded = tiny_loaded("llama")
    with pytest.raises(BadInput, match="head below 4"):
        ov_circuit(loaded, 0, 4, [1, 2, 3])
    with pytest.raises(BadInput, match="causal language model"):
        qk_circuit(tiny_loaded("bert"), 0, 0, [1, 2, 3])
    monkeypatch.setattr(circuits, "FUSED_SIDE_BY_SIDE", ())  # as for a family whose fused rows interleave
    with pytest.raises(BadInput, match="A GPT-2 block fuses its query, key and value projections in a layout"):
        ov_circuit(tiny_loaded("gpt2"), 0, 0, [1, 2, 3])
    assert isinstance(qk_circuit(loaded, 0, 0, [1, 2, 3], k=20), Circuit)
    assert len(qk_circuit(loaded, 0, 0, [1, 2, 3], k=20).pairs) == 9  # every pair when k exceeds them
    import dataclasses

    real = circuits.family_of
    monkeypatch.setattr(circuits, "family_of", lambda model: dataclasses.replace(real(model), post_norm=True))
    with pytest.raises(BadInput, match="Token circuits need a norm before each block and plain q·k scores, which a "
                                       "Llama model does not have"):
        qk_circuit(loaded, 0, 0, [1, 2, 3])  # as for a causal LM whose norms follow each block (OPT-350m)


def test_the_scaling_passed_to_attention_when_the_module_keeps_none():
    loaded = tiny_loaded("llama", seed=7)
    ids = np.arange(200)
    want = qk_circuit(loaded, 1, 0, ids, k=6, prompt=(5, 6, 7))
    for layer in loaded.model.model.layers:
        layer.self_attn.scaling = None  # the adapter then records the default, 1 / sqrt(d_head), from the forward
    got = qk_circuit(loaded, 1, 0, ids, k=6, prompt=(5, 6, 7))
    assert got.pairs == want.pairs
    np.testing.assert_allclose(got.values, want.values, rtol=1e-6)
