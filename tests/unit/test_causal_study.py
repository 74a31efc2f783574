"""Pooling a task set's pairs: hand values for the pooled scale and the correlation, and the study of a tiny random
Llama against patching, attribution and direct attribution run pair by pair."""
import numpy as np
import pytest

from attnviz.causal import patching
from attnviz.causal.attribution import attribution_patching
from attnviz.causal.dla import direct_attribution
from attnviz.causal.study import pearson, pool, preview, study
from attnviz.causal.tasks import Metric, ioi
from attnviz.progress import Cancelled
from tests.tiny_models import tiny_loaded


def test_pooling_averages_logit_differences_then_scales_them():
    # pair 1: clean 4, corrupted 0, a patch restoring 0.5 -> diff 2; pair 2: clean 1, corrupted -1, 0.0 -> diff -1
    # mean diff 0.5 on the mean scale clean 2.5, corrupted -0.5: (0.5 + 0.5) / 3 = 1/3
    got = pool([[0.5], [0.0]], [Metric(4.0, 0.0), Metric(1.0, -1.0)])
    assert got[0] == pytest.approx(1 / 3)
    # clean and corrupted of every pair pool to 1 and 0
    np.testing.assert_allclose(pool([[1.0, 0.0], [1.0, 0.0]], [Metric(4.0, 0.0), Metric(1.0, -1.0)]), [1.0, 0.0])


def test_pearson_matches_its_definition_by_hand():
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x = (0, 1, 2), y = (0, 2, 1): centred (-1, 0, 1) and (-1, 1, 0): 1 / sqrt(2 * 2) = 0.5
    assert pearson([0, 1, 2], [0, 2, 1]) == pytest.approx(0.5)
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))


@pytest.fixture(scope="module")
def tiny():
    loaded = tiny_loaded("llama", seed=3)
    return loaded, ioi(loaded.tokenizer, n_pairs=2)


def test_the_study_pools_each_pairs_own_maps(tiny):
    loaded, task = tiny
    seen = []
    s = study(loaded, task, progress=lambda done, total, label="": seen.append((done, total)))
    assert seen[-1] == (9, 9) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    metrics, heads, est, dla = [], [], [], []
    for pair in task.pairs:
        runs = patching.cache(loaded, pair)
        metrics.append(runs.metric)
        heads.append(patching.patch_heads(loaded, runs))
        est.append(attribution_patching(loaded, pair).heads)
        dla.append(direct_attribution(loaded, pair).heads)
    m1, m2 = metrics
    raw = (m1.corrupted + heads[0] * (m1.clean - m1.corrupted) + m2.corrupted + heads[1] * (m2.clean - m2.corrupted)) / 2
    mean_clean, mean_corrupted = (m1.clean + m2.clean) / 2, (m1.corrupted + m2.corrupted) / 2
    np.testing.assert_allclose(s.heads, (raw - mean_corrupted) / (mean_clean - mean_corrupted), atol=1e-5)
    np.testing.assert_allclose(s.dla_heads, (dla[0] + dla[1]) / 2, atol=1e-6)
    np.testing.assert_allclose(s.clean_diffs, [m1.clean, m2.clean], atol=1e-6)
    assert s.accuracy == np.mean([m1.clean > 0, m2.clean > 0])
    assert s.correlation == pytest.approx(np.corrcoef(s.heads.ravel(), s.heads_estimate.ravel())[0, 1], abs=1e-9)
    np.testing.assert_allclose(s.residual, patching.patch_residual(loaded, patching.cache(loaded, task.pairs[0])),
                               atol=1e-5)
    probs = np.exp(patching.cache(loaded, task.pairs[0]).clean_logits.double().numpy())
    probs /= probs.sum()
    assert s.top_clean[0] == (int(np.argmax(probs)), pytest.approx(float(probs.max()), abs=1e-9))


def test_the_study_stops_when_cancelled(tiny):
    loaded, task = tiny
    with pytest.raises(Cancelled, match="causal analysis was cancelled"):
        study(loaded, task, cancel=lambda: True)


def test_the_preview_is_both_runs_of_every_pair_at_the_last_position(tiny):
    import torch

    loaded, task = tiny
    got = preview(loaded, task)
    metrics = [patching.cache(loaded, p).metric for p in task.pairs]
    np.testing.assert_allclose(got.clean_diffs, [m.clean for m in metrics], atol=1e-5)
    np.testing.assert_allclose(got.corrupted_diffs, [m.corrupted for m in metrics], atol=1e-5)
    assert got.accuracy == np.mean([m.clean > 0 for m in metrics])
    # the first pair's five most likely next tokens, straight from the model's own forward
    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([task.pairs[0].corrupted])).logits[0, -1].double()
    probs = torch.softmax(logits, -1)
    want = torch.topk(probs, 5)
    assert [i for i, _ in got.top_corrupted] == want.indices.tolist()
    np.testing.assert_allclose([p for _, p in got.top_corrupted], want.values.numpy(), atol=1e-6)
