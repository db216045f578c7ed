"""``python -m asc intervene FILE --corrupt SPEC [--patch] [--at LINE:COL] [--json]``: what a corruption that keeps
the code valid does to one predicted token, and (``--patch``) where and when the model reads what it changed.

Without ``--patch``: the target token's log-probability in the clean and the corrupted snippet, and the node-by-node
effect of the corruption where :mod:`asc.why.effects` provides it (:func:`node_effects`, the one hook). With
``--patch``: :func:`asc.why.patching.patch`'s layer x node matrix (its largest cells) and category totals.
``--json``: ``{"corruption": {kind, description, source, corrupted, edits: [{start, end, old, new}]}, "target":
{clean_index, corrupted_index, text, clean_value, corrupted_value}, "effects": ... or null, "patching":
Patching.to_dict() or null}``. A bad spec or position: one line, exit 2 (checked before the model loads).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from asc.cli import fmt, load_bundle, read_source
from asc.errors import InputError

__all__ = ["add_intervene", "cmd_intervene", "node_effects", "source_offset"]


def source_offset(text: str, line: int, col: int, option: str = "--at") -> int:
    """The character offset of 1-based ``line``:``col`` in ``text``, or an :class:`InputError` naming the file's
    extent."""
    lines = text.split("\n")
    if line > len(lines) or col > len(lines[line - 1]) + 1:
        last = min(line, len(lines))
        raise InputError(f"{option} {line}:{col} is outside the file ({len(lines)} lines, line {last} has "
                         f"{len(lines[last - 1])} characters): give a position inside the file")
    return sum(len(s) + 1 for s in lines[: line - 1]) + col - 1


def node_effects(bundle: Any, corruption: Any, language: str) -> dict | None:
    """The node-by-node effect of ``corruption`` (clean against corrupted AsC-Eval, aligned by the tree diff), from
    :mod:`asc.why.effects` once it is there: the hook where that module plugs in; None until then."""
    import importlib

    try:
        effects = importlib.import_module("asc.why.effects")
    except ImportError:
        return None
    run = getattr(effects, "node_effects", None) or getattr(effects, "effects", None)
    if run is None:
        return None
    result = run(bundle, corruption, language=language)
    return result.to_dict() if hasattr(result, "to_dict") else result


def cmd_intervene(args: argparse.Namespace) -> int:
    from asc.explain import checked_tree
    from asc.why.corrupt import corrupt
    from asc.why.patching import patch, target_values

    tree = checked_tree(read_source(args.file), args.language)
    corruption = corrupt(tree.source, args.corrupt, args.language)  # a bad spec: exit 2 before the model loads
    offset = None if args.at is None else source_offset(tree.source, *args.at)
    bundle = load_bundle(args)
    target: int | None = None
    if offset is not None:
        from asc.why.patching import default_target

        target = default_target(bundle, tree.source, offset)
    result = patch(bundle, corruption, target, spans=args.spans, language=args.language) if args.patch else None
    values = target_values(bundle, corruption, target) if result is None else {
        **result.target, "clean_value": result.clean_value, "corrupted_value": result.corrupted_value}
    effects = None if args.patch else node_effects(bundle, corruption, args.language)
    if args.json:
        json.dump({"corruption": {"kind": corruption.kind, "description": corruption.description,
                                  "source": corruption.source, "corrupted": corruption.corrupted,
                                  "edits": [{"start": e.start, "end": e.end, "old": e.old, "new": e.new}
                                            for e in corruption.edits]},
                   "target": values, "effects": effects, "patching": None if result is None else result.to_dict()},
                  sys.stdout, ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    print(f"{corruption.description} ({len(corruption.edits)} edits); model {bundle.name}")
    print(f"target {values['text']!r} (token {values['clean_index']}; {values['corrupted_index']} when corrupted): "
          f"log p clean {fmt(values['clean_value'])}, corrupted {fmt(values['corrupted_value'])}, "
          f"change {fmt(values['corrupted_value'] - values['clean_value'])}")
    if result is None:
        if effects is None:
            print("(node-by-node effect: comes with asc.why.effects; add --patch for activation patching)")
        else:
            print(json.dumps(effects, ensure_ascii=False)[:2000])
        return 0
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


def add_intervene(sub: Any, at_position: Any, languages: tuple[str, ...], add_common: Any) -> None:
    """The ``intervene`` subcommand's parser (called by :mod:`asc.__main__`)."""
    from asc.cli import positive_int

    p = sub.add_parser("intervene", help="a corruption that keeps the code valid: its effect on one token, and "
                       "(--patch) activation patching layer x node")
    p.add_argument("file", help="source file, or - for standard input")
    p.add_argument("--corrupt", required=True, metavar="SPEC",
                   help="rename:NAME | operator:LINE:COL | literal:LINE:COL | docstring | comment")
    p.add_argument("--patch", action="store_true", help="activation patching: every layer x the changed nodes")
    p.add_argument("--spans", default="changed", choices=("changed", "after"),
                   help="--patch columns: the changed nodes (default), or also every named leaf up to the target")
    p.add_argument("--at", type=at_position, default=None, metavar="LINE:COL",
                   help="the target: the token starting at or after this position (default: the last token)")
    p.add_argument("--top", type=positive_int, default=12, help="--patch: cells listed (default 12)")
    p.add_argument("--language", default="python", choices=languages)
    p.add_argument("--json", action="store_true", help="one JSON object (layout in asc.why.cli_intervene)")
    add_common(p)
    p.set_defaults(func=cmd_intervene)
