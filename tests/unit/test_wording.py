"""The product speaks of its domain: no request numbers, work sessions or pointers to work logs in code,
docstrings, pages, shipped texts, docs or tests."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"\b[Ii]ssues?[- ]?#?\d+|\b[Ss]ession \d+\b|\bnotes/|\bbuilt by a helper\b|\blast session\b")
SUFFIXES = {".py", ".md", ".txt", ".toml", ".json", ".template", ".cfg", ".ini"}
FOLDERS = ("attnviz", "app_pages", "tools", "docs", "tests", "assets", "deploy", ".streamlit", ".ci")


def product_files() -> list[Path]:
    files = [ROOT / name for name in ("app.py", "README.md", "Makefile", "pyproject.toml", "requirements.txt",
                                      "requirements-dev.txt", "requirements-models.txt")]
    for folder in FOLDERS:
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and (p.suffix in SUFFIXES or p.name == "run")]
    return [p for p in files if p.exists() and "__pycache__" not in p.parts and p != Path(__file__)]


def test_the_scan_covers_the_product():
    names = {p.relative_to(ROOT).as_posix() for p in product_files()}
    assert {"app.py", "README.md", "docs/architecture.md", "attnviz/extract.py", "app_pages/heatmap.py"} <= names
    assert len(names) > 200


def test_no_file_speaks_of_its_development_history():
    found = []
    for path in product_files():
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:120]}")
    assert not found, "\n".join(found)


def test_test_files_are_named_by_feature():
    bad = [p.name for p in (ROOT / "tests").rglob("test_*.py")
           if re.search(r"issue\d|_fixes\b|_defects\b|session", p.stem)]
    assert not bad, bad
