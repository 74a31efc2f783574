"""Complexity page: the preset stays when only n (or batch, dtype, block sizes) changes;
an architecture number makes it Custom."""
import pytest

from tests.app.apptest import open_page

PAGE = "app_pages/complexity.py"


def _metrics(at):
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("key, value", [("cx_n", "4096"), ("cx_batch", 8), ("cx_dtype", "fp32"),
                                        ("cx_window", 256), ("cx_flash", 64)])
def test_preset_survives_settings_that_are_not_architecture(key, value):
    at = open_page(PAGE)
    at.selectbox(key="cx_preset").set_value("GPT-2 small").run()
    before = _metrics(at)["One head's matrix"]
    widget = {"cx_n": at.text_input, "cx_dtype": at.selectbox}.get(key, at.number_input)(key=key)
    widget.set_value(value).run()
    assert not at.exception
    assert at.selectbox(key="cx_preset").value == "GPT-2 small"
    assert any("Radford et al. 2019" in c.value for c in at.caption)  # the preset's source is still cited
    if key in ("cx_n", "cx_dtype"):
        assert _metrics(at)["One head's matrix"] != before  # and the numbers did follow the change
    if key == "cx_n":  # 4096² scores × 2 bytes
        assert _metrics(at)["One head's matrix"] == "32 MiB"  # 4096^2 x 2 bytes = 32 x 2^20


@pytest.mark.parametrize("key, value", [("cx_d", 1024), ("cx_layers", 24), ("cx_h", 16), ("cx_dff", 4096)])
def test_architecture_change_makes_the_preset_custom(key, value):
    at = open_page(PAGE)
    at.selectbox(key="cx_preset").set_value("GPT-2 small").run()
    at.number_input(key=key).set_value(value).run()
    assert not at.exception
    assert at.selectbox(key="cx_preset").value == "Custom"
    assert any("your own sizes" in c.value for c in at.caption)


def test_architecture_set_back_to_the_presets_own_value_keeps_it():
    at = open_page(PAGE)
    at.selectbox(key="cx_preset").set_value("GPT-2 small").run()
    at.number_input(key="cx_layers").set_value(12).run()  # GPT-2 small already has 12 layers
    assert at.selectbox(key="cx_preset").value == "GPT-2 small"
