"""``python -m asc compare RUN [RUN ...]``: the Table-I comparison of run folders written by ``eval``.

Per model and category the bootstrapped median of node values (:mod:`asc.corpus.summary`), sorted by the global
value; with two runs or more, the first minus the second per category; for runs made with ``--per-layer``, where
each category first reaches the confidence line in relative depth; for runs made with ``--forks``, the fork rates.
``--out`` writes the long table (model, category, median, interval) as .csv or .json. A run named twice is refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from asc.cli.args import Subcommands, add_bootstrap_options, out_table, path_text
from asc.cli.runner import write_table
from asc.concepts import CONFIDENCE_LINE

__all__ = ["add_parser", "execute"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``compare`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("compare", help="Table-I comparison of several run folders (written by eval)")
    p.add_argument("runs", nargs="+", type=path_text, help="run folders")
    p.add_argument("--out", default=None, type=out_table,
                   help="write the long table (model, category, median, interval) as .csv/.json")
    add_bootstrap_options(p)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Print the comparison (and write ``--out``)."""
    from asc.corpus.forks import fork_report, fork_summary
    from asc.corpus.runs import load_digest
    from asc.corpus.summary import difference_table, run_labels, summary_categories, summary_table, wide_table
    from asc.errors import InputError
    from asc.files import existing_path

    resolved = [str(existing_path(p, "run folder")) for p in args.runs]  # a symlink loop: one line, exit 2
    if len(set(resolved)) < len(resolved):
        raise InputError("the same run folder is given twice: name each run once")
    runs = [load_digest(path) for path in args.runs]
    categories = summary_categories(runs)
    summary = summary_table(runs, categories, n_boot=args.n_boot, seed=args.seed, method=args.bootstrap)
    wide = wide_table(summary)
    if args.out:
        write_table(summary, Path(args.out))
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_columns", None):
        print(f"AsC-Eval, bootstrapped median of node values ({args.n_boot} {args.bootstrap}-level resamples, "
              f"seed {args.seed}); "
              f"sorted by the global value\n")
        print(wide.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if len(runs) >= 2:
            diff = difference_table(runs[0], runs[1], "category")
            print(f"\n{diff['model_a'].iloc[0]} minus {diff['model_b'].iloc[0]} (median node value per category)\n")
            print(diff[["category", "median_a", "median_b", "difference", "nodes_a", "nodes_b"]]
                  .to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
        _compare_layers(args.runs, run_labels(runs))
        forks = fork_summary(runs, run_labels(runs), categories, args.n_boot, args.seed)  # runs made with --forks
        if len(forks):
            print(fork_report(forks, None, args.n_boot, args.seed))
    if args.out:
        print(f"\nlong table written to {args.out}")
    return 0


def _compare_layers(paths: list[str], labels: list[str]) -> None:
    """For the runs made with ``--per-layer``: where each category first reaches the confidence line, in relative
    depth."""
    from asc.corpus.depth import crossing_table, has_layers, layer_summary

    unique = [label if labels.count(label) == 1 else f"{label} ({k + 1})" for k, label in enumerate(labels)]
    layered = [layer_summary(p, label) for p, label in zip(paths, unique, strict=True) if has_layers(p)]
    if not layered:
        return
    import pandas as pd

    crossing = crossing_table(pd.concat(layered, ignore_index=True))
    wide = crossing.pivot(index="category", columns="model", values="crossing_depth")
    print("\nper layer (runs made with --per-layer): relative depth (layer / layers) where each category's median "
          f"first reaches {CONFIDENCE_LINE} (NaN: never)\n")
    print(wide.to_string(float_format=lambda v: f"{v:.2f}"))
