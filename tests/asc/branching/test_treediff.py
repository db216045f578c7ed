"""asc.branching.treediff: two known snippets aligned node by node (removed, added, changed, the first divergence)."""

import pytest

from asc.branching.treediff import ast_diff
from asc.errors import InputError
from asc.syntax import parse

A = "def f(x):\n    y = x + 1\n    return y\n"
B = "def f(x):\n    y = x * 2\n    print(y)\n    return y\n"


def _node(tree, type_, text=None):
    hits = [i for i in range(tree.n_nodes) if tree.type[i] == type_ and (text is None or tree.text(i) == text)]
    assert len(hits) == 1, hits
    return hits[0]


def test_ast_diff_of_two_known_snippets():
    a, b = parse(A), parse(B)
    d = ast_diff(a, b)
    assert [a.type[i] for i in d.removed] == ["+"]
    added = {b.type[j] for j in d.added}
    assert added == {"*", "expression_statement", "call", "identifier", "argument_list", "(", ")"}
    assert b.text(min(d.added, key=lambda j: b.depth[j])) == "print(y)"
    assert [(a.text(i), b.text(j)) for i, j in d.changed] == [("1", "2")]
    assert d.first_divergence == (_node(a, "+"), _node(b, "*"))
    # matched nodes keep their counterpart both ways; the return statement is found after the insertion
    assert d.match_a[_node(a, "return_statement")] == _node(b, "return_statement")
    assert all(d.match_b[d.match_a[i]] == i for i in range(a.n_nodes) if d.match_a[i] >= 0)


def test_ast_diff_renames_equal_trees_and_languages():
    a, b = parse("def f(x):\n    return x\n"), parse("def f(x):\n    return y\n")
    d = ast_diff(a, b)
    assert len(d.removed) == len(d.added) == 0
    assert [(a.text(i), b.text(j)) for i, j in d.changed] == [("x", "y")]
    returned = [i for i in range(a.n_nodes) if a.type[i] == "identifier" and a.text(i) == "x"][-1]
    assert d.first_divergence == (returned, _node(b, "identifier", "y"))
    same = ast_diff(a, parse("def f(x):\n    return x\n"))
    assert same.first_divergence is None and same.changed.shape == (0, 2)
    with pytest.raises(InputError, match="one language"):
        ast_diff(a, parse("class A {}", "java"))
