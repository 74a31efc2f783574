"""AppTest: adding views to a deck, its working copy, opening the shipped deck, preparing and presenting it."""
import json

import pytest

from attnviz.decks import deck as dk
from attnviz.decks import store
from attnviz.ui import decks
from tests.app.apptest import open_page


@pytest.fixture(autouse=True)
def deck_dir(tmp_path, monkeypatch):
    """Working copies go to a folder of the test's own."""
    monkeypatch.setenv("ATTNVIZ_DECK_DIR", str(tmp_path))
    return tmp_path


def _slide_query(key: str, d: dk.Deck, i: int) -> dict:
    """What a slide's link carries: its view's settings, presentation mode and the deck's place."""
    return {**d.slides[i].params, "present": "1", "deck": key, "slide": str(i)}


def _open_slide(page: str, query: dict):
    """AppTest of a slide's link opened in a new tab: the slide's page is the first to run."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(query)
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _text(at) -> str:
    return " ".join(e.value for kind in ("markdown", "caption", "subheader", "info", "success") for e in getattr(at, kind))


def test_add_this_view_records_the_page_and_its_settings(deck_dir):
    at = open_page("app_pages/heatmap.py", text="The cat sat.", layer=2, head=7)
    at.text_input(key="deck_new_title").input("Heads")
    at.text_area(key="deck_new_notes").input("Say why")
    at.button(key="deck_add").click().run()
    d = at.session_state["deck"]
    assert len(d) == 1
    s = d.slides[0]
    assert (s.page, s.title, s.notes) == ("heatmap", "Heads", "Say why")
    assert s.params["layer"] == "2" and s.params["head"] == "7" and s.params["text"] == "The cat sat."
    # written to its working copy at once
    assert store.load(at.session_state["deck_id"], decks.PAGE_NAMES) == d
    assert (deck_dir / f"{at.session_state['deck_id']}.json").exists()


def test_a_title_too_long_for_a_slide_is_refused_in_one_sentence(deck_dir):
    at = open_page("app_pages/entropy.py")
    at.text_input(key="deck_new_title").input("x" * (dk.MAX_TITLE + 1))
    at.button(key="deck_add").click().run()
    assert not at.exception and "deck" not in at.session_state  # nothing added, no deck begun
    caption = next(c.value for c in at.caption if "The deck has" in c.value)
    assert caption.startswith(f"The slide title is {dk.MAX_TITLE + 1} characters long; at most {dk.MAX_TITLE} fit "
                              "on a slide. The deck has 0 slides"), caption


def test_shipped_deck_opens_prepares_and_presents():
    at = open_page("app_pages/deck.py")
    assert any("empty" in i.value for i in at.info)
    at.button(key="deck_open_shipped").click().run()
    d = at.session_state["deck"]
    assert d.title == "Attention in 50 minutes" and len(d) == 16
    assert [s.page for s in d.slides][-1] == "training"
    at.button(key="deck_prepare").click().run()
    assert any(f"All {len(d)} slides are ready" in s.value for s in at.success), [w.value for w in at.warning]
    at.button(key="deck_present").click().run()
    key = at.session_state["deck_live"]
    assert decks.live(key)["deck"] == d and decks.live(key)["slide"] == 0
    assert decks.slide_url(key, d, 0).startswith("/lab_variants?present=1&deck=")


def test_the_deck_and_its_edits_survive_presenting_and_a_new_page_load(deck_dir):
    """Open the shipped deck, add a view of one's own (17 slides), present: a slide's link opened by a
    page load (a new browser session) and the End link (another one) still find the deck, edits and all,
    and the Deck page says where it is kept."""
    at = open_page("app_pages/deck.py")
    at.button(key="deck_open_shipped").click().run()
    at.switch_page("app_pages/entropy.py").run()
    at.text_input(key="deck_new_title").input("Focused heads").run()
    at.button(key="deck_add").click().run()
    at.switch_page("app_pages/deck.py").run()
    assert "17 slides" in [s.value for s in at.subheader]
    at.button(key="deck_present").click().run()
    key = at.session_state["deck_live"]
    d = at.session_state["deck"]
    assert len(d) == 17 and d.slides[-1].title == "Focused heads"

    slide = _open_slide("app_pages/lab_variants.py", _slide_query(key, d, 0))
    assert any("1 / 17" in m.value for m in slide.markdown)
    back = open_page("app_pages/deck.py", query={"deck": key, "end": "1"})
    assert "17 slides" in [s.value for s in back.subheader]
    assert back.session_state["deck"] == d and back.session_state["present"] is False
    assert str(deck_dir / f"{key}.json") in _text(back) and "working copy" in _text(back)

    # the same way back inside the slide's own session: End leaves presentation mode, the deck stays
    assert slide.session_state["present"] is True
    slide.query_params.clear()
    slide.query_params.update({"deck": key, "end": "1"})
    slide.switch_page("app_pages/deck.py").run()
    assert not slide.exception
    assert "17 slides" in [s.value for s in slide.subheader] and slide.session_state["present"] is False


def test_an_edit_made_elsewhere_reaches_the_deck_page():
    """Two tabs on one deck: a change written to the working copy by one shows in the other's next run."""
    d = dk.add(dk.Deck("T"), dk.slide_from_link("/entropy", "First"))
    key = decks.start(d)
    at = open_page("app_pages/deck.py", query={"deck": key})
    assert "1 slide" in [s.value for s in at.subheader]
    import time

    time.sleep(0.02)  # a later modification time than the copy the page read
    store.save(key, dk.add(d, dk.slide_from_link("/rollout", "Second")))
    at.run()
    assert "2 slides" in [s.value for s in at.subheader]


def test_the_slide_table_counts_from_one_and_one_slide_is_singular():
    d = dk.add(dk.Deck("One"), dk.slide_from_link("/entropy", "Only"))
    key = decks.start(d)
    at = open_page("app_pages/deck.py", query={"deck": key})
    assert [s.value for s in at.subheader][0] == "1 slide"
    table = at.dataframe[0].value
    assert list(table.index) == [1] and table.at[1, "title"] == "Only"
    two = dk.add(d, dk.slide_from_link("/rollout", "Next"))
    at = open_page("app_pages/deck.py", query={"deck": decks.start(two)})
    assert [s.value for s in at.subheader][0] == "2 slides"
    assert list(at.dataframe[0].value.index) == [1, 2]


def test_presenter_view_keeps_the_time_and_shows_the_next_slide():
    d = dk.add(dk.Deck("T"), dk.slide_from_link("/entropy", "First", "note one"))
    d = dk.add(d, dk.slide_from_link("/rollout", "Second", "note two"))
    key = decks.start(d)
    at = open_page("app_pages/deck.py", query={"deck": key, "presenter": "1"})
    body = " ".join(m.value for m in at.markdown)
    assert "1 / 2 · First" in body and "note one" in body and "Next · 2: Second" in body and "Rollout" in body
    clock = {m.label: m.value for m in at.metric}
    assert set(clock) == {"Elapsed", "On this slide", "Slide"} and clock["Slide"] == "1 / 2"
    assert clock["Elapsed"].count(":") == 1 and int(clock["Elapsed"].split(":")[1]) < 60
    # the presenting tab opens slide 2: the presenter view shows it
    at2 = _open_slide("app_pages/rollout.py", _slide_query(key, d, 1))
    assert any("2 / 2" in m.value for m in at2.markdown)
    at.run()
    body = " ".join(m.value for m in at.markdown)
    assert "2 / 2 · Second" in body and "note two" in body and "This is the last slide" in body
    assert {m.label: m.value for m in at.metric}["Slide"] == "2 / 2"


def test_a_slide_reached_inside_the_session_opens_as_its_link_does():
    """Slides move inside the browser's session: each still opens with its own link's settings, and the
    defaults for the settings its link does not give (not those left over from the slide before)."""
    d = dk.add(dk.Deck("T"), dk.slide_from_link("/heatmap?model_choice=minilm&layer=2&head=7", "A"))
    d = dk.add(d, dk.slide_from_link("/heatmap?model_choice=minilm&layer=4&head=1&text=Dogs+bark.", "B"))
    d = dk.add(d, dk.slide_from_link("/heatmap?model_choice=minilm", "C"))
    key = decks.start(d)
    at = _open_slide("app_pages/heatmap.py", _slide_query(key, d, 0))
    assert (at.session_state["layer"], at.session_state["head"]) == (2, 7)
    first_text = at.session_state["text"]
    for i, want in ((1, (4, 1, "Dogs bark.")), (2, (0, 0, first_text)), (0, (2, 7, first_text))):
        at.query_params.clear()
        at.query_params.update(_slide_query(key, d, i))
        at.switch_page("app_pages/heatmap.py").run()
        assert not at.exception
        assert (at.session_state["layer"], at.session_state["head"], at.session_state["text"]) == want, i
        assert any(f"{i + 1} / 3" in m.value for m in at.markdown)
        assert at.session_state["present"] is True


def test_a_bad_deck_file_is_refused_and_a_partial_one_lists_what_is_left_out():
    from attnviz.errors import BadInput

    with pytest.raises(BadInput, match="not an attnviz deck"):
        decks.load_bytes(b'{"a": 1}')
    raw = {"format": dk.FORMAT, "version": 1, "title": "x",
           "slides": [{"title": "a", "page": "entropy"}, {"title": "b", "page": "nowhere"}]}
    loaded = decks.load_bytes(json.dumps(raw).encode())
    assert len(loaded.deck) == 1 and "nowhere" in loaded.problems[0]


def test_a_slide_with_out_of_range_settings_opens_with_defaults_and_a_notice():
    """A deck file whose slide link holds settings no control accepts (a residual share of 5, a
    layer past the model's last): the deck loads, the slide opens in presentation mode with the
    defaults, a notice names what was dropped, and the slide bar still steps through the deck."""
    raw = {"format": dk.FORMAT, "version": 1, "title": "odd",
           "slides": [{"title": "Rollout, bad residual", "page": "rollout",
                       "params": {"ro_residual": "5", "ro_fusion": "max", "layer": "99"}},
                      {"title": "Entropy", "page": "entropy"}]}
    loaded = decks.load_bytes(json.dumps(raw).encode())
    assert len(loaded.deck) == 2 and not loaded.problems
    assert decks.prepare(loaded.deck, lambda *a: None) == []
    key = decks.start(loaded.deck)
    at = _open_slide("app_pages/rollout.py", _slide_query(key, loaded.deck, 0))
    assert at.slider(key="ro_residual").value == 0.5  # the default, not 5
    assert at.session_state["present"] is True and any("1 / 2" in m.value for m in at.markdown)
    # a refused value cannot be told apart from the others of the same link: the link's page
    # settings all fall back, and the notice names them
    notice = " ".join(t.value for t in at.toast)
    assert "ro_residual" in notice and "ro_fusion" in notice and at.selectbox(key="ro_fusion").value == "mean"
    assert any("1 / 2" in m.value for m in at.markdown)


def test_a_link_to_a_deck_this_server_does_not_have_says_so():
    at = open_page("app_pages/deck.py", query={"deck": "NoSuchDeck123"})
    assert any("no deck under this link" in i.value for i in at.info)
    assert any("The deck is empty" in i.value for i in at.info) and "working copy on this server" not in _text(at)
    at = open_page("app_pages/deck.py", query={"deck": "../../etc/passwd"})
    assert any("deck id is not one this app writes" in i.value for i in at.info)
    assert "deck" not in at.query_params
    # a slide of such a deck opens as a plain page, and says why it has no slide bar
    slide = _open_slide("app_pages/entropy.py", {"deck": "NoSuchDeck123", "slide": "0", "present": "1"})
    assert not any("deck-bar" in m.value for m in slide.markdown)
    assert any("no deck under this link" in t.value for t in slide.toast)


def test_a_cache_folder_that_refuses_the_working_copy_keeps_the_deck_in_memory(tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the folder should be")
    monkeypatch.setenv("ATTNVIZ_DECK_DIR", str(blocked))
    at = open_page("app_pages/deck.py")
    at.button(key="deck_open_shipped").click().run()
    assert not at.exception and "16 slides" in [s.value for s in at.subheader]
    assert "could not be written" in _text(at) and "memory" in _text(at)
    at.button(key="deck_present").click().run()
    key = at.session_state["deck_live"]
    slide = _open_slide("app_pages/lab_variants.py", _slide_query(key, at.session_state["deck"], 0))
    assert any("1 / 16" in m.value for m in slide.markdown)  # presented from this server's memory


def test_a_deck_title_longer_than_kept_says_what_was_left_out():
    d = dk.add(dk.Deck("Short"), dk.slide_from_link("/entropy", "Only"))
    at = open_page("app_pages/deck.py", query={"deck": decks.start(d)})
    box = next(t for t in at.text_input if t.key.startswith("deck_title_"))
    box.set_value("T" * 250).run()
    assert not at.exception
    assert decks.current().title == "T" * dk.MAX_TITLE
    assert any(c.value == "A deck title keeps its first 200 characters: the rest of the 250 typed was left out."
               for c in at.caption), [c.value for c in at.caption]
