"""asc.why.effects: clean against corrupted AsC-Eval, node by node (the branches' tree diff) and token by token."""

from __future__ import annotations

import json

import numpy as np
import pytest

from asc.errors import InputError
from asc.explain import explain
from asc.why.corrupt import Corruption, Edit, corrupt
from asc.why.effects import effect, effect_of_explanations

SOURCE = ("def count_chars(string, character):\n    # how many times\n    count = 0\n    for letter in string:\n"
          "        if letter == character:\n            count = count + 1\n    return count\n")


@pytest.fixture(scope="module")
def renamed(tiny):
    return effect(tiny, corrupt(SOURCE, "rename:letter", tokenizer=tiny.tokenizer))


@pytest.mark.parametrize("edits", [(), (Edit(40, 45, SOURCE[40:45], SOURCE[40:45]),)], ids=["no edit", "same text"])
def test_a_corruption_that_changes_nothing_has_zero_effect_everywhere(tiny, edits):
    e = effect(tiny, Corruption("none", "nothing", SOURCE, SOURCE, edits))
    n, t = e.clean.tree.n_nodes, e.clean.scores.n_tokens
    assert (e.node_match == np.arange(n)).all()
    has = ~np.isnan(e.clean.values)
    assert has.sum() > 10 and np.array_equal(np.isnan(e.node_difference), ~has)
    assert np.abs(e.node_difference[has]).max() == 0.0
    lined_up = e.token_match >= 0  # every token, or every token but those the recorded edit overlaps
    s = e.clean.scores
    assert all(x.start < s.end[i] and s.start[i] < x.end for i in np.flatnonzero(~lined_up) for x in edits)
    assert lined_up.sum() >= t - sum(len(x.old) for x in edits) and (e.token_match[lined_up] == np.arange(t)[lined_up]).all()
    scored = lined_up & ~np.isnan(e.clean.scores.logprob)
    assert np.abs(e.token_difference[scored]).max() == 0.0
    assert e.node_later.any() == bool(edits) and e.token_later.any() == bool(edits)
    assert all(np.isnan(v) or v == 0.0 for v in e.category_difference.values())


def test_a_rename_effect_is_finite_and_aligned(renamed):
    e, c = renamed, renamed.corruption
    clean, bad = e.clean.scores, e.corrupted.scores
    assert "off" not in c.description and clean.n_tokens == bad.n_tokens  # a fresh name with as many tokens
    matched = np.flatnonzero(e.token_match >= 0)
    assert 0 < len(matched) < clean.n_tokens
    for i in matched:  # same text, at the span shifted by the edits before it
        j = e.token_match[i]
        assert clean.text[i] == bad.text[j]
        shift = sum(len(x.new) - len(x.old) for x in c.edits if x.end <= clean.start[i])
        assert bad.start[j] == clean.start[i] + shift
    for i in np.flatnonzero(e.token_match < 0):  # an unmatched token touches a renamed occurrence
        assert any(x.start < clean.end[i] and clean.start[i] < x.end for x in c.edits)
    fin = np.isfinite(e.token_difference)
    assert fin[matched].sum() >= len(matched) - 1  # all but a first token with no prediction
    first = c.first_change
    before = matched[clean.end[matched] <= first]
    assert len(before) and np.abs(e.token_difference[before][fin[before]]).max() < 1e-5  # same prefix, same scores
    after = matched[e.token_later[matched]]
    assert len(after) and np.abs(e.token_difference[after]).max() > 0  # the rename reaches later tokens
    # nodes: the trees differ only in the renamed leaves, so every node has its counterpart and a finite difference
    assert (e.node_match >= 0).all()
    assert [(e.clean.tree.text(i), e.corrupted.tree.text(j)) for i, j in e.diff.changed] == \
        [("letter", x.new) for x in c.edits]
    has = ~np.isnan(e.clean.values)
    assert np.isfinite(e.node_difference[has]).all()
    assert np.allclose(e.node_corrupted[has], e.corrupted.values[e.node_match[has]])
    later = np.flatnonzero(e.node_later)
    assert len(later) and not any(e.clean.tree.text(i) == "letter" for i in later)  # renamed leaves are not later
    assert any(np.isfinite(v) for v in e.category_difference.values())


def test_a_removed_comment_leaves_its_node_unmatched(tiny):
    c = corrupt(SOURCE, "comment")
    clean = explain(tiny, SOURCE)
    e = effect(tiny, c, clean=clean)
    assert e.clean is clean
    tree = e.clean.tree
    comment = next(i for i in range(tree.n_nodes) if tree.type[i] == "comment")
    assert e.node_match[comment] == -1 and np.isnan(e.node_corrupted[comment]) and np.isnan(e.node_difference[comment])
    lines_after = [i for i in range(tree.n_nodes) if tree.start[i] >= c.edits[0].end]
    assert (e.node_match[lines_after] >= 0).all()
    assert e.token_match[clean.scores.start >= c.edits[0].end].min() >= 0  # every later token lines up


def test_effect_exports_and_checks_its_inputs(renamed, tiny):
    d = json.loads(json.dumps(renamed.to_dict()))
    assert d["corruption"]["kind"] == "rename" and len(d["nodes"]) == renamed.clean.tree.n_nodes
    assert len(d["tokens"]) == renamed.clean.scores.n_tokens and set(d["categories"]) == set(renamed.clean.categories)
    table = renamed.strongest(5)
    assert len(table) <= 5 and table["difference"].abs().is_monotonic_decreasing
    with pytest.raises(InputError, match="not of the corruption's two texts"):
        effect_of_explanations(renamed.corruption, renamed.corrupted, renamed.clean)
