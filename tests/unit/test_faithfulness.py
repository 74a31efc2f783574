"""Faithfulness of importance methods (attnviz.attribution.faithfulness): curves and AOPC scores on a model
whose answer is known, Spearman by hand, the model-randomisation check, the whole report, bad inputs."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnviz.attribution import faithfulness as F
from attnviz.attribution import gradients as G
from attnviz.attribution import importance as I
from attnviz.attribution import targets as T
from attnviz.errors import BadInput
from attnviz.extract import encode

SENTENCE = "The cat sat on the mat because it was tired."


def _linear_scorer(n=12, d=6, seed=0, special=(0, 11)):
    """f(E) = sum_i W_i . E_i: token i contributes exactly c_i = W_i . x_i, so the best ordering is known."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, d, generator=g)
    w = torch.randn(n, d, generator=g)
    cand = np.ones(n, dtype=bool)
    cand[list(special)] = False
    target = T.Target(T.SIMILARITY_PAIR, None, None, "a linear function of the embeddings", second="-")
    model = SimpleNamespace(config=SimpleNamespace(num_hidden_layers=1, num_attention_heads=1))
    scorer = T.Scorer(target=target, model=model, embeds=x, extra={}, candidates=cand,
                      fn=lambda e, kw: (e * w).sum(dim=(1, 2)))
    return scorer, (x[0] * w).sum(-1).double().numpy()


def test_k_tokens_follow_the_bins():
    assert [F.k_tokens(f, 10) for f in F.CURVE_FRACTIONS] == [0, 1, 1, 1, 2, 5, 10]
    assert [F.k_tokens(f, 200) for f in F.CURVE_FRACTIONS] == [0, 2, 10, 20, 40, 100, 200]


def test_curves_and_aopc_on_a_linear_model_with_a_known_answer():
    scorer, c = _linear_scorer()
    ev = F.Evaluator(scorer)
    oracle = F.curves(ev, "oracle", c)
    m = 10
    top = np.sort(c[1:11])[::-1]  # the removable tokens' contributions, largest first
    f_x = c.sum()
    assert oracle.f_input == pytest.approx(f_x, rel=1e-5)
    for k, dele, ins in zip(oracle.ks, oracle.deletion, oracle.insertion):
        assert dele == pytest.approx(f_x - top[:k].sum(), abs=1e-4)  # deletion: the top k gone
        assert ins == pytest.approx(c[0] + c[11] + top[:k].sum(), abs=1e-4)  # insertion: specials + top k
    ks = [F.k_tokens(b, m) for b in F.AOPC_BINS]  # 1, 1, 1, 2, 5
    assert oracle.comprehensiveness == pytest.approx(np.mean([top[:k].sum() for k in ks]), abs=1e-4)
    assert oracle.sufficiency == pytest.approx(np.mean([f_x - c[0] - c[11] - top[:k].sum() for k in ks]), abs=1e-4)
    # the method that knows the answer beats a reversed and a random ranking; the verdict says so
    rng = np.random.default_rng(1)
    others = {"reversed": F.curves(ev, "reversed", -c), "random": F.curves(ev, "random", rng.normal(size=12))}
    for other in others.values():
        assert oracle.comprehensiveness > other.comprehensiveness
        assert oracle.sufficiency < other.sufficiency
    line = F.verdict({"oracle": oracle, **others})
    assert line == (f"For this input, oracle tracks the output best (comprehensiveness "
                    f"{oracle.comprehensiveness:.3g}); reversed worst ({others['reversed'].comprehensiveness:.3g}).")


def _curve(name, comprehensiveness):
    return F.Curves(name, F.CURVE_FRACTIONS, (), np.zeros(0), np.zeros(0), 1.0, comprehensiveness, 0.0)


def test_the_verdict_says_when_the_lead_is_within_noise():
    by = {"ALTI": _curve("ALTI", 0.50), "rollout": _curve("rollout", 0.47), "flow": _curve("flow", 0.30)}
    noise = np.array([0.10, 0.14, 0.12, 0.16, 0.08])  # mean 0.12, standard deviation 0.0316
    assert F.verdict(by, noise) == (
        "For this input, ALTI tracks the output best (comprehensiveness 0.5), but rollout is within the spread of "
        "random token orders (standard deviation 0.032 over 5 orders) of it: on this input it cannot be told apart "
        "from ALTI; flow worst (0.3).")
    by["rollout"] = _curve("rollout", 0.40)
    assert F.verdict(by, noise) == (
        "For this input, ALTI tracks the output best (comprehensiveness 0.5), 0.1 ahead of rollout: 3.2 times the "
        "spread of random token orders (standard deviation 0.032 over 5 orders); flow worst (0.3).")
    low = {"a": _curve("a", 0.13), "b": _curve("b", 0.01)}
    assert F.verdict(low, noise).endswith(
        "; no method beats random token orders (0.12 on average) by more than their spread; b worst (0.01).")
    assert F.verdict(by) == "For this input, ALTI tracks the output best (comprehensiveness 0.5); flow worst (0.3)."


def test_random_orders_on_a_linear_model_by_hand():
    scorer, c = _linear_scorer()
    got = F.random_comprehensiveness(F.Evaluator(scorer), orders=6, seed=3)
    pos = np.flatnonzero(scorer.candidates)
    ks = [F.k_tokens(b, len(pos)) for b in F.AOPC_BINS]
    rng = np.random.default_rng(3)
    expected = [np.mean([c[order[:k]].sum() for k in ks]) for order in (rng.permutation(pos) for _ in range(6))]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)  # f(x) - f(x without them) = their sum
    assert np.std(got) > 0.1


def test_removing_a_token_puts_the_baseline_in_its_place():
    from tests.tiny_models import tiny_loaded

    lm = tiny_loaded("llama")
    enc = encode(lm, SENTENCE)
    scorer = T.make_scorer(lm, enc, T.make_target(lm, enc, T.NEXT_TOKEN, 8))
    keep = np.ones(len(enc.ids), dtype=bool)
    keep[[2, 5]] = False
    x = scorer.embeds.clone()
    x[0, [2, 5]] = scorer.baseline_embeds[0, [2, 5]]
    zeroed = scorer.embeds.clone()
    zeroed[0, [2, 5]] = 0
    got = float(F.Evaluator(scorer).values([keep])[0])
    assert got == pytest.approx(scorer.value(x), abs=1e-6)
    assert abs(got - scorer.value(zeroed)) > 1e-4  # not zero embeddings: the causal baseline is a token's
    assert not scorer.candidates[0]  # the first token stays (it is kept in the baseline too)


def test_gradients_of_a_linear_model_are_its_contributions():
    scorer, c = _linear_scorer()
    np.testing.assert_allclose(G.input_x_gradient(scorer).per_token, c, rtol=1e-5, atol=1e-6)
    ig = G.integrated_gradients(scorer, 32)
    np.testing.assert_allclose(ig.per_token, c, rtol=1e-4, atol=1e-5)  # IG of a linear f is exact
    assert ig.f_baseline == 0 and abs(ig.delta) < 1e-4


def test_a_causal_target_removes_only_tokens_up_to_its_position(minilm):
    scorer, c = _linear_scorer()
    scorer.candidates[7:] = False
    order = F.ranking(c, scorer.candidates)
    assert set(order) == set(range(1, 7)) and list(c[order]) == sorted(c[1:7], reverse=True)
    keeps = []
    ev = F.Evaluator(scorer)
    ev.values = lambda ks: keeps.extend(ks) or np.zeros(len(ks))
    F.curves(ev, "x", c)
    assert all(k[7:].all() and k[0] for k in keeps)  # nothing after the target, nor the special, removed


def test_spearman_by_hand():
    # ranks of b: 1, 2, 3.5, 5, 3.5; deviations (-2,-1,0,1,2) and (-2,-1,.5,2,.5): 8 / sqrt(10 * 9.5)
    assert F.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    assert F.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(F.spearman([1, 2, 3], [4, 4, 4]))
    assert F.corr_text(F.spearman([1, 2, 3], [4, 4, 4])) == "undefined" and F.corr_text(0.8207) == "0.82"
    names, mat = F.spearman_matrix({"a": np.array([9., 1, 2, 3]), "b": np.array([0., 3, 2, 1]),
                                    "flat": np.array([5., 1, 1, 1])}, np.array([False, True, True, True]))
    assert names == ("a", "b", "flat")
    assert mat[0, 1] == mat[1, 0] == pytest.approx(-1.0) and mat[0, 0] == 1.0
    assert np.isnan(mat[2]).all()  # constant over the removable positions: undefined, not a number


def test_randomisation_changes_gradients_and_leaves_the_model_alone(minilm):
    before = {k: v.clone() for k, v in minilm.model.state_dict().items()}
    enc = encode(minilm, SENTENCE)
    target = T.make_target(minilm, enc, T.SIMILARITY_PAIR, second="A dog slept on the rug.")
    scorer = T.make_scorer(minilm, enc, target)
    clone = F.randomised_copy(minilm.model, seed=0)
    blocks, orig = F.transformer_blocks(clone), F.transformer_blocks(minilm.model)
    assert len(blocks) == 6
    q0, q1 = orig[0].attention.self.query.weight, blocks[0].attention.self.query.weight
    assert not torch.equal(q0, q1) and float(q1.detach().std()) == pytest.approx(minilm.model.config.initializer_range, rel=0.05)
    assert torch.equal(clone.embeddings.word_embeddings.weight, minilm.model.embeddings.word_embeddings.weight)
    again = F.randomised_copy(minilm.model, seed=0)
    assert torch.equal(F.transformer_blocks(again)[3].output.dense.weight, blocks[3].output.dense.weight)  # seeded
    rscorer = T.make_scorer(minilm, enc, target, model=clone)
    mask = scorer.candidates
    rho = F.spearman(G.input_x_gradient(scorer).per_token[mask], G.input_x_gradient(rscorer).per_token[mask])
    assert rho < 0.5
    after = minilm.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_the_report_on_minilm(minilm):
    enc = encode(minilm, SENTENCE)
    target = T.make_target(minilm, enc, T.SIMILARITY_MASKED, 2)
    seen = []
    report = F.evaluate(minilm, enc, target, steps=16, report=lambda i, n, msg: seen.append((i, n, msg)))
    assert list(report.scores) == list(I.METHODS) and report.skipped == {}
    assert seen[-1][0] == seen[-1][1] == 1000
    names, mat = report.spearman
    assert names == tuple(I.METHODS) and np.allclose(np.diag(mat), 1)
    best = max(report.curves, key=lambda k: report.curves[k].comprehensiveness)
    assert report.verdict.startswith(f"For this input, {best} tracks the output best")
    assert report.noise.shape == (F.RANDOM_ORDERS,) and np.std(report.noise) > 0
    assert report.verdict == F.verdict(report.curves, report.noise) and "random token orders" in report.verdict
    assert report.ig.completeness_error < 0.01 and report.ig.baseline == T.ZERO_BASELINE
    assert set(report.randomised) == set(I.METHODS)
    assert all(-1 <= v <= 1 for v in report.randomised.values() if np.isfinite(v))
    # the attention-based methods read the mean of all rows for a pooled output
    att = I.Context(minilm, enc, T.make_scorer(minilm, enc, target)).attention
    np.testing.assert_allclose(report.scores["raw attention (last layer, mean of heads)"],
                               att[-1].mean(0).mean(0), rtol=1e-5)
    with pytest.raises(ValueError):
        report.scores["rollout"][0] = 1.0  # shared through a cache: read-only


def test_flow_is_skipped_on_long_inputs_with_a_reason(minilm):
    from attnviz.examples import long_text

    enc = encode(minilm, long_text(), max_tokens=40)
    target = T.make_target(minilm, enc, T.SIMILARITY_MASKED, 3)
    ctx = I.Context(minilm, enc, T.make_scorer(minilm, enc, target))
    scores, skipped = I.compute(ctx, ["attention flow", "rollout"])
    assert list(scores) == ["rollout"] and "at most 24 tokens; this one has 40" in skipped["attention flow"]


def test_a_new_method_is_one_line(minilm):
    enc = encode(minilm, SENTENCE)
    ctx = I.Context(minilm, enc, T.make_scorer(minilm, enc, T.make_target(minilm, enc, T.SIMILARITY_MASKED, 4)))
    I.METHODS["first layer"] = lambda c: c.read_rows(c.attention[0].mean(0))
    try:
        scores, _ = I.compute(ctx, ["first layer"])
        np.testing.assert_allclose(scores["first layer"], ctx.attention[0].mean(0).mean(0), rtol=1e-6)
        assert ctx.result.seq_len == len(enc.ids)
    finally:
        del I.METHODS["first layer"]


def test_too_short_text_is_refused(minilm):
    enc = encode(minilm, "Hi")  # [CLS] hi [SEP]: one removable token
    target = T.make_target(minilm, enc, T.SIMILARITY_PAIR, second="Hello there.")
    with pytest.raises(BadInput, match="too short for deletion curves.*has 1"):
        F.evaluate(minilm, enc, target, steps=4)


def test_the_pages_doc_names_the_trust_pages_baselines_and_noise_margin():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "pages.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if "| Trust the view? |" in line)
    assert T.ZERO_BASELINE in row and "neutral token's embedding on a causal model" in row
    assert "the padding token, else end-of-text, else unknown-word" in row  # the order of T.NEUTRAL_ROLES
    assert [role for _, role in T.NEUTRAL_ROLES] == ["padding token", "end-of-text token", "unknown-word token"]
    assert f"noise margin (the standard deviation of the comprehensiveness of {F.RANDOM_ORDERS} random token orders" in row
    assert "completeness error" in row
