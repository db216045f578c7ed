"""asc.why.statements on the tiny model: the statement rows partition the attributed tokens (each token in exactly
one row, shares adding up to 1, values adding up to the tokens' total), an ancestor does not lead by containing its
children, whitespace goes to the line it ends, occlusion's rows, each node's own tokens, the summary sentence and
the methods' agreement; and asc.viz.statements' tables of them."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from asc.errors import InputError
from asc.explain import explain
from asc.viz.statements import agreement_pairs, agreement_table, breakdown_table, flat_code
from asc.why.attribute import aggregate, attribute
from asc.why.statements import (
    agreement,
    by_own_tokens,
    by_statement,
    is_statement,
    statement_nodes,
    summary,
)

CODE = ('def f(a, b):\n    """Doc."""\n    t = a  # c\n    if a:\n        t = b\n    return t\n')


@pytest.fixture(scope="module")
def ex(tiny):
    return explain(tiny, CODE)


@pytest.fixture(scope="module")
def target(ex):
    """The last ``t`` (after ``return``)."""
    s = ex.scores
    return max(i for i in range(s.n_tokens) if s.text[i].strip() == "t")


@pytest.fixture(scope="module")
def grad(tiny, ex, target):
    return attribute(tiny, CODE, target, "grad", explanation=ex)


def _with_tokens(attr, token_attr):
    """``attr`` with other token attributions (nodes and categories aggregated again)."""
    node_attr, cats, shares = aggregate(attr.explanation, token_attr)
    return dataclasses.replace(attr, token_attr=token_attr, node_attr=node_attr, category_attr=cats,
                               category_share=shares)


def _row_of_line(view, line):
    return next(r for r in range(view.n_rows) if view.line[r] == line and view.kind[r] != "comment")


def test_statement_rows_partition_the_attributed_tokens_and_shares_add_up_to_one(grad):
    view = by_statement(grad)
    attributed = ~np.isnan(grad.token_attr)
    assert ((view.token_row >= 0) == attributed).all()  # every attributed token in a row, no other token
    counts = np.bincount(view.token_row[attributed], minlength=view.n_rows)
    assert (counts == view.n_tokens).all() and (counts > 0).all()  # each token in exactly one row, none empty
    assert np.nansum(view.value) == pytest.approx(np.nansum(grad.token_attr), abs=1e-9)
    for r in range(view.n_rows):
        assert view.value[r] == pytest.approx(grad.token_attr[view.token_row == r].sum(), abs=1e-12)
    assert view.share.sum() == pytest.approx(1.0)
    assert view.share == pytest.approx(np.abs(view.value) / np.abs(view.value).sum())


def test_rows_are_statements_a_compound_statement_keeps_its_header_and_kinds_are_named(grad):
    view = by_statement(grad)
    tree = grad.explanation.tree
    assert set(view.node.tolist()) <= set(statement_nodes(tree).tolist())
    texts = dict(zip(view.line.tolist(), view.text, strict=False))
    assert texts[1] == "def f(a, b):"  # the definition's row: its header, not its body
    assert texts[4] == "if a:" and texts[5] == "t = b"
    kinds = dict(zip(view.text, view.kind, strict=True))
    assert kinds['"""Doc."""'] == "docstring" and kinds["# c"] == "comment"
    assert kinds["t = a"] == "expression_statement"
    assert view.kind[view.target_row] == "return_statement" and view.text[view.target_row] == "return"
    assert is_statement("for_statement") and is_statement("elif_clause") and not is_statement("block")
    assert not is_statement("for_in_clause")  # a comprehension's clause is no line of its own


def test_a_whitespace_token_goes_to_the_line_it_ends(grad):
    ex = grad.explanation
    s = ex.scores
    view = by_statement(grad)
    newline = [i for i in range(grad.target.index) if s.text[i].startswith("\n") and not s.text[i].strip()
               and not math.isnan(grad.token_attr[i])]
    assert newline
    for i in newline:
        before = ex.source[: int(s.start[i])].rstrip()
        line = before.count("\n") + 1
        assert view.line[view.token_row[i]] <= line <= view.last_line[view.token_row[i]]


def test_an_ancestor_does_not_lead_by_containing_everything(grad):
    """One statement's tokens carry +1 each, every other token +0.01: the nested view puts the function first (it
    sums everything), the statement view that statement, with shares adding up to 1 (the nested ones do not)."""
    ex = grad.explanation
    inner = by_statement(grad)
    r = _row_of_line(inner, 3)  # t = a
    token_attr = np.where(np.isnan(grad.token_attr), np.nan, np.where(inner.token_row == r, 1.0, 0.01))
    attr = _with_tokens(grad, token_attr)
    nested_top = attr.top_nodes(1)[0][0]
    assert ex.tree.type[nested_top] == "function_definition"
    total = np.nansum(np.abs(token_attr))
    assert sum(abs(v) for _, v in attr.top_nodes(10)) / total > 1  # nested sizes overlap
    view = by_statement(attr)
    top = view.ranked(1)[0]
    assert view.text[top] == "t = a" and view.kind[top] == "expression_statement"
    assert view.share.sum() == pytest.approx(1.0)
    assert "line 3 `t = a`" in summary(view)


def test_each_nodes_own_tokens_partition_the_tokens_too(grad):
    view = by_own_tokens(grad)
    attributed = ~np.isnan(grad.token_attr)
    assert ((view.token_row >= 0) == attributed).all()
    assert view.share.sum() == pytest.approx(1.0)
    assert np.nansum(view.value) == pytest.approx(np.nansum(grad.token_attr), abs=1e-9)
    tree = grad.explanation.tree
    assert all(tree.named[n] for n in view.node.tolist())
    fn = [r for r in range(view.n_rows) if view.kind[r] == "function_definition"]
    assert fn and view.text[fn[0]].startswith("def")  # only its own tokens: no name, no parameters, no body
    assert "a" not in view.text[fn[0]].replace("def", "")


def test_occlusion_rows_take_each_statements_occlusion_and_a_header_its_parts(tiny, ex, target):
    occ = attribute(tiny, CODE, target, "occlusion", explanation=ex)
    view = by_statement(occ)
    tree = ex.tree
    assert not view.additive
    plain = _row_of_line(view, 3)
    assert view.value[plain] == occ.node_attr[view.node[plain]]  # t = a: its own occlusion
    header = _row_of_line(view, 4)  # if a: the condition's occlusion (the body holds a statement)
    cond = [c for c in tree.children(int(view.node[header])).tolist() if tree.type[c] == "identifier"]
    assert view.value[header] == pytest.approx(sum(occ.node_attr[c] for c in cond))
    assert np.nansum(view.share) == pytest.approx(1.0)
    with pytest.raises(InputError, match="occlusion has no per-token values"):
        by_own_tokens(occ)


def test_summary_names_the_top_statements_and_the_targets_line_apart(grad):
    view = by_statement(grad)
    text = summary(view)
    own = view.target_row
    assert text.startswith(f"Besides its own line (line {int(view.line[own])}, before the target: ")
    first = view.ranked(1, target_line=False)[0]
    assert f"({view.value[first]:+.3g})" in text and "relied most on" in text
    nothing = dataclasses.replace(view, value=np.full(view.n_rows, np.nan))
    assert "no other statement" in summary(nothing)


def test_agreement_is_one_for_the_same_view_minus_one_for_the_reverse(grad):
    view = by_statement(grad)
    flipped = dataclasses.replace(view, method="flipped", value=-np.arange(view.n_rows, dtype=float))
    same = dataclasses.replace(view, method="same", value=np.arange(view.n_rows, dtype=float))
    ag = agreement([same, flipped, view])
    assert ag.methods == ("same", "flipped", "grad")
    assert ag.spearman[0, 0] == pytest.approx(1.0) and ag.spearman[0, 1] == pytest.approx(-1.0)
    assert view.node[view.target_row] not in ag.node.tolist()  # the target's line is ranked apart
    assert ag.n_common[0, 1] == view.n_rows - 1
    top = ag.top(0, 2)
    assert [ag.rank[0, r] for r in top] == [1, 2]
    short = dataclasses.replace(view, method="short", value=np.where(np.arange(view.n_rows) < 2, 1.0, np.nan))
    assert math.isnan(agreement([view, short]).spearman[0, 1])  # fewer than 3 statements in common
    with pytest.raises(InputError, match="same source"):
        agreement([view, dataclasses.replace(view, source="x = 1\n")])


def test_tables_rank_the_rows_pin_the_targets_line_and_name_the_methods(grad):
    view = by_statement(grad)
    table = breakdown_table(view)
    assert list(table.columns) == ["rank", "line", "code", "kind", "attribution", "share"]
    assert table["rank"].iloc[0] == "target" and table["kind"].iloc[0] == "return_statement"
    got = [abs(float(v)) for v in table["attribution"].iloc[1:]]
    assert got == sorted(got, reverse=True)
    assert sum(float(v) for v in table["share"]) == pytest.approx(1.0, abs=1e-3)
    own = breakdown_table(by_own_tokens(grad), 5)
    assert list(own.columns)[:2] == ["rank", "node"] and len(own) == 5
    ag = agreement([view, dataclasses.replace(view, method="ig", value=view.value[::-1].copy())])
    top = agreement_table(ag, {"grad": "gradient x input"}, k=3)
    assert list(top.columns) == ["rank", "gradient x input", "ig"]
    first = ag.top(0, 1)[0]
    assert top["gradient x input"].iloc[0].startswith(f"{ag.value[0, first]:+.3g} · line {int(ag.line[first])}: ")
    pairs = agreement_pairs(ag)
    assert pairs["methods"].tolist() == ["grad / ig"] and pairs["statements"].tolist() == [view.n_rows - 1]
    assert flat_code("a\n    b") == "a b" and flat_code("\n    ") == "⏎····" and len(flat_code("x" * 500)) == 120
