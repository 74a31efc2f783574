"""Each pytest-xdist worker writes its atlas runs and decks into folders of its own (two workers writing one
store at once break each other's runs)."""
import os
from pathlib import Path

from tests.conftest import ARTIFACTS, WORKER


def test_atlas_and_deck_folders_are_this_workers_own():
    for var, stem in (("ATTNVIZ_ATLAS_DIR", "atlas"), ("ATTNVIZ_DECK_DIR", "decks")):
        want = ARTIFACTS / (f"{stem}-{WORKER}" if WORKER else stem)
        assert Path(os.environ[var]) == want, var
