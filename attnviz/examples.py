"""The example sentences shipped in assets/examples.txt."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

EXAMPLES_FILE = Path(__file__).resolve().parent.parent / "assets" / "examples.txt"
PAIR_SEPARATOR = " ||| "


@lru_cache(maxsize=1)
def examples() -> tuple[tuple[str, str | None], ...]:
    """(sentence A, sentence B or None) for each example line."""
    out = []
    for line in EXAMPLES_FILE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        a, _, b = line.partition(PAIR_SEPARATOR)
        out.append((a.strip(), b.strip() or None))
    return tuple(out)


def long_text(n_words: int = 600) -> str:
    """A long text made of the examples repeated, for trying 512-token inputs."""
    words = " ".join(a + (" " + b if b else "") for a, b in examples()).split()
    return " ".join(words[i % len(words)] for i in range(n_words))
