"""asc.study.figure: the ratings chart stacks each group's Likert counts, one panel per rating question."""

from __future__ import annotations

import pandas as pd

from asc.study.figure import rating_bars
from asc.study.tables import AGREEMENT_LEVELS, rating_counts
from tests.helpers import store_ratings

COLUMNS = ["code", "group", "kind", "sample_id", "question_id", "value"]
COLORS = {"Strongly agree": "#2c7bb6", "Agree": "#abd9e9", "Neutral": "#ffffbf", "Disagree": "#fdae61",
          "Strongly disagree": "#d7191c"}


def _responses():
    rows = []
    for i, (code, group) in enumerate([("p", "C"), ("q", "C"), ("r", "S1"), ("s", "S3")]):
        for sample in ("a", "b"):
            rows += [(code, group, "rating", sample, q, str(v)) for q, v in store_ratings(i, sample).items()
                     if q != "comment"]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_bars_plot_the_counts_per_group_level_and_question(study):
    counts = rating_counts(_responses(), study)
    fig = rating_bars(counts)
    assert fig.layout.barmode == "stack" and fig.layout.title.text == "Ratings per group and question"
    assert [a.text for a in fig.layout.annotations] == [f"question={q}" for q in ("useful", "readable", "complex")]
    panel = {"x": "useful", "x2": "readable", "x3": "complex"}
    assert len(fig.data) == 5 * 3  # a trace per level and panel
    for trace in fig.data:
        assert trace.marker.color == COLORS[trace.name]
        question = panel[trace.xaxis]
        want = counts[(counts["question"] == question) & (counts["label"] == trace.name)].set_index("group")["count"]
        assert list(trace.x) == ["C", "S1", "S2", "S3"]
        assert [int(v) for v in trace.y] == [int(want[g]) for g in trace.x]
    total = sum(int(v) for t in fig.data for v in t.y)
    assert total == int(counts["count"].sum()) == 4 * 2 * 3  # 4 participants, 2 samples, 3 ratings


def test_legend_lists_levels_from_strongly_agree_down(study):
    fig = rating_bars(rating_counts(_responses(), study))
    assert list(dict.fromkeys(t.name for t in fig.data)) == list(AGREEMENT_LEVELS)
    assert fig.layout.legend.title.text == "" and fig.layout.height == 380
