"""What a head writes, on tiny random models: the logit change of every token against the head's output put through
the model's own output projection (other heads zeroed), its final norm's weight at the frozen scale and its
unembedding, computed here step by step."""
import numpy as np
import pytest
import torch

from attnviz.causal.tasks import ioi
from attnviz.causal.writes import head_writes
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from tests.tiny_models import tiny_loaded


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_heads_logit_change_by_hand(arch):
    loaded = tiny_loaded(arch, seed=5)
    ids = ioi(loaded.tokenizer, n_pairs=1).pairs[0].clean
    layer, head = 1, 2
    got = head_writes(loaded, ids, layer, head, k=4)
    n_layers = loaded.facts.n_layers
    _, rec = run(loaded, {"input_ids": torch.tensor([ids])},
                 hooks=[f"blocks.{layer}.attn.hook_z", f"blocks.{n_layers - 1}.hook_resid_post"])
    z = rec[f"blocks.{layer}.attn.hook_z"][0, -1].double().clone()  # (head, d_head)
    z[[h for h in range(z.shape[0]) if h != head]] = 0
    m = loaded.model
    if arch == "llama":
        proj, norm = m.model.layers[layer].self_attn.o_proj, m.model.norm
        out = z.reshape(-1) @ proj.weight.double().T  # no bias in Llama's o_proj
        x = rec[f"blocks.{n_layers - 1}.hook_resid_post"][0, -1].double()
        normed = norm.weight.double() * out / torch.sqrt(x.pow(2).mean() + norm.variance_epsilon)
    else:
        proj, norm = m.transformer.h[layer].attn.c_proj, m.transformer.ln_f
        out = z.reshape(-1) @ proj.weight.double()  # Conv1D: (in, out); its bias is not the head's
        x = rec[f"blocks.{n_layers - 1}.hook_resid_post"][0, -1].double()
        normed = norm.weight.double() * (out - out.mean()) / torch.sqrt(x.var(unbiased=False) + norm.eps)
    want = (m.get_output_embeddings().weight.double() @ normed).detach().numpy()
    np.testing.assert_allclose(got.logits, want, atol=1e-9)
    top = np.argsort(-want)[:4]
    assert [i for i, _ in got.promoted] == top.tolist()
    assert [i for i, _ in got.suppressed] == np.argsort(want)[:4].tolist()
    assert got.promoted[0][1] > 0 > got.suppressed[0][1]


def test_a_head_outside_the_model_is_refused():
    loaded = tiny_loaded("llama")
    with pytest.raises(BadInput, match="head below 4"):
        head_writes(loaded, (5, 6, 7), 0, 4)
