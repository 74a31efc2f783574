"""Number boxes out of range: the page says so in a plain message on screen (not only in the browser's hover
tooltip), the box shows the value the page then uses, and the figures are computed with that value. Streamlit's
own min_value/max_value would make the browser refuse the value and keep the previous result on screen, so no
page gives a number box bounds of its own: the server checks them (attnviz.ui.numbers.number_box)."""
import ast
from pathlib import Path

import pytest

from tests.app.apptest import open_page
from tests.figures import app_figures

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for d in ("app_pages", "attnviz/ui") for p in (ROOT / d).rglob("*.py")
                 if p.name != "numbers.py")


def _calls(name: str):
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == name:
                yield path.relative_to(ROOT), node


def test_no_number_box_leaves_its_range_to_the_browser():
    bounded = [f"{path}:{node.lineno}" for path, node in _calls("number_input")
               if len(node.args) > 1 or {k.arg for k in node.keywords} & {"min_value", "max_value", "value"}]
    assert bounded == []
    pages = {str(path) for path, _ in _calls("number_box")}
    assert {"app_pages/lab_multihead.py", "app_pages/lab_kv_cache.py", "app_pages/lab_masks.py",
            "app_pages/lab_quiz.py", "app_pages/lab_variants.py", "attnviz/ui/positional.py", "attnviz/ui/training/sources.py",
            "attnviz/ui/atlas.py", "attnviz/ui/attribution.py", "attnviz/ui/complexity.py",
            "attnviz/ui/long/views.py"} <= pages


def _message(label: str, lo: str, hi: str, typed: str, used: str) -> str:
    return f"“{label}” takes values from {lo} to {hi}: {typed} was set to {used}, and the page shows results for {used}."


CASES = [  # page, key, typed value, the box's value after, the message
    ("app_pages/lab_multihead.py", "mh_dmodel", 600, 512, _message("d_model", "1", "512", "600", "512")),
    ("app_pages/lab_multihead.py", "mh_heads", 0, 1, _message("heads h", "1", "16", "0", "1")),
    ("app_pages/positional.py", "pe_maxlen", 10 ** 9, 8192,
     _message("Maximum length (positions)", "1", "8,192", "1,000,000,000", "8,192")),
    ("app_pages/training.py", "tr_steps", 99_999, 5000, _message("Steps", "1", "5,000", "99,999", "5,000")),
    ("app_pages/complexity.py", "cx_bench_heads", 99, 16, _message("Heads", "1", "16", "99", "16")),
    ("app_pages/lab_kv_cache.py", "kv_tokens", -5, 0, _message("tokens", "0", "10,000,000", "-5", "0")),
]


OPEN = {"app_pages/complexity.py": {"cx_tab": "Measured here"}}  # the box is in that tab; only the open tab runs


@pytest.mark.parametrize("page,key,typed,used,message", CASES, ids=[f"{c[0].split('/')[-1]}-{c[1]}" for c in CASES])
def test_an_out_of_range_number_says_so_and_the_page_uses_what_the_box_shows(page, key, typed, used, message):
    at = open_page(page, **OPEN.get(page, {}))
    at.number_input(key=key).set_value(typed).run()
    assert not at.exception, at.exception
    assert message in [w.value for w in at.warning]
    assert at.number_input(key=key).value == used
    at.run()  # the next run: the message is gone, the value stays
    assert message not in [w.value for w in at.warning] and at.number_input(key=key).value == used


def test_the_figures_follow_the_corrected_value():
    at = open_page("app_pages/lab_multihead.py")
    at.number_input(key="mh_heads").set_value(4).run()
    at.number_input(key="mh_dmodel").set_value(4096).run()
    shown = " ".join(m.value for m in at.markdown)
    assert "d_head = 512 / 4 = **128**" in shown  # computed with the value the box shows, not the old 16
    at = open_page("app_pages/positional.py")
    at.number_input(key="pe_maxlen").set_value(20_000).run()
    titles = [str((f["layout"].get("title") or {}).get("text")) for f in app_figures(at)]
    assert "PE table: 8,192 positions x 128 dimensions" in titles
