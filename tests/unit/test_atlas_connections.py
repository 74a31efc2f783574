"""Head atlas stores are read through DuckDB connections: a closed or dropped view holds none, a view that
fails to open holds none, a view still held at interpreter exit (the app's cache keeps them) lets go of its
connection before the interpreter shuts down, and nothing of DuckDB is reported leaked at exit, also after the
app has frozen the garbage collector's objects (ui.cache.settle_collector, run after every model load)."""
from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import textwrap

import pytest

from attnviz.atlas import corpus as cp
from attnviz.atlas.query import Atlas
from attnviz.atlas.run import run_corpus
from attnviz.errors import BadInput
from tests.conftest import ROOT


def live_connections() -> int:
    """DuckDB connection objects alive in this interpreter (open or closed)."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o).__name__ == "DuckDBPyConnection")


@pytest.fixture(scope="module")
def folder(minilm, tmp_path_factory):
    folder = tmp_path_factory.mktemp("atlas") / "store"
    corpus = cp.from_text(b"The cat sat on the mat.\nParis is the capital of France.", "two.txt")
    run_corpus("minilm", corpus, folder, loaded=minilm, chunk_size=2)
    return folder


def test_a_view_closed_by_its_with_block_holds_no_connection(folder):
    before = live_connections()
    with Atlas(folder) as atlas:
        assert live_connections() == before + 1
        assert atlas.n_sentences == 2 and (atlas.n_layers, atlas.n_heads) == (6, 12)
    assert atlas.closed and live_connections() == before
    with pytest.raises(BadInput, match="was closed: open the store again"):
        atlas.stat_map("entropy")
    atlas.close()  # a second close does nothing
    assert live_connections() == before


def test_a_dropped_view_closes_its_connection(folder):
    before = live_connections()
    atlas = Atlas(folder)
    assert live_connections() == before + 1
    del atlas
    assert live_connections() == before


def test_a_view_that_fails_to_open_holds_no_connection(folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    for part in (broken / "parts").glob("stats-*.parquet"):
        part.unlink()  # the store's statistics are gone: opening it fails on its first query
    before = live_connections()
    with pytest.raises(Exception) as failure:
        Atlas(broken)
    assert live_connections() == before, "the connection outlived the failed open"
    del failure


EXIT_CHECK = textwrap.dedent("""
    import atexit, gc, sys, weakref

    assert not weakref.finalize._registered_with_atexit  # this check must run after the finalizers
    def count():
        gc.collect()
        n = sum(1 for o in gc.get_objects() if type(o).__name__ == "DuckDBPyConnection")
        sys.stdout.write(f"connections alive after the exit handlers: {n}\\n")
    atexit.register(count)

    from attnviz.atlas.query import Atlas
    from attnviz.atlas.store import finished
    from attnviz.ui.cache import atlas_view

    folder = sys.argv[1]
    cached = atlas_view(folder, tuple(sorted(finished(folder))))  # as the app holds it
    held = Atlas(folder)  # and one held by a module until the end
    print(cached.n_sentences + held.n_sentences)
""")


def test_views_still_held_at_exit_let_go_of_their_connections(folder):
    out = subprocess.run([sys.executable, "-c", EXIT_CHECK, str(folder)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[0] == "4"
    assert "connections alive after the exit handlers: 0" in out.stdout, out.stdout
    assert "leaked" not in out.stderr, out.stderr[-2000:]


def test_nothing_of_duckdb_is_left_at_exit_after_the_collector_freeze(folder):
    script = textwrap.dedent("""
        import sys
        from attnviz.atlas.store import finished
        from attnviz.ui.cache import atlas_view, settle_collector

        cached = atlas_view(sys.argv[1], tuple(sorted(finished(sys.argv[1]))))
        settle_collector()  # what the app does after loading a model
        print(cached.n_layers)
    """)
    out = subprocess.run([sys.executable, "-c", script, str(folder)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["6"], out.stderr[-2000:]
    assert "leaked" not in out.stderr, out.stderr[-2000:]
