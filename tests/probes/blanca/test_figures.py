"""BLANCA figures draw the tables' numbers: split, fitted and ranked as the data says, errors name the fix."""

import json

import numpy as np
import pandas as pd
import pytest

from asc.errors import InputError
from asc.viz import MODEL_COLORS
from probes.blanca.figures import (
    distance_distributions,
    question_answers,
    ranked_answers_figure,
    regression_plot,
    summary_bars,
)


def _spec(fig):
    return json.loads(fig.to_json())


def _rows(model, task, distances, targets, ids=None, rows=None):
    n = len(distances)
    return pd.DataFrame({
        "model": model, "task": task, "id": ids if ids is not None else [f"{task}{i}" for i in range(n)],
        "split": "test", "row": rows if rows is not None else [0] * n, "distance": np.asarray(distances, float),
        "target": np.asarray(targets, float), "name_a": [f"a{i}" for i in range(n)],
        "name_b": [f"b<{i}>" for i in range(n)], "group": ""})


@pytest.fixture
def pairs():
    m1 = _rows("m1", "L", [0.10, 0.12, 0.15, 0.11, 0.14, 0.80, 0.85, 0.90, 0.82, 0.88, 0.86, 0.84],
               [1] * 5 + [0] * 7)
    m2 = _rows("m2", "L", [0.3, 0.4, 0.5, 0.6, 0.5, 0.4, 0.7], [1] * 3 + [0] * 4)
    return pd.concat([m1, m2, _rows("m1", "H", [0.2, 0.3], [1, 2])], ignore_index=True)


def test_distributions_split_positives_and_negatives_per_model(pairs):
    before = pairs.copy()
    fig = distance_distributions(pairs, "L", bins=10)
    pd.testing.assert_frame_equal(pairs, before)
    data = _spec(fig)["data"]
    assert [t["name"] for t in data] == ["m1 · positive", "m1 · negative", "m2 · positive", "m2 · negative"]
    assert [t["line"]["dash"] for t in data] == ["solid", "dash", "solid", "dash"]
    assert data[0]["line"]["color"] == data[1]["line"]["color"] == MODEL_COLORS[0]
    assert data[2]["line"]["color"] == MODEL_COLORS[1]
    assert [sum(c[2] for c in t["customdata"]) for t in data] == [5, 7, 3, 4]
    assert [t["customdata"][0][3] for t in data] == [5, 7, 3, 4]
    assert data[0]["x"] == data[3]["x"]  # bins are shared, so the curves compare
    width = data[0]["customdata"][0][1] - data[0]["customdata"][0][0]
    for t in data:
        assert np.isclose(sum(t["y"]) * width, 1.0)
    # m1's positives sit in the lowest bins, its negatives in the highest
    pos = [c for c in data[0]["customdata"] if c[2]]
    neg = [c for c in data[1]["customdata"] if c[2]]
    assert max(c[1] for c in pos) < 0.3 < min(c[0] for c in neg)
    assert fig.layout.title.text.startswith("L: linked vs unlinked sections")


def test_distributions_choose_models_and_keep_their_colors(pairs):
    data = _spec(distance_distributions(pairs, "L", models=["m2"]))["data"]
    assert [t["name"] for t in data] == ["m2 · positive", "m2 · negative"]
    assert data[0]["line"]["color"] == MODEL_COLORS[1]


def test_distributions_name_the_fix(pairs):
    with pytest.raises(InputError, match=r"\['L', 'F'\]"):
        distance_distributions(pairs, "H")
    with pytest.raises(InputError, match=r"tasks present: \['H', 'L'\]"):
        distance_distributions(pairs, "F")
    with pytest.raises(InputError, match=r"models present: \['m1', 'm2'\]"):
        distance_distributions(pairs, "L", models=["bert"])
    with pytest.raises(InputError, match="lacks the columns"):
        distance_distributions(pairs.drop(columns=["target"]), "L")


def _hierarchy(model, n, slope, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 11, n).astype(float)
    return _rows(model, "H", 0.2 + slope * x + rng.normal(0, 0.05, n), x)


def _line(data, model):
    return next(t for t in data if t["name"].startswith(f"{model} · least squares"))


def test_regression_line_is_the_least_squares_fit_on_every_point():
    scores = pd.concat([_hierarchy("m1", 500, 0.03, 1), _hierarchy("m2", 300, 0.0, 2)], ignore_index=True)
    fig = regression_plot(scores, "H", max_points=50)
    data = _spec(fig)["data"]
    for model in ("m1", "m2"):
        part = scores[scores["model"] == model]
        x, y = part["target"].to_numpy(), part["distance"].to_numpy()
        slope, intercept = np.polyfit(x, y, 1)
        line = _line(data, model)
        assert line["x"] == [x.min(), x.max()]
        assert np.isclose((line["y"][1] - line["y"][0]) / (line["x"][1] - line["x"][0]), slope)
        assert np.isclose(line["y"][0], intercept + slope * x.min())
        assert f"r = {np.corrcoef(x, y)[0, 1]:.2f}" in line["name"]
        points = next(t for t in data if t["name"] == f"{model} · pairs")
        assert len(points["x"]) == len(points["y"]) == 50
        drawn = np.array([float(c[2]) for c in points["customdata"]])
        assert np.all(np.abs(np.array(points["x"]) - drawn) <= 0.15)  # jittered around the true distance
        assert not np.allclose(points["x"], drawn)
        assert not np.isclose(np.polyfit(drawn, points["y"], 1)[0], slope, rtol=1e-6)  # the sample's fit differs
    assert _line(data, "m1")["xaxis"] != _line(data, "m2")["xaxis"]  # one panel per model
    again = _spec(regression_plot(scores, "H", max_points=50))["data"]
    assert again[0]["x"] == data[0]["x"]  # seeded


def test_regression_h_draws_the_mean_per_distance():
    scores = _rows("m1", "H", [0.1, 0.3, 0.5, 0.6, 0.7], [1, 1, 2, 2, 3])
    data = _spec(regression_plot(scores, "H"))["data"]
    means = next(t for t in data if t["name"] == "m1 · mean per distance")
    assert means["x"] == [1.0, 2.0, 3.0] and np.allclose(means["y"], [0.2, 0.55, 0.7])
    assert np.allclose(means["error_y"]["array"], [0.1, 0.05, 0.0])
    assert [c[0] for c in means["customdata"]] == [2, 2, 1]


def test_regression_u_reports_r_with_the_target_read_as_a_distance():
    rng = np.random.default_rng(3)
    sim = rng.uniform(0, 1, 200)
    scores = _rows("m1", "U", 1 - 0.5 * sim + rng.normal(0, 0.02, 200), sim)
    data = _spec(regression_plot(scores, "U"))["data"]
    assert not any("mean per distance" in t["name"] for t in data)
    line = _line(data, "m1")
    assert line["y"][1] < line["y"][0]  # distance falls as similarity grows ...
    r = np.corrcoef(1 - sim, scores["distance"])[0, 1]
    assert r > 0.9 and f"r = {r:.2f}" in line["name"]  # ... which is a positive (good) r
    points = next(t for t in data if t["name"] == "m1 · pairs")
    assert np.allclose(sorted(points["x"]), sorted(sim))  # no jitter for U


def test_regression_name_the_fix():
    scores = _hierarchy("m1", 20, 0.03, 1)
    with pytest.raises(InputError, match=r"\['H', 'U'\]"):
        regression_plot(scores, "L")
    with pytest.raises(InputError, match="tasks present"):
        regression_plot(scores, "U")
    with pytest.raises(InputError, match="m1"):
        regression_plot(scores, "H", models=["m9"])
    with pytest.raises(InputError, match="max_points"):
        regression_plot(scores, "H", max_points=0)


def _summary():
    nan = float("nan")
    rows = [("m1", "R", "MRR", 0.6, 0.5, 0.7, nan, 40), ("m1", "R", "NDCG", 0.8, 0.7, 0.9, nan, 40),
            ("m2", "R", "MRR", 0.4, 0.3, 0.5, nan, 40), ("m2", "R", "NDCG", 0.7, 0.6, 0.8, nan, 40),
            ("m1", "L", "d", 5.0, 4.0, 6.5, 1e-6, 30), ("m1", "L", "distance+", 0.2, nan, nan, nan, 30),
            ("m2", "L", "d", -1.0, nan, nan, 0.3, 30), ("m2", "H", "r", 0.25, 0.2, 0.3, 0.01, 100)]
    return pd.DataFrame(rows, columns=["model", "task", "metric", "value", "low", "high", "p_value", "n"])


def test_summary_bars_one_panel_per_task_with_intervals():
    summary = _summary()
    fig = summary_bars(summary)
    data = _spec(fig)["data"]
    assert [a.text for a in fig.layout.annotations] == ["R (MRR)", "L (d)", "H (r)"]
    assert [(t["name"], t["xaxis"], t["y"][0]) for t in data] == [
        ("m1", "x", 0.6), ("m2", "x", 0.4), ("m1", "x2", 5.0), ("m2", "x2", -1.0), ("m2", "x3", 0.25)]
    assert [t["showlegend"] for t in data] == [True, True, False, False, False]
    assert [t["marker"]["color"] for t in data[:2]] == list(MODEL_COLORS[:2])
    assert np.allclose(data[2]["error_y"]["array"], [1.5]) and np.allclose(data[2]["error_y"]["arrayminus"], [1.0])
    assert data[3]["error_y"]["array"] == [0.0] and data[3]["customdata"][0][:2] == ["n/a", "0.3"]
    assert data[2]["customdata"][0] == ["[4.000, 6.500]", "1e-06", 30]


def test_summary_bars_take_the_chosen_metric_and_name_the_fix():
    data = _spec(summary_bars(_summary(), {"R": "NDCG"}))["data"]
    assert [t["y"][0] for t in data] == [0.8, 0.7]
    with pytest.raises(InputError, match="R: MRR"):
        summary_bars(_summary(), {"U": "r"})
    doubled = pd.concat([_summary(), _summary().iloc[:1]], ignore_index=True)
    with pytest.raises(InputError, match=r"2 rows for \(m1, R, MRR\)"):
        summary_bars(doubled)


@pytest.fixture
def ranking():
    q1 = _rows("m1", "R", [0.5, 0.2, 0.4, 0.2], [0, 0, 1, 0], ids=["q1"] * 4, rows=[0, 1, 2, 3])
    q2 = _rows("m1", "R", [0.1, 0.9], [1, 0], ids=["q2"] * 2, rows=[0, 1])
    other = _rows("m2", "R", [0.9, 0.1, 0.3, 0.3], [0, 0, 1, 0], ids=["q1"] * 4, rows=[0, 1, 2, 3])
    return pd.concat([q1, q2, other], ignore_index=True)


def test_ranked_answers_sorted_by_similarity_with_the_true_answer_highlighted(ranking):
    fig = ranked_answers_figure(ranking, "m1", "q1")
    bar = _spec(fig)["data"][0]
    assert bar["y"] == ["answer 1", "answer 3", "answer 2", "answer 0"]  # the tie keeps the answers' order
    assert np.allclose(bar["x"], [0.8, 0.8, 0.6, 0.5])
    colors = bar["marker"]["color"]
    assert colors[2] != colors[0] and len(set(colors[:2] + colors[3:])) == 1
    assert bar["text"][2] == "true answer" and bar["customdata"][2][1] == "b&lt;2&gt;"
    assert "ranked 3 of 4" in fig.layout.title.text
    other = _spec(ranked_answers_figure(ranking, "m2", "q1"))["data"][0]
    assert other["y"] == ["answer 1", "answer 2", "answer 3", "answer 0"]


def test_question_answers_are_the_figures_order_with_similarity_and_truth(ranking):
    table = question_answers(ranking, "m1", "q1")
    bar = _spec(ranked_answers_figure(ranking, "m1", "q1"))["data"][0]
    assert [f"answer {r}" for r in table["row"]] == bar["y"] == ["answer 1", "answer 3", "answer 2", "answer 0"]
    assert np.allclose(table["similarity"], bar["x"]) and list(table["true"]) == [False, False, True, False]
    assert list(table.index) == [0, 1, 2, 3]  # the rank, from 0
    shuffled = ranking.sample(frac=1, random_state=0)  # rows in any order: ties still keep the answers' order
    pd.testing.assert_frame_equal(question_answers(shuffled, "m1", "q1")[["row", "similarity", "true"]],
                                  table[["row", "similarity", "true"]])
    with pytest.raises(InputError, match=r"'q1', 'q2'"):
        question_answers(ranking, "m1", "q9")


def test_ranked_answers_name_the_fix(ranking):
    with pytest.raises(InputError, match=r"'q1', 'q2'"):
        ranked_answers_figure(ranking, "m1", "q9")
    with pytest.raises(InputError, match=r"models present: \['m1', 'm2'\]"):
        ranked_answers_figure(ranking, "m3", "q1")
    with pytest.raises(InputError, match="tasks present"):
        ranked_answers_figure(ranking[ranking["task"] != "R"], "m1", "q1")
