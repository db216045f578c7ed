"""``python -m asc attribute FILE --at LINE:COL``: what in the code the prediction of one token used.

``--at`` names the target token (:func:`asc.why.targets.target_at`: the token that starts at LINE:COL, or the first
one after it); ``--method`` grad (default), ig or occlusion; ``--contrast TEXT`` explains ``log p(token) -
log p(TEXT)`` (one token, such as one of the model's top choices there). ``--json`` prints the ``explain --json``
layout with ``attribution`` on every token and node, ``categories_attribution`` and ``target``
(:meth:`asc.why.attribute.Attribution.to_dict`); otherwise a short table of the top source nodes. A bad position,
contrast or setting: one line, exit 2, before the model loads where it can be checked without it.
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
    count,
    line_col,
    load_bundle,
    positive_int,
    read_source,
    source_offset,
)
from asc.cli.runner import fmt
from asc.syntax import LANGUAGES

__all__ = ["add_parser", "execute", "steps"]


def steps(text: str) -> int | str:
    """argparse type of ``--steps``: a whole number from 1 to :data:`~asc.why.attribute.AUTO_MAX_STEPS` (the
    inspector's cap: the path's activations grow with it), or ``auto``."""
    from asc.why.attribute import AUTO_MAX_STEPS, AUTO_STEPS

    if text == AUTO_STEPS:
        return AUTO_STEPS
    try:
        return count(AUTO_MAX_STEPS, "the path's activations grow with the steps")(text)
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{err}; or give {AUTO_STEPS}") from None


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``attribute`` to ``python -m asc``'s subcommands."""
    from asc.why.attribute import ATTRIBUTION_METHODS, AUTO_MAX_STEPS, AUTO_STEPS, AUTO_TOLERANCE, DEFAULT_STEPS
    from asc.why.targets import BASELINES

    p = sub.add_parser("attribute", help="what in the code one token's prediction used: gradient x input, "
                       "integrated gradients or occlusion, per token, AST node and category")
    add_source_file(p)
    p.add_argument("--at", required=True, type=line_col, metavar="LINE:COL",
                   help="the target token: the one starting at this position or the first after it (from 1)")
    p.add_argument("--method", default="grad", choices=ATTRIBUTION_METHODS,
                   help="grad: gradient x input (default); ig: integrated gradients; occlusion: each AST node removed")
    p.add_argument("--contrast", default=None, metavar="TEXT",
                   help="explain log p(token) - log p(TEXT), TEXT one token (e.g. one of the model's top choices)")
    p.add_argument("--steps", type=steps, default=DEFAULT_STEPS,
                   help=(f"--method ig: points on the path (Gauss-Legendre; default {DEFAULT_STEPS}, at most "
                         f"{AUTO_MAX_STEPS}), or {AUTO_STEPS}: {DEFAULT_STEPS}, then twice as many until the "
                         f"completeness gap is within {AUTO_TOLERANCE:.0%} (at most {AUTO_MAX_STEPS})"
                         ).replace("%", "%%"))  # argparse %-formats help: a lone % crashed --help
    p.add_argument("--baseline", default=BASELINES[0], choices=BASELINES,
                   help="ig and occlusion: the pad (else end-of-sequence) token's embedding (default) or zeros")
    p.add_argument("--hold-sink", action=argparse.BooleanOptionalAction, default=True,
                   help="ig: hold the first token (the attention sink of a model without BOS) at its embedding "
                        "(default), which makes the path smooth enough to integrate; --no-hold-sink: the textbook path")
    p.add_argument("--top", type=positive_int, default=10, help="source nodes listed (default 10)")
    p.add_argument("--language", default="python", choices=LANGUAGES)
    p.add_argument("--json", action="store_true", help="the explain --json layout with attributions and the target")
    add_scoring_options(p)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Attribute the target token and print the report (or the JSON object)."""
    from asc.explain import checked_tree, explain
    from asc.why.attribute import AUTO_MAX_STEPS, AUTO_TOLERANCE, attribute
    from asc.why.targets import target_at

    tree = checked_tree(read_source(args.file), args.language)  # refuse bad input before loading the model
    source_offset(tree.source, args.at)  # a position outside the snippet: before loading the model
    line, col = args.at
    bundle = load_bundle(args)
    ex = explain(bundle, tree.source, language=args.language, aggregate=args.aggregate, options=align_options(args),
                 max_window=args.max_window, tree=tree)
    target = target_at(bundle, ex, line, col, args.contrast)
    result = attribute(bundle, tree.source, target, args.method, args.steps, args.baseline, explanation=ex,
                       hold_sink=args.hold_sink)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    t = ex.tree
    print(f"model {bundle.name}  target {target.describe()}  log p {fmt(target.logprob)}  method {args.method}"
          + (f" ({result.steps} steps{' (auto)' if isinstance(args.steps, str) else ''}, {args.baseline} baseline"
             + (", first token held: the attention sink)" if result.sink_held else ")") if args.method == "ig" else ""))
    print(f"value {fmt(result.value)}" + (f"  at the baseline {fmt(result.baseline_value)}  sum of attributions "
                                         f"{fmt(result.value - result.baseline_value + result.delta)}"
                                         if args.method == "ig" else ""))
    if args.method == "ig" and result.relative_gap > AUTO_TOLERANCE:
        auto = ", or auto" if result.steps < AUTO_MAX_STEPS else ""
        print(f"note: the attributions miss value - baseline value by {100 * result.relative_gap:.1f}%: "
              f"more --steps (e.g. {4 * result.steps}{auto}) bring the sum closer")
    print(f"\n{'node':>5} {'type':<22} {'category':<22} {'attribution':>11}  text")
    for node, value in result.top_nodes(args.top):
        cat = ex.node_category[node] or "-"
        print(f"{node:>5} {t.type[node]:<22} {cat:<22} {value:>+11.4f}  {t.text(node, limit=40)!r}")
    print("\ncategory                  signed    share")
    for cat, value in result.category_attr.items():
        print(f"  {cat:<22} {fmt(value):>8} {fmt(result.category_share[cat], 2):>8}")
    return 0
