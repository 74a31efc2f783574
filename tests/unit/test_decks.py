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


# ---- the shipped deck ---------------------------------------------------------------------------

def test_the_shipped_deck_shows_each_view_once():
    """No two slides of the shipped deck show the same view (the same page with the same settings)."""
    from pathlib import Path

    from attnviz.ui.registry import PAGES as APP_PAGES

    files = sorted((Path(__file__).resolve().parents[2] / "assets" / "decks").glob("*.json"))
    assert files, "no deck is shipped"
    for f in files:
        loaded = dk.from_json(f.read_bytes(), {p.name for p in APP_PAGES} | {""})
        assert loaded.problems == () and len(loaded.deck) >= 10, f.name
        views = [(s.page, tuple(sorted(s.params.items()))) for s in loaded.deck.slides]
        repeated = sorted({v for v in views if views.count(v) > 1})
        assert not repeated, f"{f.name}: slides {[i + 1 for i, v in enumerate(views) if v in repeated]} show the same view"
        titles = [s.title for s in loaded.deck.slides]
        assert len(set(titles)) == len(titles), f.name


# ---- working copies on disk ---------------------------------------------------------------------

@pytest.fixture
def deck_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNVIZ_DECK_DIR", str(tmp_path))
    return tmp_path


def test_a_working_copy_round_trips_and_records_the_slide_on_screen(deck_dir):
    from attnviz.decks import store

    key = store.new_id()
    assert store.valid_id(key) and store.load(key, PAGES) is None and store.position(key) is None
    path = store.save(key, _deck())
    assert path == deck_dir / f"{key}.json" and path.read_text(encoding="utf-8") == dk.to_json(_deck())
    assert store.load(key, PAGES) == _deck()
    edited = dk.edit(_deck(), 1, notes="said twice")
    store.save(key, edited)  # every edit replaces the copy
    assert store.load(key, PAGES) == edited
    first = store.set_position(key, 0, restart=True)
    assert first["slide"] == 0 and first["since"] == first["started"]
    second = store.set_position(key, 2)
    assert second["slide"] == 2 and second["started"] == first["started"] and second["since"] >= first["since"]
    assert store.set_position(key, 2)["since"] == second["since"]  # the same slide again: its time keeps running
    assert store.position(key) == store.set_position(key, 2)
    [copy] = store.recent()
    assert (copy.deck_id, copy.title, copy.slides) == (key, "Attention", 3)


@pytest.mark.parametrize("bad", ["", "short", "../../etc/passwd", "a/b/c/d/e/f/g/h", "abc.def.ghi", "x" * 41,
                                 "ok_but_with space", None, 12345678])
def test_a_deck_id_from_a_link_never_reaches_another_file(deck_dir, bad):
    from attnviz.decks import store

    assert not store.valid_id(bad)
    assert store.load(bad, PAGES) is None and store.position(bad) is None and store.changed(bad) is None
    with pytest.raises(BadInput, match="not valid"):
        store.path(bad)
    with pytest.raises(BadInput):
        store.save(bad, _deck())
    assert list(deck_dir.iterdir()) == []


def test_the_oldest_working_copies_are_removed_beyond_the_limit(deck_dir, monkeypatch):
    import os

    from attnviz.decks import store

    monkeypatch.setattr(store, "MAX_COPIES", 3)
    keys = [f"deck-{i:04d}-copy" for i in range(5)]
    for n, key in enumerate(keys):
        store.save(key, _deck())
        store.set_position(key, 0)
        os.utime(deck_dir / f"{key}.json", (1_000_000 + n, 1_000_000 + n))  # oldest first
    store.save(keys[-1], _deck())  # the next write prunes
    assert sorted(p.name for p in deck_dir.glob("*.json") if not p.name.endswith(".at.json")) == \
        sorted(f"{k}.json" for k in keys[2:])
    assert not (deck_dir / f"{keys[0]}.at.json").exists() and (deck_dir / f"{keys[4]}.at.json").exists()


def test_a_slides_charts_are_kept_for_the_slide_before_within_a_budget(monkeypatch):
    """ui.decks.keep_charts / slide_charts: a slide's latest charts by (deck content, slide), whichever copy of the
    deck showed it; another deck's slide has none; a slide that drew none forgets them; beyond the budget the slides kept longest ago go, the latest
    stays whatever its size."""
    from attnviz.ui import decks as ui_decks

    monkeypatch.setattr(ui_decks, "_SLIDE_CHARTS", type(ui_decks._SLIDE_CHARTS)())
    monkeypatch.setattr(ui_decks, "SLIDE_CHARTS_BYTES", 100)
    d, other = _deck(), dk.add(_deck(), dk.slide_from_link("/entropy", "More"))
    ui_decks.keep_charts(ui_decks._slide_tag(d, 1), {"en_bars": b"x" * 40})
    assert ui_decks.slide_charts(d, 1) == {"en_bars": b"x" * 40}
    assert ui_decks.slide_charts(d, 0) is None and ui_decks.slide_charts(other, 1) is None
    ui_decks.keep_charts(ui_decks._slide_tag(d, 0), {"hm_heatmap": b"y" * 50, "hm_focus_out": b"z" * 5})
    assert ui_decks.slide_charts(d, 1) is not None  # 95 bytes in all
    ui_decks.keep_charts(ui_decks._slide_tag(d, 2), {"en_bars": b"w" * 30})  # 125: the oldest goes
    assert ui_decks.slide_charts(d, 1) is None
    assert ui_decks.slide_charts(d, 0) == {"hm_heatmap": b"y" * 50, "hm_focus_out": b"z" * 5}
    ui_decks.keep_charts(ui_decks._slide_tag(d, 0), {})  # shown again, drawing nothing in place
    assert ui_decks.slide_charts(d, 0) is None
    ui_decks.keep_charts(ui_decks._slide_tag(d, 3), {"big": b"v" * 500})  # alone over the budget: kept
    assert ui_decks.slide_charts(d, 3) == {"big": b"v" * 500} and ui_decks.slide_charts(d, 2) is None


def test_a_session_with_inputs_of_its_own_keeps_no_slide_charts_for_others():
    """ui.decks.holds_private_inputs: a trained model, a generation or an uploaded file (alone or in a list) in the
    session's state; a session with only link settings holds none."""
    from streamlit.runtime.uploaded_file_manager import UploadedFile, UploadedFileRec

    from attnviz.ui.decks import holds_private_inputs

    upload = UploadedFile(UploadedFileRec("f1", "cat.png", "image/png", b"\x89PNG"), None)
    assert not holds_private_inputs({"model_choice": "minilm", "text": "The cat sat.", "training_result": None})
    assert holds_private_inputs({"training_result": object()})
    assert holds_private_inputs({"last_generation": {"tokens": [1, 2]}})
    assert holds_private_inputs({"vi_upload": upload}) and holds_private_inputs({"at_files": [upload]})
