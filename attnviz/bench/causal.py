"""Bench figures patch_heads_ratio (exact patching of every head of SmolLM2 on a ~20-token indirect-object pair,
over n_heads_total one-pair forwards) and attrib_patch_ratio (attribution patching, both runs and the backward
included, over one forward)."""
from __future__ import annotations

import time

CLEAN = "Yesterday, when Mary and John went to the little shop near the old station, John gave a drink to"
CORRUPTED = "Yesterday, when Mary and John went to the little shop near the old station, Alice gave a drink to"


def _best(fn, repeats: int) -> float:
    """The fastest of `repeats` calls, in seconds (the cores are shared: the minimum is the least disturbed)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def figures(quick: bool = False) -> dict[str, float]:
    from attnviz.causal import patching
    from attnviz.causal.attribution import attribution_patching
    from attnviz.causal.tasks import user_pair
    from attnviz.models import load_model
    from attnviz.models.adapter import run

    loaded = load_model("smollm2")
    pair = user_pair(loaded.tokenizer, CLEAN, CORRUPTED, " Mary", " John")
    inputs = patching.inputs_of(pair.corrupted)

    def forward():
        run(loaded, inputs, **patching.last_only(loaded))

    forward()  # warm up
    runs = patching.cache(loaded, pair)
    repeats = 1 if quick else 3
    # the forward is timed between the measured tasks too (the cores are shared, and loads come and go)
    ones = [_best(forward, 5)]
    heads = _best(lambda: patching.patch_heads(loaded, runs), repeats)
    ones.append(_best(forward, 5))
    attrib = _best(lambda: attribution_patching(loaded, pair), repeats)
    ones.append(_best(forward, 5))
    one = min(ones)
    n_heads = loaded.facts.n_layers * loaded.facts.n_heads
    return {"patch_heads_ratio": heads / (n_heads * one), "attrib_patch_ratio": attrib / one,
            "causal_pair_tokens": float(pair.n)}


if __name__ == "__main__":
    import json

    print(json.dumps(figures()))
