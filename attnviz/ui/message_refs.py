"""A reference to an element the browser holds is sent only while the browser will still hold it.

Streamlit sends a big element the browser already holds (a figure a rerun did not change) as a reference to the
browser's copy: the browser lists the copies it holds with every rerun request, and the server sends a reference for
an element in that list. The browser forgets a copy unused for more than `global.maxCachedMessageAge` runs when a
successful run it saw start ends. A fragment's reruns wait for each other instead of stopping the one that runs, so
a run can end after the browser sent its next request (a slider moved by a quick run of keys while the page ran):
that end can make the browser forget a copy its request listed, the reference arrives after it, and the page stops
with "Connection error: Cached ForwardMsg MISS".

This keeps, per session, the browser's copies as the messages sent to it leave them, with the browser's own rules:
a cacheable element is kept from the message that sent it, a reference or a copy sent again counts as a use, and a
successful run's end forgets the copies unused for more than the allowed runs (a fragment's run, only the fragment's
copies). A reference goes out only for a copy in the browser's list that these rules say it still holds; any other
element goes whole.

The rules run on the session's messages in the order the browser reads them, on the safe side of each:
- a successful run's end counts from when it is queued, before the browser can read it (the browser also skips the
  end of a run it did not see start): a copy is forgotten here no later than in the browser;
- a use is counted when its message is sent: a use still queued counts later, so its copy is older here than in the
  browser;
- a copy sent in several fragments' runs (or outside any) is aged by the ends of each of their runs, and of every
  whole run.
So a copy these rules hold is one the browser holds when the reference reaches it.
"""
from __future__ import annotations

import functools
import threading
import weakref

from streamlit import config
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

_RUN_ENDS = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}  # the browser ages


class BrowserCopies:
    """The cacheable elements one browser session holds, as the messages sent to it leave them."""

    KEPT = 4096  # copies tracked at most (the least recently used beyond that count as forgotten)

    def __init__(self, max_age: int):
        self.max_age = max_age
        self._lock = threading.RLock()
        self._ended = 0  # successful runs' ends sent: the browser's run count when it reads the next message, at most
        self._last_end: dict[str | None, int] = {}  # the run count at the last end of a whole run (None), of a fragment
        self._pending: list[tuple[ForwardMsg, frozenset[str]]] = []  # successful runs' ends queued, not yet sent
        self._used: dict[str, int] = {}  # hash -> run count when the browser last got or used it
        # hash -> every fragment whose run sent it ("" outside any): the browser keeps it under the fragment that
        # first sent it, whose runs' ends then age it
        self._fragments: dict[str, set[str]] = {}

    def queued(self, msg: ForwardMsg) -> None:
        """A message was queued for the browser: a successful run's end will age the copies of its fragments (of all,
        when the whole script ran) before the browser reads any message queued after it."""
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished in _RUN_ENDS:
            with self._lock:
                self._pending.append((msg, frozenset(msg.metadata.run.fragment_ids)))

    def sent(self, msg: ForwardMsg) -> None:
        """A message went to the browser: a run's end counts as it went (the queue turns the end of a run it dropped
        into an early one), a cacheable element is kept, and a reference or a copy again is a use."""
        kind = msg.WhichOneof("type")
        with self._lock:
            if kind == "script_finished":
                at = next((i for i, (m, _) in enumerate(self._pending) if m is msg), -1)
                del self._pending[:at + 1]  # ends queued before it went before it
                if msg.script_finished in _RUN_ENDS:
                    self._ended += 1
                    for fragment in msg.metadata.run.fragment_ids or [None]:
                        self._last_end[fragment] = self._ended
            elif kind == "ref_hash":  # it reaches a browser that holds the copy (holds() said so when it was queued)
                self._use(msg.ref_hash)
            elif msg.metadata.cacheable and msg.hash:
                self._use(msg.hash)
                self._fragments.setdefault(msg.hash, set()).add(msg.delta.fragment_id if kind == "delta" else "")

    def _use(self, h: str) -> None:
        self._used.pop(h, None)
        self._used[h] = self._ended  # the most recently used last
        while len(self._used) > self.KEPT:
            del self._used[next(iter(self._used))]

    def holds(self, h: str) -> bool:
        """Whether the browser will still hold this copy when a reference queued now reaches it: no end of a run
        that ages it, sent or queued since its last use, finds it unused for more than `max_age` runs. (Ages only
        grow, so the last such end is the one to check; one before the use counts no run since it.)"""
        with self._lock:
            used = self._used.get(h)
            if used is None:
                return False
            fragments = self._fragments[h] - {""}
            last = max([self._last_end.get(None, 0)] + [self._last_end.get(f, 0) for f in fragments])
            for count, (_, ends) in enumerate(self._pending, start=self._ended + 1):
                if not ends or ends & fragments:
                    last = count
            return last - used <= self.max_age


class _Listed(frozenset):
    """The copies a rerun request listed, of which only those the browser will still hold count as held."""

    def __new__(cls, hashes, copies: BrowserCopies):
        listed = super().__new__(cls, hashes)
        listed.copies = copies
        return listed

    def __contains__(self, h) -> bool:
        return frozenset.__contains__(self, h) and self.copies.holds(h)


_COPIES: weakref.WeakValueDictionary[str, BrowserCopies] = weakref.WeakValueDictionary()
_installed = False
_install_lock = threading.Lock()


def copies_of(session) -> BrowserCopies:
    """The copies of one AppSession (kept on it, so they go with it)."""
    copies = getattr(session, "_attnviz_copies", None)
    if copies is None:
        copies = BrowserCopies(int(config.get_option("global.maxCachedMessageAge")))
        session._attnviz_copies = copies
        _COPIES[session.id] = copies
    return copies


def install() -> None:
    """Guard the running server's references (once per process, before any run has ended: the app's first line).
    Without a server (AppTest) nothing is sent as a reference and nothing changes."""
    global _installed
    from streamlit import runtime

    if _installed or not runtime.exists():
        return
    with _install_lock:
        if _installed:
            return
        from streamlit.runtime.app_session import AppSession
        from streamlit.runtime.runtime import Runtime
        from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

        queue, send, reset = AppSession._enqueue_forward_msg, Runtime._send_message, ScriptRunContext.reset

        @functools.wraps(queue)
        def _enqueue_forward_msg(self, msg):
            copies_of(self).queued(msg)
            queue(self, msg)

        @functools.wraps(send)
        def _send_message(self, session_info, msg):
            copies_of(session_info.session).sent(msg)
            send(self, session_info, msg)

        @functools.wraps(reset)
        def _reset(self, *args, **kwargs):
            reset(self, *args, **kwargs)
            copies = _COPIES.get(self.session_id)
            self.cached_message_hashes = (_Listed(self.cached_message_hashes, copies) if copies is not None
                                          else frozenset())  # a session not seen yet holds nothing of ours

        AppSession._enqueue_forward_msg = _enqueue_forward_msg
        Runtime._send_message = _send_message
        ScriptRunContext.reset = _reset
        _installed = True
