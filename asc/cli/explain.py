"""``python -m asc explain FILE``: the token and node tables of one snippet, or its ``--json`` layout.

The file is read and parsed once (:func:`asc.explain.checked_tree`) before the model loads, so a bad file is one
line and exit 2 at once. ``--per-layer`` (old name ``--layers``) adds AsC-Eval at every layer (logit lens,
:func:`asc.depth.explain_layers`): the per-layer category values and their first crossing of the confidence line,
and in ``--json`` the ``"layers"`` block.
"""

from __future__ import annotations

import argparse
import json
import sys

from asc.cli.args import (
    RenamedFlag,
    Subcommands,
    add_scoring_options,
    add_source_file,
    align_options,
    load_bundle,
    read_source,
)
from asc.cli.runner import fmt
from asc.concepts import CONFIDENCE_LINE
from asc.syntax import LANGUAGES

__all__ = ["add_parser", "execute"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``explain`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("explain", help="token and node table of one snippet")
    add_source_file(p)
    p.add_argument("--language", default="python", choices=LANGUAGES)
    p.add_argument("--json", action="store_true", help="one JSON object (layout in docs/cli.md)")
    p.add_argument("--per-layer", "--layers", action=RenamedFlag,
                   help="also AsC-Eval at every layer (logit lens): per-layer token probabilities and category values")
    add_scoring_options(p)
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Explain the file and print its tables (or the JSON object)."""
    from asc.explain import checked_tree, explain

    tree = checked_tree(read_source(args.file), args.language)  # refuse bad input before loading the model
    bundle = load_bundle(args)
    depth = None
    if args.per_layer:
        from asc.depth import explain_layers

        depth = explain_layers(bundle, tree.source, language=args.language, aggregate=args.aggregate,
                               options=align_options(args), max_window=args.max_window, tree=tree)
        ex = depth.explanation
    else:
        ex = explain(bundle, tree.source, language=args.language, aggregate=args.aggregate,
                     options=align_options(args), max_window=args.max_window, tree=tree)
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
