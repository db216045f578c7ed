"""asc.viz.compare with the tiny random model, with and without a BOS token (two models that score the same text
differently): the per-model summary table, the difference tree's scale, the node values export.

Expected values are read from each Explanation, never copied from the random model's output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asc.explain import compare_snippet, explain
from asc.viz.compare import LEAST_SPAN, difference_span, difference_tree, node_values, summary_table

SRC = "def f(x):\n    y = x + 1\n    if y:\n        return [y, 2]\n    return x\n"


@pytest.fixture(scope="module")
def comp(tiny, tiny_bos):
    return compare_snippet([explain(tiny, SRC), explain(tiny_bos, SRC)], ["plain", "bos"])


def test_summary_table_has_a_row_per_measure_and_a_column_per_model(comp):
    table = summary_table(comp)
    assert list(table.columns) == ["measure", "plain", "bos"]
    categories = list(comp.explanations[0].category_values)
    assert list(table["measure"]) == ["cross-entropy", "perplexity", "tokens", *categories]
    rows = table.set_index("measure")
    for model, ex in zip(comp.models, comp.explanations, strict=True):
        assert rows.loc["cross-entropy", model] == ex.loss and rows.loc["perplexity", model] == ex.perplexity
        assert rows.loc["tokens", model] == ex.scores.n_tokens and isinstance(rows.loc["tokens", model], int)
        for category, value in ex.category_values.items():
            assert rows.loc[category, model] == value or (math.isnan(value) and math.isnan(rows.loc[category, model]))
    assert rows.loc["tokens", "bos"] != rows.loc["tokens", "plain"]  # the BOS token counts: two different models


@pytest.mark.parametrize(("diff", "span"), [
    ([0.0, 0.05, -0.1], LEAST_SPAN),  # small differences: the narrowest scale
    ([0.1, -0.3], 0.3),  # exactly a tenth: not rounded up past it
    ([0.31, -0.02], 0.4),
    ([-0.86, 0.5, math.nan], 0.9),  # the largest absolute value, NaN left out
    ([math.nan, math.nan], LEAST_SPAN),  # no value at all
    ([], LEAST_SPAN),
])
def test_difference_span_is_the_largest_difference_rounded_up_to_a_tenth(diff, span):
    assert difference_span(np.array(diff, dtype=float)) == pytest.approx(span)


def test_difference_tree_colours_a_minus_b_on_its_symmetric_scale(comp):
    fig = difference_tree(comp, 0, 1)
    diff = comp.difference(0, 1)
    span = difference_span(diff)
    trace = next(t for t in fig.data if t.name == "value")
    np.testing.assert_allclose(trace.marker.color, diff[np.array(trace.customdata)])
    assert (trace.marker.cmin, trace.marker.cmax) == (-span, span)
    assert f"plain − bos (scale ±{span:g})" in fig.layout.title.text
    back = difference_tree(comp, 1, 0)
    np.testing.assert_allclose(next(t for t in back.data if t.name == "value").marker.color, -trace.marker.color)


def test_node_values_lists_every_node_under_each_model(comp):
    table = node_values(comp)
    tree = comp.explanations[0].tree
    assert list(table.columns) == ["id", "type", "plain", "bos"] and len(table) == tree.n_nodes
    assert list(table["type"]) == list(tree.type)
    for k, ex in enumerate(comp.explanations):
        np.testing.assert_array_equal(table[comp.models[k]].to_numpy(float), ex.values)


def test_difference_tree_uses_the_model_difference_scale_not_confidence(comp):
    import plotly.graph_objects as go

    from asc.viz.colors import CONFIDENCE_SCALE, DIFFERENCE_SCALE

    def resolved(scale):  # plotly stores a named scale as its list of stops
        return go.Scatter(marker={"colorscale": scale}).marker.colorscale

    trace = next(t for t in difference_tree(comp, 0, 1).data if t.name == "value")
    assert trace.marker.colorscale == resolved(DIFFERENCE_SCALE) != resolved(CONFIDENCE_SCALE)
    assert trace.marker.showscale and "plain − bos" in trace.marker.colorbar.title.text  # its legend


def test_disagreements_label_categories_and_show_no_none(comp):
    from asc.viz.tables import disagreement_table

    worst = comp.disagreements(0, 1, k=50)
    table = disagreement_table(worst, comp.models)
    assert None not in set(worst["category"]) and "uncategorized" in set(worst["category"])  # a label
    cells = [str(v) for v in table.to_numpy().ravel()]
    assert not {"None", "nan", "<NA>", "", "—"} & set(cells)
    assert all(v == f"{float(v):.3f}" for v in table["difference"])
