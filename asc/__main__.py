"""Command line: ``python -m asc {models,explain,eval,compare,causal,branch} ...`` (``--help`` on each).

Errors the user can fix (missing file, invalid UTF-8, empty input, unknown model or corpus) exit
with status 2 and one line on stderr; ``--debug`` shows the traceback of unexpected failures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from asc.align import AlignOptions
from asc.cli import (
    Parser,
    add_common,
    fmt,
    load_bundle,
    non_negative_int,
    out_table,
    path_text,
    positive_int,
    read_source,
    run,
    write_table,
)
from asc.concepts import load_categories
from asc.syntax import LANGUAGES


def _align_options(args: argparse.Namespace) -> AlignOptions:
    return AlignOptions(whitespace=args.whitespace, multi_leaf=args.multi_leaf, zero_width=args.zero_width)


def cmd_models(args: argparse.Namespace) -> int:
    from asc.models import DEFAULT_MODEL, EMBEDDED
    from asc.paths import cache_dir

    print(f"{'name':<14} {'kind':<8} {'installed':<10} description")
    for name, entry in EMBEDDED.items():
        flag = "yes" if entry.installed() else "no"
        star = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name:<14} {entry.kind:<8} {flag:<10} {entry.description}{star}")
    print(f"\nAlso accepted: a local Hugging Face folder, a .gguf file, or a hub id 'org/name'.\n"
          f"De-quantized GGUF weights are cached in {cache_dir()}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from asc.depth import CROSSING
    from asc.explain import checked_tree, explain

    tree = checked_tree(read_source(args.file), args.language)  # refuse bad input before loading the model
    bundle = load_bundle(args)
    depth = None
    if args.layers:
        from asc.depth import explain_layers

        depth = explain_layers(bundle, tree.source, language=args.language, aggregate=args.aggregate,
                               options=_align_options(args), max_window=args.max_window, tree=tree)
        ex = depth.explanation
    else:
        ex = explain(bundle, tree.source, language=args.language, aggregate=args.aggregate,
                     options=_align_options(args), max_window=args.max_window, tree=tree)
    if args.json:
        payload = ex.to_dict()
        if depth is not None:
            payload["layers"] = depth.to_dict()
        json.dump(payload, sys.stdout, ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    import pandas as pd

    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 40):
        tok = ex.token_frame()
        tok["text"] = tok["text"].map(repr)
        print(tok[["index", "text", "prob", "rank", "entropy", "top"]].to_string(index=False, float_format="%.3f"))
        print()
        nodes = ex.node_frame()
        nodes = nodes[nodes["named"] | nodes["category"].notna()]
        nodes["text"] = [repr(ex.tree.text(i, limit=30)) for i in nodes["id"]]
        print(nodes[["id", "type", "category", "depth", "n_tokens", "value", "text"]].to_string(index=False,
                                                                                          float_format="%.3f"))
    print(f"\nmodel {bundle.name}  tokens {ex.scores.n_tokens}  loss {fmt(ex.loss)} nats/token  "
          f"perplexity {fmt(ex.perplexity, 2)}  aggregate {args.aggregate}")
    for cat, val in ex.category_values.items():
        print(f"  {cat:<24} {fmt(val)}")
    if depth is not None:
        crossing = depth.crossing()
        print(f"\nper layer (logit lens; layer 0 = embeddings, {depth.n_layers - 1} = output), category values and "
              f"the first layer at or above {CROSSING}:")
        for k, cat in enumerate(depth.categories):
            curve = " ".join(fmt(v, 2) for v in depth.category_values[:, k])
            print(f"  {cat:<24} {str(crossing[cat] if crossing[cat] is not None else '-'):>5}  {curve}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from asc.corpus import category_table, load_run, run_corpus
    from asc.corpus.forks import cli_settings
    from asc.corpus.runs import load_digest
    from asc.corpus.sources import load_corpus

    forks = cli_settings(args.forks, args.fork_margin, args.fork_entropy)  # bad thresholds: before anything loads
    if args.min_lines is not None and args.max_lines is not None and args.min_lines > args.max_lines:
        from asc.errors import InputError

        raise InputError(f"--min-lines {args.min_lines} is above --max-lines {args.max_lines}: no function would be "
                         "kept; give a range with min <= max")
    snippets = load_corpus(args.corpus, limit=args.limit, min_lines=args.min_lines, max_lines=args.max_lines)
    out = Path(args.out)
    t0 = time.perf_counter()
    settings: dict[str, Any] = {"corpus": args.corpus, "aggregate": args.aggregate, "options": _align_options(args),
                "batch_size": args.batch_size, "max_window": args.max_window, "progress": not args.quiet,
                "layers": args.layers, "forks": forks}
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
    table = category_table(digest, load_categories(digest.languages[0] if digest.languages else "python").categories,
                           n_boot=args.n_boot, seed=args.seed, method=args.bootstrap)
    write_table(table, out / "categories.csv")
    print(f"\nAsC-Eval, {run.meta['settings']['model']['name']} on {args.corpus}: {len(run.snippets)} snippets, "
          f"{int(run.snippets['n_tokens'].sum())} tokens, mean loss {run.snippets['loss'].mean():.3f} nats/token "
          f"({elapsed:.0f} s this run)")
    print(f"bootstrapped median of node values ({args.n_boot} {args.bootstrap}-level resamples, seed {args.seed}, "
          "95% interval)\n")
    for row in table.itertuples():
        mark = "  " if row.median != row.median else ("+ " if row.median >= args.threshold else "- ")
        print(f"{mark}{row.category:<24} {fmt(row.median)}  [{fmt(row.ci_low)}, {fmt(row.ci_high)}]  "
              f"nodes {row.n_nodes:>7}  snippets {row.n_snippets:>5}")
    print(f"\n(+ at or above the {args.threshold} line, - below)  results: {out}")
    if args.layers:
        from asc.corpus.layers import crossing_table, layer_summary

        summary = layer_summary(out)
        write_table(summary, out / "layers.csv")
        last = int(summary["layer"].max())
        print(f"\nper layer (logit lens, layer 0 = embeddings, {last} = output): median node value, and the first "
              f"layer at or above {args.threshold}")
        wide = summary.pivot_table(index="category", columns="layer", values="value")
        picks = sorted({0, last // 4, last // 2, 3 * last // 4, last})
        crossing = crossing_table(summary, args.threshold).set_index("category")
        for category, row in wide.iterrows():
            cells = "  ".join(f"L{k}:{fmt(row.get(k), 2)}" for k in picks)
            first = crossing.loc[category, "crossing"]
            print(f"  {category:<24} {'-' if first != first else int(first):>4}  {cells}")
        print(f"(all layers in {out / 'layers.csv'})")
    if forks is not None:
        from asc.corpus.forks import fork_report, fork_table

        rates = fork_table(digest, n_boot=args.n_boot, seed=args.seed)
        print(fork_report(rates, forks, args.n_boot, args.seed) + f"\n(also in {write_table(rates, out / 'forks.csv')})")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from asc.corpus.forks import fork_report, fork_summary
    from asc.corpus.runs import load_digest
    from asc.corpus.summary import difference_table, run_labels, summary_table, wide_table
    from asc.errors import InputError
    from asc.files import existing_path

    resolved = [str(existing_path(p, "run folder")) for p in args.runs]  # a symlink loop: one line, exit 2
    if len(set(resolved)) < len(resolved):
        raise InputError("the same run folder is given twice: name each run once")
    runs = [load_digest(path) for path in args.runs]
    languages = {lang for run in runs for lang in run.languages}
    categories = load_categories(sorted(languages)[0] if languages else "python").categories
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
    """For the runs made with ``--layers``: where each category first reaches 0.6, in relative depth."""
    from asc.corpus.layers import crossing_table, has_layers, layer_summary

    unique = [label if labels.count(label) == 1 else f"{label} ({k + 1})" for k, label in enumerate(labels)]
    layered = [layer_summary(p, label) for p, label in zip(paths, unique, strict=True) if has_layers(p)]
    if not layered:
        return
    import pandas as pd

    crossing = crossing_table(pd.concat(layered, ignore_index=True))
    wide = crossing.pivot(index="category", columns="model", values="crossing_depth")
    print("\nper layer (runs made with --layers): relative depth (layer / layers) where each category's median "
          "first reaches 0.6 (NaN: never)\n")
    print(wide.to_string(float_format=lambda v: f"{v:.2f}"))


def _refute_sample(text: str) -> int | None:
    """argparse type of ``--refute-sample``: a count, or ``all`` (None); asc.causal checks the minimum."""
    return None if text.strip().lower() == "all" else positive_int(text)


def cmd_causal(args: argparse.Namespace) -> int:
    from asc.causal import causal_table, snippet_table, treatments_of
    from asc.corpus.runs import load_run

    run = load_run(args.run, tables=("snippets", "concepts"))
    language = str(run.snippets["language"].iloc[0]) if len(run.snippets) else "python"
    table = snippet_table(run)
    treatments = treatments_of(load_categories(language))
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(treatments), unit="treatment", desc="AsC-Causal", file=sys.stderr)
    result = causal_table(table, treatments, min_snippets=args.min_snippets, seed=args.seed,
                          simulations=args.simulations, on_progress=(lambda d, t: bar.update(1)) if bar else None,
                          refute_sample=args.refute_sample, jobs=args.jobs)
    if bar is not None:
        bar.close()
    out = write_table(result, Path(args.out))
    import pandas as pd

    cols = ["treatment", "n", "r_loss", "ate", "ci_low", "ci_high", "status"]
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(result[[c for c in cols if c in result.columns]].to_string(index=False, float_format=lambda v: f"{v:+.3f}"))
    print(f"\nfull table (r with each confounder, p-values, refuter effects and verdicts): {out}")
    return 0


def _at_position(text: str) -> tuple[int, int]:
    """argparse type of ``branch --at``: ``LINE:COL``, both counted from 1 (the column in characters)."""
    try:
        line, col = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LINE:COL (e.g. 12:5)") from None
    if line < 1 or col < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: lines and columns count from 1")
    return line, col


def cmd_branch(args: argparse.Namespace) -> int:
    """The trunk (the model's continuation of the file up to --at) and one branch forced at its first new token.
    ``--json``: ``{"fork": {line, column, Branch.to_dict() keys, replaced_text}, "trunk": explain layout,
    "branch": explain layout}``."""
    from asc.branch import BranchSettings, branch, check_choice, mean_value
    from asc.errors import InputError
    from asc.generate import complete, explain_completion
    from asc.treediff import ast_diff

    text = read_source(args.file)
    lines = text.split("\n")
    line, col = args.at
    if line > len(lines) or col > len(lines[line - 1]) + 1:
        last = min(line, len(lines))
        raise InputError(f"--at {line}:{col} is outside {args.file} ({len(text.splitlines())} lines, line {last} has "
                         f"{len(lines[last - 1])} characters): give a position inside the file")
    offset = sum(len(s) + 1 for s in lines[: line - 1]) + col - 1
    if not text[:offset].strip():
        raise InputError(f"there is no code before --at {line}:{col}: give a position after some code")
    BranchSettings(args.max_new, args.temperature, args.top_p)  # refuse bad settings before loading the model
    bundle = load_bundle(args)
    check_choice(bundle, args.choose, args.token)  # before the model generates anything
    decoding = {"temperature": args.temperature, "top_p": args.top_p, "seed": args.seed, "language": args.language}
    trunk = complete(bundle, text[:offset], args.max_new, **decoding)
    br = branch(bundle, trunk, trunk.n_prompt, choose=args.choose, token=args.token, max_new_tokens=args.max_new,
                **decoding)
    ex_trunk, ex_branch = (explain_completion(bundle, c, args.language, args.aggregate, _align_options(args),
                                              args.max_window) for c in (trunk, br.completion))
    at, cut = br.fork_index, len(br.completion.prompt)
    line, col = text.count("\n", 0, cut) + 1, cut - text.rfind("\n", 0, cut)
    replaced = trunk.text[trunk.start[at]:trunk.end[at]] if at < len(trunk.ids) else None
    if args.json:
        fork = {"line": line, "column": col, **br.to_dict(), "replaced_text": replaced}
        json.dump({"fork": fork, "trunk": ex_trunk.to_dict(), "branch": ex_branch.to_dict()}, sys.stdout,
                  ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    how = f"the model's choice {br.forced_rank}" if br.forced_rank else f"typed, {len(br.forced_ids)} tokens"
    print(f"fork at token {at} (line {line}, column {col}): {br.forced_text!r} ({how}, p={fmt(br.forced_prob, 4)}) "
          f"instead of {replaced!r}")
    for name, comp, ex in (("trunk", trunk, ex_trunk), ("branch", br.completion, ex_branch)):
        print(f"\n{name}: mean AsC-Eval {fmt(mean_value(ex, at))} (nodes from the fork on), "
              f"parses: {'no' if ex.tree.has_error else 'yes'}, stopped: {comp.stop_reason}")
        print("\n".join(f"  | {s}" for s in comp.text[cut:].split("\n")))
    first = ast_diff(ex_trunk.tree, ex_branch.tree).first_divergence
    if first is None:
        print("\nthe two trees are equal")
    else:
        where = [f"{tree.type[i]} {tree.text(i)[:30]!r} (line {tree.source.count(chr(10), 0, tree.start[i]) + 1})"
                 if i >= 0 else "nothing" for tree, i in zip((ex_trunk.tree, ex_branch.tree), first, strict=True)]
        print(f"\nfirst divergence: trunk {where[0]} | branch {where[1]}")
    return 0


def _bootstrap_option(p: argparse.ArgumentParser) -> None:
    from asc.corpus.bootstrap import METHODS

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
    p.add_argument("--out", required=True, type=path_text, help="run folder (created; an existing one is resumed)")
    p.add_argument("--limit", type=positive_int, default=None, help="at most N snippets (at least 1; default: all)")
    p.add_argument("--min-lines", type=non_negative_int, default=None,
                   help="shortest function kept (default 5 for extracted)")
    p.add_argument("--max-lines", type=positive_int, default=None, help="longest function kept (default 60 for extracted)")
    p.add_argument("--batch-size", type=positive_int, default=8, help="snippets per batched scoring call")
    p.add_argument("--n-boot", type=positive_int, default=500, help="bootstrap resamples for the summary")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed")
    _bootstrap_option(p)
    p.add_argument("--threshold", type=float, default=0.6, help="the 'acceptable confidence' line")
    p.add_argument("--layers", action="store_true", help="also AsC-Eval at every layer (logit lens; about 3-8x the "
                   "cost): adds the layers/ table and a category x layer summary")
    p.add_argument("--forks", action="store_true", help="also count fork points (tokens where the model hesitates): "
                   "per-token margin, per-node counts, the forks/ table and a fork-rate summary per category")
    p.add_argument("--fork-margin", type=float, default=None, help="--forks: a top-2 margin below this is a fork (0.1)")
    p.add_argument("--fork-entropy", type=float, default=None, help="--forks: an entropy above this (nats) is a fork "
                   "(2.0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--engine", default="local", choices=("local", "ray"),
                   help="local: this process; ray: a pool of Ray actors (see README, 'Running on a Ray cluster')")
    p.add_argument("--address", default=None, help="--engine ray: the cluster to join, HOST:6379, ray://HOST:10001 "
                   "or auto; it must answer within 20 s (default: $ASC_RAY_ADDRESS, else a new local Ray)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="--engine ray: model actors (default: one per GPU, or 2 without GPUs)")
    p.add_argument("--gpus-per-worker", type=float, default=None,
                   help="--engine ray: GPUs per actor (default: 1 when the cluster has GPUs, else 0)")
    add_common(p)
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("compare", help="Table-I comparison of several run folders (written by eval)")
    p.add_argument("runs", nargs="+", type=path_text, help="run folders")
    p.add_argument("--out", default=None, type=out_table,
                   help="write the long table (model, category, median, interval) as .csv/.json")
    p.add_argument("--n-boot", type=positive_int, default=500, help="bootstrap resamples")
    p.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed")
    _bootstrap_option(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("causal", help="AsC-Causal: Pearson r and dowhy effects of concepts on the loss (Table II)")
    p.add_argument("run", type=path_text, help="a run folder written by eval")
    p.add_argument("--out", required=True, type=out_table, help="output table (.csv or .json)")
    p.add_argument("--min-snippets", type=positive_int, default=30,
                   help="fewer snippets with a treatment: 'not enough data'")
    p.add_argument("--simulations", type=positive_int, default=50, help="simulations per refuter")
    p.add_argument("--seed", type=non_negative_int, default=0, help="seed of the refuters and of their subsample")
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
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); above 0: sampling")
    p.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling threshold (with --temperature)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="sampling seed")
    p.add_argument("--language", default="python", choices=LANGUAGES)
    p.add_argument("--json", action="store_true", help='{"fork", "trunk", "branch"}: trunk and branch in the '
                   "explain --json layout")
    add_common(p)
    p.set_defaults(func=cmd_branch)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
