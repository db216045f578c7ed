"""asc.viz.branches: the branch tree figure and two trees side by side with their differences ringed, on
hand-made branches of known snippets (tests/asc/branching/test_tree.py); the sequence view's fork marks."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from asc.branching.forks import fork_points
from asc.branching.tree import BranchTree
from asc.branching.treediff import ast_diff
from asc.explain import explain
from asc.viz import DIFF_COLORS, branch_compare_figures, branch_tree_figure, sequence_html
from asc.viz.html import visible_whitespace
from asc.viz.layout import tree_layout
from tests.asc.branching.test_tree import BROKEN, PROMPT, A, B, branch_of, completion_of, first_difference


@pytest.fixture(scope="module")
def explained(tiny):
    return {name: explain(tiny, text) for name, text in (("a", A), ("b", B), ("broken", BROKEN))}


@pytest.fixture(scope="module")
def tree(explained):
    a, b, broken = explained["a"], explained["b"], explained["broken"]
    n_prompt = int(np.searchsorted(a.scores.start, len(PROMPT)))
    t = BranchTree.start(completion_of(a, n_prompt), a)
    t = t.add(0, branch_of(b, first_difference(a, b), a), b)
    t = t.add(1, branch_of(broken, first_difference(b, broken), b, rank=0), broken)
    return t.add(0, branch_of(b, first_difference(a, b), a, rank=3), b)  # a second child of the trunk


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_branch_tree_figure_one_point_per_branch(tree):
    fig = branch_tree_figure(tree, selected=2)
    points = _trace(fig, "branches")
    assert list(points.customdata) == [0, 1, 2, 3]
    assert list(points.x) == [n.fork_index for n in tree.nodes]
    # rows depth first: trunk, branch 1, its child 2, then the trunk's second child 3
    assert list(points.y) == [0, 1, 2, 3]
    assert list(points.marker.symbol) == ["circle", "circle", "x", "circle"]  # branch 2 does not parse
    colors = [v if v == v else 0.5 for v in (n.mean_value for n in tree.nodes)]
    np.testing.assert_allclose(points.marker.color, colors)
    assert points.marker.cmin == 0 and points.marker.cmax == 1
    b1 = tree.nodes[1].branch
    assert points.text[1].startswith(f"#1 '{visible_whitespace(b1.forced_text)}' p=0.25 (rank 2)")  # spaces drawn
    assert "typed, 1 tokens" in points.text[2] and "no parse" in points.text[2]
    assert "instead of" in points.hovertext[1] and "parses: no" in points.hovertext[2]
    sel = _trace(fig, "selected")
    assert (sel.x[0], sel.y[0]) == (tree.nodes[2].fork_index, 2)
    # each branch leaves its parent's row at its fork
    lines = _trace(fig, "lines")
    segs = list(zip(lines.x, lines.y))
    assert (tree.nodes[2].fork_index, 1) in segs and (tree.nodes[2].fork_index, 2) in segs


def test_branch_tree_figure_is_pure_and_escapes(tree):
    before = copy.deepcopy(tree.to_dict())
    assert branch_tree_figure(tree).to_json() == branch_tree_figure(tree).to_json()
    assert tree.to_dict() == before
    assert all(t.name != "selected" for t in branch_tree_figure(tree).data)
    assert not any("<script" in t for t in _trace(branch_tree_figure(tree), "branches").text)


def _ring_nodes(fig, ex, view, name):
    """Tree nodes of ``ex`` whose drawn box carries a ring trace ``name``."""
    if all(t.name != name for t in fig.data):
        return set()
    ring = _trace(fig, name)
    pos = {}
    for trace in fig.data:
        if trace.name in ("value", "no tokens"):
            pos.update({(x, y): int(n) for n, x, y in zip(trace.customdata, trace.x, trace.y)})
    return {pos[(x, y)] for x, y in zip(ring.x, ring.y)}


@pytest.mark.parametrize("view", ["partial", "complete"])
def test_compare_figures_ring_the_differences(explained, view):
    a, b = explained["a"], explained["b"]
    d = ast_diff(a.tree, b.tree)
    fa, fb = branch_compare_figures(a, b, d, view, ("trunk", "branch 1"), collapse_unary=False)
    # the trees are the value trees, unchanged underneath
    np.testing.assert_allclose(_trace(fa, "value").marker.color, a.values[np.array(_trace(fa, "value").customdata)])
    assert fa.layout.title.text.startswith("trunk: ") and fb.layout.title.text.startswith("branch 1: ")

    def shown(ex, nodes):  # a hidden node rings its nearest shown ancestor
        lay = tree_layout(ex.tree, view)
        boxes = set(lay.node.tolist())
        out = set()
        for n in nodes:
            while n not in boxes:
                n = int(ex.tree.parent[n])
            out.add(n)
        return out

    assert _ring_nodes(fa, a, view, "only here") == shown(a, d.removed.tolist())
    assert _ring_nodes(fb, b, view, "only here") == shown(b, d.added.tolist())
    assert _ring_nodes(fa, a, view, "changed") == shown(a, d.changed[:, 0].tolist())
    assert _ring_nodes(fb, b, view, "changed") == shown(b, d.changed[:, 1].tolist())
    first = d.first_divergence
    assert _ring_nodes(fa, a, view, "first divergence") == shown(a, [first[0]])
    assert _ring_nodes(fb, b, view, "first divergence") == shown(b, [first[1]])
    assert _trace(fa, "first divergence").marker.line.color == DIFF_COLORS["first"]
    if view == "complete":  # every node drawn: the rings sit on the very nodes
        assert _ring_nodes(fb, b, view, "first divergence") == {first[1]} and b.tree.type[first[1]] == "*"


@pytest.mark.parametrize("view", ["partial", "complete"])
def test_compare_rings_leave_the_labels_readable(explained, view):
    """A ring draws around a node's marker and its whole label, under them: nothing of it lies over the label's text
    (a ring marker of 20-28 px centred on the node covered its label's first letters and the rows above and below)."""
    import html

    from asc.viz.branches import TEXT_START_PX
    from asc.viz.treefit import text_px

    a, b = explained["a"], explained["b"]
    for fig in branch_compare_figures(a, b, ast_diff(a.tree, b.tree), view, collapse_unary=False):
        labels = {}
        for trace in fig.data:
            if trace.name in ("value", "no tokens"):
                size = trace.textfont.size
                labels.update({(x, y): text_px(html.unescape(t), size) for x, y, t in zip(trace.x, trace.y, trace.text)})
        for name in ("only here", "changed", "first divergence"):
            if all(t.name != name for t in fig.data):
                continue
            ring = _trace(fig, name)
            radius = ring.marker.size / 2 + (ring.marker.line.width or 0) / 2
            assert ring.marker.line.width == 0 or radius < TEXT_START_PX  # no visible mark over the label's text
            boxes = [s for s in fig.layout.shapes if s.name == name]
            assert len(boxes) == len(ring.x)
            for x, y in zip(ring.x, ring.y):
                box = next(s for s in boxes if s.x0 < x < s.x1 and s.y0 < y < s.y1)
                assert box.layer == "below"  # drawn under the label, which stays on top
                assert box.x0 <= x - 7 and box.x1 >= x + TEXT_START_PX + labels[(x, y)]  # around marker and label
                assert box.y1 - box.y0 < 1.2  # its own row, hardly into the next ones


def test_compare_figures_of_equal_trees_have_no_rings(explained):
    a = explained["a"]
    fa, fb = branch_compare_figures(a, a, ast_diff(a.tree, a.tree))
    names = {t.name for f in (fa, fb) for t in f.data}
    assert not names & {"only here", "changed", "first divergence"}


def test_compare_figures_with_collapsed_chains_ring_the_chain(explained):
    a, b = explained["a"], explained["b"]
    d = ast_diff(a.tree, b.tree)
    _, fb = branch_compare_figures(a, b, d, "partial", collapse_unary=True)
    lay = tree_layout(b.tree, "partial", collapse_unary=True)
    tops = {m: top for top, mem in zip(lay.node.tolist(), lay.members) for m in mem}
    ringed = _ring_nodes(fb, b, "partial", "only here")
    assert ringed and ringed <= set(lay.node.tolist())
    call = next(j for j in d.added if b.tree.type[j] == "call")
    assert tops[int(call)] in ringed


def test_sequence_view_marks_fork_points(explained):
    ex = explained["a"]
    forks = fork_points(ex.scores)
    out = sequence_html(ex, forks=forks.indices)
    marked = [int(i) for i in re.findall(r'data-token="(\d+)" data-fork="1"', out)]
    shown = {int(i) for i in re.findall(r'data-token="(\d+)"', out)}
    assert marked == [i for i in forks.indices.tolist() if i in shown]
    assert out.count("fork point: the model hesitated here") == len(marked)
    assert out.count("box-shadow:inset 0 3px 0 #8e24aa") == len(marked)
    assert sequence_html(ex) == sequence_html(ex, forks=None) == sequence_html(ex, forks=[])  # off by default
    assert 'data-fork' not in sequence_html(ex)
