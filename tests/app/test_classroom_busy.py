"""The busy gate (attnviz/ui/busy.py): beyond its limit, page runs wait in arrival order under a plain
"server is busy" message, then run; past the wait limit they say "try again" instead of hanging."""
from __future__ import annotations

import threading
import time

from streamlit.testing.v1 import AppTest

from attnviz.ui import busy


def _script():
    import streamlit as st

    from attnviz.ui import busy as b

    gate = st.session_state["gate"]
    b.run(lambda: st.markdown("page ran"), gate=gate, wait=st.session_state["wait"])


def _app(gate, wait: float) -> AppTest:
    at = AppTest.from_function(_script, default_timeout=30)
    at.session_state["gate"] = gate
    at.session_state["wait"] = wait
    return at


def _hold(gate: busy.Gate) -> None:
    assert gate.enter(gate.join(), 1.0)


def test_a_free_gate_runs_the_page_at_once_without_a_message():
    gate = busy.Gate(limit=2)
    at = _app(gate, 5.0)
    at.run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["page ran"]
    assert len(at.info) == 0 and len(at.warning) == 0
    assert gate.running == 0 and gate.waited == 0  # left the gate after the page


def _leave_once_a_run_waits(gate: busy.Gate, after: float) -> None:
    """The other session leaves the gate once a run waits there and `after` seconds have passed (on a busy machine
    the run can reach the gate later than `after`: it still finds the gate full)."""
    def leave():
        t0 = time.perf_counter()
        while gate.waited == 0 and time.perf_counter() - t0 < 60:
            time.sleep(0.02)
        time.sleep(max(0.0, after - (time.perf_counter() - t0)))
        gate.leave()

    threading.Thread(target=leave, daemon=True).start()


def test_a_full_gate_makes_the_run_wait_then_the_page_appears():
    gate = busy.Gate(limit=1)
    _hold(gate)  # another session is computing
    _leave_once_a_run_waits(gate, 1.5)
    at = _app(gate, 30.0)
    t0 = time.perf_counter()
    at.run()
    waited = time.perf_counter() - t0
    assert not at.exception
    assert waited > 1.3  # it waited for the other session (a run that gave up would show no page, below)
    assert [m.value for m in at.markdown] == ["page ran"]
    assert len(at.info) == 0  # the busy message is gone once the view is there
    assert gate.waited == 1 and gate.running == 0


def test_a_gate_that_stays_full_says_try_again_instead_of_hanging():
    gate = busy.Gate(limit=1)
    _hold(gate)
    at = _app(gate, 1.5)
    t0 = time.perf_counter()
    at.run()
    assert time.perf_counter() - t0 < 60  # gave up after its 1.5 s wait (not the gate's 120 s), even on a busy machine
    assert not at.exception
    assert [m.value for m in at.markdown] == []  # the page did not run
    assert "still busy" in at.warning[0].value and "try again" in at.warning[0].value
    assert gate.running == 1 and gate.ahead(object()) == 0 and not gate._queue  # its place was given up


def test_waiting_runs_enter_in_arrival_order_and_never_exceed_the_limit():
    gate = busy.Gate(limit=2)
    order, peak, lock = [], [0], threading.Lock()

    def worker(i, ticket):
        assert gate.enter(ticket, 20)
        with lock:
            order.append(i)
            peak[0] = max(peak[0], gate.running)
        time.sleep(0.05)
        gate.leave()

    tickets = [gate.join() for _ in range(8)]  # arrival order 0..7
    threads = [threading.Thread(target=worker, args=(i, t)) for i, t in reversed(list(enumerate(tickets)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert order == list(range(8))
    assert peak[0] <= 2 and gate.running == 0


def test_the_message_says_how_busy_in_plain_words():
    assert busy.message(4, 0) == ("The server is busy: 4 sessions are computing. This view will appear as soon as "
                                  "one of them finishes; there is no need to reload.")
    assert "and 1 is waiting before you" in busy.message(4, 1)
    assert "and 3 are waiting before you" in busy.message(4, 3)
