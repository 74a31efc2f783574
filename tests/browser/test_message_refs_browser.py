"""Chromium: a rerun asked for while another run is on its way to the page gets the elements the page will need.

The page lists the big elements it holds with every rerun request, and the server sends a reference instead of an
element on that list. The page forgets an element unused for more than two runs when a run it saw start ends. Here a
fragment's run is held back on its way to the page (Playwright's websocket route) while the slider is moved on: the
requests list the step-12 figure, which the held run's end makes the page forget; the server runs them after the held
run (a fragment's reruns wait for each other). The server must send the figure whole; a reference would stop the page
with "Connection error: Cached ForwardMsg MISS"."""
import time

import numpy as np
import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.browser.helpers import plot_z, wait_plot
from tests.conftest import ARTIFACTS, CONTEXT, VIEWPORT, wait_for_app

pytestmark = pytest.mark.browser

ENDS = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}


class HeldStream:
    """The page's websocket through Playwright: the server's messages pass at once, except that from the next run's
    start on, once `hold_next_run()` was called, they wait in `held` until `release()`."""

    def __init__(self):
        self.route = None
        self.arm = False
        self.held: list[bytes] = []
        self.requests: list = []  # the rerun requests' lists of held elements, in order
        self.figures: dict[str, str] = {}  # hash -> title of each figure the page got before any hold

    def __call__(self, route):
        self.route = route
        server = route.connect_to_server()
        route.on_message(self._from_page(server))
        server.on_message(self._from_server)

    def _from_page(self, server):
        def forward(payload):
            back = BackMsg()
            back.ParseFromString(payload if isinstance(payload, bytes) else payload.encode())
            if back.WhichOneof("type") == "rerun_script":
                self.requests.append(set(back.rerun_script.cached_message_hashes))
            server.send(payload)
        return forward

    def _from_server(self, payload):
        msg = ForwardMsg()
        msg.ParseFromString(payload)
        if self.arm and msg.WhichOneof("type") == "new_session":
            self.arm = False
            self.held.append(payload)
            return
        if self.held:
            self.held.append(payload)
            return
        title = _figure_title(msg)
        if title is not None:
            self.figures[msg.hash] = title
        self.route.send(payload)

    def hold_next_run(self):
        self.arm = True

    def ends_held(self) -> list[int]:
        """The positions in `held` of the successful runs' ends."""
        return [i for i, m in enumerate(self.held_messages())
                if m.WhichOneof("type") == "script_finished" and m.script_finished in ENDS]

    def held_messages(self) -> list:
        out = []
        for payload in self.held:
            msg = ForwardMsg()
            msg.ParseFromString(payload)
            out.append(msg)
        return out

    def release(self, count: int | None = None):
        """Send on the first `count` held messages (all by default); the others stay held."""
        count = len(self.held) if count is None else count
        out, self.held = self.held[:count], self.held[count:]
        for payload in out:
            self.route.send(payload)


def _figure_title(msg) -> str | None:
    """The title of the figure a message draws (st.plotly_chart's, or ui.plotly_bytes'), or None."""
    import json

    from attnviz.plotting import figure_from_bytes
    from tests.browser.helpers import _bytes_figure

    if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
        return None
    element = msg.delta.new_element
    if element.WhichOneof("type") == "plotly_chart":
        layout = json.loads(element.plotly_chart.spec)["layout"]
    elif _bytes_figure(element) is not None:
        layout = figure_from_bytes(_bytes_figure(element).bytes)["figure"]["layout"]
    else:
        return None
    title = layout.get("title") or {}
    return title.get("text", "") if isinstance(title, dict) else str(title)


def _pump_until(page, ready, timeout: float = 90.0):
    """Let Playwright deliver its events (the route's handlers run only inside its calls) until ready()."""
    deadline = time.time() + timeout
    while not ready():
        assert time.time() < deadline, "timed out"
        page.wait_for_timeout(100)


def test_a_rerun_asked_for_while_another_run_is_on_its_way_sends_whole_the_figure_that_run_makes_the_page_forget(
        browser, app_server):
    context = browser.new_context(viewport=VIEWPORT, **CONTEXT)
    page = context.new_page()
    page.set_default_timeout(60_000)
    stream = HeldStream()
    page.route_web_socket("**/_stcore/stream", stream)
    try:
        page.goto(app_server.url + "/lab_kv_cache")
        wait_for_app(page)
        page.get_by_text("How big is the cache?").first.wait_for()
        wait_for_app(page)
        step12 = np.asarray(plot_z(page, wait_plot(page, title="after step 12:")), dtype=float)
        (h12,) = [h for h, title in stream.figures.items() if "after step 12:" in title]
        thumb = page.get_by_role("slider", name="Generation step")
        thumb.scroll_into_view_if_needed()
        thumb.focus()
        page.keyboard.press("ArrowLeft")  # step 11: the step-12 figure is one run old
        wait_plot(page, title="after step 11:")
        wait_for_app(page)
        stream.hold_next_run()
        thumb.focus()
        page.keyboard.press("ArrowLeft")  # step 10: its run's end makes the page forget the step-12 figure
        _pump_until(page, lambda: stream.ends_held())  # that run has ended; the page has not seen it start
        asked = len(stream.requests)
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")  # back to step 12, asked for while the page still holds its figure

        def sent_h12() -> list:  # the held messages that send the step-12 figure, whole or as a reference
            return [i for i, m in enumerate(stream.held_messages()) if h12 in (m.hash, m.ref_hash)]

        _pump_until(page, lambda: sent_h12() and stream.ends_held()[-1] > sent_h12()[0])  # step 12's run ended
        assert all(h12 in listed for listed in stream.requests[asked:]), "the requests did not list the step-12 figure"
        assert sent_h12()[0] > stream.ends_held()[0], "the step-12 figure came in the held run"
        whole = not stream.held_messages()[sent_h12()[0]].ref_hash
        stream.release(stream.ends_held()[0] + 1)  # the held run, as it would have come: the page forgets the figure
        page.wait_for_timeout(1000)
        stream.release()
        page.wait_for_function("() => document.body.innerText.includes('Cached ForwardMsg')"
                               " || [...document.querySelectorAll('.gtitle')].some(t => t.textContent.includes('"
                               "after step 12:'))")
        assert page.get_by_text("Cached ForwardMsg").count() == 0, "the page stopped: a reference to a forgotten copy"
        assert whole, "the step-12 figure went as a reference to the copy the page forgets on reading the held run's end"
        wait_for_app(page)
        again = np.asarray(plot_z(page, wait_plot(page, title="after step 12:")), dtype=float)
        np.testing.assert_allclose(again, step12, atol=1e-12)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / "message-refs-held-end.png"), full_page=True)
        raise
    finally:
        context.close()
