"""Chromium: the paths that only a visitor's path through the browser shows, each
reproduced click by click (AppTest sets state directly and never met them)."""
from __future__ import annotations

import re
import time

import pytest

from tests.browser.helpers import (click_marker, exception_texts, link_box_text, nav_to, open_path,
                                   set_sidebar_text, sidebar_model, sidebar_text, url_params, wait_plot)
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

# Plain words that are single WordPiece tokens, none of them in the default sentence.
USER_TEXT = "My dog likes green apples and warm bread."
USER_WORDS = ("green", "apples", "bread")
DEFAULT_TEXT = "The cat sat on the mat because it was tired."


def _no_traceback(page, where: str):
    boxes = exception_texts(page)
    assert not boxes, f"{where}: a traceback is on screen: " + " || ".join(b.strip()[:300] for b in boxes)


def _start(page, app_server, text: str | None = USER_TEXT):
    """A fresh session on the home page, with `text` typed into the sidebar."""
    open_path(page, app_server, "/")
    if text is not None:
        set_sidebar_text(page, text)
        assert sidebar_text(page) == text
        assert url_params(page).get("text") == text, page.url


def _heatmap_tokens(page) -> list[str]:
    """The token labels on the heatmap page's single-head heatmap (its query axis)."""
    i = wait_plot(page, ytitle="query")
    return page.evaluate("""(i) => { const l = document.querySelectorAll('.js-plotly-plot')[i]._fullLayout;
        return (l.yaxis.ticktext || []).map(String).concat((l.xaxis.ticktext || []).map(String)); }""", i)


def _assert_heatmap_keeps(page, model: str, layer: int, head: int, where: str):
    page.wait_for_url(re.compile(r"/heatmap"), timeout=60_000)
    wait_for_app(page)
    _no_traceback(page, where)
    assert sidebar_text(page) == USER_TEXT, f"{where}: the heatmap opened on {sidebar_text(page)!r}, not the user's text"
    assert sidebar_model(page) == model, f"{where}: the model became {sidebar_model(page)!r} (was {model!r})"
    params = url_params(page)
    assert params.get("text") == USER_TEXT, f"{where}: the URL lost the text: {page.url}"
    page.wait_for_selector(f"text=Layer {layer}, head {head}", timeout=60_000)
    tokens = " ".join(_heatmap_tokens(page)).lower()
    for w in USER_WORDS:
        assert w in tokens, f"{where}: the heatmap does not show the user's word {w!r} (tokens: {tokens[:200]})"


# ---------------------------------------------------------------------------------------------- 1

SOURCES = {  # "What to watch" option -> what starts it
    "Fine-tune BERT": "▶ Fine-tune MiniLM",
    "Checkpoint series": "▶ Load the series",
    "Run file": None,  # the file uploader
}


@pytest.mark.parametrize("source", list(SOURCES))
def test_training_sources_start_without_a_traceback(page, app_server, source, tmp_path):
    """Fresh session -> Training evolution -> 'What to watch' = source -> its button: no traceback
    (was: `'tr_source' - it is bound to a widget` from share.sync_url after st.rerun())."""
    from attnviz.models.registry import PACKAGED, package_dir

    sent = []  # what the page sends the server
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(payload)))
    _start(page, app_server, text=None)
    nav_to(page, "Training evolution")
    _no_traceback(page, "opening Training evolution")
    group = page.locator('[data-testid="stButtonGroup"]').filter(has=page.locator('[aria-label="What to watch"]'))
    group.get_by_role("radio", name=source).click()
    time.sleep(0.5)
    wait_for_app(page)
    _no_traceback(page, f"choosing '{source}'")
    url_after_choice = page.url  # checked at the end, after the traceback checks

    if source == "Checkpoint series":  # two checkpoints: the packaged MiniLM's folder, twice
        folder = next(p.parent for p in sorted(package_dir(PACKAGED["minilm"].package).rglob("config.json"))
                      if (p.parent / "tokenizer.json").exists() or (p.parent / "vocab.txt").exists())
        area = page.get_by_role("textbox", name="Checkpoints of one model, in training order (one per line)")
        sent.clear()
        area.fill(f"{folder}\n{folder}")
        area.press("Control+Enter")  # committed, and sent with the button's press: the list reruns nothing
        time.sleep(0.5)
        wait_for_app(page)
        assert not sent, f"committing the checkpoint list sent {len(sent)} message(s)"
    if SOURCES[source]:
        page.get_by_role("button", name=SOURCES[source]).click()
    else:
        from tests.conftest import ROOT

        page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(ROOT / "assets/runs/copy.npz"))
    # the job starts (progress) or finishes (frames); either way no traceback, at any moment
    frames = page.get_by_text("Training step (scrub through the snapshots)")
    progress = page.locator('[data-testid="stMain"] [data-testid="stProgress"]')
    deadline = time.time() + 90
    started = False
    while time.time() < deadline and not started:
        _no_traceback(page, f"'{source}' just after its button")
        started = progress.count() > 0 or frames.count() > 0
        time.sleep(0.3)
    _no_traceback(page, f"'{source}' after its button")
    assert started, f"'{source}': pressing its button neither showed progress nor frames within 90 s"
    if source == "Fine-tune BERT":  # it runs live, step by step: watch it move, then cancel it
        deadline = time.time() + 120
        while time.time() < deadline and not page.get_by_text(re.compile(r"step \d+ of \d+")).count():
            _no_traceback(page, "fine-tuning live")
            time.sleep(0.5)
        assert page.get_by_text(re.compile(r"step \d+ of \d+")).count(), "fine-tuning shows no live progress"
        page.get_by_role("button", name="Cancel").first.click()
    else:  # the series / the file loads as frames
        frames.first.wait_for(timeout=180_000)
        if source == "Checkpoint series":
            assert sent, "the button's press sent nothing that the page's listener saw"  # so the check above can fail
    deadline = time.time() + 120  # the job has ended (the server runs one at a time)
    while time.time() < deadline and progress.count():
        time.sleep(0.5)
    assert not progress.count(), f"'{source}': the job did not end"
    wait_for_app(page, timeout=180)
    _no_traceback(page, f"'{source}' at the end")
    assert f"tr_source={source.replace(' ', '+')}" in url_after_choice, f"choosing '{source}' left it out of the URL: {url_after_choice}"
    assert url_params(page).get("tr_source") == source, f"the URL lost the source: {page.url}"


# ---------------------------------------------------------------------------------------------- 2

def test_entropy_open_head_keeps_text_and_model(page, app_server):
    """Changed text -> Entropy -> 'Open this head on the heatmap page': the heatmap shows the
    user's text and model (was: the default text)."""
    _start(page, app_server)
    model = sidebar_model(page)
    nav_to(page, "Entropy")
    _no_traceback(page, "Entropy")
    from tests.browser.helpers import choose

    choose(page, "Layer", "3")
    choose(page, "Head", "7")
    page.get_by_role("button", name="Open this head on the heatmap page").click()
    _assert_heatmap_keeps(page, model, 3, 7, "Entropy -> Open this head")


def test_head_roles_cell_keeps_text_and_model(page, app_server):
    """Changed text -> Head roles -> click a role cell: the heatmap shows the user's text and model."""
    _start(page, app_server)
    model = sidebar_model(page)
    nav_to(page, "Head roles")
    _no_traceback(page, "Head roles")
    i = wait_plot(page, title="Strongest role")
    click_marker(page, i, 2, 0)  # layer 0, head 2
    _assert_heatmap_keeps(page, model, 0, 2, "Head roles -> role cell L0 H2")


# ---------------------------------------------------------------------------------------------- 3

def test_ablation_heads_survive_leaving_the_page(page, app_server):
    """Ablation: L0 H2 off -> Entropy -> back to Ablation: no traceback (was: 'ab_heads'); the
    sidebar keeps 'Link to this view'; the URL keeps model and text."""
    _start(page, app_server)
    nav_to(page, "Ablation")
    _no_traceback(page, "Ablation")
    box = page.get_by_role("combobox", name="Heads to switch off")
    box.click()
    box.fill("L0 H2")
    page.get_by_role("option", name="L0 H2", exact=True).first.click()
    page.keyboard.press("Escape")
    time.sleep(0.5)
    wait_for_app(page)
    _no_traceback(page, "Ablation with L0 H2 off")
    nav_to(page, "Entropy")
    _no_traceback(page, "Entropy after ablating L0 H2")
    nav_to(page, "Ablation")
    _no_traceback(page, "back on Ablation")
    assert link_box_text(page) is not None, "the sidebar lost 'Link to this view' after coming back to Ablation"
    params = url_params(page)
    assert params.get("text") == USER_TEXT, f"the URL lost the text: {page.url}"
    assert "model_choice" in params, f"the URL lost the model: {page.url}"
    assert sidebar_text(page) == USER_TEXT
    assert "L0 H2" in page.locator('[data-testid="stMultiSelect"]').first.inner_text(), \
        "L0 H2 is no longer switched off after coming back"


# ---------------------------------------------------------------------------------------------- 4

def test_positional_link_restores_tab_and_position(page, app_server):
    """A link with ?pe_tab=RoPE&pe_rope_m=7 opens the RoPE tab at position m = 7, and the sidebar's
    'Link to this view' carries both."""
    open_path(page, app_server, "/positional?pe_tab=RoPE&pe_rope_m=7")
    _no_traceback(page, "the positional link")
    tab = page.get_by_role("tab", name="RoPE")
    assert tab.get_attribute("aria-selected") == "true", "the link did not open the RoPE tab"
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="Position m").first
    value = slider.evaluate("""e => { const s = e.querySelector('[role="slider"]');
        const t = e.querySelector('[data-testid="stSliderThumbValue"]');
        return s && s.getAttribute('aria-valuenow') ? s.getAttribute('aria-valuenow') : (t ? t.innerText.trim() : null); }""")
    assert str(value) == "7", f"Position m is {value}, not 7"
    link = link_box_text(page)
    assert link is not None, "the sidebar has no 'Link to this view' box"
    assert "pe_tab=RoPE" in link and "pe_rope_m=7" in link, f"the share link lost the page's settings: {link}"
    params = url_params(page)
    assert params.get("pe_tab") == "RoPE" and params.get("pe_rope_m") == "7", page.url
