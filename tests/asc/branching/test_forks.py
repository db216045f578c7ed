"""asc.branching.forks on hand-made scores: which tokens are fork points, and their rates per node and per category."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asc.branching.forks import ForkSettings, category_fork_rate, fork_points, most_uncertain, node_fork_rate
from asc.errors import InputError
from asc.explain import explain_scored
from asc.scores import TOP_K, TokenScores

SRC = "def f(x):\n    return x + 1\n"
PIECES = ["def", " f", "(", "x", "):", "\n   ", " return", " x", " +", " 1", "\n"]


def _scores(top1, top2, entropy, source=SRC, pieces=PIECES):
    """Scores whose token i has first/second choice probabilities ``top1[i]``/``top2[i]`` (NaN: no prediction)."""
    start, end, pos = [], [], 0
    for p in pieces:
        assert source.startswith(p, pos)
        start.append(pos)
        pos += len(p)
        end.append(pos)
    n = len(pieces)
    top1, top2 = np.asarray(top1, float), np.asarray(top2, float)
    has = ~np.isnan(top1)
    rest = np.where(has, 0.0, np.nan)[:, None] * np.ones((1, TOP_K - 2))
    top_probs = np.column_stack([top1, top2, rest])
    return TokenScores(
        source=source, ids=np.arange(n, dtype=np.int64), start=np.array(start, dtype=np.int64),
        end=np.array(end, dtype=np.int64), special=np.zeros(n, dtype=bool), prob=top1.copy(), logprob=np.log(top1),
        entropy=np.asarray(entropy, float), rank=np.where(has, 1, 0).astype(np.int64),
        top_ids=np.where(has[:, None], np.arange(TOP_K)[None, :], -1).astype(np.int64), top_probs=top_probs,
        top_text=tuple(tuple("x" for _ in range(TOP_K)) if h else () for h in has))


NAN = math.nan
#           def   f     (     x     ):    \n    ret   x     +     1     \n
TOP1 = [NAN, 0.90, 0.95, 0.45, 0.90, 0.90, 0.90, 0.50, 0.90, 0.30, 0.90]
TOP2 = [NAN, 0.05, 0.01, 0.40, 0.05, 0.05, 0.05, 0.45, 0.05, 0.25, 0.05]
ENT = [NAN, 0.50, 0.20, 1.00, 0.30, 0.30, 0.40, 1.20, 2.50, 2.60, 0.10]
#          no pred          margin .05                margin .05  ent   both


def test_fork_points_by_margin_entropy_and_no_prediction():
    forks = fork_points(_scores(TOP1, TOP2, ENT))
    assert forks.is_fork.tolist() == [False, False, False, True, False, False, False, True, True, True, False]
    assert forks.indices.tolist() == [3, 7, 8, 9]
    assert np.isnan(forks.margin[0]) and np.isnan(forks.entropy[0])  # no prediction: not a fork, NaN
    assert forks.margin[3] == pytest.approx(0.05)
    assert forks.margin[1] == pytest.approx(0.85)
    assert forks.rate == pytest.approx(4 / 10)
    assert forks.settings == ForkSettings()


def test_settings_move_the_thresholds():
    scores = _scores(TOP1, TOP2, ENT)
    # margins only: an entropy bar nobody reaches
    only_margin = fork_points(scores, ForkSettings(max_margin=0.1, min_entropy=100.0))
    assert only_margin.indices.tolist() == [3, 7, 9]
    # entropy only: no margin is below 0
    only_entropy = fork_points(scores, ForkSettings(max_margin=0.0, min_entropy=2.0))
    assert only_entropy.indices.tolist() == [8, 9]
    wide = fork_points(scores, ForkSettings(max_margin=0.95, min_entropy=2.0))
    assert wide.indices.tolist() == list(range(1, 11))


@pytest.mark.parametrize("kwargs", [{"max_margin": -0.1}, {"max_margin": 1.5}, {"min_entropy": -1.0},
                                    {"max_margin": NAN}, {"min_entropy": NAN}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(InputError):
        ForkSettings(**kwargs)


def test_one_choice_vocabulary_has_margin_p1():
    scores = _scores(TOP1, TOP2, ENT)
    narrow = TokenScores(**{**scores.__dict__, "top_probs": scores.top_probs[:, :1], "top_ids": scores.top_ids[:, :1]})
    forks = fork_points(narrow, ForkSettings(min_entropy=100.0))
    assert forks.margin[1] == pytest.approx(0.9) and not forks.is_fork.any()


def test_most_uncertain_orders_by_margin_then_entropy():
    forks = fork_points(_scores(TOP1, TOP2, ENT))
    # margins: 3 -> .05 (entropy 1.0), 7 -> .05 (entropy 1.2), 9 -> .05 (entropy 2.6), 8 -> .85
    assert most_uncertain(forks, 10).tolist() == [9, 7, 3, 8]
    assert most_uncertain(forks, 2).tolist() == [9, 7]
    assert most_uncertain(forks, 10, first=8).tolist() == [9, 8]
    assert most_uncertain(forks, 0).tolist() == []
    with pytest.raises(InputError):
        most_uncertain(forks, -1)


def test_node_and_category_fork_rates():
    scores = _scores(TOP1, TOP2, ENT)
    ex = explain_scored({"name": "hand"}, scores, "python")
    forks = fork_points(scores)
    rates = node_fork_rate(ex, forks)
    tree = ex.tree
    assert rates.shape == (tree.n_nodes,)

    def node(type_, text=None):
        hits = [i for i in range(tree.n_nodes) if tree.type[i] == type_ and (text is None or tree.text(i) == text)]
        assert len(hits) == 1
        return hits[0]

    assert rates[node("binary_operator")] == pytest.approx(3 / 3)  # x, +, 1 are all forks
    assert rates[node("return_statement")] == pytest.approx(3 / 4)  # return is not
    assert rates[node("identifier", "f")] == 0.0
    assert math.isnan(rates[node("def")])  # only token 0, which has no prediction
    # the root holds every predicted token
    assert rates[0] == pytest.approx(forks.rate)
    cats = category_fork_rate(ex, forks)
    assert set(cats) == set(ex.categories)
    # each category pools the distinct tokens of its nodes: recompute it by hand
    for cat, value in cats.items():
        toks = sorted({t for i in range(tree.n_nodes) if ex.node_category[i] == cat
                       for t in ex.alignment.tokens_of(i).tolist() if not math.isnan(forks.margin[t])})
        if toks:
            assert value == pytest.approx(np.mean([forks.is_fork[t] for t in toks]))
        else:
            assert math.isnan(value)
    assert any(math.isnan(v) for v in cats.values())  # categories absent from the snippet: NaN, not 0


def test_rates_refuse_forks_of_another_sequence():
    scores = _scores(TOP1, TOP2, ENT)
    ex = explain_scored({"name": "hand"}, scores, "python")
    other = fork_points(_scores(TOP1[:3], TOP2[:3], ENT[:3], source="def", pieces=["d", "e", "f"]))
    with pytest.raises(InputError, match="compute them from this explanation"):
        node_fork_rate(ex, other)
    with pytest.raises(InputError):
        category_fork_rate(ex, other)


def test_real_scores_of_the_tiny_model(tiny):
    from asc.explain import explain

    ex = explain(tiny, SRC)
    forks = fork_points(ex.scores)
    assert forks.n_tokens == ex.scores.n_tokens
    assert not forks.is_fork[0]  # no BOS: token 0 has no prediction
    has = ex.scores.has_prediction
    np.testing.assert_allclose(forks.margin[has], ex.scores.top_probs[has, 0] - ex.scores.top_probs[has, 1])
    assert (forks.margin[has] >= 0).all()
