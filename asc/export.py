"""CSV a spreadsheet opens as data: no text cell is read as a formula (CSV injection).

Spreadsheets evaluate a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and some do after a leading tab
or carriage return), so a participant's comment ``=HYPERLINK(...)`` or a model name would run in the
researcher's spreadsheet. :func:`spreadsheet_safe` prefixes such text cells (and column or index labels)
with a single quote, the spreadsheets' own "this is text" mark; numbers stay numbers, also negative ones.
:func:`csv_text` is the CSV of the safe table, as ``DataFrame.to_csv`` writes it, except that a field holding a
carriage return is quoted (so it cannot end a row) and a cell without a value carries the word that says why
(:mod:`asc.missing`: ``absent`` unless the caller names another), never an empty field.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pandas as pd

from asc.missing import ABSENT, is_missing

__all__ = ["FORMULA_STARTS", "csv_text", "spreadsheet_safe"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _safe(value: Any) -> Any:
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def _safe_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return index.set_levels([_safe_index(level) for level in index.levels])
    return index.map(_safe) if index.dtype == object else index


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text cells, column labels and index labels cannot start a formula (``'`` prefixed)."""
    out = df.copy()
    for column in out.columns:
        if out[column].dtype == object or isinstance(out[column].dtype, pd.StringDtype):
            out[column] = out[column].map(_safe, na_action="ignore")
    out.columns = _safe_index(out.columns)
    out.index = _safe_index(out.index)
    return out


def csv_text(df: pd.DataFrame, index: bool = False, missing: str = ABSENT) -> str:
    """The CSV of :func:`spreadsheet_safe` ``(df)`` (header row, then one row per record; ``index``: index first); a
    cell without a value (None, NaN, NA) reads ``missing``, a word of :data:`asc.missing.MISSING_WORDS`."""
    safe = spreadsheet_safe(df)
    # "\r\n" as the writer's terminator makes it quote fields that hold a CR or LF (with "\n" alone a bare CR
    # would end the row in a spreadsheet); each row's terminator is then written as "\n", as pandas does
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    lines: list[str] = []

    def write(cells: list[Any]) -> None:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(cells)
        lines.append(buffer.getvalue()[:-2] + "\n")

    names = ["" if n is None else n for n in safe.index.names] if index else []
    write([*names, *safe.columns])
    for key, row in zip(safe.index, safe.itertuples(index=False, name=None)):
        keys = (key if isinstance(key, tuple) else (key,)) if index else ()
        write([missing if is_missing(v) else v for v in (*keys, *row)])
    return "".join(lines)
