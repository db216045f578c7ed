"""Scores and metrics (probes.blanca.evaluate) on hand-made vectors: distances per pair, MRR, t and d, the sign
of r for distance and similarity targets, splits, and the paper-style table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from probes.blanca.evaluate import PAPER_BLANCA, SCORE_COLUMNS, blanca_table, item_texts, score_with, summarize
from probes.blanca.items import PairItem, RankItem, ScoredPairItem
from probes.blanca.metrics import t_test


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)])


def test_rank_items_score_every_answer_and_mrr_follows_the_ranking():
    items = [RankItem("R/1", "test", "q1", ("a", "b"), (1.0, 0.0)), RankItem("R/2", "test", "q2", ("a", "b"), (0.0, 1.0))]
    texts = item_texts(items)
    assert texts == ["q1", "a", "b", "q2"]
    vectors = np.stack([_unit(0.0), _unit(0.1), _unit(1.5), _unit(0.0)])  # "a" is close to both questions
    scores = score_with(vectors, texts, "R", items, "m")
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert scores["row"].tolist() == [0, 1, 0, 1]
    assert scores["distance"].iloc[0] == pytest.approx(1 - math.cos(0.1))
    summary = summarize(scores, n_boot=50).set_index("metric")
    assert summary.loc["MRR", "value"] == pytest.approx((1 + 0.5) / 2)  # q2's true answer "b" ranks second
    assert summary.loc["MRR", "n"] == 2


def _pair_scores(pos: list[float], neg: list[float], task: str = "L") -> pd.DataFrame:
    rows = [("m", task, f"{task}/{i}", "test", 0, d, 1.0, "", "", "") for i, d in enumerate(pos)]
    rows += [("m", task, f"{task}/n{i}", "test", 0, d, 0.0, "", "", "") for i, d in enumerate(neg)]
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def test_pair_tasks_give_t_d_and_mean_distances():
    pos, neg = [0.1, 0.2, 0.3, 0.2], [0.5, 0.7, 0.6, 0.9, 0.8]
    summary = summarize(_pair_scores(pos, neg), n_boot=200).set_index("metric")
    expected = t_test(pos, neg)
    assert summary.loc["t", "value"] == pytest.approx(expected.t) and expected.t > 0
    assert summary.loc["t", "p_value"] == pytest.approx(expected.p)
    assert summary.loc["d", "value"] == pytest.approx(expected.t * math.sqrt(1 / 4 + 1 / 5))
    assert summary.loc["distance+", "value"] == pytest.approx(np.mean(pos))
    assert summary.loc["distance-", "value"] == pytest.approx(np.mean(neg))
    assert summary.loc["t", "low"] < summary.loc["t", "value"] < summary.loc["t", "high"]


def test_r_reads_similarity_targets_as_distances():
    target = np.linspace(0, 1, 10)
    rows = [("m", "U", f"U/{i}", "test", 0, 1 - s, s, "a", "b", "") for i, s in enumerate(target)]
    rows += [("m", "H", f"H/{i}", "test", 0, 0.1 * d, float(d), "a", "b", "") for i, d in enumerate(range(1, 11))]
    summary = summarize(pd.DataFrame(rows, columns=list(SCORE_COLUMNS)), n_boot=50).set_index("task")
    assert summary.loc["U", "value"] == pytest.approx(1.0)  # more similar usage, closer embeddings: r = +1
    assert summary.loc["H", "value"] == pytest.approx(1.0)
    flipped = summarize(pd.DataFrame(rows, columns=list(SCORE_COLUMNS)), targets={"U": "distance"}, n_boot=50)
    assert flipped.set_index("task").loc["U", "value"] == pytest.approx(-1.0)


def test_splits_filter_and_too_small_cells_stay_empty():
    scores = _pair_scores([0.1, 0.2], [0.5, 0.6])
    scores.loc[0, "split"] = "train"
    assert summarize(scores, "test", n_boot=10).empty  # one positive left on test: no t-test
    assert set(summarize(scores, "all", n_boot=10)["metric"]) == {"t", "d", "distance+", "distance-"}
    with pytest.raises(Exception, match="choose test, train or all"):
        summarize(scores, "dev")


def test_pair_items_score_text_a_against_text_b():
    items = [PairItem("F", "F/1", "test", "post", "doc", True), ScoredPairItem("H", "H/1", "test", "x", "y", 2.0, "a", "b")]
    vectors = np.stack([_unit(0.0), _unit(math.pi / 2)])
    f = score_with(vectors, ["post", "doc"], "F", items[:1], "m")
    assert f["distance"].iloc[0] == pytest.approx(1.0) and f["target"].iloc[0] == 1.0
    with pytest.raises(Exception, match="is a H item in the F task"):
        score_with(vectors, ["x", "y"], "F", items[1:], "m")


def test_table_has_our_rows_then_the_papers():
    summary = summarize(_pair_scores([0.1, 0.2, 0.3], [0.5, 0.7, 0.6]), n_boot=20)
    table = blanca_table(summary)
    assert table["model"].tolist() == ["m", *PAPER_BLANCA]
    assert table.loc[0, "L t"] == pytest.approx(summary.set_index("metric").loc["t", "value"])
    assert math.isnan(table.loc[0, "H r"])
    assert table.loc[1, "U r"] == 0.41
    assert list(blanca_table(summary, paper=False)["model"]) == ["m"]
