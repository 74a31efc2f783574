"""AppTest: every page listed in app.py runs with no exception on the default model."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import APP

ROOT = Path(__file__).resolve().parents[2]


def _pages():
    import ast

    tree = ast.parse((ROOT / "app.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PAGES":
            return [elt.elts[1].value for elt in node.value.elts if (ROOT / elt.elts[1].value).exists()]
    return []


@pytest.mark.parametrize("page", _pages())
def test_page_runs_without_exception(page):
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, f"{page}: {at.exception}"
    assert len(at.title) >= 1, f"{page} has no title"
