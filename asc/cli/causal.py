"""``python -m asc causal RUN --out TABLE``: AsC-Causal on a run folder, the paper's Table II.

Per concept (treatment) of the run, the Pearson r with each confounder and with the loss, and the average treatment
effect on the loss with dowhy's three refuters (:func:`asc.causal.run_causal`; one worker process per concept,
``--jobs``). The refuters run on a seeded subsample of ``--refute-sample`` snippets per concept (``all``: every
snippet); the estimates always use all. ``--treatments`` computes only the rows named (each row is computed on its
own with the same seed: the same values as in the whole table). The full table (p-values, refuter effects, verdicts
in words) is written to ``--out`` (.csv or .json); the two views the app's page shows are printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from asc.causal import MAX_SIMULATIONS
from asc.cli.args import Subcommands, count, out_table, path_text, positive_int, seed_int
from asc.cli.runner import write_table

__all__ = ["add_parser", "execute", "refute_sample", "treatment_list"]


def refute_sample(text: str) -> int | None:
    """argparse type of ``--refute-sample``: a count, or ``all`` (None); asc.causal checks the minimum."""
    return None if text.strip().lower() == "all" else positive_int(text)


def treatment_list(text: str) -> list[str]:
    """argparse type of ``--treatments``: comma-separated names (asc.causal checks them against the run's)."""
    return [name.strip() for name in text.split(",")]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``causal`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("causal", help="AsC-Causal: Pearson r and dowhy effects of concepts on the loss (Table II)")
    p.add_argument("run", type=path_text, help="a run folder written by eval")
    p.add_argument("--out", required=True, type=out_table, help="output table (.csv or .json)")
    p.add_argument("--min-snippets", type=positive_int, default=30,
                   help="fewer snippets with a treatment: 'not enough data'")
    p.add_argument("--simulations", type=count(MAX_SIMULATIONS, "a refuter's p-value resolves 1/simulations"),
                   default=50, help="simulations per refuter")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the refuters and of their subsample")
    p.add_argument("--refute-sample", type=refute_sample, default=5000, metavar="N|all",
                   help="refuters run on a seeded subsample of N snippets per concept when it has more (the "
                   "estimates always use all); 'all': every snippet (default 5000; docs/corpora.md, AsC-Causal at "
                   "scale)")
    p.add_argument("--jobs", type=positive_int, default=min(4, os.cpu_count() or 1),
                   help="worker processes, one concept each (default: one per CPU core, at most 4); same results")
    p.add_argument("--treatments", type=treatment_list, default=None, metavar="NAME[,NAME...]",
                   help="only these rows of Table II, by the names of its treatment column (e.g. 'Global,category: "
                   "Decision'); default: every treatment of the run's language")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Run AsC-Causal, write the table and print its two views."""
    from asc.causal import chosen_treatments, run_causal
    from asc.corpus.runs import load_run
    from asc.viz.causal import table2_views

    run = load_run(args.run, tables=("snippets", "concepts"))
    treatments = chosen_treatments(run, args.treatments)  # an unknown name stops here, listing the valid ones
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(treatments), unit="treatment", desc="AsC-Causal", file=sys.stderr)
    result = run_causal(run, min_snippets=args.min_snippets, seed=args.seed, simulations=args.simulations,
                        on_progress=(lambda d, t: bar.update(1)) if bar else None, refute_sample=args.refute_sample,
                        jobs=args.jobs, treatments=treatments)
    if bar is not None:
        bar.close()
    out = write_table(result.table, Path(args.out))
    import pandas as pd

    correlations, effects = table2_views({"": result.table})  # as the app's page shows them
    with pd.option_context("display.width", 250, "display.max_colwidth", 60, "display.max_columns", None):
        print("correlations (Pearson r of the treatment with each confounder and with the loss)\n")
        print(correlations.to_string(index=False))
        print("\naverage treatment effect on the loss (nats/token, 95% interval) and the refuters' verdicts\n")
        print(effects.to_string(index=False))
    print(f"\nfull table (p-values, refuter effects, verdicts in words): {out}")
    return 0
