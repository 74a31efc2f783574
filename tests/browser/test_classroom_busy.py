"""The busy gate over the wire: more students than the server runs at once see "the server is busy" and then
their view, in arrival order, instead of a hang; past the wait limit, "try again" (a tiny app, so it runs in CI)."""
from __future__ import annotations

import pytest

from tools.classroom.protocol import Session
from tests.browser.test_classroom import in_thread
from tests.conftest import ARTIFACTS, StreamlitServer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def tiny():
    ARTIFACTS.mkdir(exist_ok=True)
    server = StreamlitServer(app="tests/browser/classroom_busy_app.py")
    yield server
    server.stop()


async def _open_all(url: str, n: int, link: str, spacing: float = 0.4) -> list:
    """Open `link` in n sessions arriving `spacing` seconds apart (wide enough that a loaded machine's delay in
    one session's handshake does not swap the arrival order), each while the first one's page still runs."""
    import asyncio

    async def one(i):
        await asyncio.sleep(spacing * i)  # arrival order 0, 1, 2, ...
        s = Session(url, timeout=60)
        r = await s.open(link)
        out = (r, s.texts(), s.alerts())
        await s.close()
        return out

    return await asyncio.gather(*(one(i) for i in range(n)))


def test_more_students_than_the_server_runs_wait_under_a_busy_message_then_see_their_view(tiny):
    got = in_thread(_open_all(tiny.url, 3, "/?sleep=1.5"))
    runs = [r for r, _, _ in got]
    assert all(r.ok for r in runs), [r.errors for r in runs]
    assert all(texts == ["page ran"] for _, texts, _ in got)  # every view appeared ...
    assert all(alerts == [] for _, _, alerts in got)  # ... and the busy message went away
    assert not runs[0].busy and runs[1].busy and runs[2].busy  # the later arrivals were told, not left hanging
    ms = [r.ms for r in runs]
    assert ms[0] < ms[1] < ms[2]  # served one after another, in arrival order
    assert ms[2] > 2 * 1500  # it really waited for the two runs before it (arriving 0.8 s into the first)


def test_a_wait_past_the_limit_says_try_again_and_the_server_recovers(tiny):
    got = in_thread(_open_all(tiny.url, 2, "/?sleep=3&wait=1"))
    (first, texts0, _), (second, texts1, alerts1) = got
    assert first.ok and texts0 == ["page ran"]
    assert second.ok and texts1 == []  # a plain message, no exception, no hang
    assert any("still busy" in a and "try again" in a for a in alerts1), alerts1
    again = in_thread(_open_all(tiny.url, 1, "/?sleep=0.1"))
    assert again[0][0].ok and again[0][1] == ["page ran"]
