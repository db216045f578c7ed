"""Tables as the pages show and export them: narrow enough for their panel, numbers to fixed decimals, every missing
value as one word that says why, and whitespace in code text made visible.

A browser's data grid shows a missing cell as "None" or leaves it blank whatever a format asks, and a column that
mixes words and numbers cannot reach its Arrow transport as it is, so :func:`shown` writes the cells as text: a number
with its decimals, a missing one as a word of :mod:`asc.missing` (``absent``, ``too few``, ``constant``,
``undefined``), one for the whole table or one per row. A node no category lists reads ``uncategorized``
(:data:`asc.concepts.UNCATEGORIZED`), a label, not a missing value. :func:`weakest_table` (the inspector's least
confident nodes, with their source text), :func:`token_table` (a node's tokens with their top alternatives) and
:func:`disagreement_table` (Compare's nodes where two models differ most) build on it; :func:`node_export` and
:func:`token_export` are the inspector's ``nodes.csv`` and ``tokens.csv`` (numbers kept numbers, for the CSV writer
to give a missing one its word).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from asc.concepts import UNCATEGORIZED, category_label
from asc.explain import Explanation
from asc.missing import ABSENT, is_missing
from asc.viz.html import visible_whitespace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["UNCATEGORIZED", "disagreement_table", "node_export", "shown", "token_export", "token_table",
           "weakest_table"]


def shown(frame: pd.DataFrame, numbers: Iterable[str], digits: int = 3, missing: str | Sequence[str] = ABSENT,
          words: Iterable[str] = ()) -> pd.DataFrame:
    """A copy of ``frame`` whose ``numbers`` columns are text: each number with ``digits`` decimals (whole numbers
    as they are), each missing cell (None, NaN) the word ``missing`` (one per row when a sequence); the ``words``
    columns (text) show ``missing`` for a missing cell too."""
    out = frame.copy()
    reasons = [missing] * len(out) if isinstance(missing, str) else list(missing)

    def number(value: object, reason: str) -> str:
        if is_missing(value):
            return reason
        if isinstance(value, int | np.integer) or (isinstance(value, float | np.floating) and digits == 0):
            return f"{int(value):,}"
        return f"{float(value):.{digits}f}"  # type: ignore[arg-type]

    for column in numbers:
        if column in out.columns:
            out[column] = [number(v, r) for v, r in zip(out[column].tolist(), reasons, strict=True)]
    for column in words:
        if column in out.columns:
            out[column] = [r if is_missing(v) else str(v) for v, r in zip(out[column].tolist(), reasons, strict=True)]
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
    nodes = nodes.assign(category=[category_label(c) for c in nodes["category"]])
    return shown(nodes[["id", "text", "type", "category", "value"]].rename(columns={"id": "node"}), ["value"])


def token_table(ex: Explanation, node: int, k: int = 3) -> pd.DataFrame:
    """The tokens of ``node`` as shown: index, the token (whitespace visible), probability, rank, entropy and the
    model's ``k`` likeliest tokens there; a token the model did not predict (the first one without a BOS, special
    tokens) reads ``absent`` in every column but its index and text."""
    import pandas as pd

    s = ex.scores
    rows = ex.alignment.tokens_of(node)
    predicted = ~np.isnan(s.prob[rows])
    top = [", ".join(f"{visible_whitespace(t)} {p:.2f}" for t, p in zip(s.top_text[i][:k], s.top_probs[i][:k], strict=False))
           if ok else None for i, ok in zip(rows, predicted, strict=True)]
    frame = pd.DataFrame({"index": rows.astype(int), "token": [visible_whitespace(s.text[i]) for i in rows],
                          "p": s.prob[rows], "rank": [int(s.rank[i]) if ok else None for i, ok in zip(rows, predicted, strict=True)],
                          "entropy": s.entropy[rows], f"top {k}": top})
    frame = shown(shown(frame, ["p"]), ["rank"], digits=0)
    return shown(frame, ["entropy"], digits=2, words=[f"top {k}"])


def disagreement_table(worst: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Compare's nodes where two models disagree most (``SnippetComparison.disagreements``: categories already
    labels) as shown: the two models' values and their difference to 3 decimals (``absent`` where a model has none),
    the text on one line."""
    if worst.empty:
        return worst
    return shown(worst.assign(text=[_one_line(str(t), 60) for t in worst["text"]]), [*models, "difference"])


def node_export(ex: Explanation) -> pd.DataFrame:
    """``nodes.csv``: :meth:`Explanation.node_frame` with each category a label (``uncategorized`` when no category
    lists the node's type); ``value`` stays a number, missing (NaN) where no predicted token is bound to the node."""
    nodes = ex.node_frame()
    return nodes.assign(category=[category_label(c) for c in nodes["category"]])


def token_export(ex: Explanation) -> pd.DataFrame:
    """``tokens.csv``: :meth:`Explanation.token_frame` with ``rank`` missing (not 0) where the model made no
    prediction, like ``prob``, ``logprob`` and ``entropy``."""
    import pandas as pd

    tokens = ex.token_frame()
    predicted = ~np.isnan(ex.scores.prob)
    ranks = [int(r) if ok else None for r, ok in zip(ex.scores.rank, predicted, strict=True)]
    return tokens.assign(rank=pd.array(ranks, dtype="Int64"))
