"""The library examples in the README and docs/api.md run as written, in order, in a fresh namespace."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "docs/api.md"]


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a markdown file, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_every_documented_page_has_examples():
    counts = {doc: len(python_blocks(ROOT / doc)) for doc in DOCS}
    assert counts["README.md"] >= 1 and counts["docs/api.md"] >= 4, counts


@pytest.mark.parametrize("doc", DOCS)
def test_the_examples_run(doc, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # figures written by the examples land here
    monkeypatch.setattr("plotly.basedatatypes.BaseFigure.show", lambda self, *a, **k: None)
    namespace: dict = {}
    for block in python_blocks(ROOT / doc):
        exec(compile(block, f"{doc} example", "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.strip(), "the examples print what they compute"
    if doc == "docs/api.md":
        assert "(6, 12, 13, 13)" in printed
        assert (tmp_path / "head-3-4.html").stat().st_size > 10_000
