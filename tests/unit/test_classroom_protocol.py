"""The load generator's wire details (tools/classroom): the widget states it sends back, the plotly arrays
it reads, and the nginx configuration it writes."""
from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import numpy as np
import pytest
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.Slider_pb2 import Slider

from tools.classroom.protocol import plotly_array, widget_state


def test_a_selectbox_sends_the_option_as_shown():
    e = Element()
    e.selectbox.id, e.selectbox.default = "$$ID-abc-hm_head", 2
    e.selectbox.options.extend(["0", "1", "2", "3"])
    assert widget_state("selectbox", e.selectbox, None).string_value == "2"  # its default, shown for the first time
    e.selectbox.set_value, e.selectbox.raw_value = True, "3"
    assert widget_state("selectbox", e.selectbox, None).string_value == "3"  # the value the script set
    s = widget_state("selectbox", e.selectbox, 7)
    assert s.id == "$$ID-abc-hm_head" and s.WhichOneof("value") == "string_value" and s.string_value == "7"


def test_a_select_slider_sends_formatted_options_and_a_slider_numbers():
    e = Element()
    w = e.slider
    w.id, w.type = "$$ID-x-temp_T", Slider.SELECT_SLIDER
    w.options.extend(["0.1", "1.0", "10.0"])
    w.default.extend([1])
    assert list(widget_state("slider", w, None).string_array_value.data) == ["1.0"]
    assert list(widget_state("slider", w, "0.1").string_array_value.data) == ["0.1"]
    w2 = Element().slider
    w2.id, w2.type = "$$ID-y-temp_feat_0", Slider.SLIDER
    w2.default.extend([0.5])
    assert list(widget_state("slider", w2, None).double_array_value.data) == [0.5]
    assert list(widget_state("slider", w2, -1).double_array_value.data) == [-1.0]


def test_text_toggles_and_numbers():
    t = Element().text_area
    t.id, t.default = "$$ID-t-text", "a cat"
    assert widget_state("text_area", t, None).string_value == "a cat"
    assert widget_state("text_area", t, "a dog").string_value == "a dog"
    c = Element().checkbox
    c.id, c.default, c.set_value, c.value = "$$ID-c-hm_renorm", False, True, True
    assert widget_state("checkbox", c, None).bool_value is True  # set by the script, not the default
    n = Element().number_input
    n.id = "$$ID-n-steps"
    assert widget_state("number_input", n, None) is None  # no value yet: the browser sends none either
    assert widget_state("number_input", n, 3).double_value == 3.0
    assert widget_state("plotly_chart", Element().plotly_chart, None) is None  # selections stay on the server


def test_plotly_arrays_decode_from_base64_and_lists():
    z = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    packed = {"dtype": "f4", "bdata": base64.b64encode(z.tobytes()).decode(), "shape": "2, 3"}
    np.testing.assert_array_equal(plotly_array(packed), z)
    np.testing.assert_array_equal(plotly_array([[1, 2], [3, 4]]), [[1.0, 2.0], [3.0, 4.0]])


def test_the_nginx_config_names_every_replica_and_nginx_accepts_it(tmp_path):
    from tools.classroom.replicas import NGINX, render_config

    text = render_config(8670, [8671, 8672], tmp_path)
    assert "listen 127.0.0.1:8670;" in text and "@" not in text
    assert '"127.0.0.1:8671" replica_0;' in text and '"127.0.0.1:8672" replica_1;' in text
    assert "upstream replica_1 {\n        server 127.0.0.1:8672;" in text
    assert "ip_hash" not in text and "$cookie_attnviz_replica" in text  # sticky by cookie, not by address
    if not Path(NGINX).exists():
        pytest.skip("nginx is not installed (make test installs it)")
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp_path / sub).mkdir()
    (tmp_path / "nginx.conf").write_text(text)
    check = subprocess.run([NGINX, "-t", "-q", "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_server_memory_from_proc_agrees_with_psutil():
    import os

    from tools.classroom.servers import _proc_tree_rss, tree_rss

    mine = tree_rss([os.getpid()])
    assert mine > 10 * 2**20 and abs(_proc_tree_rss([os.getpid()]) - mine) < 0.05 * mine


def test_the_message_cache_resolves_references_and_forgets_old_entries():
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from tools.classroom.protocol import Session

    s = Session("http://127.0.0.1:1")
    big = ForwardMsg(hash="h1")
    big.metadata.cacheable = True
    big.metadata.delta_path.extend([0, 3])
    big.delta.new_element.markdown.body = "a large element"
    got = s._through_cache(big, big.SerializeToString())
    assert got is big and list(s._rerun_msg().rerun_script.cached_message_hashes) == ["h1"]
    ref = ForwardMsg(ref_hash="h1")
    ref.metadata.delta_path.extend([0, 7])  # the same element at another place
    full = s._through_cache(ref, ref.SerializeToString())
    assert full.delta.new_element.markdown.body == "a large element" and list(full.metadata.delta_path) == [0, 7]
    for _ in range(5):  # another fragment's runs leave it alone, as in the browser
        s._age_cache({"other"})
    assert list(s._cache) == ["h1"]
    for _ in range(3):  # unused for more than max_cached_message_age (2) whole runs: forgotten, as the browser does
        s._age_cache()
    assert s._cache == {}
