"""Chromium: the elements a run has not redrawn yet keep their look during a quick run and fade, as Streamlit's own
fade does, once a run has lasted SLOW_RUN_MS (ui.page.FADE_SLOW_RUNS); the fade ends with the run."""
import pytest

from attnviz.ui.page import SLOW_RUN_MS
from tests.browser.helpers import choose
from tests.conftest import StreamlitServer, wait_for_app

pytestmark = pytest.mark.browser

# every 40 ms while the run lasts and a little after, and whenever the app's script state or an element's staleness
# changes (a part's quick rerun can start and end between two timer ticks of a busy page): [ms since the click,
# script state, document class set, stale elements shown (not inside a hidden block), the lowest opacity among them,
# whether any of them has a transition (Streamlit gives each one, delayed, at the run's start)]
SAMPLE_JS = """(until) => { window.__fadeLog = new Promise((done) => {
  const log = [], t0 = performance.now(), app = document.querySelector('[data-testid="stApp"]');
  const sample = () => {
    const stale = [...document.querySelectorAll('[data-stale="true"]')].filter((e) => e.offsetParent !== null);
    const lowest = stale.length ? Math.min(...stale.map((e) => +getComputedStyle(e).opacity)) : null;
    const moving = stale.some((e) => getComputedStyle(e).transitionDuration.split(',').some((d) => parseFloat(d) > 0));
    log.push([performance.now() - t0, app.getAttribute('data-test-script-state'),
              document.documentElement.classList.contains('attnviz-slow-run'), stale.length, lowest, moving]);
  };
  const flips = new MutationObserver(sample);
  flips.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  flips.observe(document.body, {subtree: true, attributes: true, attributeFilter: ['data-stale']});
  const iv = setInterval(() => {
    sample();
    if (performance.now() - t0 > until) { clearInterval(iv); flips.disconnect(); done(log); }
  }, 40);
}); }"""


@pytest.fixture(scope="module")
def fade_server():
    server = StreamlitServer(app="tests/browser/slow_run_fade_app.py")
    yield server
    server.stop()


def _click_and_sample(page, until_ms: float) -> list:
    button = page.locator(".st-key-fade_run button")
    button.wait_for()
    page.evaluate(SAMPLE_JS, until_ms)  # starts sampling; the log is read once it is complete
    button.click()
    return page.evaluate("window.__fadeLog")


def test_a_slow_run_fades_what_it_has_not_redrawn_and_a_quick_one_does_not(page, fade_server):
    page.goto(fade_server.url + "/?sleep=2.5")
    page.get_by_text("Last line").wait_for(timeout=60_000)
    wait_for_app(page, timeout=60)
    hidden = page.locator(".st-key-page_scripts")
    assert hidden.count() == 1 and not hidden.is_visible()  # the script's block takes no room

    log = _click_and_sample(page, 3200)
    running = [row for row in log if row[1] == "running"]
    assert running and running[-1][0] > 2000, log  # the run lasted its 2.5 s
    stale = [row for row in running if row[3] > 0]
    assert stale, log  # the lines below the button are outdated while it sleeps
    # times from the run's start (the fade's timer starts there; on a busy machine the browser may mark the lines
    # stale some way into the run, but before the fade's time)
    start = running[0][0]
    early = [row for row in stale if not row[2]]
    assert early and all(row[4] == 1 and not row[5] for row in early), log  # at first: unchanged
    assert not any(row[2] for row in running if row[0] < start + SLOW_RUN_MS - 150), log  # not faded before its time
    late = [row for row in stale if row[0] > start + SLOW_RUN_MS + 1300]
    assert late and all(row[2] and abs(row[4] - 0.33) < 0.01 for row in late), log  # faded, as Streamlit fades them
    middle = [row[4] for row in stale if start + SLOW_RUN_MS + 100 < row[0] < start + SLOW_RUN_MS + 900]
    assert any(0.34 < v < 0.99 for v in middle), log  # over a transition, not at once
    after = [row for row in log if row[1] != "running" and row[0] > running[-1][0]]
    assert after and not any(row[2] for row in after[1:]), log  # the class goes with the run
    wait_for_app(page, timeout=60)

    page.goto(fade_server.url + "/?sleep=0.1")
    page.get_by_text("Last line").wait_for(timeout=60_000)
    wait_for_app(page, timeout=60)
    log = _click_and_sample(page, 1200)
    assert not any(row[2] for row in log), log  # a quick run never sets the class
    assert all(row[4] in (None, 1) and not row[5] for row in log), log  # nor dims anything or sets a transition


def test_the_app_installs_the_fade_once_and_a_head_change_leaves_the_page_as_it_is(page, app_server):
    page.goto(app_server.url + "/heatmap?model_choice=minilm&layer=0&head=0")
    page.locator("h3").filter(has_text="Layer 0, head 0").wait_for(timeout=120_000)
    wait_for_app(page, timeout=120)
    assert page.evaluate("() => window.__attnvizSlowRuns === true")
    assert page.locator(".st-key-page_scripts").count() == 1
    assert not page.locator(".st-key-page_scripts").is_visible()
    # the list opened first, then the sampling started just before the option is clicked: on a busy machine opening
    # the list can take longer than the sampling lasts
    choose(page, "Head", "3", just_before=lambda: page.evaluate(SAMPLE_JS, 3000))
    page.locator("h3").filter(has_text="Layer 0, head 3").wait_for()
    log = page.evaluate("window.__fadeLog")
    # the sampling saw the page before the run began (a run's start is logged when it happens, by the observer, even
    # while a busy page delays the 40 ms samples) and outlasted the run
    assert log[0][1] == "notRunning" and log[-1][0] > 2900, log
    started = [row[0] for row in log if row[1] == "running"]
    # the part's run as the page showed it; a run so quick that the page drew its start and its end in one render
    # never shows as running, and then every sample is of it or after it
    quick = [row for row in log if row[1] == "running" and row[0] < started[0] + SLOW_RUN_MS - 100] if started else log
    assert quick and not any(row[2] or row[5] or row[4] not in (None, 1) for row in quick), log
    wait_for_app(page)
    assert page.locator(".st-key-page_scripts").count() == 1  # still one after the part's rerun
