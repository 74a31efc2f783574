"""What a heatmap shows: hidden special tokens, renormalisation, pair blocks, colour scaling."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.heatmap.views import block_weights, colour_range, focus_view, select_view

M = np.array([[0.5, 0.2, 0.3],
              [0.1, 0.6, 0.3],
              [0.4, 0.4, 0.2]], dtype=np.float32)
SPECIAL = np.array([True, False, False])


def test_hide_special_renormalises_rows():
    v = select_view(M, SPECIAL, hide_special=True, renormalise=True)
    assert v.rows.tolist() == [1, 2] and v.cols.tolist() == [1, 2]
    np.testing.assert_allclose(v.values, [[0.6 / 0.9, 0.3 / 0.9], [0.4 / 0.6, 0.2 / 0.6]], rtol=1e-6)
    assert v.renormalised


def test_hide_special_without_renormalising_keeps_weights():
    v = select_view(M, SPECIAL, hide_special=True, renormalise=False)
    np.testing.assert_allclose(v.values, [[0.6, 0.3], [0.4, 0.2]])
    assert not v.renormalised


def test_pair_blocks():
    seg = np.array([0, 0, 1])
    v = select_view(M, None, seg, block="A→B")
    assert v.rows.tolist() == [0, 1] and v.cols.tolist() == [2]
    # a block alone never renormalises: the model's own weights (a renormalised block would show 0.6756 for 0.3397)
    np.testing.assert_allclose(v.values[:, 0], [0.3, 0.3])
    assert not v.renormalised
    raw = select_view(M, None, seg, block="B→A", renormalise=False)
    np.testing.assert_allclose(raw.values, [[0.4, 0.4]])


def test_pair_block_with_hidden_specials_renormalises_over_every_visible_key():
    seg = np.array([0, 0, 1])
    v = select_view(M, SPECIAL, seg, block="A→B", hide_special=True, renormalise=True)
    assert v.rows.tolist() == [1] and v.cols.tolist() == [2] and v.renormalised
    np.testing.assert_allclose(v.values, [[0.3 / 0.9]], rtol=1e-6)  # row 1's visible keys: 0.6 + 0.3


def test_pair_block_of_the_real_model_shows_its_weights(minilm):
    from attnviz.extract import extract

    r = extract(minilm, "The cat sat on the mat.", "It was tired.")
    m = r.attention[0, 0]
    v = select_view(m, r.special_mask, r.segment_ids, block="A→B")
    np.testing.assert_array_equal(v.values, m[np.ix_(v.rows, v.cols)])


def test_pair_block_without_pair_is_plain_error():
    with pytest.raises(BadInput, match="second sentence"):
        select_view(M, None, np.zeros(3, int), block="A→A")


def test_hiding_everything_is_plain_error():
    with pytest.raises(BadInput, match="Nothing is left"):
        select_view(M[:1, :1], np.array([True]), hide_special=True)


def test_colour_scales():
    assert colour_range(M, "linear") == (0.0, pytest.approx(0.6), None)
    lo, hi, floor = colour_range(np.arange(101, dtype=np.float32), "clip", 99)
    assert hi == pytest.approx(99.0) and floor is None
    lo, hi, floor = colour_range(np.array([[1e-6, 0.01, 1.0]]), "log")
    assert (lo, hi, floor) == (0.0, 1.0, 1e-4)


def test_log_colorscale_follows_log10_of_the_weight():
    from plotly.colors import get_colorscale, sample_colorscale

    from attnviz.plotting import log_colorscale

    stops = log_colorscale("Viridis", 1e-4, 1.0, n_stops=5)  # weights 1e-4, 1e-3, 1e-2, 1e-1, 1
    positions = [p for p, _ in stops]
    assert positions == sorted(positions) and positions[0] == 0.0 and positions[-1] == 1.0
    np.testing.assert_allclose(positions[1:], [1e-4, 1e-3, 1e-2, 1e-1, 1.0])
    mid = sample_colorscale(get_colorscale("Viridis"), [0.5])[0]
    assert stops[3][1] == mid  # weight 0.01 is half way in log10 between 1e-4 and 1


# --- one token across the heads of a layer, and a pair block's numbers ---------------------------------

LAYER = np.stack([M, M[::-1]])  # (head, query, key): two heads, rows of each sum to 1


def test_focus_row_with_special_tokens_hidden_is_renormalised_by_hand():
    v = focus_view(LAYER, 1, SPECIAL, direction="out", hide_special=True, renormalise=True)
    assert v.positions.tolist() == [1, 2] and v.renormalised
    # head 0, row 1 = [0.1, 0.6, 0.3] -> [0.6, 0.3] / 0.9; head 1, row 1 = M[1] as well (reversed rows)
    np.testing.assert_allclose(v.values, [[0.6 / 0.9, 0.3 / 0.9], [0.6 / 0.9, 0.3 / 0.9]], rtol=1e-6)


def test_focus_column_with_special_tokens_hidden_divides_each_query_by_its_visible_weight():
    v = focus_view(LAYER, 2, SPECIAL, direction="in", hide_special=True, renormalise=True)
    assert v.positions.tolist() == [1, 2]
    # head 0: query 1 puts 0.3 of its 0.9 on token 2; query 2 puts 0.2 of its 0.6
    # head 1 (rows reversed: query 1 = [0.1, 0.6, 0.3], query 2 = [0.5, 0.2, 0.3]): 0.3 / 0.9 and 0.3 / 0.5
    np.testing.assert_allclose(v.values, [[0.3 / 0.9, 0.2 / 0.6], [0.3 / 0.9, 0.3 / 0.5]], rtol=1e-6)


def test_focus_with_special_tokens_hidden_agrees_with_the_heatmap_of_each_head():
    rng = np.random.default_rng(0)
    a = rng.random((3, 6, 6)).astype(np.float32)
    a /= a.sum(-1, keepdims=True)
    special = np.array([True, False, False, False, False, True])
    for renorm in (True, False):
        out = focus_view(a, 3, special, direction="out", hide_special=True, renormalise=renorm)
        col = focus_view(a, 3, special, direction="in", hide_special=True, renormalise=renorm)
        for h in range(3):
            view = select_view(a[h], special, hide_special=True, renormalise=renorm)
            i = view.rows.tolist().index(3)
            np.testing.assert_allclose(out.values[h], view.values[i], rtol=1e-6)
            np.testing.assert_allclose(col.values[h], view.values[:, i], rtol=1e-6)


def test_focus_without_hiding_is_the_raw_row_and_column():
    out = focus_view(LAYER, 0, SPECIAL, direction="out")
    col = focus_view(LAYER, 0, SPECIAL, direction="in")
    np.testing.assert_array_equal(out.values, LAYER[:, 0, :])
    np.testing.assert_array_equal(col.values, LAYER[:, :, 0])
    assert not out.renormalised and out.positions.tolist() == [0, 1, 2]


def test_a_hidden_focus_token_is_a_plain_error():
    with pytest.raises(BadInput, match="special token"):
        focus_view(LAYER, 0, SPECIAL, hide_special=True)


def test_block_weights_are_the_blocks_own_mass_and_maximum():
    mass, largest = block_weights(M, np.array([0, 1]), np.array([2]))  # A = rows 0-1, B = column 2
    assert mass == pytest.approx((0.3 + 0.3) / 2) and largest == pytest.approx(0.3)
    mass, largest = block_weights(M, np.array([2]), np.array([0, 1]))
    assert mass == pytest.approx(0.8) and largest == pytest.approx(0.4)
