"""Start and stop `streamlit run app.py` processes on loopback ports, and measure their memory."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the folder holding app.py


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float = 90.0, proc: subprocess.Popen | None = None) -> None:
    """Wait until `url`/_stcore/health answers 200 (raise after `timeout` or if `proc` exits)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server at {url} exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"no healthy server at {url} after {timeout:.0f} s")


class Streamlit:
    """One `streamlit run app.py` replica on 127.0.0.1:`port`, logging to `log`."""

    def __init__(self, port: int | None = None, log: Path | None = None, app: str = "app.py"):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / f"attnviz-{self.port}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", app, "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(self.port),
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})

    def wait(self, timeout: float = 90.0) -> "Streamlit":
        try:
            wait_healthy(self.url, timeout, self.proc)
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


def tree_rss(pids) -> int:
    """Resident memory (bytes) of the processes `pids` and all their children (psutil, else /proc)."""
    try:
        import psutil
    except ImportError:
        return _proc_tree_rss(pids)
    total = 0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            procs = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
    return total


def _proc_tree_rss(pids) -> int:
    parent, rss = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
                parent[int(d.name)] = int(fields[1])
                rss[int(d.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                continue
    tree, todo = set(), [p for p in pids if p in rss]
    while todo:
        p = todo.pop()
        if p not in tree:
            tree.add(p)
            todo += [c for c, pp in parent.items() if pp == p]
    return sum(rss[p] for p in tree)


def listening_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:`port` (None when it cannot be seen)."""
    try:
        import psutil
    except ImportError:
        return None

    try:
        for c in psutil.net_connections("tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return c.pid
    except (psutil.AccessDenied, PermissionError):
        return None
    return None
