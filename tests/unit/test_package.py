"""The installed package: the `attnviz` command with its sub-commands and plain messages, and the dependencies the app relies on."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from attnviz import cli

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_the_commands(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("run", "bench", "atlas"):
        assert f"  {command} " in out


def test_an_unknown_command_is_a_plain_message(capsys):
    assert cli.main(["serve"]) == 2
    assert "Unknown command 'serve'" in capsys.readouterr().err


def test_run_refuses_a_port_that_is_not_a_number(capsys):
    assert cli.main(["run", "--port", "eighty"]) == 2
    assert "--port needs a number" in capsys.readouterr().err


def test_run_serves_the_checkouts_app():
    assert cli.app_file() == ROOT / "app.py"


def test_the_console_script_is_installed():
    script = Path(sys.executable).parent / "attnviz"
    assert script.exists(), "pip install -e . installs the attnviz command"
    done = subprocess.run([str(script), "atlas", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--corpus" in done.stdout


def test_plotly_serialises_with_orjson():
    """orjson is installed (pinned in requirements.txt) so that plotly, and Streamlit's charts through it,
    serialise figures with it rather than the standard json module."""
    import plotly.io as pio

    assert pio.json.config.default_engine in ("auto", "orjson")
    import plotly.io._json as pj

    assert pj.get_module("orjson") is not None
