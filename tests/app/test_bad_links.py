"""Hand-edited links: every value a page takes from the URL, set absurdly, gives the page with
defaults (and a notice), never a traceback."""
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.ui.share import LINK_NOTE_SECONDS
from tests.conftest import APP

ROOT = Path(APP).parent
SOURCES = {"app_pages/training.py": ["app_pages/training.py", "attnviz/ui/training/sources.py", "attnviz/ui/training/evolution.py",
                                            "attnviz/ui/training/live.py"]}
BIND = re.compile(r'"(\w+)": (int|float|str|bool)\b')


def _bound_keys(page: str) -> dict[str, str]:
    keys = {}
    for src in SOURCES.get(page, [page]):
        text = (ROOT / src).read_text()
        for block in re.findall(r"bind\(\{(.*?)\}\)", text, flags=re.S):
            keys.update(BIND.findall(block))
    return keys


PAGES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "app_pages").glob("*.py") if _bound_keys(str(p.relative_to(ROOT))))
ABSURD = {"int": ["999999", "-999999"], "float": ["1e9", "-1e9"], "str": ["no-such-value"], "bool": ["maybe"]}


@pytest.mark.parametrize("variant", [0, 1], ids=["large", "small"])
@pytest.mark.parametrize("page", PAGES)
def test_absurd_link_values_fall_back(page, variant):
    keys = _bound_keys(page)
    assert keys, page
    query = {k: ABSURD[kind][min(variant, len(ABSURD[kind]) - 1)] for k, kind in keys.items()}
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(query)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, (page, query, [e.value for e in at.exception])


def test_out_of_range_slider_value_is_dropped_with_a_notice():
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"ro_residual": "5", "ro_fusion": "max"})
    at.run()
    at.switch_page("app_pages/rollout.py")
    at.run()
    assert not at.exception
    assert at.slider(key="ro_residual").value == 0.5  # the default
    assert "ro_residual" in " ".join(t.value for t in at.toast)
    # a note about the link stays long enough to be read after a slow first load (a short one goes after 4 s)
    assert [t.proto.duration for t in at.toast] == [LINK_NOTE_SECONDS] and LINK_NOTE_SECONDS >= 10
    ok = AppTest.from_file(APP, default_timeout=180)  # control: in-range link values are kept
    ok.query_params.update({"ro_residual": "0.7", "ro_fusion": "max"})
    ok.run()
    ok.switch_page("app_pages/rollout.py")
    ok.run()
    assert ok.slider(key="ro_residual").value == 0.7 and ok.selectbox(key="ro_fusion").value == "max"
    assert not ok.toast


def _heatmap_with_lens(value: str) -> tuple[AppTest, str]:
    """The heatmap page after a link with lens=value, and the notices of both runs (the link is read on the
    first, the home page's)."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"lens": value})
    at.run()
    notices = [t.value for t in at.toast]
    durations = [t.proto.duration for t in at.toast]
    at.switch_page("app_pages/heatmap.py")
    at.run()
    assert not at.exception
    durations += [t.proto.duration for t in at.toast]
    assert set(durations) <= {LINK_NOTE_SECONDS}  # a note about the link stays long enough to be read
    return at, " ".join(notices + [t.value for t in at.toast])


def test_a_lens_in_the_link_is_read_without_regard_to_case():
    at, notice = _heatmap_with_lens("alti")
    assert at.radio(key="lens").value == "ALTI"
    assert notice == ""
    assert _heatmap_with_lens("Value-Weighted")[0].radio(key="lens").value == "value-weighted"


def test_an_unknown_lens_in_the_link_shows_weights_with_a_notice():
    at, notice = _heatmap_with_lens("gradients")
    assert at.radio(key="lens").value == "weights"
    assert "'gradients'" in notice and "attention weights" in notice
