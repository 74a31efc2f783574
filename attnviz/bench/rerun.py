"""heatmap_rerun_ms_512: the server time of a warm rerun of the heatmap page at 512 tokens after a
head change, as a client on loopback sees it (from the widget change sent over Streamlit's websocket to the
run's script_finished: script, figures, serialisation and delivery), one session alone on its own server;
median of 7 head changes after the page and its result are cached (goal <= 150 ms)."""
from __future__ import annotations

import asyncio
import statistics



async def _reruns(url: str, n: int) -> list[float]:
    from tools.classroom.protocol import Session
    from attnviz.examples import long_text

    s = Session(url, timeout=300.0, name="rerun-bench")
    try:
        run = await s.open("/heatmap?model_choice=minilm&layer=0&head=0")
        if not run.ok:
            raise RuntimeError(f"the heatmap did not open: {run.errors}")
        run = await s.set_widget("text", long_text(), "text")  # 600 words: cut at MiniLM's 512 tokens
        if not run.ok or not any("512 tokens" in t for t in s.texts()):
            raise RuntimeError(f"the long text did not give 512 tokens: {run.errors}")
        times = []
        for i in range(n + 2):  # the first two changes warm what a head change touches
            run = await s.set_widget("hm_head", (i % 11) + 1, "head")
            if not run.ok:
                raise RuntimeError(f"a head change failed: {run.errors}")
            if i >= 2:
                times.append(run.ms)
        return times
    finally:
        await s.close()


def figures(quick: bool = False) -> dict[str, float]:
    from tools.classroom.servers import Streamlit

    server = Streamlit().wait()
    try:
        times = asyncio.run(_reruns(server.url, 3 if quick else 7))
    finally:
        server.stop()
    return {"heatmap_rerun_ms_512": statistics.median(times)}
