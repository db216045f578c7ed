"""asc.study.tables: Likert counts per group, question and level, and Table III (percent per level)."""

from __future__ import annotations

import math

import pandas as pd

from asc.study.definition import LIKERT_LABELS
from asc.study.tables import AGREEMENT_LEVELS, agreement_table, rating_counts
from tests.helpers import BACKGROUND, N_BACKGROUND, N_SAMPLE, store_ratings

COLUMNS = ["code", "group", "kind", "sample_id", "question_id", "value"]


def test_agreement_table_on_hand_made_answers(study):
    rows = []
    for value, code in zip([5, 4, 4, 1], "wxyz", strict=True):  # group C: 25% SA, 50% A, 25% SD
        rows.append((code, "C", "rating", "a", "useful", str(value)))
    for value, code in zip([3, 2], "uv", strict=True):  # group S2: 50% N, 50% D
        rows.append((code, "S2", "rating", "b", "useful", str(value)))
    rows.append(("u", "S2", "rating", "b", "complex", None))  # left blank: not counted
    rows.append(("u", "S2", "comment", "b", "comment", "5"))  # not a rating
    rows.append(("u", "S2", "background", None, "python", "Expert"))
    responses = pd.DataFrame(rows, columns=["code", "group", "kind", "sample_id", "question_id", "value"])
    table = agreement_table(responses, study).set_index(["group", "question"])
    assert list(table.columns) == ["group_name", "question_text", "n", *AGREEMENT_LEVELS]
    assert AGREEMENT_LEVELS == ("Strongly agree", "Agree", "Neutral", "Disagree", "Strongly disagree")
    assert table.loc[("C", "useful"), ["n", *AGREEMENT_LEVELS]].tolist() == [4, 25.0, 50.0, 0.0, 0.0, 25.0]
    assert table.loc[("S2", "useful"), ["n", *AGREEMENT_LEVELS]].tolist() == [2, 0.0, 0.0, 50.0, 50.0, 0.0]
    assert table.loc[("S2", "complex"), "n"] == 0 and table.loc[("S2", "complex"), list(AGREEMENT_LEVELS)].isna().all()
    assert len(table) == 4 * 3  # every group and question, in study order
    filled = table[table["n"] > 0]
    assert (filled[list(AGREEMENT_LEVELS)].sum(axis=1) - 100).abs().max() < 1e-9


def test_agreement_table_from_the_store_and_csv_export(store, study, tmp_path):
    for i in range(8):
        code = store.new_participant()
        store.consent(code)
        store.save_background(code, BACKGROUND)
        for s in ("a", "b", "c"):
            store.save_ratings(code, s, store_ratings(i, s))
    table = agreement_table(store.responses(), study)
    assert table["n"].tolist() == [6] * 12  # 2 participants x 3 samples per group and question
    assert (table[list(AGREEMENT_LEVELS)].sum(axis=1) - 100).abs().max() < 1e-9
    counts = store.progress()[["assigned", "consented", "background_done", "finished"]]
    assert counts.to_numpy().tolist() == [[2] * 4] * 4
    out = store.export_csv(tmp_path / "responses.csv")
    back = pd.read_csv(out)
    assert len(back) == 8 * (N_BACKGROUND + 3 * N_SAMPLE)
    assert list(back.columns) == ["code", "group", "kind", "sample_id", "question_id", "value", "submitted_at"]
    assert "personal" not in store.participants().columns and len(store.participants()) == 8


def test_rating_counts_keep_every_level_with_zeros(study):
    responses = pd.DataFrame([("p", "S1", "rating", "a", "useful", "4"), ("q", "S1", "rating", "b", "useful", "4"),
                              ("q", "S1", "rating", "b", "readable", "1"),
                              ("q", "S1", "background", "", "python", "5"),  # not a rating: no sample
                              ("q", "S1", "rating", "b", "complex", None)], columns=COLUMNS)
    counts = rating_counts(responses, study)
    assert list(counts.columns) == ["group", "question", "level", "label", "count"]
    assert len(counts) == 4 * 3 * 5  # every group x question x level, zeros kept
    s1 = counts[(counts["group"] == "S1")].set_index(["question", "level"])["count"]
    assert s1[("useful", 4)] == 2 and s1[("readable", 1)] == 1 and s1.sum() == 3
    assert counts["count"].sum() == 3
    first = counts.iloc[:5]
    assert first["level"].tolist() == [5, 4, 3, 2, 1]  # Strongly agree first
    assert first["label"].tolist() == [LIKERT_LABELS[v - 1] for v in (5, 4, 3, 2, 1)]
    assert list(dict.fromkeys(counts["group"])) == ["C", "S1", "S2", "S3"]  # study order
    assert list(dict.fromkeys(counts["question"])) == ["useful", "readable", "complex"]


def test_no_answers_give_zero_counts_and_empty_percentages(study):
    empty = pd.DataFrame(columns=COLUMNS)
    counts = rating_counts(empty, study)
    assert len(counts) == 60 and counts["count"].eq(0).all()
    table = agreement_table(empty, study)
    assert len(table) == 12 and table["n"].eq(0).all()
    assert all(math.isnan(v) for v in table[list(AGREEMENT_LEVELS)].to_numpy().ravel())
    assert table.iloc[0][["group_name", "question_text"]].tolist() == ["C", "The visualization is useful."]
