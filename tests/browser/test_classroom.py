"""A class on the app: the protocol-level load generator (tools/classroom) against real servers.

- a few simulated students get 0 errors and the right numbers (the heatmap of their head is what
  attnviz.extract computes; the metric beside it agrees);
- Chromium and the load generator doing the same interaction get the same figure, metric, headings and URL
  from the server (so the generator's sessions cost the server what a browser's do);
- a student who drops mid-run disturbs no one, and the server stays healthy;
- through nginx with two replicas every session stays on one replica, the class is spread over both,
  and the results are right.
The 60-student figures are a benchmark (`python -m attnviz.bench --load`), not a test."""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tools.classroom.load import ClassConfig, run, warm
from tools.classroom.protocol import Session, plotly_array
from tools.classroom.scenario import DEFAULT_TEXT, heatmap_link
from tests.conftest import served

pytestmark = pytest.mark.browser


def in_thread(coro):
    """asyncio.run in a thread of its own (the sync Playwright of browser tests keeps a loop in this one)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@pytest.fixture(scope="module")
def server():
    gen = served()
    srv = next(gen)
    in_thread(warm(srv.url))  # the model loads once, as before a lecture
    yield srv
    next(gen, None)


@pytest.fixture(scope="module")
def expected(minilm):
    from attnviz.extract import extract

    return extract(minilm, DEFAULT_TEXT).attention  # (layer, head, query, key)


def _check_heads(students, expected):
    for st in students:
        assert st.head_z is not None, st.index
        np.testing.assert_allclose(st.head_z, expected[st.layer, st.head], atol=1e-5)
        assert st.head_metric == f"{float(expected[st.layer, st.head].max()):.4f}"


def test_a_small_class_gets_no_errors_and_the_right_heads(server, expected):
    report = run(ClassConfig(server.url, sessions=4, scenario="class", think=0.3, ramp=0.5, timeout=90),
                 [server.proc.pid])
    s = report.summary()
    assert s["errors"] == 0, s["first_failures"]
    assert s["sessions_ok"] == 4 and s["interactions"] == 4 * 5  # open, head, text, lab, slider
    _check_heads(report.students, expected)
    assert len({st.head for st in report.students}) == 4  # four different heads, four different heatmaps
    assert s["p95_ms"] is not None and s["server_rss_mb_peak"] > 100


def test_a_lab_class(server):
    s = run(ClassConfig(server.url, sessions=3, scenario="lab", think=0.2, ramp=0.3, timeout=90)).summary()
    assert s["errors"] == 0 and s["sessions_ok"] == 3, s["first_failures"]
    assert set(s["p95_ms_by_step"]) == {"open", "slider"}


def test_chromium_and_the_load_generator_get_the_same_from_the_server(server, page):
    from tests.browser.helpers import choose
    from tests.conftest import wait_for_app

    head = 7
    page.goto(server.url + heatmap_link())
    wait_for_app(page)
    choose(page, "Head", str(head))
    page.locator("h3").filter(has_text=f"Layer 0, head {head}").first.wait_for()
    wait_for_app(page)
    browser = page.evaluate("""() => {
        const plots = [...document.querySelectorAll('.js-plotly-plot')];
        const head = plots.find(el => (((el._fullLayout.yaxis || {}).title || {}).text || '').startsWith('query'));
        const metric = [...document.querySelectorAll('[data-testid="stMetric"]')]
            .find(m => m.innerText.startsWith('Largest'));
        return {z: head._fullData[0].z, plots: plots.length,
                metric: metric.querySelector('[data-testid="stMetricValue"]').innerText,
                h3: [...document.querySelectorAll('[data-testid="stMain"] h3')].map(h => h.innerText.trim())};
    }""")
    browser_query = page.url.split("?", 1)[1]

    async def generator():
        s = Session(server.url, timeout=90)
        await s.open(heatmap_link())
        run_ = await s.set_widget("hm_head", head)
        out = {"run": run_, "z": plotly_array(s.figure("hm_heatmap")["data"][0]["z"]),
               "plots": s.charts(), "metric": s.metric("Largest"),
               "h3": [h.body for h in s.of_kind("heading") if h.tag == "h3"], "query": s.query_string}
        await s.close()
        return out

    gen = in_thread(generator())
    assert gen["run"].ok, gen["run"].errors
    np.testing.assert_array_equal(np.asarray(browser["z"], dtype=np.float32), gen["z"])  # the same bytes
    assert browser["metric"] == gen["metric"]
    assert browser["plots"] == gen["plots"]  # the same figures drawn
    assert [h for h in browser["h3"] if h] == gen["h3"]  # the same sections, "Layer 0, head 7" among them
    assert browser_query == gen["query"]  # the app wrote the same share link for both


def test_a_student_who_drops_mid_run_disturbs_no_one(server, expected):
    report = run(ClassConfig(server.url, sessions=4, scenario="heatmap", think=0.3, ramp=0.3, timeout=90, drop=(1,)),
                 [server.proc.pid])
    s = report.summary()
    assert s["dropped_on_purpose"] == 1
    assert s["errors"] == 0 and s["sessions_ok"] == 3, s["first_failures"]
    _check_heads([st for st in report.students if not st.dropped], expected)
    with urllib.request.urlopen(server.url + "/_stcore/health", timeout=5) as r:
        assert r.status == 200
    after = run(ClassConfig(server.url, sessions=1, scenario="heatmap", think=0, ramp=0, timeout=60, seed=1))
    assert after.summary()["sessions_ok"] == 1  # a new student afterwards is served normally
    log = Path(server.log_path).read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def replicas():
    from tools.classroom.replicas import NGINX, Replicas

    if not Path(NGINX).exists():
        if os.environ.get("CI"):
            pytest.fail("nginx is missing at /usr/sbin/nginx: `make test` installs it")
        pytest.skip("nginx is not installed (make test installs it)")
    with Replicas(2) as rep:
        for replica in rep.replicas:  # each replica directly (round-robin over nginx would miss one)
            in_thread(warm(replica.url))
        yield rep


def test_replicas_keep_each_session_on_one_replica_and_spread_the_class(replicas, expected):
    t0 = time.perf_counter()
    report = run(ClassConfig(replicas.url, sessions=6, scenario="class", think=0.3, ramp=0.5, timeout=90),
                 replicas.pids)
    s = report.summary()
    assert s["errors"] == 0 and s["sessions_ok"] == 6, s["first_failures"]
    for st in report.students:  # the page GET and the websocket reached the same replica
        assert st.upstream["http"] in replicas.addresses and st.upstream["ws"] == st.upstream["http"], st.upstream
    assert set(s["sessions_per_replica"]) == set(replicas.addresses)  # both replicas took students
    assert s["sessions_switched_replica"] == 0
    _check_heads(report.students, expected)
    assert time.perf_counter() - t0 < 90
