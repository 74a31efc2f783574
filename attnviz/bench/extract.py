"""Bench figures of the foundation: extraction overhead and grid bytes, measured in one run."""
from __future__ import annotations

from attnviz.bench import seconds


def _text_of(tokenizer, n_tokens: int) -> str:
    """A text that the tokenizer turns into exactly n_tokens (special tokens included)."""
    from attnviz.examples import long_text

    ids = tokenizer(long_text(2000), add_special_tokens=False)["input_ids"]
    n_special = len(tokenizer("a")["input_ids"]) - len(tokenizer("a", add_special_tokens=False)["input_ids"])
    return tokenizer.decode(ids[: n_tokens - n_special])



def extract_overhead(loaded, n_tokens: int, repeats: int) -> float:
    """Best extract() time / best bare HF forward (output_attentions=True, no hooks), interleaved runs.

    The minimum of many runs is the figure least disturbed by other work on the machine."""
    from attnviz.extract import extract
    from attnviz.models.adapter import run

    text = _text_of(loaded.tokenizer, n_tokens)
    inputs = dict(loaded.tokenizer(text, return_tensors="pt"))

    def bare():  # the model's own forward: no hook point, no in-place pattern
        run(loaded, inputs, output_attentions=True)

    def ours():
        extract(loaded, text)

    assert extract(loaded, text).seq_len == n_tokens
    bare(), ours()  # warm up
    t_bare, t_ours = [], []
    for _ in range(repeats):
        t_bare.append(seconds(bare))
        t_ours.append(seconds(ours))
    return float(min(t_ours) / min(t_bare))


def grid_bytes(loaded, n_tokens: int) -> int:
    """Bytes of the layers x heads grid figure's JSON, as sent to the browser."""
    from attnviz.extract import extract
    from attnviz.heatmap.figures import grid_figure
    from attnviz.heatmap.raster import GridLayout, default_thumb, grid_png

    r = extract(loaded, _text_of(loaded.tokenizer, n_tokens))
    layout = GridLayout(r.n_layers, r.n_heads, default_thumb(r.n_layers, r.n_heads, r.seq_len), 2)
    return len(grid_figure(grid_png(r.attention, layout), layout).to_json().encode())


def figures(quick: bool = False) -> dict[str, float]:
    from attnviz.models import load_model

    loaded = load_model("minilm")
    out: dict[str, float] = {}
    sizes = (16, 128) if quick else (16, 128, 512)
    for n in sizes:
        out[f"extract_overhead_{n}"] = extract_overhead(loaded, n, repeats={16: 40, 128: 20, 512: 8}[n])
    for n in (128, 256) if quick else (128, 256, 512):
        out[f"grid_bytes_{n}"] = grid_bytes(loaded, n)
    return out
