"""Every test that the documentation names exists: a file, and where a test is named, that test."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REF = re.compile(r"(tests/[\w/]+\.py)((?:::|, ::)\w+)*")


def references() -> list[tuple[str, str, list[str]]]:
    out = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in doc.read_text(encoding="utf-8").splitlines():
            for m in REF.finditer(line):
                names = re.findall(r"::(\w+)", line[m.start():m.end()])
                out.append((doc.name, m.group(1), names))
    return out


def test_the_bad_input_table_names_its_tests():
    assert sum(1 for doc, _, _ in references() if doc == "bad-inputs.md") >= 60


def test_every_named_test_exists():
    missing = []
    for doc, path, names in references():
        file = ROOT / path
        if not file.is_file():
            missing.append(f"{doc}: {path}")
            continue
        source = file.read_text(encoding="utf-8")
        missing += [f"{doc}: {path}::{n}" for n in names if not re.search(rf"def {n}\b", source)]
    assert not missing, "\n".join(missing)
