"""``python -m asc intervene FILE --corrupt SPEC [--patch] [--at LINE:COL] [--json]``: what a corruption that keeps
the code valid does to one predicted token, and (``--patch``) where and when the model reads what it changed.

Without ``--patch``: the target token's log-probability in the clean and the corrupted snippet, and the node-by-node
effect of the corruption (:func:`asc.why.effects.effect`: clean against corrupted AsC-Eval, the strongest later
nodes printed). With ``--patch``: :func:`asc.why.patching.patch`'s layer x node matrix (its largest cells) and
category totals. ``--json``: ``{"corruption": {kind, description, language, source, corrupted, edits: [{start, end,
old, new, corrupted_span}]}, "target": {clean_index, corrupted_index, text, clean_value, corrupted_value},
"effects": Effect.to_dict() or null, "patching": Patching.to_dict() or null}``. A bad spec or position: one line,
exit 2 (checked before the model loads).
"""

from __future__ import annotations

import argparse
import json
import sys

from asc.cli.args import (
    Subcommands,
    add_scoring_options,
    add_source_file,
    line_col,
    load_bundle,
    positive_int,
    read_source,
    source_offset,
)
from asc.cli.runner import fmt
from asc.errors import InputError
from asc.syntax import LANGUAGES

__all__ = ["add_parser", "corruption_spec", "execute"]


def corruption_spec(text: str) -> str:
    """argparse type of ``--corrupt``: a spec :func:`asc.why.corrupt.parse_spec` takes (its grammar checked before
    the file is read: an unknown kind, an empty or an extra field is one line, exit 2)."""
    from asc.why.corrupt import parse_spec

    try:
        parse_spec(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).replace(f"--corrupt {text!r}", repr(text), 1)) from None
    return text


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``intervene`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("intervene", help="a corruption that keeps the code valid: its effect on one token, and "
                       "(--patch) activation patching layer x node")
    add_source_file(p)
    p.add_argument("--corrupt", required=True, metavar="SPEC", type=corruption_spec,
                   help="rename:NAME[:NEW] | operator:LINE:COL[:NEW] | literal:LINE:COL[:NEW] | docstring[:LINE] | "
                        "comment[:LINE]")
    p.add_argument("--patch", action="store_true", help="activation patching: every layer x the changed nodes")
    p.add_argument("--spans", default="changed", choices=("changed", "after"),
                   help="--patch columns: the changed nodes (default), or also every named leaf up to the target")
    p.add_argument("--at", type=line_col, default=None, metavar="LINE:COL",
                   help="the target: the token starting at or after this position (default: the last token)")
    p.add_argument("--top", type=positive_int, default=12, help="--patch: cells listed (default 12)")
    p.add_argument("--language", default="python", choices=LANGUAGES)
    p.add_argument("--json", action="store_true", help="one JSON object (layout in asc.cli.intervene)")
    add_scoring_options(p)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Corrupt the snippet, measure the target (and patch), and print the report (or the JSON object)."""
    from asc.explain import checked_tree
    from asc.why.corrupt import corrupt
    from asc.why.effects import effect
    from asc.why.patching import patch, target_values

    tree = checked_tree(read_source(args.file), args.language)
    corruption = corrupt(tree.source, args.corrupt, args.language)  # a bad spec: exit 2 before the model loads
    offset = None if args.at is None else source_offset(tree.source, args.at)
    bundle = load_bundle(args)
    corruption = corrupt(tree.source, args.corrupt, args.language, tokenizer=bundle.tokenizer)  # a fresh name's tokens
    target: int | None = None
    if offset is not None:
        from asc.why.patching import default_target

        target = default_target(bundle, tree.source, offset)
    result = patch(bundle, corruption, target, spans=args.spans, language=args.language) if args.patch else None
    values = target_values(bundle, corruption, target) if result is None else {
        **result.target, "clean_value": result.clean_value, "corrupted_value": result.corrupted_value}
    effects = None if args.patch else effect(bundle, corruption)
    if args.json:
        doc = {"corruption": {**corruption.to_dict(), "source": corruption.source, "corrupted": corruption.corrupted},
               "target": values,
               "effects": None if effects is None else effects.to_dict(),
               "patching": None if result is None else result.to_dict()}
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n")
        return 0
    print(f"{corruption.description} ({len(corruption.edits)} edits); model {bundle.name}")
    print(f"target {values['text']!r} (token {values['clean_index']}; {values['corrupted_index']} when corrupted): "
          f"log p clean {fmt(values['clean_value'])}, corrupted {fmt(values['corrupted_value'])}, "
          f"change {fmt(values['corrupted_value'] - values['clean_value'])}")
    if effects is not None:
        print("\nnodes after the first edit whose AsC-Eval value changed most (clean vs corrupted, aligned by the "
              "tree diff; --patch for activation patching):")
        print(effects.strongest(10).to_string(index=False))
        return 0
    assert result is not None  # --patch
    if result.note:
        print(f"note: {result.note}")
    print(f"\nactivation patching ({result.method}, {len(result.layers)} layers x {len(result.node_ids)} nodes, "
          f"{result.cost:.1f} forward passes): share of the clean log-probability restored, largest cells")
    for layer, k, share in result.top_cells(args.top):
        print(f"  layer {layer:>3}  {result.node_types[k]:<14} {result.node_texts[k][:30]!r:<34} {share:+.3f}")
    for node, why in result.skipped.items():
        print(f"  skipped node {node}: {why}")
    print("\nall nodes together, per layer: " + " ".join(fmt(v, 2) for v in result.all_restored))
    for cat, curve in result.category_restored.items():
        print(f"  {cat:<24} " + " ".join(fmt(v, 2) for v in curve))
    return 0
