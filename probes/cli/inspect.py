"""``python -m probes inspect --model M --tasks T --out RUN`` (old name ``probes layers``): INSPECT's layer probes.

A linear probe per layer and task on the model's per-layer summary vectors (:func:`probes.inspect.runs.run_layers`;
resumable, one model after the other), for INSPECT's 15 tasks, glueCode's NPATH and NULL, or task files of one's
own (``--task-file``). It prints the test accuracy at the layer chosen on dev per model and task, and, with
``--baseline``, the table normalized between that model (0) and the best (100), the paper's Table III.
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
from probes.features import PROBE_MAX_TOKENS

__all__ = ["add_parser", "execute"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``inspect`` (which also answers to its old name, ``layers``) to ``python -m probes``'s subcommands."""
    p = sub.add_renamed("inspect", "layers", help="INSPECT: linear probes on every layer, per task (INSPECT's 15, "
                        "glueCode's NPATH and NULL; resumable)")
    p.add_argument("--model", action="append", required=True,
                   help="embedded name (smollm2-135m, gemma3-270m, minilm-l6), folder, .gguf or hub id; repeatable")
    p.add_argument("--tasks", default="", help="comma-separated tasks: INSPECT's (KTX,IDN,...; 'all': the 15) "
                   "and glueCode's NPATH and NULL (NULL runs mypy: stdlib, algorithms or a folder of .py files)")
    p.add_argument("--task-file", action="append", type=path_text, help="an INSPECT TSV task file (split<TAB>label<TAB>text); repeatable")
    p.add_argument("--out", required=True, type=out_folder, help="run folder (results are resumed from it)")
    p.add_argument("--corpus", type=path_text, default="stdlib", help="corpus the tasks are built from (default stdlib)")
    p.add_argument("--size", type=positive_int, default=1000, help="samples per task (1000 default, 10000 on request)")
    p.add_argument("--pooling", default="auto", choices=["auto", "last", "mean", "first"],
                   help="summary vector: auto = last token for decoders, first/CLS for encoders")
    p.add_argument("--max-tokens", type=positive_int, default=PROBE_MAX_TOKENS, help="longer samples are truncated")
    p.add_argument("--seed", type=seed_int, default=0, help="task sampling, splits and control labels")
    p.add_argument("--baseline", default="minilm-l6", help="model name for the normalized table (Table III)")
    add_model_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Probe every model's layers on the tasks and print the accuracy tables."""
    from probes.catalog import build_tasks
    from probes.inspect.runs import best_layer_table, load_results, normalized_table, run_layers

    tasks = build_tasks(args.tasks.split(",") if args.tasks else [], args.corpus, args.size, args.seed,
                        args.task_file or [])
    out = Path(args.out)
    for spec in args.model:
        bundle = load_bundle(args, spec)
        update, close = stage_bar(bundle.name, args.quiet)
        try:
            run_layers(bundle, tasks, out, pooling=None if args.pooling == "auto" else args.pooling, seed=args.seed,
                       max_tokens=args.max_tokens, corpus=args.corpus, on_progress=update)
        finally:
            close()
    best = best_layer_table(load_results(out))
    wanted = {t.name for t in tasks}
    best = best[best["task"].isin(wanted)]
    table = best.pivot_table(index="model", columns="task", values="accuracy", aggfunc="max")
    print("Test accuracy at the layer chosen on dev:")
    print(table.round(3).to_string())
    if args.baseline and args.baseline in set(best["model"]):
        print(f"\nNormalized between {args.baseline} (0) and the best model (100):")
        print(normalized_table(best, args.baseline).round(1).to_string())
    print(f"\nResults, features and tasks under {out}")
    return 0
