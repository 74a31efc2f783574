"""browser_*: what a visitor waits for in Chromium, from a click or key press until the page has settled
(the app's script finished, no stale element, the affected figure's data changed), and the bytes the
server sent over the websocket meanwhile; median of 7 interactions (3 with quick) on a server of its own.

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
ANIMALS = ("dog", "cow", "pig", "hen", "owl", "rat", "bat", "ant", "bee", "elk", "fox", "cat", "ram")


def short_text(i: int) -> str:
    """A 16-token sentence for MiniLM ([CLS] and [SEP] included); each i up to 12 gives another one."""
    return f"The quick brown fox jumps over the lazy {ANIMALS[i % len(ANIMALS)]} while the cat sleeps."


def long_input(i: int) -> str:
    """A 600-word text (MiniLM keeps its first 512 tokens) that differs in its first word for each i."""
    from attnviz.examples import long_text

    return ANIMALS[i % len(ANIMALS)] + " " + long_text()


# [busy, fingerprint of the figure under `sel`]: busy while the script runs, a spinner or skeleton shows,
# an element is stale (drawn by the previous run and not yet replaced), or a plotly chart has not rendered.
# The fingerprint is a position-weighted sum over the numbers and strings of the figure's traces (the text
# of `sel` when it holds no figure).
_STATE_JS = """(sel) => {
  const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const busy = state === 'running'
    || document.querySelector('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"], [data-testid="stSpinner"]') !== null
    || document.querySelector('[data-stale="true"]') !== null
    || document.querySelectorAll('[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]').length === 0
    || charts.some(c => !(c.querySelector('.js-plotly-plot')?._fullLayout));
  const el = document.querySelector(sel + ' .js-plotly-plot');
  if (!el) { const box = document.querySelector(sel); return [busy, box ? box.innerText : null]; }
  if (!el._fullData) return [busy, null];
  let sum = 0, n = 0;
  const add = (v) => {
    if (typeof v === 'number') { if (isFinite(v)) { n += 1; sum += v * (n % 97 + 1); } }
    else if (typeof v === 'string') { for (let j = 0; j < v.length; j += 1 + (v.length >> 12)) { n += 1; sum += v.charCodeAt(j) * (n % 89 + 1); } }
    else if (v && (Array.isArray(v) || ArrayBuffer.isView(v))) { for (const x of v) add(x); }
  };
  for (const t of el._fullData) for (const f of ['x', 'y', 'z', 'source', 'text']) add(t[f]);
  return [busy, n + ':' + sum];
}"""


class Browser:
    """One Chromium page on the app at `url`, counting the bytes the server sends over its websockets."""

    def __init__(self, url: str):
        from playwright.sync_api import sync_playwright

        self.url = url
        self.received = 0
        self._pw = sync_playwright().start()
        try:
            self._browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            self.page = self._browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        except Exception:
            self._pw.stop()
            raise
        self.page.set_default_timeout(120_000)
        self.page.on("websocket", self._watch)

    def _watch(self, ws) -> None:
        ws.on("framereceived", self._count)

    def _count(self, payload) -> None:
        self.received += len(payload)

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._pw.stop()

    def state(self, sel: str):
        return self.page.evaluate(_STATE_JS, sel)

    def open(self, path: str, sel: str, timeout: float = 300.0) -> None:
        """Load `path` and wait until the figure under `sel` is drawn and the page is idle."""
        self.page.goto(self.url + path)
        self.page.wait_for_selector('[data-testid="stApp"]', state="attached")
        self.settle(sel, None, time.perf_counter(), timeout)

    def settle(self, sel: str, before, t0: float, timeout: float = 120.0, confirm: float = 0.4) -> float:
        """Seconds from t0 until the page was idle with the figure under `sel` other than `before`,
        that state then held for `confirm` seconds."""
        deadline = t0 + timeout
        since = None
        while time.perf_counter() < deadline:
            busy, fp = self.state(sel)
            now = time.perf_counter()
            if busy or fp is None or fp == before:
                since = None
            elif since is None:
                since, seen = now, fp
            elif fp != seen:
                since, seen = now, fp
            elif now - since >= confirm:
                return since - t0
            time.sleep(0.02)
        raise TimeoutError(f"the figure {sel} did not settle with new data within {timeout:.0f} s")

    def measure(self, sel: str, prepare, act) -> tuple[float, int]:
        """(ms, bytes) of one interaction: prepare() untimed (open a list, fill a box), then act() timed
        until the figure under `sel` shows new data and the page is idle."""
        before = self.state(sel)[1]
        prepare()
        sent = self.received
        t0 = time.perf_counter()
        act()
        seconds = self.settle(sel, before, t0)
        return 1000.0 * seconds, self.received - sent

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
    """Median time (ms) and median bytes of (ms, bytes) runs."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def _runs(do, n: int, warm: int = 2):
    """do(i) for i in range(warm + n); the (ms, bytes) of the last n (the first `warm` fill the caches)."""
    out = [do(i) for i in range(warm + n)]
    return out[warm:]


def _heatmap(b: Browser, text: str, size: int, n: int, out: dict, heads_step: int) -> None:
    from urllib.parse import quote

    head_fig, focus_fig = ".st-key-hm_heatmap", ".st-key-hm_focus_out"
    b.open(f"/heatmap?model_choice=minilm&lens=weights&layer=0&head=0&text={quote(text)}", head_fig)
    n_tokens = b.page.locator(head_fig + " .js-plotly-plot").evaluate("el => el._fullData[0].z.length")
    if abs(n_tokens - size) > 2:
        raise RuntimeError(f"the heatmap shows {n_tokens} tokens, not {size}")
    ms, nbytes = _median(_runs(lambda i: b.pick("hm_head", str((i * heads_step) % 11 + 1), head_fig), n))
    out[f"browser_head_ms_{size}"] = ms
    out[f"browser_head_bytes_{size}"] = nbytes
    text_of = short_text if size <= 16 else long_input
    out[f"browser_text_ms_{size}"] = _median(_runs(lambda i: b.type_text(text_of(i + 1), head_fig), n))[0]
    if size > 16:
        return
    out["browser_focus_ms_16"] = _median(_runs(
        lambda i: b.pick("hm_focus_label", re.compile(f"^{i % 13 + 2}: "), focus_fig), n))[0]
    out["browser_thumb_ms_16"] = _median(_runs(lambda i: b.click_head("hm_grid", 1 + i % 5, (i * 5) % 12, head_fig), n))[0]
    lenses = ("value-weighted", "attention weights")
    out["browser_lens_ms_16"] = _median(_runs(lambda i: b.radio("lens", lenses[i % 2], head_fig), n))[0]


def collect(url: str, quick: bool) -> dict[str, float]:
    """Every browser figure, measured against the app served at `url`."""
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
        _heatmap(b, long_input(0), 512, n, out, 5)
    finally:
        b.close()
    for size in (16, 512):
        times = [v for k, v in out.items() if k.endswith(f"_ms_{size}")]
        out[f"browser_worst_ratio_{size}"] = max(times) / out["browser_ref_ms"]
    return out


def figures(quick: bool = False) -> dict[str, float]:
    from tools.classroom.servers import Streamlit

    load = os.getloadavg()[0]
    server = Streamlit().wait()
    try:
        out = collect(server.url, quick)
    finally:
        server.stop()
    return {**out, "browser_load": load}
