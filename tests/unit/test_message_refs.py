"""ui.message_refs: a reference goes out only for a copy the browser will still hold when it reads it.

The browser here is the load tests' tab (tools.classroom.protocol.Session), whose message cache follows Streamlit's
frontend as its code reads (ForwardMessageCache and the App's handling of runs): it keeps a cacheable element under
the fragment that first sent it, a reference or the element again is a use, and a successful run's end it saw start
(a new_session after its last request) adds one to its run count and forgets the copies (of the run's fragments,
when a fragment ran) unused for more than two runs."""
import random

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attnviz.ui.message_refs import BrowserCopies
from tools.classroom.protocol import Session

MAX_AGE = 2
ENDS = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)


class Browser:
    """A tab's message cache: what its rerun requests list, and what it holds as it reads the server's messages."""

    def __init__(self):
        self.tab = Session("http://127.0.0.1:1")  # never connected: only its handling of messages is used

    @property
    def cache(self) -> dict:
        return self.tab._cache

    def request(self) -> frozenset:
        return frozenset(self.tab._rerun_msg().rerun_script.cached_message_hashes)

    def read(self, msg: ForwardMsg) -> None:
        if msg.WhichOneof("type") == "ref_hash":
            assert msg.ref_hash in self.cache, f"Cached ForwardMsg MISS [hash={msg.ref_hash}]"
        self.tab._handle(self.tab._through_cache(msg, msg.SerializeToString()))


def _start():
    msg = ForwardMsg()
    msg.new_session.page_script_hash = "page"
    return msg


def _element(h: str, fragment: str):
    msg = ForwardMsg()
    msg.delta.new_element.markdown.body = h
    msg.delta.fragment_id = fragment
    msg.hash = h
    msg.metadata.cacheable = True
    return msg


def _reference(h: str):
    msg = ForwardMsg()
    msg.ref_hash = h
    return msg


def _end(status, fragments):
    msg = ForwardMsg()
    msg.script_finished = status
    msg.metadata.run.script_run_id = "run"
    msg.metadata.run.fragment_ids.extend(fragments)
    return msg


class Server:
    """Runs requests one after another (a fragment's runs wait for each other); queues each run's messages, sending
    an element as a reference when the request listed it and the copies say the browser holds it."""

    def __init__(self, copies: BrowserCopies, rng: random.Random):
        self.copies, self.rng = copies, rng
        self.queue: list = []  # queued, not sent
        self.wire: list = []  # sent, not read
        self.requests: list = []
        self.references = 0

    def queue_msg(self, msg):
        self.copies.queued(msg)
        self.queue.append(msg)

    def run(self, listed: frozenset):
        fragment = self.rng.choice(["", "f1", "f2"])
        if self.rng.random() < 0.2:  # a run that interrupts: the queue turns the ends it still holds into early ones
            for msg in self.queue:
                if msg.WhichOneof("type") == "script_finished":
                    msg.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN
        self.queue_msg(_start())
        for h in self.rng.sample(["a", "b", "c", "d", "e", "g"], self.rng.randint(1, 3)):
            if h in listed and self.copies.holds(h):
                self.references += 1
                self.queue_msg(_reference(h))
            else:
                self.queue_msg(_element(h, fragment))
        status = self.rng.choice(ENDS + (ForwardMsg.FINISHED_EARLY_FOR_RERUN,))
        self.queue_msg(_end(status, [fragment] if fragment else []))

    def send_one(self):
        msg = self.queue.pop(0)
        self.copies.sent(msg)
        self.wire.append(msg)


@pytest.mark.parametrize("seed", range(40))
def test_every_reference_reaches_a_browser_that_holds_its_copy(seed):
    rng = random.Random(seed)
    server, browser = Server(BrowserCopies(MAX_AGE), rng), Browser()
    for i in range(1500):
        if i == 1000:
            before = server.references
        step = rng.random()
        if step < 0.08:
            server.requests.append(browser.request())  # a key pressed: the request goes out at once
        elif step < 0.2 and server.requests:
            server.run(server.requests.pop(0))
        elif step < 0.6 and server.queue:
            server.send_one()
        elif server.wire:
            browser.read(server.wire.pop(0))
    assert before > 10 and server.references > before  # references went out, also late in the session


def test_an_unchanged_element_goes_as_a_reference_to_the_copy_the_browser_got_in_the_last_run():
    copies, browser = BrowserCopies(MAX_AGE), Browser()

    def deliver(msg):
        copies.queued(msg)
        copies.sent(msg)
        browser.read(msg)

    browser.request()
    for msg in (_start(), _element("map", "f1"), _end(ForwardMsg.FINISHED_SUCCESSFULLY, [])):
        deliver(msg)
    listed = browser.request()
    assert "map" in listed and copies.holds("map")
    deliver(_start())
    deliver(_reference("map"))  # used again: held through the ends of this run and the next, forgotten at the third
    deliver(_end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"]))
    browser.request()
    for msg in (_start(), _element("focus", "f1"), _end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"])):
        deliver(msg)
    assert copies.holds("map") and "map" in browser.cache
    browser.request()
    for msg in (_start(), _end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"])):
        deliver(msg)
    assert not copies.holds("map") and "map" not in browser.cache


def test_another_fragments_runs_leave_a_copy_alone_as_the_browser_does():
    copies = BrowserCopies(MAX_AGE)
    for msg in (_start(), _element("grid", ""), _element("map", "f1"), _end(ForwardMsg.FINISHED_SUCCESSFULLY, [])):
        copies.queued(msg)
        copies.sent(msg)
    for _ in range(5):
        for msg in (_start(), _element("focus", "f2"), _end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f2"])):
            copies.queued(msg)
            copies.sent(msg)
    assert copies.holds("grid") and copies.holds("map")  # only f2's runs ended
    copies.queued(_end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"]))
    assert copies.holds("grid") and not copies.holds("map")
    copies.queued(_end(ForwardMsg.FINISHED_SUCCESSFULLY, []))
    assert not copies.holds("grid")


def test_a_copy_forgotten_here_is_still_aged_by_the_fragment_that_first_sent_it():
    copies = BrowserCopies(MAX_AGE)
    for msg in (_element("fig", "f1"), _end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"])):
        copies.queued(msg)
        copies.sent(msg)
    queued_use = _reference("fig")  # a use still queued when three runs of f1 end: forgotten here, not in the browser
    for _ in range(3):
        copies.queued(_end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"]))
    assert not copies.holds("fig")
    copies.sent(queued_use)  # a reference to a copy forgotten here does not bring it back
    assert not copies.holds("fig")
    again = _element("fig", "")  # sent whole outside f1: the browser keeps it under f1, where f1's ends age it
    copies.queued(again)
    copies.sent(again)
    for _ in range(3):
        copies.queued(_end(ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY, ["f1"]))
    assert not copies.holds("fig")


def test_the_end_of_a_run_the_queue_turned_into_an_early_one_ages_nothing():
    copies = BrowserCopies(MAX_AGE)
    for msg in (_element("map", ""), _end(ForwardMsg.FINISHED_SUCCESSFULLY, [])):
        copies.queued(msg)
        copies.sent(msg)
    ends = [_end(ForwardMsg.FINISHED_SUCCESSFULLY, []) for _ in range(3)]
    for end in ends:
        copies.queued(end)
    assert not copies.holds("map")  # three ends on their way: a reference queued now would come after them
    for end in ends:
        end.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN  # a new run cleared the queue before they went
        copies.sent(end)
    assert copies.holds("map")  # the browser read no successful end since the map
    copies.queued(_end(ForwardMsg.FINISHED_SUCCESSFULLY, []))
    copies.queued(_end(ForwardMsg.FINISHED_SUCCESSFULLY, []))
    assert not copies.holds("map")


def test_the_server_methods_the_guard_wraps_take_what_it_passes():
    import dataclasses
    import inspect

    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.runtime import Runtime
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    assert list(inspect.signature(AppSession._enqueue_forward_msg).parameters) == ["self", "msg"]
    assert list(inspect.signature(Runtime._send_message).parameters) == ["self", "session_info", "msg"]
    assert "cached_message_hashes" in inspect.signature(ScriptRunContext.reset).parameters
    assert "cached_message_hashes" in {f.name for f in dataclasses.fields(ScriptRunContext)}
