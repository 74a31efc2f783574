"""browser_*: what a visitor waits for in Chromium, from a click or key press (the moment the page receives it)
until the page has settled (the app's script finished, no stale element, the affected figure's data changed), and
the bytes the server sent over the websocket meanwhile; median of 7 interactions (3 with quick) on a server of its
own.

browser_ref_ms is a trivial rerun (the sidebar's Sentence pair switch on the Home page, until the second
sentence's box appears or goes): what Streamlit itself costs here;
browser_worst_ratio_<n> divides the slowest interaction at n tokens by it. browser_load is the 1-minute
load average when the run started."""
from __future__ import annotations

import os
import re
import statistics
import time

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
BUNDLED_SOURCE = "Bundled long text (~5,000 words)"  # the Long inputs page's choice of text, as its link names it
ANIMALS = ("dog", "cow", "pig", "hen", "owl", "rat", "bat", "ant", "bee", "elk", "fox", "cat", "ram")


def short_text(i: int) -> str:
    """A 16-token sentence for MiniLM ([CLS] and [SEP] included); each i up to 12 gives another one."""
    return f"The quick brown fox jumps over the lazy {ANIMALS[i % len(ANIMALS)]} while the cat sleeps."


def long_input(i: int) -> str:
    """A 600-word text (MiniLM keeps its first 512 tokens) that differs in its first word for each i."""
    from attnviz.examples import long_text

    return ANIMALS[i % len(ANIMALS)] + " " + long_text()


# [busy, fingerprint of the figure under `sel`]: busy while the script runs, a spinner or skeleton shows,
# an element is stale (drawn by the previous run and not yet replaced), or a plotly chart has not rendered (one
# drawn in place, ui.plotly_bytes, is marked data-drawing until it has).
# The fingerprint is a position-weighted sum over the numbers and strings of the figure's traces (the text
# of `sel` when it holds no figure). A long array is read at an even stride (about 128 rows of about 256 values:
# every value of a 16-token map, 1 in 8 of a 512-token one) so that polling every 20 ms does not keep the page's
# main thread busy itself: walking all 262,144 weights of a 512-token map took about 125 ms of every interaction.
# It is taken once per drawing of the figure (plotly.js's _fullData of that drawing), then kept on the element: read
# on every check, the sampled 512-token map still took about 29 ms of the page's main thread per interaction.
_STATE_JS = """(sel) => {
  const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const busy = state === 'running'
    || document.querySelector('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"], [data-testid="stSpinner"]') !== null
    || document.querySelector('[data-stale="true"]') !== null
    || document.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]').length === 0
    || charts.some(c => !(c.querySelector('.js-plotly-plot')?._fullLayout))
    || document.querySelector('.attnviz-plotly[data-drawing], .attnviz-plotly:not(.js-plotly-plot):not(.attnviz-spare > *)') !== null;
  const now = performance.now(), input = window.__attnvizInput ?? null;
  const el = document.querySelector(sel + ' .js-plotly-plot');
  if (!el) { const box = document.querySelector(sel); return [busy, box ? box.innerText : null, now, input]; }
  if (!el._fullData) return [busy, null, now, input];
  // plotly.js makes a new _fullData on every draw: the same one has the fingerprint already taken
  if (el.__attnvizSeen === el._fullData) return [busy, el.__attnvizPrint, now, input];
  let sum = 0, n = 0;
  const add = (v) => {
    if (typeof v === 'number') { if (isFinite(v)) { n += 1; sum += v * (n % 97 + 1); } }
    else if (typeof v === 'string') { for (let j = 0; j < v.length; j += 1 + (v.length >> 12)) { n += 1; sum += v.charCodeAt(j) * (n % 89 + 1); } }
    else if (v && (Array.isArray(v) || ArrayBuffer.isView(v))) {
      const nested = v.length > 0 && typeof v[0] === 'object';
      const step = Math.max(1, Math.floor(v.length / (nested ? 128 : 256)));
      n += v.length;
      for (let j = 0; j < v.length; j += step) add(v[j]);
    }
  };
  for (const t of el._fullData) for (const f of ['x', 'y', 'z', 'source', 'text']) add(t[f]);
  el.__attnvizSeen = el._fullData;
  el.__attnvizPrint = n + ':' + sum;
  return [busy, el.__attnvizPrint, now, input];
}"""

# Waits in the page until it is idle with the figure under `sel` other than `before`, and neither that state nor
# anything visible in the document (_INPUT_JS) has changed for `confirm` ms (checked every 20 ms, as _STATE_JS
# reads it); answers [the page's time when it reached that state, the armed input's time or null, the page's time
# now], or null after `timeout` ms. The moment it reached that state is its last visible change in the document
# after the input (a figure drawn, an element replaced, the script's state flipped, a data grid's canvas drawn), not
# the check that first saw it: a chart drawn in a single task (plotly.js, ui.plotly_bytes) is never seen half-drawn
# by a check, so without the document's changes a chart drawn after the watched one would not be waited for.
_SETTLE_JS = """async ([sel, before, confirm, timeout]) => {
  const state = """ + _STATE_JS + """;
  const start = performance.now();
  let since = null, seen = null;
  while (performance.now() - start < timeout) {
    const [busy, fp, now, input] = state(sel);
    const changed = window.__attnvizChanged ?? null;
    if (busy || fp === null || fp === before) since = null;
    else if (since === null || fp !== seen) { since = now; seen = fp; }
    else if (now - since >= confirm && (changed === null || now - changed >= confirm)) {
      return [changed !== null && input !== null && changed >= input ? changed : since, input, performance.now()];
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return null;
}"""

# In every document of the page: the time (performance.now()) of the first pointer press or key press (a modifier
# key alone aside) after the bench arms it, so that an interaction is timed from the moment the page received it;
# and the time of the document's latest visible change since it was armed: an element, an attribute or a text
# added, removed or altered, or a drawing on a 2D canvas in the document. What is inside a <canvas> element is its
# fallback content, which the browser never draws: a data grid (st.dataframe, glide-data-grid) draws its cells on the
# canvas and keeps a table of them there for screen readers, rewritten 200 ms after the grid on a debounce timer;
# the canvas's own drawing is the change the user sees.
_INPUT_JS = """(() => {
  const note = (e) => {
    if (window.__attnvizArmed && window.__attnvizInput == null && !['Control', 'Shift', 'Alt', 'Meta'].includes(e.key))
      window.__attnvizInput = performance.now();
  };
  window.addEventListener('pointerdown', note, true);
  window.addEventListener('keydown', note, true);
  // nor are a deck's next slide's charts, drawn out of sight (.attnviz-spare, ui.plotly_bytes) while a slide shows,
  // or plotly.js's own element for measuring text, which lies outside the window and is transparent, or a node no
  // longer in the document
  const spare = (n) => n.nodeType === 1 && n.classList.contains('attnviz-spare');
  const shown = (r) => {
    const el = r.target.nodeType === 1 ? r.target : r.target.parentNode;
    return !!el && el.isConnected && !(el.closest && el.closest('canvas, .attnviz-spare, #js-plotly-tester'))
      && r.attributeName !== 'data-spare-drawing'
      && !(r.type === 'childList' && [...r.addedNodes, ...r.removedNodes].every(spare));
  };
  const changes = new MutationObserver((records) => {
    if (window.__attnvizArmed && records.some(shown)) window.__attnvizChanged = performance.now();
  });
  const watch = () => changes.observe(document.documentElement,
                                      {subtree: true, childList: true, attributes: true, characterData: true});
  if (document.documentElement) watch(); else document.addEventListener('DOMContentLoaded', watch);
  const ctx = window.CanvasRenderingContext2D && CanvasRenderingContext2D.prototype;
  for (const name of ['fillRect', 'strokeRect', 'clearRect', 'fillText', 'strokeText', 'fill', 'stroke',
                      'drawImage', 'putImageData']) {
    const draw = ctx && ctx[name];
    if (typeof draw !== 'function') continue;
    ctx[name] = function (...args) {
      if (window.__attnvizArmed && this.canvas && this.canvas.isConnected) window.__attnvizChanged = performance.now();
      return draw.apply(this, args);
    };
  }
})();"""
_ARM_JS = "() => { window.__attnvizArmed = true; window.__attnvizInput = null; window.__attnvizChanged = null; }"

# The figure an interaction is timed on is rendered as if the reader were looking at it, wherever the page is
# scrolled: the app's charts and texts are laid out and painted only near the window (content-visibility: auto),
# and a watched figure below the bench's window would otherwise be timed without its drawing on screen.
_WATCH_JS = """(sel) => {
  let style = document.getElementById('attnviz-bench-watch');
  if (!style) {
    style = document.createElement('style');
    style.id = 'attnviz-bench-watch';
    document.head.appendChild(style);
  }
  style.textContent = sel + ' .attnviz-plotly, ' + sel + ' .attnviz-html { content-visibility: visible !important; }';
}"""


def wire_sent(port: int) -> dict[str, int] | None:
    """Bytes sent so far on each of this machine's open TCP connections from `port` (the kernel's count of what went
    on the wire, after the websocket's compression), by peer address; None without `ss`."""
    import shutil
    import subprocess

    if shutil.which("ss") is None:
        return None
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=10).stdout
    # each connection: a line with its addresses, then a line with its counters
    sent, peer = {}, None
    for line in out.splitlines():
        found = re.search(r"bytes_sent:(\d+)", line)
        if found and peer is not None:
            sent[peer] = int(found.group(1))
        elif line.strip() and not found:
            peer = line.split()[-1]
    return sent


def wire_delta(before: dict[str, int] | None, after: dict[str, int] | None) -> int | None:
    """Bytes sent between two wire_sent readings: growth of the connections open at both, all of a new one's
    (a connection closed in between loses what it sent after the first reading)."""
    if before is None or after is None:
        return None
    return sum(n - before.get(peer, 0) for peer, n in after.items())


class Browser:
    """One Chromium page on the app at `url`, counting the bytes the server sends over its websockets."""

    def __init__(self, url: str):
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            self._watch_page(self._browser.new_context(viewport={"width": 1400, "height": 1000}).new_page(), url)
        except Exception:
            self._pw.stop()
            raise

    @classmethod
    def on(cls, page, url: str) -> "Browser":
        """The bench's controls and timing on a page that something else opened and closes (a test's)."""
        self = cls.__new__(cls)
        self._pw = self._browser = None
        self._watch_page(page, url)
        return self

    def _watch_page(self, page, url: str) -> None:
        self.url = url
        self.port = int(url.rsplit(":", 1)[1].split("/")[0])
        self.received = 0
        self.page = page
        self.page.set_default_timeout(120_000)
        self.page.add_init_script(_INPUT_JS)
        self.page.on("websocket", self._watch)

    def _watch(self, ws) -> None:
        ws.on("framereceived", self._count)

    def _count(self, payload) -> None:
        self.received += len(payload)

    def close(self) -> None:
        if self._browser is None:  # a page opened elsewhere (Browser.on)
            return
        try:
            self._browser.close()
        finally:
            self._pw.stop()

    def state(self, sel: str):
        """[busy, fingerprint of the figure under `sel`, the page's clock (ms), the armed input's time or None]."""
        return self.page.evaluate(_STATE_JS, sel)

    def open(self, path: str, sel: str, timeout: float = 300.0) -> None:
        """Load `path` and wait until the figure under `sel` is drawn and the page is idle."""
        self.page.goto(self.url + path)
        self.page.wait_for_selector('[data-testid="stApp"]', state="attached")
        self.settle(sel, None, time.perf_counter(), timeout)

    def settle(self, sel: str, before, t0: float, timeout: float = 120.0, confirm: float = 0.4) -> float:
        """Seconds until the page was idle with the figure under `sel` other than `before` and its document had
        changed for the last time, that state then held for `confirm` seconds: from the page's input event when one
        was armed and seen (measure), else from t0, to the document's last change (_SETTLE_JS).

        The page watches itself (_SETTLE_JS, every 20 ms) and answers once: asking it from here every 20 ms took
        about a fifth of a core (Chromium, Playwright's driver and this process), which the app's server and
        the page then lacked on a two-core machine. The input's time and the settled state's are both read on the
        page's clock, so that what Playwright does before it presses (finding the element, waiting for it to
        hold still, scrolling it into view: 25-175 ms here) is not counted; a page that loaded a new document in
        between (no input recorded in it) falls back to this process's clock from t0."""
        from playwright.sync_api import Error as PlaywrightError

        deadline = t0 + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            try:
                got = self.page.evaluate(_SETTLE_JS, [sel, before, 1000 * confirm, 1000 * left])
            except PlaywrightError as e:  # a new document replaced the one being watched: watch the new one
                if "context was destroyed" in str(e) or "navigat" in str(e):
                    continue
                raise
            if got is None:
                break
            since_page, page_input, page_now = got
            now = time.perf_counter()
            if page_input is not None and since_page >= page_input:
                return (since_page - page_input) / 1000.0
            return (now - (page_now - since_page) / 1000.0) - t0
        raise TimeoutError(f"the figure {sel} did not settle with new data within {timeout:.0f} s")

    def measure(self, sel: str, prepare, act) -> tuple[float, int, int | None]:
        """(ms, message bytes, wire bytes) of one interaction: prepare() untimed (open a list, fill a box), then
        act() timed from its press until the figure under `sel` shows new data and the page is idle. The message
        bytes are the websocket messages as the browser unpacks them; the wire bytes what the server's connections
        carried (compressed), None where the machine has no `ss`."""
        before = self.state(sel)[1]
        self.page.evaluate(_WATCH_JS, sel)
        prepare()
        self.page.evaluate(_ARM_JS)
        sent, wire = self.received, wire_sent(self.port)
        t0 = time.perf_counter()
        act()
        seconds = self.settle(sel, before, t0)
        return 1000.0 * seconds, self.received - sent, wire_delta(wire, wire_sent(self.port))

    # -- the controls ---------------------------------------------------------------------------

    def pick(self, key: str, option, sel: str):
        """Choose `option` (its text, or a pattern) in the selectbox `.st-key-<key>`."""
        box = self.page.locator(f".st-key-{key} [role=combobox]").first
        opt = self.page.get_by_role("option", name=option, exact=isinstance(option, str)).first

        def prepare():
            box.scroll_into_view_if_needed()
            box.click()
            opt.wait_for()
        return self.measure(sel, prepare, opt.click)

    def radio(self, key: str, label: str, sel: str):
        """Click the option labelled `label` of the radio `.st-key-<key>`."""
        option = self.page.locator(f".st-key-{key} label", has_text=label).first
        return self.measure(sel, option.scroll_into_view_if_needed, option.click)

    def arrow(self, key: str, direction: str, sel: str):
        """Press ArrowRight or ArrowLeft on the slider `.st-key-<key>` (its range input is hidden: focus it)."""
        box = self.page.locator(f".st-key-{key}").first

        def prepare():
            box.scroll_into_view_if_needed()
            box.locator("input[type=range]").first.focus()
        return self.measure(sel, prepare, lambda: self.page.keyboard.press(direction))

    def type_text(self, text: str, sel: str):
        """Fill the sidebar's text box with `text` and commit it with Ctrl+Enter."""
        box = self.page.locator('[data-testid="stSidebar"] [data-testid="stTextArea"] textarea').first
        return self.measure(sel, lambda: box.fill(text), lambda: box.press("Control+Enter"))

    def number(self, key: str, value: int, sel: str):
        """Type `value` into the number box `.st-key-<key>` and commit it with Enter."""
        box = self.page.locator(f".st-key-{key} input").first

        def prepare():
            box.scroll_into_view_if_needed()
            box.fill(str(value))
        return self.measure(sel, prepare, lambda: box.press("Enter"))

    def key(self, name: str, sel: str):
        """Press the key `name` with no box focused (a deck's slide step), once the page has drawn the next slide's
        charts out of sight, as it does while the lecturer talks (data-spare-drawing: ui.plotly_bytes)."""
        def prepare():
            self.page.wait_for_function("() => !document.documentElement.dataset.spareDrawing", timeout=30_000)
            self.page.evaluate("() => document.activeElement && document.activeElement.blur()")
        return self.measure(sel, prepare, lambda: self.page.keyboard.press(name))

    def click_head(self, grid_key: str, layer: int, head: int, sel: str):
        """Click the thumbnail of (layer, head) in the head grid `.st-key-<grid_key>`."""
        xy = self.page.evaluate("""([k, l, h]) => {
            const el = document.querySelector('.st-key-' + k + ' .js-plotly-plot');
            el.scrollIntoView({block: 'center'});
            const t = el._fullData.find(t => t.customdata && t.customdata.length);
            const i = [...t.customdata].findIndex(c => c[0] === l && c[1] === h);
            const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis, r = el.getBoundingClientRect();
            return [r.left + xa._offset + xa.l2p(t.x[i]), r.top + ya._offset + ya.l2p(t.y[i])];
        }""", [grid_key, layer, head])

        def prepare():
            self.page.mouse.move(*xy)
            time.sleep(0.2)
        return self.measure(sel, prepare, lambda: self.page.mouse.click(*xy))


def _median(runs) -> tuple[float, float]:
    """Median time (ms) and median message bytes of (ms, message bytes, wire bytes) runs."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _wire_median(runs) -> float | None:
    """Median wire bytes of (ms, message bytes, wire bytes) runs; None when they were not counted."""
    wire = [r[2] for r in runs if r[2] is not None]
    return statistics.median(wire) if len(wire) == len(runs) else None


def _runs(do, n: int, warm: int = 2):
    """do(i) for i in range(warm + n); the measurements of the last n (the first `warm` fill the caches)."""
    out = [do(i) for i in range(warm + n)]
    return out[warm:]


def _heatmap(b: Browser, text: str, size: int, n: int, out: dict, heads_step: int) -> None:
    from urllib.parse import quote

    head_fig, focus_fig = ".st-key-hm_heatmap", ".st-key-hm_focus_out"
    b.open(f"/heatmap?model_choice=minilm&lens=weights&layer=0&head=0&text={quote(text)}", head_fig)
    n_tokens = b.page.locator(head_fig + " .js-plotly-plot").evaluate("el => el._fullData[0].z.length")
    if abs(n_tokens - size) > 2:
        raise RuntimeError(f"the heatmap shows {n_tokens} tokens, not {size}")
    runs = _runs(lambda i: b.pick("hm_head", str((i * heads_step) % 11 + 1), head_fig), n)
    ms, nbytes = _median(runs)
    out[f"browser_head_ms_{size}"] = ms
    wire = _wire_median(runs)
    if wire is not None:
        out[f"browser_head_bytes_{size}"] = wire
    out[f"browser_head_message_bytes_{size}"] = nbytes
    text_of = short_text if size <= 16 else long_input
    out[f"browser_text_ms_{size}"] = _median(_runs(lambda i: b.type_text(text_of(i + 1), head_fig), n))[0]
    if size > 16:
        return
    out["browser_focus_ms_16"] = _median(_runs(
        lambda i: b.pick("hm_focus_label", re.compile(f"^{i % 13 + 2}: "), focus_fig), n))[0]
    out["browser_thumb_ms_16"] = _median(_runs(lambda i: b.click_head("hm_grid", 1 + i % 5, (i * 5) % 12, head_fig), n))[0]
    lenses = ("value-weighted", "attention weights")
    out["browser_lens_ms_16"] = _median(_runs(lambda i: b.radio("lens", lenses[i % 2], head_fig), n))[0]


def _contributions(b: Browser, n: int, out: dict) -> None:
    from urllib.parse import quote

    sel = ".st-key-ct_sources"
    b.open(f"/contributions?model_choice=minilm&lens=weights&layer=0&head=0&text={quote(short_text(0))}", sel)
    out["browser_contrib_ms_16"] = _median(_runs(
        lambda i: b.pick("ct_query_label", re.compile(f"^{i % 13 + 2}: "), sel), n))[0]


def _atlas(b: Browser, n: int, out: dict) -> None:
    """The Patterns tab of the atlas page over the stored run: another pattern, until its rank map is new."""
    sel = ".st-key-at_pattern_map"
    b.page.goto(b.url + "/atlas?model_choice=minilm")
    tab = b.page.get_by_role("tab", name="Patterns")
    tab.wait_for(timeout=300_000)
    tab.click()
    b.settle(sel, None, time.perf_counter(), 300)
    kinds = ("attend to the first", "attend to special", "attend to another", "attend to the token at")
    out["browser_atlas_ms"] = _median(_runs(lambda i: b.pick("at_kind", re.compile("^" + kinds[i % 4]), sel), n))[0]


DECK_BAR = '[data-testid="deck-bar"]'


def _present(b: Browser) -> None:
    """The shipped deck presented from its first slide, settled."""
    b.page.goto(b.url + "/deck")
    b.page.get_by_role("button", name="Open this deck").click()
    b.page.get_by_role("button", name="Start presenting").click()
    b.page.get_by_role("link", name=re.compile("Go to slide 1")).click()
    b.settle(DECK_BAR, None, time.perf_counter(), 300)


def _deck(b: Browser, n: int, out: dict) -> None:
    """The shipped deck presented: the right and left arrow keys, until the slide counter shows the new slide
    and its page has settled. browser_deck_first_ms: steps from slide 1 to 2, 3 and 4 in pages that have not shown
    them yet (each a new tab of the same browser presenting the deck, as a lecturer opens it; one such tab first,
    untimed, warms the server and what the browser keeps of the figures (their margins and widths), as a rehearsal
    in that browser does; each step is pressed once the page has drawn the next slide's charts out of sight, which
    it does while the lecturer talks: Browser.key);
    browser_deck_ms: steps back and forth over slides 1-4 once the page has shown them
    (it keeps their charts)."""
    first = []
    for visit in range(1 + -(-n // 3)):
        other = Browser.on(b.page.context.new_page(), b.url)
        try:
            _present(other)
            steps = [other.key("ArrowRight", DECK_BAR)[0] for _ in range(3)]
        finally:
            other.page.close()
        if visit:
            first += steps
    out["browser_deck_first_ms"] = statistics.median(first)
    _present(b)
    keys = ("ArrowRight",) * 3 + ("ArrowLeft",) * 3  # the first three (untimed) show slides 2-4
    out["browser_deck_ms"] = _median(_runs(lambda i: b.key(keys[i % 6], DECK_BAR), n, warm=3))[0]


def _long(b: Browser, n: int, out: dict) -> None:
    """SmolLM2 records the bundled text's first 4,096 tokens once (not timed); then the zoom's query start
    moves, until the zoom shows the new window."""
    from urllib.parse import urlencode

    sel = ".st-key-lg_zoom"
    b.page.goto(b.url + "/long?" + urlencode({"model_choice": "smollm2", "lg_source": BUNDLED_SOURCE, "lg_len": 4096}))
    record = b.page.get_by_role("button", name="▶ Record")
    record.wait_for(timeout=600_000)
    b.page.get_by_text("the first 4,096 are recorded").first.wait_for(timeout=300_000)
    record.click()
    b.page.get_by_text("Recorded 4,096 tokens").first.wait_for(timeout=900_000)
    b.settle(sel, None, time.perf_counter(), 300)
    out["browser_long_zoom_ms_4096"] = _median(_runs(lambda i: b.number("lg_zq", 1000 + 64 * i, sel), n))[0]


def collect(url: str, quick: bool, atlas: bool = False) -> dict[str, float]:
    """Every browser figure, measured against the app served at `url` (atlas: a corpus run is stored where that
    server looks for them)."""
    from attnviz.models.registry import installed

    n = 3 if quick else 7
    out: dict[str, float] = {}
    b = Browser(url)
    try:
        sidebar = '[data-testid="stSidebar"]'
        b.open("/?model_choice=minilm", sidebar)
        pair = b.page.locator(".st-key-use_pair label").first
        out["browser_ref_ms"] = _median(_runs(lambda i: b.measure(sidebar, lambda: None, pair.click), n))[0]
        _heatmap(b, short_text(0), 16, n, out, 1)
        b.open("/entropy?model_choice=minilm&lens=weights&layer=0&head=0", ".st-key-en_bars")
        out["browser_entropy_ms_16"] = _median(_runs(lambda i: b.pick("en_head", str(i % 11 + 1), ".st-key-en_bars"), n))[0]
        b.open("/rollout?model_choice=minilm&lens=weights&ro_layer=0", ".st-key-ro_rolled")
        keys = ("ArrowRight",) * 5 + ("ArrowLeft",) * 5
        out["browser_rollout_ms_16"] = _median(_runs(lambda i: b.arrow("ro_layer", keys[i % 10], ".st-key-ro_rolled"), n))[0]
        b.open("/lab_temperature?temp_T=1.0", ".st-key-temp_fig_weights")
        keys = ("ArrowLeft",) * 4 + ("ArrowRight",) * 4
        out["browser_lab_ms"] = _median(_runs(lambda i: b.arrow("temp_T", keys[i % 8], ".st-key-temp_fig_weights"), n))[0]
        _contributions(b, n, out)
        _deck(b, n, out)
        if atlas:
            _atlas(b, n, out)
        _heatmap(b, long_input(0), 512, n, out, 5)
        if installed("smollm2"):
            _long(b, n, out)
    finally:
        b.close()
    # short inputs: every _ms_16 figure, the lab, the deck and the atlas; long ones: _ms_512 and the 4,096-token zoom
    short = [v for k, v in out.items() if k.endswith("_ms_16") or k in ("browser_lab_ms", "browser_deck_ms",
                                                                        "browser_deck_first_ms", "browser_atlas_ms")]
    long = [v for k, v in out.items() if k.endswith("_ms_512") or k.endswith("_ms_4096")]
    out["browser_worst_ratio_16"] = max(short) / out["browser_ref_ms"]
    out["browser_worst_ratio_512"] = max(long) / out["browser_ref_ms"]
    return out


def figures(quick: bool = False) -> dict[str, float]:
    from tools.classroom.servers import Streamlit

    import tempfile

    load = os.getloadavg()[0]
    before = os.environ.get("ATTNVIZ_ATLAS_DIR")
    with tempfile.TemporaryDirectory(prefix="attnviz-bench-atlas-") as root:
        os.environ["ATTNVIZ_ATLAS_DIR"] = root  # the server (started below) and the corpus run share it
        try:
            atlas = _store_corpus_run(root)
            server = Streamlit().wait()
            try:
                out = collect(server.url, quick, atlas)
            finally:
                server.stop()
        finally:
            if before is None:
                os.environ.pop("ATTNVIZ_ATLAS_DIR", None)
            else:
                os.environ["ATTNVIZ_ATLAS_DIR"] = before
    return {**out, "browser_load": load}


def _store_corpus_run(root: str) -> bool:
    """MiniLM over the default corpus, stored under `root` as the Atlas page's run panel stores it (not timed);
    whether it finished."""
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-m", "attnviz.atlas", "--model", "minilm", "--corpus", "default",
                           "--out", str(Path(root) / "minilm-default")], capture_output=True, timeout=1800)
    return done.returncode == 0
