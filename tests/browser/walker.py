"""A browser walk of the whole app: every page through the top navigation, every radio, select box,
toggle, checkbox, segmented control, pill, tab, multiselect and button on it, away and back, with
every failure (exception box, page error, console error, request off this machine, server
traceback, lost sidebar text or model) collected per page, control and option."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from tests.browser.helpers import link_box
from tests.conftest import ROOT, wait_for_app

LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
EXCEPTION = '[data-testid="stException"]'
SIDEBAR = '[data-testid="stSidebar"]'


# ----------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class WalkMode:
    """How far the walk goes; `reduced` runs in `make test`, `full` in `make walk`."""
    name: str
    max_options: int  # options tried per radio / select box / segmented control / tab group (the current one counts)
    multiselect_adds: int  # options added to each multiselect
    flip_back: bool  # toggles and checkboxes: switched and switched back (else switched once)
    depth: int  # controls that appear after choosing an option are walked down to this depth
    page_budget: float  # seconds per page; what is left when it runs out is noted, not walked
    job_wait: float  # seconds a button that starts a long job may run before its Cancel is pressed
    settle: float  # seconds of quiet that count as "the app has settled"
    interaction_timeout: float  # seconds an ordinary interaction may take before it is a failure
    away_and_back: bool  # after walking a page: to the next page and back through the navigation


REDUCED = WalkMode("reduced", max_options=2, multiselect_adds=1, flip_back=False, depth=1,
                   page_budget=7.0, job_wait=8.0, settle=0.6, interaction_timeout=90.0, away_and_back=False)
FULL = WalkMode("full", max_options=6, multiselect_adds=2, flip_back=True, depth=2,
                page_budget=240.0, job_wait=60.0, settle=0.8, interaction_timeout=180.0, away_and_back=True)


def mode_from_env() -> WalkMode:
    """ATTNVIZ_WALK=full selects the full walk; anything else the reduced one."""
    return FULL if os.environ.get("ATTNVIZ_WALK", "").strip().lower() == "full" else REDUCED


# Buttons the walk does not press (by the start of their label: the switch's ends with the last load time), with
# the reason.
SKIP_BUTTONS = {
    "Use this step on the other pages": "selects the trained toy model in the sidebar by design",
    "swap_horiz Switch to SmolLM2-135M":
        "selects SmolLM2 in the sidebar by design (tests/browser/test_logit_lens_browser.py presses it)",
}
CANCEL_RE = re.compile(r"cancel", re.I)
LONG_JOB_RE = re.compile(r"^\s*▶")  # "▶ Train now", "▶ Fine-tune MiniLM", "▶ Load the series", "▶ Measure"

# Console errors that are not crashes. A failed load of an address off this machine is already
# recorded as a request failure, so its console echo is not counted twice.
BENIGN_CONSOLE = [
    re.compile(r"^Failed to load resource: net::ERR_(NAME_NOT_RESOLVED|INTERNET_DISCONNECTED|CONNECTION_REFUSED|ADDRESS_UNREACHABLE)"),
]


STREAMLIT_PROBE = re.compile(r"^https?://[^/]+/[^_/][^/]*/_stcore/(host-config|health)$")


def app_pages() -> list[tuple[str, str, str]]:
    """(section, file, title) of every page in the registry, in navigation order."""
    from attnviz.ui.registry import PAGES

    return [(spec.section, spec.file, spec.title) for spec in PAGES]


# ----------------------------------------------------------------------------- records

@dataclass
class Failure:
    page: str
    control: str
    option: str
    kind: str  # exception | pageerror | console | request | server | sidebar | timeout | navigation
    message: str
    count: int = 1

    def line(self) -> str:
        where = " / ".join(x for x in (self.page, self.control, self.option) if x)
        more = f" (x{self.count})" if self.count > 1 else ""
        return f"[{self.kind}] {where}: {self.message}{more}"


@dataclass
class PageStats:
    page: str
    seconds: float = 0.0
    interactions: int = 0
    controls: list = field(default_factory=list)
    steps: list = field(default_factory=list)  # "control = option (seconds)" in the order done
    unwalked: list = field(default_factory=list)


# ----------------------------------------------------------------------------- the DOM side

# Enumerates the visible controls of the main area. Shared by discovery and by `mark`, so an
# (kind, label, nth) address found by one is found again by the other after a rerun.
_ENUM_JS = r"""
function walkEnumerate() {
  const root = document.querySelector('[data-testid="stMain"]');
  if (!root) return [];
  const vis = e => !!e && e.checkVisibility({checkOpacity: false, checkVisibilityCSS: true}) && e.getClientRects().length > 0;
  const txt = e => (e ? (e.innerText || e.textContent || '') : '').replace(/\s+/g, ' ').trim();
  const labelOf = (el) => {
    const l = el.querySelector('[data-testid="stWidgetLabel"]');
    return txt(l) || el.querySelector('[aria-label]')?.getAttribute('aria-label') || '';
  };
  const out = [];
  const counts = {};
  const add = (c) => {
    const k = c.kind + '\u0000' + c.label;
    c.nth = counts[k] = (k in counts) ? counts[k] + 1 : 0;
    out.push(c);
  };
  for (const el of root.querySelectorAll('[data-testid="stTabs"]')) {
    if (!vis(el)) continue;
    const tabs = [...el.querySelectorAll('[role="tab"]')].filter(t => t.closest('[data-testid="stTabs"]') === el);
    if (!tabs.length) continue;
    add({kind: 'tabs', label: 'tabs ' + tabs.map(txt).slice(0, 3).join(' | '), el,
         optionEls: tabs, options: tabs.map(txt), current: tabs.findIndex(t => t.getAttribute('aria-selected') === 'true'),
         disabled: false});
  }
  for (const el of root.querySelectorAll('[data-testid="stRadio"]')) {
    if (!vis(el)) continue;
    const opts = [...el.querySelectorAll('[data-testid="stRadioOption"]')];
    add({kind: 'radio', label: el.querySelector('[role="radiogroup"]')?.getAttribute('aria-label') || labelOf(el), el,
         optionEls: opts, options: opts.map(txt),
         current: opts.findIndex(o => o.querySelector('input')?.checked || o.dataset.selected === 'true'),
         disabled: opts.length > 0 && opts.every(o => o.querySelector('input')?.disabled)});
  }
  for (const el of root.querySelectorAll('[data-testid="stSelectbox"]')) {
    if (!vis(el)) continue;
    const input = el.querySelector('[role="combobox"]');
    if (!input) continue;
    add({kind: 'selectbox', label: input.getAttribute('aria-label') || labelOf(el), el, optionEls: [input],
         options: null, current: input.value, disabled: input.disabled});
  }
  for (const el of root.querySelectorAll('[data-testid="stMultiSelect"]')) {
    if (!vis(el)) continue;
    const input = el.querySelector('[role="combobox"]');
    if (!input) continue;
    add({kind: 'multiselect', label: input.getAttribute('aria-label') || labelOf(el), el, optionEls: [input],
         options: null, current: null, disabled: input.disabled});
  }
  for (const el of root.querySelectorAll('[data-testid="stCheckbox"]')) {
    if (!vis(el)) continue;
    const input = el.querySelector('input');
    if (!input) continue;
    add({kind: input.getAttribute('role') === 'switch' ? 'toggle' : 'checkbox',
         label: input.getAttribute('aria-label') || labelOf(el), el, optionEls: [el.querySelector('label') || el],
         options: ['on', 'off'], current: input.checked ? 'on' : 'off', disabled: input.disabled});
  }
  for (const el of root.querySelectorAll('[data-testid="stButtonGroup"]')) {
    if (!vis(el)) continue;
    const group = el.querySelector('[role="radiogroup"], [role="group"]');
    const btns = [...el.querySelectorAll('button')].filter(b => !b.closest('[data-testid="stTooltipIcon"]'));
    if (!btns.length) continue;
    const seg = (btns[0].dataset.variant || '').includes('segmented');
    const multi = btns[0].getAttribute('role') === 'checkbox';
    add({kind: seg ? 'segmented' : (multi ? 'pills-multi' : 'pills'), label: group?.getAttribute('aria-label') || txt(el.querySelector('[data-testid="stWidgetLabel"]')), el,
         optionEls: btns, options: btns.map(txt),
         current: btns.findIndex(b => b.getAttribute('aria-checked') === 'true' || b.dataset.selected === 'true'),
         disabled: btns.every(b => b.disabled)});
  }
  for (const el of root.querySelectorAll('[data-testid="stButton"] button, [data-testid="stFormSubmitButton"] button')) {
    if (!vis(el)) continue;
    add({kind: 'button', label: txt(el), el, optionEls: [el], options: ['press'], current: null,
         disabled: el.disabled || el.getAttribute('aria-disabled') === 'true'});
  }
  return out;
}
"""

DISCOVER_JS = "() => {" + _ENUM_JS + """
  return walkEnumerate().map(c => ({kind: c.kind, label: c.label, nth: c.nth, options: c.options,
                                     current: c.current, disabled: !!c.disabled}));
}"""

MARK_JS = "([kind, label, nth, opt]) => {" + _ENUM_JS + """
  document.querySelectorAll('[data-walk-target]').forEach(e => e.removeAttribute('data-walk-target'));
  const c = walkEnumerate().find(c => c.kind === kind && c.label === label && c.nth === nth);
  if (!c) return null;
  const target = c.optionEls[Math.min(opt, c.optionEls.length - 1)];
  if (!target) return null;
  target.setAttribute('data-walk-target', '1');
  target.scrollIntoView({block: 'center'});
  return {current: c.current, options: c.options, disabled: !!c.disabled};
}"""

OPEN_EXPANDERS_JS = """() => {
  let n = 0;
  for (const d of document.querySelectorAll('[data-testid="stMain"] [data-testid="stExpander"] details:not([open])')) {
    const s = d.querySelector('summary');
    if (s && s.checkVisibility()) { s.click(); n++; }
  }
  return n;
}"""

EXCEPTIONS_JS = """() => [...document.querySelectorAll('[data-testid="stException"]')]
  .map(e => (e.innerText || '').trim())"""

LISTBOX_OPTIONS_JS = """() => {
  const boxes = [...document.querySelectorAll('[role="listbox"]')].filter(b => b.checkVisibility());
  const box = boxes[boxes.length - 1];
  return box ? [...box.querySelectorAll('[role="option"]')].map(o => (o.innerText || '').replace(/\\s+/g, ' ').trim()) : null;
}"""


@dataclass
class Control:
    kind: str
    label: str
    nth: int
    options: list | None
    current: object
    disabled: bool

    @property
    def key(self) -> tuple:
        return (self.kind, self.label, self.nth)

    @property
    def name(self) -> str:
        return f"{self.kind} '{self.label}'" + (f" #{self.nth + 1}" if self.nth else "")


def _first_line(text: str, n: int = 400) -> str:
    """The message of an exception box: its first meaningful lines, short."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith(("traceback", "copy", "ask google", "ask chatgpt"))]
    return " | ".join(lines[:3])[:n]


def _sample(n: int, k: int) -> list[int]:
    """Up to k option indexes out of n: the first k (the brief's 'first options of each control')."""
    return list(range(min(n, k)))


# ----------------------------------------------------------------------------- the walker

class Walker:
    """Drives one Playwright page through the app and collects failures instead of stopping."""

    def __init__(self, page, base_url: str, mode: WalkMode = REDUCED, server_log: Path | None = None,
                 screenshots: Path | None = None):
        self.page = page
        self.screenshots = screenshots  # a folder for one screenshot of each page after its page load
        self.base = base_url.rstrip("/")
        self.mode = mode
        self.pages = app_pages()
        self.failures: list[Failure] = []
        self.notes: list[str] = []
        self.stats: dict[str, PageStats] = {}
        self.where = ("(start)", "", "")
        self.text: str | None = None
        self.model: str | None = None
        self.server_log = Path(server_log) if server_log else None
        self._log_offset = self.server_log.stat().st_size if self.server_log and self.server_log.exists() else 0
        self._seen_exceptions: set[str] = set()
        self._hrefs: dict[str, str] = {}
        self._pending: list[tuple] = []  # controls of the page still to walk (a choice that hides them is undone)
        page.on("pageerror", lambda e: self.fail("pageerror", str(e).splitlines()[0][:400] if str(e) else repr(e)))
        page.on("console", self._on_console)
        page.on("request", self._on_request)
        page.on("dialog", lambda d: d.dismiss())

    # ------------------------------------------------------------------ recording
    def fail(self, kind: str, message: str, page: str | None = None, control: str | None = None,
             option: str | None = None) -> None:
        p, c, o = self.where
        f = Failure(page or p, c if control is None else control, o if option is None else option, kind, message)
        for old in self.failures:  # the same failure again on the same page counts once
            if (old.page, old.kind, old.message) == (f.page, f.kind, f.message):
                old.count += 1
                return
        self.failures.append(f)

    def note(self, text: str) -> None:
        self.notes.append(f"{self.where[0]}: {text}")

    def _on_console(self, msg) -> None:
        if msg.type != "error":
            return
        text = msg.text or ""
        url = (msg.location or {}).get("url", "")
        if STREAMLIT_PROBE.search(url) and "404" in text:
            return  # Streamlit's page loaded at /<page> first asks /<page>/_stcore/… for its base path, then /_stcore/…
        if any(r.search(text) for r in BENIGN_CONSOLE):
            url = (msg.location or {}).get("url", "")
            if not url or urlparse(url).hostname not in LOCAL_HOSTS:
                return
        self.fail("console", text.splitlines()[0][:400] if text else "(empty console error)")

    def _on_request(self, request) -> None:
        url = request.url
        scheme = urlparse(url).scheme
        if scheme in ("data", "blob", "about", "chrome", "chrome-extension", "devtools"):
            return
        host = urlparse(url).hostname or ""
        if host not in LOCAL_HOSTS:
            self.fail("request", f"request to an address off this machine: {url.split('?')[0][:200]}")

    def _server_errors(self) -> None:
        """Tracebacks the server printed since the last look."""
        if not self.server_log or not self.server_log.exists():
            return
        with open(self.server_log, "r", errors="replace") as fh:
            fh.seek(self._log_offset)
            new = fh.read()
            self._log_offset = fh.tell()
        for block in re.split(r"(?=Traceback \(most recent call last\))", new):
            if not block.startswith("Traceback"):
                continue
            lines = [ln for ln in block.splitlines() if ln.strip()]
            last = next((ln for ln in reversed(lines) if not ln.startswith((" ", "\t"))), lines[-1])
            self.fail("server", "server traceback: " + last.strip()[:400])

    # ------------------------------------------------------------------ waiting and checking
    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the app to finish its run; a timeout is recorded and returns False."""
        time.sleep(0.25)
        try:
            wait_for_app(self.page, timeout=timeout or self.mode.interaction_timeout, settle=self.mode.settle)
            return True
        except TimeoutError as e:
            self.fail("timeout", f"the app had not settled {timeout or self.mode.interaction_timeout:.0f} s after this ({e})")
            return False

    def check(self) -> None:
        """Exception boxes on screen now, and the server's tracebacks."""
        for text in self.page.evaluate(EXCEPTIONS_JS):
            msg = _first_line(text)
            key = f"{self.where[0]}\u0000{msg}"
            if key in self._seen_exceptions:
                continue
            self._seen_exceptions.add(key)
            self.fail("exception", msg)
        self._server_errors()

    def path(self) -> str:
        return urlparse(self.page.url).path.rstrip("/") or "/"

    def params(self) -> dict:
        return {k: v[0] for k, v in parse_qs(urlparse(self.page.url).query).items()}

    # ------------------------------------------------------------------ the sidebar
    def sidebar_text(self) -> str | None:
        box = self.page.locator(f'{SIDEBAR} [data-testid="stTextArea"] textarea')
        return box.first.input_value() if box.count() else None

    def sidebar_model(self) -> str | None:
        box = self.page.locator(f'{SIDEBAR} [role="combobox"][aria-label="Model"]')
        return box.first.input_value() if box.count() else None

    def set_sidebar_text(self, text: str) -> None:
        box = self.page.locator(f'{SIDEBAR} [data-testid="stTextArea"] textarea').first
        box.fill(text)
        box.press("Control+Enter")
        self.settle()
        self.text = text
        self.model = self.sidebar_model()

    def check_sidebar(self, when: str = "") -> bool:
        """The sidebar still holds the walk's text and model, the URL carries them, and the
        'Link to this view' box is there. Records a failure per problem; restores the text after one."""
        if self.text is None:
            return True
        ok = True
        text, model, params = self.sidebar_text(), self.sidebar_model(), self.params()
        if text != self.text:
            ok = False
            self.fail("sidebar", f"the sidebar text is {text!r:.80}, not the text typed ({self.text!r:.80})")
        if model != self.model:
            ok = False
            self.fail("sidebar", f"the sidebar model is {model!r}, not {self.model!r}")
        if params.get("text") != self.text:
            ok = False
            self.fail("sidebar", f"the URL does not carry the text (text={params.get('text')!r:.60}; URL keys {sorted(params)})")
        if "model_choice" not in params:
            ok = False
            self.fail("sidebar", f"the URL does not carry the model (URL keys {sorted(params)})")
        box = link_box(self.page)
        deadline = time.time() + 15  # the box is drawn when the run ends: a slow page's comes last
        while box.count() == 0 and time.time() < deadline:
            time.sleep(0.5)
        if box.count() == 0:
            ok = False
            self.fail("sidebar", f"the sidebar has no 'Link to this view' box")
        if not ok and text is not None:  # carry on from a known state
            if model != self.model and self.model:
                try:
                    self._choose_in_sidebar("Model", self.model)
                except Exception as e:  # noqa: BLE001
                    self.note(f"could not restore the sidebar model: {e!s:.120}")
            if self.sidebar_text() != self.text:
                t = self.text
                self.set_sidebar_text(t)
        return ok

    def _choose_in_sidebar(self, label: str, option: str) -> None:
        box = self.page.locator(f'{SIDEBAR} [role="combobox"][aria-label="{label}"]').first
        box.click()
        self.page.get_by_role("option", name=option, exact=True).first.click()
        self.settle()

    # ------------------------------------------------------------------ navigation
    def title_section(self, title: str) -> str:
        return next(s for s, _, t in self.pages if t == title)

    def goto_page(self, title: str, retry: bool = True) -> bool:
        """Open `title` by clicking its section in the top navigation, then its link."""
        section = self.title_section(title)
        pg = self.page
        try:
            pg.keyboard.press("Escape")
            pg.locator('[data-testid="stTopNavSection"]', has_text=section).first.click()
            link = pg.locator('[data-testid="stTopNavDropdownLink"]').filter(
                has=pg.locator(f'span[label="{title}"]')).first
            link.wait_for(state="visible", timeout=10_000)
            href = link.get_attribute("href") or ""
            link.click()
        except Exception as e:  # noqa: BLE001
            self.fail("navigation", f"could not open '{title}' from the '{section}' menu: {e!s:.200}")
            return False
        self._hrefs[title] = urlparse(href).path.rstrip("/") or "/"
        self.settle()
        want = self._hrefs[title]
        deadline = time.time() + 10
        while self.path() != want and time.time() < deadline:
            time.sleep(0.2)
        if self.path() != want:
            self.fail("navigation", f"clicking '{title}' in the '{section}' menu left the browser on {self.path()}"
                                    f" (expected {want})")
            if retry:  # carry on from the page the walk needs
                return self.goto_page(title, retry=False)
            return False
        return True

    # ------------------------------------------------------------------ controls
    def discover(self) -> list[Control]:
        for _ in range(3):  # expanders hide controls until opened (opening one does not rerun)
            if not self.page.evaluate(OPEN_EXPANDERS_JS):
                break
            time.sleep(0.3)
        return [Control(**c) for c in self.page.evaluate(DISCOVER_JS)]

    def _mark(self, c: Control, opt: int = 0):
        return self.page.evaluate(MARK_JS, [c.kind, c.label, c.nth, opt])

    def _target(self):
        return self.page.locator("[data-walk-target]").first

    def _click(self, c: Control, opt: int = 0) -> None:
        """Click option `opt` of control `c` (found again after any rerun)."""
        if self._mark(c, opt) is None:
            raise RuntimeError("the control is no longer on the page")
        self._target().click(timeout=10_000)

    def _listbox_options(self, c: Control) -> list[str] | None:
        """Open a select box / multiselect and read its (rendered) options; leaves it open."""
        if self._mark(c) is None:
            return None
        self._target().click(timeout=10_000)
        deadline = time.time() + 5
        while time.time() < deadline:
            opts = self.page.evaluate(LISTBOX_OPTIONS_JS)
            if opts is not None:
                return opts
            time.sleep(0.1)
        return []

    def _pick(self, c: Control, index: int) -> None:
        if self._listbox_options(c) is None:
            raise RuntimeError("the select box is no longer on the page")
        self._pick_listbox(index)

    def _others_gone(self) -> bool:
        """True when a control of the page not walked yet has disappeared (the last choice hid it)."""
        if not self._pending:
            return False
        now = {c.key for c in self.discover()}
        return any(k not in now for k in self._pending)

    def _pick_listbox(self, index: int) -> None:
        boxes = self.page.locator('[role="listbox"]:visible')
        boxes.last.locator('[role="option"]').nth(index).click(timeout=10_000)

    def interact(self, title: str, c: Control, option: str, action) -> None:
        """Do one interaction, wait for the app, then check it; come back if it left the page."""
        self.where = (title, c.name, option)
        st = self.stats[title]
        st.interactions += 1
        t0 = time.time()
        try:
            action()
        except Exception as e:  # noqa: BLE001  a control that vanished is noted; exceptions on screen are checked below
            self.note(f"{c.name} / {option}: could not interact ({str(e).splitlines()[0][:160]})")
            self.page.keyboard.press("Escape")
        long_job = c.kind == "button" and bool(LONG_JOB_RE.search(c.label))
        if long_job:
            self._wait_job(c)
        else:
            self.settle()
        self.check()
        self.check_sidebar(f"after {c.name} = {option}")
        st.steps.append(f"{c.name} = {option} ({time.time() - t0:.1f} s)")
        if self.path() != self._hrefs.get(title):
            self.note(f"{c.name} / {option} opened {self.path()}")
            self.where = (title, c.name, option + " -> back")
            self.goto_page(title)
            self.check()

    def _job_running(self) -> bool:
        main = self.page.locator('[data-testid="stMain"]')
        return (main.locator('[data-testid="stProgress"]:visible').count() > 0
                or main.locator('[data-testid="stButton"] button:visible:enabled', has_text=CANCEL_RE).count() > 0)

    def _wait_job(self, c: Control) -> None:
        """A button that starts a long job: wait a bounded time for it to end, then press its Cancel."""
        deadline = time.time() + self.mode.job_wait
        while time.time() < deadline:
            try:
                wait_for_app(self.page, timeout=max(1.0, deadline - time.time()), settle=self.mode.settle)
            except TimeoutError:
                break
            if not self._job_running():
                return
            self.check()  # a job that fails shows it while running
            time.sleep(1.0)
        cancel = self.page.locator('[data-testid="stMain"] [data-testid="stButton"] button:visible:enabled',
                                   has_text=CANCEL_RE)
        if cancel.count():
            self.note(f"{c.name}: still running after {self.mode.job_wait:.0f} s; pressed Cancel")
            try:
                cancel.first.click(timeout=10_000)
            except Exception as e:  # noqa: BLE001
                self.note(f"{c.name}: Cancel could not be pressed ({e!s:.100})")
            end = time.time() + 120
            while time.time() < end and self._job_running():
                time.sleep(1.0)
            if self._job_running():
                self.fail("timeout", f"the job started by {c.name} did not stop within 120 s of Cancel")
            self.settle()
        elif self._job_running():
            self.fail("timeout", f"{c.name} kept the app running for {self.mode.job_wait:.0f} s and offers no Cancel")

    def walk_control(self, title: str, c: Control, depth: int, seen: set, deadline: float) -> None:
        m = self.mode
        if c.disabled:
            return
        if c.kind == "button":
            skip = next((why for start, why in SKIP_BUTTONS.items() if c.label.startswith(start)), None)
            if skip or CANCEL_RE.search(c.label):
                self.note(f"{c.name} not pressed ({skip or 'a Cancel button'})")
                return
            self.interact(title, c, "press", lambda: self._click(c))
            self._walk_new(title, depth, seen, deadline)
            return
        if c.kind in ("toggle", "checkbox"):
            flips = ["switched " + ("off" if c.current == "on" else "on")]
            if m.flip_back:
                flips.append("switched back " + str(c.current))
            for i, label in enumerate(flips):
                self.interact(title, c, label, lambda: self._click(c))
                if i == 0:
                    self._walk_new(title, depth, seen, deadline)
                if time.time() > deadline:
                    return
            return
        if c.kind in ("radio", "segmented", "pills", "tabs"):
            for i in _sample(len(c.options or []), m.max_options):
                if i == c.current:
                    continue
                if time.time() > deadline:
                    return

                self.interact(title, c, c.options[i], lambda i=i: self._click(c, i))
                self._walk_new(title, depth, seen, deadline)
            if 0 <= c.current < len(c.options) and self._others_gone():
                self.interact(title, c, f"back to {c.options[c.current]}", lambda: self._click(c, c.current))
            return
        if c.kind == "pills-multi":
            for i in _sample(len(c.options or []), m.max_options):
                if time.time() > deadline:
                    return

                self.interact(title, c, f"toggle {c.options[i]}", lambda i=i: self._click(c, i))
            return
        if c.kind == "selectbox":
            try:
                opts = self._listbox_options(c) or []
            finally:
                self.page.keyboard.press("Escape")
            for i in _sample(len(opts), m.max_options):
                if opts[i] == c.current:
                    continue
                if time.time() > deadline:
                    return

                self.interact(title, c, opts[i], lambda i=i: self._pick(c, i))
                self._walk_new(title, depth, seen, deadline)
            if c.current in opts and self._others_gone():
                self.interact(title, c, f"back to {c.current}", lambda: self._pick(c, opts.index(c.current)))
            return
        if c.kind == "multiselect":
            for n in range(m.multiselect_adds):
                if time.time() > deadline:
                    return
                picked = {}

                def add():
                    opts = self._listbox_options(c)
                    if not opts:
                        self.page.keyboard.press("Escape")
                        raise RuntimeError("no option left to add")
                    picked["o"] = opts[0]
                    self._pick_listbox(0)
                    self.page.keyboard.press("Escape")
                self.interact(title, c, f"add option {n + 1}", add)
            return

    def _walk_new(self, title: str, depth: int, seen: set, deadline: float) -> None:
        """Controls that appeared after the last choice: walk them one level deeper."""
        if depth >= self.mode.depth or time.time() > deadline:
            return
        new = [c for c in self.discover() if c.key not in seen]
        for c in new:
            seen.add(c.key)
        for c in new:
            if time.time() > deadline:
                self.stats[title].unwalked.append(c.name)
                continue
            self.stats[title].controls.append(c.name)
            self.walk_control(title, c, depth + 1, seen, deadline)

    def walk_page(self, title: str) -> None:
        st = self.stats.setdefault(title, PageStats(title))
        t0 = time.time()
        deadline = t0 + self.mode.page_budget
        self.where = (title, "navigation", "open")
        if not self.goto_page(title):
            return
        self.check()
        self.check_sidebar(f"after opening {title}")
        controls = self.discover()
        seen = {c.key for c in controls}
        for n, c in enumerate(controls):
            if time.time() > deadline:
                st.unwalked.append(c.name)
                continue
            st.controls.append(c.name)
            self._pending = [x.key for x in controls[n + 1:]]
            self.walk_control(title, c, 0, seen, deadline)
        self._pending = []
        if st.unwalked:
            self.note(f"page budget of {self.mode.page_budget:.0f} s used up; not walked: {', '.join(st.unwalked)}")
        self.where = (title, "(end of walk)", "")
        self.check()
        self.check_sidebar(f"after walking {title}")
        # away and back through the navigation (the reduced walk leaves for the next page anyway, and comes back
        # to this one by a page load of its link)
        if self.mode.away_and_back:
            away = self.away_from(title)
            self.where = (title, "navigation", f"to {away} and back")
            if self.goto_page(away):
                self.check()
                self.check_sidebar(f"after leaving {title} for {away}")
            self.where = (title, "navigation", f"back from {away}")
            if not self.goto_page(title):
                return
            self.check()
            self.check_sidebar(f"after coming back to {title} from {away}")
        self.reload_page(title)
        st.seconds = round(time.time() - t0, 1)
        print(f"walk [{self.mode.name}] {title}: {st.interactions} interactions, {st.seconds:.0f} s, "
              f"{len(self.failures)} failure(s) so far", file=sys.stderr, flush=True)

    def reload_page(self, title: str) -> None:
        """A full page load of the page's link (what a bookmark or a shared link does): the page draws its
        title, no exception, and the sidebar text and model come back from the URL."""
        self.where = (title, "navigation", "page load of its link")
        want = self.path()
        try:
            self.page.reload()
            self.page.locator('h1, [data-testid="stException"]').first.wait_for(timeout=self.mode.interaction_timeout * 1000)
        except Exception as e:  # noqa: BLE001
            self.fail("navigation", f"a page load of {want} drew no title: {e!s:.200}")
            return
        self.settle()
        self.check()
        if self.path() != want:
            self.fail("navigation", f"a page load of {want} left the browser on {self.path()}")
        h1 = self.page.locator("h1")
        if not h1.count() or not h1.first.inner_text().strip():
            self.fail("navigation", f"a page load of {want} drew no page title")
        self.check_sidebar(f"after a page load of {title}")
        if self.screenshots:
            self.page.screenshot(path=str(self.screenshots / f"page-{want.strip('/') or 'home'}.png"))

    def away_from(self, title: str) -> str:
        titles = [t for _, _, t in self.pages]
        return titles[(titles.index(title) + 1) % len(titles)]

    def run(self, text: str, titles: list[str] | None = None) -> None:
        """Open the app, type `text` into the sidebar, walk every page."""
        self.where = ("(start)", "open the app", "")
        self.page.goto(self.base + "/")
        self.page.wait_for_selector("text=Model and text", timeout=120_000)
        self.settle()
        self.set_sidebar_text(text)
        if self.params().get("text") != text:
            self.fail("sidebar", f"typing a text did not put it in the URL ({self.page.url[:160]})")
        for t in titles or [t for _, _, t in self.pages]:
            self.walk_page(t)

    # ------------------------------------------------------------------ report
    def report(self, path: Path, seconds: float) -> dict:
        data = {
            "mode": asdict(self.mode),
            "seconds": round(seconds, 1),
            "text": self.text,
            "model": self.model,
            "pages": [asdict(s) for s in self.stats.values()],
            "failures": [asdict(f) for f in self.failures],
            "notes": self.notes,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False))
        return data

    def summary(self) -> str:
        by_page: dict[str, list[Failure]] = {}
        for f in self.failures:
            by_page.setdefault(f.page, []).append(f)
        out = [f"{len(self.failures)} failure(s) on {len(by_page)} page(s):"]
        for p, fs in by_page.items():
            out.append(f"== {p}")
            out += ["  " + f.line() for f in fs]
        return "\n".join(out)
