"""Counts of tokens, positions, words and sentences shown to people carry thousands separators: every f-string
in the app that writes such a count goes through attnviz.units.count_text (or a "," format), never a bare
"{n} tokens" that prints 4096 tokens. Read from the source with Python's own parser."""
import ast
from pathlib import Path

import pytest

from attnviz.units import count_text

ROOT = Path(__file__).resolve().parents[2]
NOUNS = ("token", "tokens", "position", "positions", "word", "words", "sentence", "sentences", "keys", "queries")
INTERNAL = {"ValueError", "RuntimeError", "AssertionError", "TypeError", "KeyError"}  # programmer errors


def _raised(node, parents) -> str | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            return getattr(exc, "id", None) or getattr(exc, "attr", None)
    return None


def bare_counts(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line: {expr} noun` for every f-string placeholder followed by a counted noun without a "," format."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for value, after in zip(parts, parts[1:]):
            if not (isinstance(value, ast.FormattedValue) and isinstance(after, ast.Constant)
                    and isinstance(after.value, str)):
                continue
            words = after.value.lstrip("*").split()
            if not words or not after.value.lstrip("*").startswith(" ") or words[0].strip(".,;:)") not in NOUNS:
                continue
            spec = ast.unparse(value.format_spec) if value.format_spec is not None else ""
            formatted = isinstance(value.value, ast.Call) and getattr(value.value.func, "id", "") == "count_text"
            if formatted or "," in spec or _raised(node, parents) in INTERNAL:
                continue
            out.append(f"{path.relative_to(root)}:{node.lineno}: {{{ast.unparse(value.value)}}}{after.value[:12]}")
    return out


FILES = sorted(p for d in ("app_pages", "attnviz") for p in (ROOT / d).rglob("*.py"))


def test_the_scan_reads_the_app_and_finds_a_bare_count(tmp_path):
    assert len(FILES) > 100
    sample = tmp_path / "sample.py"
    sample.write_text('n = 4096\nmsg = f"The text is {n} tokens long."\nok = f"{n:,} tokens"\n')
    assert bare_counts(sample, tmp_path) == ["sample.py:2: {n} tokens long"]


def test_no_count_of_tokens_positions_words_or_sentences_is_printed_without_separators():
    found = [hit for path in FILES for hit in bare_counts(path)]
    assert not found, "\n".join(found)


def bare_metric_counts(path: Path, root: Path = ROOT) -> list[str]:
    """`file:line` of every st.metric whose label counts tokens, positions, words or sentences and whose value
    has a placeholder written bare (neither count_text nor a format such as "," or ".1%")."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "metric" and len(node.args) >= 2):
            continue
        label, value = node.args[0], node.args[1]
        words = ast.unparse(label).lower().replace("'", " ").replace('"', " ").split()
        if not any(w.strip(".,:;()") in NOUNS for w in words) or not isinstance(value, ast.JoinedStr):
            continue
        for part in value.values:
            if isinstance(part, ast.FormattedValue):
                spec = ast.unparse(part.format_spec) if part.format_spec is not None else ""
                counted = isinstance(part.value, ast.Call) and getattr(part.value.func, "id", "") == "count_text"
                if not counted and not spec:  # a bare placeholder: a count printed as 4096
                    out.append(f"{path.relative_to(root)}:{node.lineno}")
                    break
    return out


def test_metric_boxes_counting_tokens_write_their_counts_with_separators(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('m.metric("Removable tokens", f"{k} of {n}")\nm.metric("Tokens", f"{count_text(n)}")\n')
    assert bare_metric_counts(sample, tmp_path) == ["sample.py:1"]
    found = [hit for path in FILES for hit in bare_metric_counts(path)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("n,noun,text", [(4096, "token", "4,096 tokens"), (1, "token", "1 token"),
                                         (0, "sentence", "0 sentences"), (1234567, None, "1,234,567"),
                                         (12, "position", "12 positions"), (2, "query", "2 queries"),
                                         (3, "key", "3 keys"), (1, "word", "1 word")])
def test_count_text(n, noun, text):
    assert count_text(n, noun) == text
