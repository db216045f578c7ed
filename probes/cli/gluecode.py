"""``python -m probes gluecode --out RUN [--model M]``: glueCode's five tasks from local to global, zero-shot.

The tasks (NPATH, OPS, NAME, CALL, NULL) are built once from a corpus into the run folder (:mod:`probes.gluecode`;
resumable), then each model answers them at the context levels asked for (function, file, call graph) within
``--max-window`` tokens. The report is the accuracy per task and level beside the paper's Table 2, and the trivial
baselines fitted on dev and scored on test. Without ``--model`` it only builds the tasks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from asc.cli.args import (
    Subcommands,
    add_model_options,
    load_bundle,
    out_folder,
    path_text,
    positive_int,
    seed_int,
)
from asc.cli.runner import stage_bar
from probes.gluecode.likelihood import DEFAULT_MAX_WINDOW

__all__ = ["add_parser", "execute"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``gluecode`` to ``python -m probes``'s subcommands."""
    p = sub.add_parser("gluecode", help="glueCode: five tasks from local to global, zero-shot, at three context "
                       "levels (resumable)")
    p.add_argument("--model", action="append", default=None,
                   help="embedded name, folder, .gguf or hub id; repeatable (none: build the tasks only)")
    p.add_argument("--tasks", default="all", help="all, or comma-separated among NPATH,OPS,NAME,CALL,NULL")
    p.add_argument("--corpus", type=path_text, default="stdlib", help="stdlib, algorithms, humaneval, a folder or .jsonl")
    p.add_argument("--context", default="function,file,callgraph", help="context levels, comma-separated")
    p.add_argument("--size", type=positive_int, default=1000, help="items per task (dev and test together)")
    p.add_argument("--seed", type=seed_int, default=0, help="item sampling and bootstrap seed")
    p.add_argument("--out", required=True, type=out_folder,
                   help="run folder (tasks and predictions are resumed from it)")
    p.add_argument("--max-window", type=positive_int, default=DEFAULT_MAX_WINDOW,
                   help=f"tokens of context at most (default {DEFAULT_MAX_WINDOW}, or the model's own if smaller); "
                   "longer contexts are cut from the far end")
    add_model_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Build (or resume) the tasks, run every model on them and print Table 2 and the baselines."""
    import pandas as pd

    from probes.gluecode.items import CONTEXTS, TASKS
    from probes.gluecode.runs import build_or_load, load_predictions, run_gluecode, set_name, table2
    from probes.gluecode.splits import split_summary
    from probes.gluecode.zeroshot import accuracy_table, baselines

    tasks = list(TASKS) if args.tasks in ("", "all") else [t.strip().upper() for t in args.tasks.split(",")]
    contexts = [c.strip() for c in args.context.split(",")]
    wrong = [c for c in contexts if c not in CONTEXTS]
    if wrong:
        from asc.errors import InputError

        raise InputError(f"--context {', '.join(wrong)}: choose among {', '.join(CONTEXTS)}")
    out = Path(args.out)
    update, close = stage_bar("building tasks", args.quiet)
    try:
        items = build_or_load(out, args.corpus, tasks, args.size, args.seed)
        task_set = set_name(args.corpus, args.size, args.seed)
    finally:
        close()
    for task, task_items in items.items():
        print(f"{task}: {len(task_items)} items ({split_summary(task_items)})")
    for spec in args.model or []:
        bundle = load_bundle(args, spec)
        update, close = stage_bar(bundle.name, args.quiet)
        try:
            run_gluecode(bundle, items, out, task_set=task_set, contexts=contexts, on_progress=update,
                         max_window=args.max_window)
        finally:
            close()
    predictions = [p for p in load_predictions(out, task_set) if p.task in items]
    if predictions:
        table = table2(accuracy_table(predictions, seed=args.seed))
        with pd.option_context("display.width", 200, "display.max_columns", None):
            print("\nglueCode on Python, zero-shot (test split; NAME: char-BLEU of the generated name; others: "
                  "accuracy / exact match), beside the paper's Table 2 (Java, fine-tuned):\n")
            print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
    all_items = [it for task_items in items.values() for it in task_items]
    print("\nTrivial baselines (fitted on dev, scored on test):")
    print(baselines(all_items, seed=args.seed).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\ntasks and predictions under {out}; NullToken labels mean 'the type checker warns here', not proven bugs")
    return 0
