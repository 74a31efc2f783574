"""Bench figures: analysis_ratio_512 (entropy + rollout + role scores vs one eager forward pass) and
flow_seconds_24 (attention flow from one output token to every input, 24 tokens, default model)."""
from __future__ import annotations

import numpy as np

from attnviz.bench import seconds
from attnviz.metrics.analysis import analyse



def figures(quick: bool = False) -> dict[str, float]:
    import torch

    from attnviz.examples import long_text
    from attnviz.extract import extract
    from attnviz.models import load_model
    from attnviz.models.adapter import run

    loaded = load_model("minilm")
    result = extract(loaded, long_text(), max_tokens=512)
    ids = torch.tensor([list(result.token_ids)])
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
              "token_type_ids": torch.tensor([np.asarray(result.segment_ids).tolist()])}

    def forward():
        run(loaded, inputs, output_attentions=True)

    repeats = 5 if quick else 11
    forward(), analyse(result)  # warm up
    # interleaved, best of each: the 2 cores are shared, and the minimum is the least disturbed run
    pairs = [(seconds(forward), seconds(lambda: analyse(result))) for _ in range(repeats)]
    t_forward = min(f for f, _ in pairs)
    t_analysis = min(a for _, a in pairs)
    return {"analysis_ratio_512": t_analysis / t_forward, "flow_seconds_24": _flow_seconds(loaded)}


def _flow_seconds(loaded) -> float:
    from attnviz.examples import long_text
    from attnviz.extract import extract
    from attnviz.metrics.flow import MAX_FLOW_TOKENS, attention_flow
    from attnviz.metrics.rollout import fuse_heads, mixing_matrices

    short = extract(loaded, long_text(), max_tokens=MAX_FLOW_TOKENS)
    mixes = mixing_matrices(fuse_heads(short.attention))
    return min(seconds(lambda: attention_flow(mixes, [0])) for _ in range(3))
