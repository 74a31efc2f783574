"""Run a class of N simulated students against one URL at once and summarise what they got."""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

import numpy as np

from tools.classroom.scenario import Student, run_student
from tools.classroom.servers import tree_rss


@dataclass(frozen=True)
class ClassConfig:
    url: str  # the app (or the load balancer) as students reach it: http://127.0.0.1:8501
    sessions: int = 60  # students, each one websocket session
    scenario: str = "class"  # "class" (heatmap, then the temperature lab), "heatmap" or "lab"
    think: float = 10.0  # mean seconds a student waits between interactions (uniform 0.5x-1.5x)
    ramp: float = 30.0  # students arrive spread over this many seconds (after the link is shown)
    timeout: float = 120.0  # an interaction with no script_finished after this is a timeout
    seed: int = 0  # think times, arrival times and slider choices
    drop: tuple[int, ...] = ()  # students who close the socket in the middle of their head change


@dataclass
class ClassReport:
    config: ClassConfig
    students: list[Student]
    wall_s: float
    rss_start: int = 0  # server process tree RSS (bytes) before the class
    rss_peak: int = 0  # ... highest while it ran
    rss_end: int = 0
    extra: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """Sessions held and ok, errors, p50/p95 ms from interaction to script_finished, server memory."""
        kept = [s for s in self.students if not s.dropped]
        runs = [r for s in kept for r in s.runs]
        ms = np.array([r.ms for r in runs if r.ok]) if runs else np.array([])
        failed = [(s.index, r.what, r.status, (r.errors or [""])[0][:200]) for s in kept for r in s.runs if not r.ok]
        by_what = {}
        for r in runs:
            if r.ok:
                by_what.setdefault(r.what.split()[0], []).append(r.ms)
        out = {
            "sessions": len(self.students),
            "sessions_held": sum(1 for s in kept if s.runs and s.runs[0].ok),
            "sessions_ok": sum(1 for s in kept if s.ok),
            "dropped_on_purpose": len(self.students) - len(kept),
            "interactions": len(runs),
            "errors": len(failed),
            "p50_ms": round(float(np.percentile(ms, 50)), 1) if ms.size else None,
            "p95_ms": round(float(np.percentile(ms, 95)), 1) if ms.size else None,
            "max_ms": round(float(ms.max()), 1) if ms.size else None,
            "p95_ms_by_step": {k: round(float(np.percentile(v, 95)), 1) for k, v in sorted(by_what.items())},
            "busy_runs": sum(1 for r in runs if r.busy),
            "script_runs_per_interaction": round(sum(r.scripts for r in runs) / max(len(runs), 1), 2),
            "wall_s": round(self.wall_s, 1),
            "server_rss_mb_start": round(self.rss_start / 2**20, 1),
            "server_rss_mb_peak": round(self.rss_peak / 2**20, 1),
            "server_rss_mb_end": round(self.rss_end / 2**20, 1),
            "first_failures": failed[:5],
        }
        upstreams = [s.upstream.get("ws") for s in kept if s.upstream.get("ws")]
        if upstreams:
            out["sessions_per_replica"] = {u: upstreams.count(u) for u in sorted(set(upstreams))}
            out["sessions_switched_replica"] = sum(1 for s in kept if s.upstream.get("http") != s.upstream.get("ws"))
        out.update(self.extra)
        return out


async def run_class(cfg: ClassConfig, server_pids=()) -> ClassReport:
    """All students at once (arriving over cfg.ramp seconds); server memory sampled every 0.5 s."""
    rng = random.Random(cfg.seed)
    starts = sorted(rng.uniform(0, cfg.ramp) for _ in range(cfg.sessions))
    rss = [tree_rss(server_pids)] if server_pids else [0]

    async def student(i: int) -> Student:
        await asyncio.sleep(starts[i])
        return await run_student(cfg.url, i, cfg.scenario, cfg.think, cfg.timeout, cfg.seed, drop=i in cfg.drop)

    async def sample(stop: asyncio.Event):
        while not stop.is_set():
            if server_pids:
                rss.append(await asyncio.to_thread(tree_rss, server_pids))
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
            except asyncio.TimeoutError:
                pass

    stop = asyncio.Event()
    sampler = asyncio.create_task(sample(stop))
    t0 = time.perf_counter()
    students = await asyncio.gather(*(student(i) for i in range(cfg.sessions)))
    wall = time.perf_counter() - t0
    stop.set()
    await sampler
    end = tree_rss(server_pids) if server_pids else 0
    return ClassReport(cfg, list(students), wall, rss[0], max(rss + [end]), end)


def run(cfg: ClassConfig, server_pids=()) -> ClassReport:
    """run_class from synchronous code (in a thread of its own when an event loop is already running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_class(cfg, server_pids))
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run_class(cfg, server_pids)).result()


async def warm(url: str, timeout: float = 180.0) -> None:
    """One student alone first: the model loads and the default text's result is cached, as before a lecture."""
    for scenario in ("heatmap", "lab"):
        await run_student(url, 0, scenario, think=0, timeout=timeout)
