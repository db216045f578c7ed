"""Tables as the pages show them: narrow enough for their panel, numbers to fixed decimals, every missing value as
one word that says why, and whitespace in code text made visible.

A browser's data grid shows a missing cell as "None" or leaves it blank whatever a format asks, so :func:`shown`
writes the cells as text: a number with its decimals, a missing one as a word (``absent``, ``too few``...), one for
the whole table or one per row. :func:`weakest_table` (the inspector's least confident nodes, with their source
text) and :func:`token_table` (a node's tokens with their top alternatives) build on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from asc.explain import Explanation
from asc.viz.html import visible_whitespace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["UNCATEGORIZED", "shown", "token_table", "weakest_table"]

UNCATEGORIZED = "uncategorized"  # a node whose type no category of the mapping lists


def _missing(value: object) -> bool:
    """None, NaN or pandas' NA (a nullable integer column's gap)."""
    return value is None or type(value).__name__ == "NAType" or (isinstance(value, float | np.floating)
                                                                 and math.isnan(value))


def shown(frame: pd.DataFrame, numbers: Iterable[str], digits: int = 3, missing: str | Sequence[str] = "absent",
          words: Iterable[str] = ()) -> pd.DataFrame:
    """A copy of ``frame`` whose ``numbers`` columns are text: each number with ``digits`` decimals (whole numbers
    as they are), each missing cell (None, NaN) the word ``missing`` (one per row when a sequence); the ``words``
    columns (text) show ``missing`` for a missing cell too."""
    out = frame.copy()
    reasons = [missing] * len(out) if isinstance(missing, str) else list(missing)

    def number(value: object, reason: str) -> str:
        if _missing(value):
            return reason
        if isinstance(value, int | np.integer) or (isinstance(value, float | np.floating) and digits == 0):
            return f"{int(value):,}"
        return f"{float(value):.{digits}f}"  # type: ignore[arg-type]

    for column in numbers:
        if column in out.columns:
            out[column] = [number(v, r) for v, r in zip(out[column].tolist(), reasons, strict=True)]
    for column in words:
        if column in out.columns:
            out[column] = [r if _missing(v) else str(v) for v, r in zip(out[column].tolist(), reasons, strict=True)]
    return out


def _one_line(text: str, chars: int = 40) -> str:
    """Source text on one line: each line stripped, line breaks as `` ⏎ ``; at most ``chars`` characters."""
    line = " ⏎ ".join(part.strip() for part in text.split("\n") if part.strip())
    return line[:chars] + "…" if len(line) > chars else line


def weakest_table(ex: Explanation, k: int = 6) -> pd.DataFrame:
    """The ``k`` least confident named nodes (:meth:`Explanation.weakest_nodes`) as shown: node id, its source text
    (one line), type, category (``uncategorized`` when none lists it) and value."""
    nodes = ex.weakest_nodes(k)
    nodes = nodes.assign(text=[_one_line(ex.tree.text(int(i), limit=400)) for i in nodes["id"]])
    return shown(nodes[["id", "text", "type", "category", "value"]].rename(columns={"id": "node"}), ["value"],
                 missing=UNCATEGORIZED, words=["category"])


def token_table(ex: Explanation, node: int, k: int = 3) -> pd.DataFrame:
    """The tokens of ``node`` as shown: index, the token (whitespace visible), probability, rank, entropy and the
    model's ``k`` likeliest tokens there; a token the model did not predict (the first one without a BOS, special
    tokens) reads ``no prediction``, with a dash in the other columns."""
    import pandas as pd

    s = ex.scores
    rows = ex.alignment.tokens_of(node)
    predicted = ~np.isnan(s.prob[rows])
    top = [", ".join(f"{visible_whitespace(t)} {p:.2f}" for t, p in zip(s.top_text[i][:k], s.top_probs[i][:k], strict=False))
           if ok else None for i, ok in zip(rows, predicted, strict=True)]
    frame = pd.DataFrame({"index": rows.astype(int), "token": [visible_whitespace(s.text[i]) for i in rows],
                          "p": s.prob[rows], "rank": [int(s.rank[i]) if ok else None for i, ok in zip(rows, predicted, strict=True)],
                          "entropy": s.entropy[rows], f"top {k}": top})
    frame = shown(shown(frame, ["p"], missing="no prediction"), ["rank"], digits=0, missing="—")
    return shown(frame, ["entropy"], digits=2, missing="—", words=[f"top {k}"])
