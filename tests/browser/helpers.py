"""Browser-test helpers for Streamlit widgets and plotly figures in Chromium."""
from __future__ import annotations

import time

from playwright.sync_api import TimeoutError as PlaywrightTimeout, expect

from attnviz.ui.copy_link import BOX
from tests.conftest import wait_for_app

FIND_PLOT = """(sel) => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.findIndex(el => el._fullLayout && (
      (sel.ytitle && ((el._fullLayout.yaxis || {}).title || {}).text?.startsWith(sel.ytitle)) ||
      (sel.title && ((el._fullLayout.title || {}).text || '').includes(sel.title))));  // themes wrap titles in <b>
}"""


def plot_index(page, ytitle: str | None = None, title: str | None = None) -> int:
    return page.evaluate(FIND_PLOT, {"ytitle": ytitle, "title": title})


# Scrolls a chart (the index-th plotly chart, or the one in the box of a key) to the middle of the window, as a
# reader looks at it, and answers whether it shows its latest figure: a chart drawn in place that was far from the
# window when a run sent it a new figure draws it only when it comes near (ui.plotly_bytes).
_LOOK_AT = """(which) => {
  const el = typeof which === 'number' ? document.querySelectorAll('.js-plotly-plot')[which]
                                       : document.querySelector('.st-key-' + which + ' .js-plotly-plot');
  if (!el) return false;
  el.scrollIntoView({block: 'center'});
  return !el.matches('[data-deferred], [data-drawing]');
}"""


def look_at(page, which: int | str, timeout: float = 30.0) -> None:
    """Scroll the chart `which` (an index among the page's plotly charts, or a widget key) into the window and wait
    until it shows its latest figure."""
    page.wait_for_function(_LOOK_AT, arg=which, timeout=timeout * 1000)


def hover_label(page, key: str, q: int, k: int) -> str:
    """The hover label of the map in the box of `key` at (query q, key k), the map scrolled to the window's middle."""
    chart = page.locator(f".st-key-{key} .js-plotly-plot").first
    xy = chart.evaluate("""(el, [q, k]) => { el.scrollIntoView({block: 'center'});
        const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis, r = el.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(k), r.top + ya._offset + ya.l2p(q)]; }""", [q, k])
    page.mouse.move(*xy)
    label = page.locator(f".st-key-{key} .hoverlayer .hovertext").first
    label.wait_for(timeout=10_000)
    return label.text_content()


def plot_z(page, index: int):
    """The first trace's z of the index-th plotly chart, as the reader sees it when looking at the chart."""
    look_at(page, index)
    return page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].z", index)


def choose(page, label: str, option: str, exact: bool = True, just_before=None):
    """Pick `option` in the Streamlit selectbox labelled `label` (a react-aria combobox). just_before: called once
    the list is open and shows the option, right before it is clicked."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.scroll_into_view_if_needed()
    box.click()
    listbox = page.get_by_role("listbox").first
    if just_before is not None:
        page.get_by_role("option", name=option, exact=exact).first.wait_for()
        just_before()
    for _ in range(3):
        opt = page.get_by_role("option", name=option, exact=exact).first
        opt.click()
        if _taken(listbox, opt):
            break
        # a long list still being drawn on a busy machine can miss the click (the option under the pointer
        # replaced as it landed): the list stays open with nothing chosen; click the option again
    time.sleep(0.3)
    wait_for_app(page)


def _taken(listbox, opt, timeout: float = 3.0) -> bool:
    """Whether a clicked option was taken within `timeout` s: a selectbox's list closed, or a multiselect's option
    marked selected or left out of its list."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if (not listbox.is_visible() or opt.count() == 0
                    or opt.get_attribute("aria-selected", timeout=500) == "true"):
                return True
        except PlaywrightTimeout:
            return True  # the option went while it was read
        time.sleep(0.1)
    return False


def click_marker(page, index: int, x: float, y: float):
    """Click the plotly figure `index` at data coordinates (x, y)."""
    pos = page.evaluate("""([i, x, y]) => {
        const el = document.querySelectorAll('.js-plotly-plot')[i];
        el.scrollIntoView({block: 'center'});
        const xa = el._fullLayout.xaxis, ya = el._fullLayout.yaxis, r = el.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(x), r.top + ya._offset + ya.l2p(y)];
    }""", [index, x, y])
    page.mouse.move(pos[0], pos[1])
    time.sleep(0.2)
    page.mouse.click(pos[0], pos[1])
    time.sleep(0.5)
    wait_for_app(page)


def wait_plot(page, ytitle: str | None = None, title: str | None = None, timeout: float = 60.0) -> int:
    """Index of the first plotly figure whose y-axis title starts with `ytitle` or whose title
    contains `title`, waiting for it to render."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        i = plot_index(page, ytitle=ytitle, title=title)
        if i >= 0:
            return i
        time.sleep(0.3)
    raise AssertionError(f"no plot with ytitle={ytitle!r} title={title!r} after {timeout:.0f} s")


def box_value(page, label: str) -> str:
    """The option a Streamlit selectbox in the main area shows."""
    return page.locator('[data-testid="stMain"]').get_by_role("combobox", name=label, exact=True).first.input_value()


def open_path(page, app_server, path: str):
    """Open a page of the app by URL (a deep link works even as a fresh server's first request)
    and wait until the shared sidebar is there and the page has drawn."""
    page.goto(app_server.url + path)
    page.wait_for_selector("text=Model and text")
    wait_for_app(page)


def set_number(page, label: str, value: int, timeout: float = 90.0) -> None:
    """Type a value into the number box labelled `label`, press Enter and wait for the app."""
    box = page.get_by_label(label, exact=True).first
    box.scroll_into_view_if_needed()
    box.fill(str(value))
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page, timeout)


def start_job(page, name: str, tries: int = 3):
    """Press a job's start button until the job has taken it (the button turns disabled while the job runs
    and once its result is on the page). A press that lands while the page is being redrawn can be lost."""
    button = page.get_by_role("button", name=name)
    for _ in range(tries):
        button.click()
        try:
            expect(button).to_be_disabled(timeout=15_000)
            return
        except AssertionError:  # still enabled: press again
            wait_for_app(page)
    raise AssertionError(f"{name} did not start after {tries} presses")


# ---- added for the walk (tests/browser/test_walk*.py) -------------------------------------------

def nav_to(page, title: str, section: str | None = None):
    """Open a page the way a visitor does: its section in the top navigation, then its link."""
    from tests.browser.walker import app_pages

    section = section or next(s for s, _, t in app_pages() if t == title)
    page.keyboard.press("Escape")
    page.locator('[data-testid="stTopNavSection"]', has_text=section).first.click()
    link = page.locator('[data-testid="stTopNavDropdownLink"]').filter(has=page.locator(f'span[label="{title}"]')).first
    link.click()
    time.sleep(0.5)
    wait_for_app(page)


def set_sidebar_text(page, text: str):
    """Type `text` into the sidebar's text area and commit it (Ctrl+Enter)."""
    box = page.locator('[data-testid="stSidebar"] [data-testid="stTextArea"] textarea').first
    box.fill(text)
    box.press("Control+Enter")
    time.sleep(0.5)
    wait_for_app(page)


def sidebar_text(page) -> str | None:
    box = page.locator('[data-testid="stSidebar"] [data-testid="stTextArea"] textarea')
    return box.first.input_value() if box.count() else None


def sidebar_model(page) -> str | None:
    box = page.locator('[data-testid="stSidebar"] [role="combobox"][aria-label="Model"]')
    return box.first.input_value() if box.count() else None


def url_params(page) -> dict:
    """The page URL's query parameters (first value of each)."""
    from urllib.parse import parse_qs, urlparse

    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def exception_texts(page) -> list[str]:
    """The text of every Streamlit exception box on the page."""
    return page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stException\"]')].map(e => e.innerText)")


# the sidebar's "Link to this view": its box (attnviz.ui.copy_link), the link in it and its Copy button
LINK_CODE = f".{BOX} code"
LINK_BUTTON = f".{BOX} button"
# every link the sidebar's link boxes hold, joined by spaces
SIDEBAR_LINKS = f"""() => [...document.querySelectorAll('[data-testid="stSidebar"] {LINK_CODE}')]
    .map(e => e.textContent).join(' ')"""


def link_box(page):
    """The sidebar's "Link to this view" expander (a Playwright locator; count() is 0 when it is missing)."""
    return page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]', has_text="Link to this view")


def link_box_text(page) -> str | None:
    """The URL in the sidebar's 'Link to this view' box (None when the box is missing)."""
    box = link_box(page)
    if box.count() == 0:
        return None
    code = box.first.locator(LINK_CODE)
    return code.first.evaluate("e => e.textContent") if code.count() else ""


def _messages(frames):
    """The server's websocket frames (payloads as the browser unpacked them) as ForwardMsg messages."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    for payload in frames:
        msg = ForwardMsg()
        msg.ParseFromString(payload if isinstance(payload, bytes) else payload.encode())
        yield msg


def _bytes_figure(element):
    """The ui.plotly_bytes component of a new element, or None."""
    from attnviz.ui.plotly_bytes import NAME

    if element.WhichOneof("type") == "bidi_component" and element.bidi_component.component_name == NAME:
        return element.bidi_component
    return None


def sent_elements(frames) -> dict[str, list[str]]:
    """What the server's websocket frames (payloads as the browser unpacked them) drew: {"charts": the keys of the
    plotly figures sent in full (st.plotly_chart's, and ui.plotly_bytes' figures sent as bytes), "widgets": the keys
    of the widgets, "references": one entry per message sent as a reference to a copy the browser already holds}."""
    out = {"charts": [], "widgets": [], "references": []}
    for msg in _messages(frames):
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":
            out["references"].append(msg.ref_hash)
        if kind != "delta" or msg.delta.WhichOneof("type") != "new_element":
            continue
        element = msg.delta.new_element
        what = getattr(element, element.WhichOneof("type"))
        element_id = getattr(what, "id", "")
        if element.WhichOneof("type") == "plotly_chart":
            out["charts"].append(element_id.rsplit("-", 1)[-1] if element_id else "")
        elif _bytes_figure(element) is not None:
            out["charts"].append(element_id.split("-", 2)[-1])
        elif element_id.startswith("$$ID-"):
            out["widgets"].append(element_id.split("-", 2)[-1])
    return out


def bytes_figures(frames) -> dict[str, dict]:
    """The figures the frames sent as float32 bytes (ui.plotly_bytes), by key: {"figure", "arrays", "size": bytes}."""
    from attnviz.plotting import figure_from_bytes

    out = {}
    for msg in _messages(frames):
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            c = _bytes_figure(msg.delta.new_element)
            if c is not None:
                out[c.id.split("-", 2)[-1]] = {**figure_from_bytes(c.bytes), "size": len(c.bytes)}
    return out
