"""The one click parser (ui.heads.clicked_head): the (layer, head) of a new click on a head grid, once, from the
selection Streamlit keeps under the chart's key; typed arrays and repeated clicks after the selection was cleared."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnviz.ui import heads


@pytest.fixture
def state(monkeypatch):
    session = {}
    monkeypatch.setattr(heads, "st", SimpleNamespace(session_state=session))
    return session


def _select(state, key, *customdata):
    state[key] = {"selection": {"points": [{"customdata": c, "point_index": i} for i, c in enumerate(customdata)]}}


def test_a_new_click_is_returned_once(state):
    assert heads.clicked_head("xy_grid") is None  # nothing drawn yet
    _select(state, "xy_grid", [2, 5])
    assert heads.clicked_head("xy_grid") == (2, 5)
    assert heads.clicked_head("xy_grid") is None  # the selection Streamlit kept is not a new click
    _select(state, "xy_grid", [0, 11])
    assert heads.clicked_head("xy_grid") == (0, 11)


def test_the_same_head_again_after_the_selection_was_cleared(state):
    _select(state, "xy_grid", [4, 1])
    assert heads.clicked_head("xy_grid") == (4, 1)
    _select(state, "xy_grid")  # the visitor left the page and came back: no selection
    assert heads.clicked_head("xy_grid") is None
    _select(state, "xy_grid", [4, 1])
    assert heads.clicked_head("xy_grid") == (4, 1)


def test_typed_arrays_and_points_without_a_head(state):
    _select(state, "xy_grid", {"1": 7, "0": 3})  # plotly's typed array, keys out of order
    assert heads.clicked_head("xy_grid") == (3, 7)
    _select(state, "other_grid", None, [1])
    assert heads.clicked_head("other_grid") is None  # no point carries (layer, head)
    _select(state, "third_grid", None, [6, 2, "extra"])
    assert heads.clicked_head("third_grid") == (6, 2)  # the first point that names a head
