"""Shared fixtures: the packaged model, tiny random models, a streamlit server and Chromium."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401  unlisted skips fail
from tools.classroom.servers import Streamlit, free_port

ROOT = Path(__file__).resolve().parent.parent
# Debian's Chromium in its headless shell (package chromium-headless-shell, the same Blink as /usr/bin/chromium without
# the browser's window machinery): about a third less processor time per page load here, and the tests are
# processor-bound. /usr/bin/chromium when the shell is not installed.
CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium") if Path(p).exists()),
                "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# Every test's browser context asks for reduced motion: Streamlit then skips its fade-in and transition animations,
# which the tests do not look at, and Chromium draws about 40% less (the heatmap page, 6 head changes and 3 page
# loads: 2.0 processor-seconds against 3.6, alternated three times). The bench keeps the default, as a visitor has.
CONTEXT = {"reduced_motion": "reduce"}
ARTIFACTS = ROOT / "test-artifacts"
APP = str(ROOT / "app.py")  # AppTest.from_file(APP): relative paths resolve against the caller

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One folder per pytest-xdist worker for what a test writes under a fixed name ("" when run without workers).
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if WORKER:  # several workers (and their servers) share the cores: one torch thread each, no spinning threads
    os.environ.setdefault("ATTNVIZ_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# corpus runs of the Head atlas page go under test-artifacts, never the developer's cache (servers inherit it).
# Set, not defaulted: the workers inherit the environment of the process that started them, and each needs its own.
os.environ["ATTNVIZ_ATLAS_DIR"] = str(ARTIFACTS / "-".join(filter(None, ("atlas", WORKER))))
# working copies of lecture decks likewise (the Deck page writes one on every change)
os.environ["ATTNVIZ_DECK_DIR"] = str(ARTIFACTS / "-".join(filter(None, ("decks", WORKER))))
# so do the timings record and the converted copy of SmolLM2's GGUF file (converted once, read by the later servers)
os.environ.setdefault("ATTNVIZ_CACHE_DIR", str(ARTIFACTS / "cache"))


# The longest tests (minutes each) start first: with several workers (`-n` in the Makefile), none of them is
# then left running alone at the end while the other workers wait.
LONGEST_FIRST = (
    "tests/browser/test_walk.py", "tests/browser/test_load.py", "tests/browser/test_tour_browser.py",
    "tests/browser/test_long_smollm2_browser.py", "tests/browser/test_presentation_browser.py",
    "tests/browser/test_deck_browser.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def minilm():
    """The packaged default model (LoadedModel), loaded once per test session."""
    from attnviz.models import load_model

    return load_model("minilm")


class StreamlitServer(Streamlit):
    """`streamlit run app.py` on a free loopback port, logging into test-artifacts; started and stopped by the tests."""

    def __init__(self, app: str = "app.py"):
        port = free_port()
        ARTIFACTS.mkdir(exist_ok=True)
        super().__init__(port, ARTIFACTS / f"streamlit-{port}.log", app)
        self.wait(90.0)


def served():
    """A StreamlitServer for a fixture to yield, stopped when the fixture ends."""
    ARTIFACTS.mkdir(exist_ok=True)
    server = StreamlitServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def app_server():
    yield from served()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing at /usr/bin/chromium: `make test` installs it")
        pytest.skip("Chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture(scope="session")
def _tabs(browser):
    """One browser tab per worker, handed from test to test: a new context per test would download and compile
    Streamlit's scripts afresh each time (about 4 s of a test's page load, measured); the tab keeps them."""
    tabs = []
    yield tabs
    for tab in tabs:
        if not tab.is_closed():
            tab.context.close()


def forget_stored(pg) -> None:
    """What pages stored in the browser (localStorage: the margins of figures drawn in place) let go, for every site
    of the tab's context: each test starts from a browser that has shown nothing."""
    origins = [o["origin"] for o in pg.context.storage_state()["origins"]]
    if origins:
        cdp = pg.context.new_cdp_session(pg)
        try:
            for origin in origins:
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "local_storage"})
        finally:
            cdp.detach()


@pytest.fixture
def page(_tabs, browser, request):
    """The worker's tab, on a blank page with no cookies or stored data, the default window size and timeout. Each
    test's first page load still starts a Streamlit session of its own."""
    ARTIFACTS.mkdir(exist_ok=True)
    if not _tabs or _tabs[-1].is_closed():
        _tabs.append(browser.new_context(viewport=VIEWPORT, **CONTEXT).new_page())
    pg = _tabs[-1]
    pg.context.clear_cookies()
    forget_stored(pg)
    pg.set_viewport_size(VIEWPORT)
    pg.set_default_timeout(60_000)
    pg.goto("about:blank")  # the last test's session ends with its page
    yield pg
    if pg.is_closed():
        return
    failed = getattr(request.node, "report_call", None) is None or request.node.report_call.failed
    if failed:
        try:
            pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)  # what the failure left
        finally:
            pg.context.close()  # a failed test's tab is not handed on
    else:
        pg.goto("about:blank")


_BUSY_JS = """() => {
  const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
  const running = state === 'running' || document.querySelector('[data-testid="stStatusWidget"]') !== null;
  const skeletons = document.querySelectorAll('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"], [data-testid="stSpinner"]').length;
  const elements = document.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]').length;
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const unrendered = charts.filter(c => !(c.querySelector('.js-plotly-plot')?._fullLayout)).length
    + document.querySelectorAll('.attnviz-plotly[data-drawing], .attnviz-plotly:not(.js-plotly-plot)').length;
  return running || skeletons > 0 || elements === 0 || unrendered > 0;
}"""


def wait_for_app(page, timeout: float = 90.0, settle: float = 1.0):
    """Wait until the Streamlit script has finished and the page has drawn: the app's script state
    not "running" (Streamlit 1.67 shows no status widget while a script runs), no running status,
    no skeletons, every plotly chart rendered, stable for `settle` seconds. Raises TimeoutError (Python's, also
    when Playwright's own wait for the app's element runs out: a busy browser can take over a second to answer)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_selector('[data-testid="stApp"]', state="attached", timeout=timeout * 1000)
    except PlaywrightTimeout as e:
        raise TimeoutError(f"the app's page was not there within {timeout:.0f} s") from e
    deadline = time.time() + timeout
    idle_since = None
    while time.time() < deadline:
        if page.evaluate(_BUSY_JS):
            idle_since = None
        elif idle_since is None:
            idle_since = time.time()
        elif time.time() - idle_since >= settle:
            return
        time.sleep(0.2)
    raise TimeoutError("the app kept running for %.0f s" % timeout)


def plotly_z(page, index: int = 0):
    """z values of the first trace of the index-th plotly figure on the page."""
    return page.evaluate(
        "(i) => { const el = document.querySelectorAll('.js-plotly-plot')[i];"
        " return el && el._fullData && el._fullData[0].z ? el._fullData[0].z : null; }", index)
