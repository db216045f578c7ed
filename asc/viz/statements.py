"""Tables of "Why this token?" by statement (:mod:`asc.why.statements`): results in, DataFrames out.

- :func:`breakdown_table`: one row per statement (or per node's own tokens), ranked by ``|attribution|`` after the
  target's own line (ranked apart): the line(s), the row's code on one line, its kind, the signed attribution and
  its share (the shares of all rows add up to 1).
- :func:`agreement_table`: the top statements of each method side by side (rank 1 first), each cell giving the
  method's value, the line and its code.
- :func:`agreement_pairs`: Spearman's rank correlation over statements for each pair of methods, with how many
  statements both gave a value.

Cells are text (fixed decimals, one word for a missing value: :func:`asc.viz.tables.shown`); code keeps its
characters (the page shows a table cell as text, never as Markdown or HTML).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from asc.missing import ABSENT, CONSTANT, TOO_FEW
from asc.viz.html import visible_whitespace
from asc.viz.tables import shown
from asc.why.statements import Agreement, Breakdown

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CODE_CHARS", "TARGET_RANK", "agreement_pairs", "agreement_table", "breakdown_table", "flat_code"]

TARGET_RANK = "target"  # the rank cell of the target's own line (its tokens before the target), ranked apart
CODE_CHARS = 120  # a row's code on one line, at most this many characters (the full code is shown elsewhere)


def flat_code(text: str, chars: int = CODE_CHARS) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``chars`` characters with "…"; text that is
    only whitespace with its whitespace shown (``⏎····``)."""
    flat = " ".join(text.split()) or visible_whitespace(text)
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _lines(view: Breakdown | Agreement, r: int) -> str:
    first = int(view.line[r])
    last = int(view.last_line[r]) if isinstance(view, Breakdown) else first
    return str(first) if last == first else f"{first}-{last}"


def breakdown_table(view: Breakdown, k: int | None = None) -> pd.DataFrame:
    """The ``k`` rows of ``view`` with the largest ``|attribution|`` (all when None), largest first, after the
    target's own line (:attr:`~asc.why.statements.Breakdown.target_row`, ranked apart: its rank reads
    :data:`TARGET_RANK`): ``rank`` (text), ``line``, ``code``, ``kind``, ``attribution``, ``share``; a node view adds
    ``node``."""
    import pandas as pd

    pinned = [view.target_row] if view.target_row >= 0 else []
    rows = []
    for pos, r in enumerate(pinned + view.ranked(k, target_line=False)):
        row = {"rank": TARGET_RANK if r == view.target_row else str(pos + 1 - len(pinned)), "line": _lines(view, r),
               "code": flat_code(view.text[r]), "kind": view.kind[r], "attribution": float(view.value[r]),
               "share": float(view.share[r])}
        if view.unit == "node":
            row = {"rank": row.pop("rank"), "node": int(view.node[r]), **row}
        rows.append(row)
    columns = ["rank", *(["node"] if view.unit == "node" else []), "line", "code", "kind", "attribution", "share"]
    return shown(pd.DataFrame(rows, columns=columns), ["attribution", "share"], digits=4)


def agreement_table(ag: Agreement, names: Mapping[str, str] | None = None, k: int = 3,
                    chars: int = 26) -> pd.DataFrame:
    """Rank 1 to ``k``: one column per method (``names`` maps a method to its column title), each cell
    "+value · line N: code" of the statement the method ranks there ("absent" where it has fewer); the value first, so
    a narrow column cuts the code, never the number."""
    import pandas as pd

    titles = [(names or {}).get(m, m) for m in ag.methods]
    table: dict[str, list] = {"rank": list(range(1, k + 1))}
    for m, title in enumerate(titles):
        tops = ag.top(m, k)
        cells = [f"{ag.value[m, r]:+.3g} · line {_lines(ag, r)}: {flat_code(ag.text[r], chars)}" for r in tops]
        table[title] = cells + [ABSENT] * (k - len(cells))
    return pd.DataFrame(table)


def agreement_pairs(ag: Agreement, names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per pair of methods: ``methods``, ``Spearman`` (rank correlation of the statements' signed values;
    :data:`~asc.missing.TOO_FEW` under 3 statements in common, :data:`~asc.missing.CONSTANT` when a method's values
    do not vary), ``statements`` (in common)."""
    import pandas as pd

    title = [(names or {}).get(m, m) for m in ag.methods]
    rows = [{"methods": f"{title[a]} / {title[b]}", "Spearman": float(ag.spearman[a, b]),
             "statements": int(ag.n_common[a, b])}
            for a in range(len(title)) for b in range(a + 1, len(title))]
    frame = pd.DataFrame(rows, columns=["methods", "Spearman", "statements"])
    reasons = [TOO_FEW if n < 3 else CONSTANT for n in frame["statements"].tolist()]
    return shown(frame, ["Spearman"], digits=2, missing=reasons)
