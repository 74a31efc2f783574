"""Chromium: SmolLM2 writes 20 tokens on the Generate page with its progress; a click on a written token opens
its step (the text shaded by that step's attention, its candidates), the slider scrubs the steps, and sampling
at another temperature visibly changes the distribution the tokens are drawn from."""
from __future__ import annotations

import re
import time

import pytest

from tests.browser.helpers import exception_texts, plot_index, url_params
from tests.conftest import wait_for_app
from tests.skips import SMOLLM2

pytestmark = pytest.mark.browser

PROMPT = "The capital of France is Paris. The capital of Italy is"
CANDIDATES_JS = """(t) => { const el = [...document.querySelectorAll('.js-plotly-plot')].find(
    e => ((e._fullLayout.title || {}).text || '').includes(t));
  return el ? [Array.from(el._fullData[0].x), Array.from(el._fullData[1].x)] : null; }"""


def _smollm2_installed() -> bool:
    from attnviz.models.registry import PACKAGED, package_dir

    return package_dir(PACKAGED["smollm2"].package) is not None


def _written(page, n: int, timeout: float = 300) -> None:
    page.get_by_text(re.compile(rf"Wrote {n} tokens")).first.wait_for(timeout=timeout * 1000)
    wait_for_app(page, timeout)


def _step_text(page) -> str:
    return page.locator("[data-testid=stMarkdownContainer]", has_text=re.compile(r"Step \d+ wrote")).first.inner_text()


@pytest.mark.skipif(not _smollm2_installed(), reason=SMOLLM2)
def test_generate_click_a_token_scrub_and_sample(page, app_server):
    from urllib.parse import urlencode

    page.goto(app_server.url + "/generate?" + urlencode({"model_choice": "smollm2", "text": PROMPT, "gen_new": 20}))
    page.wait_for_selector("text=Model and text", timeout=120_000)
    wait_for_app(page, 300)
    page.get_by_role("button", name="▶ Generate").click()
    # tokens appear while it runs: the progress line says which token it is on
    page.get_by_text(re.compile(r"token \d+ of 20")).first.wait_for(timeout=300_000)
    _written(page, 20)
    assert "Step 0 wrote" in _step_text(page)
    greedy = page.evaluate(CANDIDATES_JS, "Candidates at step 0")
    assert greedy and abs(greedy[1][0] - 1.0) < 1e-6 and sum(greedy[1][1:]) == 0  # greedy: all on the top token

    # a click on the 4th written token opens step 3: its text shaded over every earlier position
    page.locator('.st-key-gen_token_pick button').nth(3).click()
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMarkdownContainer]')]"
                           ".some(e => e.innerText.includes('Step 3 wrote'))", timeout=120_000)
    wait_for_app(page)
    query = int(re.search(r"position (\d+)", _step_text(page)).group(1))
    weights = page.locator(".attnviz-text span[data-weight]")
    assert weights.count() == query + 1
    total = sum(float(w) for w in weights.evaluate_all("els => els.map(e => e.dataset.weight)"))
    assert abs(total - 1) < 1e-3  # one head's softmax row
    assert plot_index(page, title="Candidates at step 3") >= 0 and url_params(page).get("gen_step") == "3"

    # scrub with the keyboard on the Step slider
    slider = page.get_by_role("slider", name="Step")
    slider.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMarkdownContainer]')]"
                           ".some(e => e.innerText.includes('Step 4 wrote'))", timeout=120_000)
    wait_for_app(page)

    # sampling at temperature 1: the distribution drawn from is the model's own, no longer all on one token
    page.locator(".st-key-gen_mode button", has_text="Sample").click()
    page.get_by_text("The prompt or the settings changed since the last generation").wait_for(timeout=120_000)
    wait_for_app(page)
    page.get_by_role("button", name="▶ Generate").click()
    time.sleep(1)
    _written(page, 20)
    sampled = page.evaluate(CANDIDATES_JS, "Candidates at step 0")
    assert sampled[1][0] < 0.999 and sum(x > 0 for x in sampled[1]) > 1
    for a, b in zip(sampled[0], sampled[1]):
        assert abs(a - b) < 1e-5  # temperature 1, no top-k / top-p: after = before
    assert not exception_texts(page)


@pytest.mark.skipif(not _smollm2_installed(), reason=SMOLLM2)
def test_a_link_with_a_temperature_out_of_range_keeps_its_model_and_text(page, app_server):
    from urllib.parse import urlencode

    page.goto(app_server.url + "/generate?" + urlencode({"model_choice": "smollm2", "text": PROMPT, "gen_temp": 9}))
    page.wait_for_selector("text=Model and text", timeout=120_000)
    wait_for_app(page, 300)
    page.get_by_text("“Temperature” takes values from 0 to 2: 9 was set to 2").first.wait_for(timeout=60_000)
    params = url_params(page)
    assert (params["model_choice"], params["text"], params["gen_temp"]) == ("smollm2", PROMPT, "2.0"), params
    assert page.locator('.st-key-gen_temp input[type="range"]').first.get_attribute("aria-valuetext") == "2.00"
    assert page.locator('[data-testid="stException"]').count() == 0
