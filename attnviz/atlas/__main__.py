"""`python -m attnviz.atlas --model minilm --corpus default --out atlas-store`: a corpus run from the command
line, into the same store the app's Atlas page reads.

  --corpus   default | a .txt file (one sentence or paragraph a line) | a .csv file (with --column) |
             a .conllu file (gold words and dependency heads)
  --parse    parse a .txt/.csv corpus with spaCy's English pipeline (silver dependencies) for the syntax report
  --engine   embedded (local worker processes, the default) | ray (Ray Data; RAY_ADDRESS picks the cluster,
             otherwise a local Ray instance is started)
Re-running with the same model, corpus and settings resumes after the last finished chunk."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnviz.units import count_text


def load_corpus(spec: str, column: str | None = None, parse: bool = False, n_generated: int = 200):
    """A Corpus from the --corpus argument (see the module docstring)."""
    from attnviz.atlas import corpus as cp
    from attnviz.errors import BadInput

    if spec == "default":
        return cp.default_corpus(n_generated)
    path = Path(spec)
    if not path.is_file():
        raise BadInput(f"No corpus file at {spec!r}: give a .txt, .csv or .conllu file, or 'default'.")
    if path.stat().st_size > cp.MAX_BYTES:
        raise BadInput(f"{path.name} is {path.stat().st_size / 2**20:.0f} MB; the atlas takes files up to "
                       f"{cp.MAX_BYTES // 2**20} MB.")
    data = path.read_bytes()
    suffix = path.suffix.lower()
    if suffix == ".conllu":
        return cp.from_conllu(data, path.name)
    if suffix == ".csv":
        if not column:
            raise BadInput(f"{path.name} is a CSV file: name the column to read with --column "
                           f"(it has: {', '.join(cp.csv_columns(data))}).")
        corpus = cp.from_csv(data, column, path.name)
    else:
        corpus = cp.from_text(data, path.name)
    return cp.with_parses(corpus) if parse else corpus


def main(argv=None) -> int:
    from attnviz.errors import AttnvizError

    ap = argparse.ArgumentParser(prog="python -m attnviz.atlas", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm", help="registry key, hub id or local folder (default: minilm)")
    ap.add_argument("--corpus", default="default")
    ap.add_argument("--column", help="the CSV column holding the text")
    ap.add_argument("--parse", action="store_true", help="parse with spaCy (silver dependencies)")
    ap.add_argument("--out", required=True, help="store folder (created; resumed when it holds this run)")
    ap.add_argument("--engine", choices=("embedded", "ray"), default="embedded")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pieces", action="store_true", help="keep word pieces (default: merge them into words)")
    ap.add_argument("--max-tokens", type=int, default=None, help="cut longer inputs (default: the model's limit)")
    ap.add_argument("--chunk-size", type=int, default=64)
    ap.add_argument("--restart", action="store_true", help="empty the store folder first")
    args = ap.parse_args(argv)

    from attnviz.atlas.run import run_corpus

    def progress(done, total, message):
        print(f"\r{done}/{count_text(total)} sentences · {message}        ", end="", file=sys.stderr, flush=True)

    try:
        corpus = load_corpus(args.corpus, args.column, args.parse)
        if args.engine == "embedded" and args.workers < 1:
            raise AttnvizError("--workers must be at least 1.")
        summary = run_corpus(args.model, corpus, args.out, engine=args.engine, workers=args.workers,
                             words=not args.pieces, chunk_size=args.chunk_size, max_tokens=args.max_tokens,
                             restart=args.restart, progress=progress)
    except AttnvizError as e:
        print(f"\n{e}", file=sys.stderr)
        return 2
    print(file=sys.stderr)
    print(f"{summary.n_done} of {count_text(summary.n_sentences)} sentences stored in {summary.folder} "
          f"({summary.n_resumed} from an earlier run, {summary.n_truncated} cut at the model's limit) "
          f"in {summary.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
