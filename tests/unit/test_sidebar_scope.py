"""The sidebar's Show and Word level controls are enabled exactly on the pages that read them: the pages
whose result goes through the lens (require_result(lens=True)), and for Show also the generated text's
shading (ui.generate.shown_weights)."""
from __future__ import annotations

from pathlib import Path

from attnviz.ui.contrib import LENS_PAGES
from attnviz.ui.registry import PAGES
from attnviz.ui.words import WORD_PAGES

ROOT = Path(__file__).resolve().parents[2]


def _pages_whose_script_has(needle: str) -> set[str]:
    return {spec.name for spec in PAGES if needle in (ROOT / spec.file).read_text()}


def test_word_level_is_enabled_on_the_pages_whose_result_goes_through_the_lens():
    lensed = _pages_whose_script_has("lens=True")
    assert len(lensed) >= 4
    assert set(WORD_PAGES) == lensed


def test_show_is_enabled_on_those_pages_and_where_the_generated_text_is_shaded():
    shaded = _pages_whose_script_has("shown_weights(")
    assert shaded == {"generate"}
    assert set(LENS_PAGES) == _pages_whose_script_has("lens=True") | shaded
