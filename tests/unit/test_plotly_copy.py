"""plotting.plotly_js_copy and ui.plotly_bytes.static_plotly: plotly.js kept among the app's static files under a
name that carries its digest, with an old time of last change (so that browsers keep it), written once."""
import hashlib
from pathlib import Path

import plotly

from attnviz import plotting
from attnviz.ui import plotly_bytes


def _package_copy() -> bytes:
    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


def test_the_copy_is_the_packages_plotly_js_under_its_digest_with_an_old_time(tmp_path):
    js = _package_copy()
    name = plotting.plotly_js_copy(tmp_path / "static")
    assert name == f"plotly-{hashlib.sha256(js).hexdigest()[:12]}.min.js"
    path = tmp_path / "static" / name
    assert path.read_bytes() == js
    assert path.stat().st_mtime == plotting.PLOTLY_COPY_MTIME == 946684800  # 2000-01-01, UTC
    assert path.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in (tmp_path / "static").iterdir()) == [name]  # no temporary file left


def test_the_copy_is_written_once_and_a_damaged_one_again(tmp_path):
    name = plotting.plotly_js_copy(tmp_path)
    path = tmp_path / name
    inode = path.stat().st_ino
    assert plotting.plotly_js_copy(tmp_path) == name and path.stat().st_ino == inode  # kept, not written again
    for damage in (b"cut short", b"x" * path.stat().st_size):  # shorter, or as long with other bytes
        path.write_bytes(damage)
        assert plotting.plotly_js_copy(tmp_path) == name
        assert path.read_bytes() == _package_copy() and path.stat().st_mtime == plotting.PLOTLY_COPY_MTIME


def test_a_folder_that_cannot_be_written_gives_no_copy(tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    assert plotting.plotly_js_copy(blocked / "static") is None


def test_static_plotly_is_used_only_where_static_files_are_served(tmp_path, monkeypatch):
    from streamlit import config

    script = tmp_path / "app.py"
    script.write_text("")
    plotly_bytes._STATIC_COPIES.clear()
    monkeypatch.setattr(config, "get_option", lambda name: False if name == "server.enableStaticServing" else None)
    assert plotly_bytes.static_plotly(str(script)) is None and not (tmp_path / "static").exists()
    plotly_bytes._STATIC_COPIES.clear()
    monkeypatch.setattr(config, "get_option", lambda name: True if name == "server.enableStaticServing" else None)
    url = plotly_bytes.static_plotly(str(script))
    assert url is not None and url.startswith("app/static/plotly-") and url.endswith(".min.js")
    copy = tmp_path / "static" / url.rsplit("/", 1)[1]
    assert copy.read_bytes() == _package_copy()
    copy.unlink()  # the copy removed while the server runs: written again
    assert plotly_bytes.static_plotly(str(script)) == url and copy.read_bytes() == _package_copy()
    assert plotly_bytes.static_plotly(None) is None
    plotly_bytes._STATIC_COPIES.clear()
