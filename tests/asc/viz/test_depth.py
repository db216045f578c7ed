"""asc.viz.depth: the category x layer heatmap and one node's curve across layers, on the tiny model's per-layer
explanation with hand-set category values (so crossings are known), compared with the arrays they draw."""

from __future__ import annotations

import copy
import dataclasses
import math
import re

import numpy as np
import pytest

from asc.concepts import CONFIDENCE_LINE
from asc.depth import explain_layers
from asc.viz import COLORSCALE, category_layer_heatmap, figure_html, node_layer_curve, value_color

SRC = "def f(xs):\n    n = 0\n    for x in xs:\n        if x > 0:\n            n += 1\n    return n\n"


@pytest.fixture(scope="module")
def depth(tiny):
    return explain_layers(tiny, SRC)


def _with_curves(depth, curves: dict[str, list[float]]):
    """``depth`` with hand-set category values: ``curves`` gives some categories' values per layer, the rest
    absent (NaN)."""
    values = np.full(depth.category_values.shape, math.nan)
    for k, cat in enumerate(depth.categories):
        if cat in curves:
            values[:, k] = curves[cat]
    return dataclasses.replace(depth, category_values=values)


def _shapes(fig, name):
    return [s for s in fig.layout.shapes if s.name == name]


def test_heatmap_draws_every_present_category_and_boxes_its_crossing(depth):
    cats = depth.categories
    hand = _with_curves(depth, {cats[0]: [0.1, 0.7, 0.9], cats[1]: [0.6, 0.2, 0.3], cats[2]: [0.2, 0.3, 0.59]})
    fig = category_layer_heatmap(hand)
    (heat,) = fig.data
    assert list(heat.y) == list(cats[:3]) and list(heat.x) == [0, 1, 2]
    np.testing.assert_allclose(np.array(heat.z, dtype=float), hand.category_values[:, :3].T)
    assert heat.colorscale == _plotly_scale() and heat.zmin == 0 and heat.zmax == 1  # the app's red-to-blue scale
    # one box per category that reaches 0.6, on (its first layer, its row); none for the one that never does
    boxes = {(round(s.x0 + 0.5), round(s.y0 + 0.5)) for s in _shapes(fig, "crossing")}
    assert boxes == {(1, 0), (0, 1)}
    assert [hand.crossing()[c] for c in cats[:3]] == [1, 0, None]
    assert list(fig.layout.yaxis.ticktext) == [f"{cats[0]} (L1)", f"{cats[1]} (L0)", f"{cats[2]} (never)"]
    # hover: category, layer, value (text), and the crossing of the row
    assert "category %{y}" in heat.hovertemplate and "layer %{x}" in heat.hovertemplate and "%{text}" in heat.hovertemplate
    assert list(heat.text[0]) == ["0.100", "0.700", "0.900"] and heat.customdata[2][0] == "never reaches 0.6"
    assert heat.customdata[0][2] == "first ≥ 0.6 at layer 1"
    # absent categories are left out and named under the plot
    (note,) = fig.layout.annotations
    assert note.text.startswith("absent from this snippet: ") and cats[3] in note.text
    assert "0 = embeddings, 2 = output" in fig.layout.xaxis.title.text
    assert not _shapes(fig, "layer")


def _plotly_scale():
    import plotly.graph_objects as go

    return go.Heatmap(colorscale=COLORSCALE).colorscale


def test_heatmap_outlines_the_shown_layer_and_follows_the_threshold(depth):
    fig = category_layer_heatmap(depth, layer=1)
    (shown,) = _shapes(fig, "layer")
    assert (shown.x0, shown.x1) == (0.5, 1.5)
    assert (shown.y0, shown.y1) == (-0.5, len(fig.data[0].y) - 0.5)
    assert _shapes(category_layer_heatmap(depth, layer=-1), "layer")[0].x0 == 1.5  # negative: from the output
    low = category_layer_heatmap(depth, threshold=0.0)  # every present category reaches 0 at layer 0
    assert len(_shapes(low, "crossing")) == len(low.data[0].y)
    assert {s.x0 for s in _shapes(low, "crossing")} == {-0.5}
    assert "first layer ≥ 0" in low.layout.title.text


def test_heatmap_escapes_category_names(depth):
    cats = list(depth.categories)
    cats[0], cats[1] = "<a href='x'>A</a>", "<b>B</b>"  # one present, one absent (hand-set values below)
    evil = _with_curves(dataclasses.replace(depth, explanation=dataclasses.replace(
        depth.explanation, categories=tuple(cats))), {cats[0]: [0.1, 0.7, 0.9]})
    fig = category_layer_heatmap(evil)
    text = " ".join(map(str, [*fig.data[0].y, *fig.layout.yaxis.ticktext, fig.layout.annotations[0].text]))
    assert "<a" not in text and "<b>" not in text
    assert "&lt;a href='x'&gt;A&lt;/a&gt;" in text and "&lt;b&gt;B&lt;/b&gt;" in text


def test_node_curve_is_the_nodes_values_with_the_line(depth):
    node = int(np.flatnonzero(~np.isnan(depth.values[-1]))[2])
    fig = node_layer_curve(depth, node, layer=0)
    line = next(t for t in fig.data if t.name == "value")
    assert list(line.x) == [0, 1, 2]
    np.testing.assert_allclose(np.array(line.y, dtype=float), depth.values[:, node])
    assert list(line.marker.color) == [value_color(v) for v in depth.values[:, node]]
    (hline,) = [s for s in fig.layout.shapes if s.y0 == s.y1]
    assert hline.y0 == CONFIDENCE_LINE
    (vline,) = [s for s in fig.layout.shapes if s.x0 == s.x1]
    assert vline.x0 == 0
    assert f"Node {node} " in fig.layout.title.text
    hits = np.flatnonzero(np.nan_to_num(depth.values[:, node], nan=-1) >= CONFIDENCE_LINE)
    rings = [t for t in fig.data if t.name == "crossing"]
    if len(hits):
        assert list(rings[0].x) == [hits[0]] and f"first ≥ 0.6 at layer {hits[0]}" in fig.layout.title.text
    else:
        assert not rings and "never reaches 0.6" in fig.layout.title.text
    # a low threshold: crossed at layer 0, ringed there
    low = node_layer_curve(depth, node, threshold=0.0)
    assert list(next(t for t in low.data if t.name == "crossing").x) == [0]


def test_node_text_is_escaped_and_a_node_without_tokens_says_so(tiny):
    d = explain_layers(tiny, 'def f():\n    return "<b>bold</b>"\n')
    fig = node_layer_curve(d, 0)
    assert "<b>" not in fig.layout.title.text and "&lt;b&gt;" in fig.layout.title.text
    empty = dataclasses.replace(d, values=np.where(np.arange(d.values.shape[1]) == 1, math.nan, d.values))
    fig = node_layer_curve(empty, 1)
    assert "no tokens: no value at any layer" in fig.layout.title.text
    assert all(y is None for y in fig.data[0].y) and not [t for t in fig.data if t.name == "crossing"]


def test_builders_are_pure_and_export_offline(depth):
    before = copy.deepcopy((depth.values, depth.category_values))
    a = category_layer_heatmap(depth, layer=1)
    b = category_layer_heatmap(depth, layer=1)
    assert a.to_plotly_json() == b.to_plotly_json()
    c = node_layer_curve(depth, 1)
    assert c.to_plotly_json() == node_layer_curve(depth, 1).to_plotly_json()
    np.testing.assert_array_equal(depth.values, before[0])
    np.testing.assert_array_equal(depth.category_values, before[1])
    page = figure_html(a)
    assert "Plotly.newPlot" in page and set(re.findall(r"<script[^>]*>", page)) == {"<script>"}  # nothing loaded
