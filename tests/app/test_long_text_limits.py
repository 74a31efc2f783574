"""AppTest: long texts at the edges of the sidebar and the dense pages. A link whose text is longer than the
sidebar's box (the bundled long text) is cut to the box's 20,000 characters at once and the sidebar says so, so
the box shows what the pages read; the Logit lens names the dense 512-token limit, why, and the model's own
longer context, as the other dense pages do."""
from attnviz.ui.long.inputs import BUNDLED
from attnviz.ui.sidebar import MAX_TEXT_CHARS
from tests.app.apptest import open_page
from tests.tiny_models import tiny_long_loaded


def _sidebar_captions(at) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def test_a_link_text_longer_than_the_box_is_cut_to_the_box_and_said():
    text = BUNDLED.read_text(encoding="utf-8")
    assert len(text) > MAX_TEXT_CHARS
    at = open_page("app_pages/heatmap.py", query={"text": text})
    kept = text[:MAX_TEXT_CHARS]
    assert at.session_state["text"] == kept
    assert at.sidebar.text_area(key="text").value == kept  # the box shows what the pages read
    said = _sidebar_captions(at)
    assert f"The text given had {len(text):,} characters" in said and "only the first 20,000 are used" in said
    assert "Long inputs" in said
    at.run()  # the next run keeps the cut text and the note
    assert not at.exception and at.session_state["text"] == kept and "The text given had" in _sidebar_captions(at)
    at.sidebar.text_area(key="text").set_value("A short sentence.").run()  # a new text: the note goes
    assert not at.exception and "The text given had" not in _sidebar_captions(at)


def test_a_text_within_the_box_is_left_alone():
    at = open_page("app_pages/heatmap.py", text="x " * (MAX_TEXT_CHARS // 2))
    assert at.session_state["text"] == "x " * (MAX_TEXT_CHARS // 2)
    assert "The text given had" not in _sidebar_captions(at)


def test_logit_lens_names_the_dense_limit_and_the_models_longer_context(tmp_path):
    loaded = tiny_long_loaded("llama-long")  # a tiny random Llama with a 4,096-token context
    loaded.model.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    at = open_page("app_pages/logit_lens.py", text=" ".join(["attention"] * 1200), model_choice="other",
                   custom_model=str(tmp_path))
    msg = " ".join(i.value for i in at.info)
    assert "The text is 1,202 tokens long" in msg, msg  # 1,200 words + [CLS] [SEP] (a BERT tokenizer)
    assert "so it reads at most 512 tokens" in msg and "takes 4,096" in msg and "the last 690 were dropped" in msg
    assert "**Long inputs**" in msg
    assert at.get("plotly_chart")  # the lens of the first 512 tokens is still drawn


def test_a_text_too_long_for_a_link_is_left_out_and_the_opened_link_says_so():
    from urllib.parse import parse_qs, urlparse

    from attnviz.ui.share import MAX_TEXT_IN_URL, TEXT_LEFT_OUT
    from tests.app.apptest import share_links

    text = "word " * (MAX_TEXT_IN_URL // 5 + 10)
    at = open_page("app_pages/heatmap.py", text=text)
    query = parse_qs(urlparse(share_links(at).split()[0]).query)
    assert "text" not in query and query[TEXT_LEFT_OUT] == ["1"]
    assert not at.toast
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    opened = AppTest.from_file(APP, default_timeout=180)  # the link opened: its page is the first run
    opened.query_params.update({k: v[0] for k, v in query.items()})
    opened.switch_page("app_pages/heatmap.py")
    opened.run()
    assert not opened.exception and opened.title[0].value == "Attention heatmap"
    (note,) = [t.value for t in opened.toast]
    assert "longer than a link can hold (2,000 characters)" in note and "Paste the text into the sidebar" in note
    short = open_page("app_pages/heatmap.py", text="A short sentence.")
    assert TEXT_LEFT_OUT not in share_links(short)
    opened.run()  # said once: the next run of the same visit does not repeat it
    assert not opened.toast
