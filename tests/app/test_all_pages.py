"""AppTest: every page of the registry runs on the default model with no exception and shows its title;
the registry lists every page file and nothing else."""
from pathlib import Path

import pytest

from attnviz.ui.registry import FOLDER, PAGES
from tests.app.apptest import open_page

ROOT = Path(__file__).resolve().parents[2]


def test_the_registry_lists_every_page_file_once():
    files = sorted(p.stem for p in (ROOT / FOLDER).glob("*.py"))
    names = [spec.name for spec in PAGES]
    assert len(names) == len(set(names)) == len(files) > 20
    assert sorted(names) == files


@pytest.mark.parametrize("spec", PAGES, ids=lambda spec: spec.name)
def test_page_runs_without_exception(spec):
    at = open_page(spec.file, timeout=240)
    assert not at.exception, f"{spec.name}: {at.exception}"
    assert len(at.title) == 1 and at.title[0].value.strip(), f"{spec.name}: {[t.value for t in at.title]}"
