"""Command line: ``python -m probes layers ...`` (INSPECT layer probes), ``python -m probes attention ...``
(CodeSyntax attention heads), ``python -m probes gluecode ...`` (glueCode tasks) and ``python -m probes blanca ...``
(BLANCA: embeddings of text about code); ``--help`` on each.

Errors the user can fix (unknown model, task or corpus, malformed task file) exit with status 2 and
one line on stderr; ``--debug`` shows the traceback of unexpected failures.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from asc.cli import (
    Parser,
    add_model_options,
    count,
    load_bundle,
    number,
    out_folder,
    path_text,
    positive_int,
    run,
    seed_int,
    stage_bar,
)
from probes.features import PROBE_MAX_TOKENS
from probes.gluecode.likelihood import DEFAULT_MAX_WINDOW

# attention --max-k at most: heads rank a snippet's words, fewer than its tokens, so a k past the papers' token limit
# hits every word; the scorer holds relations x 3 metrics x k x layers x heads counts (CodeSyntax reports k <= 20)
MAX_TOP_K = PROBE_MAX_TOKENS
# blanca --epochs at most: the paper fine-tuned for 10; each epoch is minutes on a CPU
MAX_EPOCHS = 100


def cmd_layers(args: argparse.Namespace) -> int:
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


def cmd_attention(args: argparse.Namespace) -> int:
    from asc.corpus.sources import load_corpus
    from probes.codesyntax.attention import relation_table, run_attention

    codes = [s.source for s in load_corpus(args.corpus, limit=args.limit, max_lines=args.max_lines)]
    ks = tuple(range(1, args.max_k + 1))
    for spec in args.model:
        bundle = load_bundle(args, spec)
        update, close = stage_bar(bundle.name, args.quiet)
        try:
            run = run_attention(bundle, codes, args.out, corpus=args.corpus, ks=ks, val_fraction=args.val_fraction,
                                seed=args.seed, max_tokens=args.max_tokens, on_progress=update)
        finally:
            close()
        print(f"\n{bundle.name}: {run.meta['n_scored']} snippets scored ({run.meta['too_long']} too long), "
              f"edges read {run.meta['direction']}; first-token metric, top-1 and top-{args.max_k}:")
        for k in sorted({1, args.max_k}):
            table = relation_table(run, "first", k)
            print(f"\n[k={k}]")
            print(table.round(3).to_string(index=False))
        print(f"results under {run.folder}")
    return 0


def cmd_gluecode(args: argparse.Namespace) -> int:
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


def cmd_blanca(args: argparse.Namespace) -> int:
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
    """A stage-name callback that moves a :func:`stage_bar` (None when quiet)."""
    return None if update is None else (lambda stage: update(stage, 0, 1))


def _steps_only(update: Callable[[str, int, int], None] | None, stage: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback that moves a :func:`stage_bar` under ``stage`` (None when quiet)."""
    return None if update is None else (lambda done, total: update(stage, done, total))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m probes", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("layers", help="INSPECT: linear probes on every layer, per task (INSPECT's 15, glueCode's "
                       "NPATH and NULL; resumable)")
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
    p.set_defaults(func=cmd_layers)
    p = sub.add_parser("attention", help="CodeSyntax: attention heads scored against syntactic relations")
    p.add_argument("--model", action="append", required=True, help="embedded name, folder, .gguf or hub id; repeatable")
    p.add_argument("--corpus", type=path_text, default="humaneval", help="humaneval, algorithms, stdlib, a folder, file or .jsonl")
    p.add_argument("--out", required=True, type=out_folder, help="output folder (one sub-folder per model)")
    p.add_argument("--limit", type=positive_int, default=200, help="functions taken from the corpus (default 200)")
    p.add_argument("--max-lines", type=positive_int, default=40, help="longest function kept (attention memory grows as n^2)")
    p.add_argument("--max-tokens", type=positive_int, default=PROBE_MAX_TOKENS, help="longer snippets are skipped, never truncated")
    p.add_argument("--max-k", type=count(MAX_TOP_K, "a larger k hits every word of a snippet"), default=20,
                   help=f"top-k scored for k = 1..max-k (at most {MAX_TOP_K})")
    p.add_argument("--val-fraction", type=number(0, 1, above=True, below=True), default=0.5,
                   help="share of the snippets used to choose the best head (above 0, below 1; the rest report it)")
    p.add_argument("--seed", type=seed_int, default=0, help="val/test split seed")
    add_model_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_attention)
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
    p.set_defaults(func=cmd_gluecode)
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
    p.set_defaults(func=cmd_blanca)
    for q in sub.choices.values():
        q.add_argument("-v", "--verbose", action="store_true", help="log progress details")
        q.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
