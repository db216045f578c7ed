"""Pure figures of the inspector's branches: the branch tree and two branches' ASTs side by side.

:func:`branch_tree_figure` draws a :class:`~asc.branching.tree.BranchTree` like a version graph: the x axis is the
token index, one row per completion (the trunk first, then its branches depth first); each branch leaves its
parent's row at its fork token. The marker at a branch point is colored by the branch's mean AsC-Eval from the
fork on (the value scale, red 0 to blue 1), drawn as an X when the branch no longer parses, and labelled with the
forced token, its probability and rank; ``customdata`` is the branch id (a click opens it).

:func:`branch_compare_figures` draws two explanations' trees (:func:`asc.viz.snippet.tree_figure`, colored by
value) with the nodes that :func:`asc.branching.treediff.ast_diff` found different ringed: orange where a node exists on
one side only (removed from A, added in B), green where a matched leaf's text changed, and a thick magenta ring
on the first node where they part. A ring is a box drawn under the node and its whole label, outside both (a tint
and an outline in the ring's color), so the label stays readable; an invisible marker on the node carries the ring's
hover text. A node the view hides (punctuation in the partial AST, a folded chain) rings its nearest shown ancestor.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Literal

import numpy as np

from asc.branching.tree import BranchTree
from asc.branching.treediff import TreeDiff
from asc.explain import Explanation
from asc.missing import ABSENT
from asc.viz.colors import COLORSCALE, blend
from asc.viz.html import escape_text, visible_whitespace
from asc.viz.layout import tree_layout
from asc.viz.snippet import tree_figure
from asc.viz.treefit import text_px

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["DIFF_COLORS", "branch_compare_figures", "branch_tree_figure"]

DIFF_COLORS = {"only": "#ff7f0e", "changed": "#2ca02c", "first": "#d000d0"}
TEXT_START_PX = 8.5  # plotly starts a node's label this far right of its center (asc.viz.treefit.MARKER_PX)


def _rows(tree: BranchTree) -> list[int]:
    """Node ids in display order: depth first from the trunk, children in creation order."""
    order: list[int] = []
    stack = [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack += [c.id for c in reversed(tree.children(i))]
    return order


def _quoted(text: str) -> str:
    """A token quoted for a hover text: whitespace visible, HTML-escaped."""
    return f"'{html.escape(visible_whitespace(text))}'"


def _fmt(x: float, digits: int = 3) -> str:
    return ABSENT if x is None or math.isnan(x) else f"{x:.{digits}f}"


def branch_tree_figure(tree: BranchTree, selected: int | None = None) -> go.Figure:
    """The branch tree (module doc); ``selected`` (a node id) is ringed."""
    import plotly.graph_objects as go

    order = _rows(tree)
    row = {i: r for r, i in enumerate(order)}
    fig = go.Figure()
    lx: list[float | None] = []
    ly: list[float | None] = []
    for node in tree.nodes:
        r, start, end = row[node.id], node.fork_index, len(node.completion.ids)
        if node.parent is not None:  # down from the parent's row at the fork
            lx += [start, start, None]
            ly += [row[node.parent], r, None]
        lx += [start, max(end, start), None]
        ly += [r, r, None]
    fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line={"color": "#9a9a9a", "width": 2}, hoverinfo="skip",
                             showlegend=False, name="lines"))
    labels, hovers, symbols = [], [], []
    for node in tree.nodes:
        parses = "yes" if node.parses else "no"
        if node.branch is None:
            labels.append(f"trunk · mean {_fmt(node.mean_value, 2)}")
            head = f"<b>trunk</b> (generated from token {node.fork_index})"
        else:
            br = node.branch
            how = f"rank {br.forced_rank}" if br.forced_rank else f"typed, {len(br.forced_ids)} tokens"
            labels.append(f"#{node.id} '{visible_whitespace(br.forced_text)}' p={_fmt(br.forced_prob, 2)} ({how}) · mean "
                          f"{_fmt(node.mean_value, 2)}" + ("" if node.parses else " · no parse"))
            replaced = tree.replaced_text(node.id)
            head = (f"<b>branch {node.id}</b> from {'trunk' if node.parent == 0 else f'branch {node.parent}'}<br>"
                    f"at token {br.fork_index}: {_quoted(br.forced_text)} instead of "
                    f"{'(end)' if replaced is None else _quoted(replaced)}<br>"
                    f"p={_fmt(br.forced_prob, 4)}, {how}")
        hovers.append(f"{head}<br>mean AsC-Eval from the fork on: {_fmt(node.mean_value)}<br>parses: {parses}<br>"
                      f"{len(node.completion.ids) - node.fork_index} tokens after the fork, stopped: "
                      f"{html.escape(node.completion.stop_reason)}")
        symbols.append("circle" if node.parses else "x")
    values = np.array([n.mean_value for n in tree.nodes], dtype=np.float64)
    fig.add_trace(go.Scatter(
        x=[n.fork_index for n in tree.nodes], y=[row[n.id] for n in tree.nodes], mode="markers+text", name="branches",
        customdata=[n.id for n in tree.nodes], text=[escape_text(t) for t in labels], textposition="top right",
        textfont={"size": 11}, hovertext=hovers, hoverinfo="text", showlegend=False,
        marker={"size": 16, "symbol": symbols, "color": np.where(np.isnan(values), 0.5, values).tolist(),
                "colorscale": COLORSCALE, "cmin": 0.0, "cmax": 1.0, "line": {"color": "#222", "width": 1},
                "showscale": True, "colorbar": {"title": {"text": "mean value"}, "thickness": 12, "len": 0.8}},
        selected={"marker": {"opacity": 1}}, unselected={"marker": {"opacity": 1}}))
    if selected is not None and 0 <= selected < len(tree):
        node = tree.nodes[selected]
        fig.add_trace(go.Scatter(x=[node.fork_index], y=[row[selected]], mode="markers", hoverinfo="skip",
                                 showlegend=False, name="selected",
                                 marker={"size": 26, "color": "rgba(0,0,0,0)", "line": {"color": "#000", "width": 3}}))
    longest = max(len(n.completion.ids) for n in tree.nodes)
    fig.update_layout(
        height=max(200, 44 * len(tree) + 90), margin={"l": 10, "r": 10, "t": 40, "b": 40},
        xaxis={"title": "token index", "range": [-1, longest * 1.35 + 8], "zeroline": False},
        yaxis={"visible": False, "range": [len(tree) - 0.5, -0.9]},  # reversed: the trunk on top, room for labels
        plot_bgcolor="white", clickmode="event+select", dragmode="pan",
        title={"text": f"Branch tree: the trunk and {len(tree) - 1} branch(es); color = mean AsC-Eval from the fork "
                       "on, X = does not parse", "font": {"size": 13}})
    return fig


Point = tuple[float, float]


def _positions(fig: go.Figure, ex: Explanation, view: Literal["partial", "complete"],
               collapse_unary: bool) -> tuple[dict[int, Point], dict[Point, float]]:
    """Drawn position of every node of ``ex``'s tree (its box's, else its nearest shown ancestor's), and the width in
    pixels of the label drawn at each position."""
    drawn: dict[int, Point] = {}
    label: dict[Point, float] = {}
    for trace in fig.data:
        if trace.name in ("value", "no tokens") and trace.customdata is not None:
            size = float(trace.textfont.size or 11)
            for node, x, y, text in zip(trace.customdata, trace.x, trace.y, trace.text, strict=True):
                drawn[int(node)] = (float(x), float(y))
                label[(float(x), float(y))] = text_px(html.unescape(str(text)), size)
    lay = tree_layout(ex.tree, view, None, collapse_unary)
    pos: dict[int, Point] = {}
    for top, members in zip(lay.node.tolist(), lay.members, strict=True):
        for m in members:
            if top in drawn:
                pos[m] = drawn[top]
    parent = ex.tree.parent
    for i in range(ex.tree.n_nodes):  # pre-order: a parent is placed before its children
        if i not in pos and parent[i] >= 0 and int(parent[i]) in pos:
            pos[i] = pos[int(parent[i])]
    return pos, label


def _rings(fig: go.Figure, pos: dict[int, Point], label: dict[Point, float], nodes: list[int], color: str, pad: float,
           width: float, name: str, hover: str) -> None:
    """A box around each node's marker and label (``pad`` px further out, a ``width`` px outline), drawn below the
    tree so that the label stays on top, and an invisible marker per node for the hover text."""
    import plotly.graph_objects as go

    pts = sorted({pos[n] for n in nodes if n in pos})
    if not pts:
        return
    for x, y in pts:
        right = x + TEXT_START_PX + label.get((x, y), 0.0) + 3 + pad  # past the label's end
        fig.add_shape(type="rect", layer="below", x0=x - 9 - pad, x1=right,
                      y0=y - 0.42 - pad / 18, y1=y + 0.42 + pad / 18, line={"color": color, "width": width},
                      fillcolor=blend(color, 0.14) if pad == 0 else "rgba(0,0,0,0)", name=name)
    fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="markers", name=name,
                             hovertext=[hover] * len(pts), hoverinfo="text", showlegend=False,
                             marker={"size": 12, "color": "rgba(0,0,0,0)", "line": {"color": color, "width": 0}}))


def branch_compare_figures(a: Explanation, b: Explanation, diff: TreeDiff, view: Literal["partial", "complete"] = "partial",
                           names: tuple[str, str] = ("A", "B"), collapse_unary: bool = True,
                           max_width: int | None = None) -> tuple[go.Figure, go.Figure]:
    """The two trees with their differences ringed (module doc); ``diff = ast_diff(a.tree, b.tree)``; ``max_width``:
    the panel each is drawn to fit (:func:`asc.viz.snippet.tree_figure`)."""
    first = diff.first_divergence
    figs = []
    for side, (ex, name) in enumerate(zip((a, b), names, strict=True)):
        only = diff.removed if side == 0 else diff.added
        changed = diff.changed[:, side].tolist()
        title = (f"{name}: {len(only)} node(s) {'removed' if side == 0 else 'added'} (orange), {len(changed)} changed "
                 "(green), first divergence (magenta)")
        fig = tree_figure(ex, view, collapse_unary=collapse_unary, title=title, max_width=max_width)
        pos, label = _positions(fig, ex, view, collapse_unary)
        _rings(fig, pos, label, only.tolist(), DIFF_COLORS["only"], 0, 1.5, "only here",
               "only in this branch" if side else "not in the other branch")
        _rings(fig, pos, label, changed, DIFF_COLORS["changed"], 0, 1.5, "changed", "text changed")
        if first is not None and first[side] >= 0:
            _rings(fig, pos, label, [first[side]], DIFF_COLORS["first"], 3, 3, "first divergence",
                   "the first node where the trees part")
        figs.append(fig)
    return figs[0], figs[1]
