"""The `attnviz` command: `attnviz run` serves the app, `attnviz bench` prints the figures,
`attnviz atlas ...` runs a corpus into a head-atlas store."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

USAGE = """usage: attnviz COMMAND [ARGS]

commands:
  run [--port N] [streamlit options]   serve the app on http://127.0.0.1:8501 (offline models by default)
  bench [--json] [--quick] [--load]    print the performance figures
  atlas --out DIR [--model M] ...      run every head over a corpus into a store (attnviz atlas --help)
"""


def app_file() -> Path:
    """app.py of the checkout this package is installed from (an editable install)."""
    return Path(__file__).resolve().parent.parent / "app.py"


def run_app(argv: list[str]) -> int:
    """`streamlit run app.py` on the loopback address, headless, offline unless HF_HUB_OFFLINE says otherwise."""
    app = app_file()
    if not app.is_file():
        print(f"attnviz run needs the app's files beside the package (looked for {app}): "
              "install the checkout with `pip install -e .`.", file=sys.stderr)
        return 2
    port = "8501"
    rest = list(argv)
    if "--port" in rest:
        i = rest.index("--port")
        if i + 1 >= len(rest) or not rest[i + 1].isdigit():
            print("--port needs a number, e.g. attnviz run --port 8502", file=sys.stderr)
            return 2
        port = rest[i + 1]
        del rest[i:i + 2]
    env = {**os.environ}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", "127.0.0.1",
           "--server.port", port, "--server.headless", "true", *rest]
    return subprocess.call(cmd, cwd=app.parent, env=env)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "run":
        return run_app(rest)
    if command == "bench":
        from attnviz.bench.run import main as bench_main

        return bench_main(rest) or 0
    if command == "atlas":
        from attnviz.atlas.__main__ import main as atlas_main

        return atlas_main(rest) or 0
    print(f"Unknown command {command!r}.\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
