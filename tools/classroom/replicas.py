"""`python -m tools.classroom.replicas`: N `streamlit run` replicas behind nginx (deploy/nginx.conf.template),
sticky per session, on 127.0.0.1 only; everything nginx writes goes to a temporary folder."""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.classroom.servers import ROOT, Streamlit, free_port, wait_healthy

TEMPLATE = ROOT / "deploy" / "nginx.conf.template"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def render_config(listen: int, ports: list[int], prefix: str | Path, template: Path = TEMPLATE) -> str:
    """The nginx configuration for replicas on 127.0.0.1:`ports`, listening on 127.0.0.1:`listen`."""
    addr = [f"127.0.0.1:{p}" for p in ports]
    upstreams = "".join(f"    upstream replica_{i} {{\n        server {a};\n    }}\n" for i, a in enumerate(addr))
    servers = "\n".join(f"        server {a};" for a in addr)
    sticky = "\n".join(f'        "{a}" replica_{i};' for i, a in enumerate(addr))
    lines = template.read_text(encoding="utf-8").splitlines()
    text = "\n".join(line for line in lines if not line.startswith("#")) + "\n"  # the header names the placeholders
    for name, value in (("@UPSTREAMS@", upstreams), ("@SERVERS@", servers), ("@STICKY_MAP@", sticky),
                        ("@LISTEN@", str(listen)), ("@PREFIX@", str(prefix))):
        text = text.replace(name, value)
    return text


class Replicas:
    """Start `n` replicas and nginx in front of them; `url` is what students open. Use as a context manager."""

    def __init__(self, n: int = 2, port: int | None = None, replica_ports: list[int] | None = None,
                 timeout: float = 120.0):
        if not Path(NGINX).exists():
            raise RuntimeError("nginx is not installed: `make nginx` (apt-get install nginx) installs it")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.prefix = Path(tempfile.mkdtemp(prefix="attnviz-nginx-"))
        ports = replica_ports or [free_port() for _ in range(n)]
        self.replicas = [Streamlit(p, log=self.prefix / f"replica-{p}.log") for p in ports]
        self.nginx = None
        try:
            self._start_nginx(ports)
            for r in self.replicas:
                r.wait(timeout)
            wait_healthy(self.url, timeout, self.nginx)
        except BaseException:
            self.stop()
            raise

    def _start_nginx(self, ports: list[int]) -> None:
        if os.geteuid() == 0:  # nginx's workers run as `nobody`: let them reach their temp folders
            self.prefix.chmod(0o755)
        for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.prefix / sub).mkdir(mode=0o777)
            (self.prefix / sub).chmod(0o777)
        conf = self.prefix / "nginx.conf"
        conf.write_text(render_config(self.port, ports, self.prefix), encoding="utf-8")
        check = subprocess.run([NGINX, "-t", "-q", "-c", str(conf), "-p", str(self.prefix)],
                               capture_output=True, text=True)
        if check.returncode:
            raise RuntimeError(f"nginx refused {conf}: {check.stderr.strip()}")
        self._log = open(self.prefix / "nginx.out", "w")
        self.nginx = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(self.prefix)],
                                      stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def addresses(self) -> list[str]:
        """The replicas as nginx names them in X-Upstream."""
        return [f"127.0.0.1:{r.port}" for r in self.replicas]

    @property
    def pids(self) -> list[int]:
        return [r.proc.pid for r in self.replicas] + ([self.nginx.pid] if self.nginx else [])

    def stop(self) -> None:
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGQUIT)  # graceful: workers finish, then the master exits
            try:
                self.nginx.wait(10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait(5)
        for r in self.replicas:
            r.stop()
        if self.nginx is not None:
            self._log.close()

    def cleanup(self) -> None:
        shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self) -> "Replicas":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        self.cleanup()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.classroom.replicas", description=__doc__)
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8501)), help="the port students open")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--first-port", type=int, default=None,
                   help="replica ports start here (default: free ports)")
    p.add_argument("--no-warm", action="store_true", help="do not open the heatmap and a lab once on each replica")
    args = p.parse_args(argv)
    ports = [args.first_port + i for i in range(args.replicas)] if args.first_port else None
    with Replicas(args.replicas, args.port, ports) as rep:
        if not args.no_warm:  # each replica loads the model on its first heatmap: do it now, not in the lecture
            import asyncio

            from tools.classroom.load import warm

            for replica in rep.replicas:
                asyncio.run(warm(replica.url))
        print(f"attnviz at {rep.url} (nginx, sticky sessions) over replicas "
              f"{', '.join(rep.addresses)}; logs in {rep.prefix}. Ctrl+C stops all.", flush=True)
        try:
            while rep.nginx.poll() is None and all(r.proc.poll() is None for r in rep.replicas):
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
