"""Command line: ``python -m asc {models,explain,eval,compare,causal,branch,attribute,intervene,attribute-corpus} ...``
(``--help`` on each): the
argument parser; the commands' bodies are :mod:`asc.commands`.

Errors the user can fix (missing file, invalid UTF-8, empty input, unknown model or corpus) exit
with status 2 and one line on stderr; ``--debug`` shows the traceback of unexpected failures.
"""

from __future__ import annotations

import argparse
import os
import sys

from asc.causal import MAX_SIMULATIONS
from asc.cli import (
    Parser,
    add_common,
    count,
    non_negative_int,
    number,
    out_folder,
    out_table,
    path_text,
    positive_int,
    run,
    seed_int,
)
from asc.commands import cmd_branch, cmd_causal, cmd_compare, cmd_eval, cmd_explain, cmd_models
from asc.concepts import CONFIDENCE_LINE
from asc.syntax import LANGUAGES


def _refute_sample(text: str) -> int | None:
    """argparse type of ``--refute-sample``: a count, or ``all`` (None); asc.causal checks the minimum."""
    return None if text.strip().lower() == "all" else positive_int(text)


def _gpu_share(text: str) -> float:
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


def _at_position(text: str) -> tuple[int, int]:
    """argparse type of ``branch --at``: ``LINE:COL``, both counted from 1 (the column in characters)."""
    try:
        line, col = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LINE:COL (e.g. 12:5)") from None
    if line < 1 or col < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: lines and columns count from 1")
    return line, col


def _bootstrap_option(p: argparse.ArgumentParser) -> None:
    """``--n-boot``, ``--seed`` and ``--bootstrap`` of the commands that summarize runs."""
    from asc.corpus.bootstrap import MAX_N_BOOT, METHODS

    p.add_argument("--n-boot", type=count(MAX_N_BOOT, "more resamples no longer move the interval"), default=500,
                   help="bootstrap resamples for the summary")
    p.add_argument("--seed", type=seed_int, default=0, help="bootstrap seed")
    p.add_argument("--bootstrap", default="snippet", choices=METHODS,
                   help="snippet: resample snippets (default; nodes of one snippet are not independent); node: "
                        "resample nodes, as the paper's Table I")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m asc", description="AsC-Eval: next-token scores per AST node.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("models", help="list embedded models and whether each is installed").set_defaults(func=cmd_models)

    p = sub.add_parser("explain", help="token and node table of one snippet")
    p.add_argument("file", help="source file, or - for standard input")
    p.add_argument("--language", default="python", choices=LANGUAGES)
    p.add_argument("--json", action="store_true", help="one JSON object (layout in the README)")
    p.add_argument("--layers", action="store_true",
                   help="also AsC-Eval at every layer (logit lens): per-layer token probabilities and category values")
    add_common(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("eval", help="evaluate a corpus, write Parquet results, print a Table-I-style summary")
    p.add_argument("--corpus", required=True, type=path_text,
                   help="humaneval | algorithms | stdlib | folder | .py/.java | .jsonl")
    p.add_argument("--out", required=True, type=out_folder, help="run folder (created; an existing one is resumed)")
    p.add_argument("--limit", type=positive_int, default=None, help="at most N snippets (at least 1; default: all)")
    p.add_argument("--min-lines", type=non_negative_int, default=None,
                   help="shortest function kept (default 5 for extracted)")
    p.add_argument("--max-lines", type=positive_int, default=None, help="longest function kept (default 60 for extracted)")
    p.add_argument("--batch-size", type=positive_int, default=8, help="snippets per batched scoring call")
    _bootstrap_option(p)
    p.add_argument("--threshold", type=number(0, 1), default=CONFIDENCE_LINE, help="the 'acceptable confidence' line")
    p.add_argument("--layers", action="store_true", help="also AsC-Eval at every layer (logit lens; about 3-8x the "
                   "cost): adds the layers/ table and a category x layer summary")
    p.add_argument("--forks", action="store_true", help="also count fork points (tokens where the model hesitates): "
                   "per-token margin, per-node counts, the forks/ table and a fork-rate summary per category")
    p.add_argument("--fork-margin", type=number(0, 1), default=None,
                   help="--forks: a top-2 margin below this is a fork (0.1)")
    p.add_argument("--fork-entropy", type=number(0), default=None,
                   help="--forks: an entropy above this (nats) is a fork (2.0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--engine", default="local", choices=("local", "ray"),
                   help="local: this process; ray: a pool of Ray actors (see README, 'Running on a Ray cluster')")
    p.add_argument("--address", default=None, help="--engine ray: the cluster to join, HOST:6379, ray://HOST:10001 "
                   "or auto; it must answer within 20 s (default: $ASC_RAY_ADDRESS, else a new local Ray)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="--engine ray: model actors (default: one per GPU, or 2 without GPUs)")
    p.add_argument("--gpus-per-worker", type=_gpu_share, default=None,
                   help="--engine ray: GPUs per actor (default: 1 when the cluster has GPUs, else 0)")
    add_common(p)
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("compare", help="Table-I comparison of several run folders (written by eval)")
    p.add_argument("runs", nargs="+", type=path_text, help="run folders")
    p.add_argument("--out", default=None, type=out_table,
                   help="write the long table (model, category, median, interval) as .csv/.json")
    _bootstrap_option(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("causal", help="AsC-Causal: Pearson r and dowhy effects of concepts on the loss (Table II)")
    p.add_argument("run", type=path_text, help="a run folder written by eval")
    p.add_argument("--out", required=True, type=out_table, help="output table (.csv or .json)")
    p.add_argument("--min-snippets", type=positive_int, default=30,
                   help="fewer snippets with a treatment: 'not enough data'")
    p.add_argument("--simulations", type=count(MAX_SIMULATIONS, "a refuter's p-value resolves 1/simulations"),
                   default=50, help="simulations per refuter")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the refuters and of their subsample")
    p.add_argument("--refute-sample", type=_refute_sample, default=5000, metavar="N|all",
                   help="refuters run on a seeded subsample of N snippets per concept when it has more (the "
                   "estimates always use all); 'all': every snippet (default 5000; README, AsC-Causal at scale)")
    p.add_argument("--jobs", type=positive_int, default=min(4, os.cpu_count() or 1),
                   help="worker processes, one concept each (default: one per CPU core, at most 4); same results")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_causal)

    p = sub.add_parser("branch", help="the model's continuation of FILE up to --at, and a branch forcing another "
                       "token at its first new token")
    p.add_argument("file", help="source file, or - for standard input")
    p.add_argument("--at", required=True, type=_at_position, metavar="LINE:COL",
                   help="the prompt is the text before this position (1-based line and column, in characters)")
    choice = p.add_mutually_exclusive_group(required=True)
    choice.add_argument("--choose", type=positive_int, metavar="K", help="force the model's K-th choice (1 = first)")
    choice.add_argument("--token", metavar="TEXT", help="force this text (all its tokens)")
    p.add_argument("--max-new", type=positive_int, default=64, help="new tokens of the trunk and of the branch")
    p.add_argument("--temperature", type=number(0), default=0.0, help="0: greedy (default); above 0: sampling")
    p.add_argument("--top-p", type=number(0, 1, above=True), default=1.0,
                   help="nucleus sampling threshold (with --temperature)")
    p.add_argument("--seed", type=seed_int, default=0, help="sampling seed")
    p.add_argument("--language", default="python", choices=LANGUAGES)
    p.add_argument("--json", action="store_true", help='{"fork", "trunk", "branch"}: trunk and branch in the '
                   "explain --json layout")
    add_common(p)
    p.set_defaults(func=cmd_branch)

    from asc.why.cli_attribute import add_parser as add_attribute
    from asc.why.cli_corpus import add_parser as add_attribute_corpus
    from asc.why.cli_intervene import add_intervene

    add_attribute(sub, _at_position)
    add_intervene(sub, _at_position, LANGUAGES, add_common)
    add_attribute_corpus(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
