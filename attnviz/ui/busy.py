"""The "server is busy" gate: at most a few page runs compute at once in this process; the others wait
their turn in arrival order under a plain message, instead of all slowing down together or hanging.

app.py runs the page through it: `busy.run(nav.run)` in place of `nav.run()`. Streamlit runs every
session's script in a thread of the one server process, so a module-level gate is shared by all sessions.
"""
from __future__ import annotations

import collections
import os
import threading
import time

import streamlit as st

LIMIT = int(os.environ.get("ATTNVIZ_MAX_RUNS", "0")) or max(2, 2 * (os.cpu_count() or 1))  # runs computing at once
WAIT_S = float(os.environ.get("ATTNVIZ_BUSY_WAIT", "120"))  # longest wait before "try again" (seconds)
QUIET_S = 0.3  # a wait shorter than this shows no message
TICK_S = 1.0  # the message is refreshed this often; each refresh lets Streamlit stop or restart the run


class Gate:
    """A first-come first-served counter of running page scripts, shared by every session's thread."""

    def __init__(self, limit: int = LIMIT):
        self.limit = limit  # how many runs compute at once
        self.running = 0  # runs inside the gate now
        self.waited = 0  # runs that had to wait (since the process started)
        self._queue: collections.deque = collections.deque()  # tickets of waiting runs, oldest first
        self._cond = threading.Condition()

    def join(self) -> object:
        """A ticket at the back of the queue."""
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
        return ticket

    def enter(self, ticket, timeout: float) -> bool:
        """Wait up to `timeout` s for this ticket's turn; True once inside (then call leave())."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (self._queue and self._queue[0] is ticket and self.running < self.limit):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            self._queue.popleft()
            self.running += 1
            self._cond.notify_all()  # the next ticket may fit too
            return True

    def cancel(self, ticket) -> None:
        """Give up a place in the queue (a stopped or restarted run)."""
        with self._cond:
            if ticket in self._queue:
                self._queue.remove(ticket)
                self._cond.notify_all()

    def leave(self) -> None:
        with self._cond:
            self.running -= 1
            self._cond.notify_all()

    def ahead(self, ticket) -> int:
        """Waiting runs in front of this ticket."""
        with self._cond:
            return self._queue.index(ticket) if ticket in self._queue else 0


GATE = Gate()


def message(running: int, ahead: int) -> str:
    return (f"The server is busy: {running} sessions are computing"
            + (f" and {ahead} {'is' if ahead == 1 else 'are'} waiting before you" if ahead else "")
            + ". This view will appear as soon as one of them finishes; there is no need to reload.")


def run(page, gate: Gate | None = None, wait: float | None = None):
    """Call page() (e.g. `nav.run`) once the gate lets this run in, and leave the gate after it, also when
    the page stops or reruns. While waiting, an info box says how busy the server is; after `wait`
    seconds a warning asks the user to try again and the run stops (st.stop) without the page."""
    gate = gate or GATE
    wait = WAIT_S if wait is None else wait
    ticket = gate.join()
    inside = False
    try:
        inside = gate.enter(ticket, min(QUIET_S, wait))
        if not inside:
            with gate._cond:
                gate.waited += 1
            box = st.empty()
            deadline = time.monotonic() + wait
            while not inside and time.monotonic() < deadline:
                box.info(message(gate.running, gate.ahead(ticket)), icon=":material/hourglass_top:")
                inside = gate.enter(ticket, min(TICK_S, max(deadline - time.monotonic(), 0)))
            if not inside:
                box.warning(f"The server is still busy after {wait:.0f} seconds ({gate.running} sessions computing). "
                            "Please try again in a minute: reload this page or change a setting.")
                from attnviz.ui.share import stopped_early

                stopped_early()  # the browser forgets the page's controls: the next run sends them again
                st.stop()  # as a page that stops early: app.py's `finally` still keeps the URL current
            box.empty()
        return page()
    finally:
        if inside:
            gate.leave()
        else:
            gate.cancel(ticket)
