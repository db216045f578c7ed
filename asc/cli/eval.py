"""``python -m asc eval --corpus SPEC --out RUN``: AsC-Eval over a corpus into a run folder, and its Table-I summary.

The corpus is loaded (and refused, one line, exit 2) before the model; the run folder is resumed when it exists
(:func:`asc.corpus.run_corpus`; Ctrl-C keeps the finished chunks). ``--engine ray`` scores on a pool of Ray actors
(:func:`asc.corpus.engines.run_corpus_ray`). The summary is the bootstrapped median per category
(``categories.csv``); ``--per-layer`` (old name ``--layers``) adds the ``layers/`` table and a category x layer
summary (``layers.csv``), ``--forks`` the fork points (``forks.csv``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from asc.cli.args import (
    RenamedFlag,
    Subcommands,
    add_bootstrap_options,
    add_scoring_options,
    align_options,
    load_bundle,
    non_negative_int,
    number,
    out_folder,
    path_text,
    positive_int,
)
from asc.cli.runner import fmt, write_table
from asc.concepts import CONFIDENCE_LINE, load_categories

__all__ = ["add_parser", "execute", "gpu_share"]


def gpu_share(text: str) -> float:
    """argparse type of ``--gpus-per-worker``: what one Ray actor asks for, a fraction of one GPU (0 to 1) or a whole
    number of GPUs (:func:`asc.corpus.engines.check_gpu_share`), refused before Ray starts."""
    from asc.corpus.engines import check_gpu_share
    from asc.errors import InputError

    value = number(0)(text)
    try:
        check_gpu_share(value)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--gpus-per-worker ")) from None
    return value


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``eval`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("eval", help="evaluate a corpus, write Parquet results, print a Table-I-style summary")
    p.add_argument("--corpus", required=True, type=path_text,
                   help="humaneval | algorithms | stdlib | folder | .py/.java | .jsonl")
    p.add_argument("--out", required=True, type=out_folder, help="run folder (created; an existing one is resumed)")
    p.add_argument("--limit", type=positive_int, default=None, help="at most N snippets (at least 1; default: all)")
    p.add_argument("--min-lines", type=non_negative_int, default=None,
                   help="shortest function kept (default 5 for extracted)")
    p.add_argument("--max-lines", type=positive_int, default=None, help="longest function kept (default 60 for extracted)")
    p.add_argument("--batch-size", type=positive_int, default=8, help="snippets per batched scoring call")
    add_bootstrap_options(p)
    p.add_argument("--threshold", type=number(0, 1), default=CONFIDENCE_LINE, help="the 'acceptable confidence' line")
    p.add_argument("--per-layer", "--layers", action=RenamedFlag, help="also AsC-Eval at every layer (logit lens; "
                   "about 3-8x the cost): adds the layers/ table and a category x layer summary")
    p.add_argument("--forks", action="store_true", help="also count fork points (tokens where the model hesitates): "
                   "per-token margin, per-node counts, the forks/ table and a fork-rate summary per category")
    p.add_argument("--fork-margin", type=number(0, 1), default=None,
                   help="--forks: a top-2 margin below this is a fork (0.1)")
    p.add_argument("--fork-entropy", type=number(0), default=None,
                   help="--forks: an entropy above this (nats) is a fork (2.0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--engine", default="local", choices=("local", "ray"),
                   help="local: this process; ray: a pool of Ray actors (see docs/ray.md, 'Running on a Ray cluster')")
    p.add_argument("--address", default=None, help="--engine ray: the cluster to join, HOST:6379, ray://HOST:10001 "
                   "or auto; it must answer within 20 s (default: $ASC_RAY_ADDRESS, else a new local Ray)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="--engine ray: model actors (default: one per GPU, or 2 without GPUs)")
    p.add_argument("--gpus-per-worker", type=gpu_share, default=None,
                   help="--engine ray: GPUs per actor (default: 1 when the cluster has GPUs, else 0)")
    add_scoring_options(p)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Run (or resume) the corpus, then print and write its summaries; 130 when interrupted."""
    from asc.corpus import category_table, load_run, run_corpus
    from asc.corpus.forks import cli_settings
    from asc.corpus.runs import check_out, load_digest
    from asc.corpus.sources import load_corpus

    forks = cli_settings(args.forks, args.fork_margin, args.fork_entropy)  # bad thresholds: before anything loads
    # load_corpus refuses --min-lines above --max-lines before it reads anything (check_line_range)
    snippets = load_corpus(args.corpus, limit=args.limit, min_lines=args.min_lines, max_lines=args.max_lines)
    out = Path(args.out)
    check_out(out, snippets)  # a bad --out: before the model loads
    t0 = time.perf_counter()
    settings: dict[str, Any] = {"corpus": args.corpus, "aggregate": args.aggregate, "options": align_options(args),
                                "batch_size": args.batch_size, "max_window": args.max_window,
                                "progress": not args.quiet, "layers": args.per_layer, "forks": forks}
    try:
        if args.engine == "ray":
            from asc.corpus.engines import run_corpus_ray
            from asc.paths import ray_address

            run_corpus_ray(args.model, snippets, out, workers=args.workers, address=args.address or ray_address(),
                           gpus_per_worker=args.gpus_per_worker, trust_remote_code=args.trust_remote_code,
                           device=getattr(args, "device", "cpu"), dtype=getattr(args, "dtype", "float32"), **settings)
        else:
            run_corpus(load_bundle(args), snippets, out, **settings)
    except KeyboardInterrupt:
        print(f"interrupted: finished chunks are saved in {out}; run the same command again to resume",
              file=sys.stderr)
        return 130
    elapsed = time.perf_counter() - t0
    run = load_run(out, tables=("snippets",))
    digest = load_digest(out)
    table = category_table(digest, load_categories(digest.language).categories,
                           n_boot=args.n_boot, seed=args.seed, method=args.bootstrap)
    write_table(table, out / "categories.csv")
    print(f"\nAsC-Eval, {run.meta.model_name} on {args.corpus}: {len(run.snippets)} snippets, "
          f"{int(run.snippets['n_tokens'].sum())} tokens, mean loss {run.snippets['loss'].mean():.3f} nats/token "
          f"({elapsed:.0f} s this run)")
    print(f"bootstrapped median of node values ({args.n_boot} {args.bootstrap}-level resamples, seed {args.seed}, "
          "95% interval)\n")
    for row in table.itertuples():
        mark = "  " if row.median != row.median else ("+ " if row.median >= args.threshold else "- ")
        print(f"{mark}{row.category:<24} {fmt(row.median)}  [{fmt(row.ci_low)}, {fmt(row.ci_high)}]  "
              f"nodes {row.n_nodes:>7}  snippets {row.n_snippets:>5}")
    print(f"\n(+ at or above the {args.threshold} line, - below)  results: {out}")
    if args.per_layer:
        _print_layers(out, args.threshold)
    if forks is not None:
        from asc.corpus.forks import fork_report, fork_table

        rates = fork_table(digest, n_boot=args.n_boot, seed=args.seed)
        print(fork_report(rates, forks, args.n_boot, args.seed) + f"\n(also in {write_table(rates, out / 'forks.csv')})")
    return 0


def _print_layers(out: Path, threshold: float) -> None:
    """The category x layer summary of a ``--per-layer`` run (written as ``layers.csv``): a few layers' medians
    and the first layer at or above ``threshold``."""
    from asc.corpus.depth import crossing_table, layer_summary

    summary = layer_summary(out)
    write_table(summary, out / "layers.csv")
    last = int(summary["layer"].max())
    print(f"\nper layer (logit lens, layer 0 = embeddings, {last} = output): median node value, and the first "
          f"layer at or above {threshold}")
    wide = summary.pivot_table(index="category", columns="layer", values="value")
    picks = sorted({0, last // 4, last // 2, 3 * last // 4, last})
    crossing = crossing_table(summary, threshold).set_index("category")
    for category, row in wide.iterrows():
        cells = "  ".join(f"L{k}:{fmt(row.get(k), 2)}" for k in picks)
        first = crossing.loc[category, "crossing"]
        print(f"  {category:<24} {'-' if first != first else int(first):>4}  {cells}")
    print(f"(all layers in {out / 'layers.csv'})")
