"""Chromium: a long input's token axes label only as many tokens as stand apart at the chart's width. On the heatmap
page at 512 tokens no two neighbouring labels of the head's map or the token focus's maps overlap (their rendered
boxes, slant and all), the labels kept are every k-th token from the first, hover still names a token left
unlabelled, and a short sentence keeps every label. The same on the Trust page's token scores, beside its
explanation, at 60 tokens (which the server labels one by one)."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from attnviz.bench.browser import long_input, short_text
from attnviz.examples import long_text
from tests.browser.helpers import hover_label, look_at, open_path
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

# Each tick label of one axis of the chart in the box of `key`, in order: its text and the four corners of its
# rendered box on the screen (its own box through its slant), and the axis's categories and kept values.
LABELS = """([key, axis]) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const ax = gd._fullLayout[axis + 'axis'];
  const labels = [...gd.querySelectorAll(`.${axis}tick text`)].map(t => {
    const b = t.getBBox(), m = t.getScreenCTM();
    const at = (x, y) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f];
    return {text: t.textContent, corners: [at(b.x, b.y), at(b.x + b.width, b.y),
                                           at(b.x + b.width, b.y + b.height), at(b.x, b.y + b.height)]};
  });
  return {labels, tickvals: ax.tickvals, ticktext: ax.ticktext, n: (ax._categories || []).length};
}"""


def _shrunk(corners, share=0.15):
    """The box with its height (the line's, leading included) cut by `share`, about its middle."""
    p0, p1, p2, p3 = (tuple(c) for c in corners)
    cut = [(p3[0] - p0[0]) * share / 2, (p3[1] - p0[1]) * share / 2]
    return [(p0[0] + cut[0], p0[1] + cut[1]), (p1[0] + cut[0], p1[1] + cut[1]),
            (p2[0] - cut[0], p2[1] - cut[1]), (p3[0] - cut[0], p3[1] - cut[1])]


def _overlap(a, b) -> bool:
    """Whether two convex quadrilaterals overlap (no separating axis among their edges' normals)."""
    for poly in (a, b):
        for i in range(4):
            (x0, y0), (x1, y1) = poly[i], poly[(i + 1) % 4]
            nx, ny = y0 - y1, x1 - x0
            pa = [nx * x + ny * y for x, y in a]
            pb = [nx * x + ny * y for x, y in b]
            if max(pa) <= min(pb) or max(pb) <= min(pa):
                return False
    return True


def _axis(page, key: str, axis: str) -> dict:
    look_at(page, key)
    return page.evaluate(LABELS, [key, axis])


def _check_apart(got: dict, where: str) -> None:
    boxes = [_shrunk(lab["corners"]) for lab in got["labels"]]
    clashes = [(got["labels"][i]["text"], got["labels"][i + 1]["text"])
               for i in range(len(boxes) - 1) if _overlap(boxes[i], boxes[i + 1])]
    assert not clashes, f"{where}: {len(clashes)} neighbouring labels overlap, e.g. {clashes[:3]}"


def _check_every_kth(got: dict, where: str) -> int:
    positions = [int(str(v).split(":")[0]) for v in got["tickvals"]]
    steps = {b - a for a, b in zip(positions, positions[1:])}
    assert positions[0] == 0 and len(steps) == 1, f"{where}: labels at {positions[:10]}…"
    assert [lab["text"] for lab in got["labels"]] == [str(t) for t in got["ticktext"]], where
    return steps.pop()


def test_a_long_inputs_token_labels_stand_apart_and_hover_names_every_token(page, app_server):
    open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights&layer=1&head=2&text=" + quote(long_input(0)))
    wait_for_app(page)
    for key in ("hm_heatmap", "hm_focus_out", "hm_focus_in"):
        for axis in ("x", "y") if key == "hm_heatmap" else ("x",):
            got = _axis(page, key, axis)
            where = f"{key} {axis}"
            assert got["n"] == 512, f"{where}: {got['n']} tokens on the axis"
            step = _check_every_kth(got, where)
            # fewer labels than the 512 / 7 the server sends for any width, and still a usable number
            assert 12 <= len(got["labels"]) < 74 and step > 7, f"{where}: {len(got['labels'])} labels, every {step}"
            _check_apart(got, where)
    # a query and a key whose tokens carry no label are still named by the hover
    step = _check_every_kth(_axis(page, "hm_heatmap", "y"), "hm_heatmap y")
    label = hover_label(page, "hm_heatmap", step + 1, step + 2)
    assert f"query {step + 1}:" in label and f"key {step + 2}:" in label, label


def test_the_trust_pages_token_scores_keep_their_labels_apart(page, app_server):
    text = " ".join(long_text().split()[:50])
    open_path(page, app_server, f"/trust?model_choice=minilm&trust_random=false&text={quote(text)}")
    page.get_by_role("button", name="▶ Run").click()
    page.locator(".st-key-trust_scores .js-plotly-plot").first.wait_for(timeout=300_000)
    wait_for_app(page, 120)
    got = _axis(page, "trust_scores", "x")
    n = page.evaluate("() => document.querySelector('.st-key-trust_scores .js-plotly-plot')._fullData[0].z[0].length")
    assert 40 < n <= 80, f"{n} tokens: the server would label them all"
    step = _check_every_kth(got, "trust_scores x")
    assert step > 1 and len(got["labels"]) >= 8, f"{len(got['labels'])} labels of {n}, every {step}"
    _check_apart(got, "trust_scores x")


def test_a_short_sentence_keeps_every_label(page, app_server):
    open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights&layer=1&head=2&text=" + quote(short_text(0)))
    wait_for_app(page)
    for axis in ("x", "y"):
        got = _axis(page, "hm_heatmap", axis)
        assert got["n"] == 16 and len(got["labels"]) == 16, f"{axis}: {len(got['labels'])} of {got['n']} labelled"
        assert _check_every_kth(got, f"hm_heatmap {axis}") == 1
        _check_apart(got, f"hm_heatmap {axis}")
