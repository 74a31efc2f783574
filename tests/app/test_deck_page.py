"""AppTest: adding views to a deck, opening the shipped deck, preparing and presenting it."""
from attnviz.decks import deck as dk
from attnviz.ui import decks
from tests.app.apptest import open_page


def test_add_this_view_records_the_page_and_its_settings():
    at = open_page("app_pages/heatmap.py", text="The cat sat.", layer=2, head=7)
    at.text_input(key="deck_new_title").input("Heads")
    at.text_area(key="deck_new_notes").input("Say why")
    at.button(key="deck_add").click().run()
    d = at.session_state["deck"]
    assert len(d) == 1
    s = d.slides[0]
    assert (s.page, s.title, s.notes) == ("heatmap", "Heads", "Say why")
    assert s.params["layer"] == "2" and s.params["head"] == "7" and s.params["text"] == "The cat sat."


def test_shipped_deck_opens_prepares_and_presents():
    at = open_page("app_pages/deck.py")
    assert any("empty" in i.value for i in at.info)
    at.button(key="deck_open_shipped").click().run()
    d = at.session_state["deck"]
    assert d.title == "Attention in 50 minutes" and len(d) == 17
    assert [s.page for s in d.slides][-1] == "training"
    at.button(key="deck_prepare").click().run()
    assert any(f"All {len(d)} slides are ready" in s.value for s in at.success), [w.value for w in at.warning]
    at.button(key="deck_present").click().run()
    key = at.session_state["deck_live"]
    assert decks.live(key)["deck"] == d
    assert decks.slide_url(key, d, 0).startswith("/lab_variants?present=1&deck=")


def test_presenter_view_follows_the_live_deck():
    d = dk.add(dk.Deck("T"), dk.slide_from_link("/entropy", "First", "note one"))
    d = dk.add(d, dk.slide_from_link("/rollout", "Second", "note two"))
    key = decks.start(d)
    at = open_page("app_pages/deck.py", query={"deck": key, "presenter": "1"})
    body = " ".join(m.value for m in at.markdown)
    assert "1 / 2 · First" in body and "note one" in body
    # the presenting tab opens slide 2: the presenter view shows it
    at2 = open_page("app_pages/rollout.py", query={"deck": key, "slide": "1", "present": "1"})
    assert any("2 / 2" in m.value for m in at2.markdown)
    assert any('href="/entropy?present=1&amp;deck=' in m.value for m in at2.markdown)  # previous slide
    at.run()
    body = " ".join(m.value for m in at.markdown)
    assert "2 / 2 · Second" in body and "note two" in body


def test_a_bad_deck_file_is_refused_and_a_partial_one_lists_what_is_left_out():
    import json

    import pytest

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
    import json

    raw = {"format": dk.FORMAT, "version": 1, "title": "odd",
           "slides": [{"title": "Rollout, bad residual", "page": "rollout",
                       "params": {"ro_residual": "5", "ro_fusion": "max", "layer": "99"}},
                      {"title": "Entropy", "page": "entropy"}]}
    loaded = decks.load_bytes(json.dumps(raw).encode())
    assert len(loaded.deck) == 2 and not loaded.problems
    assert decks.prepare(loaded.deck, lambda *a: None) == []
    key = decks.start(loaded.deck)
    slide = loaded.deck.slides[0]
    at = open_page("app_pages/rollout.py", query={**slide.params, "deck": key, "slide": "0", "present": "1"})
    assert at.slider(key="ro_residual").value == 0.5  # the default, not 5
    # a refused value cannot be told apart from the others of the same link: the link's page
    # settings all fall back, and the notice names them
    notice = " ".join(t.value for t in at.toast)
    assert "ro_residual" in notice and "ro_fusion" in notice and at.selectbox(key="ro_fusion").value == "mean"
    assert any("1 / 2" in m.value for m in at.markdown)
    assert any('href="/entropy?present=1&amp;deck=' in m.value for m in at.markdown)  # next slide
