"""Bench figures of generation on SmolLM2:
gen_overhead_256      generating 256 tokens greedily with every step recorded / transformers' `generate` with its
                      KV cache and nothing recorded, same prompt (goal <= 1.3); best of interleaved repeats
gen_step_ratio_2048   one step at a 2,048-token context with recording / the same step without (goal <= 1.3)
gen_view_ms           the server-side work of switching the viewed step on the Generate page: the step's rows, shaded
                      text, candidates, logit lens and the figures' JSON (64 tokens written; median of 7; goal
                      <= 150 ms; Streamlit's own rerun cost is heatmap_rerun_ms_512's floor)
gen_memory_1024_mb    the most memory a 1,024-token generation with every step recorded took above the loaded model
                      (resident set, sampled every 20 ms, in a process of its own; goal <= 2,048 MB), beside
gen_memory_estimate_1024_mb  what the page says before it runs (quick: 256 tokens)"""
from __future__ import annotations

import statistics

from attnviz.bench import seconds

PROMPT = "The history of attention in neural networks began with translation, when"


def _overhead(loaded, n_new: int, repeats: int) -> dict[str, float]:
    import torch

    from attnviz.generate.run import generate
    from attnviz.generate.sampling import Sampling

    ids = loaded.tokenizer(PROMPT)["input_ids"]
    s = Sampling(max_new_tokens=n_new, stop_at_eos=False)

    def plain():  # transformers' own loop: the baseline, not a feature's forward
        with torch.inference_mode():
            loaded.model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                  do_sample=False, max_new_tokens=n_new, min_new_tokens=n_new,
                                  pad_token_id=loaded.tokenizer.eos_token_id)

    ours_t, plain_t = [], []
    generate(loaded, ids, Sampling(max_new_tokens=4, stop_at_eos=False))  # warm both paths
    for _ in range(repeats):
        ours_t.append(seconds(lambda: generate(loaded, ids, s)))
        plain_t.append(seconds(plain))
    return {f"gen_overhead_{n_new}": min(ours_t) / min(plain_t), f"gen_seconds_{n_new}": min(ours_t),
            f"gen_plain_seconds_{n_new}": min(plain_t)}


def _step_ratio(loaded, context: int, repeats: int) -> dict[str, float]:
    import torch
    from transformers import DynamicCache

    from attnviz.bench.long import long_text_of
    from attnviz.generate import run as gen_run
    from attnviz.models.adapter import record, run

    ids = loaded.tokenizer(long_text_of(loaded.tokenizer, context))["input_ids"][: context - 1]
    nxt = torch.tensor([[ids[-1]]])
    cache = DynamicCache(config=loaded.model.config)
    run(loaded, {"input_ids": torch.tensor([ids[:-1]])}, past_key_values=cache, use_cache=True, logits_to_keep=1)
    base = cache.get_seq_length()

    def step_plain():
        run(loaded, {"input_ids": nxt}, past_key_values=cache, use_cache=True)
        cache.crop(base - cache.get_seq_length())  # drop the step just added

    def step_recorded():
        with torch.inference_mode(), record(loaded, replace=replace, kernel=kernel) as rec:
            rec.forward(input_ids=nxt, past_key_values=cache, use_cache=True)
        cache.crop(base - cache.get_seq_length())  # drop the step just added

    kernel, replace = gen_run.step_hooks(loaded)
    plain_t, ours_t = [], []
    for _ in range(2):
        step_plain(), step_recorded()
    for _ in range(repeats):
        plain_t.append(seconds(step_plain))
        ours_t.append(seconds(step_recorded))
    return {f"gen_step_ratio_{context}": statistics.median(ours_t) / statistics.median(plain_t)}


def _view_ms(loaded, n_new: int, repeats: int) -> float:
    """The server-side work of showing another step (what the Generate page computes for it): the step's rows in
    every head, its shaded text, the candidates, the step's logit lens and the figures' JSON."""
    from attnviz.generate import figures as gf
    from attnviz.generate.run import generate, step_lens, token_labels
    from attnviz.generate.sampling import Sampling
    from attnviz.heatmap.text_view import shaded_text_html

    ids = loaded.tokenizer(PROMPT)["input_ids"]
    g = generate(loaded, ids, Sampling(max_new_tokens=n_new, stop_at_eos=False))
    labels = token_labels(loaded, g.ids)

    def view(i: int) -> None:
        s = g.steps[i]
        rows = g.row(i)
        shaded_text_html(labels[: s.query + 1], rows[0, 0], focus=s.query)
        cand = token_labels(loaded, [int(t) for t in s.top_ids])
        figs = [gf.candidates_figure(cand, s.p_before, s.p_after, 0, "c"),
                gf.lens_figure(*step_lens(loaded, s, k=5), labels[g.n_prompt + i], "l"),
                gf.step_grid_figure(rows, labels, s.query, "g")]
        for fig in figs:
            fig.to_json()

    view(0)
    times = [seconds(lambda i=i: view((i * 7 + 3) % n_new)) * 1000 for i in range(repeats)]
    return statistics.median(times)


def _rss() -> int:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_above_model(n_new: int) -> dict[str, float]:
    """In this process: load SmolLM2, generate n_new tokens with recording, and report the peak resident memory
    above the loaded model and the page's estimate (MB)."""
    import gc
    import threading

    from attnviz.generate.run import generate, memory_estimate
    from attnviz.generate.sampling import Sampling
    from attnviz.models import load_model

    loaded = load_model("smollm2")
    ids = loaded.tokenizer(PROMPT)["input_ids"]
    generate(loaded, ids, Sampling(max_new_tokens=4, stop_at_eos=False))  # first-call allocations are the model's
    gc.collect()
    base, peak, done = _rss(), [0], threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            done.wait(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    g = generate(loaded, ids, Sampling(max_new_tokens=n_new, stop_at_eos=False))
    done.set()
    t.join()
    peak[0] = max(peak[0], _rss())
    mb = 1024 ** 2
    return {f"gen_memory_{n_new}_mb": (peak[0] - base) / mb,
            f"gen_memory_estimate_{n_new}_mb": memory_estimate(loaded, len(ids), n_new) / mb,
            f"gen_memory_tokens_{n_new}": len(g.steps)}


def _memory(n_new: int) -> dict[str, float]:
    """peak_above_model in a fresh process (this one's allocator holds what the other figures freed)."""
    import json
    import subprocess
    import sys

    code = f"import json; from attnviz.bench.generate import peak_above_model; print(json.dumps(peak_above_model({n_new})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def figures(quick: bool = False) -> dict[str, float]:
    from attnviz.models import load_model

    loaded = load_model("smollm2")
    out = _overhead(loaded, 64 if quick else 256, 1 if quick else 2)
    out.update(_step_ratio(loaded, 512 if quick else 2048, 5 if quick else 9))
    out["gen_view_ms"] = _view_ms(loaded, 16 if quick else 64, 3 if quick else 7)
    out.update(_memory(256 if quick else 1024))
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(figures()))
