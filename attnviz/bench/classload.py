"""Class figures (`python -m attnviz.bench --load`): 60 simulated students over Streamlit's websocket protocol,
on one server and through nginx over two replicas; each setup starts its own servers and warms them first.

The pace is a lecture's: students arrive over 30 s after the link is shown and act every 5-15 s (mean 10 s);
ATTNVIZ_CLASS_THINK and ATTNVIZ_CLASS_RAMP change it (think 2 s is a stress test; see docs/classroom.md)."""
from __future__ import annotations

import asyncio
import os

from tools.classroom.load import ClassConfig, run, warm
from tools.classroom.servers import Streamlit


def _figures(summary: dict, n: int, suffix: str) -> dict[str, float]:
    steps = summary["p95_ms_by_step"]
    out = {
        f"class_sessions_ok_{n}{suffix}": summary["sessions_ok"],
        f"class_p95_ms_{n}{suffix}": summary["p95_ms"],
        f"class_p50_ms_{n}{suffix}": summary["p50_ms"],
        f"class_errors_{n}{suffix}": summary["errors"],
        f"class_server_rss_mb_peak_{n}{suffix}": summary["server_rss_mb_peak"],
        f"class_wall_s_{n}{suffix}": summary["wall_s"],
        f"class_script_runs_per_interaction{suffix}": summary["script_runs_per_interaction"],
    }
    out.update({f"class_p95_ms_{n}_{step}{suffix}": ms for step, ms in steps.items()})
    return out


def figures(quick: bool = False) -> dict[str, float]:
    """class_sessions_ok_60 (goal 60), class_p95_ms_60 (goal <= 2,000 ms) and the same with _replicas."""
    from tools.classroom.replicas import NGINX, Replicas
    from pathlib import Path

    n = 20 if quick else 60
    think = float(os.environ.get("ATTNVIZ_CLASS_THINK", "10"))
    ramp = float(os.environ.get("ATTNVIZ_CLASS_RAMP", "30"))
    cfg = dict(sessions=n, scenario="class", think=think, ramp=ramp, timeout=120.0)
    out: dict[str, float] = {"class_think_s": think, "class_ramp_s": ramp}
    server = Streamlit().wait()
    try:
        asyncio.run(warm(server.url))
        out.update(_figures(run(ClassConfig(server.url, **cfg), [server.proc.pid]).summary(), n, ""))
    finally:
        server.stop()
    if Path(NGINX).exists():
        with Replicas(2) as rep:
            for replica in rep.replicas:  # each replica directly: round-robin would not reach every one
                asyncio.run(warm(replica.url))
            out.update(_figures(run(ClassConfig(rep.url, **cfg), rep.pids).summary(), n, "_replicas"))
    return out
