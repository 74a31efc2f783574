"""The encoder's sentence-similarity task: its pairs read back word by word, the cosine score against a plain
computation from the model's hidden states, and patching, attribution patching and the study on a tiny random BERT
against forwards run here with the activation set by hand."""
import numpy as np
import pytest
import torch

from attnviz.causal import patching
from attnviz.causal.attribution import attribution_patching
from attnviz.causal.study import preview, study
from attnviz.causal.tasks import COSINE, FRAMES, TOPICS, ioi, task_set, user_similarity_pair
from attnviz.errors import BadInput
from tests.tiny_models import minilm_tokenizer, tiny_loaded


def _fake_embed(calls):
    def embed(text):
        calls.append(text)
        return (1.0, float(len(text)), -2.0)

    return embed


def test_similarity_pairs_swap_one_topic_word_for_another_topics():
    tok = minilm_tokenizer()
    calls = []
    task = task_set(tok, "similarity", n_pairs=8, embed=_fake_embed(calls))
    assert (task.measure, len(task.pairs)) == (COSINE, 8)
    assert sorted(calls) == sorted(set(calls))  # each reference embedded once
    for p in task.pairs:
        changed = [i for i in range(p.n) if p.clean[i] != p.corrupted[i]]
        assert len(changed) == 1 and p.clean[0] == tok.cls_token_id and p.clean[-1] == tok.sep_token_id
        word, foil = p.clean_tokens[changed[0]], p.corrupted_tokens[changed[0]]
        assert word in TOPICS[p.reference_text] and foil not in TOPICS[p.reference_text]
        assert any(foil in words for words in TOPICS.values())
        assert tok.decode(p.clean, skip_special_tokens=True) in {f.format(w=word).lower() for f in FRAMES}
        assert p.reference == (1.0, float(len(p.reference_text)), -2.0) and p.similarity
        assert p.label == f"{word} vs {foil}" and p.answer == p.wrong == -1
    assert not ioi(tok, n_pairs=1).pairs[0].similarity and ioi(tok, n_pairs=1).measure == "logit difference"
    with pytest.raises(BadInput, match="similarity for an encoder"):
        task_set(tok, "nli")


def test_the_users_similarity_pair_and_its_plain_errors():
    tok = minilm_tokenizer()
    p = user_similarity_pair(tok, "A cat sat here.", "A car sat here.", " Pets at home. ", _fake_embed([]))
    assert (p.n, p.reference_text, p.reference) == (7, "Pets at home.", (1.0, 13.0, -2.0))
    with pytest.raises(BadInput, match="reference sentence is empty"):
        user_similarity_pair(tok, "A cat sat.", "A car sat.", "  ", _fake_embed([]))
    with pytest.raises(BadInput, match=r"clean prompt has 6 tokens and the corrupted prompt 7.*\[CLS\] | a | big"):
        user_similarity_pair(tok, "A cat sat.", "A big car sat.", "Pets.", _fake_embed([]))
    with pytest.raises(BadInput, match="are the same"):
        user_similarity_pair(tok, "A cat sat.", "A cat sat.", "Pets.", _fake_embed([]))


def _cosine_by_hand(loaded, ids, reference, replace=None) -> float:
    """Mean of the last hidden states over every position, cosine with `reference`, in numpy."""
    from attnviz.models.adapter import run

    out, _ = run(loaded, {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids))},
                 replace=replace or {})
    pooled = out.last_hidden_state[0].double().numpy().mean(0)
    ref = np.asarray(reference, dtype=np.float64)
    return float(pooled @ ref / np.linalg.norm(pooled) / np.linalg.norm(ref))


@pytest.fixture(scope="module")
def tiny():
    loaded = tiny_loaded("bert", seed=5)
    embed = patching.sentence_embedder(loaded)
    return loaded, task_set(loaded.tokenizer, "similarity", n_pairs=2, embed=embed), embed


def test_the_score_is_the_cosine_of_the_mean_pooled_embeddings(tiny):
    loaded, task, embed = tiny
    pair = task.pairs[0]
    with torch.no_grad():
        ref_ids = loaded.tokenizer(pair.reference_text, return_tensors="pt")
        direct = loaded.model(**ref_ids).last_hidden_state[0].mean(0).numpy()  # the model itself, no adapter
    np.testing.assert_allclose(pair.reference, direct, atol=1e-6, rtol=0)
    runs = patching.cache(loaded, pair)
    assert runs.metric.clean == pytest.approx(_cosine_by_hand(loaded, pair.clean, pair.reference), abs=1e-6)
    assert runs.metric.corrupted == pytest.approx(_cosine_by_hand(loaded, pair.corrupted, pair.reference), abs=1e-6)
    assert runs.clean_logits is None and runs.metric(runs.metric.clean) == 1.0


def test_patching_an_encoders_heads_and_mlps_equals_forwards_by_hand(tiny):
    loaded, task, _ = tiny
    pair = task.pairs[0]
    runs = patching.cache(loaded, pair)
    heads, mlps = patching.patch_components(loaded, runs)
    raw = lambda got: runs.metric.corrupted + np.asarray(got) * (runs.metric.clean - runs.metric.corrupted)
    for i in range(loaded.facts.n_layers):
        clean = runs.clean[f"blocks.{i}.attn.hook_z"]
        for h in range(loaded.facts.n_heads):
            def put(z, point, h=h, clean=clean):
                z = z.clone()
                z[:, :, h] = clean[:, :, h]
                return z

            want = _cosine_by_hand(loaded, pair.corrupted, pair.reference, {f"blocks.{i}.attn.hook_z": put})
            assert raw(heads[i, h]) == pytest.approx(want, abs=2e-6)
        mlp = f"blocks.{i}.hook_mlp_out"
        assert raw(mlps[i]) == pytest.approx(_cosine_by_hand(loaded, pair.corrupted, pair.reference,
                                                             {mlp: runs.clean[mlp]}), abs=2e-6)
    assert np.abs(raw(heads) - runs.metric.corrupted).max() > 1e-5  # some head matters


def test_an_encoders_residual_stream_is_patched_at_every_position_after_block_0(tiny):
    loaded, task, _ = tiny
    pair = task.pairs[0]
    runs = patching.cache(loaded, pair)
    got = patching.patch_residual(loaded, runs, batch=3)
    raw = lambda v: runs.metric.corrupted + v * (runs.metric.clean - runs.metric.corrupted)
    changed = next(p for p in range(pair.n) if pair.clean[p] != pair.corrupted[p])
    assert got[0, changed] == pytest.approx(1.0, abs=1e-4)  # the changed word's embedding is all that differs
    np.testing.assert_allclose(got[0, :changed], 0.0)  # block 0: the same embeddings before it in both runs
    for i in range(loaded.facts.n_layers):
        for p in range(pair.n):
            name = f"blocks.{i}.hook_resid_pre"

            def put(x, point, p=p, clean=runs.clean[name]):
                x = x.clone()
                x[:, p] = clean[:, p]
                return x

            assert raw(got[i, p]) == pytest.approx(_cosine_by_hand(loaded, pair.corrupted, pair.reference,
                                                                   {name: put}), abs=2e-6), (i, p)
    assert np.abs(got[1:, :changed]).max() > 1e-4  # later blocks: the earlier positions have read the change


def test_attribution_patching_of_an_encoder_matches_a_gradient_by_hand(tiny):
    loaded, task, _ = tiny
    pair = task.pairs[0]
    runs = patching.cache(loaded, pair)
    est = attribution_patching(loaded, pair, runs)
    # the gradient of the cosine with respect to one MLP output, taken through torch directly
    from attnviz.models.adapter import record

    name = "blocks.1.hook_mlp_out"
    with record(loaded, [name], grad=True) as rec:
        out = rec.forward(input_ids=torch.tensor([pair.corrupted]))
    pooled = out.last_hidden_state[0].mean(0)
    cos = torch.nn.functional.cosine_similarity(pooled, torch.tensor(pair.reference), dim=0)
    (grad,) = torch.autograd.grad(cos, [rec[name]])
    want = float(((runs.clean[name] - rec[name].detach()) * grad).sum()) / (runs.metric.clean - runs.metric.corrupted)
    assert est.mlps[1] == pytest.approx(want, rel=1e-4, abs=1e-7)
    assert est.metric.corrupted == pytest.approx(runs.metric.corrupted, abs=1e-6)


def test_the_study_of_an_encoder_has_no_direct_logit_attribution(tiny):
    loaded, task, _ = tiny
    seen = []
    s = study(loaded, task, progress=lambda done, total, label="": seen.append(label))
    assert s.dla_heads is None and s.dla_mlps is None and s.top_clean == ()
    assert not any("direct logit" in label for label in seen) and "first pair" in seen[-2]
    first = patching.patch_components(loaded, patching.cache(loaded, task.pairs[0]))[0]
    assert s.heads.shape == first.shape == (loaded.facts.n_layers, loaded.facts.n_heads)
    pv = preview(loaded, task)
    np.testing.assert_allclose(pv.clean_diffs, s.clean_diffs, atol=1e-6)
    assert pv.accuracy == np.mean(pv.clean_diffs > pv.corrupted_diffs)
    with pytest.raises(BadInput, match="is a causal language model, so it has no sentence embedding"):
        preview(tiny_loaded("llama"), task)
