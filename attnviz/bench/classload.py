"""Class figures (`python -m attnviz.bench --load`): 60 simulated students over Streamlit's websocket protocol,
on one server and through nginx over two replicas; each setup starts its own servers and warms them first."""
from __future__ import annotations

import asyncio

from attnviz.classroom.load import ClassConfig, run, warm
from attnviz.classroom.servers import Streamlit


def _figures(summary: dict, n: int, suffix: str) -> dict[str, float]:
    steps = summary["p95_ms_by_step"]
    out = {
        f"class_sessions_ok_{n}{suffix}": summary["sessions_ok"],
        f"class_p95_ms_{n}{suffix}": summary["p95_ms"],
        f"class_p50_ms_{n}{suffix}": summary["p50_ms"],
        f"class_errors_{n}{suffix}": summary["errors"],
        f"class_server_rss_mb_peak_{n}{suffix}": summary["server_rss_mb_peak"],
        f"class_wall_s_{n}{suffix}": summary["wall_s"],
    }
    out.update({f"class_p95_ms_{n}_{step}{suffix}": ms for step, ms in steps.items()})
    return out


def figures(quick: bool = False) -> dict[str, float]:
    """class_sessions_ok_60 (goal 60), class_p95_ms_60 (goal <= 2,000 ms) and the same with _replicas."""
    from attnviz.classroom.replicas import NGINX, Replicas
    from pathlib import Path

    n = 20 if quick else 60
    cfg = dict(sessions=n, scenario="class", think=2.0, ramp=10.0, timeout=120.0)
    out: dict[str, float] = {}
    server = Streamlit().wait()
    try:
        asyncio.run(warm(server.url))
        out.update(_figures(run(ClassConfig(server.url, **cfg), [server.proc.pid]).summary(), n, ""))
    finally:
        server.stop()
    if Path(NGINX).exists():
        with Replicas(2) as rep:
            for _ in rep.replicas:  # new visitors go round-robin: one warm-up student per replica
                asyncio.run(warm(rep.url))
            out.update(_figures(run(ClassConfig(rep.url, **cfg), rep.pids).summary(), n, "_replicas"))
    return out
