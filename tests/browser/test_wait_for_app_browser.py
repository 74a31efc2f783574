"""Chromium: the tests' wait for the app lasts until the script has finished, also while the page already
shows its first elements and Streamlit shows no running status."""
import pytest

from tests.conftest import StreamlitServer, wait_for_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def slow_server():
    server = StreamlitServer(app="tests/browser/slow_script_app.py")
    yield server
    server.stop()


def test_the_wait_lasts_until_the_script_has_drawn_its_last_line(page, slow_server):
    page.goto(slow_server.url + "/?sleep=6")
    page.get_by_text("A slow page").wait_for(timeout=60_000)  # the heading is drawn while the script sleeps
    wait_for_app(page, timeout=120)
    assert page.get_by_text("The last line").count() == 1
    assert page.locator('[data-testid="stApp"]').get_attribute("data-test-script-state") != "running"
