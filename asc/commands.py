"""The bodies of the ``python -m asc`` commands (:mod:`asc.__main__` builds their parser): each takes the parsed
arguments, checks what it reads before it loads a model, prints its report and returns the exit status.

``models`` lists the embedded models; ``explain`` the token and node tables of one snippet (parsed once:
:func:`asc.explain.checked_tree`); ``eval`` runs a corpus and prints the Table-I-style summary; ``compare`` the
comparison of run folders; ``causal`` AsC-Causal's table; ``branch`` a trunk and a forced branch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from asc.align import AlignOptions
from asc.cli import fmt, load_bundle, read_source, write_table
from asc.concepts import CONFIDENCE_LINE, load_categories

__all__ = ["cmd_branch", "cmd_causal", "cmd_compare", "cmd_eval", "cmd_explain", "cmd_models"]


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
              f"the first layer at or above {CONFIDENCE_LINE}:")
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
    # load_corpus refuses --min-lines above --max-lines before it reads anything (check_line_range)
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
    table = category_table(digest, load_categories(digest.language).categories,
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
        from asc.corpus.depth import crossing_table, layer_summary

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
    """For the runs made with ``--layers``: where each category first reaches the confidence line, in relative depth."""
    from asc.corpus.depth import crossing_table, has_layers, layer_summary

    unique = [label if labels.count(label) == 1 else f"{label} ({k + 1})" for k, label in enumerate(labels)]
    layered = [layer_summary(p, label) for p, label in zip(paths, unique, strict=True) if has_layers(p)]
    if not layered:
        return
    import pandas as pd

    crossing = crossing_table(pd.concat(layered, ignore_index=True))
    wide = crossing.pivot(index="category", columns="model", values="crossing_depth")
    print("\nper layer (runs made with --layers): relative depth (layer / layers) where each category's median "
          f"first reaches {CONFIDENCE_LINE} (NaN: never)\n")
    print(wide.to_string(float_format=lambda v: f"{v:.2f}"))


def cmd_causal(args: argparse.Namespace) -> int:
    from asc.causal import run_causal, run_treatments
    from asc.corpus.runs import load_run
    from asc.viz.causal import table2_views

    run = load_run(args.run, tables=("snippets", "concepts"))
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(run_treatments(run)), unit="treatment", desc="AsC-Causal", file=sys.stderr)
    result = run_causal(run, min_snippets=args.min_snippets, seed=args.seed, simulations=args.simulations,
                        on_progress=(lambda d, t: bar.update(1)) if bar else None, refute_sample=args.refute_sample,
                        jobs=args.jobs)
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


def cmd_branch(args: argparse.Namespace) -> int:
    """The trunk (the model's continuation of the file up to --at) and one branch forced at its first new token.
    ``--json``: ``{"fork": {line, column, Branch.to_dict() keys, replaced_text}, "trunk": explain layout,
    "branch": explain layout}``."""
    from asc.branching.branches import BranchSettings, branch, check_choice, mean_value
    from asc.branching.treediff import ast_diff
    from asc.errors import InputError
    from asc.generate import complete, explain_completion

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
