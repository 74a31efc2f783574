"""The shaded-text view: opacity proportional to the weight, escaping, word pieces, bad input."""
import re

import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.heatmap.text_view import shaded_text_html


def _spans(html):
    return re.findall(r'<span title="([^"]*)" data-weight="([^"]+)" style="([^"]*)">([^<]*)</span>', html)


def test_opacity_is_weight_over_the_largest_and_hover_has_the_weight():
    html = shaded_text_html(["[CLS]", "the", "cat", "[SEP]"], [0.1, 0.2, 0.5, 0.2], focus=2,
                            special=[True, False, False, True])
    spans = _spans(html)
    assert [s[3] for s in spans] == ["[CLS]", "the", "cat", "[SEP]"]
    alphas = [float(re.search(r"rgba\([^)]*, ([0-9.]+)\)", s[2]).group(1)) for s in spans]
    assert alphas == pytest.approx([0.2, 0.4, 1.0, 0.4])
    assert [float(s[1]) for s in spans] == pytest.approx([0.1, 0.2, 0.5, 0.2])
    assert "cat (2): weight 0.5000" in spans[2][0]
    assert "outline" in spans[2][2] and "outline" not in spans[1][2]
    assert "color: white" in spans[2][2] and "font-size: 0.8em" in spans[0][2]


def test_word_pieces_join_and_text_is_escaped():
    html = shaded_text_html(["un", "##believ", "##able", "<b>"], [0.25] * 4, continuation=[0, 1, 1, 0])
    assert ">un</span><span" in html and ">believ</span><span" in html  # no space inside a word
    assert "</span> <span" in html  # a space before the next word
    assert "&lt;b&gt;" in html and "<b>" not in html


def test_all_zero_weights_and_bad_input():
    spans = _spans(shaded_text_html(["a", "b"], [0.0, 0.0]))
    assert all("0.000)" in s[2] for s in spans)
    with pytest.raises(BadInput):
        shaded_text_html(["a", "b"], [0.5])
    with pytest.raises(BadInput):
        shaded_text_html(["a", "b"], [0.5, np.nan])
