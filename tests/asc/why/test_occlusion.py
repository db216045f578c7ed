"""asc.why.occlusion on the tiny model: each node's and category's occlusion equals a direct recomputation (a full
forward pass with the node's prompt tokens replaced), shared token sets run once, and the corruption hook runs the
corrupted text (a stand-in corruption here: asc.why.corrupt is merged separately)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from asc.explain import explain
from asc.why.attribute import attribute
from asc.why.corrupt import node_corruptions
from asc.why.occlusion import occlude
from asc.why.targets import prompt_mask, target_at
from tests.asc.why.conftest import COUNT_CHARS

SRC = COUNT_CHARS



@pytest.fixture(scope="module")
def target(at_return):
    return at_return  # "count" in the return statement


def _direct(bundle, ids, target, replaced=(), baseline="pad"):
    """The target from one full forward pass over ``ids[:target.last]`` with the tokens ``replaced`` set to the
    baseline embedding."""
    emb = bundle.model.get_input_embeddings()
    with torch.no_grad():
        x = emb(torch.from_numpy(np.asarray(ids[: target.last]))[None]).clone()
        if len(replaced):
            pad = bundle.tokenizer.pad_token_id or bundle.tokenizer.eos_token_id
            x[0, list(replaced)] = 0.0 if baseline == "zero" else emb(torch.tensor([pad]))[0]
        logp = bundle.model(inputs_embeds=x).logits[0].float().log_softmax(-1)
    return float(np.mean([float(logp[p - 1, i]) for p, i in zip(target.positions, target.ids, strict=True)]))


@pytest.mark.parametrize("baseline", ["zero", "pad"])
def test_occluding_a_node_changes_the_target_by_a_direct_recomputation(tiny, ex, target, baseline):
    occ = occlude(tiny, ex, target, baseline)
    clean = _direct(tiny, ex.scores.ids, target)
    assert occ.value == pytest.approx(clean, abs=1e-5)
    prompt = prompt_mask(ex, target)
    checked = 0
    for node in range(ex.tree.n_nodes):
        tokens = [t for t in ex.alignment.tokens_of(node).tolist() if t < target.last and prompt[t]]
        if not tokens:
            assert math.isnan(occ.node_attr[node])
            continue
        if node % 3 and node:  # a third of the nodes (and the module: every prompt token at once) keep it quick
            continue
        assert occ.node_attr[node] == pytest.approx(clean - _direct(tiny, ex.scores.ids, target, tokens, baseline),
                                                    abs=1e-4)
        checked += 1
    assert checked > 10 and not occ.corrupted.any()


def test_categories_are_occluded_at_once_and_shared_token_sets_run_once(tiny, ex, target):
    occ = occlude(tiny, ex, target)
    al = ex.alignment
    nodes = np.array([c == "Natural Language" for c in ex.node_category])
    tokens = [t for t in np.flatnonzero(al.covered_tokens(nodes, ex.scores.n_tokens)).tolist() if t < target.index]
    want = occ.value - _direct(tiny, ex.scores.ids, target, tokens)
    assert occ.category_attr["Natural Language"] == pytest.approx(want, abs=1e-4)
    assert math.isnan(occ.category_attr["Exceptions"])
    shares = [v for v in occ.category_share.values() if not math.isnan(v)]
    assert sum(shares) == pytest.approx(1.0)
    with_tokens = int((~np.isnan(occ.node_attr)).sum())
    assert occ.variants < with_tokens  # e.g. an identifier and its expression statement: one variant
    # attribute() occludes with the valid corruptions of asc.why.corrupt where a node has one
    result = attribute(tiny, SRC, target, "occlusion", explanation=ex)
    with_corruptions = occlude(tiny, ex, target, corruptions=node_corruptions)
    np.testing.assert_allclose(result.node_attr, with_corruptions.node_attr, equal_nan=True)
    assert np.isnan(result.token_attr).all() and result.steps == with_corruptions.variants
    assert not np.allclose(np.nan_to_num(result.node_attr), np.nan_to_num(occ.node_attr))  # the corruptions count


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    old: str
    new: str


@dataclass(frozen=True)
class _Rename:
    """A stand-in for asc.why.corrupt's Corruption: one identifier renamed where it stands."""

    source: str
    corrupted: str
    edits: tuple


def test_the_corruption_hook_runs_the_corrupted_text(tiny, ex, target):
    tree = ex.tree
    picked = next(i for i in range(tree.n_nodes) if tree.type[i] == "identifier" and tree.text(i) == "letter")

    def corruptions(t, node):
        if node != picked:
            return None
        s, e = int(t.start[node]), int(t.end[node])
        return _Rename(SRC, SRC[:s] + "item" + SRC[e:], (_Edit(s, e, SRC[s:e], "item"),))

    occ = occlude(tiny, ex, target, corruptions=corruptions)
    assert occ.corrupted[picked] and occ.corrupted.sum() == 1
    fork = corruptions(tree, picked).corrupted
    shifted = target_at(tiny, explain(tiny, fork), 6, 12)
    ids = explain(tiny, fork).scores.ids
    assert shifted.ids == target.ids
    assert occ.node_attr[picked] == pytest.approx(occ.value - _direct(tiny, ids, shifted), abs=1e-4)
    plain = occlude(tiny, ex, target)
    others = np.arange(tree.n_nodes) != picked
    np.testing.assert_allclose(occ.node_attr[others], plain.node_attr[others], equal_nan=True, atol=1e-6)


@pytest.mark.parametrize("logit_floats", [1 << 25, 64 * 50257], ids=["one batch", "batches of a few rows"])
def test_every_corrupted_text_runs_batched_and_equals_its_own_forward_pass(tiny, ex, target, monkeypatch,
                                                                          logit_floats):
    """The valid corruptions of asc.why.corrupt run in batches (rows from the first one's new position, padded
    after their targets): each node's value equals a full forward pass over its own corrupted text, in one batch
    and in several (a budget of 64 tokens of logits)."""
    from asc.why import occlusion

    monkeypatch.setattr(occlusion, "_LOGIT_FLOATS", logit_floats)
    occ = occlude(tiny, ex, target, corruptions=node_corruptions)
    first_char = int(ex.scores.start[target.index])
    checked = 0
    for node in np.flatnonzero(occ.corrupted):
        fork = node_corruptions(ex.tree, int(node))
        row = occlusion._corrupted_row(tiny, ex.scores.ids, target, first_char, fork)
        assert row is not None
        c_ids, _, moved = row
        assert occ.node_attr[node] == pytest.approx(occ.value - _direct(tiny, c_ids, moved), abs=1e-4), node
        checked += 1
    assert checked >= 10, checked  # enough rows for several batches at the small budget
