"""``python -m asc attribute-corpus RUN``: corpus attribution into a run folder, then its target x source matrix.

It loads the run's own model (its name and dtype from meta.json, unless ``--dtype`` says otherwise), fills the run's
``attribution/`` table (:func:`asc.why.corpus_run.attribute_run`: ``--k`` target nodes per snippet, stratified by
category, seeded by ``--seed``; resumable), and prints per target category the source categories with the largest
mean share and the shares by AST distance, with snippet-bootstrap intervals (:mod:`asc.why.matrix`). ``--out``
writes the whole matrix and the distance shares as one long table (.csv or .json). A folder that is not a run, or
one attributed before with other settings: one line, exit 2, before the model loads.
"""

from __future__ import annotations

import argparse
from typing import Any

from asc.cli.args import (
    Subcommands,
    add_model_options,
    count,
    load_bundle,
    out_table,
    path_text,
    positive_int,
    seed_int,
)
from asc.cli.runner import fmt, stage_bar, write_table

__all__ = ["add_parser", "execute", "matrix_table"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``attribute-corpus`` to ``python -m asc``'s subcommands."""
    from asc.corpus.bootstrap import MAX_N_BOOT
    from asc.why.corpus import DEFAULT_K, MAX_K

    p = sub.add_parser("attribute-corpus", help="gradient x input for k target nodes per snippet of a run folder, "
                       "stored per source category and AST distance; prints the target x source category matrix")
    p.add_argument("run", type=path_text, help="a run folder written by eval")
    p.add_argument("--k", type=count(MAX_K, "each target costs a gradient pass; a long function has fewer "
                                        "candidates"), default=DEFAULT_K,
                   help=f"target nodes per snippet, stratified by category (default {DEFAULT_K}, at most {MAX_K})")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the targets' sample (default 0)")
    p.add_argument("--model", default=None, help="the run's model (default: the one meta.json names)")
    p.add_argument("--n-boot", type=count(MAX_N_BOOT, "more resamples no longer move the interval"), default=500,
                   help="bootstrap resamples of the matrix (default 500)")
    p.add_argument("--top", type=positive_int, default=3, help="source categories printed per target (default 3)")
    p.add_argument("--out", default=None, type=out_table,
                   help="write the matrix and the distance shares as a long table (.csv or .json)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_model_options(p)
    p.epilog = ("--dtype: by default the dtype the run was evaluated in (its meta.json), so the targets' "
                "log-probabilities are the run's")
    p.set_defaults(func=execute, dtype=None)
    return p


def matrix_table(matrix: Any) -> Any:
    """The matrix and its distance shares as one long table: ``kind`` "source" or "distance", ``source`` the
    source category or the distance bin."""
    import pandas as pd

    cats = matrix.frame().rename(columns={"source_category": "source"}).assign(kind="source")
    dist = matrix.distance_frame().rename(columns={"distance": "source"}).assign(kind="distance")
    return pd.concat([cats, dist], ignore_index=True)[["model", "kind", "target_category", "source", "share",
                                                       "ci_low", "ci_high", "signed", "n_targets", "n_snippets"]]


def execute(args: argparse.Namespace) -> int:
    """Attribute the run's pending snippets, then print the matrix (and write ``--out``)."""
    from pathlib import Path

    from asc.errors import CorpusError
    from asc.why.corpus_run import ATTRIBUTION_TABLE, attribute_run, attribution_settings, pending_parts, run_settings
    from asc.why.matrix import run_matrix

    run = Path(args.run)
    settings = run_settings(run)  # refuse what is not a run before loading the model
    old = attribution_settings(run)
    if old is not None and (old.get("k"), old.get("seed")) != (args.k, args.seed):
        raise CorpusError(f"{run / ATTRIBUTION_TABLE} was made with --k {old.get('k')} --seed {old.get('seed')}: "
                          f"run it with those, or delete {run / ATTRIBUTION_TABLE} to start again")
    model = settings["model"]
    args.dtype = args.dtype or model.get("dtype") or "float32"
    if pending_parts(run) or old is None:
        bundle = load_bundle(args, args.model or model["name"])
        update, close = stage_bar("attribution", args.quiet)
        try:
            attribute_run(run, bundle, k=args.k, seed=args.seed,
                          on_progress=None if update is None else lambda done, total: update("snippets", done, total))
        finally:
            close()
    matrix = run_matrix(run, n_boot=args.n_boot, seed=0)
    print(f"\n{matrix.model}: gradient x input on {int(matrix.n_targets.sum())} target nodes of "
          f"{matrix.n_snippets_all} snippets (k = {matrix.k} per snippet); mean share of the absolute attribution "
          f"per source category, [95% interval over {args.n_boot} snippet resamples]")
    for i, target in enumerate(matrix.targets):
        order = sorted(range(len(matrix.sources)), key=lambda j: -matrix.share[i, j])[: args.top]
        cells = "  ".join(f"{matrix.sources[j]} {fmt(matrix.share[i, j], 2)} [{fmt(matrix.ci_low[i, j], 2)}, "
                          f"{fmt(matrix.ci_high[i, j], 2)}]" for j in order)
        print(f"  {target:<24} targets {int(matrix.n_targets[i]):>4}  {cells}")
    print("\nshare by AST distance (tree path length from the target), all targets: "
          + "  ".join(f"{b}: {fmt(matrix.distance[0, j], 2)}" for j, b in enumerate(matrix.distance_bins)))
    if args.out:
        print(f"wrote {write_table(matrix_table(matrix), Path(args.out))}")
    return 0
