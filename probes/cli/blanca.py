"""``python -m probes blanca --out RUN [--model M] [--finetune TASKS]``: BLANCA, embeddings of text about code.

Five tasks from the Python docs and the stdlib (R, L, F, H, U; :mod:`probes.blanca`) are built once into the run
folder (``--package``: H and U about an installed package's own classes), each model's embeddings are scored on
them, and ``--finetune`` fine-tunes ``--finetune-base`` on some tasks' train split before scoring it too. The report
is the paper-style table (MRR/NDCG, distances of positives and negatives, Pearson r) beside the paper's numbers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from asc.cli.args import (
    Subcommands,
    add_model_options,
    count,
    load_bundle,
    out_folder,
    path_text,
    positive_int,
    seed_int,
)
from asc.cli.runner import stage_bar

__all__ = ["MAX_EPOCHS", "add_parser", "execute"]

MAX_EPOCHS = 100  # --epochs at most: the paper fine-tuned for 10; each epoch is minutes on a CPU


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``blanca`` to ``python -m probes``'s subcommands."""
    p = sub.add_parser("blanca", help="BLANCA: do embeddings of text about code reflect what programmers know? "
                       "Five tasks from the Python docs and stdlib (resumable)")
    p.add_argument("--model", action="append", default=None,
                   help="embedded name (minilm-l6, smollm2-135m, gemma3-270m), sentence-transformers or HF folder, "
                   "hub id; repeatable (none: build the tasks only)")
    p.add_argument("--tasks", default="all", help="all, or comma-separated among R,L,F,H,U")
    p.add_argument("--package", action="append", help="H and U about this installed package's own classes (its "
                   "docstrings, hierarchy and uses), in a task set of their own; repeatable; needs --import-packages")
    p.add_argument("--import-packages", action="store_true",
                   help="allow importing --package modules to read their class docs (their top-level code runs)")
    p.add_argument("--docs", default=None, type=path_text, help="the Python documentation's _sources folder (default: Debian's "
                   "python3.11-doc); R, L and F are skipped with a message when it is missing")
    p.add_argument("--finetune", action="append", default=None, metavar="TASKS",
                   help="fine-tune --finetune-base on these tasks' train split (R, or all, or e.g. H,U), then score "
                   "it; repeatable")
    p.add_argument("--finetune-base", default="minilm-l6", help="sentence-transformers folder or minilm-l6 (default)")
    p.add_argument("--epochs", type=count(MAX_EPOCHS, "the paper fine-tuned for 10"), default=1,
                   help=f"fine-tuning epochs (default 1, at most {MAX_EPOCHS})")
    p.add_argument("--max-pairs", type=positive_int, default=1000, help="training pairs drawn per task (default 1000)")
    p.add_argument("--split", default="test", choices=["test", "all"],
                   help="items the table reports (all: more items, pretrained models only)")
    p.add_argument("--seed", type=seed_int, default=0, help="item sampling, training and bootstrap seed")
    p.add_argument("--out", required=True, type=out_folder,
                   help="run folder (tasks, scores and fine-tuned models are resumed from it)")
    add_model_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Build the tasks, score (and fine-tune) the models and print the BLANCA table."""
    import pandas as pd

    from probes.blanca.build import build_task_set, parse_tasks
    from probes.blanca.evaluate import blanca_table, summarize
    from probes.blanca.runs import finetune_task_set, finetuned_labels, load_scores, run_blanca, target_kinds

    tasks = parse_tasks(args.tasks)
    finetunes = [parse_tasks(spec) for spec in args.finetune or []]
    out = Path(args.out)
    update, close = stage_bar("building BLANCA tasks", args.quiet)
    try:
        task_set = build_task_set(out, sorted({*tasks, *(t for f in finetunes for t in f)}), packages=args.package or (),
                                  import_packages=args.import_packages, docs=args.docs, seed=args.seed,
                                  on_stage=_stage_only(update))
    finally:
        close()
    for line in task_set.size_lines():
        print(line)
    for task, why in task_set.skipped.items():
        print(f"{task}: skipped: {why}", file=sys.stderr)
    scored = [t for t in tasks if t in task_set.items]
    for spec in args.model or []:
        bundle = load_bundle(args, spec)
        update, close = stage_bar(bundle.name, args.quiet)
        try:
            run_blanca(bundle, task_set.only(scored), out, on_progress=update)
        finally:
            close()
    for chosen in finetunes:
        update, close = stage_bar(f"fine-tuning on {''.join(chosen)}", args.quiet)
        try:
            result = finetune_task_set(args.finetune_base, task_set, chosen, out, epochs=args.epochs,
                                       max_pairs=args.max_pairs, seed=args.seed, device=args.device,
                                       on_progress=_steps_only(update, "training"))
        finally:
            close()
        print(f"fine-tuned {result.folder} on {', '.join(result.tasks)} in {result.seconds:.0f} s")
        bundle = load_bundle(args, str(result.folder))
        update, close = stage_bar(bundle.name, args.quiet)
        try:
            run_blanca(bundle, task_set.only(scored), out, on_progress=update)
        finally:
            close()
    scores = load_scores(out, task_set.name, scored)
    if len(scores):
        if args.split == "all":
            scores = scores[~scores["model"].isin(finetuned_labels(out, task_set.name))]
        summary = summarize(scores, args.split, targets=target_kinds(task_set), seed=args.seed)
        with pd.option_context("display.width", 250, "display.max_columns", None):
            print(f"\nBLANCA on Python ({args.split} split; R: MRR/NDCG; L, F: mean cosine distance of positives (+) "
                  "and negatives (-), Student's t and Cohen's d; H, U: Pearson r, target read as a distance), beside "
                  "the paper's numbers (StackOverflow/Graph4Code data; compare d, not t: t grows with the sample):\n")
            print(blanca_table(summary).to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
    print(f"\ntasks, scores and fine-tuned models under {out}")
    return 0


def _stage_only(update: Callable[[str, int, int], None] | None) -> Callable[[str], None] | None:
    """A stage-name callback that moves a :func:`~asc.cli.runner.stage_bar` (None when quiet)."""
    return None if update is None else (lambda stage: update(stage, 0, 1))


def _steps_only(update: Callable[[str, int, int], None] | None, stage: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback that moves a :func:`~asc.cli.runner.stage_bar` under ``stage`` (None when
    quiet)."""
    return None if update is None else (lambda done, total: update(stage, done, total))
