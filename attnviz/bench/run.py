"""`python -m attnviz.bench`: the performance figures each issue names, as ratios from one run.

Each figure module exposes `figures(quick: bool) -> dict[str, float]`; a module that does
not exist yet is skipped, any other error fails the bench. The machine's load and speed at the
start and at the end (bench.machine) come first and last.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys

# Modules contributing figures, in print order.
FIGURE_MODULES = [
    "attnviz.bench.extract",  # extract_overhead_*, grid_bytes_*
    "attnviz.bench.analysis",  # analysis_ratio_512
    "attnviz.bench.complexity",  # naive_attention_slope
    "attnviz.bench.training",  # reverse_*
    "attnviz.bench.vision",  # vit_digits_accuracy, vit_train_seconds, vit_grid_bytes
    "attnviz.bench.attribution",  # ig_seconds_128
    "attnviz.bench.contrib",  # contrib_ratio_512, contrib_total_ratio_512
    "attnviz.bench.causal",  # patch_heads_ratio, attrib_patch_ratio (SmolLM2, a ~20-token pair)
    "attnviz.bench.generate",  # gen_overhead_256, gen_step_ratio_2048, gen_view_ms, gen_memory_1024_mb
    "attnviz.bench.long",  # long_extract_ratio_4096, long_peak_gb_4096, long_head_ms_4096, long_grid_bytes_4096
    "attnviz.bench.atlas",  # atlas_sentences_per_s, atlas_ratio, atlas_query_ms
    "attnviz.bench.rerun",  # heatmap_rerun_ms_512 (a Streamlit server and one websocket session)
    "attnviz.bench.load",  # smollm2_load_s_first, smollm2_load_s_again (fresh processes, a cache of their own)
]
LOAD_MODULE = "attnviz.bench.classload"  # class_*: a simulated class over websockets; only with --load
BROWSER_MODULE = "attnviz.bench.browser"  # browser_*: click-to-settled times in Chromium; only with --browser


def collect(quick: bool = False, modules: list[str] | None = None) -> dict[str, float]:
    import transformers

    from attnviz.bench.machine import probe

    transformers.logging.set_verbosity_error()
    out: dict[str, float] = probe("start")
    for name in modules or FIGURE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        out.update(module.figures(quick))
    return {**out, **probe("end")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnviz.bench", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quick", action="store_true", help="skip the slowest sizes")
    parser.add_argument("--load", action="store_true",
                        help="only the class figures: 60 simulated students on one server and on two replicas")
    parser.add_argument("--browser", action="store_true",
                        help="only the browser figures: interactions timed in Chromium until the page has settled")
    args = parser.parse_args(argv)
    only = [m for m, flag in ((LOAD_MODULE, args.load), (BROWSER_MODULE, args.browser)) if flag]
    figures = collect(args.quick, only or None)
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key} = {value:.4g}" if isinstance(value, float) else f"{key} = {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
