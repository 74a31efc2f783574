"""Controls show the values the figures were computed with: after a run that stopped on a plain
message (an empty text) and after a lens that sums the heads, every control the browser draws
again shows the server's value, not its default.

A browser forgets a control that a run did not draw. When the next run draws it again, the
browser shows the value the server sends only if the server asks it to (`set_value`); otherwise
it shows the control's default (and sends that back on the next touch). `shown` reads a control
as such a browser would."""
from tests.app.apptest import open_page
from tests.figures import app_figures

TEXT = "The cat sat on the mat because it was tired."


def shown(widget):
    """What a browser that had not drawn `widget` in the previous run shows for it now."""
    proto = widget.proto
    if widget.type == "slider":
        return list(proto.value) if proto.set_value else list(proto.default)
    if widget.type == "selectbox":
        return proto.raw_value if proto.set_value else proto.options[proto.default]
    raise AssertionError(f"no reading for a {widget.type}")


def titles(at) -> list[str]:
    return [f["layout"].get("title", {}).get("text", "") for f in app_figures(at)]


def empty_text_round_trip(at) -> None:
    at.text_area(key="text").set_value("").run()
    assert any("empty" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.get("plotly_chart")  # the error path drew no figure (and none of the page's controls)
    at.text_area(key="text").set_value(TEXT).run()
    assert not at.exception, at.exception


def test_rollout_sliders_show_residual_and_layer_after_an_empty_text():
    at = open_page("app_pages/rollout.py")
    at.slider(key="ro_residual").set_value(0.75).run()
    at.slider(key="ro_layer").set_value(3).run()
    empty_text_round_trip(at)
    residual, layer = at.slider(key="ro_residual"), at.slider(key="ro_layer")
    assert residual.value == 0.75 and layer.value == 3  # what the figures use
    assert any("Rollout through layers 0–3" in t for t in titles(at)), titles(at)
    assert at.query_params["ro_residual"] == "0.75" and at.query_params["ro_layer"] == "3"
    assert shown(residual) == [0.75] and shown(layer) == [3]


def test_rollout_defaults_are_shown_after_an_empty_text():
    """The defaults (w = 0.5, the last layer) differ from the sliders' own minimum."""
    at = open_page("app_pages/rollout.py")
    empty_text_round_trip(at)
    assert shown(at.slider(key="ro_residual")) == [0.5]
    assert shown(at.slider(key="ro_layer")) == [5]
    assert any("Rollout through layers 0–5" in t for t in titles(at))


def test_heatmap_layer_and_head_are_shown_after_an_empty_text():
    at = open_page("app_pages/heatmap.py")
    at.selectbox(key="hm_layer").set_value(3).run()
    at.selectbox(key="hm_head").set_value(7).run()
    empty_text_round_trip(at)
    layer, head = at.selectbox(key="hm_layer"), at.selectbox(key="hm_head")
    assert (layer.value, head.value) == (3, 7)
    assert any(s.value == "Layer 3, head 7" for s in at.subheader), [s.value for s in at.subheader]
    assert (shown(layer), shown(head)) == ("3", "7")


def test_heatmap_head_survives_the_alti_lens_and_back():
    at = open_page("app_pages/heatmap.py")
    at.selectbox(key="hm_layer").set_value(3).run()
    at.selectbox(key="hm_head").set_value(7).run()
    at.radio(key="lens").set_value("ALTI").run()
    assert not at.exception, at.exception
    assert any(s.value == "Layer 3, heads summed (ALTI)" for s in at.subheader), [s.value for s in at.subheader]
    assert at.session_state["head"] == 7 and at.query_params["head"] == "7"  # the chosen head is kept
    summed = at.selectbox(key="hm_head_summed")  # the head box says the heads are summed, and cannot be changed
    assert summed.disabled and summed.value == "all, summed"
    at.radio(key="lens").set_value("weights").run()
    head = at.selectbox(key="hm_head")
    assert head.value == 7 and shown(head) == "7"
    assert any(s.value == "Layer 3, head 7" for s in at.subheader), [s.value for s in at.subheader]
    assert at.query_params["head"] == "7"


def test_compare_head_is_shown_after_an_empty_text():
    at = open_page("app_pages/compare.py", layer=2, head=9)
    empty_text_round_trip(at)
    layer, head = at.selectbox(key="cmp_layer"), at.selectbox(key="cmp_head")
    assert (layer.value, head.value) == (2, 9)
    assert (shown(layer), shown(head)) == ("2", "9")
    assert any("L2 H9" in t for t in titles(at))


def test_rollout_discard_out_of_range_says_so_and_leaves_no_stale_figure():
    at = open_page("app_pages/rollout.py")
    at.number_input(key="ro_discard").set_value(1.5).run()
    assert not at.exception, at.exception
    assert [w.value for w in at.warning] == ["The discard ratio must be at least 0 and below 1 (it was 1.5): it is the "
                                             "fraction of the weakest attention weights dropped in each layer."]
    assert not at.get("plotly_chart")  # no figure of the previous ratio is left on the page
    at.number_input(key="ro_discard").set_value(0.2).run()
    assert not at.warning and at.get("plotly_chart")
    assert shown(at.slider(key="ro_layer")) == [5]  # the slider the error path did not draw shows its value again
    assert at.query_params["ro_discard"] == "0.2"
