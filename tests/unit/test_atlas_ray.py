"""The Ray engine of corpus runs: on a local Ray instance started by the engine, a corpus
with two gold-parsed grammar sentences among plain ones writes a store identical, table by table, to the
inline engine's; the command line asks for the Ray engine and prints its summary; no Ray process is left
behind. Timings of both engines go to test-artifacts/atlas-ray-timing.json (reported, not asserted)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest
import ray

from attnviz.atlas import corpus as cp
from attnviz.atlas.run import run_corpus
from attnviz.atlas.store import TABLES

pytestmark = pytest.mark.slow  # starts a Ray cluster of two workers

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
KEYS = ("chunk", "sid", "relation", "direction", "offset", "layer", "head", "pos", "q", "k", "a", "b")
RAY_PROGRAMS = ("raylet", "gcs_server", "ray::", "default_worker.py", "dashboard/agent.py", "runtime_env/agent")


def _corpus() -> cp.Corpus:
    """8 sentences: six plain example sentences and two grammar sentences with gold parses, placed so
    that chunks of 3 hold a parsed sentence in chunks 0 and 2 and none in chunk 1."""
    from attnviz.examples import examples

    plain = [t for t, _ in examples()][:6]
    g0, g1 = cp.grammar_corpus(2)
    texts = [plain[0], plain[1], g0.text, plain[2], plain[3], plain[4], g1.text, plain[5]]
    parses = [None, None, g0, None, None, None, g1, None]
    return cp.Corpus("ray test", tuple(texts), parses=tuple(parses), parser=g0.source)


def _ray_pids() -> set[int]:
    """Ray's own processes on this machine (raylet, GCS, workers, agents), from /proc."""
    out = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(p in cmd for p in RAY_PROGRAMS):
            out.add(int(proc.name))
    return out


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":  # a zombie has exited; its parent reaps it
            alive.add(pid)
    return alive


def _assert_no_new_ray_processes(before: set[int], wait: float = 60.0) -> None:
    """Every Ray process started since `before` has exited within `wait` seconds (its workers take a while to
    stop when the cores are shared with other tests)."""
    deadline = time.time() + wait
    left = _alive(_ray_pids() - before)
    while left and time.time() < deadline:
        time.sleep(0.5)
        left = _alive(_ray_pids() - before)
    assert not left, f"Ray processes left behind: {sorted(left)}"


def _table(folder: Path, table: str) -> pd.DataFrame:
    files = sorted((folder / "parts").glob(f"{table}-*.parquet"))
    if not files:
        return pd.DataFrame()
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    keys = [c for c in KEYS if c in df.columns]
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def stores(minilm, tmp_path_factory, monkeypatch_module):
    """(inline store, ray store, timings): the same corpus through both engines, chunks of 3."""
    monkeypatch_module.delenv("RAY_ADDRESS", raising=False)  # a local instance, never a developer's cluster
    base = tmp_path_factory.mktemp("atlas-ray")
    corpus = _corpus()
    before = _ray_pids()
    t = time.perf_counter()
    s_inline = run_corpus("minilm", corpus, base / "inline", loaded=minilm, engine="inline", chunk_size=3)
    t_inline = time.perf_counter() - t
    t = time.perf_counter()
    s_ray = run_corpus("minilm", corpus, base / "ray", engine="ray", workers=2, chunk_size=3)
    t_ray = time.perf_counter() - t
    assert not ray.is_initialized(), "the engine started Ray, so it must shut it down"
    _assert_no_new_ray_processes(before)
    timing = {"sentences": len(corpus), "chunk_size": 3, "workers": 2, "inline_s": round(t_inline, 2),
              "ray_s": round(t_ray, 2), "note": "ray_s includes starting a local Ray instance and 2 actors "
              "that each import torch and load the model; inline reuses the loaded model"}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "atlas-ray-timing.json").write_text(json.dumps(timing, indent=1))
    print(f"\natlas ray vs inline: {timing}")
    return (base / "inline", s_inline), (base / "ray", s_ray), timing


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_ray_engine_writes_the_same_store_as_inline(stores):
    (inline, s_inline), (ray_folder, s_ray), _ = stores
    assert s_ray.n_done == s_inline.n_done == 8 and s_ray.n_truncated == s_inline.n_truncated == 0
    assert not s_ray.cancelled and s_ray.n_resumed == 0
    for c in range(3):
        assert (ray_folder / "parts" / f"done-{c:06d}.json").exists()
    for table in TABLES:
        a, b = _table(ray_folder, table), _table(inline, table)
        assert len(a) > 0, f"{table} is empty"
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=table)
    # the parses reached the actors intact (not flattened into Arrow): syntax rows for chunks 0 and 2 only
    syn = _table(ray_folder, "syntax")
    assert set(syn["chunk"]) == {0, 2} and {"det", "nsubj"} <= set(syn["relation"])
    tok = _table(ray_folder, "tokens")
    parsed_sids = set(tok.loc[tok["deprel"].notna(), "sid"])
    assert parsed_sids == {2, 6}
    # both engines describe the run identically
    m_inline = json.loads((inline / "manifest.json").read_text())
    m_ray = json.loads((ray_folder / "manifest.json").read_text())
    assert m_inline == m_ray


def test_ray_run_resumes_a_finished_store(stores):
    """Re-running on a finished store starts no Ray at all and stores nothing new."""
    _, (ray_folder, _), _ = stores
    s = run_corpus("minilm", _corpus(), ray_folder, engine="ray", workers=2, chunk_size=3)
    assert (s.n_done, s.n_resumed) == (8, 8) and not ray.is_initialized()


def test_cli_hands_the_ray_engine_to_the_run(tmp_path, minilm, monkeypatch, capsys):
    """`python -m attnviz.atlas --engine ray --workers 2` asks the run for the Ray engine with two workers and
    prints the run's summary. The run itself is the inline one here: the Ray engine is tested above (each
    engine run starts and stops a Ray instance of its own, which costs more than a minute on two cores)."""
    from attnviz.atlas import __main__ as cli

    corpus = tmp_path / "four.txt"
    corpus.write_text("The cat sat on the mat.\nParis is the capital of France.\n"
                      "A dog chased a small cat.\nHow many heads does BERT have?\n", encoding="utf-8")
    asked = {}

    def inline_run(model, corpus, out, engine, workers, **kw):
        asked.update(model=model, engine=engine, workers=workers)
        return run_corpus(model, corpus, out, loaded=minilm, engine="inline", **kw)

    monkeypatch.setattr("attnviz.atlas.run.run_corpus", inline_run)
    out = tmp_path / "store"
    assert cli.main(["--engine", "ray", "--corpus", str(corpus), "--out", str(out), "--workers", "2"]) == 0
    assert asked == {"model": "minilm", "engine": "ray", "workers": 2}
    printed = capsys.readouterr().out
    assert "4 of 4 sentences stored in" in printed and "0 cut at the model's limit" in printed
    assert len(_table(out, "sentences")) == 4 and len(list((out / "parts").glob("done-*.json"))) == 1


def test_unreachable_cluster_is_a_plain_message(tmp_path, monkeypatch):
    """RAY_ADDRESS naming a port nobody listens on fails in seconds with a sentence, not a Ray traceback."""
    from attnviz.errors import AttnvizError

    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    t = time.perf_counter()
    with pytest.raises(AttnvizError, match=r"Could not start or reach the Ray cluster at RAY_ADDRESS='127.0.0.1:1'"):
        run_corpus("minilm", _corpus(), tmp_path / "s", engine="ray", workers=2, chunk_size=3)
    assert time.perf_counter() - t < 30 and not ray.is_initialized()
