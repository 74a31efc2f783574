"""The micro-benchmark's pieces: slope fitting on synthetic data, the three implementations
against independent ones, memory prediction and skipping, progress and cancel. No timing asserts."""
import threading

import numpy as np
import pytest

from attnviz.bench import complexity as complexity_bench
from attnviz.complexity import measure as cm
from attnviz.errors import BadInput

torch = pytest.importorskip("torch")


def test_fit_slope_exact_power_law():
    ns = np.array([128, 256, 512, 1024, 4096])
    slope, intercept = cm.fit_slope(ns, 3.0 * ns ** 2.0)
    assert slope == pytest.approx(2.0, abs=1e-12)
    assert np.exp(intercept) == pytest.approx(3.0)
    assert cm.fit_slope([10, 100], [5, 50])[0] == pytest.approx(1.0)


def test_fit_slope_noisy_power_law():
    rng = np.random.default_rng(0)
    ns = np.geomspace(256, 8192, 12)
    ts = 1e-9 * ns ** 1.5 * np.exp(rng.normal(0, 0.05, ns.size))  # +-5% multiplicative noise
    assert cm.fit_slope(ns, ts)[0] == pytest.approx(1.5, abs=0.05)


@pytest.mark.parametrize("ns, ts", [([1, 2], [1, 0]), ([4, 4], [1, 2]), ([1, 2, 3], [1, 2]),
                                    ([1, -2], [1, 2]), ([1, 2], [1, float("nan")]), ([5], [1])])
def test_fit_slope_rejects(ns, ts):
    with pytest.raises(BadInput):
        cm.fit_slope(ns, ts)


def test_slopes_from_measurements():
    cfg = cm.BenchConfig()
    ms = [cm.Measurement("naive", n, 1e-8 * n ** 2, 8 * n * n, 0, 0) for n in (256, 512, 1024)]
    ms += [cm.Measurement("linear", n, 1e-6 * n, 100 * n, 0, 0) for n in (256, 512)]
    ms += [cm.Measurement("sdpa", 256, 0.01, None, 0, 0)]  # one point: no slope
    ms += [cm.Measurement("naive", 4096, None, None, 0, 0, skipped="too big")]
    s = cm.slopes(ms)
    assert s["naive"] == pytest.approx(2) and s["linear"] == pytest.approx(1) and "sdpa" not in s
    assert cm.slopes(ms, "peak_bytes")["naive"] == pytest.approx(2)


def _qkv(n=48, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 2, n, 16, generator=g, dtype=torch.float64) for _ in range(3)]


def test_naive_matches_sdpa_and_numpy():
    q, k, v = _qkv()
    out = cm.naive_attention(q, k, v)
    torch.testing.assert_close(out, cm.sdpa_attention(q, k, v))
    qn, kn, vn = (t.numpy()[0, 0] for t in (q, k, v))
    s = qn @ kn.T / 4.0
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(out.numpy()[0, 0], p @ vn, rtol=1e-10)


def test_linear_attention_matches_quadratic_form():
    # linear attention = normalised kernel attention with weights phi(q_i).phi(k_j), computed
    # here the quadratic way, one query at a time
    q, k, v = _qkv(n=20, seed=1)
    phi = lambda x: np.where(x > 0, x + 1, np.exp(x))  # elu + 1
    qn, kn, vn = (t.numpy()[0, 1] for t in (q, k, v))
    expect = np.zeros_like(vn)
    for i in range(len(qn)):
        w = phi(kn) @ phi(qn[i])
        expect[i] = (w[:, None] * vn).sum(0) / w.sum()
    np.testing.assert_allclose(cm.linear_attention(q, k, v, eps=0).numpy()[0, 1], expect, rtol=1e-9)


def test_predicted_memory():
    cfg = cm.BenchConfig(n_heads=4, d_head=64)
    assert cm.predict_peak_bytes("naive", 1024, cfg) == 4 * 4 * (2 * 1024 ** 2 + 1024 * 64)
    # the naive prediction grows ~4x per doubling, the others ~2x
    r = lambda impl: cm.predict_peak_bytes(impl, 4096, cfg) / cm.predict_peak_bytes(impl, 2048, cfg)
    assert 3.9 < r("naive") <= 4 and 1.9 < r("linear") <= 2 and r("sdpa") == 2
    with pytest.raises(BadInput):
        cm.predict_peak_bytes("quantum", 10, cfg)


def test_measured_peak_memory_matches_prediction():
    """Memory (not time) is deterministic: the naive peak is the two n x n matrices."""
    cfg = cm.BenchConfig(sizes=(384,), implementations=("naive", "sdpa"), repeats=1)
    naive = cm.measure("naive", 384, cfg)
    sdpa = cm.measure("sdpa", 384, cfg)
    if naive.peak_bytes is None:
        pytest.skip("this torch's profiler gives no memory events")
    assert naive.peak_bytes == pytest.approx(naive.predicted_bytes, rel=0.15)
    assert sdpa.peak_bytes < naive.peak_bytes / 4
    assert naive.seconds > 0 and naive.flops == 4 * 4 * 384 * 384 * 64


def test_sizes_that_do_not_fit_are_skipped_before_running():
    cfg = cm.BenchConfig(sizes=(100_000,), implementations=("naive",), memory_budget=10 ** 9)
    m = cm.measure("naive", 100_000, cfg)  # would need ~320 GB: must not even allocate
    assert m.seconds is None and m.skipped.startswith("needs about") and "954 MiB" in m.skipped  # 1e9 / 2^20


def test_slow_sizes_are_skipped_from_history():
    cfg = cm.BenchConfig(time_limit=1.0)
    history = [cm.Measurement("naive", 1024, 0.5, None, 0, 0)]
    assert "would take" in cm.skip_reason("naive", 4096, cfg, history)  # 0.5 s x 16 = 8 s
    assert cm.skip_reason("naive", 1024, cfg, history) is None
    assert cm.skip_reason("linear", 4096, cfg, history) is None  # no history for linear


def test_run_reports_progress_and_cancels_between_sizes():
    cfg = cm.BenchConfig(sizes=(32, 64), implementations=("naive", "linear"), repeats=1,
                         measure_memory=False)
    calls = []
    results = cm.run(cfg, progress=lambda done, total, msg: calls.append((done, total, msg)))
    assert [(m.impl, m.n) for m in results] == [("naive", 32), ("linear", 32), ("naive", 64), ("linear", 64)]
    assert calls[0] == (0, 4, "Naive softmax attention at n = 32") and calls[-1] == (4, 4, "done")
    stop = threading.Event()
    seen = []

    def progress(done, total, msg):
        seen.append(done)
        if done == 1:
            stop.set()  # cancel after the first size

    partial = cm.run(cfg, progress=progress, cancel=stop)
    assert len(partial) == 1 and seen[-1] == 1
    assert cm.run(cfg, cancel=lambda: True) == []


@pytest.mark.parametrize("kwargs", [dict(sizes=()), dict(sizes=(0, 5)), dict(sizes=(2.5,)),
                                    dict(implementations=("magic",)), dict(n_heads=0), dict(repeats=1.5)])
def test_bench_config_rejects(kwargs):
    with pytest.raises(BadInput):
        cm.BenchConfig(**kwargs)


def test_bench_figures_names(monkeypatch):
    """figures() turns measurements into the named ratios (synthetic, no timing)."""
    def fake_run(cfg, progress=None, cancel=None):
        out = []
        for n in cfg.sizes:
            out.append(cm.Measurement("naive", n, 1e-9 * n ** 2, 8 * n * n, 8 * n * n, 0))
            out.append(cm.Measurement("sdpa", n, 1e-9 * n ** 2, 16 * n, 16 * n, 0))
            out.append(cm.Measurement("linear", n, 1e-7 * n, 64 * n, 64 * n, 0))
        return out

    monkeypatch.setattr(complexity_bench, "run", fake_run)
    f = complexity_bench.figures(quick=True)
    assert f["naive_attention_slope"] == pytest.approx(2) and f["linear_attention_slope"] == pytest.approx(1)
    assert f["naive_memory_slope"] == pytest.approx(2) and f["naive_memory_vs_predicted"] == 1
    assert f["sdpa_memory_vs_naive"] == pytest.approx(16 * 2048 / (8 * 2048 ** 2), abs=1e-4)
