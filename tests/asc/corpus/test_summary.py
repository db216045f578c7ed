"""asc.corpus.summary: Table I (bootstrapped medians per category), wide and difference tables, node types,
box statistics, all from run digests, checked against exact computations on the runs' node tables.

The ``runs`` fixture (tests/conftest.py) is the real SmolLM2 and the tiny model on the same 5 HumanEval
problems; ``category_table`` is also checked on tiny-model runs. Medians are within half a bin (0.5e-4) of
the exact ones; counts are exact.
"""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from asc.concepts import GLOBAL, bootstrap_median, load_categories
from asc.corpus import category_table, load_run, run_corpus
from asc.corpus.runs import load_digest
from asc.corpus.summary import box_table, difference_table, summary_table, type_table, wide_table
from asc.errors import InputError
from tests.helpers import corpus_snippets

CATS = load_categories("python").categories
BOUND = 0.5e-4 + 1e-12


def digests(runs):
    return [load_digest(r.path) for r in runs]


@pytest.mark.real
def test_summary_matches_bootstrap_of_node_values(runs):
    smol, _ = runs
    (digest,) = digests([smol])
    summary = summary_table([digest], CATS, n_boot=2000, seed=5, method="node")
    assert list(summary["category"]) == [GLOBAL, *CATS]
    nodes = smol.nodes[smol.nodes["value"].notna() & smol.nodes["category"].notna()]
    for name in ("Scope", "Natural Language", GLOBAL):
        values = (nodes if name == GLOBAL else nodes[nodes["category"] == name])["value"].to_numpy()
        row = summary.set_index("category").loc[name]
        med, lo, hi, std = bootstrap_median(values, n_boot=2000, seed=5)
        # the paper's node bootstrap, resampled on raw values: equal to Monte-Carlo error (and half a bin)
        tol = max(4 * std, 0.005)
        assert abs(row["median"] - med) <= tol and abs(row["ci_low"] - lo) <= tol and abs(row["ci_high"] - hi) <= tol
        assert (row["median"] >= 0.6) == (med >= 0.6)  # same verdict against the paper's line
        assert row["n_nodes"] == len(values)
    assert summary.set_index("category").loc["Scope", "n_snippets"] == 5
    pd.testing.assert_frame_equal(summary, summary_table([digest], CATS, n_boot=2000, seed=5, method="node"))
    assert not summary.equals(summary_table([digest], CATS, n_boot=2000, seed=6, method="node"))
    assert np.isnan(summary.set_index("category").loc["Exceptions", "median"])  # absent, not 0
    clustered = summary_table([digest], CATS, n_boot=300, seed=5).set_index("category")  # snippets: the default
    assert (clustered["ci_high"] - clustered["ci_low"]).loc["Scope"] >= 0
    assert list(clustered["n_nodes"]) == list(summary["n_nodes"])


@pytest.mark.real
def test_wide_table_sorted_by_global(runs):
    wide = wide_table(summary_table(digests(runs), CATS, n_boot=100))
    assert list(wide["model"]) == ["smollm2-135m", "tiny-random"]  # a real model beats random weights
    assert list(wide.columns[:4]) == ["model", "corpus", "snippets", GLOBAL] and "Exceptions" in wide.columns
    assert wide[GLOBAL].is_monotonic_decreasing


@pytest.mark.real
def test_difference_with_itself_is_zero_and_antisymmetric(runs):
    smol_run, _ = runs
    smol, tiny = digests(runs)
    for level in ("category", "type"):
        same = difference_table(smol, smol, level)
        assert (same["difference"].dropna() == 0).all() and len(same.dropna(subset=["difference"]))
        ab, ba = difference_table(smol, tiny, level), difference_table(tiny, smol, level)
        key = ["category"] if level == "category" else ["category", "type"]
        merged = ab.merge(ba, on=key)
        np.testing.assert_allclose(merged["difference_x"], -merged["difference_y"])
    cat = difference_table(smol, tiny, "category").set_index("category")
    nodes = smol_run.nodes[smol_run.nodes["value"].notna() & (smol_run.nodes["category"] == "Scope")]
    assert abs(cat.loc["Scope", "median_a"] - nodes["value"].median()) <= BOUND
    with pytest.raises(InputError):
        difference_table(smol, tiny, "nope")


@pytest.mark.real
def test_type_table_counts_every_categorized_node(runs):
    smol, _ = runs
    types = type_table(load_digest(smol.path))
    valued = smol.nodes[smol.nodes["value"].notna() & smol.nodes["category"].notna()]
    assert types["nodes"].sum() == len(valued)
    np.testing.assert_allclose(types.groupby("category")["share"].sum(), 1.0)
    exact = valued.groupby("type")["value"].agg(["median", "mean", "size"])
    exact["snippets"] = valued.groupby("type")["snippet_id"].nunique()
    got = types.set_index("type")
    assert np.abs(got["median"] - exact["median"].reindex(got.index)).max() <= BOUND
    np.testing.assert_allclose(got["mean"], exact["mean"].reindex(got.index))
    assert (got["snippets"] == exact["snippets"].reindex(got.index)).all()
    assert got.loc["identifier", "category"] == "Natural Language"


@pytest.mark.real
def test_difference_by_category_lists_global_first(runs):
    table = difference_table(*digests(runs), "category")
    assert table["category"].iloc[0] == GLOBAL
    assert list(table["category"].iloc[1:]) == sorted(table["category"].iloc[1:])


def test_category_table_is_seeded_and_counts_nodes(tiny, tmp_path):
    run_corpus(tiny, corpus_snippets(6), tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    cats = load_categories("python").categories
    t1 = category_table(load_digest(run.path), cats, n_boot=200, seed=3)
    t2 = category_table(load_digest(run.path), cats, n_boot=200, seed=3)
    pd.testing.assert_frame_equal(t1, t2)
    assert list(t1["category"]) == [GLOBAL, *cats]
    row = t1.set_index("category").loc["Iteration"]
    valued = run.nodes[(run.nodes["category"] == "Iteration") & run.nodes["value"].notna()]
    assert row["n_nodes"] == len(valued) and row["n_snippets"] == 3
    assert row["ci_low"] <= row["median"] <= row["ci_high"]
    assert np.isnan(t1.set_index("category").loc["Testing", "median"])  # no assert statements: missing


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """Two different random models (seeds 0 and 1) on the same 6 small functions: fast stand-ins for ``runs``."""
    from tests.support.models import tiny_random_model

    root = tmp_path_factory.mktemp("tiny-runs")
    run_corpus(tiny_random_model(), corpus_snippets(6), root / "s0", corpus="toy", progress=False)
    other = dataclasses.replace(tiny_random_model(seed=1), name="tiny-seed1")
    run_corpus(other, corpus_snippets(6), root / "s1", corpus="toy", progress=False)
    return load_run(root / "s0"), load_run(root / "s1")


def test_box_table_matches_numpy_quantiles(tiny_runs):
    a, _ = tiny_runs
    boxes = box_table([load_digest(a.path)], "Scope").iloc[0]
    values = a.nodes[(a.nodes["category"] == "Scope") & a.nodes["value"].notna()]["value"].to_numpy()
    q1, med, q3 = np.quantile(values, [0.25, 0.5, 0.75])
    assert boxes["n"] == len(values) and boxes["mean"] == pytest.approx(values.mean())
    for name, exact in (("q1", q1), ("median", med), ("q3", q3), ("min", values.min()), ("max", values.max())):
        assert abs(boxes[name] - exact) <= BOUND, name
    inside = values[(values >= q1 - 1.5 * (q3 - q1)) & (values <= q3 + 1.5 * (q3 - q1))]
    assert abs(boxes["lowerfence"] - inside.min()) <= 3 * BOUND and abs(boxes["upperfence"] - inside.max()) <= 3 * BOUND
    assert box_table([load_digest(a.path)], "Testing").iloc[0]["n"] == 0  # absent: an empty box, not an error


def test_tables_on_tiny_runs(tiny_runs):
    run_a, run_b = tiny_runs
    a, b = digests(tiny_runs)
    summary = summary_table([a, b], CATS, n_boot=100, seed=1)
    assert list(summary[summary["model"] == "tiny-random"]["category"]) == [GLOBAL, *CATS]
    scope = run_a.nodes[(run_a.nodes["category"] == "Scope") & run_a.nodes["value"].notna()]
    row = summary[(summary["model"] == "tiny-random")].set_index("category").loc["Scope"]
    assert row["ci_low"] - BOUND <= scope["value"].median() <= row["ci_high"] + BOUND
    assert row["n_nodes"] == len(scope) and row["n_snippets"] == scope["snippet_id"].nunique()
    wide = wide_table(summary)
    assert sorted(wide["model"]) == ["tiny-random", "tiny-seed1"] and wide[GLOBAL].is_monotonic_decreasing
    for level, key in (("category", ["category"]), ("type", ["category", "type"])):
        same = difference_table(a, a, level)
        assert (same["difference"].dropna() == 0).all() and same["difference"].notna().any()
        merged = difference_table(a, b, level).merge(difference_table(b, a, level), on=key)
        assert len(merged) and np.allclose(merged["difference_x"], -merged["difference_y"], equal_nan=True)
    types = type_table(a)
    valued = run_a.nodes[run_a.nodes["value"].notna() & run_a.nodes["category"].notna()]
    assert types["nodes"].sum() == len(valued)
    np.testing.assert_allclose(types.groupby("category")["share"].sum(), 1.0)
