"""The home page links every page of page registry; no page mentions 'the course
texts' the audience does not have."""
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.conftest import APP

ROOT = Path(__file__).resolve().parents[2]


def _registry() -> list[tuple[str, str, str]]:
    from attnviz.ui.registry import PAGES

    return [(spec.section, spec.file, spec.title) for spec in PAGES]


def test_home_links_every_page():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    links = [(el.proto.label, el.proto.page) for el in at.get("page_link")]
    expected = [title for _, file, title in _registry() if file != "app_pages/home.py" and (ROOT / file).exists()]
    assert len(expected) >= 18
    assert [label for label, _ in links] == expected  # every page, once, in the navigation's order
    learn = [title for section, _, title in _registry() if section == "Learn"]
    assert sum(label.startswith(("1 ·", "2 ·", "3 ·", "4 ·", "5 ·", "6 ·", "7 ·", "8 ·")) for label in learn) == 8
    captions = " ".join(c.value for c in at.caption)
    assert "hard lookup" in captions and "what generation stores" in captions


def test_no_page_mentions_the_course_texts():
    found = []
    for path in list((ROOT / "app_pages").glob("*.py")) + list((ROOT / "attnviz").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"course text", line, re.IGNORECASE):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
