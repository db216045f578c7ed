"""asc.viz.causal: the backdoor graph (Z -> T, Z -> Y, T -> Y) and the treatment scatter, on hand-made data."""

import math

import numpy as np
import pandas as pd

from asc.causal import CONFOUNDERS
from asc.viz import causal_graph_figure, treatment_scatter


def _arrows(fig):
    """(tail, head) positions of every arrow annotation."""
    return [((a.ax, a.ay), (a.x, a.y)) for a in fig.layout.annotations]


def test_graph_has_the_backdoor_edges_and_nothing_else():
    fig = causal_graph_figure()
    (nodes,) = fig.data
    names = list(nodes.text)
    assert names == ["seq_size", "ast_levels", "n_nodes", "complexity", "T: concept value", "Y: loss"]
    assert tuple(names[:4]) == CONFOUNDERS  # the figure's default confounders are the estimator's
    pos = dict(zip(names, zip(nodes.x, nodes.y)))
    t, y = pos["T: concept value"], pos["Y: loss"]
    expected = {(pos[z], t) for z in names[:4]} | {(pos[z], y) for z in names[:4]} | {(t, y)}
    assert len(_arrows(fig)) == 9 and set(_arrows(fig)) == expected
    # confounders in a column on the left, evenly spaced from top to bottom; T between them and Y
    np.testing.assert_allclose([pos[z] for z in names[:4]], [(0.0, 1.0), (0.0, 2 / 3), (0.0, 1 / 3), (0.0, 0.0)])
    assert t[0] == 1.0 and y[0] == 2.0
    # the causal effect of interest, T -> Y, is the one red, thicker arrow
    red = [a for a in fig.layout.annotations if a.arrowcolor == "#c0392b"]
    assert len(red) == 1 and ((red[0].ax, red[0].ay), (red[0].x, red[0].y)) == (t, y) and red[0].arrowwidth == 1.4
    assert all(a.arrowcolor == "#999" and a.arrowwidth == 1 for a in fig.layout.annotations if a is not red[0])
    assert "backdoor" in fig.layout.title.text


def test_graph_with_other_names_and_one_confounder():
    fig = causal_graph_figure("T: Iteration", "Y: cross-entropy", ("seq_size",))
    (nodes,) = fig.data
    assert list(nodes.text) == ["seq_size", "T: Iteration", "Y: cross-entropy"]
    assert (nodes.x[0], nodes.y[0]) == (0.0, 1.0)  # a single confounder does not divide by zero
    assert len(fig.layout.annotations) == 3
    assert list(nodes.marker.color) == ["#bbb", "#4c78a8", "#c0392b"]


def test_scatter_shows_only_the_snippets_where_the_treatment_is_present():
    table = pd.DataFrame({"category: Iteration": [0.2, math.nan, 0.9, 0.5],
                          "loss": [1.5, 2.0, 0.4, math.nan],
                          "seq_size": [10, 20, 30, 40]}, index=["a", "b", "c", "d"])
    before = table.copy()
    fig = treatment_scatter(table, "category: Iteration")
    pd.testing.assert_frame_equal(table, before)  # the input is not changed
    (points,) = fig.data
    assert list(points.text) == ["a", "c"]  # b has no value, d has no loss
    np.testing.assert_array_equal(points.x, [0.2, 0.9])
    np.testing.assert_array_equal(points.y, [1.5, 0.4])
    np.testing.assert_array_equal(points.marker.color, [10, 30])
    assert fig.layout.title.text == "category: Iteration vs loss (2 snippets where it is present)"
    assert fig.layout.xaxis.title.text == "category: Iteration (snippet AsC-Eval)"
    assert tuple(fig.layout.xaxis.range) == (0, 1.02)


def test_scatter_colors_by_another_column():
    table = pd.DataFrame({"Global": [0.3, 0.6], "loss": [1.0, 0.5], "seq_size": [5, 6], "complexity": [1, 4]})
    fig = treatment_scatter(table, "Global", color="complexity")
    np.testing.assert_array_equal(fig.data[0].marker.color, [1, 4])
    assert fig.data[0].marker.colorbar.title.text == "complexity"
