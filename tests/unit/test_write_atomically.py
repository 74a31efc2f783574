"""runtime.write_atomically: the old file or the new one, never half; text as UTF-8; mode and time when asked."""
import os

import pytest

from attnviz.runtime import write_atomically


def test_text_and_bytes_replace_the_file_whole(tmp_path):
    target = tmp_path / "deep" / "er" / "f.json"
    write_atomically(target, "ä → 1")
    assert target.read_bytes() == "ä → 1".encode("utf-8")
    write_atomically(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.json"]


def test_mode_and_time_are_set_before_the_file_appears(tmp_path):
    target = tmp_path / "f.js"
    write_atomically(target, b"x", mode=0o644, mtime=946684800)
    assert target.stat().st_mode & 0o777 == 0o644 and target.stat().st_mtime == 946684800


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_text("old")

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, "new")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
