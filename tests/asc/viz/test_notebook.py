"""Results in notebooks (asc.viz.notebook through asc.display): every result's ``_repr_html_`` is static,
self-contained HTML holding its code's tokens escaped and its categories, and the figure methods return the app's
figures (the tiny model: values are random, the structure is what is checked)."""

from __future__ import annotations

import dataclasses
import html
import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from asc.branching.branches import Branch
from asc.branching.tree import BranchNode, BranchTree
from asc.concepts import CONFIDENCE_LINE
from asc.depth import LayerExplanation, explain_layers
from asc.display import show, views_of
from asc.errors import AscError
from asc.explain import Explanation, explain
from asc.generate import Completion, Decoding, complete
from asc.viz import category_strip, value_color
from asc.viz.snippet import sequence_html, tree_figure

# a string literal that is markup: it must come out as text, never as a live element
CODE = 'def f(x):\n    s = "<a href=\'j\'>&amp;</a> <script>1</script>"\n    return x + 1\n'
FETCHES = re.compile(r"<script|<link|<iframe|<img|\bsrc\s*=|\bhref\s*=|@import|url\(", re.IGNORECASE)


@pytest.fixture(scope="module")
def ex(tiny) -> Explanation:
    return explain(tiny, CODE)


def _token_pieces(ex: Explanation) -> list[str]:
    s = ex.scores
    return [ex.source[int(a):int(b)] for a, b in zip(s.start, s.end) if b > a]


def assert_self_contained(page: str) -> None:
    """No element that loads anything (script, stylesheet, image, link) and no address at all."""
    assert not FETCHES.search(page), FETCHES.search(page)
    assert "http" not in page


def test_explanation_repr_is_the_sequence_view_and_the_category_strip(ex):
    page = ex._repr_html_()
    assert_self_contained(page)
    assert sequence_html(ex) in page  # the inspector's own sequence view, unchanged
    assert category_strip(ex.category_values) in page
    for piece in _token_pieces(ex):
        assert f">{html.escape(piece)}</span>" in page  # every token's text, escaped, in its own span
    for name in ex.category_values:
        assert html.escape(name) in page
    assert str(ex.model["name"]) in page and f"{ex.loss:.3f}" in page


def test_category_strip_colors_every_category_on_the_scale():
    values = {"Scope": 0.9, "Data & <Types>": 0.2, "Exceptions": math.nan}
    strip = category_strip(values)
    cells = re.findall(r'<span title="[^"]*" style="[^"]*background:([^;"]+);[^"]*">([^<]*)</span>', strip)
    assert [label for _, label in cells] == ["Scope 0.90", "Data &amp; &lt;Types&gt; 0.20 ▼", "Exceptions absent"]
    assert [color for color, _ in cells] == [value_color(0.9), value_color(0.2), value_color(None)]
    assert category_strip({"Scope": CONFIDENCE_LINE}).count("▼") == 0  # at the line: not below it


def test_figure_methods_return_the_inspectors_trees_and_bars(ex):
    partial, complete_ = ex.partial_tree(), ex.complete_tree()
    for fig in (partial, complete_):
        assert isinstance(fig, go.Figure) and {type(t).__name__ for t in fig.data} == {"Scatter"}
    drawn = {int(n) for t in partial.data if t.customdata is not None for n in t.customdata}
    assert drawn and all(ex.tree.named[n] for n in drawn)  # partial: named nodes only
    every = {int(n) for t in complete_.data if t.customdata is not None for n in t.customdata}
    assert every == set(range(ex.tree.n_nodes))
    assert partial.to_json() == tree_figure(ex, "partial", collapse_unary=True).to_json()
    assert ex.partial_tree(collapse_unary=False).to_json() == tree_figure(ex, "partial").to_json()
    bars = ex.category_chart()
    assert [type(t).__name__ for t in bars.data] == ["Bar", "Scatter"] and list(bars.data[0].x) == list(ex.category_values)
    assert bars.data[1].name == "scale" and bars.data[1].marker.showscale  # the bars' colour bar (confidence)


def test_results_stay_frozen_dataclasses(ex):
    with pytest.raises(dataclasses.FrozenInstanceError):
        ex.aggregate = "mean"  # type: ignore[misc]
    for cls in (Explanation, Completion, Branch, BranchNode, BranchTree, LayerExplanation):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert "html" in views_of(cls)


def test_a_view_nobody_registered_is_refused(ex):
    with pytest.raises(AscError, match="no 'sunburst' view"):
        show(ex, "sunburst")


def test_completion_repr_underlines_the_generated_text(tiny):
    comp = complete(tiny, "def add(a, b):\n    s = '<b>'\n", max_new_tokens=6)
    page = comp._repr_html_()
    assert_self_contained(page)
    assert html.escape(comp.prompt) in page and "'<b>'" not in page
    assert re.search(r"text-decoration:underline[^>]*>" + re.escape(html.escape(comp.completion)) + "</span>", page)
    assert f"{comp.n_prompt} prompt + {len(comp.ids) - comp.n_prompt} generated tokens" in page


def _branch_tree(tiny) -> tuple[BranchTree, Branch]:
    """A trunk and one hand-made branch forking at its first generated token (as tests/asc/branching do)."""
    prompt, other = "def f(x):\n", "def f(x):\n    return x - 1\n"
    trunk_ex = explain(tiny, prompt + "    return x + 1\n")
    s = trunk_ex.scores
    n_prompt = int(np.searchsorted(s.start, len(prompt)))
    trunk = Completion(prompt=prompt, text=trunk_ex.source, ids=s.ids, start=s.start, end=s.end, special=s.special,
                       n_prompt=n_prompt, stop_reason="function_end")
    b_ex = explain(tiny, other)
    b = b_ex.scores
    at = int(np.flatnonzero(b.ids[:len(s.ids)] != s.ids[:len(b.ids)])[0])
    comp = Completion(prompt=other[:int(b.start[at])], text=other, ids=b.ids, start=b.start, end=b.end,
                      special=b.special, n_prompt=at, stop_reason="function_end")
    br = Branch(prompt=comp.prompt, fork_index=at, forced_ids=b.ids[at:at + 1], forced_text=b.text[at], forced_rank=2,
                forced_prob=0.25, replaced_id=int(s.ids[at]), completion=comp, settings=Decoding())
    return BranchTree.start(trunk, trunk_ex).add(0, br, b_ex), br


def test_branch_results_show_their_fork_and_sequence_view(tiny):
    tree, br = _branch_tree(tiny)
    branch_page, node_page, tree_page = br._repr_html_(), tree.nodes[1]._repr_html_(), tree._repr_html_()
    for page in (branch_page, node_page, tree_page):
        assert_self_contained(page)
    assert html.escape(repr(br.forced_text)) in branch_page and f"at token {br.fork_index}" in branch_page
    assert f'<span data-token="{br.fork_index}" data-fork="1"' in node_page  # the fork point marked
    assert sequence_html(tree.trunk.explanation, n_prompt=tree.trunk.completion.n_prompt) in tree_page
    assert tree_page.count("<tr>") == 1 + len(tree)  # header + a row per node
    fig = tree.tree(selected=1)
    assert isinstance(fig, go.Figure) and fig.data


def test_layers_repr_and_heatmap(tiny, ex):
    depth = explain_layers(tiny, CODE)
    heat = depth.layers_heatmap()
    assert [type(t).__name__ for t in heat.data] == ["Heatmap"]
    present = [k for k in range(len(depth.categories)) if not np.isnan(depth.category_values[:, k]).all()]
    assert np.asarray(heat.data[0].z, dtype=float).shape == (len(present), depth.n_layers)
    page = depth._repr_html_()
    assert_self_contained(page)
    table = page.split('<table class="asc-layers"', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 1 + len(present)  # header + a row per category present
    assert table.count('<td title="') == len(present) * depth.n_layers
    assert explain(tiny, CODE)._repr_html_() in page  # then the output layer's explanation
