"""Decks: slides from share links, editing, and the versioned JSON file (round trip and bad files)."""
import json

import pytest

from attnviz.decks import deck as dk
from attnviz.errors import BadInput

PAGES = {"", "heatmap", "entropy", "lab_steps"}


def _deck():
    d = dk.Deck("Attention")
    d = dk.add(d, dk.slide_from_link("http://127.0.0.1:8501/heatmap?model_choice=minilm&layer=2&head=7", "Heads", "Say it"))
    d = dk.add(d, dk.slide_from_link("/entropy?en_unit=nats", ""))
    d = dk.add(d, dk.slide_from_link("http://127.0.0.1:8501/", "Start"))
    return d


def test_slide_from_a_share_link():
    s = _deck().slides[0]
    assert (s.page, s.title, s.notes) == ("heatmap", "Heads", "Say it")
    assert s.params == {"model_choice": "minilm", "layer": "2", "head": "7"}
    assert s.link == "/heatmap?model_choice=minilm&layer=2&head=7"
    assert _deck().slides[1].title == "Entropy"  # no title: the page's name
    assert _deck().slides[2].page == "" and _deck().slides[2].link == "/"


def test_editing_returns_new_decks():
    d = _deck()
    assert [s.title for s in dk.move(d, 0, 2).slides] == ["Entropy", "Start", "Heads"]
    assert [s.title for s in dk.move(d, 2, 0).slides] == ["Start", "Heads", "Entropy"]
    assert [s.title for s in dk.remove(d, 1).slides] == ["Heads", "Start"]
    e = dk.edit(d, 1, title="Focused heads", notes="Low entropy = focused")
    assert (e.slides[1].title, e.slides[1].notes) == ("Focused heads", "Low entropy = focused")
    assert d.slides[1].title == "Entropy"  # the original is unchanged
    with pytest.raises(BadInput, match="no slide 4"):
        dk.remove(d, 3)
    with pytest.raises(BadInput, match="at most"):
        dk.edit(d, 0, title="x" * 1000)


def test_round_trip_keeps_every_view():
    d = _deck()
    text = dk.to_json(d)
    assert json.loads(text)["version"] == dk.VERSION and json.loads(text)["format"] == dk.FORMAT
    loaded = dk.from_json(text.encode(), PAGES, {"minilm"})
    assert loaded.problems == () and loaded.deck == d


@pytest.mark.parametrize("data,message", [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not text"),
    (b"slides: []", "not valid JSON"),
    (b'{"slides": []}', "not an attnviz deck"),
    (b'{"format": "attnviz-deck", "version": 7, "slides": []}', "newer attnviz"),
    (b'{"format": "attnviz-deck", "version": 1}', "no list of slides"),
    (b"x" * (dk.MAX_BYTES + 1), "not one"),
])
def test_bad_files_are_refused_in_a_sentence(data, message):
    with pytest.raises(BadInput, match=message):
        dk.from_json(data, PAGES)


def test_what_cannot_be_loaded_is_listed_and_the_rest_loads():
    raw = {"format": dk.FORMAT, "version": 1, "title": "Mixed", "slides": [
        {"title": "ok", "page": "heatmap", "params": {"layer": "1"}},
        {"title": "gone", "page": "no_such_page"},
        {"title": "other model", "page": "entropy", "params": {"model_choice": "gpt-7"}},
        "not a slide",
        {"title": "bad params", "page": "heatmap", "params": [1, 2]},
    ]}
    loaded = dk.from_json(json.dumps(raw), PAGES, {"minilm"})
    assert [s.title for s in loaded.deck.slides] == ["ok"]
    assert len(loaded.problems) == 4
    assert "no_such_page" in loaded.problems[0] and "gpt-7" in loaded.problems[1]
