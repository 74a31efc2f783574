"""Bench figures of long inputs, measured in a child process so its peak memory is its own:
long_extract_ratio_N   the recording pass with every summary computed inside it (record_with_summaries) / the plain
                       SDPA forward alone (goal <= 1.5 at 4,096); best of interleaved repeats for both
long_peak_gb_N         peak resident memory of the whole child run, model load included (goal <= 4)
long_head_ms_N         one head's full n x n map recomputed on demand (goal <= 500 ms)
long_grid_bytes_N      the all-heads grid as sent to the browser: pooled tiles as one PNG in a plotly figure
                       (goal <= 2 MB)
long_sink_loss_ratio_window_1024 / _sinks_1024   the sink experiment (see sink_figures)
plus the seconds of both (forward, recording), the peak after loading the model alone, and the
memory estimate shown before running (what the run should add to that).
`python -m attnviz.bench.long 4096` runs one size and prints its JSON."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from attnviz.bench import seconds

TEXT = Path(__file__).resolve().parents[2] / "assets" / "long" / "attention-notes.txt"
SINK_TOKENS = 1024  # the sink experiment's length (three KV-cache policies, ~15 s on 2 cores)


def long_text_of(tokenizer, n_tokens: int) -> str:
    """The bundled long text, repeated when it is shorter than n_tokens tokens."""
    text = TEXT.read_text(encoding="utf-8")
    n = len(tokenizer(text)["input_ids"])
    return "\n\n".join([text] * (1 + n_tokens // max(n, 1)))


def measure(n_tokens: int, repeats: int = 1) -> dict[str, float]:
    """Every figure at n_tokens on SmolLM2, in this process (call it in a fresh one)."""
    import resource

    from attnviz.extract import encode
    from attnviz.heatmap.figures import grid_figure
    from attnviz.heatmap.raster import GridLayout, grid_png
    from attnviz.long.memory import long_memory_estimate
    from attnviz.long.record import long_inputs, record_with_summaries
    from attnviz.models import load_model
    from attnviz.models.adapter import run

    loaded = load_model("smollm2")
    loaded_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the model alone (Linux: KiB)
    text = long_text_of(loaded.tokenizer, n_tokens)
    e = encode(loaded, text, max_tokens=n_tokens)
    assert len(e.ids) == n_tokens, len(e.ids)
    inputs = long_inputs(loaded, e.inputs)

    def plain():  # SDPA attention, nothing recorded
        run(loaded, inputs, part="base", kernel="sdpa")

    out: dict = {}
    short = encode(loaded, text, max_tokens=64)  # warm up both paths (first calls allocate and initialise)
    run(loaded, long_inputs(loaded, short.inputs), part="base", kernel="sdpa")
    record_with_summaries(loaded, text, max_tokens=64)
    t_plain, t_ours = [], []
    for _ in range(repeats):  # interleaved: both see the same load on the machine
        out.clear()  # the previous run's record is not held through this one
        t_plain.append(seconds(plain))
        t_ours.append(seconds(lambda: out.update(zip(("la", "summaries"),
                                                      record_with_summaries(loaded, text, max_tokens=n_tokens)))))
    la, s = out["la"], out["summaries"]
    heads = [(0, 0), (la.n_layers // 2, 4), (la.n_layers - 1, la.n_heads - 1)]
    head_s = [seconds(lambda lh=lh: la.head(*lh)) for lh in heads]
    tiles = s.pooled.mean
    layout = GridLayout(la.n_layers, la.n_heads, tiles.shape[-1], 2)
    grid = len(grid_figure(grid_png(tiles, layout), layout).to_json().encode())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    n = n_tokens
    return sink_figures(loaded) | {
        f"long_extract_ratio_{n}": min(t_ours) / min(t_plain),
        f"long_peak_gb_{n}": peak / 1e9,
        f"long_head_ms_{n}": 1000 * sorted(head_s)[len(head_s) // 2],
        f"long_grid_bytes_{n}": grid,
        f"long_forward_s_{n}": min(t_plain),
        f"long_record_s_{n}": min(t_ours),  # recording and every summary, in one pass
        f"long_record_gb_{n}": la.nbytes / 1e9,
        f"long_loaded_gb_{n}": loaded_peak / 1e9,  # peak after loading the model, before any pass
        f"long_estimate_gb_{n}": long_memory_estimate(loaded.facts, n, d_ff=int(loaded.model.config.intermediate_size)) / 1e9,
        f"long_grid_png_bytes_{n}": s.pooled.payload_bytes("mean", "png"),
        f"long_grid_float16_bytes_{n}": s.pooled.payload_bytes("mean", "float16"),
    }


def sink_figures(loaded, n: int = SINK_TOKENS, cache: int = 256, sinks: int = 4) -> dict[str, float]:
    """The StreamingLLM experiment on SmolLM2 over the bundled text at n tokens, a KV cache of `cache` tokens:
    long_sink_loss_ratio_window_N = mean next-token loss once the cache is full, window-only cache / full cache
    (evicting the first tokens hurts: > 1), long_sink_loss_ratio_sinks_N = the same keeping the first `sinks`
    tokens (StreamingLLM's fix: close to 1), and the seconds of the three runs."""
    from attnviz.long.sinks import sink_experiment

    text = long_text_of(loaded.tokenizer, n)
    out: dict = {}
    t = seconds(lambda: out.setdefault("run", sink_experiment(loaded, text, cache=cache, sinks=sinks, max_tokens=n)))
    run = out["run"]
    full = run.mean_after("full")
    return {f"long_sink_loss_ratio_window_{n}": run.mean_after("window") / full,
            f"long_sink_loss_ratio_sinks_{n}": run.mean_after("sinks+window") / full,
            f"long_sink_loss_full_{n}": full, f"long_sink_s_{n}": t}


def run_child(n_tokens: int, repeats: int = 1, timeout: float = 1800) -> dict[str, float]:
    """measure() in a fresh Python process; its figures as a dict."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-m", "attnviz.bench.long", str(n_tokens), str(repeats)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=root)
    if proc.returncode:
        raise RuntimeError(f"the long-input bench at {n_tokens} tokens failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def figures(quick: bool = False) -> dict[str, float]:
    from attnviz.models.registry import installed

    if not installed("smollm2"):
        return {}  # SmolLM2 is not installed: nothing to measure
    if quick:
        return run_child(1024)
    out = run_child(4096, repeats=3)
    out.update(run_child(8192))  # SmolLM2's full context
    return out


if __name__ == "__main__":
    import transformers

    transformers.logging.set_verbosity_error()
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    print(json.dumps(measure(size, int(sys.argv[2]) if len(sys.argv) > 2 else 1)))
