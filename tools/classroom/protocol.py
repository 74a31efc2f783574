"""One Streamlit session over the app's own websocket protocol (BackMsg out, ForwardMsg in), as a browser tab.

The handshake the frontend does, done here with the `websockets` client that streamlit depends on:
an HTTP GET of the page (the load balancer's sticky cookie arrives here), the websocket at
/_stcore/stream with subprotocol "streamlit", then a `rerun_script` BackMsg whose ClientState holds
the query string and the page (its url path on the first run, its script hash afterwards). The server
answers each run with `new_session`, `delta`s (one element per delta path; widgets carry their id,
label and value), `page_info_changed` (the URL the app wrote) and `script_finished`.

A widget change sends the whole widget state, as the frontend's WidgetStateManager does: every widget
of the last run with its current value, and the new value for the one that changed.
"""
from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import numpy as np
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

STREAM = "/_stcore/stream"
STICKY_HEADER = "X-Upstream"  # the replica nginx chose (deploy/nginx.conf adds it)
WIDGET_KINDS = ("selectbox", "radio", "text_area", "text_input", "checkbox", "slider", "number_input",
                "multiselect", "button_group")
BUSY = "server is busy"  # the words of attnviz/ui/busy.py's waiting message
FINISHED_OK = ForwardMsg.FINISHED_SUCCESSFULLY
FINISHED_RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN
FINISHED_FRAGMENT_OK = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY


@dataclass
class Run:
    """What one interaction cost and produced: from the BackMsg sent to the run's script_finished."""
    what: str  # "open heatmap", "head", "text", "slider", ...
    ms: float  # wall time from sending to script_finished (or to the failure)
    status: str  # "ok", "exception", "error", "disconnect", "timeout"
    errors: list[str] = field(default_factory=list)  # exception / error-alert texts, or the failure
    elements: int = 0  # elements the run drew
    busy: bool = False  # the app said "the server is busy" during the run (attnviz/ui/busy.py)
    scripts: int = 0  # script runs the interaction caused (an st.rerun in the app makes it 2)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class SessionError(RuntimeError):
    """The session cannot do what was asked (a widget that is not on the page, a closed socket)."""


class Session:
    """One browser tab's worth of Streamlit session, driven from asyncio.

    `elements` maps each delta path of the last finished run to its Element proto."""

    def __init__(self, base_url: str, timeout: float = 120.0, name: str = ""):
        self.base = base_url.rstrip("/")
        self.timeout = timeout
        self.name = name
        self.cookies: dict[str, str] = {}
        self.upstream = {"http": None, "ws": None}  # X-Upstream of the page GET and of the websocket upgrade
        self.query_string = ""
        self.page_hash = ""
        self.pages: dict[str, str] = {}  # url path -> page script hash (from the `navigation` message)
        self.elements: dict[tuple, object] = {}
        self.values: dict[str, WidgetState] = {}  # what the frontend holds per widget id
        self._run: dict[tuple, object] = {}
        self._finished: asyncio.Future | None = None
        self._ws = None
        self._reader: asyncio.Task | None = None
        self._closed_reason: str | None = None
        self._scripts = 0
        self._busy = False
        self._problems: list[str] = []  # messages of this interaction that make it an error (page not found)
        # The frontend's message cache: big elements by hash, with the run count when last used and the fragment
        # that first sent it. Their hashes go out with every rerun, and the server sends `ref_hash` instead of an
        # element the tab already has.
        self._cache: dict[str, tuple[bytes, int, str]] = {}
        self._runs_seen = 0
        self._saw_start = False  # a new_session since the last rerun request: only then does a run's end count
        self._max_age = 2  # new_session.config.max_cached_message_age
        self.bytes_in = 0

    # ------------------------------------------------------------------ connection
    def _get_page(self, path: str) -> None:
        """The browser's first request: the page's HTML (the sticky cookie and X-Upstream come with it)."""
        req = urllib.request.Request(self.base + path, headers=self._cookie_header())
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            self.upstream["http"] = r.headers.get(STICKY_HEADER)
            for raw in r.headers.get_all("Set-Cookie") or []:
                name, _, value = raw.split(";", 1)[0].partition("=")
                self.cookies[name.strip()] = value.strip()

    def _cookie_header(self) -> dict[str, str]:
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())} if self.cookies else {}

    async def connect(self, path: str = "/") -> None:
        from websockets.asyncio.client import connect

        await asyncio.to_thread(self._get_page, path)
        url = urlsplit(self.base)
        self._ws = await connect(f"ws://{url.netloc}{url.path}{STREAM}", subprotocols=["streamlit"],
                                 additional_headers=self._cookie_header(), max_size=None,
                                 open_timeout=self.timeout, ping_interval=None)
        self.upstream["ws"] = self._ws.response.headers.get(STICKY_HEADER)
        self._reader = asyncio.create_task(self._read())

    async def open(self, link: str) -> Run:
        """Open a shared link ("/heatmap?model=minilm&layer=2"): connect, then the first run."""
        parts = urlsplit(link)
        await self.connect(parts.path or "/")
        self.query_string = parts.query
        return await self._rerun("open " + (parts.path.strip("/") or "home"),
                                 page_name=parts.path.strip("/"), page_hash="", widgets=[])

    async def close(self) -> None:
        if self._reader:
            self._reader.cancel()
        if self._ws is not None:
            await self._ws.close()

    async def drop(self) -> None:
        """Vanish like a closed laptop: the TCP connection goes without a websocket close frame."""
        if self._reader:
            self._reader.cancel()
        if self._ws is not None:
            self._ws.transport.abort()

    # ------------------------------------------------------------------ incoming messages
    async def _read(self) -> None:
        try:
            async for data in self._ws:
                self.bytes_in += len(data)
                msg = ForwardMsg()
                msg.ParseFromString(data)
                self._handle(self._through_cache(msg, data))
            self._closed_reason = "the server closed the websocket"
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a reset connection, a protocol error
            self._closed_reason = f"websocket lost: {type(e).__name__}: {e}"
        if self._finished and not self._finished.done():
            self._finished.set_result(None)

    def _through_cache(self, msg: ForwardMsg, data: bytes) -> ForwardMsg:
        """Keep a cacheable element; replace a `ref_hash` by the element it names (with the ref's delta path)."""
        if msg.WhichOneof("type") == "ref_hash":
            raw, _, fragment = self._cache[msg.ref_hash]
            self._cache[msg.ref_hash] = (raw, self._runs_seen, fragment)
            full = ForwardMsg()
            full.ParseFromString(raw)
            full.metadata.CopyFrom(msg.metadata)
            return full
        if msg.metadata.cacheable and msg.hash:
            raw, _, fragment = self._cache.get(msg.hash, (data, None, msg.delta.fragment_id))
            self._cache[msg.hash] = (raw, self._runs_seen, fragment)  # kept, or used again
        return msg

    def _age_cache(self, fragments=()) -> None:
        """After a successful run it saw start, the frontend forgets elements unused for more than
        max_cached_message_age runs: all of them after a whole run, a fragment's run's own after a fragment's."""
        self._runs_seen += 1
        self._cache = {h: (raw, used, f) for h, (raw, used, f) in self._cache.items()
                       if self._runs_seen - used <= self._max_age or (fragments and f not in fragments)}

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":  # every full script run starts with one
            self._saw_start = True
            self._run = {}
            self._scripts += 1
            self.page_hash = msg.new_session.page_script_hash or self.page_hash
            self._max_age = msg.new_session.config.max_cached_message_age or self._max_age
        elif kind == "navigation":
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "page_not_found":  # a link to a page the app does not have: the default page runs
            self._problems.append("page_not_found: the app has no page at this link")
        elif kind == "page_info_changed":  # the app rewrote the URL (share links)
            self.query_string = msg.page_info_changed.query_string
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            self._run[tuple(msg.metadata.delta_path)] = element
            if element.WhichOneof("type") == "alert" and BUSY in element.alert.body:
                self._busy = True  # shown while waiting, replaced by the view later
        elif kind == "delta" and msg.delta.WhichOneof("type") == "add_block":
            self._run[tuple(msg.metadata.delta_path)] = None  # a container replaces what was at its path
        elif kind == "script_finished":
            if msg.script_finished in (FINISHED_OK, FINISHED_FRAGMENT_OK) and self._saw_start:
                self._age_cache(set(msg.metadata.run.fragment_ids))
            if msg.script_finished != FINISHED_RERUN and self._finished and not self._finished.done():
                self.elements = {p: e for p, e in self._run.items() if e is not None}
                self._remember_values()
                self._finished.set_result(msg.script_finished)

    # ------------------------------------------------------------------ outgoing messages
    def _rerun_msg(self, page_name: str = "", page_hash: str | None = None,
                   widgets: list[WidgetState] | None = None) -> BackMsg:
        """The BackMsg a browser sends to run the script: URL query, page, every widget's state."""
        back = BackMsg()
        state = back.rerun_script
        state.query_string = self.query_string
        state.page_script_hash = self.page_hash if page_hash is None else page_hash
        state.page_name = page_name
        state.widget_states.widgets.extend(self.widget_states() if widgets is None else widgets)
        state.cached_message_hashes.extend(self._cache)
        self._saw_start = False
        return back

    async def _rerun(self, what: str, *, page_name: str = "", page_hash: str | None = None,
                     widgets: list[WidgetState] | None = None) -> Run:
        if self._ws is None or self._closed_reason:
            return Run(what, 0.0, "disconnect", [self._closed_reason or "not connected"])
        back = self._rerun_msg(page_name, page_hash, widgets)
        self._finished = asyncio.get_running_loop().create_future()
        self._scripts, self._busy, self._problems = 0, False, []
        t0 = time.perf_counter()
        try:
            await self._ws.send(back.SerializeToString())
            status = await asyncio.wait_for(self._finished, self.timeout)
        except asyncio.TimeoutError:
            return Run(what, (time.perf_counter() - t0) * 1000, "timeout", [f"no script_finished in {self.timeout:.0f} s"])
        except Exception as e:
            return Run(what, (time.perf_counter() - t0) * 1000, "disconnect", [f"{type(e).__name__}: {e}"])
        ms = (time.perf_counter() - t0) * 1000
        if status is None:
            return Run(what, ms, "disconnect", [self._closed_reason or "websocket closed"])
        errors = self.exceptions()
        alerts = self.alerts(Alert.ERROR) + self._problems
        run = Run(what, ms, "exception" if errors else "error" if alerts else "ok", errors + alerts,
                  len(self.elements), busy=self._busy,
                  scripts=self._scripts)
        if status != FINISHED_OK and run.ok:
            run.status, run.errors = "error", [f"script_finished status {status}"]
        return run

    def _remember_values(self) -> None:
        """The frontend's widget memory after a run: a widget shown for the first time starts at its
        default, a widget the script set (set_value) takes that value, any other keeps what it held;
        widgets no longer on the page are forgotten."""
        shown = {}
        for kind, w in self._widgets():
            if w.set_value or w.id not in self.values:
                state = widget_state(kind, w, None)
                if state is None:
                    continue
                self.values[w.id] = state
            shown[w.id] = self.values[w.id]
        self.values = shown

    async def set_widget(self, key: str, value, what: str | None = None) -> Run:
        """Give the widget with this key (or label) a new value, send every widget's state, wait for the run."""
        kind, target = self._find(key)
        self.values[target.id] = widget_state(kind, target, value)
        return await self._rerun(what or key)

    async def send_widget(self, key: str, value) -> None:
        """Send a widget change and return at once, without waiting for the run (to drop mid-run)."""
        kind, target = self._find(key)
        self.values[target.id] = widget_state(kind, target, value)
        await self._ws.send(self._rerun_msg().SerializeToString())

    async def navigate(self, url_path: str, what: str | None = None) -> Run:
        """Follow a page link of the top navigation (the frontend sends no widget state with it)."""
        if url_path not in self.pages:
            raise SessionError(f"no page {url_path!r} in the navigation ({sorted(self.pages)})")
        self.query_string = ""
        return await self._rerun(what or "open " + url_path, page_hash=self.pages[url_path], widgets=[])

    # ------------------------------------------------------------------ reading the page
    def _widgets(self) -> list[tuple[str, object]]:
        """(kind, widget proto) of the last run, in delta-path order."""
        out = []
        for path in sorted(self.elements):
            kind = self.elements[path].WhichOneof("type")
            if kind in WIDGET_KINDS:
                out.append((kind, getattr(self.elements[path], kind)))
        return out

    def widgets(self) -> list:
        """Widget protos of the last run, in delta-path order."""
        return [w for _, w in self._widgets()]

    def _find(self, key: str) -> tuple[str, object]:
        for kind, w in self._widgets():
            if w.id.endswith("-" + key) or w.label == key:
                return kind, w
        raise SessionError(f"no widget {key!r} on the page (widgets: {[w.label for w in self.widgets()]})")

    def widget(self, key: str):
        """The widget whose user key (the id's suffix) or label is `key`."""
        return self._find(key)[1]

    def widget_states(self) -> list[WidgetState]:
        """The current value of every widget on the page, as the browser would send it."""
        return list(self.values.values())

    def of_kind(self, kind: str) -> list:
        return [getattr(e, kind) for _, e in sorted(self.elements.items()) if e.WhichOneof("type") == kind]

    def exceptions(self) -> list[str]:
        return [f"{x.type}: {x.message}" for x in self.of_kind("exception")]

    def alerts(self, fmt=None) -> list[str]:
        return [a.body for a in self.of_kind("alert") if fmt is None or a.format == fmt]

    def texts(self) -> list[str]:
        """Headings and markdown of the last run, for checks like "Layer 2, head 5"."""
        return [e.body for kind in ("heading", "markdown") for e in self.of_kind(kind)]

    def metric(self, label_start: str) -> str:
        for m in self.of_kind("metric"):
            if m.label.startswith(label_start):
                return m.body
        raise SessionError(f"no metric starting {label_start!r}")

    def _in_place(self) -> list:
        """The figures the app drew in place (its ui.plotly_bytes component): their elements' protos."""
        from attnviz.ui.plotly_bytes import NAME

        return [c for c in self.of_kind("bidi_component") if c.component_name == NAME]

    def charts(self) -> int:
        """How many plotly figures the last run drew (st.plotly_chart's and those drawn in place)."""
        return len(self.of_kind("plotly_chart")) + len(self._in_place())

    def figure(self, key: str) -> dict:
        """The plotly figure (JSON spec) drawn with this key; a figure drawn in place has its large arrays back in
        it as numpy float32 (plotting.figure_from_bytes)."""
        from attnviz.plotting import figure_from_bytes

        for chart in self.of_kind("plotly_chart"):
            if chart.id.endswith("-" + key):
                return json.loads(chart.spec)
        for c in self._in_place():
            if c.id.endswith("-" + key):
                return figure_from_bytes(c.bytes)["figure"]
        raise SessionError(f"no figure {key!r} on the page")


def widget_state(kind: str, w, value) -> WidgetState | None:
    """The WidgetState the frontend sends for widget proto `w`: its current value when `value` is
    None, else `value` (a Python value: an option as shown, a number, a text, a bool)."""
    s = WidgetState(id=w.id)
    if kind in ("selectbox", "radio"):
        if value is None:
            if w.set_value:
                value = w.raw_value
            elif w.HasField("default"):
                value = w.options[w.default]
            else:
                return None
        s.string_value = str(value)
    elif kind in ("text_area", "text_input"):
        s.string_value = str(w.value if w.set_value else w.default) if value is None else str(value)
    elif kind == "checkbox":
        s.bool_value = bool((w.value if w.set_value else w.default) if value is None else value)
    elif kind == "number_input":
        if value is None:
            if not (w.set_value or w.HasField("default")):
                return None
            value = w.value if w.set_value else w.default
        s.double_value = float(value)
    elif kind == "slider" and w.type == Slider.SELECT_SLIDER:  # options are the formatted strings
        if value is None:
            value = list(w.raw_value) if w.set_value else [w.options[int(i)] for i in w.default]
        s.string_array_value.data.extend([str(v) for v in (value if isinstance(value, (list, tuple)) else [value])])
    elif kind == "slider":
        if value is None:
            value = list(w.value) if w.set_value else list(w.default)
        s.double_array_value.data.extend([float(v) for v in (value if isinstance(value, (list, tuple)) else [value])])
    elif kind == "multiselect":
        if value is None:
            value = list(w.raw_values) if w.set_value else [w.options[i] for i in w.default]
        s.string_array_value.data.extend([str(v) for v in value])
    elif kind == "button_group":
        if value is None:
            if not w.set_value:
                return None
            value = list(w.raw_values)
        s.string_array_value.data.extend([str(v) for v in value])
    else:
        return None
    return s


def plotly_array(value) -> np.ndarray:
    """A plotly array from a figure's JSON: a list, or plotly 6+'s {"dtype", "bdata", "shape"} base64 form."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            arr = arr.reshape([int(n) for n in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value, dtype=float)
