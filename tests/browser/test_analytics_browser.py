"""Chromium: selecting an entropy cell opens that head; the analytics pages render at ~512 tokens."""
import re
import time

import pytest

from tests.browser.helpers import choose, click_marker, open_path, plot_z, url_params, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser



_open = open_path


def test_clicking_an_entropy_cell_opens_that_head(page, app_server):
    _open(page, app_server, "/entropy")
    i = wait_plot(page, title="Mean normalised entropy")
    z = plot_z(page, i)
    assert len(z) == 6 and len(z[0]) == 12 and all(0 <= v <= 1 for row in z for v in row)
    click_marker(page, i, 7, 3)
    page.wait_for_url(re.compile(r"/heatmap"), timeout=60_000)
    page.wait_for_selector("text=Layer 3, head 7", timeout=60_000)


def test_the_entropy_pages_picked_head_is_in_the_link(page, app_server):
    _open(page, app_server, "/entropy")
    choose(page, "Layer", "2")
    choose(page, "Head", "5")
    wait_plot(page, title="layer 2, head 5")
    assert (url_params(page)["en_layer"], url_params(page)["en_head"]) == ("2", "5")
    shapes = lambda: page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullLayout.shapes.length",
                                   wait_plot(page, title="Mean normalised entropy"))
    assert shapes() == 0  # the grid frames no head: the bars' title names theirs
    page.reload()
    wait_for_app(page)
    wait_plot(page, title="layer 2, head 5")
    assert page.get_by_role("combobox", name="Head", exact=True).first.input_value() == "5"


def test_rollout_fusion_under_alti_says_heads_summed_and_keeps_the_choice(page, app_server):
    _open(page, app_server, "/rollout?ro_fusion=max&lens=ALTI")
    box = page.get_by_role("combobox", name="Head fusion", exact=True).first
    assert box.is_disabled() and box.input_value() == "heads summed"
    wait_plot(page, title="ALTI contributions, layer")
    page.locator('[data-testid="stSidebar"]').get_by_text("attention weights", exact=True).click()
    time.sleep(0.5)
    wait_for_app(page)
    box = page.get_by_role("combobox", name="Head fusion", exact=True).first
    assert box.is_enabled() and box.input_value() == "max"
    wait_plot(page, title="(max of heads)")
    assert url_params(page)["ro_fusion"] == "max"


def test_clicking_a_role_cell_opens_that_head(page, app_server):
    _open(page, app_server, "/head_roles")
    i = wait_plot(page, title="Strongest role")
    click_marker(page, i, 2, 0)
    page.wait_for_url(re.compile(r"/heatmap"), timeout=60_000)
    page.wait_for_selector("text=Layer 0, head 2", timeout=60_000)


def test_a_heads_strongest_pairs_settings_are_in_the_link(page, app_server):
    _open(page, app_server, "/head_roles?hr_words=12&hr_seqs=1")
    section = page.locator('[data-testid="stMain"]')
    pairs = section.get_by_text("strongest pairs have the key at")
    pairs.first.wait_for(timeout=120_000)
    page.locator(".st-key-hr_pairs_self").get_by_text("Leave out a token attending to itself").click()
    time.sleep(0.5)
    wait_for_app(page)
    assert url_params(page).get("hr_pairs_self") == "1"
    page.reload()
    wait_for_app(page, 180)
    pairs.first.wait_for(timeout=120_000)
    assert page.locator(".st-key-hr_pairs_self input").is_checked()
    assert " (offset +0)" not in section.inner_text()  # no pair of a token with itself is the most common


def test_clicking_an_induction_cell_opens_the_head_on_the_repeated_words(page, app_server, minilm):
    """The duplicate-token map of the default model: clicking its strongest head opens it on the
    heatmap page with the random repeated sequence as the text, where the stripe shows."""
    import numpy as np

    from attnviz.metrics.induction import repeated_text

    _open(page, app_server, "/head_roles?hr_words=12&hr_seqs=1")
    i = wait_plot(page, title="Duplicate-token score per head")
    z = np.array(plot_z(page, i), dtype=float)
    assert z.shape == (6, 12) and 0 <= z.min() and z.max() <= 1
    layer, head = np.unravel_index(int(z.argmax()), z.shape)
    click_marker(page, i, int(head), int(layer))
    page.wait_for_url(re.compile(r"/heatmap"), timeout=60_000)
    page.wait_for_selector(f"text=Layer {layer}, head {head}", timeout=60_000)
    text = repeated_text(minilm.tokenizer, 12, 0).text
    assert page.get_by_role("textbox", name="Text").input_value() == text
    wait_for_app(page)
    m = np.array(plot_z(page, wait_plot(page, ytitle="query")), dtype=float)
    assert m.shape == (26, 26)  # [CLS] + 2 x 12 words + [SEP]
    # the duplicate stripe: second-copy rows put the head's score's worth of weight on the first copy
    assert np.mean([m[13 + k, 1 + k] for k in range(12)]) == pytest.approx(z[layer, head], abs=2e-3)


@pytest.mark.parametrize("path,title", [("/entropy", "per head · 512 tokens"), ("/rollout", "Rollout through"),
                                        ("/head_roles", "Strongest role"), ("/compare", "A: minilm")],
                         ids=["entropy", "rollout", "head_roles", "compare"])
def test_pages_render_at_512_tokens(page, app_server, path, title):
    _open(page, app_server, path)
    choose(page, "Example", "A long text (~512 tokens)")
    time.sleep(0.5)
    wait_for_app(page, 180)
    if path == "/compare":  # B must have the same length: the same long text
        assert page.get_by_text("different lengths").count() >= 1
        return
    wait_plot(page, title=title, timeout=180)
    assert page.locator('[data-testid="stException"]').count() == 0
