"""Chromium: the indirect-object task analysed with its accuracy, the patching map beside attribution patching with
their correlation, direct logit attribution; a click on a head cell moves 'Why it attends' to that head, and a full
page load of the link keeps the task and the head (on a tiny random Llama from a folder, so the browser's path is
tested in seconds; the maps' numbers are checked in tests/app/test_causal_page.py). On the default MiniLM, sentence
similarity analysed, and your own pair's reference sentence typed in changes the clean score. On SmolLM2, your own
pair of different lengths is a plain message showing both tokenisations."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import numpy as np
import pytest

from tests.browser.helpers import click_marker, exception_texts, url_params, wait_plot
from tests.conftest import wait_for_app
from tests.skips import SMOLLM2

pytestmark = pytest.mark.browser

N_LAYERS, N_HEADS = 2, 4  # the tiny Llama of tests/tiny_models.py
CHOSEN = re.compile(r"Layer (\d+), head (\d+): exact patching (-?[\d.]+)")
MAP_JS = """(t) => { const el = [...document.querySelectorAll('.js-plotly-plot')].find(
    e => ((e._fullLayout.title || {}).text || '').includes(t));
  return el ? Array.from(el._fullData[0].z, row => Array.from(row)) : null; }"""


def _smollm2_installed() -> bool:
    from attnviz.models.registry import PACKAGED, package_dir

    return package_dir(PACKAGED["smollm2"].package) is not None


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> str:
    from tests.tiny_models import build

    model, tok, _ = build("llama", seed=3)
    folder = tmp_path_factory.mktemp("tiny-llama-causal")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def _open(page, app_server, folder: str | None = None, model: str = "smollm2", **params) -> None:
    model = {"model_choice": "other", "custom_model": folder} if folder else {"model_choice": model}
    page.goto(app_server.url + "/causal?" + urlencode({**model, **params}))
    page.wait_for_selector("text=Model and text", timeout=120_000)
    wait_for_app(page, 180)


def _analysed(page) -> None:
    """Wait for the analysis' maps (the predictions and the accuracy come before it)."""
    wait_plot(page, title="Exact patching of each head", timeout=240)
    wait_for_app(page, 120)


def _chosen(page) -> tuple[int, int, float]:
    text = page.locator("[data-testid=stCaptionContainer]", has_text=CHOSEN).first.inner_text()
    m = CHOSEN.search(text)
    return int(m.group(1)), int(m.group(2)), float(m.group(3))


def test_ioi_maps_a_clicked_head_and_the_link_after_a_reload(page, app_server, tiny_llama):
    _open(page, app_server, tiny_llama, ca_task="ioi", ca_pairs=2)
    assert page.locator(".js-plotly-plot").count() == 0  # the predictions first; nothing patched yet
    page.get_by_text("Clean accuracy").first.wait_for()
    page.get_by_role("button", name="▶ Analyse").click()
    _analysed(page)
    accuracy = page.locator("[data-testid=stMetric]", has_text="Clean accuracy").inner_text()
    assert re.search(r"(0|50|100)%", accuracy)  # two pairs: each right or wrong
    exact = np.array(page.evaluate(MAP_JS, "Exact patching of each head"), dtype=float)
    estimate = np.array(page.evaluate(MAP_JS, "Attribution patching (estimate)"), dtype=float)
    assert exact.shape == estimate.shape == (N_LAYERS, N_HEADS)
    r = np.corrcoef(exact.ravel(), estimate.ravel())[0, 1]
    assert wait_plot(page, title=f"Pearson r = {r:.3f}") >= 0  # the title's r is the maps' own
    # the head chosen first is the one with the largest |effect|, its value in the caption
    layer, head, value = _chosen(page)
    assert np.abs(exact).max() == pytest.approx(abs(exact[layer, head]), abs=1e-9)
    assert value == pytest.approx(exact[layer, head], abs=1e-3)
    wait_plot(page, title=f"L{layer} H{head}: its output patched at one position")
    bars = page.evaluate("(t) => { const el = [...document.querySelectorAll('.js-plotly-plot')].find(e => (("
                         "e._fullLayout.title || {}).text || '').includes(t)); return el ? el._fullData[0].y.length "
                         ": null; }", f"L{layer} H{head}: its output patched at one position")
    assert bars == 14  # the head chosen, one bar per position of the first prompt
    whole = page.locator("[data-testid=stMetric]", has_text="Every position").inner_text().split("\n")[-1]
    assert float(whole) == pytest.approx(exact[layer, head], abs=1e-3)
    page.get_by_role("tab", name="Direct logit attribution").click()
    wait_plot(page, title="Direct logit attribution per head")  # the tab runs when it opens
    wait_for_app(page)
    wait_plot(page, title=f"L{layer} H{head}: its direct logit attribution by the position it reads")
    wait_for_app(page)
    assert page.locator(".js-plotly-plot").count() == 3  # its figures alone: heads, MLPs, the head by position
    dla = np.array(page.evaluate(MAP_JS, "Direct logit attribution per head"), dtype=float)
    assert dla.shape == (N_LAYERS, N_HEADS) and np.abs(dla).max() > 0

    # a click on another cell of the patching map: why-it-attends follows, and the link carries it
    page.get_by_role("tab", name="Patching").click()
    target = (1, 2) if (layer, head) != (1, 2) else (0, 3)
    click_marker(page, wait_plot(page, title="Exact patching of each head"), target[1], target[0])
    page.wait_for_function("(t) => [...document.querySelectorAll('[data-testid=stCaptionContainer]')].some("
                           "e => e.innerText.startsWith(t))", arg=f"Layer {target[0]}, head {target[1]}:",
                           timeout=60_000)
    wait_for_app(page)
    assert _chosen(page)[:2] == target
    page.get_by_role("tab", name="Why it attends").click()
    assert wait_plot(page, title=f"What L{target[0]} H{target[1]} writes") >= 0
    assert wait_plot(page, title=f"L{target[0]} H{target[1]}:") >= 0
    wait_for_app(page)  # the link is written as the run ends
    params = url_params(page)
    assert (params.get("layer"), params.get("head"), params.get("ca_task")) == (str(target[0]), str(target[1]), "ioi")
    assert params.get("ca_tab") == "Why it attends"
    assert page.locator(".js-plotly-plot").count() == 4  # only the open tab's figures: split, writes, OV, QK

    # a full page load of the link: a new session analyses the same task again, on the same head and tab
    page.reload()
    page.wait_for_selector("text=Model and text", timeout=120_000)
    assert wait_plot(page, title=f"What L{target[0]} H{target[1]} writes", timeout=240) >= 0
    wait_for_app(page, 120)
    assert _chosen(page)[:2] == target
    assert page.locator(".st-key-ca_task button[aria-checked=true], .st-key-ca_task button[kind*=Active]",
                        has_text="Indirect object").count() == 1
    assert exception_texts(page) == []


@pytest.mark.skipif(not _smollm2_installed(), reason=SMOLLM2)
def test_your_own_pair_of_different_lengths_is_a_plain_message(page, app_server):
    _open(page, app_server, ca_task="user", ca_clean="The cat sat on the mat, so the cat",
          ca_corrupted="The dog sat on the enormous mat, so the cat", ca_answer=" purred", ca_wrong=" barked")
    warning = page.locator("[data-testid=stAlert]", has_text="patching needs the same number").first
    warning.wait_for(timeout=60_000)
    said = warning.inner_text()
    assert re.search(r"The clean prompt has \w+ tokens and the corrupted prompt \w+", said)
    clean, corrupted = said.split("Clean: ")[1].split("Corrupted: ")  # both tokenisations, tokens split by " | "
    assert "enormous" in corrupted and "enormous" not in clean
    assert corrupted.count(" | ") > clean.count(" | ") >= 9
    assert page.locator(".js-plotly-plot").count() == 0 and exception_texts(page) == []


def _metric(page, label: str) -> str:
    return page.locator("[data-testid=stMetric]", has_text=label).first.inner_text().split("\n")[-1]


def test_an_encoders_sentence_similarity_and_its_own_reference_sentence(page, app_server):
    _open(page, app_server, model="minilm", ca_pairs=2)
    assert page.locator(".st-key-ca_task button", has_text="Sentence similarity").count() == 1
    assert page.locator(".st-key-ca_task button", has_text="Indirect object").count() == 0
    page.get_by_text("Clean accuracy").first.wait_for()
    clean, corrupted = (float(_metric(page, f"{w}: cosine similarity")) for w in ("Clean", "Corrupted"))
    assert -1 <= corrupted < clean <= 1
    page.get_by_role("button", name="▶ Analyse").click()
    _analysed(page)
    exact = np.array(page.evaluate(MAP_JS, "Exact patching of each head"), dtype=float)
    assert exact.shape == (6, 12) and np.abs(exact).max() > 0.01  # MiniLM: 6 layers of 12 heads
    page.get_by_role("tab", name="Direct logit attribution").click()
    page.get_by_text("is an encoder scored by sentence similarity").first.wait_for()

    # your own pair: the reference sentence box, typed into, moves the clean sentence's score
    page.locator(".st-key-ca_task button", has_text="Your own pair").click()
    box = page.locator(".st-key-ca_reference input")
    box.wait_for(timeout=60_000)
    wait_for_app(page)
    before = _metric(page, "Clean: cosine similarity")
    box.fill("A quiet evening at home with a good book.")
    box.press("Enter")
    page.wait_for_function("(b) => [...document.querySelectorAll('[data-testid=stMetric]')].some("
                           "e => e.innerText.startsWith('Clean: cosine') && !e.innerText.endsWith(b))",
                           arg=before, timeout=60_000)
    wait_for_app(page)
    assert url_params(page).get("ca_reference") == "A quiet evening at home with a good book."
    assert exception_texts(page) == []
