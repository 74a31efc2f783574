"""AppTest of the Long inputs page on a tiny random Llama with a 4,096-token context (GQA: 6 query heads over 2
key/value heads), opened through "Other" as a model folder: a recording at 2,048 tokens, the grid's tiles =
pooled_grid of the same recording, the zoom = la.window, widgets changing the figures, plain messages for a
binary upload and a length that does not fit in memory."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import decode

PAGE = "app_pages/long.py"
BUNDLED = "Bundled long text (~5,000 words)"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from tests.tiny_models import tiny_long_loaded

    loaded = tiny_long_loaded("llama-long")
    loaded.tokenizer.model_max_length = 4096  # MiniLM's tokenizer says 512; the tiny model reads 4,096
    folder = tmp_path_factory.mktemp("tiny-llama-long")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return str(folder)


def _array(v) -> np.ndarray:
    return np.asarray(decode(v), dtype=float)


def _figure(at, key: str) -> dict:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if c.proto.id and key in c.proto.id:
            return spec
    raise AssertionError(f"no figure {key}")


def _figures_by_title(at) -> dict:
    out = {}
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        title = (spec["layout"].get("title") or {}).get("text", "")
        out[title] = spec
    return out


def _record(at, deadline: float = 150) -> None:
    at.button(key="lg_record").click().run()
    assert not at.exception, at.exception
    end = time.time() + deadline
    while time.time() < end and not any("Recorded" in s.value for s in at.success):
        time.sleep(0.5)
        at.run()
        assert not at.exception, at.exception
    assert any("Recorded" in s.value for s in at.success), [w.value for w in at.warning]


@pytest.fixture(scope="module")
def recorded(tiny_folder):
    at = open_page(PAGE, model_choice="other", custom_model=tiny_folder)
    at.radio(key="lg_source").set_value(BUNDLED).run()
    at.select_slider(key="lg_len").set_value(2048).run()
    assert not at.exception, at.exception
    _record(at)
    return at


def _tiles(spec: dict, t: int, L: int, H: int, group: int) -> np.ndarray:
    """The (layer, head, t, t) tiles read back out of the grid's mosaic."""
    from attnviz.long.figures import HEAD_GAP, grid_columns

    z = _array(spec["data"][0]["z"])
    starts, _ = grid_columns(H, group, t)
    return np.stack([np.stack([z[l * (t + HEAD_GAP):l * (t + HEAD_GAP) + t, s:s + t] for s in starts])
                     for l in range(L)])


def test_page_records_2048_tokens_and_the_grid_equals_pooled_grid(recorded, tiny_folder):
    from attnviz.long.pooled import pooled_grid
    from attnviz.long.record import record
    from attnviz.models import load_model
    from attnviz.ui.long.recording import DONE

    at = recorded
    rec = at.session_state[DONE]
    assert rec.la.seq_len == 2048 and rec.la.n_heads == 6 and rec.la.n_kv_heads == 2
    grid = pooled_grid(rec.la, tiles=rec.tiles)
    spec = _figure(at, "lg_grid")
    got = _tiles(spec, rec.tiles, 2, 6, 3)
    np.testing.assert_allclose(got, grid.mean, rtol=1e-5, atol=1e-7)
    assert "kv0: h0 h1 h2" in json.dumps(spec["layout"]["annotations"])
    assert any("heads h0–h2 share key head 0" in c.value for c in at.caption)
    assert any("each cell is the **mean** of a block" in c.value.lower().replace("each cell", "each cell")
               for c in at.caption) or any("Each cell is the **mean**" in c.value for c in at.caption)
    # an independent recording in this process gives the same tiles
    fresh = record(load_model(tiny_folder), rec.la.text, max_tokens=2048)
    np.testing.assert_allclose(pooled_grid(fresh, tiles=rec.tiles).mean, grid.mean, rtol=1e-4, atol=1e-6)
    # max pooling changes the grid to the max tiles
    at.radio(key="lg_how").set_value("max").run()
    assert not at.exception, at.exception
    np.testing.assert_allclose(_tiles(_figure(at, "lg_grid"), rec.tiles, 2, 6, 3), grid.max, rtol=1e-5, atol=1e-7)
    assert any("Each cell is the **max**" in c.value for c in at.caption)
    at.radio(key="lg_how").set_value("mean").run()


def test_zoom_equals_window_and_follows_the_inputs(recorded):
    from attnviz.ui.long.recording import DONE

    at = recorded
    la = at.session_state[DONE].la
    at.selectbox(key="lg_layer").set_value(1).run()
    at.selectbox(key="lg_head").set_value(4).run()
    at.number_input(key="lg_zsize").set_value(32).run()
    at.number_input(key="lg_zq").set_value(1500).run()
    at.number_input(key="lg_zk").set_value(1480).run()
    assert not at.exception, at.exception
    zoom = _figure(at, "lg_zoom")
    np.testing.assert_allclose(_array(zoom["data"][0]["z"]), la.window(1, 4, 1500, 1532, 1480, 1512), atol=1e-7)
    assert zoom["data"][0]["x"][0].startswith("1480 ") and zoom["data"][0]["y"][0].startswith("1500 ")
    over = _figure(at, "lg_overview")
    box = over["layout"]["shapes"][0]
    assert (box["x0"], box["y0"]) == (1479.5, 1499.5)
    assert "L1 H4 (key head 1)" in over["layout"]["title"]["text"]
    at.number_input(key="lg_zk").set_value(0).run()
    np.testing.assert_allclose(_array(_figure(at, "lg_zoom")["data"][0]["z"]), la.window(1, 4, 1500, 1532, 0, 32),
                               atol=1e-7)
    n = la.seq_len  # a start past the last whole window: the box shows the start the zoom uses, and says why
    at.number_input(key="lg_zq").set_value(n - 1).run()
    assert not at.exception, at.exception
    assert at.number_input(key="lg_zq").value == n - 32
    assert any(f"was set to {n - 32:,}" in w.value for w in at.warning), [w.value for w in at.warning]
    assert _figure(at, "lg_zoom")["layout"]["title"]["text"].startswith(f"Zoom: queries {n - 32}–{n - 1}")


def test_focus_top_k_and_profiles(recorded):
    from attnviz.ui.long.recording import DONE

    at = recorded
    la = at.session_state[DONE].la
    layer, head = at.selectbox(key="lg_layer").value, at.selectbox(key="lg_head").value
    at.number_input(key="lg_fq").set_value(1000).run()
    boxes = [h.proto.body for h in at.get("html") if "data-weight=" in h.proto.body]
    row = la.rows(layer, head, 1000, 1001)[0]
    near, whole = boxes[0], boxes[1]  # the text around the query, and the whole text (in its expander)
    assert "overflow-y: auto" in near and near.count("data-weight=") == 300  # positions 880-1,179
    assert f'data-weight="{row[880]:.6f}"' in near and f"880 earlier tokens (weight {row[:880].sum():.3f}" in near
    assert f"868 later tokens (weight {row[1180:].sum():.3f})" in near
    assert whole.count("data-weight=") == 2048 and f'data-weight="{row[0]:.6f}"' in whole
    assert "lg_topk" not in json.dumps([c.proto.id for c in at.get("plotly_chart")])  # only the open tab runs
    at.session_state["lg_tab"] = "Top-k lines"
    at.run()
    assert not any("data-weight=" in h.proto.body for h in at.get("html"))
    at.number_input(key="lg_k").set_value(2).run()
    at.number_input(key="lg_kspan").set_value(10).run()
    at.number_input(key="lg_kq").set_value(100).run()
    pts = _figure(at, "lg_topk")["data"][1]
    keys, weights = la.top_k(layer, head, 100, 110, 2)
    assert pts["x"] == [int(k) for k in keys.reshape(-1)]
    np.testing.assert_allclose(_array(pts["marker"]["color"]), weights.reshape(-1), rtol=1e-6)
    at.session_state["lg_tab"] = "Distance"
    at.run()
    assert len(_figure(at, "lg_prof_head")["data"]) == 6 and len(_figure(at, "lg_prof_layer")["data"]) == 2
    at.session_state["lg_tab"] = "Sinks and windows"
    at.run()
    assert any("no sliding window" in c.value for c in at.caption)
    total = sum(len(c.proto.spec) for c in at.get("plotly_chart"))
    assert total < 3_000_000, total
    at.session_state["lg_tab"] = "Token focus"  # the module's other tests share this page
    at.run()


def test_sink_experiment_runs_from_the_page(tiny_folder):
    """A page of its own: the tests sharing `recorded` may run in any order, so none of them changes it."""
    at = open_page(PAGE, model_choice="other", custom_model=tiny_folder)
    at.radio(key="lg_source").set_value(BUNDLED).run()
    at.select_slider(key="lg_len").set_value(512).run()  # a short text for the three passes
    _record(at)
    at.select_slider(key="lg_len").set_value(1024).run()
    assert any("settings changed" in i.value for i in at.info)
    at.select_slider(key="lg_len").set_value(512).run()
    assert not any("settings changed" in i.value for i in at.info)
    at.select_slider(key="lg_cache").set_value(128).run()
    at.button(key="lg_sinks_run").click().run()
    end = time.time() + 120
    while time.time() < end and not any("lg_sink_curves" in (c.proto.id or "") for c in at.get("plotly_chart")):
        time.sleep(0.5)
        at.run()
        assert not at.exception, at.exception
    curves = _figure(at, "lg_sink_curves")
    assert [d["name"] for d in curves["data"]] == ["full cache", "window only (128)", "4 sinks + window (124)"]
    assert not at.warning


def test_binary_upload_is_a_plain_message(tiny_folder):
    at = open_page(PAGE, model_choice="other", custom_model=tiny_folder)
    at.radio(key="lg_source").set_value("A file (.txt, .md)").run()
    at.file_uploader(key="lg_upload").upload("notes.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "text/plain").run()
    assert not at.exception, at.exception
    assert any("'notes.txt' is not a text file" in w.value for w in at.warning)
    assert "lg_record" not in [b.key for b in at.button]  # nothing to record
    at.file_uploader(key="lg_upload").set_value(("latin.md", "caf\xe9 ".encode("latin-1") * 5, "text/markdown")).run()
    assert any("'latin.md' is not UTF-8 text" in w.value for w in at.warning)


def test_a_length_that_does_not_fit_in_memory_names_the_largest_that_does(tiny_folder, monkeypatch):
    import attnviz.long.memory as memory
    from attnviz.long.memory import long_memory_estimate
    from attnviz.models import load_model

    facts = load_model(tiny_folder).facts
    monkeypatch.delenv("ATTNVIZ_SKIP_MEMORY_CHECK", raising=False)
    free = long_memory_estimate(facts, 1000, 64)
    monkeypatch.setattr(memory, "available_bytes", lambda: free)
    at = open_page(PAGE, model_choice="other", custom_model=tiny_folder)
    at.radio(key="lg_source").set_value(BUNDLED).run()
    at.select_slider(key="lg_len").set_value(2048).run()
    assert not at.exception, at.exception
    msg = " ".join(w.value for w in at.warning)
    assert "2,048 tokens" in msg and "Choose at most 1,000 tokens" in msg, msg
    assert not at.get("plotly_chart")


def test_default_model_says_it_is_capped_at_512(minilm):
    at = open_page(PAGE)
    info = " ".join(i.value for i in at.info)
    assert "reads at most **512 positions**" in info
    assert any("Length limit: **512 tokens**" in c.value for c in at.caption)
    assert "lg_len" not in [s.key for s in at.select_slider]  # one length: no slider


def test_a_short_sidebar_text_records_and_every_view_runs(tiny_folder):
    at = open_page(PAGE, model_choice="other", custom_model=tiny_folder, text="A cat sat.")
    _record(at)
    at.button(key="lg_sinks_run").click().run()
    end = time.time() + 60
    while time.time() < end and not any("lg_sink_curves" in (c.proto.id or "") for c in at.get("plotly_chart")):
        time.sleep(0.5)
        at.run()
        assert not at.exception, at.exception
    assert any("Cache size: **" in c.value for c in at.caption)
    assert not at.warning, [w.value for w in at.warning]


def test_a_link_restores_the_text_source_length_and_pooling(tiny_folder):
    at = open_page(PAGE, query={"model_choice": "other", "custom_model": tiny_folder, "lg_source": BUNDLED,
                                "lg_len": "1024", "lg_how": "max", "lg_tab": "Distance"})
    assert at.radio(key="lg_source").value == BUNDLED
    assert at.select_slider(key="lg_len").value == 1024
    assert at.session_state["lg_tab"] == "Distance"
    assert any("the first **1,024** are recorded" in c.value for c in at.caption)


def test_a_link_restores_the_zoom_and_the_views_settings_once_recorded(tiny_folder):
    zoom = {"lg_zq": "100", "lg_zk": "50", "lg_zsize": "32", "lg_fq": "77", "lg_k": "2", "lg_kspan": "16", "lg_kq": "40"}
    at = open_page(PAGE, query={"model_choice": "other", "custom_model": tiny_folder, "lg_source": BUNDLED,
                                "lg_len": "512", "lg_tab": "Top-k lines", **zoom})
    _record(at)
    assert _figure(at, "lg_zoom")["layout"]["title"]["text"] == "Zoom: queries 100–131, keys 50–81"
    assert {k: str(at.number_input(key=k).value) for k in zoom if k not in ("lg_fq",)} == \
        {k: v for k, v in zoom.items() if k != "lg_fq"}
    assert _figure(at, "lg_topk")["layout"]["title"]["text"].startswith("Top-2 keys of queries 40–55")
    assert at.session_state["lg_fq"] == 77  # the focus tab's query, drawn when its tab opens
    assert {k: at.query_params[k] for k in zoom} == {k: v for k, v in zoom.items()} or \
        {k: at.query_params[k][0] for k in zoom} == zoom


def test_a_model_whose_q_and_k_cannot_be_recorded_gets_the_same_views_from_its_dense_weights(tmp_path):
    """T5 adds a position bias to q·k: its q and k do not explain its weights, so the page falls back to the
    dense result (capped at 512 tokens) behind the same interface; the zoom holds the dense weights."""
    from attnviz.extract import extract
    from tests.tiny_models import tiny_loaded

    t5 = tiny_loaded("t5")
    t5.model.save_pretrained(tmp_path)
    t5.tokenizer.save_pretrained(tmp_path)
    text = "The cat sat on the mat because it was tired. " * 8
    at = open_page(PAGE, model_choice="other", custom_model=str(tmp_path), text=text)
    _record(at)
    info = " ".join(i.value for i in at.info)
    assert "does not qualify" in info and "dense weights" in info
    assert "capped at the dense" not in info
    r = extract(t5, text)
    specs = _figures_by_title(at)
    zoom = next(v for k, v in specs.items() if k.startswith("Zoom: queries"))
    z = _array(zoom["data"][0]["z"])
    q0, k0 = at.number_input(key="lg_zq").value, at.number_input(key="lg_zk").value
    layer, head = at.session_state["lg_layer"], at.session_state["lg_head"]
    np.testing.assert_allclose(z.reshape(-1, z.shape[-1]) if z.ndim > 1 else z,
                               r.attention[layer, head, q0:q0 + z.shape[0], k0:k0 + z.shape[-1]], atol=1e-6)
    assert not at.exception


def test_a_recording_the_server_holds_says_no_pass_ran(tiny_folder):
    lines = []
    for _ in range(2):  # two sessions, the same settings: the second finds the recording in the server's cache
        at = open_page(PAGE, model_choice="other", custom_model=tiny_folder)
        at.radio(key="lg_source").set_value(BUNDLED).run()
        at.select_slider(key="lg_len").set_value(1024).run()
        _record(at)
        lines.append(next(s.value for s in at.success if "Recorded" in s.value))
    first, again = lines
    assert " s: queries and keys" in first and "no pass ran" not in first
    assert "the server had recorded this text and length before: no pass ran" in again and " s: " not in again


def test_a_cancelled_recording_of_other_settings_leaves_no_notice(tiny_folder):
    from attnviz.errors import AttnvizError
    from attnviz.ui.jobs import Job
    from attnviz.ui.long.recording import JOB

    def cancelled(report, cancel):
        raise AttnvizError("The recording was cancelled before it finished (nothing was kept); start it again.")

    job = Job(cancelled, "long recording")
    while not job.done:
        time.sleep(0.05)
    job.collected = True
    at = open_page(PAGE, model_choice="other", custom_model=tiny_folder, **{JOB: ("other|512|64|text", job)})
    assert not [w.value for w in at.warning if "cancelled" in w.value]
    assert any("Press **▶ Record**" in i.value for i in at.info)
