"""asc.viz.layout.tree_layout: which nodes are shown, the left-to-right geometry, folding, unary chains.

Every property is checked against an independent reference computed from the flat node table
(``tree.parent``, ``tree.depth``, ``tree.named``...), not against stored outputs.
"""

from __future__ import annotations

import inspect
import sys
import time

import numpy as np
import pytest

from asc.errors import InputError
from asc.syntax import MAX_AST_DEPTH, parse
from asc.viz.layout import TREE_VIEWS, tree_layout, tree_view

COUNT = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
         "        if letter == character:\n            count = count + 1\n    return count\n")
ASSIGN = "x = 1\n"
BROKEN = "def f(x:\n  return (1\n"
MISSING = "def f(:\n  pass\n"
NON_ASCII = 'def größe(x):\n    s = "héllo ✓"\n    return s\n'
CLASS = "class A:\n    def f(self, a):\n        return [a, (a + 1) * 2]\n"
JAVA = "class A { int f(int x) { if (x > 0) { return x; } return -x; } }"
JAVA_BROKEN = "class A { int f( { return 1 }"

SNIPPETS = [(COUNT, "python"), (ASSIGN, "python"), (BROKEN, "python"), (MISSING, "python"), (NON_ASCII, "python"),
            (CLASS, "python"), ("(", "python"), ("$", "python"), ("\n\n", "python"), ("", "python"),
            (JAVA, "java"), (JAVA_BROKEN, "java")]
SNIPPET_IDS = [f"{lang}:{src[:18]!r}" for src, lang in SNIPPETS]
DEPTHS = [None, 0, 1, 2, 3, 5]


# ------------------------------------------------------------------------------------------ reference


def _in_view(tree, view):
    """Nodes the view shows before folding: all, or named + MISSING; the root always."""
    mask = np.ones(tree.n_nodes, bool) if view == "complete" else (tree.named | tree.is_missing).copy()
    mask[0] = True
    return mask


def _shown(tree, view, max_depth):
    mask = _in_view(tree, view)
    if max_depth is not None:
        mask &= tree.depth <= max_depth
        mask[0] = True
    return mask


def _ancestors(tree, i):
    """Strict ancestors of node i, nearest first."""
    out = []
    p = int(tree.parent[i])
    while p >= 0:
        out.append(p)
        p = int(tree.parent[p])
    return out


def _nearest(tree, i, mask):
    for a in _ancestors(tree, i):
        if mask[a]:
            return a
    return -1


def _box_children(lay):
    kids = {k: [] for k in range(lay.n_boxes)}
    for k in range(lay.n_boxes):
        if lay.parent_box[k] >= 0:
            kids[int(lay.parent_box[k])].append(k)
    return kids


def _box_depth(lay, k):
    d = 0
    while lay.parent_box[k] >= 0:
        k = int(lay.parent_box[k])
        d += 1
    return d


def _check_geometry(tree, lay):
    """x = column in the box tree, leaves on consecutive rows in source order, parents centred."""
    kids = _box_children(lay)
    leaves = [k for k in range(lay.n_boxes) if not kids[k]]
    # leaves: rows 0..n_rows-1 in box (pre-)order, which is source order
    assert lay.n_rows == len(leaves)
    np.testing.assert_array_equal(lay.y[leaves], np.arange(len(leaves), dtype=float))
    starts = [int(tree.start[lay.node[k]]) for k in leaves]
    assert starts == sorted(starts)
    for k in range(lay.n_boxes):
        assert lay.x[k] == _box_depth(lay, k)
        if kids[k]:
            first, last = kids[k][0], kids[k][-1]
            assert lay.y[k] == pytest.approx((lay.y[first] + lay.y[last]) / 2)
            # children sit one column to the right of their parent
            assert all(lay.x[c] == lay.x[k] + 1 for c in kids[k])
    # every row is used by exactly one leaf: no overlapping leaf labels
    assert len(set(lay.y[leaves].tolist())) == len(leaves)


def _check_members(tree, lay, shown):
    """Boxes partition the shown nodes; ``node`` is the top member; members are a same-span chain."""
    all_members = [m for mem in lay.members for m in mem]
    assert sorted(all_members) == np.flatnonzero(shown).tolist()
    assert len(all_members) == len(set(all_members))
    assert lay.node.tolist() == [mem[0] for mem in lay.members]
    for mem in lay.members:
        for top, below in zip(mem, mem[1:]):
            assert _nearest(tree, below, shown) == top, "a chain member hangs below the previous one"
            assert (tree.start[below], tree.end[below]) == (tree.start[top], tree.end[top]), "different spans merged"
            assert not tree.is_error[below], "an error node was merged into its parent"
            shown_kids = [i for i in np.flatnonzero(shown) if _nearest(tree, i, shown) == top]
            assert shown_kids == [below], "a node with several shown children was merged"


# ------------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize("view", TREE_VIEWS)
@pytest.mark.parametrize("source,language", SNIPPETS, ids=SNIPPET_IDS)
def test_shown_nodes_order_and_parents(source, language, view):
    tree = parse(source, language)
    lay = tree_layout(tree, view)
    shown = _shown(tree, view, None)
    if view == "complete":
        assert lay.n_boxes == tree.n_nodes
    else:
        # partial: named nodes + MISSING nodes + the root, nothing else
        expected = {i for i in range(tree.n_nodes) if tree.named[i] or tree.is_missing[i]} | {0}
        assert set(lay.node.tolist()) == expected
    assert lay.node.tolist() == np.flatnonzero(shown).tolist()  # pre-order = increasing node id
    assert lay.node.dtype.kind == "i" and lay.parent_box.dtype.kind == "i"
    assert lay.node[0] == 0 and lay.parent_box[0] == -1
    box_of = {int(n): k for k, n in enumerate(lay.node)}
    for k in range(1, lay.n_boxes):
        assert lay.parent_box[k] == box_of[_nearest(tree, int(lay.node[k]), shown)]
        assert lay.parent_box[k] < k
    assert all(mem == (int(n),) for mem, n in zip(lay.members, lay.node))
    assert not lay.folded.any()
    # edges(): one (parent, child) pair per non-root box
    edges = lay.edges()
    assert edges.shape == (lay.n_boxes - 1, 2)
    assert sorted(map(tuple, edges.tolist())) == sorted((int(lay.parent_box[k]), k) for k in range(1, lay.n_boxes))


def test_partial_view_drops_anonymous_and_keeps_missing():
    tree = parse(MISSING)
    lay = tree_layout(tree, "partial")
    types = [tree.type[i] for i in lay.node]
    missing = np.flatnonzero(tree.is_missing)
    assert len(missing) >= 1 and set(missing.tolist()) <= set(lay.node.tolist())
    assert not tree.named[missing].any()  # the MISSING ")" is anonymous, shown anyway
    assert "def" not in types and ":" not in types and "(" not in types
    complete = tree_layout(tree, "complete")
    assert {"def", ":", "("} <= {tree.type[i] for i in complete.node}


@pytest.mark.parametrize("collapse", [False, True])
@pytest.mark.parametrize("max_depth", DEPTHS)
@pytest.mark.parametrize("view", TREE_VIEWS)
@pytest.mark.parametrize("source,language", SNIPPETS, ids=SNIPPET_IDS)
def test_layout_invariants(source, language, view, max_depth, collapse):
    tree = parse(source, language)
    lay = tree_layout(tree, view, max_depth, collapse)
    shown = _shown(tree, view, max_depth)
    n = lay.n_boxes
    assert lay.x.shape == lay.y.shape == lay.parent_box.shape == lay.folded.shape == (n,)
    assert len(lay.members) == n
    _check_members(tree, lay, shown)
    _check_geometry(tree, lay)
    if max_depth is not None:
        assert all(tree.depth[m] <= max_depth for mem in lay.members for m in mem)
    # parent_box: the box holding the nearest shown ancestor of the box's top node
    box_of_member = {m: k for k, mem in enumerate(lay.members) for m in mem}
    for k in range(1, n):
        assert lay.parent_box[k] == box_of_member[_nearest(tree, int(lay.node[k]), shown)]
    if not collapse:
        # x = number of shown ancestors
        for k in range(n):
            assert lay.x[k] == sum(1 for a in _ancestors(tree, int(lay.node[k])) if shown[a])
    # folded: exactly the boxes holding a node whose child in the view was cut by max_depth
    in_view = _in_view(tree, view)
    cut_parents = {_nearest(tree, i, in_view) for i in range(1, tree.n_nodes) if in_view[i] and not shown[i]}
    expected = [any(m in cut_parents for m in mem) for mem in lay.members]
    assert lay.folded.tolist() == expected
    if max_depth is None or max_depth >= tree.n_levels - 1:
        assert not lay.folded.any()


def test_max_depth_folds_the_cut_node_only():
    tree = parse(COUNT)
    lay = tree_layout(tree, "partial", max_depth=1)
    types = [tree.type[i] for i in lay.node]
    assert types == ["module", "function_definition"]
    assert lay.folded.tolist() == [False, True]  # the function's body is cut, the module keeps its only child
    root_only = tree_layout(tree, "partial", max_depth=0)
    assert root_only.node.tolist() == [0] and root_only.folded.tolist() == [True]
    assert root_only.n_rows == 1
    full = tree_layout(tree, "complete")
    deep = tree_layout(tree, "complete", max_depth=int(tree.depth.max()))
    np.testing.assert_array_equal(full.node, deep.node)
    np.testing.assert_array_equal(full.y, deep.y)
    assert not deep.folded.any()


def test_fold_only_counts_nodes_the_view_would_show():
    # in the partial view an anonymous leaf below max_depth is not "cut off": it was never shown
    tree = parse("f(x)\n")
    # module > expression_statement > call > (identifier, argument_list > ( identifier ))
    call = tree.type.index("call")
    arglist = tree.type.index("argument_list")
    lay = tree_layout(tree, "partial", max_depth=int(tree.depth[arglist]))
    k = int(np.flatnonzero(lay.node == arglist)[0])
    # argument_list's named child (x) is cut, so it is folded; with only anonymous children it would not be
    assert lay.folded[k]
    assert not lay.folded[int(np.flatnonzero(lay.node == call)[0])]
    empty_args = parse("f()\n")
    arglist = empty_args.type.index("argument_list")
    lay = tree_layout(empty_args, "partial", max_depth=int(empty_args.depth[arglist]))
    assert not lay.folded.any()  # "(" and ")" are not shown by the partial view anyway
    lay = tree_layout(empty_args, "complete", max_depth=int(empty_args.depth[arglist]))
    assert lay.folded[int(np.flatnonzero(lay.node == arglist)[0])]


def test_collapse_unary_merges_same_span_chain():
    tree = parse(ASSIGN)
    lay = tree_layout(tree, "partial", collapse_unary=True)
    types = [tuple(tree.type[m] for m in mem) for mem in lay.members]
    # module spans "x = 1\n", the statement "x = 1": different spans, never merged
    assert types == [("module",), ("expression_statement", "assignment"), ("identifier",), ("integer",)]
    stmt = tree.type.index("expression_statement")
    assert lay.members[1][0] == stmt == lay.node[1]  # top first
    assert tree.start[0] != tree.start[stmt] or tree.end[0] != tree.end[stmt]
    # the chain's children hang below the merged box
    assert lay.parent_box.tolist() == [-1, 0, 1, 1]
    assert lay.x.tolist() == [0, 1, 2, 2]
    plain = tree_layout(tree, "partial")
    assert plain.n_boxes == lay.n_boxes + 1


def test_collapse_unary_long_chain_top_first():
    # expression_statement > call cover "f(x)" (the module also covers the newline)
    tree = parse("f(x)\n")
    lay = tree_layout(tree, "partial", collapse_unary=True)
    chains = [mem for mem in lay.members if len(mem) > 1]
    assert [tuple(tree.type[m] for m in mem) for mem in chains] == [("expression_statement", "call")]
    for mem in lay.members:
        assert list(mem) == sorted(mem)  # top (smallest pre-order id) first


@pytest.mark.parametrize("source", ["(", "$", "x = (", "def f(:\n"])
def test_collapse_unary_never_merges_error_nodes(source):
    tree = parse(source)
    assert tree.has_error
    for view in TREE_VIEWS:
        lay = tree_layout(tree, view, collapse_unary=True)
        for mem in lay.members:
            assert not any(tree.is_error[m] for m in mem[1:]), (view, mem)
        errors = np.flatnonzero(tree.is_error)
        assert set(errors.tolist()) <= set(lay.node.tolist())  # each error node tops its own box


def test_collapse_error_same_span_as_root():
    tree = parse("(")
    # module "(" > ERROR "(": same span, single shown child, but an error: kept apart
    err = int(np.flatnonzero(tree.is_error)[0])
    assert (tree.start[err], tree.end[err]) == (tree.start[0], tree.end[0])
    lay = tree_layout(tree, "partial", collapse_unary=True)
    assert lay.members == ((0,), (err,))
    assert lay.parent_box.tolist() == [-1, 0]


def test_large_tree():
    body = "".join(f"    v{i} = values[{i}] * {i} + call(v{i - 1 if i else 0}, key='{i}')\n" for i in range(30))
    source = "def long_function(values):\n" + body + "    return v0\n"
    tree = parse(source)
    assert tree.n_nodes > 300
    t0 = time.perf_counter()
    for view in TREE_VIEWS:
        lay = tree_layout(tree, view)
        kids = _box_children(lay)
        n_leaves = sum(1 for k in range(lay.n_boxes) if not kids[k])
        assert lay.n_rows == n_leaves
        _check_geometry(tree, lay)
    complete = tree_layout(tree, "complete")
    assert complete.n_boxes == tree.n_nodes
    assert complete.n_rows == int(tree.is_leaf.sum())
    collapsed = tree_layout(tree, "partial", collapse_unary=True)
    assert collapsed.n_boxes < tree_layout(tree, "partial").n_boxes
    assert time.perf_counter() - t0 < 5.0


def test_deep_tree_has_no_recursion_limit():
    k = MAX_AST_DEPTH - 3  # the deepest nesting parse accepts (module > statement > assignment > k parentheses)
    source = "x = " + "(" * k + "1" + ")" * k + "\n"
    tree = parse(source)
    assert tree.n_levels == MAX_AST_DEPTH + 1
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 60)  # far fewer frames than levels: a recursive walk would fail
    try:
        lay = tree_layout(tree, "complete")
    finally:
        sys.setrecursionlimit(limit)
    assert lay.x.max() == tree.depth.max()
    assert lay.n_rows == int(tree.is_leaf.sum())


@pytest.mark.parametrize("source", ["", "\n\n", "   "])
@pytest.mark.parametrize("view", TREE_VIEWS)
def test_empty_source(source, view):
    tree = parse(source)
    lay = tree_layout(tree, view, max_depth=2, collapse_unary=True)
    assert lay.node.tolist() == [0]
    assert lay.n_rows == 1 and lay.x.tolist() == [0.0] and lay.y.tolist() == [0.0]
    assert lay.parent_box.tolist() == [-1] and lay.members == ((0,),)
    assert lay.edges().shape == (0, 2)


@pytest.mark.parametrize("view", ["full", "PARTIAL", "", None, "named"])
def test_invalid_view_raises(view):
    with pytest.raises(ValueError, match="view"):
        tree_layout(parse(ASSIGN), view)


def test_negative_max_depth_keeps_the_root():
    from asc.syntax import parse as _parse

    lay = tree_layout(_parse("x = 1\n"), "partial", max_depth=-1)
    assert lay.n_boxes == 1 and lay.node[0] == 0 and lay.folded[0]


def test_a_view_picked_by_name_is_one_of_the_tree_views_or_an_error_naming_them():
    assert [tree_view(name) for name in ("partial", "complete")] == list(TREE_VIEWS)
    for name in ("sequence", "Partial", ""):
        with pytest.raises(InputError, match="choose one of"):
            tree_view(name)
    with pytest.raises(InputError, match="choose one of"):
        tree_layout(parse("x = 1\n"), "sequence")
