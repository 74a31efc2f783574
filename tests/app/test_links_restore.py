"""Links restore each page's own settings, and the 'Link to this view' box carries them."""
from tests.app.apptest import open_page, share_links as _link


def test_positional_link_restores_tab_and_settings():
    at = open_page("app_pages/positional.py", query={"pe_tab": "RoPE", "pe_rope_m": "7", "pe_rope_d": "32"})
    assert at.slider(key="pe_rope_m").value == 7
    assert at.number_input(key="pe_rope_d").value == 32
    link = _link(at)
    assert "pe_tab=RoPE" in link and "pe_rope_m=7" in link and "pe_rope_d=32" in link
    at.slider(key="pe_rope_m").set_value(11).run()
    assert not at.exception and "pe_rope_m=11" in _link(at)


def test_positional_link_to_alibi_and_why_positions():
    at = open_page("app_pages/positional.py", query={"pe_tab": "ALiBi", "pe_alibi_heads": "6", "pe_alibi_causal": "0"})
    assert at.number_input(key="pe_alibi_heads").value == 6 and at.toggle(key="pe_alibi_causal").value is False
    assert "pe_alibi_heads=6" in _link(at)
    at = open_page("app_pages/positional.py", query={"pe_tab": "Why positions", "pe_eq_text": "a b c d"})
    assert at.text_input(key="pe_eq_text").value == "a b c d"


def test_training_link_restores_the_source():
    at = open_page("app_pages/training.py", query={"tr_source": "Checkpoint series"})
    assert "tr_source=Checkpoint+series" in _link(at) or "tr_source=Checkpoint%20series" in _link(at)
    at = open_page("app_pages/training.py", query={"tr_source": "Nonsense"})
    assert "tr_source=Toy+task" in _link(at)
