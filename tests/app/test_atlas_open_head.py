"""Opening a head from the Head atlas replaces the sidebar's text with the head's typical corpus sentence and sets
Word level to the run's level: the sidebar says so, and its button brings back the text, sentence pair and Word
level from before (or keeps the new ones)."""
import os
from pathlib import Path

import pytest

from attnviz.atlas import corpus as cp
from attnviz.atlas.query import Atlas
from attnviz.atlas.run import run_corpus
from tests.app.apptest import open_page

TEXTS = ["The cat sat on the mat because it was tired.", "A dog chased a small cat near the old house.",
         "Paris is the capital of France."]
MINE = "My own sentence about a heron."


@pytest.fixture(scope="module")
def stored(minilm):
    folder = Path(os.environ["ATTNVIZ_ATLAS_DIR"]) / "apptest-open-head"
    run_corpus("minilm", cp.Corpus("three sentences", tuple(TEXTS)), folder, loaded=minilm, chunk_size=2,
               restart=True, words=True)
    with Atlas(folder) as atlas:
        yield str(folder), atlas.typical_sentence(2, 3)[1]


def _open(stored):
    folder, typical = stored
    at = open_page("app_pages/atlas.py", at_store=folder, at_tab="Related heads", at_related_head=(2, 3), text=MINE, words=False,
                   use_pair=True, text_pair="A second sentence.")
    at.button(key="at_open_related").click().run()
    assert not at.exception, at.exception
    assert at.session_state["text"] == typical != MINE
    assert at.session_state["words"] is True and at.session_state["layer"] == 2 and at.session_state["head"] == 3
    notes = [c.value for c in at.sidebar.caption if "Head atlas opened layer 2, head 3" in c.value]
    assert notes and "replaced your text" in notes[0] and "Word level is now on" in notes[0]
    return at


def test_the_sidebar_offers_the_text_and_word_level_back(stored):
    at = _open(stored)
    at.button(key="sidebar_restore_text").click().run()
    assert not at.exception, at.exception
    assert at.session_state["text"] == MINE and at.session_state["words"] is False
    assert at.session_state["use_pair"] is True and at.session_state["text_pair"] == "A second sentence."
    assert not [c for c in at.sidebar.caption if "Head atlas opened" in c.value]
    assert not [b for b in at.sidebar.button if b.key == "sidebar_restore_text"]


def test_keeping_the_new_text_ends_the_offer(stored):
    at = _open(stored)
    at.button(key="sidebar_keep_text").click().run()
    assert at.session_state["text"] == stored[1] and at.session_state["words"] is True
    assert not [b for b in at.sidebar.button if b.key == "sidebar_restore_text"]
