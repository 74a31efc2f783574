"""Contributions figures: contrib_ratio_512 = value-weighted attention (heads summed; each head's map is made
when a view reads it) + mixing ratios + ALTI for every layer at 512 tokens on the default model, over one eager
forward with attentions (the maths on the recorded block parts); contrib_total_ratio_512 = the whole
contributions() call (its own recorded forward included) over the same forward."""
from __future__ import annotations

from attnviz.bench import seconds


def figures(quick: bool = False) -> dict[str, float]:
    from attnviz.contrib.compute import contributions
    from attnviz.contrib.decompose import decompose
    from attnviz.contrib.parts import record
    from attnviz.examples import long_text
    from attnviz.extract import encode
    from attnviz.models import load_model
    from attnviz.models.adapter import run

    loaded = load_model("minilm")
    text = long_text() * 2
    e = encode(loaded, text, max_tokens=512)

    def forward():
        return run(loaded, e.inputs, output_attentions=True)[0]

    _, layers = record(loaded, e.inputs)
    forward(), decompose(layers)  # warm up
    repeats = 3 if quick else 7
    # interleaved, best of each: the 2 cores are shared, and the minimum is the least disturbed run
    runs = [(seconds(forward), seconds(lambda: decompose(layers)),
             seconds(lambda: contributions(loaded, text, max_tokens=512))) for _ in range(repeats)]
    t_forward = min(r[0] for r in runs)
    return {
        "contrib_ratio_512": min(r[1] for r in runs) / t_forward,
        "contrib_total_ratio_512": min(r[2] for r in runs) / t_forward,
        "contrib_forward_seconds_512": t_forward,
    }
