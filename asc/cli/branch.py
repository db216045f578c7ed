"""``python -m asc branch FILE --at LINE:COL (--choose K | --token TEXT)``: the trunk and one forced branch.

The trunk is the model's continuation of the file up to ``--at`` (:func:`asc.generate.complete`); the branch forces
the model's K-th choice, or a typed text, at the trunk's first new token (:func:`asc.branching.branches.branch`).
Both are explained as ``explain`` does; the report gives the fork, each side's mean AsC-Eval from the fork on,
whether it parses, and the first divergence of the two syntax trees (:func:`asc.branching.treediff.ast_diff`).
``--json``: ``{"fork": {line, column, Branch.to_dict() keys, replaced_text}, "trunk": explain layout, "branch":
explain layout}``. A position outside the file or before any code, a bad choice or setting: one line, exit 2, before
the model generates anything.
"""

from __future__ import annotations

import argparse
import json
import sys

from asc.cli.args import (
    Subcommands,
    add_scoring_options,
    add_source_file,
    align_options,
    line_col,
    load_bundle,
    number,
    positive_int,
    read_source,
    seed_int,
    source_offset,
)
from asc.cli.runner import fmt
from asc.positions import line_col_at
from asc.syntax import LANGUAGES

__all__ = ["add_parser", "execute"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``branch`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("branch", help="the model's continuation of FILE up to --at, and a branch forcing another "
                       "token at its first new token")
    add_source_file(p)
    p.add_argument("--at", required=True, type=line_col, metavar="LINE:COL",
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
    add_scoring_options(p)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Generate the trunk and the branch, and print the report (or the JSON object)."""
    from asc.branching.branches import branch, check_choice, check_text, mean_value
    from asc.branching.treediff import ast_diff
    from asc.errors import InputError
    from asc.generate import Decoding, complete, explain_completion

    text = read_source(args.file)
    offset = source_offset(text, args.at)
    if not text[:offset].strip():
        raise InputError(f"there is no code before --at {args.at[0]}:{args.at[1]}: give a position after some code")
    Decoding(args.max_new, args.temperature, args.top_p)  # refuse bad settings before loading the model
    check_text(args.token)
    bundle = load_bundle(args)
    check_choice(bundle, args.choose, args.token)  # before the model generates anything
    decoding = {"temperature": args.temperature, "top_p": args.top_p, "seed": args.seed, "language": args.language}
    trunk = complete(bundle, text[:offset], args.max_new, **decoding)
    br = branch(bundle, trunk, trunk.n_prompt, choose=args.choose, token=args.token, max_new_tokens=args.max_new,
                **decoding)
    ex_trunk, ex_branch = (explain_completion(bundle, c, args.language, args.aggregate, align_options(args),
                                              args.max_window) for c in (trunk, br.completion))
    at, cut = br.fork_index, len(br.completion.prompt)
    line, col = line_col_at(text, cut)
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
        where = [f"{tree.type[i]} {tree.text(i)[:30]!r} (line {line_col_at(tree.source, int(tree.start[i]))[0]})"
                 if i >= 0 else "nothing" for tree, i in zip((ex_trunk.tree, ex_branch.tree), first, strict=True)]
        print(f"\nfirst divergence: trunk {where[0]} | branch {where[1]}")
    return 0
