"""asc.concepts: theta (node aggregation), category mappings, seeded bootstrap; and the paper's
Figure 2-C example end to end through ``explain_scored`` with hand-made token scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from asc.concepts import (
    AGGREGATES,
    DEFAULT_LANGUAGE,
    aggregate_ranges,
    aggregate_segments,
    bootstrap_median,
    language_of,
    load_categories,
)
from asc.errors import InputError
from asc.explain import explain_scored
from asc.scores import TOP_K, TokenScores
from asc.syntax import parse

FIG2C = [0.07, 0.4, 0.5, 0.1, 0.1]  # token probabilities of the `parameters` node in Fig. 2-C

COUNT = "def countChars(string, character):\n    return 1\n"
COUNT_PIECES = ["def", " countChars", "(", "string", ",", " character", "):", "\n   ", " return", " 1", "\n"]
#: probabilities of the pieces; token 0 has no prediction, tokens 2..6 are the parameters' tokens
COUNT_PROBS = [math.nan, 0.3, *FIG2C, 0.9, 0.6, 0.2, 0.8]


# ---------------------------------------------------------------------------------------------- theta


@pytest.mark.parametrize("how,expected", [("median", 0.1), ("mean", 0.234), ("max", 0.5)])
def test_fig2c_aggregate_segments(how, expected):
    out = aggregate_segments(np.array(FIG2C), np.zeros(5, dtype=np.int64), 1, how)
    assert out.shape == (1,)
    assert out[0] == pytest.approx(expected, abs=1e-12)


def test_aggregate_many_segments_matches_numpy():
    rng = np.random.default_rng(1)
    values = rng.random(200)
    seg = rng.integers(0, 7, size=200)
    n_seg = 9  # segments 7 and 8 are empty
    for how, fn in (("median", np.median), ("mean", np.mean), ("max", np.max)):
        out = aggregate_segments(values, seg, n_seg, how)
        for k in range(n_seg):
            members = values[seg == k]
            if len(members):
                assert out[k] == pytest.approx(fn(members), abs=1e-12)
            else:
                assert math.isnan(out[k])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.5, 1.0, math.nan])), max_size=40),
       bounds=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=12),
       how=st.sampled_from(AGGREGATES))
def test_aggregate_ranges_equals_aggregate_segments_over_the_elements(values, bounds, how):
    """Ranges may nest or overlap (a node's tokens and its ancestors'); ties and NaN included."""
    values = np.array(values, dtype=np.float64)
    lo = np.array([min(a, b, len(values)) for a, b in bounds], dtype=np.int64)
    hi = np.array([min(max(a, b), len(values)) for a, b in bounds], dtype=np.int64)
    members = [np.arange(a, b) for a, b in zip(lo, hi)]
    segment = np.concatenate([np.full(len(m), k) for k, m in enumerate(members)] + [np.zeros(0, np.int64)])
    picked = np.concatenate(members + [np.zeros(0, np.int64)]).astype(np.int64)
    expected = aggregate_segments(values[picked], segment.astype(np.int64), len(lo), how)
    got = aggregate_ranges(values, lo, hi, how)
    if how == "mean":  # each range summed left to right, as aggregate_segments sums: the same up to rounding
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    else:  # order statistics: the very same elements
        np.testing.assert_array_equal(got, expected)


EXTREMES = [math.inf, 1e308, 1e17, 1.0, 1e-300, 0.0, math.nan]


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.floats(0, 1e300), st.sampled_from(EXTREMES)), max_size=40),
       bounds=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=12),
       sign=st.sampled_from([1.0, -1.0]))
@example(values=[1e17, 1.0, 1.0], bounds=[(0, 3), (1, 3)], sign=1.0)  # a small range beside a huge value: 1, not 0
@example(values=[math.inf, 0.5, 0.25], bounds=[(0, 1), (1, 3)], sign=-1.0)  # -inf in one range, not in the next
def test_the_mean_of_ranges_takes_any_float_as_aggregate_segments_does(values, bounds, sign):
    """A prefix sum over the whole array made an ``inf`` anywhere turn every later range's mean into NaN, and lost
    a small range's sum beside a huge one; each range is now summed on its own. The values have one sign, as
    probabilities, surprisals (up to ``inf``) and log-probabilities (down to ``-inf``) do: with both signs, a
    cancellation such as ``1 + 1e308 - 1e308`` depends on the order of the additions, in any implementation."""
    values = sign * np.array(values, dtype=np.float64)
    lo = np.array([min(a, b, len(values)) for a, b in bounds], dtype=np.int64)
    hi = np.array([min(max(a, b), len(values)) for a, b in bounds], dtype=np.int64)
    members = [np.arange(a, b) for a, b in zip(lo, hi)]
    segment = np.concatenate([np.full(len(m), k) for k, m in enumerate(members)] + [np.zeros(0, np.int64)])
    picked = np.concatenate(members + [np.zeros(0, np.int64)]).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = aggregate_segments(values[picked], segment.astype(np.int64), len(lo), "mean")
        got = aggregate_ranges(values, lo, hi, "mean")
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


def test_a_range_holding_both_infinities_has_no_mean_and_its_neighbours_keep_theirs():
    with np.errstate(invalid="ignore"):
        got = aggregate_ranges(np.array([math.inf, -math.inf, 0.5, 0.25]), np.array([0, 2, 0]), np.array([2, 4, 1]),
                               "mean")
    assert math.isnan(got[0]) and got[1] == 0.375 and got[2] == math.inf


def test_median_of_even_count_is_midpoint():
    out = aggregate_segments(np.array([0.4, 0.1, 0.3, 0.2]), np.zeros(4, dtype=np.int64), 1, "median")
    assert out[0] == pytest.approx(0.25)


def test_nan_values_are_ignored():
    values = np.array([0.1, math.nan, 0.3, math.nan, math.nan, 0.9])
    seg = np.array([0, 0, 0, 1, 1, 2])
    for how, expected0 in (("median", 0.2), ("mean", 0.2), ("max", 0.3)):
        out = aggregate_segments(values, seg, 4, how)
        assert out[0] == pytest.approx(expected0)
        assert math.isnan(out[1]), "a segment with only NaN gives NaN"
        assert out[2] == pytest.approx(0.9)
        assert math.isnan(out[3]), "an empty segment gives NaN, not 0"


def test_all_nan_or_empty_input():
    for how in AGGREGATES:
        assert np.isnan(aggregate_segments(np.array([math.nan, math.nan]), np.array([0, 1]), 2, how)).all()
        assert np.isnan(aggregate_segments(np.zeros(0), np.zeros(0, dtype=np.int64), 3, how)).all()


def test_unknown_aggregate_raises():
    with pytest.raises(InputError) as err:
        aggregate_segments(np.array([0.5]), np.array([0]), 1, "mode")
    msg = str(err.value)
    assert all(name in msg for name in ("median", "mean", "max"))


# ---------------------------------------------------------------------------------------------- Fig. 2-C end to end


def _hand_scores(source, pieces, probs):
    start, end, pos = [], [], 0
    for p in pieces:
        assert source.startswith(p, pos)
        start.append(pos)
        pos += len(p)
        end.append(pos)
    assert pos == len(source)
    n = len(pieces)
    prob = np.asarray(probs, dtype=np.float64)
    has = ~np.isnan(prob)
    top_ids = np.where(has[:, None], np.arange(TOP_K)[None, :], -1).astype(np.int64)
    top_probs = np.where(has[:, None], 0.1, np.nan)
    return TokenScores(
        source=source, ids=np.arange(n, dtype=np.int64), start=np.array(start, dtype=np.int64),
        end=np.array(end, dtype=np.int64), special=np.zeros(n, dtype=bool), prob=prob, logprob=np.log(prob),
        entropy=np.where(has, 1.0, np.nan), rank=np.where(has, 1, 0).astype(np.int64), top_ids=top_ids,
        top_probs=top_probs, top_text=tuple(tuple("x" for _ in range(TOP_K)) if h else () for h in has),
    )


def _node(tree, type_, text=None):
    hits = [i for i in range(tree.n_nodes) if tree.type[i] == type_ and (text is None or tree.text(i) == text)]
    assert len(hits) == 1
    return hits[0]


@pytest.mark.parametrize("how,expected", [("median", 0.1), ("mean", 0.234), ("max", 0.5)])
def test_fig2c_end_to_end(how, expected):
    scores = _hand_scores(COUNT, COUNT_PIECES, COUNT_PROBS)
    ex = explain_scored({"name": "hand"}, scores, "python", how)
    tree = ex.tree
    params = _node(tree, "parameters")
    assert ex.alignment.tokens_of(params).tolist() == [2, 3, 4, 5, 6]
    assert ex.values[params] == pytest.approx(expected, abs=1e-12)
    assert ex.aggregate == how
    # single-token leaves take that token's probability whatever theta is
    assert ex.values[_node(tree, "identifier", "string")] == pytest.approx(0.4)
    assert ex.values[_node(tree, ")")] == pytest.approx(0.1)
    assert ex.values[_node(tree, ":")] == pytest.approx(0.1)  # "):" counts for ':' too
    # 'def' is covered only by token 0, which has no prediction: no value, not 0
    assert math.isnan(ex.values[_node(tree, "def")])
    assert ex.to_dict()["nodes"][_node(tree, "def")]["value"] is None


def test_fig2c_snippet_level_values():
    scores = _hand_scores(COUNT, COUNT_PIECES, COUNT_PROBS)
    ex = explain_scored({"name": "hand"}, scores, "python", "median")
    tree = ex.tree
    # identifiers: countChars 0.3, string 0.4, character 0.1 -> median 0.3
    assert ex.concept_values["identifier"] == pytest.approx(0.3)
    assert ex.category_values["Natural Language"] == pytest.approx(0.3)
    # Scope: return_statement (tokens 0.6, 0.2 -> 0.4), ')' 0.1, ':' 0.1 -> median 0.1
    assert ex.values[_node(tree, "return_statement")] == pytest.approx(0.4)
    assert ex.category_values["Scope"] == pytest.approx(0.1)
    assert ex.category_values["Types"] == pytest.approx(0.2)  # the integer 1
    assert ex.node_category[_node(tree, "identifier", "string")] == "Natural Language"
    assert ex.node_category[_node(tree, "parameters")] is None
    assert "def" not in ex.concept_values  # a type with no value is left out, not 0


def test_absent_category_is_nan_not_zero():
    scores = _hand_scores(COUNT, COUNT_PIECES, COUNT_PROBS)
    ex = explain_scored({"name": "hand"}, scores)
    assert set(ex.category_values) == set(load_categories("python").categories)
    for absent in ("Iteration", "Testing", "Exceptions", "Decision", "Data Structures"):
        assert math.isnan(ex.category_values[absent])
    assert ex.to_dict()["snippet"]["categories"]["Iteration"] is None
    json.dumps(ex.to_dict(), allow_nan=False)


# ---------------------------------------------------------------------------------------------- category maps


@pytest.mark.parametrize("language", ["python", "java"])
def test_shipped_category_maps(language):
    cmap = load_categories(language)
    assert cmap.language == language
    assert len(cmap.categories) == 10
    assert cmap.category_of("identifier") == "Natural Language"
    assert cmap.category_of(")") == "Scope"
    assert cmap.category_of("no_such_node_type") is None
    for cat in cmap.categories:
        assert all(cmap.category_of(t) == cat for t in cmap.types_of(cat))
    assert sum(len(cmap.types_of(c)) for c in cmap.categories) == len(cmap.type_to_category)
    assert set(cmap.causal_concepts) <= set(cmap.type_to_category)


def test_python_map_has_32_types():
    cmap = load_categories("python")
    assert len(cmap.type_to_category) == 32
    assert cmap.categories == ("Data Structures", "Decision", "Exceptions", "Functional Programming", "Iteration",
                               "Natural Language", "Operator", "Scope", "Testing", "Types")
    assert load_categories("java").categories == cmap.categories


def test_python_map_types_exist_in_grammar():
    # every mapped type should be producible by tree-sitter-python: parse a snippet that uses them all
    src = ("def f(a):\n    x = (1, 2.0)\n    d = {1: 2}\n    s = {1}\n    l = [i for i in a if i]\n    m = [1]\n"
           "    g = lambda y: -y\n    if a < 1 and a + 1:\n        pass\n    elif a:\n        pass\n"
           "    else:\n        pass\n    for i in a:\n        pass\n    while a:\n        break\n"
           "    try:\n        raise E\n    except E:\n        pass\n    finally:\n        pass\n"
           "    assert a  # c\n    return 's'\n")
    tree = parse(src)
    assert not tree.has_error
    missing = set(load_categories("python").type_to_category) - set(tree.type)
    assert not missing, missing


def test_mapping_with_duplicated_type(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text(json.dumps({"language": "python",
                                "categories": {"A": ["identifier", "string"], "B": ["identifier"]}}))
    with pytest.raises(InputError) as err:
        load_categories("python", path=path)
    assert "identifier" in str(err.value)


def test_mapping_with_invalid_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"categories": {"A": ["identifier",]')
    with pytest.raises(InputError) as err:
        load_categories("python", path=path)
    assert "JSON" in str(err.value)


def test_mapping_with_wrong_shape(tmp_path):
    path = tmp_path / "shape.json"
    path.write_text(json.dumps({"categories": {"A": "identifier"}}))
    with pytest.raises(InputError):
        load_categories("python", path=path)


@pytest.mark.parametrize("name,content", [
    ("top_list.json", "[]"),  # valid JSON, but not an object
    ("top_string.json", '"identifier"'),
    ("nested.json", json.dumps({"categories": {"A": [["identifier"]]}})),  # a node type that is a list
])
def test_mapping_that_is_json_but_not_a_mapping(tmp_path, name, content):
    # a user-edited file that cannot be used must give the one-line InputError, not a traceback
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError):
        load_categories("python", path=path)


def test_missing_mapping_file(tmp_path):
    with pytest.raises(InputError) as err:
        load_categories("python", path=tmp_path / "nowhere.json")
    assert "python" in str(err.value)  # lists the shipped mappings


def test_custom_mapping_is_used(tmp_path):
    path = tmp_path / "custom.json"
    path.write_text(json.dumps({"language": "python", "categories": {"Params": ["parameters"], "Names": ["identifier"]}}))
    cmap = load_categories("python", path=str(path))
    assert cmap.categories == ("Params", "Names")
    scores = _hand_scores(COUNT, COUNT_PIECES, COUNT_PROBS)
    ex = explain_scored({"name": "hand"}, scores, categories=cmap)
    assert ex.category_values["Params"] == pytest.approx(0.1)
    assert set(ex.category_values) == {"Params", "Names"}


# ---------------------------------------------------------------------------------------------- bootstrap


def _sample():
    return np.random.default_rng(123).gamma(2.0, 0.1, size=101)


def test_bootstrap_is_reproducible():
    v = _sample()
    assert bootstrap_median(v, seed=7) == bootstrap_median(v, seed=7)
    assert bootstrap_median(v, seed=7) != bootstrap_median(v, seed=8)


def test_bootstrap_interval_contains_sample_median():
    v = _sample()
    med, lo, hi, std = bootstrap_median(v, n_boot=500, seed=0)
    assert lo <= np.median(v) <= hi
    assert lo <= med <= hi
    assert std > 0
    assert lo < hi


def test_bootstrap_chunking_does_not_change_result():
    v = _sample()
    # same seed, same draws: the chunk size only changes how they are batched
    a = bootstrap_median(v, n_boot=200, seed=3)
    b = bootstrap_median(v, n_boot=200, seed=3, max_chunk=len(v) * 7)
    assert np.allclose(a, b)


def test_bootstrap_ignores_nan_and_handles_empty():
    v = _sample()
    with_nan = np.concatenate([v, [math.nan, math.nan]])
    assert bootstrap_median(with_nan, seed=1) == bootstrap_median(v, seed=1)
    for empty in (np.zeros(0), np.array([math.nan])):
        assert all(math.isnan(x) for x in bootstrap_median(empty))


def test_bootstrap_constant_input():
    med, lo, hi, std = bootstrap_median(np.full(10, 0.25), seed=0)
    assert (med, lo, hi, std) == (0.25, 0.25, 0.25, 0.0)


@pytest.mark.parametrize(("languages", "expected"), [
    (["python", "python"], "python"),
    (["python", "java", "python"], "java"),  # a mixed run: the first in sorted order, whatever the snippets' order
    (["java", None, math.nan, ""], "java"),  # a snippet without a language does not count
    ([], DEFAULT_LANGUAGE),
    ([None], DEFAULT_LANGUAGE),
])
def test_language_of_a_run_is_its_first_language_in_sorted_order(languages, expected):
    assert language_of(languages) == expected
    assert language_of(reversed(languages)) == expected  # any iterable, any order
