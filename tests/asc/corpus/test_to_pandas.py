"""Corpus results in pandas: ``RunData.to_pandas`` (a row per snippet with its category values, or one table),
``RunDigest.to_pandas`` (a row per categorized node), and ``asc.compare`` (Table I of several runs, as the Global
AsC-Eval page computes it), on two tiny-model runs of the same functions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import asc
from asc.concepts import GLOBAL, load_categories
from asc.corpus import load_run, run_corpus
from asc.corpus.runs import TABLES, load_digest
from asc.corpus.summary import summary_categories, summary_table, wide_table
from asc.errors import InputError
from tests.helpers import corpus_snippets

CATS = load_categories("python").categories


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    from tests.support.models import tiny_random_model

    root = tmp_path_factory.mktemp("pandas-runs")
    run_corpus(tiny_random_model(), corpus_snippets(5), root / "a", corpus="toy", progress=False, batch_size=2)
    other = dataclasses.replace(tiny_random_model(seed=1), name="tiny-seed1")
    run_corpus(other, corpus_snippets(5), root / "b", corpus="toy", progress=False)
    return load_run(root / "a"), load_run(root / "b")


def test_run_to_pandas_is_a_row_per_snippet_with_its_category_values(two_runs):
    run = two_runs[0]
    frame = run.to_pandas()
    assert len(frame) == len(run.snippets) == 5
    assert list(frame.columns) == [*run.snippets.columns, GLOBAL, *CATS]
    concepts = run.concepts[run.concepts["kind"].isin(("category", "global"))]
    assert concepts["value"].notna().all() and len(concepts) > len(frame)
    for row in concepts.itertuples():  # every snippet-level value in its cell, and nothing else filled in
        assert frame.loc[frame["id"] == row.snippet_id, row.name].item() == row.value
    assert int(frame[[GLOBAL, *CATS]].notna().sum().sum()) == len(concepts)


def test_run_to_pandas_gives_a_table_as_a_copy(two_runs):
    run = two_runs[0]
    for table in TABLES:
        frame = run.to_pandas(table)
        pd.testing.assert_frame_equal(frame, getattr(run, table))
        assert frame is not getattr(run, table)
    with pytest.raises(InputError, match="choose one of tokens, nodes, concepts, snippets"):
        run.to_pandas("edges")
    with pytest.raises(InputError, match="concepts table"):
        load_run(run.path, tables=("snippets",)).to_pandas()


def test_digest_to_pandas_is_a_row_per_categorized_node(two_runs):
    run = two_runs[0]
    digest = load_digest(run.path)
    frame = digest.to_pandas()
    assert list(frame.columns) == ["snippet", "category", "type", "value"]
    nodes = run.nodes[run.nodes["category"].notna() & run.nodes["value"].notna()]
    assert len(frame) == digest.n_nodes == len(nodes)
    key = ["category", "type", "value"]
    pd.testing.assert_frame_equal(frame[key].sort_values(key, ignore_index=True),
                                  nodes[key].astype({"category": object, "type": object})
                                  .sort_values(key, ignore_index=True), check_dtype=False)
    assert sorted(frame["snippet"].unique()) == list(range(len(run.snippets)))


def test_compare_is_the_global_pages_table_one(two_runs):
    paths = [run.path for run in two_runs]
    digests = [load_digest(p) for p in paths]
    page = wide_table(summary_table(digests, summary_categories(digests), n_boot=200, seed=3, method="snippet"))
    table = asc.compare(paths, n_boot=200, seed=3)
    pd.testing.assert_frame_equal(table, page)
    assert list(table["model"]) != [] and set(table["model"]) == {"tiny-random", "tiny-seed1"}
    pd.testing.assert_frame_equal(asc.compare(list(two_runs), n_boot=200, seed=3), page)  # loaded runs too
    pd.testing.assert_frame_equal(asc.compare(digests, n_boot=200, seed=3), page)
    long = asc.compare(paths, n_boot=200, seed=3, long=True)
    assert len(long) == 2 * (1 + len(CATS)) and np.isfinite(long["median"]).any()
    with pytest.raises(InputError, match="at least one run"):
        asc.compare([])
