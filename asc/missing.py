"""Missing values, one way: the four words that say why a cell has no value, and how exports write them.

Every table the app shows, every CSV it exports and every JSON table names a missing value with one of these words,
never ``None``, ``nan``, ``n/a``, a dash, an empty cell or a made-up ``0``:

* :data:`ABSENT` (``absent``): nothing to measure. No node of the category in the snippet or corpus, no predicted
  token bound to the node, no prediction for the token (the first token without a BOS, special tokens), no node on
  this side of a comparison, no token of the category attributed.
* :data:`TOO_FEW` (``too few``): something to measure, but fewer observations than the statistic needs (fewer
  snippets than a causal estimate needs, under three statements for a rank correlation).
* :data:`CONSTANT` (``constant``): the observations do not vary, so a correlation or an effect has no value.
* :data:`UNDEFINED` (``undefined``): the value is not defined for another reason (a share of a zero total, a
  correlation with a constant confounder, an estimate that gave no number).

A node whose type no category of the mapping lists is not a missing value: its category is the label
``uncategorized`` (:data:`asc.concepts.UNCATEGORIZED`), in tables, exports and hover texts alike. Only the data
(``Explanation.node_category``, a run folder's Parquet tables) keep it null, and corpus summaries leave such nodes out.

**Exports.** CSV: a cell without a value carries the word (:func:`asc.export.csv_text`), so a spreadsheet never shows
an empty cell that could be a 0 or an error (``pandas.read_csv(path, na_values=list(MISSING_WORDS))`` reads the
words back as NaN). JSON: a number without a value is ``null``, so a JSON reader keeps numbers numbers, and the
reason is a field of its own: a table exported as JSON records (:func:`json_records`) gives each record that holds a
``null`` a ``missing`` object, column -> word. The documents with a fixed layout (``explain --json``, the branch
tree's JSON) have one meaning per nullable field, which their layout names (``null``: ``absent``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ABSENT", "CONSTANT", "MEANINGS", "MISSING_WORDS", "TOO_FEW", "UNDEFINED", "is_missing", "json_records"]

ABSENT = "absent"  # nothing to measure: no node, token or prediction of that kind
TOO_FEW = "too few"  # fewer observations than the statistic needs
CONSTANT = "constant"  # the observations do not vary: no correlation or effect
UNDEFINED = "undefined"  # not defined for another reason (a share of zero, a failed estimate)
MISSING_WORDS = (ABSENT, TOO_FEW, CONSTANT, UNDEFINED)
MEANINGS = MappingProxyType({
    ABSENT: "nothing to measure: no node of the category, no predicted token bound to the node, no prediction for "
            "the token, no node on this side",
    TOO_FEW: "fewer observations than the statistic needs",
    CONSTANT: "the observations do not vary, so a correlation or an effect has no value",
    UNDEFINED: "not defined for another reason (a share of a zero total, an estimate that gave no number)",
})


def is_missing(value: object) -> bool:
    """True for a value that is not there: None, NaN (float or numpy), pandas' NA or NaT."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value JSON writes."""
    return value.item() if isinstance(value, np.generic) else value


def json_records(frame: pd.DataFrame, missing: str | Sequence[str] = ABSENT) -> list[dict[str, Any]]:
    """``frame``'s rows as JSON-ready records (module doc): every missing cell ``None`` (JSON ``null``), and a record
    that holds one gets ``"missing": {column: word}`` with ``missing`` (one word, or one per row)."""
    words = [missing] * len(frame) if isinstance(missing, str) else list(missing)
    records = []
    for row, word in zip(frame.to_dict(orient="records"), words, strict=True):
        record = {str(k): None if is_missing(v) else _plain(v) for k, v in row.items()}
        gaps = {k: word for k, v in record.items() if v is None}
        records.append({**record, "missing": gaps} if gaps else record)
    return records
