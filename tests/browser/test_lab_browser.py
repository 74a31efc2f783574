"""Chromium: lowering the temperature sharpens the attention weights on the temperature page."""
import pytest

from tests.browser.helpers import SIDEBAR_LINKS, link_box
from tests.conftest import plotly_z, wait_for_app


@pytest.mark.browser
def test_lower_temperature_sharpens(app_server, page):
    page.goto(app_server.url + "/lab_temperature")
    wait_for_app(page)
    page.wait_for_selector(".js-plotly-plot")
    page.get_by_text("Attention returns (weighted lifespan)").wait_for()
    before = plotly_z(page, 0)
    assert round(max(before[0]), 4) == 0.4519  # T = 1: the worked example's row 1
    # the range input is visually hidden: focus it and use the arrow keys
    thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
    thumb.focus()
    for _ in range(15):  # 15 notches left on the log grid: T 1.0 -> 0.032
        page.keyboard.press("ArrowLeft")
    wait_for_app(page)
    page.wait_for_function("() => { const el = document.querySelectorAll('.js-plotly-plot')[0];"
                           " return el && el._fullData && Math.max(...el._fullData[0].z[0]) > 0.9; }", timeout=30000)
    after = plotly_z(page, 0)
    for r_before, r_after in zip(before, after):
        assert max(r_after) > max(r_before)  # every row sharpens
    assert max(after[0]) > 0.99 and max(after[2]) > 0.99
    assert after[1][0] == pytest.approx(0.5, abs=1e-3)  # row 2's tie stays shared


@pytest.mark.browser
def test_the_temperature_lab_reruns_alone_and_the_link_follows(app_server, page):
    """The lab below its header is a part of the page: the slider reruns it without the sidebar, and the URL and the
    sidebar's link name the new temperature all the same."""
    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(app_server.url + "/lab_temperature")
    wait_for_app(page)
    page.get_by_text("Attention returns (weighted lifespan)").wait_for()
    assert "temp_T=1.0" in page.evaluate(SIDEBAR_LINKS)
    frames.clear()
    thumb = page.locator('.st-key-temp_T input[type="range"]').first
    thumb.focus()
    page.keyboard.press("ArrowLeft")  # one notch: T = 1.0 -> 0.79
    page.wait_for_function("() => new URL(location.href).searchParams.get('temp_T') === '0.79'", timeout=30_000)
    wait_for_app(page)
    sent = b"".join(f if isinstance(f, bytes) else f.encode() for f in frames)
    assert b"temp_fig_weights" in sent
    assert b"Model and text" not in sent  # the sidebar's controls were not sent again
    assert "temp_T=0.79" in page.evaluate(SIDEBAR_LINKS)
    assert page.get_by_text("The worked example at T = 0.79").count() == 1
    assert link_box(page).count() == 1


@pytest.mark.browser
def test_the_scaling_lab_reruns_alone_and_keeps_its_lecture_links(app_server, page):
    """Every lab is a part of its page below the header: a slider reruns the lab without the sidebar, the figures
    follow, and the lecture links at its end are drawn again with it."""
    from tests.browser.helpers import sent_elements, url_params

    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(app_server.url + "/lab_scaling?scaling_dk=512")
    wait_for_app(page)
    page.locator(".st-key-scaling_hist .js-plotly-plot").wait_for()
    nav = page.get_by_role("link", name="Next: ")
    assert nav.count() == 1
    frames.clear()
    thumb = page.locator('.st-key-scaling_dk input[type="range"]').first
    thumb.focus()
    page.keyboard.press("ArrowLeft")  # one notch: d_k 512 -> 256
    page.wait_for_function("() => new URL(location.href).searchParams.get('scaling_dk') === '256'", timeout=30_000)
    wait_for_app(page)
    drawn = sent_elements(frames)
    assert "scaling_hist" in drawn["charts"] and "scaling_dk" in drawn["widgets"]
    assert not {"model_choice", "use_pair"} & set(drawn["widgets"])  # the sidebar was not sent again
    marker = page.evaluate("""() => { const el = document.querySelector('.st-key-scaling_fig_max .js-plotly-plot');
        return (el._fullLayout.shapes || []).map(s => s.x0); }""")
    assert any(abs(x - 256) < 1e-6 for x in marker), marker  # the sweep's marker moved to the new d_k
    assert url_params(page)["scaling_dk"] == "256" and nav.count() == 1
    assert link_box(page).count() == 1


@pytest.mark.browser
def test_the_multi_head_lab_reruns_alone_and_its_link_names_one_kv_slider(app_server, page):
    """The KV-heads slider has one key per head count (its options depend on it). A new head count reruns the lab
    alone; the URL and the link box then name the new count's slider and drop the previous one."""
    from tests.browser.helpers import sent_elements, url_params

    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    page.goto(app_server.url + "/lab_multihead?mh_heads=4&mh_kv_4=2")
    wait_for_app(page)
    page.locator(".st-key-mh_fig_head_3 .js-plotly-plot").wait_for()
    assert page.get_by_text("head 4 (KV head 2)").count() == 1  # 4 query heads share 2 KV heads
    assert "mh_kv_4=2" in page.evaluate(SIDEBAR_LINKS)
    frames.clear()
    box = page.get_by_label("heads h", exact=True)
    box.fill("8")
    box.press("Enter")
    page.wait_for_function("() => new URL(location.href).searchParams.get('mh_heads') === '8'", timeout=30_000)
    wait_for_app(page)
    page.locator(".st-key-mh_fig_head_7 .js-plotly-plot").wait_for()
    drawn = sent_elements(frames)
    assert "mh_fig_head_7" in drawn["charts"] and "mh_kv_8" in drawn["widgets"]
    assert not {"model_choice", "use_pair"} & set(drawn["widgets"])  # the sidebar was not sent again
    params = url_params(page)
    assert params["mh_kv_8"] == "8" and "mh_kv_4" not in params  # the previous head count's slider left the link
    link = page.evaluate(SIDEBAR_LINKS)
    assert "mh_kv_8=8" in link and "mh_kv_4" not in link
    thumb = page.locator('.st-key-mh_kv_8 input[type="range"]').first
    thumb.focus()
    page.keyboard.press("ArrowLeft")  # KV heads 8 -> 4: pairs of query heads share one
    page.wait_for_function("() => new URL(location.href).searchParams.get('mh_kv_8') === '4'", timeout=30_000)
    wait_for_app(page)
    assert page.get_by_text("head 8 (KV head 4)").count() == 1
    assert page.get_by_role("link", name="Next: ").count() == 1
    assert link_box(page).count() == 1
    export = page.locator('[data-testid="stSidebar"] [data-testid="stDownloadButton"]:visible')  # not the hidden former box
    assert [" ".join(t.split()[1:]) for t in export.all_inner_texts()] == ["All 11 figures of this page (.zip)"]  # split, 8 heads, concat, output (after its icon)
    box.fill("6")  # 16 / 6 is no whole head width: a message in place of the figures
    box.press("Enter")
    page.get_by_text("is not divisible by n_heads = 6").wait_for()
    wait_for_app(page)
    page.wait_for_function("() => !new URL(location.href).searchParams.has('mh_kv_8')", timeout=30_000)
    assert "mh_kv_8" not in page.evaluate(SIDEBAR_LINKS) and url_params(page)["mh_heads"] == "6"
    assert export.count() == 0  # no figure on the page, none to export
    assert page.get_by_role("link", name="Next: ").count() == 1
