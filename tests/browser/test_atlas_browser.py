"""Chromium: the Head atlas runs the default corpus from the page (progress, then the views), ranks a
pattern, and a click on the best head opens it on the heatmap page on its most typical corpus sentence."""
import shutil
import time

import numpy as np
import pytest

from attnviz.atlas.corpus import default_corpus
from attnviz.ui.atlas import folder_for
from tests.browser.helpers import (choose, click_marker, exception_texts, plot_z, sidebar_text, url_params,
                                   wait_plot)
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def test_run_default_corpus_rank_a_pattern_and_open_the_head(page, app_server):
    shutil.rmtree(folder_for("minilm", default_corpus(), True), ignore_errors=True)
    page.goto(app_server.url + "/atlas")
    wait_for_app(page)
    before = sidebar_text(page)
    page.get_by_role("button", name="▶ Run the corpus").click()
    page.get_by_text("sentences ·").first.wait_for(timeout=60_000)  # the job's progress line
    # the run takes ~95 s of processor time: many minutes on a busy machine
    page.get_by_text("Done: 214 of 214 sentences stored").first.wait_for(timeout=900_000)
    wait_for_app(page)
    assert page.get_by_role("button", name="Stored: complete").is_disabled()  # nothing to resume
    page.get_by_role("tab", name="Patterns").click()
    time.sleep(0.5)
    wait_for_app(page)
    i = wait_plot(page, title="Pattern score · offset -1")
    assert url_params(page).get("at_tab") == "Patterns"  # the open tab goes into the link
    # another pattern reruns the tab's part alone; the click below then opens a head from the part's figure
    choose(page, "Pattern", "attend to the first token")
    first = np.asarray(plot_z(page, wait_plot(page, title="Pattern score · attend to the first token")), dtype=float)
    assert url_params(page).get("at_kind") == "first"  # the pattern goes into the link too
    choose(page, "Pattern", "attend to the token at a fixed offset (−1 = previous, +1 = next)")
    i = wait_plot(page, title="Pattern score · offset -1")
    assert url_params(page).get("at_tab") == "Patterns"
    z = np.asarray(plot_z(page, i), dtype=float)
    layer, head = np.unravel_index(np.nanargmax(z), z.shape)
    assert z[layer, head] > 0.5  # MiniLM has a previous-token head
    assert first.shape == z.shape and not np.allclose(first, z)  # the two patterns rank the heads differently
    click_marker(page, i, float(head), float(layer))
    deadline = time.time() + 60
    while time.time() < deadline and "/heatmap" not in page.url:
        time.sleep(0.3)
    wait_for_app(page)
    wait_plot(page, ytitle="query")
    assert "/heatmap" in page.url
    params = url_params(page)
    assert (params.get("layer"), params.get("head")) == (str(layer), str(head))
    assert page.get_by_text(f"Layer {layer}, head {head}").count() >= 1
    texts = set(default_corpus().texts)
    assert sidebar_text(page) in texts  # the head's most typical corpus sentence
    assert not exception_texts(page)
    # the atlas's statistics are about words: the heatmap opens at word level too
    assert params.get("words") == "1"
    # the sidebar says what replaced the text and offers it back, with Word level as it was
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.get_by_text(f"The Head atlas opened layer {layer}, head {head}").count() == 1
    assert sidebar.get_by_text("Word level is now on").count() == 1
    sidebar.get_by_role("button", name="Back to my text").click()
    time.sleep(0.5)
    wait_for_app(page)
    assert sidebar_text(page) == before
    assert url_params(page).get("words") in (None, "0")
    assert sidebar.get_by_role("button", name="Back to my text").count() == 0


def test_an_uploaded_file_parsed_by_spacy_runs_end_to_end(page, app_server, tmp_path):
    """A user's .txt file, parsed by spaCy: the run stores it and the syntax tab reports silver parses."""
    from attnviz.atlas import corpus as cp

    lines = ["The teacher praised the clever student.", "A small dog chased the old cat near the house.",
             "My sister reads long books in the garden.", "The pilot greeted the tired passengers.",
             "Her brother found a red kite under the bridge.", "The judge trusted the honest witness."]
    path = tmp_path / "my sentences.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = cp.from_text(path.read_bytes(), path.name)
    shutil.rmtree(folder_for("minilm", corpus, True), ignore_errors=True)
    page.goto(app_server.url + "/atlas")
    wait_for_app(page)
    page.get_by_text("A file (.txt, .csv, .conllu)").click()
    wait_for_app(page)
    page.locator('.st-key-at_upload input[type="file"]').set_input_files(str(path))
    wait_for_app(page)
    page.locator(".st-key-at_parse").get_by_text("Parse with spaCy").click()
    wait_for_app(page)
    page.get_by_role("button", name="▶ Run the corpus").click()
    page.get_by_text("Done: 6 of 6 sentences stored").first.wait_for(timeout=300_000)
    wait_for_app(page)
    assert "my sentences.txt" in page.get_by_role("combobox", name="Stored run").input_value()
    page.get_by_role("tab", name="Syntax").click()
    time.sleep(0.5)
    wait_for_app(page)
    page.get_by_text("silver").first.wait_for(timeout=30_000)
    assert page.get_by_text("spaCy").count() >= 1
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1
    wait_plot(page, title="Dependencies (blue)")
    assert not exception_texts(page)
