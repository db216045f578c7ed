"""``python -m probes attention --model M --out FOLDER``: CodeSyntax, attention heads scored against syntax.

Each head of each model is scored on a corpus's functions against the syntactic relations (:mod:`probes.codesyntax`:
the head's top-k words for a dependent against the relation's head word), the best head chosen on a seeded
validation share of the snippets (``--val-fraction``) and reported on the rest, beside the baselines
(:func:`probes.codesyntax.attention.run_attention`). Snippets over ``--max-tokens`` are skipped, never truncated.
"""

from __future__ import annotations

import argparse

from asc.cli.args import (
    Subcommands,
    add_model_options,
    count,
    load_bundle,
    number,
    out_folder,
    path_text,
    positive_int,
    seed_int,
)
from asc.cli.runner import stage_bar
from probes.features import PROBE_MAX_TOKENS

__all__ = ["MAX_TOP_K", "add_parser", "execute"]

# --max-k at most: heads rank a snippet's words, fewer than its tokens, so a k past the papers' token limit hits
# every word; the scorer holds relations x 3 metrics x k x layers x heads counts (CodeSyntax reports k <= 20)
MAX_TOP_K = PROBE_MAX_TOKENS


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``attention`` to ``python -m probes``'s subcommands."""
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
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Score every model's heads and print the relation tables at k = 1 and k = max-k."""
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
