"""asc.corpus.summary: Table I (bootstrapped medians per category), wide and difference tables, node types.

The ``runs`` fixture (tests/conftest.py) is the real SmolLM2 and the tiny model on the same 5 HumanEval
problems; ``category_table`` is also checked on tiny-model runs.
"""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from asc.concepts import GLOBAL, bootstrap_median, load_categories
from asc.corpus import category_table, load_run, run_corpus
from asc.corpus.summary import difference_table, summary_table, type_table, wide_table
from asc.errors import InputError
from tests.helpers import corpus_snippets

CATS = load_categories("python").categories


@pytest.mark.real
def test_summary_matches_bootstrap_of_node_values(runs):
    smol, _ = runs
    summary = summary_table([smol], CATS, n_boot=300, seed=5)
    assert list(summary["category"]) == [GLOBAL, *CATS]
    nodes = smol.nodes[smol.nodes["value"].notna() & smol.nodes["category"].notna()]
    scope = nodes[nodes["category"] == "Scope"]["value"].to_numpy()
    row = summary.set_index("category").loc["Scope"]
    med, lo, hi, _ = bootstrap_median(scope, n_boot=300, seed=5)
    assert (row["median"], row["ci_low"], row["ci_high"]) == (med, lo, hi)
    assert row["n_nodes"] == len(scope) and row["n_snippets"] == 5
    pd.testing.assert_frame_equal(summary, summary_table([smol], CATS, n_boot=300, seed=5))  # seeded
    assert not summary.equals(summary_table([smol], CATS, n_boot=300, seed=6))
    assert np.isnan(summary.set_index("category").loc["Exceptions", "median"])  # absent, not 0


@pytest.mark.real
def test_wide_table_sorted_by_global(runs):
    wide = wide_table(summary_table(list(runs), CATS, n_boot=100))
    assert list(wide["model"]) == ["smollm2-135m", "tiny-random"]  # a real model beats random weights
    assert list(wide.columns[:4]) == ["model", "corpus", "snippets", GLOBAL] and "Exceptions" in wide.columns
    assert wide[GLOBAL].is_monotonic_decreasing


@pytest.mark.real
def test_difference_with_itself_is_zero_and_antisymmetric(runs):
    smol, tiny = runs
    for level in ("category", "type"):
        same = difference_table(smol, smol, level)
        assert (same["difference"].dropna() == 0).all() and len(same.dropna(subset=["difference"]))
        ab, ba = difference_table(smol, tiny, level), difference_table(tiny, smol, level)
        key = ["category"] if level == "category" else ["category", "type"]
        merged = ab.merge(ba, on=key)
        np.testing.assert_allclose(merged["difference_x"], -merged["difference_y"])
    cat = difference_table(smol, tiny, "category").set_index("category")
    nodes = smol.nodes[smol.nodes["value"].notna() & (smol.nodes["category"] == "Scope")]
    assert cat.loc["Scope", "median_a"] == pytest.approx(nodes["value"].median())
    with pytest.raises(InputError):
        difference_table(smol, tiny, "nope")


@pytest.mark.real
def test_type_table_counts_every_categorized_node(runs):
    smol, _ = runs
    types = type_table(smol)
    valued = smol.nodes[smol.nodes["value"].notna() & smol.nodes["category"].notna()]
    assert types["nodes"].sum() == len(valued)
    np.testing.assert_allclose(types.groupby("category")["share"].sum(), 1.0)
    ident = types[types["type"] == "identifier"].iloc[0]
    assert ident["category"] == "Natural Language"
    assert ident["median"] == pytest.approx(valued[valued["type"] == "identifier"]["value"].median())


@pytest.mark.real
def test_difference_by_category_lists_global_first(runs):
    smol, tiny = runs
    table = difference_table(smol, tiny, "category")
    assert table["category"].iloc[0] == GLOBAL
    assert list(table["category"].iloc[1:]) == sorted(table["category"].iloc[1:])


def test_category_table_is_seeded_and_counts_nodes(tiny, tmp_path):
    run_corpus(tiny, corpus_snippets(6), tmp_path / "run", progress=False)
    run = load_run(tmp_path / "run")
    cats = load_categories("python").categories
    t1 = category_table(run.nodes, cats, n_boot=200, seed=3)
    t2 = category_table(run.nodes, cats, n_boot=200, seed=3)
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
    from asc.models import tiny_random_model

    root = tmp_path_factory.mktemp("tiny-runs")
    run_corpus(tiny_random_model(), corpus_snippets(6), root / "s0", corpus="toy", progress=False)
    other = dataclasses.replace(tiny_random_model(seed=1), name="tiny-seed1")
    run_corpus(other, corpus_snippets(6), root / "s1", corpus="toy", progress=False)
    return load_run(root / "s0"), load_run(root / "s1")


def test_tables_on_tiny_runs(tiny_runs):
    a, b = tiny_runs
    summary = summary_table([a, b], CATS, n_boot=100, seed=1)
    assert list(summary[summary["model"] == "tiny-random"]["category"]) == [GLOBAL, *CATS]
    scope = a.nodes[(a.nodes["category"] == "Scope") & a.nodes["value"].notna()]["value"].to_numpy()
    row = summary[(summary["model"] == "tiny-random")].set_index("category").loc["Scope"]
    assert (row["median"], row["ci_low"], row["ci_high"]) == bootstrap_median(scope, n_boot=100, seed=1)[:3]
    wide = wide_table(summary)
    assert sorted(wide["model"]) == ["tiny-random", "tiny-seed1"] and wide[GLOBAL].is_monotonic_decreasing
    for level, key in (("category", ["category"]), ("type", ["category", "type"])):
        same = difference_table(a, a, level)
        assert (same["difference"].dropna() == 0).all() and same["difference"].notna().any()
        merged = difference_table(a, b, level).merge(difference_table(b, a, level), on=key)
        assert len(merged) and np.allclose(merged["difference_x"], -merged["difference_y"], equal_nan=True)
    types = type_table(a)
    valued = a.nodes[a.nodes["value"].notna() & a.nodes["category"].notna()]
    assert types["nodes"].sum() == len(valued)
    np.testing.assert_allclose(types.groupby("category")["share"].sum(), 1.0)
