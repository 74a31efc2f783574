"""Chromium against `streamlit run`: the heatmap page renders and responds."""
import base64
import re
from urllib.parse import parse_qs

import numpy as np
import pytest

from attnviz.ui.copy_link import BOX
from tests.browser.helpers import (LINK_BUTTON, LINK_CODE, SIDEBAR_LINKS, bytes_figures, choose, click_marker, hover_label,
                                   link_box, look_at, plot_z, sent_elements, url_params, wait_plot)
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _open(page, app_server):
    page.goto(app_server.url + "/heatmap")
    wait_for_app(page)
    page.get_by_text("Every head").first.wait_for()


def _head_z(page):
    i = wait_plot(page, ytitle="query")
    return np.asarray(plot_z(page, i), dtype=float)


def _open_long_text(page, app_server) -> list:
    """Open the heatmap page on the long example (512 tokens); the list the websocket's frames go into from then."""
    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    _open(page, app_server)
    choose(page, "Example", "A long text", exact=False)
    page.get_by_text("512 tokens").first.wait_for(timeout=120_000)
    wait_for_app(page, timeout=120)
    return frames


def test_default_sentence_heatmap_renders(page, app_server):
    _open(page, app_server)
    z = _head_z(page)
    assert z.shape == (13, 13)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-3)
    assert page.locator("h3").filter(has_text="Layer 0, head 0").count() == 1


def test_choosing_another_head_changes_the_heatmap(page, app_server):
    """A new head's map is drawn into plotly's drawing of the last one (plotly.js draws a chart from scratch when
    its config changed, so the config stays the same object) and the PNG button's file name follows the head."""
    _open(page, app_server)
    z0 = _head_z(page)
    svg = ".st-key-hm_heatmap .main-svg"
    page.locator(svg).first.evaluate("el => { el.__marked = true; }")
    choose(page, "Head", "7")
    page.locator("h3").filter(has_text="Layer 0, head 7").wait_for()
    wait_for_app(page)
    z1 = _head_z(page)
    assert z1.shape == z0.shape and not np.allclose(z0, z1)
    assert page.locator(svg).first.evaluate("el => el.__marked === true")
    assert page.locator(".st-key-hm_heatmap .js-plotly-plot").evaluate(
        "el => el._context.toImageButtonOptions.filename") == "attention-layer0-head7"


def test_clicking_a_thumbnail_opens_that_head(page, app_server):
    _open(page, app_server)
    grid = wait_plot(page, ytitle="layer")
    # marker centres are in the scatter trace; pick layer 3, head 9
    xy = page.evaluate("""(i) => { const t = document.querySelectorAll('.js-plotly-plot')[i]._fullData.find(
        t => t.customdata && t.customdata.length);
        const k = t.customdata.findIndex(c => c[0] === 3 && c[1] === 9); return [t.x[k], t.y[k]]; }""", grid)
    click_marker(page, grid, xy[0], xy[1])
    page.locator("h3").filter(has_text="Layer 3, head 9").wait_for(timeout=30_000)


GRID_PICTURE = """() => { const el = document.querySelector('.st-key-hm_grid .js-plotly-plot');
    const pic = el && (el._fullLayout.images || [])[0];
    return pic ? [pic.source, pic.sizex, pic.sizey, el._fullData.some(t => t.type === 'image')] : null; }"""


# the [layer, head] of each thumbnail the grid draws a red frame around (the frame's centre is the marker's)
OPEN_FRAME = """() => { const el = document.querySelector('.st-key-hm_grid .js-plotly-plot');
    const t = el._fullData.find(t => t.customdata && t.customdata.length);
    return (el._fullLayout.shapes || []).filter(s => s.line.color === 'rgb(220,30,30)').map(s => {
        const x = (s.x0 + s.x1) / 2, y = (s.y0 + s.y1) / 2;
        return t.customdata[t.x.findIndex((v, k) => Math.abs(v - x) < 1e-6 && Math.abs(t.y[k] - y) < 1e-6)]; }); }"""


def test_the_grid_picture_is_fetched_once_and_a_head_change_reruns_only_the_heads(page, app_server):
    """A head change reruns the heads' part of the page: the grid's figure names its picture without its bytes and
    the same chart moves its red frame to the new head; the title, the display options and the sidebar are not
    sent again, and the URL and the link follow."""
    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    _open(page, app_server)
    wait_plot(page, ytitle="layer")
    source, width, height, image_trace = page.evaluate(GRID_PICTURE)
    assert source.startswith("/media/") and source.endswith(".png") and not image_trace
    png = page.request.get(app_server.url + source).body()  # served by the app itself, not embedded
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (width, height)
    assert page.evaluate(OPEN_FRAME) == [[0, 0]]
    page.evaluate("() => { document.querySelector('.st-key-hm_grid .js-plotly-plot').__marked = true; }")
    frames.clear()
    choose(page, "Head", "5")
    page.locator("h3").filter(has_text="Layer 0, head 5").wait_for()
    wait_for_app(page)
    sent = b"".join(f if isinstance(f, bytes) else f.encode() for f in frames)
    assert page.evaluate(GRID_PICTURE)[0] == source  # the same picture, its red frame moved
    assert page.evaluate(OPEN_FRAME) == [[0, 5]] and page.evaluate("() => document.querySelector("
                                                                   "'.st-key-hm_grid .js-plotly-plot').__marked")
    # the grid's figure again, naming its picture (plotly writes "/" as \u002f), without the picture's bytes
    assert b"data:image/png" not in sent and source.split("/")[-1].encode() in sent
    # nor the picture's bytes in any other form: as they are, or as base64 text
    assert png[8:200] not in sent and base64.b64encode(png)[16:200] not in sent
    drawn = sent_elements(frames)
    assert {"hm_heatmap", "hm_grid"} <= set(drawn["charts"])  # the heads' part ...
    assert "hm_head" in drawn["widgets"] and not {"model_choice", "hm_hide_special"} & set(drawn["widgets"])  # alone
    assert url_params(page)["head"] == "5" and "head=5" in page.evaluate(SIDEBAR_LINKS)
    assert link_box(page).count() == 1


def test_long_text_renders_512_tokens_and_a_new_focus_token_does_not_send_the_map_again(page, app_server):
    frames = _open_long_text(page, app_server)
    z = _head_z(page)
    assert z.shape == (512, 512)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-3)
    frames.clear()
    choose(page, "Token", "7: ", exact=False)
    # the shaded text outlines the new focus token once the part has rerun (a busy machine may take a while)
    page.wait_for_function("""() => { const t = document.querySelector('.attnviz-text');
        const s = t && t.querySelectorAll('span')[7]; return !!s && s.style.outline !== ''; }""", timeout=120_000)
    wait_for_app(page, timeout=120)
    assert url_params(page)["hm_focus"] == "7"
    sent = b"".join(f if isinstance(f, bytes) else f.encode() for f in frames)
    drawn = sent_elements(frames)
    assert "hm_focus_out" in drawn["charts"] and "hm_heatmap" not in drawn["charts"] and drawn["references"]
    assert len(sent) < 600_000, len(sent)  # the unchanged map (1.4 MB alone) goes as a reference to the browser's copy
    np.testing.assert_allclose(_head_z(page), z, atol=0)


def test_a_long_head_comes_as_float32_bytes_into_the_same_chart_and_hovers_its_exact_weight(page, app_server, minilm):
    """At 512 tokens a head's map travels as float32 bytes (not as 1.4 MB of base64 text inside a figure's JSON),
    plotly.js redraws the chart that is already there, and the map and its hover are the model's exact weights."""
    from attnviz.examples import long_text
    from attnviz.extract import extract

    frames = _open_long_text(page, app_server)
    chart = page.locator(".st-key-hm_heatmap .js-plotly-plot")
    chart.evaluate("el => { el.dataset.marked = 'yes'; }")
    assert page.evaluate(OPEN_FRAME) == [[0, 0]]
    page.evaluate("() => { document.querySelector('.st-key-hm_grid .js-plotly-plot').__marked = true; }")
    frames.clear()
    choose(page, "Head", "5")
    page.locator("h3").filter(has_text="Layer 0, head 5").wait_for()
    wait_for_app(page, timeout=120)
    expected = extract(minilm, long_text()).attention[0, 5]
    assert expected.shape == (512, 512)
    sent = bytes_figures(frames)["hm_heatmap"]
    assert sent["arrays"] == [{"trace": 0, "field": "z", "shape": [512, 512]}]
    np.testing.assert_array_equal(sent["figure"]["data"][0]["z"], expected.astype(np.float32))
    assert sent["size"] < 512 * 512 * 4 + 60_000  # the weights' own bytes and the figure's JSON around them
    assert "hm_heatmap" in sent_elements(frames)["charts"]
    assert chart.evaluate("el => el.dataset.marked") == "yes"  # redrawn in place, not a new chart
    look_at(page, "hm_heatmap")
    shown = np.asarray(chart.evaluate("el => el._fullData[0].z.map(r => Array.from(r))"), dtype=np.float32)
    np.testing.assert_array_equal(shown, expected.astype(np.float32))
    # hover near the cell (query 300, key 290; a cell is under 2 pixels wide): the label names a cell and its
    # exact weight to 4 digits
    q, k = 300, 290
    text = hover_label(page, "hm_heatmap", q, k)
    found = re.fullmatch(r"query (\d+): .*key (\d+): .*weight ([0-9.e-]+)", text)
    assert found, text
    hq, hk = int(found.group(1)), int(found.group(2))
    assert abs(hq - q) <= 2 and abs(hk - k) <= 2, text
    assert expected[hq, hk] > 1e-4  # plotly writes smaller weights without an exponent, Python with one
    assert float(found.group(3)) == float(f"{expected[hq, hk]:.4g}"), text
    # its toolbar as Streamlit's charts have it: Fullscreen, and no "Share chart" that would send the data away
    titles = chart.locator(".modebar-btn").evaluate_all("els => els.map(e => e.dataset.title)")
    assert "Fullscreen" in titles and "Download plot as a PNG" in titles and not [t for t in titles if "Share" in t]
    width = chart.evaluate("el => el._fullLayout.width")
    chart.locator(".modebar-btn[data-title='Fullscreen']").click()
    page.wait_for_function("() => document.fullscreenElement && document.fullscreenElement._fullLayout.width === window.innerWidth")
    chart.hover()
    chart.locator(".modebar-btn[data-title='Fullscreen']").click()
    page.wait_for_function("() => !document.fullscreenElement")
    page.wait_for_function("(w) => document.querySelector('.st-key-hm_heatmap .js-plotly-plot')._fullLayout.width === w", arg=width)


def test_text_view_follows_the_focus_token(page, app_server, minilm):
    from attnviz.extract import extract

    _open(page, app_server)
    r = extract(minilm, "The cat sat on the mat because it was tired.")

    def shown():
        box = page.locator(".attnviz-text").first
        box.scroll_into_view_if_needed()
        return np.array([float(w) for w in box.locator("span").evaluate_all(
            "els => els.map(e => e.dataset.weight)")])

    np.testing.assert_allclose(shown(), r.attention[0, 0, 1], atol=1e-5)
    choose(page, "Token", "4: on")
    np.testing.assert_allclose(shown(), r.attention[0, 0, 4], atol=1e-5)
    title = page.locator(".attnviz-text").first.locator("span").nth(4).get_attribute("title")
    assert title == f"on (4): weight {r.attention[0, 0, 4, 4]:.4f}"


def test_a_new_focus_token_reruns_only_the_heads_part_and_the_link_and_deck_box_follow(page, app_server, minilm):
    """A new focus token reruns the heads' part: its figures and text are sent again, the head's unchanged heatmap
    only as a reference to the browser's copy, the sidebar not at all; the URL, the sidebar's link and "Add this
    view" name the new token all the same, and later runs keep it."""
    from attnviz.extract import extract

    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(payload)))
    _open(page, app_server)
    r = extract(minilm, "The cat sat on the mat because it was tired.")
    wait_plot(page, ytitle="layer")
    assert "hm_focus=1" in page.evaluate(SIDEBAR_LINKS)
    links = link_box(page)
    links.first.get_by_text("Link to this view").click()  # open: it stays open while the part reruns
    links.first.locator(LINK_CODE).wait_for(state="visible")
    frames.clear()
    choose(page, "Token", "4: on")
    wait_for_app(page)
    sent = b"".join(f if isinstance(f, bytes) else f.encode() for f in frames)
    drawn = sent_elements(frames)
    assert {"hm_focus_out", "hm_focus_in"} <= set(drawn["charts"])  # the focus figures, new
    assert not {"hm_heatmap", "hm_grid"} & set(drawn["charts"]) and drawn["references"]  # unchanged: references
    assert "hm_focus_label" in drawn["widgets"] and not {"model_choice", "hm_hide_special"} & set(drawn["widgets"])
    shown = np.array([float(w) for w in page.locator(".attnviz-text").first.locator("span").evaluate_all(
        "els => els.map(e => e.dataset.weight)")])
    np.testing.assert_allclose(shown, r.attention[0, 0, 4], atol=1e-5)
    assert url_params(page)["hm_focus"] == "4"
    assert "hm_focus=4" in page.evaluate(SIDEBAR_LINKS)
    assert links.count() == 1 and links.first.locator(LINK_CODE).is_visible()
    assert links.first.locator(f".{BOX}").count() == 1  # the part's rerun replaced the box, added none
    # the deck's box adds this view with the new token
    box = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]', has_text="Add this view to the deck")
    box.first.click()
    box.first.get_by_label("Slide title").fill("The token on")
    box.first.get_by_role("button", name="Add this view").click()
    wait_for_app(page)
    # the box's lasting count (its "Added slide 1: …" line is shown for one run only: any later run takes it away)
    box.first.get_by_text(re.compile(r"The deck has 1 slide\b")).first.wait_for(timeout=60_000)
    import json

    from attnviz.decks import store

    newest = store.recent(1)[0]  # the working copy the server wrote (this worker's deck folder)
    slides = json.loads(store.path(newest.deck_id).read_text(encoding="utf-8"))["slides"]
    assert slides[-1]["title"] == "The token on" and slides[-1]["params"]["hm_focus"] == "4", slides[-1]

    # another head keeps the token, and the sidebar still has one link box
    choose(page, "Head", "3")
    page.locator("h3").filter(has_text="Layer 0, head 3").wait_for()
    wait_for_app(page)
    assert url_params(page)["hm_focus"] == "4" and url_params(page)["head"] == "3"
    assert link_box(page).count() == 1
    assert "hm_focus=4" in page.evaluate(SIDEBAR_LINKS) and "head=3" in page.evaluate(SIDEBAR_LINKS)
    # and so does a full run (the display options)
    page.get_by_text("Display options").first.click()
    page.locator(".st-key-hm_hide_special").get_by_text("Hide special tokens").first.click()
    wait_for_app(page)
    assert url_params(page)["hm_focus"] == "4" and url_params(page)["hm_hide_special"] == "1"
    assert link_box(page).count() == 1
    assert "hm_hide_special=1" in page.evaluate(SIDEBAR_LINKS) and "head=3" in page.evaluate(SIDEBAR_LINKS)


def test_the_server_sends_its_websocket_messages_uncompressed(app_server):
    """The app's server declines permessage-deflate, also when the browser offers it: a 512 x 512 map goes as float32
    bytes, which deflate shrinks by a few percent in tens of milliseconds on the message's way out."""
    import os
    import socket

    with socket.create_connection(("127.0.0.1", app_server.port), timeout=30) as s:
        s.sendall((f"GET /_stcore/stream HTTP/1.1\r\nHost: 127.0.0.1:{app_server.port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
                   "Sec-WebSocket-Protocol: streamlit\r\n\r\n").encode())
        head = s.recv(4096).decode("latin-1").lower()
    assert head.startswith("http/1.1 101") and "permessage-deflate" not in head, head


def test_the_link_box_shows_the_views_link_whole_and_its_button_copies_it(page, app_server):
    """The sidebar's 'Link to this view' shows the link of the view on screen, wrapped within the sidebar, and its
    Copy button puts exactly that link on the clipboard: through the clipboard of a secure page (127.0.0.1), and by
    selecting it where the page has no clipboard (an address on the network, for a class)."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_server.url)
    try:
        page.goto(app_server.url + "/heatmap?layer=2&head=5")
        wait_for_app(page)
        box = link_box(page).first
        box.get_by_text("Link to this view").click()
        code = box.locator(LINK_CODE)
        code.wait_for(state="visible")
        link = code.text_content()
        assert link.startswith(app_server.url + "/heatmap?")
        assert url_params(page) == {k: v[0] for k, v in parse_qs(link.split("?", 1)[1]).items()}
        assert {"layer": "2", "head": "5"}.items() <= url_params(page).items()
        fits = code.evaluate("e => [e.scrollWidth, e.clientWidth, e.closest('[data-testid=\"stSidebar\"]')"
                             ".getBoundingClientRect().right - e.getBoundingClientRect().right]")
        assert fits[0] <= fits[1] and fits[2] >= 0, fits  # wrapped inside the box, the box inside the sidebar
        button = box.locator(LINK_BUTTON)
        button.click()
        page.wait_for_function(f"() => document.querySelector('{LINK_BUTTON}').textContent === 'Copied'")
        assert page.evaluate("() => navigator.clipboard.readText()") == link
        # a page without the clipboard API: the link is selected and copied, which the copy event sees
        page.evaluate("""() => {
            Object.defineProperty(navigator, 'clipboard', {value: undefined, configurable: true});
            window.__copied = null;
            document.addEventListener('copy', () => { window.__copied = String(document.getSelection()); },
                                      {once: true});
        }""")
        page.wait_for_function(f"() => document.querySelector('{LINK_BUTTON}').textContent === 'Copy'")
        button.click()
        page.wait_for_function("() => window.__copied !== null")
        assert page.evaluate("() => window.__copied") == link
        assert button.text_content() == "Copied"
    finally:
        page.context.clear_permissions()
