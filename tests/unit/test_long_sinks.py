"""The attention-sinks experiment on a hand-built model whose first token is a sink by construction,
so the loss at every position under every cache policy is known in closed form."""
import math

import numpy as np
import pytest
import torch

from attnviz.errors import BadInput
from attnviz.progress import Cancelled
from attnviz.long.sinks import POLICIES, policy_losses, sink_experiment
from attnviz.models.hf import model_facts
from attnviz.types import LoadedModel

D, VOCAB, C, ALPHA, V = 16, 8, 6.0, 2.0, 40.0
# token 0 is BOS (the sink); tokens 1..7 cycle: the next token after t is t % 7 + 1, after BOS it is 1


def _nxt(t: int) -> int:
    return t % 7 + 1


def sink_model() -> LoadedModel:
    """One Llama layer with hand-set weights (D = 16, one head of width 16):
    - embeddings 4 u_t (RMSNorm makes every token exactly 4 u_t);
    - every query is C u_15; only BOS has a key (C u_15), so BOS scores C²/4 and every other key 0;
      rope_theta 1e12 leaves dims 7/15 unrotated (angle < 1e-6 at 4,096 tokens);
    - BOS's value is 0; every other token's value is V u_8 (written back by an identity o_proj);
    - no MLP; lm_head reads u_t for token t % 7 + 1 (and u_0 for token 1), never u_8.
    A query that sees BOS dumps most weight there and keeps its own token clean; without BOS the whole
    weight lands on V u_8, which RMSNorm turns into a much weaker prediction."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=D, intermediate_size=8, num_hidden_layers=1, num_attention_heads=1,
                      num_key_value_heads=1, head_dim=D, max_position_embeddings=4096, rope_theta=1e12,
                      tie_word_embeddings=False, rms_norm_eps=1e-12)
    cfg._attn_implementation = "eager"
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for norm in (model.model.norm, model.model.layers[0].input_layernorm, model.model.layers[0].post_attention_layernorm):
            norm.weight.fill_(1.0)
        model.model.embed_tokens.weight[:, :VOCAB] = 4 * torch.eye(VOCAB)
        att = model.model.layers[0].self_attn
        att.q_proj.weight[15, :VOCAB] = C / 4  # x = 4 u_t -> q = C u_15
        att.k_proj.weight[15, 0] = C / 4  # BOS only
        att.v_proj.weight[8, 1:VOCAB] = V / 4  # other tokens -> V u_8
        att.o_proj.weight.copy_(torch.eye(D))
        for t in range(1, VOCAB):
            model.lm_head.weight[_nxt(t), t] = ALPHA
        model.lm_head.weight[1, 0] = ALPHA
    return LoadedModel(key="sink", model=model, tokenizer=None, facts=model_facts(cfg, "sink"))


def expected(ids, policy: str, cache: int, sinks: int) -> np.ndarray:
    """Closed-form loss at positions 0..n-2."""
    out = []
    E = math.exp(C * C / math.sqrt(D))  # exp(q·k × scaling), q·k = C², scaling 1/sqrt(16)
    for i in range(len(ids) - 1):
        j = np.arange(i + 1)
        vis = j if policy == "full" else j[j > i - cache] if policy == "window" else j[(j > i - (cache - sinks)) | (j < sinks)]
        others = int((np.asarray(ids)[vis] != 0).sum())
        bos = int((np.asarray(ids)[vis] == 0).sum())
        a = V * others / (bos * E + others)  # weight on the non-BOS values, times V
        logit = ALPHA * 4 * 4 / math.sqrt(16 + a * a)  # RMSNorm of 4 u_t + a u_8, read by lm_head
        out.append(math.log1p(7 * math.exp(-logit)))
    return np.array(out)


@pytest.fixture(scope="module")
def loaded():
    return sink_model()


IDS = [0] + [t % 7 + 1 for t in range(299)]  # BOS then 1 2 3 ... 7 1 2 ...


@pytest.mark.parametrize("policy", POLICIES)
def test_each_policy_gives_the_closed_form_loss(loaded, policy):
    got = policy_losses(loaded, IDS, policy, cache=32, sinks=4, chunk=50)
    np.testing.assert_allclose(got, expected(IDS, policy, 32, 4), rtol=1e-5, atol=1e-6)


def test_evicting_the_sink_raises_the_loss_only_after_the_window_fills(loaded):
    full, window, sinks = (policy_losses(loaded, IDS, p, cache=32, sinks=4, chunk=64) for p in POLICIES)
    early = np.arange(len(IDS) - 1) < 32
    np.testing.assert_allclose(window[early], full[early], atol=1e-6)  # nothing evicted yet
    assert (window[~early] > sinks[~early] + 0.5).all()  # the sink gone: much worse
    np.testing.assert_allclose(sinks, full, atol=0.05)  # the sink kept: about as good as the whole cache


def test_chunk_size_does_not_change_the_numbers(loaded):
    a = policy_losses(loaded, IDS, "sinks+window", cache=20, sinks=4, chunk=7)
    b = policy_losses(loaded, IDS, "sinks+window", cache=20, sinks=4, chunk=299)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_experiment_progress_cancel_and_bad_input(loaded, minilm):
    from tests.tiny_models import tiny_long_loaded

    tiny = tiny_long_loaded("llama-long")
    tiny.tokenizer.model_max_length = 10 ** 6
    seen = []
    run = sink_experiment(tiny, "the cat sat on the mat " * 40, cache=32, sinks=4, chunk=64,
                          progress=lambda done, total: seen.append((done, total)))
    n = len(run.positions)
    assert set(run.loss) == set(POLICIES) and seen[-1] == (3 * n, 3 * n)
    assert run.curve("window", 8).shape == (n,) and np.isfinite(run.mean_after("window"))
    np.testing.assert_allclose(run.curve("full", 1), run.loss["full"])
    with pytest.raises(Cancelled, match="cancelled"):
        sink_experiment(tiny, "the cat sat on the mat " * 40, cache=32, cancelled=lambda: True)
    with pytest.raises(BadInput, match="causal language model"):
        sink_experiment(minilm, "the cat sat on the mat")
    with pytest.raises(BadInput, match="more than the 4"):
        sink_experiment(tiny, "the cat sat on the mat", cache=4)
    assert tiny.model.config._attn_implementation == "eager"
