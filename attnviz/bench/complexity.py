"""Complexity figures for `python -m attnviz.bench`: fitted log-log slopes of attention measured here."""
from __future__ import annotations

from attnviz.complexity.measure import BenchConfig, run, slopes


def figures(quick: bool = False) -> dict[str, float]:
    """naive_attention_slope (expected near 2), sdpa_attention_slope (2), linear_attention_slope
    (1); naive_memory_slope (2, peak bytes); naive_memory_vs_predicted and
    sdpa_memory_vs_naive at the largest n (peak bytes ratios)."""
    sizes = (512, 1024, 2048) if quick else (256, 512, 1024, 2048, 4096)
    cfg = BenchConfig(sizes=sizes, repeats=3 if quick else 5)
    results = run(cfg)
    time_slopes = slopes(results)
    mem_slopes = slopes(results, "peak_bytes")
    out = {f"{impl}_attention_slope": round(s, 3) for impl, s in time_slopes.items()}
    if "naive" in mem_slopes:
        out["naive_memory_slope"] = round(mem_slopes["naive"], 3)
    largest = {m.impl: m for m in results if m.n == max(cfg.sizes) and m.peak_bytes}
    if "naive" in largest:
        out["naive_memory_vs_predicted"] = round(largest["naive"].peak_bytes / largest["naive"].predicted_bytes, 3)
        if "sdpa" in largest:
            out["sdpa_memory_vs_naive"] = round(largest["sdpa"].peak_bytes / largest["naive"].peak_bytes, 4)
    return out
