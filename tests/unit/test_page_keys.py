"""Widget and session keys: st.session_state is one namespace for every page, so each page's keys start with
its own prefix (attnviz.ui.registry), no key is bound by two pages, and the keys every page shares (the
sidebar, the deck, links, figure exports, the guided tour) are the ones listed here. The keys are read from
the source (tests/keyscan.py): each page's script and the attnviz/ui functions it reaches."""
from __future__ import annotations

from collections import defaultdict
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from attnviz.ui.registry import PAGES
from tests.keyscan import ROOT, script_keys, ui_modules

# The keys shared by all pages, each with why. A pattern (fnmatch) covers a family of keys.
GLOBAL_KEYS: dict[str, str] = {
    # the sidebar: one model and one text for every page, and the lens they are seen through
    "model_choice": "the sidebar's model", "custom_model": "the sidebar's hub id or folder",
    "example": "the sidebar's example picker", "text": "the sidebar's text", "use_pair": "sentence-pair switch",
    "text_pair": "the second sentence", "words": "word level instead of word pieces",
    "lens": "weights or contributions, for every attention view", "_sidebar_*": "the sidebar's own bookkeeping",
    "sidebar_restore_text": "back to the text a page replaced", "sidebar_keep_text": "keep the text a page put there",
    "_queued_*": "a text or word-level change asked for by a page, applied by the sidebar on the next run",
    "training_result": "the training page's frame, offered as the sidebar's model 'trained'",
    "training_contributions": "the contributions of that frame, read by the views of the trained model",
    "_trained_analysis": "the analyses of that frame, computed once for every view of it",
    "training_vision": "the training page's vision transformer and step, opened by the Vision page",
    "last_generation": "the Generate page's last run, whose KV cache the KV cache lab measures beside its formula",
    # the head chosen on any page opens on the others (heads.head_picker keeps a page's own pair apart)
    "layer": "the shared layer", "head": "the shared head",
    "ablated_by_model": "heads switched off per model: every view of that model shows them switched off",
    # presenting and the deck: the deck bar and 'add this view' are on every page
    "present": "presentation mode", "deck": "the open deck", "deck_id": "the open deck's id",
    "deck_add": "'add this view to the deck' on every page", "deck_new_title": "the title of that new slide",
    "deck_new_notes": "its notes", "deck_bar": "the slide bar while presenting", "deck_controls": "its buttons",
    "deck_end": "its End button", "deck_slides": "its slide list",
    "deck_next_charts": "the next slide's charts, drawn out of sight", "_deck_*": "the deck module's own bookkeeping",
    # links and figure exports
    "_share_*": "links: the values kept across pages and read from the URL",
    "batch_export": "every figure of the page as one zip", "_figure_counter": "figures drawn in this run",
    "_page_figures": "the figures of this run, for that zip",
    "_figures_of_parts": "the figures each part showed last, dropped from that zip when it reruns",
    # a page's run and its parts that rerun alone (ui.page)
    "_closing_slot": "where the sidebar's closing boxes go", "_closing_deck": "where the deck's box goes", "_closing_holder": "a part's place for them",
    "_full_run": "a full run is under way", "_part_counters": "each part's first automatic figure number",
    "page_scripts": "the hidden block of the page's own scripts (link history, the fade of a slow run)",
    "_choices_labels": "the option labels each select box was last drawn with (ui.choices), keyed by its own key",
    # the guided tour: its keys end with the page's name (tour_on_<page>), so each page has its own
    "tour_*": "the guided tour's steps of each page",
}


def _is_global(key: str) -> bool:
    return any(fnmatchcase(key, pattern) for pattern in GLOBAL_KEYS)


@pytest.fixture(scope="module")
def scanned():
    modules = ui_modules()
    pages = {spec.name: script_keys(ROOT / spec.file, modules) for spec in PAGES}
    return pages, script_keys(ROOT / "app.py", modules)


def test_every_page_has_its_own_prefix():
    prefixes = [spec.prefix for spec in PAGES]
    assert len(prefixes) == len(set(prefixes)) == len(PAGES) > 20
    for a in prefixes:
        for b in prefixes:
            assert a == b or not (b + "_").startswith(a + "_"), (a, b)  # "tr_" never starts "trust_"
    assert not any(_is_global(p + "_x") for p in prefixes), "a page prefix is taken by the shared keys"


def test_the_scan_follows_calls_into_the_ui_modules(scanned):
    pages, app = scanned
    assert {"hm_layer", "hm_head", "_hm_wanted", "hm_grid", "hm_grid_csv"} <= set(pages["heatmap"])  # head_picker
    assert {"trust_steps", "trust_pos", "trust_pos_label", "trust_job", "trust_run"} <= set(pages["trust"])
    assert {"tr_steps", "tr_job", "tr_frame", "tr_source"} <= set(pages["training"])
    assert {"ll_start", "ll_k", "ll_pos", "ll_log"} <= set(pages["logit_lens"])  # through bind(ll.KEYS)
    assert {"model_choice", "text", "deck_add", "_share_kept"} <= set(app)


def test_the_shared_keys_are_the_ones_every_page_gets(scanned):
    pages, app = scanned
    assert [k for k in app if not _is_global(k)] == [], "app.py binds keys that are not in GLOBAL_KEYS"
    found = set(app).union(*pages.values())
    stale = [p for p in GLOBAL_KEYS if not any(fnmatchcase(k, p) for k in found)]
    assert stale == [], "GLOBAL_KEYS lists keys no code binds"


def test_every_key_a_page_binds_carries_its_prefix(scanned):
    pages, _ = scanned
    wrong = {spec.name: sorted(k for k in pages[spec.name] if not _is_global(k)
                               and not k.lstrip("_").startswith(spec.prefix + "_"))
             for spec in PAGES}
    assert {name: keys for name, keys in wrong.items() if keys} == {}


def test_no_key_is_bound_by_two_pages(scanned):
    pages, _ = scanned
    owners = defaultdict(set)
    for name, keys in pages.items():
        for key in keys:
            if not _is_global(key):
                owners[key].add(name)
    keys = sorted(owners)
    shared = {}
    for i, a in enumerate(keys):
        for b in keys[i:]:
            if (a == b or fnmatchcase(a, b) or fnmatchcase(b, a)) and len(owners[a] | owners[b]) > 1:
                shared[a if a == b else f"{a} ~ {b}"] = sorted(owners[a] | owners[b])
    assert shared == {}


def test_a_page_binds_what_its_code_names(scanned):
    """Every page with widgets is seen by the scan (a page the scan cannot follow would pass the checks empty)."""
    pages, _ = scanned
    empty = [spec.name for spec in PAGES if not [k for k in pages[spec.name] if not _is_global(k)]
             and "key=" in Path(ROOT / spec.file).read_text()]
    assert empty == []
