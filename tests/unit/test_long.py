"""Long inputs: recorded q/k rebuild eager attention exactly; blockwise summaries and pooled
tiles equal the dense functions; the memory estimate; bad models refused plainly."""
import numpy as np
import pytest
import torch

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.progress import Cancelled
from attnviz.examples import long_text
from attnviz.extract import extract
from attnviz.long.pooled import pooled_grid, row_blocks, tile_edges
from attnviz.long.record import record
from attnviz.long.summaries import summarise
from attnviz.metrics.entropy import head_entropy, row_entropy
from attnviz.metrics.roles import ROLE_KEYS, broadness, result_role_scores
from tests.tiny_models import tiny_loaded, tiny_long_loaded

TEXT = long_text(2000)
WINDOW = 7


@pytest.fixture(scope="module")
def llama():
    m = tiny_long_loaded("llama-long")
    m.tokenizer.model_max_length = 10 ** 6  # the MiniLM tokenizer it borrows says 512
    return m


@pytest.fixture(scope="module")
def mistral():
    m = tiny_long_loaded("mistral-window", window=WINDOW)
    m.tokenizer.model_max_length = 10 ** 6
    return m


def _pair(loaded, n):
    return extract(loaded, TEXT, max_tokens=n), record(loaded, TEXT, max_tokens=n)


def _every_head_equals_eager(r, la, atol=1e-5):
    assert la.seq_len == r.seq_len and la.tokens == r.tokens
    for layer in range(la.n_layers):
        for head in range(la.n_heads):
            np.testing.assert_allclose(la.head(layer, head), r.attention[layer, head], atol=atol)


@pytest.mark.parametrize("n", [16, 512])
def test_minilm_maps_rebuilt_from_q_and_k_equal_eager(minilm, n):
    r, la = _pair(minilm, n)
    assert la.query.shape == (6, 12, n, 32) and la.key.shape == (6, 12, n, 32)
    assert la.query.dtype == np.float32 and not la.query.flags.writeable
    assert not la.causal.any() and not la.sliding_window.any()
    np.testing.assert_allclose(la.scaling, 32 ** -0.5)
    _every_head_equals_eager(r, la)
    assert minilm.model.config._attn_implementation == "eager"  # switched back after the pass


@pytest.mark.parametrize("n", [16, 512])
def test_llama_gqa_keys_are_stored_once_per_kv_head_and_rebuild_eager(llama, n):
    r, la = _pair(llama, n)
    assert la.query.shape == (2, 6, n, 8) and la.key.shape == (2, 2, n, 8)  # 6 query heads over 2 KV heads
    assert la.group == 3 and [la.kv_head(h) for h in range(6)] == [0, 0, 0, 1, 1, 1]
    assert la.causal.all()
    _every_head_equals_eager(r, la)


@pytest.mark.parametrize("n", [16, 512])
def test_sliding_window_from_the_config_rebuilds_eager(mistral, n):
    r, la = _pair(mistral, n)
    assert list(la.sliding_window) == [WINDOW, WINDOW]
    i = np.arange(WINDOW, n)
    assert (r.attention[:, :, i, i - WINDOW] == 0).all()  # eager really hides keys beyond the window
    assert (r.attention[:, :, i, i - WINDOW + 1] > 0).all()
    _every_head_equals_eager(r, la)


def test_rows_window_and_top_k_are_slices_of_the_exact_map(llama):
    r, la = _pair(llama, 300)
    full = r.attention[1, 4]
    np.testing.assert_allclose(la.rows(1, 4, 40, 299), full[40:299], atol=1e-6)
    # the zoom: softmax over the whole visible row, then cut (its rows do not sum to 1)
    zoom = la.window(1, 4, 200, 260, 100, 180)
    np.testing.assert_allclose(zoom, full[200:260, 100:180], atol=1e-6)
    assert zoom.sum(axis=1).max() < 1
    keys, weights = la.top_k(1, 4, 0, 300, 5)
    assert keys.shape == (300, 5)
    assert (keys[0, 1:] == -1).all() and keys[0, 0] == 0  # the first query sees only itself
    for i in (10, 150, 299):
        best = np.argsort(-full[i], kind="stable")[:5]
        np.testing.assert_allclose(weights[i], full[i, best], atol=1e-6)
        assert set(keys[i]) == set(best) or np.allclose(np.sort(full[i, keys[i]]), np.sort(full[i, best]))
    with pytest.raises(BadInput, match="Head 6 does not exist"):
        la.head(0, 6)
    with pytest.raises(BadInput, match="Query rows"):
        la.rows(0, 0, 10, 400)


@pytest.mark.slow
def test_smollm2_at_512_tokens_equals_eager():
    from attnviz.models import load_model

    loaded = load_model("smollm2")
    r, la = _pair(loaded, 512)
    assert la.key.shape[:2] == (30, 3) and la.query.shape[:2] == (30, 9)
    for layer in (0, 7, 15, 29):
        for head in range(9):
            np.testing.assert_allclose(la.head(layer, head), r.attention[layer, head], atol=1e-5)


def test_unsupported_models_are_refused_plainly(minilm):
    bart = tiny_loaded("bart")
    with pytest.raises(AttentionUnavailable, match="encoder-decoder.*512"):
        record(bart, "The cat sat on the mat.")
    bert = tiny_loaded("bert", tokenizer=minilm.tokenizer)

    def manual(hidden_states, *args, **kwargs):  # an attention that never calls transformers' functions
        return torch.zeros_like(hidden_states), None

    for layer in bert.model.encoder.layer:
        layer.attention.self.forward = manual
    with pytest.raises(AttentionUnavailable, match="only 0 of its 2 attention layers"):
        record(bert, "The cat sat on the mat.")
    assert bert.model.config._attn_implementation == "eager"
    with pytest.raises(BadInput, match="empty"):
        record(minilm, "   ")


# ------------------------------------------------------------------ summaries
def _dense_distance(att):
    n = att.shape[-1]
    d = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    out = np.zeros(att.shape[:2] + (n,))
    for k in range(n):
        out[..., k] = att[..., d == k].astype(np.float64).sum(-1)
    return out, d


def _check_summaries(r, la, allowed, tiles=48):
    s = summarise(la, tiles=tiles, rows=64)
    nats, norm = row_entropy(r.attention, allowed)
    np.testing.assert_allclose(s.nats, nats, atol=5e-5)
    np.testing.assert_allclose(s.normalised, norm, atol=1e-5)
    np.testing.assert_allclose(s.head_nats, nats.mean(-1), atol=5e-6)
    dense_roles = result_role_scores(r, row_nats=nats)
    dense_roles.scores[ROLE_KEYS.index("broad")] = broadness(nats, allowed.sum(-1)).mean(-1)
    np.testing.assert_allclose(s.roles.scores, dense_roles.scores, atol=2e-6, equal_nan=True)
    np.testing.assert_allclose(s.sink, r.attention[..., 0].mean(-1), atol=1e-6)
    dist, d = _dense_distance(r.attention)
    np.testing.assert_allclose(s.distance_weight, dist, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(s.mean_distance, (r.attention * d).sum(-1).mean(-1), rtol=1e-5)
    edges, per_head, per_layer = s.profile(12)
    assert edges[0] == 0 and edges[1] == 1 and edges[-1] == r.seq_len
    for b in (0, 3, len(edges) - 2):
        cells = (d >= edges[b]) & (d < edges[b + 1]) & allowed
        if not cells.any():  # beyond a sliding window: no pair, no mean
            assert np.isnan(per_head[..., b]).all() and np.isnan(per_layer[:, b]).all()
            continue
        mean = r.attention[..., cells].astype(np.float64).mean(-1)
        np.testing.assert_allclose(per_head[..., b], mean, rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(per_layer[:, b], mean.mean(-1), rtol=1e-5, atol=1e-8)
    return s


def test_minilm_summaries_equal_the_dense_functions_at_512(minilm):
    r, la = _pair(minilm, 512)
    s = _check_summaries(r, la, np.ones((512, 512), bool))
    dense = head_entropy(r)
    np.testing.assert_allclose(s.head_normalised, dense["head_normalised"], atol=2e-6)
    assert not np.isnan(s.roles["next"]).any() and not np.isnan(s.roles["cls"]).any()


def test_llama_summaries_equal_the_dense_functions_at_512(llama):
    r, la = _pair(llama, 512)
    s = _check_summaries(r, la, np.tril(np.ones((512, 512), bool)))
    assert np.isnan(s.roles["next"]).all()  # a causal model cannot look ahead


def test_sliding_window_summaries_normalise_by_the_keys_in_the_window(mistral):
    r, la = _pair(mistral, 300)
    i, j = np.arange(300)[:, None], np.arange(300)[None, :]
    _check_summaries(r, la, (j <= i) & (j > i - WINDOW))


# ------------------------------------------------------------------ pooled grid
def _dense_pool(att, edges, how):
    t = len(edges) - 1
    out = np.zeros(att.shape[:2] + (t, t), dtype=np.float32)
    for a in range(t):
        for b in range(t):
            cell = att[:, :, edges[a]:edges[a + 1], edges[b]:edges[b + 1]]
            out[:, :, a, b] = cell.mean((-1, -2)) if how == "mean" else cell.max((-1, -2))
    return out


@pytest.mark.parametrize("n,tiles,rows", [(8192, 64, 32), (203, 10, 7), (300, 64, 50), (10, 4, 1), (1, 1, 64)])
def test_row_blocks_cover_every_row_once_within_tile_rows(n, tiles, rows):
    edges = tile_edges(n, tiles)
    blocks = row_blocks(edges, rows)
    assert blocks[0][0] == 0 and blocks[-1][1] == n
    assert all(b0[1] == b1[0] for b0, b1 in zip(blocks, blocks[1:]))  # consecutive, no gap, no overlap
    tall = int(np.diff(edges).min()) > rows
    for q0, q1 in blocks:
        t = int(np.searchsorted(edges, q0, side="right")) - 1
        if tall:  # parts of one tile row, none taller than `rows`
            assert q1 - q0 <= rows and q1 <= edges[t + 1]
        else:  # whole tile rows
            assert q0 in edges and q1 in edges
    assert (len(blocks) == 256) == (n == 8192)  # 64 tile rows of 128 tokens, each in 4 parts of 32


def test_tile_edges_follow_array_split():
    assert list(tile_edges(10, 4)) == [0, 3, 6, 8, 10]
    assert list(tile_edges(3, 64)) == [0, 1, 2, 3]  # never more tiles than positions
    with pytest.raises(BadInput):
        tile_edges(10, 0)


@pytest.mark.parametrize("which,n,tiles,rows", [("llama", 300, 64, 50), ("llama", 256, 16, 50), ("mistral", 203, 10, 50),
                                                ("mistral", 203, 10, 7), ("llama", 300, 8, 16)])
def test_pooled_tiles_equal_a_straightforward_pooling(which, n, tiles, rows, llama, mistral):
    """rows below a tile row's height (7 and 16 rows for tile rows of 20-21 and 37-38): parts of a tile row."""
    r, la = _pair({"llama": llama, "mistral": mistral}[which], n)
    g = pooled_grid(la, tiles=tiles, rows=rows)
    assert list(g.edges) == list(tile_edges(n, tiles))
    np.testing.assert_allclose(g.mean, _dense_pool(r.attention, g.edges, "mean"), atol=1e-7)
    np.testing.assert_allclose(g.max, _dense_pool(r.attention, g.edges, "max"), atol=1e-7)
    s = summarise(la, tiles=tiles, rows=rows)  # the summaries' pass pools the same way
    np.testing.assert_allclose(s.pooled.mean, g.mean, atol=1e-7)
    np.testing.assert_allclose(s.pooled.max, g.max, atol=1e-7)
    assert g.payload_bytes("mean", "float16") == la.n_layers * la.n_heads * len(g.edges[1:]) ** 2 * 2
    assert 0 < g.payload_bytes("max", "png")


@pytest.mark.parametrize("layers,heads,group,t", [(6, 12, 1, 64), (30, 9, 3, 16), (2, 4, 2, 8)])
def test_pooled_grid_draws_square_tiles(layers, heads, group, t):
    from attnviz.long import figures as lf

    tiles = np.random.default_rng(0).random((layers, heads, t, t)).astype(np.float32)
    fig = lf.pooled_grid_figure(tiles, tile_edges(t * 5, t), group, "mean")
    z = np.asarray(fig.data[0].z)
    rows, cols = z.shape
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1  # one tile = one square
    assert fig.layout.xaxis.constrain == "domain" and fig.layout.yaxis.constrain == "domain"
    # the axes span the mosaic exactly (no padding around it), the first layer on top
    assert tuple(fig.layout.xaxis.range) == (-0.5, cols - 0.5) and tuple(fig.layout.yaxis.range) == (rows - 0.5, -0.5)
    # at the page's width the height leaves no blank band: the plot's height is rows tiles of the width's size
    plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    if lf.GRID_MIN_HEIGHT < fig.layout.height < lf.GRID_MAX_HEIGHT:
        assert plot_h / rows == pytest.approx(lf.GRID_PLOT_WIDTH / cols, rel=0.02)


# ------------------------------------------------------------------ memory
def test_memory_estimate_counts_the_record_and_is_checked_against_free_memory():
    from attnviz.long.memory import check_long_fits, long_memory_estimate, long_memory_parts, max_long_tokens
    from attnviz.types import ModelFacts

    smol = ModelFacts("smollm2", "decoder", "LlamaForCausalLM", 30, 9, 3, 576, 8192)
    parts = long_memory_parts(smol, 4096, d_ff=1536)
    assert parts["record"] == 4 * 4096 * 64 * 30 * (9 + 3)  # 377 MB: q for 9 heads, k for 3 KV heads
    est = long_memory_estimate(smol, 4096, d_ff=1536)
    assert 0.5e9 < est < 2e9 and long_memory_estimate(smol, 8192) > 2 * long_memory_estimate(smol, 4096) * 0.9
    assert check_long_fits(smol, 4096, available=10 ** 10) == long_memory_estimate(smol, 4096)
    with pytest.raises(BadInput, match=r"4,096 tokens on smollm2 need about .* Choose at most [\d,]+ tokens"):
        check_long_fits(smol, 4096, available=300 * 2 ** 20)
    fits = max_long_tokens(smol, available=300 * 2 ** 20)
    assert long_memory_estimate(smol, fits) <= 300 * 2 ** 20 < long_memory_estimate(smol, fits + 1)
    assert max_long_tokens(smol, available=10 ** 12) == 8192  # capped at the context


def test_a_length_that_does_not_fit_is_refused_before_the_pass(llama, monkeypatch):
    import attnviz.long.memory as memory

    monkeypatch.delenv("ATTNVIZ_SKIP_MEMORY_CHECK", raising=False)
    monkeypatch.setattr(memory, "available_bytes", lambda: 10_000)
    with pytest.raises(BadInput, match="512 tokens on tiny-llama-long need about"):
        record(llama, TEXT, max_tokens=512)
    assert llama.model.config._attn_implementation == "eager"


def test_summaries_report_progress_and_can_be_cancelled(llama):
    _, la = _pair(llama, 100)
    seen = []
    summarise(la, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
    calls = []
    with pytest.raises(Cancelled, match="cancelled"):
        summarise(la, rows=32, cancelled=lambda: calls.append(1) or len(calls) > 2)


def test_a_one_token_input_still_summarises(llama):
    import dataclasses

    _, la = _pair(llama, 16)
    one = dataclasses.replace(la, query=la.query[:, :, :1].copy(), key=la.key[:, :, :1].copy(),
                              key_mask=la.key_mask[:1].copy(), tokens=la.tokens[:1], token_ids=la.token_ids[:1],
                              special_mask=la.special_mask[:1].copy())
    s = summarise(one)
    assert one.seq_len == 1 and s.nats.shape == (2, 6, 1) and (one.head(1, 5) == 1).all()
    np.testing.assert_allclose(s.sink, 1, atol=1e-6)
    np.testing.assert_allclose(s.roles["self"], 1, atol=1e-6)
    assert np.isnan(s.roles["prev"]).all() and (s.mean_distance == 0).all()
