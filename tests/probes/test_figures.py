"""Probe figures are pure: the plotted numbers are the results' numbers and inputs are not mutated."""

import json

import numpy as np
import pandas as pd
import pytest

from probes.figures import best_layer_heatmap, confusion_figure, layer_curves, layer_heatmap, normalized_heatmap
from probes.inspect.linear import ProbeResult
from probes.inspect.runs import best_layer_table, normalized_table, results_table


def _result(model, task, acc, labels=("a", "b")):
    acc = np.asarray(acc, dtype=float)
    y = np.array([0, 1, 1, 0])
    preds = np.array([[0, 1, 0, 0]] * len(acc))
    return ProbeResult(model=model, task=task, task_digest="d", pooling="last", seed=0, labels=labels, accuracy=acc,
                       dev_accuracy=acc, control_accuracy=acc * 0 + 0.5, l2=acc * 0 + 0.01, majority=0.5, y_test=y,
                       predictions=preds)


@pytest.fixture
def results():
    return [_result("m1", "KTX", [0.2, 0.9, 0.7]), _result("m1", "LEN", [0.6, 0.5, 0.4]),
            _result("base", "KTX", [0.3, 0.4]), _result("base", "LEN", [0.5, 0.45])]


def _spec(fig):
    return json.loads(fig.to_json())


def test_layer_heatmap_plots_the_table(results):
    table = results_table(results)
    before = table.copy()
    fig = layer_heatmap(table, "m1", "accuracy", ["KTX", "LEN"])
    pd.testing.assert_frame_equal(table, before)
    heat = _spec(fig)["data"][0]
    assert heat["y"] == ["KTX", "LEN"] and heat["zmin"] == 0 and heat["zmax"] == 1
    assert np.allclose(heat["z"], [[0.2, 0.9, 0.7], [0.6, 0.5, 0.4]])
    boxes = _spec(fig)["layout"]["shapes"]
    assert sorted(round(b["x0"] + 0.5) for b in boxes) == [0, 1]  # best layers: KTX 1, LEN 0
    sel = _spec(layer_heatmap(table, "m1", "selectivity"))["data"][0]
    assert sel["zmin"] == -1 and np.isclose(sel["z"][0][1], 0.4)


def test_best_and_normalized_heatmaps(results):
    best = best_layer_table(results)
    spec = _spec(best_layer_heatmap(best, ["KTX", "LEN"]))["data"][0]
    row = spec["y"].index("m1")
    assert np.allclose(spec["z"][row], [0.9, 0.6]) and spec["text"][row][0] == "0.90<br>L1"
    norm = normalized_table(best, "base")
    spec = _spec(normalized_heatmap(norm, "base"))["data"][0]
    assert np.allclose(np.asarray(spec["z"], dtype=float)[spec["y"].index("m1")], [100, 100])


def test_layer_curves_and_confusion(results):
    table = results_table(results)
    spec = _spec(layer_curves(table, "KTX"))
    lines = {t["name"]: t for t in spec["data"]}
    assert np.allclose(lines["m1"]["y"], [0.2, 0.9, 0.7]) and "m1 control" in lines
    depth = _spec(layer_curves(table, "KTX", "depth"))
    assert depth["data"][0]["x"] == [0.0, 0.5, 1.0]
    cm = _spec(confusion_figure(results[0], 1))["data"][0]
    assert cm["z"] == [[2, 0], [1, 1]]


def test_attention_figures_mark_gold_edges_and_the_best_head():
    from probes.codesyntax.relations import extract
    from probes.figures import attention_map, edge_example_html, head_heatmap

    scores = np.array([[0.1, 0.9], [0.3, 0.2]])
    spec = _spec(head_heatmap(scores, "If:if->test", (0, 1)))
    assert np.allclose(spec["data"][0]["z"], scores) and spec["layout"]["shapes"][0]["x0"] == 0.5
    sample = extract("def f(x):\n    if x:\n        return 1\n")
    edges = list(sample.relns["If:if->test"])
    (h, s, e), = edges
    m = np.zeros((len(sample.tokens),) * 2)
    before = m.copy()
    for causal, row, col in ((False, h, s), (True, s, h)):
        spec = _spec(attention_map(m, sample.tokens, edges, causal))
        gold = next(t for t in spec["data"] if t.get("name") == "gold edge")
        assert gold["y"][0].startswith(f"{row}:") and gold["x"][0].startswith(f"{col}:")
    assert np.array_equal(m, before)
    html = edge_example_html(sample.code, sample.spans, (h, s, e), s, causal=False)
    assert html.startswith("<div style='font-weight:600;color:#2b8a3e'>correct")
    assert "<span style='background:#ffbf69'>if</span>" in html
    wrong = edge_example_html(sample.code, sample.spans, (h, s, e), 0, causal=True)
    assert ">incorrect" in wrong


def test_attention_map_labels_stay_short_for_docstrings():
    from probes.figures import attention_map

    tokens = ("def", "f", "(", ")", ":", "\n", "    ", '"""A very long docstring\nwith two lines"""', "\n", "")
    spec = _spec(attention_map(np.zeros((len(tokens), len(tokens))), tokens, [], causal=True))
    labels = spec["data"][0]["x"]
    assert labels[5] == "5:⏎" and labels[6] == "6:⇥" and labels[9] == "9:⇤"
    assert labels[7] == '7:"""A very lon…' and all(len(label) <= 17 and "\n" not in label for label in labels)
    assert len(set(labels)) == len(labels)


def test_layer_heatmap_shows_the_majority_class_and_the_control_task_beside_it(results):
    """Issue 44: an accuracy near chance (MiniLM's KTX on a small demo) must read as chance, not as a broken heatmap:
    on the same scale beside the heatmap, each task's majority class and its control task (mean over layers)."""
    from probes.figures import LAYER_REFERENCES

    table = results_table(results)
    spec = _spec(layer_heatmap(table, "m1", "accuracy", ["KTX", "LEN"]))
    heat, refs = spec["data"]
    assert np.allclose(heat["z"], [[0.2, 0.9, 0.7], [0.6, 0.5, 0.4]])  # the heatmap itself is unchanged
    assert refs["x"] == list(LAYER_REFERENCES) == ["majority", "control"] and refs["y"] == ["KTX", "LEN"]
    assert np.allclose(refs["z"], [[0.5, 0.5], [0.5, 0.5]])  # majority, mean control accuracy over layers
    assert (refs["zmin"], refs["zmax"], refs["colorscale"]) == (heat["zmin"], heat["zmax"], heat["colorscale"])
    assert refs["xaxis"] == "x2" and "4 test samples" in refs["customdata"][0][0]
    main, side = spec["layout"]["xaxis"]["domain"], spec["layout"]["xaxis2"]["domain"]
    assert main[1] < side[0]  # beside it, never over it
    control = _spec(layer_heatmap(table, "m1", "control_accuracy"))
    assert [t["x"] for t in control["data"][1:]] == [["majority", "control"]]
    assert len(_spec(layer_heatmap(table, "m1", "selectivity"))["data"]) == 1  # measured against the control already


def _overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.parametrize("n", [20, 62, 150, 400])
def test_attention_map_labels_are_readable_and_the_legend_is_off_the_matrix(n):
    """Issue 48: labels of at least 10 px, never closer than a label's height (every word while they fit, else the gold
    edges' words and evenly spaced others, said in the axis title; hover names every cell's words), and the gold-edge
    legend outside the matrix."""
    from probes.figures import ATTENTION_FONT_PX, attention_map

    tokens = [f"w{i}" for i in range(n)]
    edges = [(n // 3, n // 3 + 1, n // 3 + 2), (n - 1, n - 2, n - 2)]
    fig = attention_map(np.zeros((n, n)), tokens, edges, causal=True, title="t", max_width=940)
    spec = _spec(fig)
    layout = spec["layout"]
    assert layout["width"] <= 940
    legend = layout["legend"]
    assert legend["x"] >= 1 and legend["xanchor"] == "left"  # right of the plot area, beside the color bar
    bar = spec["data"][0]["colorbar"]
    assert _overlaps((legend["y"], legend["y"] + 0.1), (bar["y"] - bar["len"], bar["y"])) is False
    side = layout["width"] - layout["margin"]["l"] - layout["margin"]["r"]
    assert side == layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]  # square cells
    for axis, words in (("xaxis", [n // 3, n - 1]), ("yaxis", [n // 3 + 1, n - 2])):
        ax = layout[axis]
        assert ax["tickfont"]["size"] >= ATTENTION_FONT_PX >= 10
        shown = [int(v.split(":")[0]) for v in ax["tickvals"]]
        assert ax["ticktext"] == ax["tickvals"]
        gaps = np.diff(shown) * side / n  # px between two labels
        assert len(shown) == n or gaps.min() >= ATTENTION_FONT_PX, (axis, shown)
        assert set(words) <= set(shown)  # the gold edges' words are always labelled
        if len(shown) < n:
            assert len(shown) >= side / (3 * ATTENTION_FONT_PX)  # a subset, not a handful
            assert "hover" in layout["xaxis"]["title"]["text"]
    assert spec["layout"]["xaxis"]["tickangle"] == -90
    if n <= 40:
        assert len(layout["xaxis"]["tickvals"]) == n  # short snippets: every word
    assert spec["data"][0]["hovertemplate"].startswith("from %{y}<br>to %{x}")  # hover names both words
