"""Summaries of a study's answers: Likert counts per group and question, and the paper's Table III.

Both take the long frame of :meth:`asc.study.store.StudyStore.responses` and the study definition.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from asc.study.definition import LIKERT_LABELS, StudyDefinition

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AGREEMENT_LEVELS", "agreement_table", "rating_counts"]

AGREEMENT_LEVELS = tuple(reversed(LIKERT_LABELS))  # Table III order: Strongly agree .. Strongly disagree


def _ratings_only(responses: pd.DataFrame, study: StudyDefinition) -> pd.DataFrame:
    ids = [q.id for q in study.ratings]
    if not len(responses):
        return responses
    keep = responses["question_id"].isin(ids) & responses["sample_id"].notna() & responses["value"].notna()
    return responses[keep & (responses["sample_id"] != "")]


def rating_counts(responses: pd.DataFrame, study: StudyDefinition) -> pd.DataFrame:
    """Likert answers counted per group, rating question and level (5 = Strongly agree first; zeros kept)."""
    import pandas as pd

    r = _ratings_only(responses, study)
    rows = []
    for g in study.groups:
        for q in study.ratings:
            sel = r[(r["group"] == g.id) & (r["question_id"] == q.id)] if len(r) else r
            counts = sel["value"].astype(int).value_counts().to_dict() if len(sel) else {}
            for level in range(5, 0, -1):
                rows.append((g.id, q.id, level, LIKERT_LABELS[level - 1], int(counts.get(level, 0))))
    return pd.DataFrame(rows, columns=["group", "question", "level", "label", "count"])


def agreement_table(responses: pd.DataFrame, study: StudyDefinition) -> pd.DataFrame:
    """Table III: one row per group and rating question (study order) with n and the percent of answers
    per Likert level, Strongly agree .. Strongly disagree, summing to 100 (NaN while n is 0)."""
    import pandas as pd

    counts = rating_counts(responses, study)
    names = {g.id: g.name for g in study.groups}
    texts = {q.id: q.text for q in study.ratings}
    rows = []
    for (group, question), sel in counts.groupby(["group", "question"], sort=False):
        by_label = dict(zip(sel["label"], sel["count"]))
        n = int(sel["count"].sum())
        rows.append([group, names[group], question, texts[question], n]
                    + [100.0 * by_label[label] / n if n else math.nan for label in AGREEMENT_LEVELS])
    return pd.DataFrame(rows, columns=["group", "group_name", "question", "question_text", "n", *AGREEMENT_LEVELS])
