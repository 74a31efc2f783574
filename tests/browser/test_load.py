"""Load on one `streamlit run` server (127.0.0.1 only): 8 Chromium sessions using different pages at
once give 0 errors and the heatmaps the core computes for their texts and heads; the server's memory stays flat
over many distinct long texts (the result cache is bounded). The server's memory over 200 texts is a bench
figure, not a test."""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pytest

from tests.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, CONTEXT, served

pytestmark = pytest.mark.browser

TEXTS = (
    "The cat sat on the mat because it was tired.",
    "A lecturer explains attention to two hundred students in a large hall.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
)
# (text, layer, head) of the three heatmap sessions
HEADS = ((TEXTS[0], 0, 0), (TEXTS[1], 2, 5), (TEXTS[2], 5, 11))
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
Z_OF = """(i) => { const el = document.querySelectorAll('.js-plotly-plot')[i];
                   return el && el._fullData && el._fullData[0] ? el._fullData[0].z : null; }"""
RUNNING = """() => document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') === 'running'
    || document.querySelector('[data-testid="stStatusWidget"]') !== null"""
FIND_HEAD = """() => [...document.querySelectorAll('.js-plotly-plot')].findIndex(el => el._fullLayout &&
    (((el._fullLayout.yaxis || {}).title || {}).text || '').startsWith('query'))"""


async def idle(page, timeout: float = 210.0) -> None:
    """Wait until the Streamlit script run has finished (the app's script state not 'running' for 0.8 s)."""
    await page.wait_for_selector('[data-testid="stApp"]', state="attached", timeout=timeout * 1000)
    deadline, since = time.time() + timeout, None
    while time.time() < deadline:
        if await page.evaluate(RUNNING):
            since = None
        elif since is None:
            since = time.time()
        elif time.time() - since > 0.8:
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{page.url} kept running for {timeout:.0f} s")


async def head_z(page, layer: int, head: int) -> np.ndarray:
    await page.locator("h3").filter(has_text=f"Layer {layer}, head {head}").first.wait_for(timeout=210_000)
    for _ in range(300):
        i = await page.evaluate(FIND_HEAD)
        if i >= 0:
            z = await page.evaluate(Z_OF, i)
            if z:
                return np.asarray(z, dtype=np.float64)
        await asyncio.sleep(0.2)
    raise AssertionError("the head heatmap did not render")


def run_async(coro):
    """asyncio.run in a thread of its own: the sync Playwright of other browser tests keeps an
    event loop running in the main thread, where asyncio.run would refuse to start."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def heatmap_url(base: str, text: str, layer: int, head: int) -> str:
    return f"{base}/heatmap?" + urlencode({"text": text, "layer": layer, "head": head})


async def session(browser, name: str, url: str, action=None) -> dict:
    """One browser context = one Streamlit session; returns what it saw."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900}, **CONTEXT)
    page = await ctx.new_page()
    page.set_default_timeout(210_000)
    t0 = time.perf_counter()
    out = {"name": name}
    try:
        await page.goto(url)
        await page.locator("h1").first.wait_for()  # the page's title: the script is running
        await idle(page)
        if action is not None:
            out.update(await action(page) or {})
        else:  # every other page of the test draws at least one figure or table (Complexity opens on its table)
            await page.locator('.js-plotly-plot, [data-testid="stDataFrame"]').first.wait_for(state="attached")
            out["figures"] = await page.locator('.js-plotly-plot, [data-testid="stDataFrame"]').count()
        await idle(page)
        out["errors"] = [await e.inner_text() for e in await page.locator(ERRORS).all()]
        out["seconds"] = round(time.perf_counter() - t0, 1)
        await page.screenshot(path=str(ARTIFACTS / f"load-{name}.png"))
    finally:
        await ctx.close()
    return out


def heatmap_action(layer, head):
    async def act(page):
        return {"z": await head_z(page, layer, head)}
    return act


async def start_training(page):
    await page.get_by_role("button", name="▶ Train now").first.click()
    await asyncio.sleep(1.0)
    await idle(page, timeout=150)
    return {}


async def run_sessions(base: str, specs) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            return await asyncio.gather(*(session(browser, *spec) for spec in specs))
        finally:
            await browser.close()


@pytest.fixture(scope="module")
def chromium_present():
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (make test installs it)")


@pytest.fixture
def load_server():
    """A server of the test's own: the worker's server has other tests' models, sessions and caches in it, which
    would blur both what eight sessions at once meet and the memory curve."""
    yield from served()


CACHE = 4  # the server's bound on attention results in the memory test (ATTNVIZ_RESULT_CACHE; 16 by default)


@pytest.fixture
def small_cache_server(monkeypatch):
    """A server of the test's own that keeps CACHE results: the bound is reached, and passed, in fewer texts."""
    monkeypatch.setenv("ATTNVIZ_RESULT_CACHE", str(CACHE))
    yield from served()


def test_eight_sessions_at_once(load_server, chromium_present):
    base = load_server.url
    assert base.startswith("http://127.0.0.1:")
    text_url = urlencode({"text": TEXTS[1]})
    specs = [(f"heatmap-{i}", heatmap_url(base, t, layer, head), heatmap_action(layer, head))
             for i, (t, layer, head) in enumerate(HEADS)]
    specs += [
        ("entropy", f"{base}/entropy?{text_url}", None),
        ("rollout", f"{base}/rollout?" + urlencode({"text": TEXTS[2]}), None),
        ("positional", f"{base}/positional", None),
        ("complexity", f"{base}/complexity", None),
        ("training", f"{base}/training", start_training),
    ]
    t0 = time.perf_counter()
    together = run_async(run_sessions(base, specs))
    wall_together = time.perf_counter() - t0
    for r in together:
        assert r["errors"] == [], (r["name"], r["errors"])

    for r in together[:3]:
        assert r["z"].shape[0] > 5
        np.testing.assert_allclose(r["z"].sum(axis=1), 1.0, atol=1e-4)
    assert not np.allclose(together[0]["z"][:5, :5], together[1]["z"][:5, :5])  # different heads really differ

    # ... and what the core computes for that text and head, in this process
    from attnviz.extract import extract
    from attnviz.models import load_model

    loaded = load_model("minilm")
    for (text, layer, head), r in zip(HEADS, together):
        np.testing.assert_allclose(r["z"], extract(loaded, text).attention[layer, head], atol=1e-5)
    _record("concurrency", {"sessions": len(specs), "wall_seconds_8_at_once": round(wall_together, 1),
                            "per_session_seconds": {r["name"]: r["seconds"] for r in together}})


def _texts(n: int, words_min: int = 300) -> list[str]:
    """n distinct random texts of words_min to words_min + 49 words (each word one token); consecutive texts
    differ in length, so the page's "N tokens" line tells when the new one is shown."""
    words = ("river stone lamp cloud garden window music paper forest engine bridge candle winter "
             "harbour market silver planet orchard valley thunder").split()
    rng = np.random.default_rng(8)
    return [" ".join(rng.choice(words, size=words_min + i % 50)) + "." for i in range(n)]


def test_memory_stays_flat_over_many_texts(small_cache_server, chromium_present):
    import psutil

    load_server = small_cache_server
    n_texts = int(os.environ.get("ATTNVIZ_LOAD_TEXTS", "16"))
    budget = float(os.environ.get("ATTNVIZ_LOAD_SECONDS", "600"))
    from tests.tiny_models import minilm_tokenizer

    proc = psutil.Process(load_server.proc.pid)
    texts = _texts(n_texts)
    tok = minilm_tokenizer()
    n_tokens = [len(tok(t)["input_ids"]) for t in texts]
    samples = []

    async def drive():
        from playwright.async_api import async_playwright

        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            ctx = await browser.new_context(viewport={"width": 1280, "height": 900}, **CONTEXT)
            page = await ctx.new_page()
            page.set_default_timeout(120_000)
            await page.goto(f"{load_server.url}/heatmap")
            await idle(page)
            box = page.locator('[data-testid="stSidebar"] textarea').first
            t0 = time.perf_counter()
            done = 0
            for i, text in enumerate(texts):
                if time.perf_counter() - t0 > budget:
                    break  # bounded in time: the note records how many texts were driven
                await box.fill(text)
                await box.press("Control+Enter")
                await page.get_by_text(f"{n_tokens[i]:,} tokens", exact=True).first.wait_for(timeout=60_000)
                await idle(page, timeout=60)
                done = i + 1
                samples.append((done, time.perf_counter() - t0, proc.memory_info().rss))
            errors = [await e.inner_text() for e in await page.locator(ERRORS).all()]
            await page.screenshot(path=str(ARTIFACTS / "load-memory.png"))
            await browser.close()
            return done, errors

    rss_start = proc.memory_info().rss
    done, errors = run_async(drive())
    assert errors == [], errors
    assert done >= 16, f"only {done} texts in {budget:.0f} s"
    rss = np.array([s[2] for s in samples], dtype=float) / 2**20
    full = CACHE + 2  # by then the result cache is full and evicting
    after_full = rss[full - 1:]
    growth = after_full[-1] - after_full[0]
    seconds = samples[-1][1]
    _record("memory", {"texts": done, "seconds": round(seconds, 1), "seconds_per_text": round(seconds / done, 2),
                       "rss_mb_start": round(rss_start / 2**20, 1), "rss_mb_cache_full": round(after_full[0], 1),
                       "rss_mb_end": round(rss[-1], 1), "rss_mb_peak": round(rss.max(), 1),
                       "growth_mb_after_cache_full": round(growth, 1),
                       "unbounded_cache_would_hold_mb": round(sum(6 * 12 * n * n * 4 for n in n_tokens[:done]) / 2**20, 1)})
    # Each text's result is 72 maps of n x n float32 (~25-35 MB at 300-350 tokens): an unbounded cache would
    # grow by ~290 MB over the ten texts after the cache is full; the bound keeps the growth to allocator noise.
    unbounded = sum(6 * 12 * n * n * 4 for n in n_tokens[full:done]) / 2**20
    assert unbounded > 250, unbounded
    assert growth < 120, f"RSS grew {growth:.0f} MB after the cache was full ({done} texts; unbounded: {unbounded:.0f} MB)"


def _record(name: str, figures: dict) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "load-figures.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[name] = figures
    path.write_text(json.dumps(data, indent=2))
    print(name, json.dumps(figures))
