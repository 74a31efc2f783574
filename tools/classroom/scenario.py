"""What one student does during the lecture: open the shared link, then a few interactions with think time.

Each step is an interaction timed from its BackMsg to the run's script_finished, with a check of what the
page then shows (the chosen head in the heading, the new text in the URL, the temperature in the
subheading): a page that finishes but shows the wrong thing is an error too.
"""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode

from tools.classroom.protocol import Run, Session, SessionError, plotly_array

# Sentences a lecturer asks the class to type (student i types TEXTS[i % 3]).
TEXTS = (
    "The students watched the lecturer draw attention on the board.",
    "A small model reads the sentence and every head looks somewhere else.",
    "Attention weights in each row add up to one.",
)
DEFAULT_TEXT = "The cat sat on the mat because it was tired."  # the app's first example, its default text
SCENARIOS = ("class", "heatmap", "lab")


@dataclass
class Student:
    """One simulated student: their index, what they did and what they saw."""
    index: int
    runs: list[Run] = field(default_factory=list)
    layer: int = 0
    head: int = 0
    text: str = ""
    head_z: object = None  # (query, key) heatmap of the chosen head after the head change, default text
    head_metric: str = ""  # "Largest weight" metric after the head change
    upstream: dict = field(default_factory=dict)  # the replica of the page GET and of the websocket
    dropped: bool = False  # closed the socket mid-interaction on purpose

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs)


def heatmap_link(layer: int = 0, head: int = 0) -> str:
    """The heatmap page's share link at the default text, as the lecturer would hand it out."""
    return "/heatmap?" + urlencode({"model": "minilm", "text": DEFAULT_TEXT, "layer": layer, "head": head})


def lab_link(temperature: float = 1.0) -> str:
    return "/lab_temperature?" + urlencode({"temp_T": temperature})


def _check(run: Run, ok: bool, message: str) -> Run:
    if run.ok and not ok:
        run.status, run.errors = "error", [message]
    return run


async def _step(student: Student, coro, check=None) -> Run:
    try:
        run = await coro
    except SessionError as e:
        run = Run("missing widget", 0.0, "error", [str(e)])
    if check is not None and run.ok:
        check(run)
    student.runs.append(run)
    return run


async def change_head(s: Session, st: Student) -> Run:
    """Pick another head in the Head selectbox; keep what the page then shows."""
    run = await _step(st, s.set_widget("hm_head", st.head, "head"))
    _check(run, any(t.startswith(f"Layer {st.layer}, head {st.head}") for t in s.texts()),
           f"the page does not show layer {st.layer}, head {st.head}")
    if run.ok:
        st.head_z = plotly_array(s.figure("hm_heatmap")["data"][0]["z"])
        st.head_metric = s.metric("Largest")
    return run


async def run_student(base: str, index: int, scenario: str = "class", think: float = 2.0, timeout: float = 120.0,
                      seed: int = 0, drop: bool = False) -> Student:
    """One student's session from start to end; never raises (failures are recorded as runs)."""
    rng = random.Random(seed * 1000 + index)
    st = Student(index, layer=0, head=(index * 5 + 1) % 12, text=TEXTS[index % len(TEXTS)])  # the link opens layer 0, head 0
    s = Session(base, timeout=timeout, name=f"student-{index}")

    async def pause():
        if think > 0:
            await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))

    try:
        if scenario in ("class", "heatmap"):
            if not (await _step(st, s.open(heatmap_link()))).ok:
                return st
            st.upstream = dict(s.upstream)
            await pause()
            if drop:  # leave in the middle of the head change's script run
                await s.send_widget("hm_head", st.head)
                await asyncio.sleep(0.05)
                await s.drop()
                st.dropped = True
                return st
            if not (await change_head(s, st)).ok:
                return st
            await pause()
            run = await _step(st, s.set_widget("text", st.text, "text"))
            _check(run, parse_qs(s.query_string).get("text") == [st.text], "the URL does not hold the new text")
            if not run.ok or scenario == "heatmap":
                return st
            await pause()
            if not (await _step(st, s.navigate("lab_temperature"))).ok:
                return st
        else:
            if not (await _step(st, s.open(lab_link()))).ok:
                return st
            st.upstream = dict(s.upstream)
        for _ in range(2 if scenario == "lab" else 1):
            await pause()
            options = list(s.widget("temp_T").options)
            target = options[rng.randrange(len(options))]
            run = await _step(st, s.set_widget("temp_T", target, "slider"))
            _check(run, any(t.startswith("The worked example at T = ") for t in s.texts())
                   and parse_qs(s.query_string).get("temp_T") == [target], f"the lab does not show T = {target}")
            if not run.ok:
                return st
    except Exception as e:  # the generator's own failure is a failed interaction, never a crash of the run
        st.runs.append(Run("session", 0.0, "error", [f"{type(e).__name__}: {e}"]))
    finally:
        if not st.dropped:
            await s.close()
    return st
