"""asc.branching.tree on hand-made branches of two known snippets (explained by the tiny model): the tree's
structure, summaries, JSON export, and the comparison tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from asc.branching.branches import Branch, mean_value
from asc.branching.tree import BranchTree, category_frame, diff_frame
from asc.branching.treediff import ast_diff
from asc.errors import InputError
from asc.explain import explain
from asc.generate import Completion, Decoding

PROMPT = "def f(x):\n"
A = PROMPT + "    y = x + 1\n    return y\n"
B = PROMPT + "    y = x * 2\n    print(y)\n    return y\n"
BROKEN = PROMPT + "    y = (x * 2\n"


def completion_of(ex, n_prompt):
    s = ex.scores
    return Completion(prompt=ex.source[: int(s.start[n_prompt])], text=ex.source, ids=s.ids, start=s.start, end=s.end,
                      special=s.special, n_prompt=n_prompt, stop_reason="function_end")


def branch_of(ex, at, parent_ex, rank=2):
    s = ex.scores
    return Branch(prompt=ex.source[: int(s.start[at])], fork_index=at, forced_ids=s.ids[at:at + 1],
                  forced_text=s.text[at], forced_rank=rank, forced_prob=0.25, replaced_id=int(parent_ex.scores.ids[at]),
                  completion=completion_of(ex, at), settings=Decoding())


def first_difference(a, b):
    """The first token index whose id differs (the fork of b from a)."""
    n = min(len(a.scores.ids), len(b.scores.ids))
    return int(np.flatnonzero(a.scores.ids[:n] != b.scores.ids[:n])[0])


@pytest.fixture(scope="module")
def explained(tiny):
    return {name: explain(tiny, text) for name, text in (("a", A), ("b", B), ("broken", BROKEN))}


@pytest.fixture(scope="module")
def tree(explained):
    a, b, broken = explained["a"], explained["b"], explained["broken"]
    n_prompt = int(np.searchsorted(a.scores.start, len(PROMPT)))
    t = BranchTree.start(completion_of(a, n_prompt), a, Decoding(temperature=0.0, top_p=1.0, seed=0))
    t = t.add(0, branch_of(b, first_difference(a, b), a), b)
    return t.add(1, branch_of(broken, first_difference(b, broken), b, rank=0), broken)


def test_tree_structure_and_summaries(tree, explained):
    assert len(tree) == 3 and [n.parent for n in tree.nodes] == [None, 0, 1]
    assert [c.id for c in tree.children(0)] == [1] and tree.depth(2) == 2
    assert tree.trunk.fork_index == tree.trunk.completion.n_prompt
    b = tree.nodes[1]
    assert b.mean_value == pytest.approx(mean_value(explained["b"], b.branch.fork_index), nan_ok=True)
    assert tree.nodes[0].parses and b.parses and not tree.nodes[2].parses
    assert b.label.startswith("branch 1: ") and tree.trunk.label == "trunk"
    assert tree.replaced_text(1) == explained["a"].scores.text[b.branch.fork_index]
    assert tree.replaced_text(0) is None
    with pytest.raises(InputError, match="no branch 7"):
        tree.node(7)


def test_start_refuses_an_explanation_of_other_tokens(explained):
    a, b = explained["a"], explained["b"]
    with pytest.raises(InputError, match="explain the trunk's own completion"):
        BranchTree.start(completion_of(a, 2), b)


def test_json_export_has_every_branch_with_its_asc_eval(tree, explained):
    doc = json.loads(json.dumps(tree.to_dict(), allow_nan=False))
    assert doc["prompt"] == tree.trunk.completion.prompt and doc["settings"]["seed"] == 0
    assert doc["aggregate"] == "median" and doc["language"] == "python"
    rows = doc["branches"]
    assert [r["id"] for r in rows] == [0, 1, 2] and [r["parent"] for r in rows] == [None, 0, 1]
    assert rows[0]["fork"] is None and rows[1]["fork"]["forced_rank"] == 2 and rows[2]["fork"]["forced_rank"] == 0
    assert rows[1]["fork"]["replaced_text"] == tree.replaced_text(1)
    assert rows[1]["text"] == B and rows[2]["parses"] is False
    assert rows[1]["asc_eval"] == json.loads(json.dumps(explained["b"].to_dict()))
    for r, node in zip(rows, tree.nodes, strict=True):
        assert r["mean_value"] == (None if math.isnan(node.mean_value) else pytest.approx(node.mean_value))


def test_diff_frame_lists_the_known_differences(explained):
    a, b = explained["a"], explained["b"]
    d = ast_diff(a.tree, b.tree)
    table = diff_frame(a, b, d)
    assert len(table) == len(d.removed) + len(d.added) + len(d.changed)
    changed = table[table["status"] == "changed"]
    assert changed[["text_a", "text_b"]].values.tolist() == [["1", "2"]]
    first = table[table["first"]]
    assert set(first["type"]) == {"+", "*"}  # the first divergence on both sides
    assert table.iloc[0]["first"]  # source order: the first row is where they part
    removed = table[table["status"] == "removed"].iloc[0]
    assert math.isnan(removed["value_b"]) and removed["node_b"] is pd_na() and pd.isna(removed["text_b"])
    assert None not in set(table["category"]) and "uncategorized" in set(table["category"])  # a label, not a gap
    named = diff_frame(a, b, d, named_only=True)
    assert "(" not in set(named["type"]) and "call" in set(named["type"])
    values = table[table["status"] == "changed"].iloc[0]
    i, j = int(values["node_a"]), int(values["node_b"])
    assert values["value_a"] == pytest.approx(a.values[i], nan_ok=True)
    assert values["value_b"] == pytest.approx(b.values[j], nan_ok=True)


def pd_na():
    import pandas as pd

    return pd.NA


def test_equal_trees_have_no_differences(explained):
    a = explained["a"]
    assert diff_frame(a, a, ast_diff(a.tree, a.tree)).empty


def test_category_frame(explained):
    a, b = explained["a"], explained["b"]
    cats = category_frame(a, b, ("trunk", "branch 1"))
    assert list(cats.columns) == ["category", "trunk", "branch 1", "difference"]
    row = cats.set_index("category").loc["Scope"]
    assert row["trunk"] == pytest.approx(a.category_values["Scope"])
    assert row["difference"] == pytest.approx(b.category_values["Scope"] - a.category_values["Scope"])
