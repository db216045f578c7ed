"""Left-to-right tree layout for AsC-Viz: which nodes are shown and where.

Depth runs across (x = column), source order runs down (y = row): each visible leaf gets its own
row in source order and a parent sits at the middle of its children's rows, so labels stay
readable at hundreds of nodes (a top-down drawing overlaps them).

Views (the paper's user study, section VI-D):

* ``"complete"``: every node, terminals (keywords, punctuation) included;
* ``"partial"``: named nodes only (tree-sitter's abstract syntax: no anonymous keyword or
  punctuation leaves), which participants found easiest to read.

Options: ``max_depth`` folds everything deeper than that depth (a folded node is flagged so the
figure can mark it); ``collapse_unary`` merges a chain of nodes that cover exactly the same span
(``expression_statement > assignment``) into one box labelled with the whole chain. Nodes in such a
chain are bound to the same tokens and so have the same value: nothing is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from asc.errors import InputError
from asc.syntax import SyntaxTree

__all__ = ["TreeLayout", "TreeView", "tree_layout", "tree_view", "TREE_VIEWS"]

TreeView = Literal["partial", "complete"]
TREE_VIEWS: tuple[TreeView, ...] = ("partial", "complete")


def tree_view(name: str) -> TreeView:
    """``name`` as one of :data:`TREE_VIEWS` (a view picked by name, e.g. a study group's), or an
    :class:`InputError` naming them."""
    for view in TREE_VIEWS:
        if name == view:
            return view
    raise InputError(f"view={name!r}; choose one of {TREE_VIEWS}")


@dataclass(frozen=True)
class TreeLayout:
    """Visible boxes. Arrays have shape ``(V,)``; ``node`` holds the tree node each box stands for
    (the top of a collapsed chain), ``members`` every node merged into it (top first)."""

    node: np.ndarray  # int64 node ids, pre-order
    x: np.ndarray  # float column (0 = root)
    y: np.ndarray  # float row (0 = first leaf in source order)
    parent_box: np.ndarray  # int64 index into the boxes, -1 for the root
    members: tuple[tuple[int, ...], ...]
    folded: np.ndarray  # bool: has descendants hidden by max_depth
    n_rows: int

    @property
    def n_boxes(self) -> int:
        return len(self.node)

    def edges(self) -> np.ndarray:
        """(E, 2) box index pairs (parent, child)."""
        child = np.flatnonzero(self.parent_box >= 0)
        return np.stack([self.parent_box[child], child], axis=1) if len(child) else np.zeros((0, 2), np.int64)


def tree_layout(tree: SyntaxTree, view: TreeView = "partial", max_depth: int | None = None,
                collapse_unary: bool = False) -> TreeLayout:
    """Lay out ``tree`` for the given view (see module doc)."""
    view = tree_view(view)
    n = tree.n_nodes
    if n == 0:
        return TreeLayout(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64), (), np.zeros(0, bool), 0)
    # partial view: named nodes, plus MISSING nodes (errors are shown on purpose, as in the paper)
    show = np.ones(n, dtype=bool) if view == "complete" else (tree.named | tree.is_missing)
    show[0] = True
    in_view = show.copy()
    if max_depth is not None:
        show &= tree.depth <= max(0, max_depth)  # the root always stays
    # nearest visible ancestor of every node (pre-order: parents come first)
    vis_parent = np.full(n, -1, dtype=np.int64)
    for i in range(1, n):
        p = tree.parent[i]
        vis_parent[i] = p if show[p] else vis_parent[p]
    hidden_below = np.zeros(n, dtype=bool)  # visible nodes with descendants cut by max_depth
    hidden_below[vis_parent[np.flatnonzero(in_view & ~show)]] = True

    children: dict[int, list[int]] = {}
    for i in np.flatnonzero(show)[1:]:
        children.setdefault(int(vis_parent[i]), []).append(int(i))

    # collapse chains whose single visible child covers the same span
    top_of = np.arange(n)
    if collapse_unary:
        for j in np.flatnonzero(show):
            kids = children.get(int(j), [])
            if len(kids) == 1:
                c = kids[0]
                if tree.start[c] == tree.start[j] and tree.end[c] == tree.end[j] and not tree.is_error[c]:
                    top_of[c] = top_of[j]
    boxes = [int(i) for i in np.flatnonzero(show) if top_of[i] == i]
    box_index = {node: k for k, node in enumerate(boxes)}
    members: dict[int, list[int]] = {b: [] for b in boxes}
    for j in np.flatnonzero(show):
        members[int(top_of[j])].append(int(j))

    def box_children(b: int) -> list[int]:
        last = members[b][-1]  # the chain's bottom node owns the children
        return children.get(last, [])

    x = np.zeros(len(boxes))
    y = np.zeros(len(boxes))
    parent_box = np.full(len(boxes), -1, dtype=np.int64)
    row = 0
    # iterative post-order: leaves take the next row, parents the middle of their children
    stack: list[tuple[int, int, bool]] = [(boxes[0], 0, False)]
    while stack:
        b, col, expanded = stack.pop()
        k = box_index[b]
        kids = box_children(b)
        if not kids:
            x[k], y[k] = col, row
            row += 1
            continue
        if expanded:
            ys = [y[box_index[c]] for c in kids]
            x[k], y[k] = col, (min(ys) + max(ys)) / 2
            continue
        stack.append((b, col, True))
        for c in reversed(kids):
            parent_box[box_index[c]] = k
            stack.append((c, col + 1, False))
    folded = np.array([bool(hidden_below[members[b]].any()) for b in boxes])
    return TreeLayout(node=np.array(boxes, dtype=np.int64), x=x, y=y, parent_box=parent_box,
                      members=tuple(tuple(members[b]) for b in boxes), folded=folded, n_rows=row)
