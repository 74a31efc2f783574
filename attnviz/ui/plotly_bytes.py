"""Plotly figures with large maps, drawn by plotly.js in the page from float32 bytes (plotting.figure_bytes).

st.plotly_chart sends a figure as JSON (a 512 x 512 map's weights are 1.4 MB of base64 text inside it), and
the browser takes every new figure through JSON.stringify, forty string replacements and JSON.parse, twice,
into a new chart: for a 512-token head that took longer than the server's whole run (docs/performance.md).
Here the figure's JSON goes without its large arrays, which follow it as raw float32 bytes in the same
message, and the chart stays in the page: plotly.js redraws it in place (Plotly.react). The weights are the same
float32 numbers, so the hover shows what it showed. plotly.js itself (the plotly package's own copy) is one of the
app's static files (else a file on its media endpoint), loaded once per page and kept by the browser, so nothing
comes from off the machine. The exports (ui.figure.show_figure) are made from the figure on the server as before.

A token axis of more than 16 labels keeps, of the labels the server sent (plotting.token_ticks), every k-th from
the first: as many as stand apart at the chart's size. Slanted or upright labels lie side by side across their
line, so each needs its line's height (1.2 font sizes) across it. The plot's length is the one plotly.js laid out
when the chart was last drawn at this width; a chart's first figure takes its size less 150 px, and if plotly.js
lays out a shorter plot, the labels are thinned again (a relayout of the axes alone). Hover still names every
token. While a deck's slide is shown, the page draws the next slide's charts out of sight, to be put back when that
slide shows them (spare, ui.decks). Every element of the component carries its script, which goes without its
comment lines."""
from __future__ import annotations

import streamlit as st

from attnviz.plotting import figure_bytes, plotly_js, plotly_js_copy
from attnviz.ui.present import STREAMLIT_ROOT_PX, root_px as page_root_px

FONT = '"Source Sans", sans-serif'
TEXT, TITLE, LINE = "#808495", "#2F2D2B", "#e6eaf1"

# Streamlit's plotly theme as the browser resolves it for the light theme (what st.plotly_chart's figures get),
# for the parts of a map, a bar or a line chart: fonts, axes, hover label, colour bar, colours, legend
THEME = {
    "font": {"family": FONT, "size": 12, "color": TEXT},
    "title": {"font": {"family": FONT, "size": 16, "color": TITLE}, "pad": {"l": 4}, "xanchor": "left", "x": 0},
    "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)",  # the page's own background shows
    "hoverlabel": {"bgcolor": "#FFFFFF", "bordercolor": "#DCD8D4", "font": {"family": FONT, "size": 12, "color": TEXT}},
    "xaxis": {"tickfont": {"color": TEXT, "size": 12}, "title": {"font": {"color": TEXT, "size": 14}, "standoff": 20},
              "showgrid": False, "zeroline": False, "gridcolor": LINE, "tickcolor": LINE, "zerolinecolor": LINE,
              "automargin": True},
    "yaxis": {"tickfont": {"color": TEXT, "size": 12}, "title": {"font": {"color": TEXT, "size": 14}, "standoff": 24},
              "gridcolor": LINE, "tickcolor": LINE, "zerolinecolor": LINE, "automargin": True},
    "margin": {"pad": 8},
    # bars and lines without colours of their own, and legends, as Streamlit's theme draws them
    "colorway": ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0",
                 "#d5dae5"],
    "legend": {"font": {"family": FONT, "size": 12, "color": "#262730"}, "bgcolor": "#FFFFFF",
               "bordercolor": "rgba(0,0,0,0)"},
    # plotly derives the toolbar's colours from the paper's, which is transparent here: these are its own for white
    "modebar": {"bgcolor": "rgba(255,255,255,0.5)", "color": "rgba(68,68,68,0.3)", "activecolor": "rgba(68,68,68,0.7)"},
}
COLORBAR = {"title": {"font": {"color": TEXT, "size": 14}}, "tickfont": {"color": TEXT, "size": 12}}

_JS = r"""
const loading = {};
function plotlyFrom(url) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading[url]) {
    loading[url] = new Promise((ok, fail) => {
      const s = document.createElement('script');
      s.src = url;
      s.onload = () => ok(window.Plotly);
      s.onerror = () => { delete loading[url]; fail(new Error('plotly.js did not load from ' + url)); };
      document.head.appendChild(s);
    });
  }
  return loading[url];
}

// a message's description (JSON after its length) and where it ends
function header(bytes) {
  const n = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
  return [JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + n))), 4 + n];
}

function unpack(bytes, [spec, n] = header(bytes)) {
  let at = n + ((4 - (n % 4)) % 4);
  const end = spec.arrays.reduce((sum, a) => sum + 4 * a.shape.reduce((x, y) => x * y, 1), at);
  // after the figure, the shapes drawn over it on this run (a frame around the chosen item)
  spec.overlay = end < bytes.length ? new TextDecoder().decode(bytes.subarray(end)) : '[]';
  for (const a of spec.arrays) {
    const size = a.shape.reduce((x, y) => x * y, 1);
    const flat = new Float32Array(bytes.slice(at, at + 4 * size).buffer);  // a copy: the message's bytes are not aligned
    at += 4 * size;
    let value = flat;
    if (a.shape.length === 2) {
      value = [];
      for (let i = 0; i < a.shape[0]; i++) value.push(flat.subarray(i * a.shape[1], (i + 1) * a.shape[1]));
    }
    spec.figure.data[a.trace][a.field] = value;
  }
  return spec;
}

// the toolbar's Fullscreen button, as Streamlit's own charts have it: the chart fills the screen until Esc
const EXPAND = {width: 512, height: 512,
                path: 'M0 0h192v64H64v128H0zM320 0h192v192h-64V64H320zM0 320h64v128h128v64H0zM448 320h64v192H320v-64h128z'};
function fullscreen(Plotly, gd) {
  if (!gd.__attnvizFullscreen) {
    gd.__attnvizFullscreen = true;
    gd.addEventListener('fullscreenchange', () => {
      const full = document.fullscreenElement === gd;
      gd.style.background = full ? 'white' : '';
      Plotly.relayout(gd, full ? {width: window.innerWidth, height: window.innerHeight}
                               : {width: gd.parentElement.clientWidth, height: gd.__attnvizHeight});
    });
  }
  return {name: 'Fullscreen', title: 'Fullscreen', icon: EXPAND,
          click: () => (document.fullscreenElement === gd ? document.exitFullscreen() : gd.requestFullscreen())};
}

// A map kept in the browser's storage for this site under the name given: its latest entries (up to the limit),
// written at most once a second (once after a run's charts are drawn), merged with what other tabs wrote since this
// page loaded. Only the stored (text, value) pairs that clean() accepts are read (another version of the page, or a
// damaged store, may have left anything there); a browser that refuses storage (a private window may) keeps them for
// the page's life.
function keptMap(name, limit, clean) {
  const map = new Map();
  const stored = () => {
    let saved;
    try { saved = JSON.parse(localStorage.getItem(name) || '[]'); } catch (e) { return []; }
    if (!Array.isArray(saved)) return [];
    const out = [];
    for (const e of saved) {
      const value = Array.isArray(e) && typeof e[0] === 'string' ? clean(e[1]) : null;
      if (value !== null) out.push([e[0], value]);
    }
    return out;
  };
  for (const [k, v] of stored()) map.set(k, v);
  let saving = null;
  map.keep = (key, value) => {
    map.delete(key);
    map.set(key, value);
    if (map.size > limit) map.delete(map.keys().next().value);  // the oldest
    if (saving === null) {
      saving = setTimeout(() => {
        saving = null;
        const all = new Map(stored());
        for (const [k, v] of map) { all.delete(k); all.set(k, v); }
        try { localStorage.setItem(name, JSON.stringify([...all].slice(-limit))); } catch (e) { }
      }, 1000);
    }
  };
  return map;
}
// the margins plotly worked out for a figure's labels, by a digest of what they depend on (marginKey): a page loaded
// again, a link opened in another tab or a deck presented again draws a figure laid out before once, as a figure
// shown again in the same page is
const MARGINS = keptMap('attnviz-margins', 500, (m) => (
  !!m && ['l', 'r', 't', 'b'].every(k => Number.isFinite(m[k]) && m[k] >= 0) ? {l: m.l, r: m.r, t: m.t, b: m.b} : null));
// the width each chart on a deck's slide (by its element's key) had in a window of this width and root font size: where
// the slide before draws it out of sight (spare charts, below)
const WIDTHS = keptMap('attnviz-widths', 500, (w) => (Number.isFinite(w) && w > 0 ? w : null));
function widthKey(key) {
  return key + '|' + window.innerWidth + '|' + getComputedStyle(document.documentElement).fontSize;
}

// A short name for a long text: two 32-bit multiplicative hashes of its characters and its length (a long input's
// labels make a description of hundreds of kilobytes, which the page need not keep).
function digest(text) {
  let a = 0x811c9dc5, b = 0x9747b28c;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 16777619);
    b = Math.imul(b ^ c, 2246822519);
  }
  return (a >>> 0).toString(36) + ':' + (b >>> 0).toString(36) + ':' + text.length;
}

// What a figure's margins depend on: its width, its layout (aside from the shapes and pictures drawn over it, which
// push no margin, and its title unless it may) and each trace's axes, labels, colour bar and legend entry; not the
// values it shows.
function marginKey(layout, data, width) {
  const {shapes, images, title, ...rest} = layout;
  return digest(JSON.stringify([width, rest, title && title.automargin ? title : null, data.map(t => [
    t.type, t.x, t.y, t.xaxis, t.yaxis, t.orientation, t.colorbar, t.showscale, t.coloraxis,
    t.marker && [t.marker.colorbar, t.marker.showscale], t.name, t.showlegend, t.legendgroup])]));
}

// Of a token axis's labels, as many as stand apart at the chart's size (docs/decisions.md).
const OUTSIDE = 150;
const FEW = 16;
const LINE = 1.2;
function tokenAxis(ax) {
  return !!ax && ax.tickmode === 'array' && Array.isArray(ax.tickvals) && ax.tickvals.length > FEW;
}
function thinned(ax, x, length, layout) {
  const slant = Math.abs((ax.tickangle || 0) * Math.PI / 180);
  const across = x ? Math.sin(slant) : Math.cos(slant);
  if (across < 0.5) return null;
  const font = (ax.tickfont && ax.tickfont.size) || (layout.font && layout.font.size) || 12;
  const k = Math.ceil(ax.tickvals.length / Math.max(2, Math.floor(length * across / (LINE * font))));
  if (k <= 1) return null;
  const every = (_, i) => i % k === 0;
  return {tickvals: ax.tickvals.filter(every), ...(Array.isArray(ax.ticktext) ? {ticktext: ax.ticktext.filter(every)} : {})};
}
function spacedTicks(gd, layout, width, height) {
  const sent = {};
  for (const name of Object.keys(layout)) {
    const ax = layout[name];
    if (!/^[xy]axis\d*$/.test(name) || !tokenAxis(ax)) continue;
    sent[name] = ax;
    const x = name[0] === 'x', domain = ax.domain || [0, 1];
    const last = gd.__attnvizWidth === width && gd._fullLayout && gd._fullLayout[name];
    const length = last && last._length || Math.max(0, ((x ? width : height) - OUTSIDE) * (domain[1] - domain[0]));
    const t = thinned(ax, x, length, layout);
    if (t) layout[name] = {...ax, ...t};
  }
  return sent;
}
async function respaced(Plotly, gd, layout, sent) {
  const fix = {};
  for (const [name, ax] of Object.entries(sent)) {
    const full = gd._fullLayout && gd._fullLayout[name];
    const t = full && full._length && thinned(ax, name[0] === 'x', full._length, layout);
    if (!t || t.tickvals.length >= layout[name].tickvals.length) continue;
    fix[name + '.tickvals'] = t.tickvals;
    if (t.ticktext) fix[name + '.ticktext'] = t.ticktext;
  }
  if (Object.keys(fix).length) await Plotly.relayout(gd, fix);
}

function withOverlay(layout, overlay) {
  return [...(layout.shapes || []), ...JSON.parse(overlay)];
}

// A chart far from the window is not drawn again when a run sends it a new figure: the figure waits on the chart
// (data-deferred) and is drawn when the reader's scrolling brings the chart within half a window height of the
// window (NEAR, over the box that scrolls the page), when the browser starts rendering it (content-visibility), or
// when the page is printed. Its first figure is always drawn. A chart in a part of the page that is not shown at
// all (a closed tab or expander), or rendered wherever it lies (content-visibility other than auto), is drawn as
// before.
const NEAR = '50% 0px';
const nearness = new Map();  // the box that scrolls the page -> an IntersectionObserver over it
function scroller(el) {
  // Streamlit's main area and sidebar scroll in boxes of their own (each element's own box has overflow: auto too)
  return el.closest('[data-testid="stMain"], [data-testid="stSidebarContent"]');  // else the window
}
function watchNearness(gd) {
  const root = scroller(gd);
  let observer = nearness.get(root);
  if (!observer) {
    for (const [box, old] of nearness) if (box && !box.isConnected) { old.disconnect(); nearness.delete(box); }
    observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.target.isConnected) { observer.unobserve(e.target); continue; }  // a chart the page removed
        e.target.__attnvizNear = e.isIntersecting;
        if (e.isIntersecting) drawWaiting(e.target);
      }
    }, {root, rootMargin: NEAR});
    nearness.set(root, observer);
  }
  observer.observe(gd);
}
function far(gd) {
  return gd.__attnvizNear === false && gd.checkVisibility() && getComputedStyle(gd).contentVisibility === 'auto';
}
function takeWaiting(gd) {  // the figure waiting on the chart (its drawing), which no longer waits
  const waiting = gd.__attnvizWaiting;
  gd.__attnvizWaiting = null;
  delete gd.dataset.deferred;
  return waiting;
}
function drawWaiting(gd) {
  const waiting = takeWaiting(gd);
  if (waiting) waiting();
}
// The charts drawn in this page, by the digest of the figure each shows, with the size of its message (the last
// drawn, at most DRAWN_KEPT of them and DRAWN_BYTES of messages: a 512-token map's is 1.3 MB): a chart the page
// removed (another slide or page was shown) that is asked for again with the same figure at the same width (the
// slide shown again, the page gone back to) is put back as it was drawn, instead of drawn again.
const DRAWN = new Map();
const DRAWN_KEPT = 48;
const DRAWN_BYTES = 16e6;
let drawnBytes = 0;
function forgetDrawn(digest) {
  const kept = DRAWN.get(digest);
  if (kept) {
    drawnBytes -= kept.size;
    DRAWN.delete(digest);
    if (kept.gd.__attnvizSpare && kept.gd.parentElement) kept.gd.parentElement.remove();  // drawn out of sight
  }
}
function keepDrawn(gd, digest, size) {
  forgetDrawn(digest);
  DRAWN.set(digest, {gd, size});
  drawnBytes += size;
  const budget = window.__attnvizDrawnBytes || DRAWN_BYTES;  // a page may set a smaller budget (a test does)
  while (DRAWN.size > DRAWN_KEPT || (drawnBytes > budget && DRAWN.size > 1)) {
    forgetDrawn(DRAWN.keys().next().value);  // the oldest
  }
}
function drawnBefore(digest, parentElement) {
  for (const {gd: kept} of DRAWN.values()) {  // a removed chart lets go of the removed page around it
    if (!kept.isConnected && kept.parentNode) kept.remove();
  }
  const gd = (DRAWN.get(digest) || {}).gd;
  if (!gd || (gd.isConnected && !gd.__attnvizSpare) || gd.dataset.digest !== digest
      || gd.__attnvizWidth !== parentElement.clientWidth) {
    return null;
  }
  return gd;
}

function newChart() {
  const gd = document.createElement('div');
  gd.className = 'attnviz-plotly';
  gd.style.width = '100%';
  return gd;
}
// the browser lays out and paints a chart in the page only while it is in or near the window: a rerun that draws the
// page's charts again does not also render those the reader has scrolled away from (its height is its own)
function rendersNear(gd) {
  if (gd.__attnvizRendersNear) return;
  gd.__attnvizRendersNear = true;
  gd.style.contentVisibility = 'auto';
  gd.addEventListener('contentvisibilityautostatechange', (e) => { if (!e.skipped) drawWaiting(gd); });
}

// A deck's next slide: the charts its page last drew on this server, sent with the slide before (ui.decks). Once
// this page's own charts are drawn and the browser is idle (the lecturer is still talking), each is drawn out of
// sight at the width its element had in this browser at this window size (WIDTHS) and kept among the drawn charts,
// so the next slide puts it back instead of drawing it. A chart whose width is not known here is drawn when its
// slide is shown. The page carries data-spare-drawing until they are drawn; a newer slide's charts stop an older
// slide's, and spare charts no longer wanted are dropped.
let spareTurn = 0;
function pageIdle() {
  return new Promise((done) => {
    const check = () => {
      const app = document.querySelector('[data-testid="stApp"]');
      if (document.querySelector('.attnviz-plotly[data-drawing]')
          || (app && app.getAttribute('data-test-script-state') === 'running')) {
        setTimeout(check, 50);
      } else if (window.requestIdleCallback) {
        requestIdleCallback(() => done(), {timeout: 500});
      } else {
        setTimeout(done, 0);
      }
    };
    check();
  });
}
async function spareCharts(items, bytes) {
  const turn = ++spareTurn;
  const root = document.documentElement;
  root.dataset.spareDrawing = '1';
  try {
    await pageIdle();  // this page's own charts first: they may put back spare charts drawn for them
    if (turn !== spareTurn) return;
    const todo = [], wanted = new Set();
    for (const [key, from, to] of items) {
      const message = bytes.subarray(from, to), head = header(message), digest = head[0].digest;
      wanted.add(digest);
      const width = WIDTHS.get(widthKey(key)), kept = DRAWN.get(digest);
      if (width && !(kept && kept.gd.__attnvizWidth === Math.round(width)
                     && (kept.gd.__attnvizSpare || !kept.gd.isConnected))) {
        const spec = unpack(message, head);  // its arrays only for a chart to draw
        spec.size = to - from;
        todo.push([spec, width]);
      }
    }
    for (const host of document.querySelectorAll('body > .attnviz-spare')) {
      const gd = host.firstChild;
      if (gd && wanted.has(gd.dataset.digest)) continue;
      if (gd && (DRAWN.get(gd.dataset.digest) || {}).gd === gd) forgetDrawn(gd.dataset.digest);
      host.remove();
    }
    for (const [spec, width] of todo) {
      await pageIdle();
      if (turn !== spareTurn) return;
      const host = document.createElement('div');
      host.className = 'attnviz-spare';
      host.style.cssText = 'position: fixed; left: -100000px; top: 0; visibility: hidden; pointer-events: none; '
                           + 'width: ' + width + 'px';
      const gd = newChart();
      const height = spec.figure.layout.height || 450;
      gd.style.height = height + 'px';
      gd.__attnvizSpare = true;
      host.__attnvizTurn = 1;
      host.appendChild(gd);
      document.body.appendChild(host);
      await draw(gd, spec, host, 1, height);
      if (gd.dataset.digest !== spec.digest) host.remove();  // not drawn (plotly.js did not load)
    }
  } finally {
    if (turn === spareTurn) delete root.dataset.spareDrawing;
  }
}

window.addEventListener('beforeprint', () => {
  for (const gd of document.querySelectorAll('.attnviz-plotly[data-deferred]')) drawWaiting(gd);
});

export default async function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const head = header(bytes);
  if (head[0].spare) {  // a deck's next slide's charts, to draw out of sight
    spareCharts(head[0].spare, bytes.subarray(head[1]));
    return;
  }
  const turn = (parentElement.__attnvizTurn || 0) + 1;
  parentElement.__attnvizTurn = turn;
  const spec = unpack(bytes, head);
  spec.size = bytes.length;
  let gd = parentElement.querySelector(':scope > .attnviz-plotly') || drawnBefore(spec.digest, parentElement);
  if (gd && (!gd.isConnected || gd.__attnvizSpare)) {  // a chart drawn before (or out of sight), put back
    const host = gd.__attnvizSpare ? gd.parentElement : null;
    gd.__attnvizSpare = false;
    parentElement.appendChild(gd);
    if (host) host.remove();
    gd.__attnvizNear = undefined;  // until the page's observer says where it now lies
    gd.__attnvizWatched = false;  // observed again where it now is
    rendersNear(gd);
  } else if (!gd) {
    gd = newChart();
    rendersNear(gd);
    parentElement.appendChild(gd);
  }
  if (!gd.__attnvizWatched && gd.isConnected) {  // from the chart's first figure on
    gd.__attnvizWatched = true;
    watchNearness(gd);
  }
  gd.__attnvizClick = setTriggerValue;  // the current run's: a click reports through it
  takeWaiting(gd);  // a figure that waited is superseded by this one
  if (gd.dataset.digest === spec.digest) {  // the same figure again (a rerun that did not change it)
    if (gd.__attnvizOverlay !== spec.overlay && window.Plotly) {  // only what is drawn over it moved
      gd.__attnvizOverlay = spec.overlay;
      await window.Plotly.relayout(gd, {shapes: withOverlay(gd.__attnvizBase, spec.overlay)});
    }
    return;
  }
  const height = spec.figure.layout.height || 450;
  gd.style.height = height + 'px';  // its place is kept while plotly.js loads
  const drawNow = async () => {
    if (parentElement.__attnvizTurn !== turn) return;  // a newer figure came
    gd.dataset.drawing = '1';  // until this figure is drawn (a page that waits for its charts reads it)
    try { await draw(gd, spec, parentElement, turn, height); } finally {
      if (parentElement.__attnvizTurn === turn) delete gd.dataset.drawing;
    }
  };
  if (gd.dataset.digest && far(gd)) {
    gd.__attnvizWaiting = drawNow;
    gd.dataset.deferred = '1';
    return;
  }
  await drawNow();
}

async function draw(gd, spec, parentElement, turn, height) {
  let Plotly;
  try {
    Plotly = await plotlyFrom(spec.plotly);
  } catch (e) {
    gd.textContent = 'The figure could not be drawn: ' + e.message + '. Reload the page.';
    return;
  }
  if (parentElement.__attnvizTurn !== turn) return;  // a newer figure came while plotly.js loaded
  const layout = spec.figure.layout;
  if (typeof layout.title === 'string') layout.title = {text: layout.title};
  if (layout.title && layout.title.text && !layout.title.text.startsWith('<b>')) {
    layout.title.text = '<b>' + layout.title.text + '</b>';  // in bold, as Streamlit's charts write their titles
  }
  // A figure laid out before at this width (another head of the same text, a lens switched back, a page gone back
  // to after its head was changed on another page): its margins are the ones plotly worked out for its labels then,
  // so it draws once instead of drawing, widening the margins and drawing again.
  const width = parentElement.clientWidth;
  // on a deck's slide (the only page whose charts are drawn ahead), where this chart's width is kept: read with the
  // width, before plotly.js changes the page, as a column's exact width (a fraction of a pixel, maybe)
  const widthAt = spec.key && !gd.__attnvizSpare && document.querySelector('[data-testid="deck-bar"]')
    ? [widthKey(spec.key), parentElement.getBoundingClientRect().width] : null;
  const sent = spacedTicks(gd, layout, width, layout.height || height);
  const marginsKey = marginKey(layout, spec.figure.data, width);
  const known = MARGINS.get(marginsKey);
  if (known) {
    layout.margin = {...(layout.margin || {}), ...known};
    layout.xaxis = {...layout.xaxis, automargin: false};
    layout.yaxis = {...layout.yaxis, automargin: false};
  }
  gd.__attnvizHeight = height;
  // The same config object as the last draw when it asks for the same: plotly.js diffs configs by value, functions
  // (the Fullscreen button's) by identity, and draws a changed one from scratch (a new head's map took 2-3 times as
  // long, its axes and colour bar laid out again). The PNG button's options (the file name names the head shown)
  // change inside the object plotly keeps, so they never count as a change.
  const {toImageButtonOptions: image, ...rest} = spec.config;
  const configKey = JSON.stringify(rest);
  if (gd.__attnvizConfigKey !== configKey) {
    // as Streamlit's charts: no "Share chart" (it would send the data to a web service), no lasso or box select
    const config = {...rest, toImageButtonOptions: {}, showSendToCloud: false, showEditInChartStudio: false,
                    modeBarButtonsToRemove: [...(rest.modeBarButtonsToRemove || []), 'sendChartToCloud',
                                             'lasso2d', 'select2d']};
    if (config.displayModeBar !== false) {
      config.modeBarButtonsToAdd = [fullscreen(Plotly, gd), ...(config.modeBarButtonsToAdd || [])];
    }
    gd.__attnvizConfig = config;
    gd.__attnvizConfigKey = configKey;
  }
  const config = gd.__attnvizConfig;
  for (const k of Object.keys(config.toImageButtonOptions)) delete config.toImageButtonOptions[k];
  Object.assign(config.toImageButtonOptions, image || {});
  gd.__attnvizBase = {shapes: layout.shapes || []};
  layout.shapes = withOverlay(layout, spec.overlay);
  await Plotly.react(gd, spec.figure.data, layout, config);
  await respaced(Plotly, gd, layout, sent);
  if (!known && gd._fullLayout && gd._fullLayout._size) {
    const m = gd._fullLayout._size;
    MARGINS.keep(marginsKey, {l: m.l, r: m.r, t: m.t, b: m.b});
  }
  gd.__attnvizOverlay = spec.overlay;
  const shown = DRAWN.get(gd.dataset.digest);
  if (shown && shown.gd === gd) forgetDrawn(gd.dataset.digest);  // the chart no longer shows that figure
  gd.dataset.digest = spec.digest;
  gd.__attnvizWidth = width;
  keepDrawn(gd, spec.digest, spec.size);
  if (widthAt && WIDTHS.get(widthAt[0]) !== widthAt[1]) WIDTHS.keep(widthAt[0], widthAt[1]);
  if (spec.clicks && !gd.__attnvizClicks) {  // a click on a point reports its customdata, as a trigger value
    gd.__attnvizClicks = true;
    gd.on('plotly_click', (event) => {
      const point = event && event.points && event.points[0];
      if (point && point.customdata != null) gd.__attnvizClick('click', point.customdata);
    });
  }
}
"""

NAME = "attnviz_plotly_bytes"  # the component's name, as its elements carry it


def without_comment_lines(js: str) -> str:
    """`js` without its lines that hold only a comment: every element of a component carries its script, and the
    script above is written to be read (it has no template literals, so no such line lies inside a string)."""
    return "\n".join(line for line in js.split("\n") if not line.lstrip().startswith("//"))


_component = st.components.v2.component(NAME, js=without_comment_lines(_JS), isolate_styles=False)


def available() -> bool:
    """Whether a page will run this component's script: a running server's session (not AppTest, whose runtime is
    a stand-in and whose page has no browser)."""
    from streamlit import runtime
    from streamlit.runtime import Runtime

    return runtime.exists() and type(runtime.get_instance()) is Runtime


def plotly_url() -> str:
    """Where a page loads plotly.js from: the app's static files (a copy beside the app's script, which the browser
    keeps between page loads: static_plotly), else the media endpoint, added once on every run that shows such a
    figure, so it stays served (the run is told by its context's cursors, a new dict on every run, which the memo
    holds on to)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return _per_run("_attnviz_plotly_url", lambda: static_plotly(ctx.main_script_path if ctx is not None else None)
                    or _files().add(plotly_js(), "text/javascript", "attnviz-plotly-js"))


def _per_run(name: str, make):
    """make(), made once per run and kept on the run's context under `name` (a run is told by its context's cursors,
    a new dict on every run, which the memo holds on to); made every time outside a run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    memo = getattr(ctx, name, None)
    if ctx is not None and memo is not None and memo[0] is ctx.cursors:
        return memo[1]
    value = make()
    if ctx is not None:
        setattr(ctx, name, (ctx.cursors, value))
    return value


def drawn_this_run() -> dict[str, bytes]:
    """The message of every chart this run has drawn in place so far, by its element's key (the latest for a key)."""
    return _per_run("_attnviz_drawn", dict)


def spare_bundle(messages: dict[str, bytes]) -> bytes:
    """`messages` (by element key) as one message for spareCharts: the length of a JSON header {"spare": [[key,
    start, end], ...]} (little-endian uint32), the header, then the messages one after the other, each at its
    [start, end) counted from the end of the header."""
    import json

    spans, at = [], 0
    for name, message in messages.items():
        spans.append([name, at, at + len(message)])
        at += len(message)
    head = json.dumps({"spare": spans}).encode()
    return len(head).to_bytes(4, "little") + head + b"".join(messages.values())


def spare(messages: dict[str, bytes], key: str) -> None:
    """An element (with no height) that has the page draw `messages` (drawn_this_run() of a deck's next slide) out of
    sight once its own charts are drawn, to be put back when that slide shows them (the script's spareCharts)."""
    _component(data=spare_bundle(messages), key=key, width="stretch", height="content")


# the name of plotly.js's copy in each static folder, or None where it could not be written (checked once per server)
_STATIC_COPIES: dict = {}


def static_plotly(main_script: str | None) -> str | None:
    """The URL of plotly.js among the app's static files (`server.enableStaticServing`: the folder `static` beside
    the app's script, at app/static/ relative to any page), copied there once per server (again if the copy goes
    away); None when static files are not served or the copy cannot be written (a read-only folder).

    The media endpoint sends a file without any caching header, so a page loaded again (a reload, a link opened in
    another tab) downloaded plotly.js's 4.8 MB again and compiled it afresh, and the server compressed it on every
    such load (about 200 ms of its event loop). A static file carries its time of last change, which lets the
    browser keep it (plotting.PLOTLY_COPY_MTIME)."""
    from pathlib import Path

    from streamlit import config

    if not main_script or not config.get_option("server.enableStaticServing"):
        return None
    folder = Path(main_script).resolve().parent / "static"
    if folder not in _STATIC_COPIES or (_STATIC_COPIES[folder] and not (folder / _STATIC_COPIES[folder]).is_file()):
        _STATIC_COPIES[folder] = plotly_js_copy(folder)
    name = _STATIC_COPIES[folder]
    return None if name is None else f"app/static/{name}"


def _files():
    from streamlit import runtime

    return runtime.get_instance().media_file_mgr


def theme(root_px: float = STREAMLIT_ROOT_PX) -> dict:
    """THEME on a page whose root font size is root_px: Streamlit's theme gives the margins' padding, the axis
    titles' distance and the title's indent in rem, so they grow with presentation mode's larger root."""
    import copy

    rem = root_px / STREAMLIT_ROOT_PX
    out = copy.deepcopy(THEME)
    out["margin"]["pad"] *= rem
    out["title"]["pad"]["l"] *= rem
    for axis in ("xaxis", "yaxis"):
        out[axis]["title"]["standoff"] *= rem
    return out


def payload(fig, config: dict, url: str, link=None, clicks: bool = False,
            root_px: float = STREAMLIT_ROOT_PX, key: str | None = None) -> bytes:
    """`fig` as the message the page's script draws (plotting.figure_bytes): its layout over Streamlit's theme (at
    the page's root font size), plotly's config, where plotly.js is, whether a click reports (clicks), the key of
    the element that draws it (its width is kept by the browser) and, with link, large pictures as links."""
    extra = {"config": config, "plotly": url} | ({"clicks": True} if clicks else {}) | ({"key": key} if key else {})
    layout = theme(root_px)
    if not any(t.type == "heatmap" for t in fig.data):  # Streamlit's theme marks ticks on maps only
        for axis in ("xaxis", "yaxis"):
            layout[axis]["ticks"] = ""
    return figure_bytes(fig, extra, layout=layout, colorbar=COLORBAR, link=link)


def _message(fig, key: str, config: dict, clicks: bool) -> bytes:
    """payload() of `fig` with its large pictures on the app's media endpoint (one file per figure and picture, added
    again on every run so that it stays served). A shared figure (ui.cache.figure, read-only) keeps its message, so
    a rerun that shows it again neither serialises it nor encodes its arrays again."""
    files = _files()
    root_px = page_root_px()
    signature = (repr(config), plotly_url(), key, clicks, root_px)
    kept = getattr(fig, "_attnviz_message", None) if getattr(fig, "_attnviz_shared", False) else None
    if kept is not None and kept[0] == signature and all(
            files.add(png, "image/png", name) == url for png, name, url in kept[2]):
        return kept[1]
    pictures = []

    def link(i: int, png: bytes) -> str:
        name = f"attnviz-picture-{key}-{i}"
        url = files.add(png, "image/png", name)
        pictures.append((png, name, url))
        return url

    message = payload(fig, config, signature[1], link=link, clicks=clicks, root_px=root_px, key=key)
    if getattr(fig, "_attnviz_shared", False):
        fig._attnviz_message = (signature, message, pictures)
    return message


def show(fig, key: str, config: dict, *, overlay: list | None = None, on_click=None) -> None:
    """Draw `fig` in an element with the class st-key-<key> (inside it, plotly's own chart div), redrawn in place on
    a later run. overlay: plotly shapes drawn over the figure on this run only (a frame that moves while the
    figure stays: only the shapes are sent again and redrawn); on_click: called on a click on a point, with
    st.session_state[key]["click"] its customdata."""
    import json

    height = fig.layout.height  # its place is kept from the start, so nothing below it moves when plotly draws
    data = _message(fig, key, config, on_click is not None)
    if overlay:
        data += json.dumps(overlay).encode()
    drawn_this_run()[key] = data
    _component(data=data, key=key, width="stretch", height=int(height) if height else "content",
               **({"on_click_change": on_click} if on_click is not None else {}))
