"""A figure drawn in place (ui.plotly_bytes) looks as st.plotly_chart draws the same kind of figure: the same bar
chart (figures.token_bars) drawn by Streamlit on the Entropy page and in place on the Rollout page, and a heatmap's
colour bar and colour range; a figure shown again is drawn once, with the margins plotly worked out for it the
first time, also in a page loaded again or another tab of the same browser."""
from __future__ import annotations

from tests.browser.helpers import choose, look_at, nav_to, open_path
from tests.conftest import wait_for_app

# what Streamlit's theme decides for a chart, as plotly.js resolved it
LOOK = """(sel) => { const gd = document.querySelector(sel + ' .js-plotly-plot'); const L = gd._fullLayout;
  const ax = (a) => [a.showgrid, a.zeroline, a.gridcolor || null, a.tickfont.color, a.tickfont.size, a.tickfont.family,
                     a.title.font.color, a.title.font.size, a.ticks];
  return {x: ax(L.xaxis), y: ax(L.yaxis), colorway: L.colorway, font: [L.font.family, L.font.size, L.font.color],
          title: [L.title.font.family, L.title.font.size, L.title.font.color, L.title.x, L.title.xanchor,
                  /^<b>.*<[/]b>$/.test(L.title.text)],
          legend: L.legend ? [L.legend.font.color, L.legend.font.size, L.legend.bgcolor] : null,
          hover: [L.hoverlabel.bgcolor, L.hoverlabel.bordercolor, L.hoverlabel.font.color],
          inPlace: gd.classList.contains('attnviz-plotly')}; }"""


def test_a_bar_chart_drawn_in_place_looks_as_streamlits(page, app_server):
    open_path(page, app_server, "/entropy?model_choice=minilm&lens=weights")
    streamlit = page.evaluate(LOOK, ".st-key-en_bars")
    open_path(page, app_server, "/rollout?model_choice=minilm&lens=weights&ro_layer=1")
    here = page.evaluate(LOOK, ".st-key-ro_bars")
    assert not streamlit.pop("inPlace") and here.pop("inPlace")
    assert here == streamlit
    assert here["x"][:2] == [False, False] and here["title"][-1]  # no vertical grid or zero line; a bold title


COLOUR_BAR = """(sel) => { const gd = document.querySelector(sel + ' .js-plotly-plot'), c = gd._fullData[0].colorbar;
  return [c.outlinewidth, c.outlinecolor, c.thickness, c.len, c.tickfont.color, c.tickfont.size, c.title.font.color,
          c.title.font.size, gd._fullLayout.xaxis.ticks, gd._fullLayout.yaxis.ticks]; }"""


def test_a_heatmap_drawn_in_place_has_streamlits_colour_bar(page, app_server):
    open_path(page, app_server, "/entropy?model_choice=minilm&lens=weights")
    streamlit = page.evaluate(COLOUR_BAR, ".st-key-en_grid")
    open_path(page, app_server, "/rollout?model_choice=minilm&lens=weights&ro_layer=1")
    assert page.evaluate(COLOUR_BAR, ".st-key-ro_raw") == streamlit


# the distances Streamlit's theme gives in rem: they grow with presentation mode's larger root font
SPACING = """(sel) => { const L = document.querySelector(sel + ' .js-plotly-plot')._fullLayout;
  return {pad: L.margin.pad, title: L.title.pad.l, x: L.xaxis.title.standoff, y: L.yaxis.title.standoff,
          ticks: [L.xaxis.ticks, L.yaxis.ticks]}; }"""


def test_in_presentation_mode_a_chart_drawn_in_place_keeps_streamlits_spacing(page, app_server):
    open_path(page, app_server, "/entropy?model_choice=minilm&lens=weights&present=1")
    streamlit = page.evaluate(SPACING, ".st-key-en_bars")
    open_path(page, app_server, "/rollout?model_choice=minilm&lens=weights&ro_layer=1&present=1")
    here = page.evaluate(SPACING, ".st-key-ro_bars")
    assert here == streamlit
    assert streamlit["pad"] == 10.5 and streamlit["y"] == 31.5  # 0.5 and 1.5 rem of a 21 px root


KIND = """(sel) => { const box = document.querySelector(sel);
  return box.querySelector('.attnviz-plotly') ? 'in place' : box.querySelector('[data-testid="stPlotlyChart"]') ? 'streamlit' : null; }"""


def test_a_slide_draws_its_figures_in_place_except_those_it_reads_clicks_from(page, app_server):
    """Presentation mode: the bars are drawn in place (cheaper to build on every slide step); the head grid, whose
    clicks the page reads from Streamlit's selection, stays a Streamlit chart; outside it, the bars are Streamlit's."""
    open_path(page, app_server, "/entropy?model_choice=minilm&lens=weights&present=1")
    assert (page.evaluate(KIND, ".st-key-en_bars"), page.evaluate(KIND, ".st-key-en_grid")) == ("in place", "streamlit")
    open_path(page, app_server, "/entropy?model_choice=minilm&lens=weights")
    assert (page.evaluate(KIND, ".st-key-en_bars"), page.evaluate(KIND, ".st-key-en_grid")) == ("streamlit", "streamlit")


STORE = "attnviz-margins"  # where the browser keeps them (ui.plotly_bytes)
# the margins plotly drew a figure with, and whether it was given them (its axes' automargin off) or worked them out
MARGINS = """(sel) => { const gd = document.querySelector(sel + ' .js-plotly-plot'), s = gd._fullLayout._size;
  return {given: gd.layout.xaxis.automargin === false && gd.layout.yaxis.automargin === false,
          size: [s.l, s.r, s.t, s.b, s.w, s.h], asked: [gd.layout.margin.l, gd.layout.margin.b]}; }"""


def test_a_figure_with_the_labels_of_one_drawn_before_is_drawn_with_the_margins_plotly_worked_out_for_it(
        page, app_server, browser):
    """The heatmap's map, first drawn with plotly's automatic margins (it widens them for the labels, then draws
    again), comes back after another page changed the head with those margins given: another head's weights over
    the same tokens, in the same plot area, one draw. The browser keeps them for the site: the page loaded again,
    and opened in another tab, draws with them given; a browser that has not drawn it works out the same ones."""
    box = ".st-key-hm_heatmap"
    path = "/heatmap?model_choice=minilm&lens=weights&layer=1&head=2"
    open_path(page, app_server, path)
    look_at(page, "hm_heatmap")
    first = page.evaluate(MARGINS, box)
    assert not first["given"]
    # plotly widened the margins the figure asked for, to fit its labels
    assert first["size"][0] > first["asked"][0] or first["size"][3] > first["asked"][1], first
    nav_to(page, "Query · key")
    choose(page, "Head", "5")  # the shared head: the heatmap shows it when gone back to
    wait_for_app(page)
    nav_to(page, "Attention heatmap")
    page.get_by_role("heading", name="Layer 1, head 5").first.wait_for(timeout=30_000)
    look_at(page, "hm_heatmap")
    again = page.evaluate(MARGINS, box)
    assert again["given"] and again["size"] == first["size"], (again, first)
    page.wait_for_function(f"() => (localStorage.getItem('{STORE}') || '').length > 2", timeout=10_000)
    open_path(page, app_server, path)
    look_at(page, "hm_heatmap")
    reloaded = page.evaluate(MARGINS, box)
    assert reloaded["given"] and reloaded["size"] == first["size"], (reloaded, first)
    tab = page.context.new_page()
    try:
        open_path(tab, app_server, path)
        look_at(tab, "hm_heatmap")
        other = tab.evaluate(MARGINS, box)
    finally:
        tab.close()
    assert other["given"] and other["size"] == first["size"], (other, first)
    elsewhere = browser.new_context(viewport=page.viewport_size)
    try:
        fresh_page = elsewhere.new_page()
        open_path(fresh_page, app_server, path)
        look_at(fresh_page, "hm_heatmap")
        fresh = fresh_page.evaluate(MARGINS, box)
    finally:
        elsewhere.close()
    assert not fresh["given"] and fresh["size"] == first["size"], (fresh, first)


def test_a_damaged_store_of_margins_is_started_again(page, app_server):
    """Margins stored by another version of the page, or damaged, are not read: the figure works its own out, and
    the store is written again as a list of (digest, margins) pairs."""
    path = "/heatmap?model_choice=minilm&lens=weights&layer=1&head=2"
    open_path(page, app_server, "/")
    page.evaluate(f"() => localStorage.setItem('{STORE}', '{{not json')")
    open_path(page, app_server, path)
    look_at(page, "hm_heatmap")
    assert not page.evaluate(MARGINS, ".st-key-hm_heatmap")["given"]
    page.wait_for_function(f"() => (localStorage.getItem('{STORE}') || '').startsWith('[[')", timeout=10_000)
    stored = page.evaluate(f"() => JSON.parse(localStorage.getItem('{STORE}'))")
    assert stored and all(len(e) == 2 and set(e[1]) == {"l", "r", "t", "b"} for e in stored), stored[:3]


# the drawn map's colour range, and the one plotly.js finds for the same values when given no range
SPAN = """(sel) => { const gd = document.querySelector(sel + ' .js-plotly-plot'), t = gd._fullData[0];
  const div = document.createElement('div'); document.body.appendChild(div);
  return Plotly.newPlot(div, [{type: 'heatmap', z: t.z}]).then(() => {
    const own = [div._fullData[0].zmin, div._fullData[0].zmax]; Plotly.purge(div); div.remove();
    return {drawn: [t.zmin, t.zmax, t.zauto], own: own, cells: t.z.length * t.z[0].length}; }); }"""


def test_a_map_sent_with_its_datas_span_is_coloured_as_plotly_would_colour_it(page, app_server):
    """The token focus's maps leave their range to plotly.js; sent as bytes (a long text), they carry the range
    plotly.js would find itself, and plotly.js draws them with it."""
    from urllib.parse import quote

    from attnviz.examples import long_text

    text = " ".join(long_text().split()[:300])
    open_path(page, app_server, f"/heatmap?model_choice=minilm&lens=weights&text={quote(text)}")
    page.wait_for_selector(".st-key-hm_focus_out .js-plotly-plot")
    span = page.evaluate(SPAN, ".st-key-hm_focus_out")
    assert span["cells"] > 2048  # large enough to go as bytes
    assert span["drawn"][2] is False and span["drawn"][:2] == span["own"]
    assert 0 <= span["own"][0] < span["own"][1] <= 1
