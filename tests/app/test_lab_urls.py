"""AppTest: a link to a lab page restores its main settings, changes the figures as the maths says,
and shows no Session State warning."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import APP
from tests.app.apptest import share_links
from tests.figures import app_figures, decode


def _open(page: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(params)
    at.run()  # the home page
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    assert not [w.value for w in at.warning if "Session State" in w.value]
    return at


def _fig(at, title: str) -> dict:
    """The figure whose title contains `title` (plotly JSON)."""
    for fig in app_figures(at):
        text = ((fig.get("layout") or {}).get("title") or {}).get("text") or ""
        if title in text:
            return fig
    raise AssertionError(f"no figure titled {title!r}")


def _z(fig: dict, trace: int = 0) -> np.ndarray:
    return np.asarray(decode(fig["data"][trace]["z"]), dtype=float)


def _softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], float)  # the worked example
K = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], float)


def test_steps_link_restores_matrix_scaling_and_row():
    q = "2 0 0 0\n0 2 0 0\n0 0 2 0"
    at = _open("lab_steps", {"steps_q": q, "steps_scale": "0", "steps_row": "2"})
    assert at.text_area(key="steps_q").value == q
    assert at.toggle(key="steps_scale").value is False and at.selectbox(key="steps_row").value == 2
    weights = np.asarray(decode(app_figures(at)[2]["data"][0]["z"]), dtype=float)
    expected = _softmax_rows(np.array([[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]], float) @ K.T)  # no ÷ √4
    np.testing.assert_allclose(weights, expected, atol=1e-4)
    assert expected[0, 0] == pytest.approx(np.e ** 2 / (2 * np.e ** 2 + 1))  # row 1 scores 2, 0, 2
    assert "(scaling off)" in " ".join(h.value for h in at.subheader)
    assert "output query 3" in _markdown(at)
    assert not any("0.2312" in i.value for i in at.info)  # the seed-slip note is for the example only


def test_scaling_link_restores_dk_and_key_count():
    at = _open("lab_scaling", {"scaling_dk": "64", "scaling_nkeys": "4"})
    assert at.select_slider(key="scaling_dk").value == 64 and at.select_slider(key="scaling_nkeys").value == 4
    md = _markdown(at)
    assert "at d_k = 64" in md and "uniform: 0.2500" in md and "ln 4 = 1.3863" in md
    std_row = next(line for line in md.splitlines() if line.startswith("| standard deviation"))
    raw_std, scaled_std = (float(c) for c in std_row.strip("| ").split("|")[-2:])
    assert raw_std == pytest.approx(8.0, rel=0.08) and scaled_std == pytest.approx(1.0, rel=0.08)  # √64, 1
    assert at.query_params["scaling_dk"] == "64" and at.query_params["scaling_nkeys"] == "4"  # written back


def test_temperature_link_restores_t_and_row():
    at = _open("lab_temperature", {"temp_T": "0.1", "temp_row": "2"})
    assert at.select_slider(key="temp_T").value == 0.1 and at.selectbox(key="temp_row").value == 2
    w = _z(_fig(at, title="Weights at T = 0.1"))
    np.testing.assert_allclose(w, _softmax_rows(Q @ K.T / (2 * 0.1)), atol=1e-4)
    # row 1: scaled scores 0.5, 0.5, 1.0 become 5, 5, 10, so key 3 gets 1 / (1 + 2 e^-5)
    assert w[0, 2] == pytest.approx(1 / (1 + 2 * np.exp(-5)), abs=1e-4) and w[0, 2] > 0.98
    _fig(at, title="Weights of query 3")


def test_temperature_typed_value_in_link_overrides_slider():
    at = _open("lab_temperature", {"temp_typed": "0.25"})
    w = _z(_fig(at, title="Weights at T = 0.25"))
    np.testing.assert_allclose(w, _softmax_rows(Q @ K.T / (2 * 0.25)), atol=1e-4)


def test_masks_link_restores_lengths_padding_and_kind():
    at = _open("lab_masks", {"masks_lengths": "4, 2", "masks_padto": "6", "masks_kind": "padding", "masks_seq": "1"})
    assert at.radio(key="masks_kind").value == "padding" and at.number_input(key="masks_padto").value == 6
    mask = _z(_fig(at, title="Mask (1 = may attend)"))
    assert mask.shape == (6, 6)
    np.testing.assert_array_equal(mask, np.tile([1, 1, 0, 0, 0, 0], (6, 1)))  # sequence 2: 2 real tokens, no causal
    weights = _z(_fig(at, title="Weights (rows sum to 1 or 0)"))
    assert weights[0, 1] > 0  # the upper triangle is no longer zero
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-3)


def test_multihead_link_restores_shape_seed_and_kv_heads():
    from attnviz.lab.multihead import multi_head_attention, random_params, token_embeddings

    params = {"mh_text": "a b c", "mh_dmodel": "24", "mh_heads": "6", "mh_seed": "3", "mh_kv_6": "2"}
    at = _open("lab_multihead", params)
    assert "d_head = 24 / 6 = **4**" in _markdown(at) and "K and V have 2 head(s)" in _markdown(at)
    assert at.select_slider(key="mh_kv_6").value == 2
    head1 = _z(_fig(at, title="head 1 (KV head 1)"))
    assert head1.shape == (3, 3)
    x = token_embeddings(["a", "b", "c"], 24, seed=3)
    expect3 = multi_head_attention(x, x, random_params(24, 6, 2, seed=3), 6).weights[0]
    x0 = token_embeddings(["a", "b", "c"], 24, seed=0)
    expect0 = multi_head_attention(x0, x0, random_params(24, 6, 2, seed=0), 6).weights[0]
    np.testing.assert_allclose(head1, expect3, atol=1e-4)
    assert np.abs(head1 - expect0).max() > 1e-3  # the seed in the link matters
    # heads 1-3 share KV head 1, heads 4-6 KV head 2
    _fig(at, title="head 3 (KV head 1)"), _fig(at, title="head 4 (KV head 2)")


def test_variants_link_restores_width_seed_and_sentences():
    at = _open("lab_variants", {"var_da": "5", "var_seed": "7", "var_src": "a b c d e"})
    table = at.table[0].value
    bahdanau = table.iloc[0]
    assert bahdanau.iloc[0] == 5 * 3 + 5 * 3 + 5  # W_a (5 × d_s=3), U_a (5 × d_h=3), v_a (5)
    assert _z(_fig(at, title="Self (source → source)")).shape == (5, 5)
    assert _z(_fig(at, title="Cross (target → source)")).shape == (4, 5)


def test_kv_cache_link_restores_prompt_step_and_size():
    at = _open("lab_kv_cache", {"kv_prompt": "hello world", "kv_new": "5", "kv_step": "2",
                                "kv_preset": "tiny demo model", "kv_tokens": "1000"})
    assert at.slider(key="kv_step").value == 2
    cache = _z(_fig(at, title="the cached keys after step 2"))
    assert cache.shape == (4, 12)  # d_head 4 × (11 prompt characters + the one generated at step 1, new at step 2)
    # 2 (K, V) × 2 layers × 2 KV heads × d_head 4 × 1000 tokens × batch 1 × 2 bytes = 64,000 B
    assert at.metric[0].value == "62.5 KiB"  # 64,000 / 1024
    assert "**64,000 bytes**" in _markdown(at)


def test_kv_step_goes_to_the_last_step_when_the_length_changes():
    at = _open("lab_kv_cache", {"kv_new": "5", "kv_step": "2"})
    at.number_input(key="kv_new").set_value(8).run()
    assert at.slider(key="kv_step").value == 8
    at.slider(key="kv_step").set_value(3).run()
    assert _fig(at, title="after step 3")


def test_quiz_link_restores_the_divisibility_demo():
    at = _open("lab_quiz", {"quiz_dmodel": "512", "quiz_heads": "8"})
    assert any("d_head = 64" in s.value for s in at.success)
    assert not [e.value for e in at.error if "not divisible" in e.value]


def test_bad_link_values_fall_back_to_defaults():
    at = _open("lab_scaling", {"scaling_dk": "500", "scaling_nkeys": "x"})
    assert at.select_slider(key="scaling_dk").value == 512 and at.select_slider(key="scaling_nkeys").value == 16
    at = _open("lab_temperature", {"temp_T": "0.3"})
    assert at.select_slider(key="temp_T").value == 0.32  # the nearest notch
    at = _open("lab_masks", {"masks_padto": "99", "masks_kind": "sideways", "masks_seq": "5"})
    assert at.number_input(key="masks_padto").value == 12 and at.radio(key="masks_kind").value == "causal + padding"
    assert at.radio(key="masks_seq").value == 0
    at = _open("lab_multihead", {"mh_heads": "abc", "mh_kv_4": "3"})
    assert at.number_input(key="mh_heads").value == 4 and at.select_slider(key="mh_kv_4").value == 4


def test_a_stopped_page_still_updates_the_url_and_link():
    at = _open("lab_multihead", {})
    at.number_input(key="mh_dmodel").set_value(18).run()  # 18 / 4 heads: the page stops after the message
    assert "not divisible" in at.error[0].value
    assert at.query_params["mh_dmodel"] == "18"
    links = share_links(at.sidebar).split()
    assert len(links) == 1 and "mh_dmodel=18" in links[0]
    assert [p.label for p in at.get("page_link")][-1].startswith("Next: 6")  # the lecture links stay
