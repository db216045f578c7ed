"""The figures of "Why this token?" (asc.viz.attribution) on real attributions of the tiny random model."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from asc.viz.attribution import (
    ATTRIBUTION_SCALE,
    attribution_color,
    attribution_sequence_html,
    attribution_tree,
    category_attribution_figure,
    scale_max,
    source_nodes_table,
    token_values,
)
from asc.why.attribute import attribute

CODE = "def add(a, b):\n    total = a + b\n    return total\n"


@pytest.fixture(scope="module")
def grad(tiny_bos):
    return attribute(tiny_bos, CODE, len(tiny_bos.tokenizer(CODE)["input_ids"]) - 3, "grad")


@pytest.fixture(scope="module")
def occlusion(tiny_bos):
    return attribute(tiny_bos, CODE, len(tiny_bos.tokenizer(CODE)["input_ids"]) - 3, "occlusion")


def test_the_scale_is_symmetric_and_centred_on_white():
    assert scale_max(np.array([0.2, -0.5, np.nan])) == 0.5 and scale_max(np.array([np.nan])) == 1.0
    assert attribution_color(0.0, 1.0) == "rgb(247, 247, 247)"  # PiYG's middle
    assert attribution_color(1.0, 1.0) != attribution_color(-1.0, 1.0)
    assert attribution_color(5.0, 1.0) == attribution_color(1.0, 1.0)  # clipped at the ends
    assert attribution_color(math.nan, 1.0) == "#eeeeee"


def test_sequence_view_colours_the_prompt_outlines_the_target_and_greys_the_rest(grad):
    page = attribution_sequence_html(grad)
    target = grad.target.index
    spans = re.findall(r'<span data-token="(\d+)"([^>]*)>', page)
    drawn = [int(i) for i, _ in spans]
    ex = grad.explanation
    assert drawn == [i for i in range(ex.scores.n_tokens) if ex.scores.end[i] > ex.scores.start[i]]  # BOS: no text
    marked = [int(i) for i, rest in spans if 'data-target="1"' in rest]
    assert marked == [target]
    values = {int(i): re.search(r'data-attribution="([^"]*)"', rest).group(1) for i, rest in spans}
    assert all(values[i] == "" for i in values if i >= target)  # from the target on: nothing attributed
    finite = [i for i in range(target) if not math.isnan(grad.token_attr[i])]
    assert finite and all(float(values[i]) == pytest.approx(grad.token_attr[i], rel=1e-5, abs=1e-12) for i in finite)
    assert "asc-legend" in page and "attribution (grad) to token" in page


def test_occlusion_colours_each_token_by_its_smallest_occluded_node(occlusion):
    values = token_values(occlusion)
    ex = occlusion.explanation
    assert np.isnan(occlusion.token_attr).all() and np.isfinite(values[: occlusion.target.index]).any()
    assert np.isnan(values[occlusion.target.index:]).all()
    i = int(np.flatnonzero(np.isfinite(values))[0])
    holders = [n for n in range(ex.tree.n_nodes) if not math.isnan(occlusion.node_attr[n])
               and i in set(ex.alignment.tokens_of(n).tolist())]
    smallest = min(holders, key=lambda n: int(ex.tree.end[n] - ex.tree.start[n]))
    assert values[i] == occlusion.node_attr[smallest]


def test_tree_uses_the_node_attributions_on_a_symmetric_diverging_scale(grad):
    fig = attribution_tree(grad, "complete")
    valued = [tr for tr in fig.data if getattr(tr.marker, "cmin", None) is not None]
    assert valued, "a trace with the colour scale"
    m = scale_max(grad.node_attr)
    assert valued[0].marker.cmin == -m and valued[0].marker.cmax == m
    assert fig.data and ATTRIBUTION_SCALE  # the figure draws


def test_source_nodes_table_lists_the_largest_absolute_attributions_with_text(grad):
    table = source_nodes_table(grad, 5)
    assert list(table.columns) == ["node", "type", "category", "attribution", "of |total|", "text"]  # no "share":
    # nested nodes overlap, so their sizes add up to more than 1
    assert 0 < len(table) <= 5
    got = [abs(float(v)) for v in table["attribution"]]
    assert got == sorted(got, reverse=True)
    top = int(table["node"].iloc[0])
    assert float(table["attribution"].iloc[0]) == pytest.approx(grad.node_attr[top], abs=1e-4)


def test_category_figure_has_one_bar_per_category_signed(grad):
    fig = category_attribution_figure(grad)
    bar = fig.data[0]
    cats = list(grad.category_attr)
    assert [str(y).split(" · ")[0] for y in bar.y] == cats
    for x, c in zip(bar.x, cats, strict=True):
        v = grad.category_attr[c]
        assert x == (v if math.isfinite(v) else 0.0)


def test_category_labels_and_title_stay_in_the_margins_a_panel_cannot_cut(grad):
    """Issue 44: the title ran past a half-width panel and the labels beside the bars were cut at its edge. Now the
    title is short, nothing is written beside a bar, and each category's part is in its axis label."""
    fig = category_attribution_figure(grad)
    bar = fig.data[0]
    assert bar.text is None and bar.textposition is None
    for label, c in zip(bar.y, grad.category_attr, strict=True):
        v, share = grad.category_attr[c], grad.category_share[c]
        assert label == f"{c} · {'absent' if not math.isfinite(v) else f'{share:.0%}'}"
    assert fig.layout.title.text == f"Attribution per category ({grad.method})"
    assert fig.layout.yaxis.automargin


def test_the_tree_legend_keeps_its_minus_sign_inside_the_figure(grad):
    """Issue 44: the IG tree's legend read "15.86" for -15.86: its left tick label, centred on the bar's left end,
    began left of the figure. The bar now starts half the widest label in."""
    from asc.viz.snippet import legend_tick
    from asc.viz.treefit import text_px

    assert legend_tick(-15.86) == "\u221215.86" and legend_tick(0.5) == "0.5"
    fig = attribution_tree(grad, "partial", max_width=940)
    bar = next(tr for tr in fig.data if getattr(tr.marker, "colorbar", None) is not None and tr.marker.showscale)
    cb = bar.marker.colorbar
    ticks = list(cb.ticktext)
    assert ticks[0].startswith("\u2212") and len(ticks) == len(cb.tickvals)
    left_px = cb.x * fig.layout.width  # the bar's left end, in px from the figure's left edge
    assert left_px - text_px(ticks[0], 10) / 2 >= 0
