"""Corpus runs: Parquet layout, resume, cut chunks, settings guard, Table-I summary."""

import json

import numpy as np
import pandas as pd
import pytest

from asc.align import AlignOptions
from asc.concepts import GLOBAL, load_categories
from asc.corpus import category_table, load_run, run_corpus
from asc.corpus.sources import Snippet
from asc.errors import CorpusError
from asc.explain import explain

CODE = [
    "def f{i}(x):\n    if x > {i}:\n        return [x, {i}]\n    return x\n",
    "def g{i}(a, b):\n    for k in range(a):\n        b = b + k * {i}\n    return b\n",
]


def _snippets(n):
    return [Snippet(id=f"s{i}", source=CODE[i % 2].format(i=i), name=f"f{i}") for i in range(n)]


def test_run_writes_tables_that_match_explain(tiny, tmp_path):
    snips = _snippets(5)
    run_corpus(tiny, snips, tmp_path / "run", corpus="test", batch_size=2, progress=False)
    run = load_run(tmp_path / "run")
    assert list(run.snippets["id"]) == [s.id for s in snips]
    assert run.meta["settings"]["model"]["name"] == "tiny-random"
    # the batched run gives the same numbers as explaining one snippet alone
    ex = explain(tiny, snips[3].source)
    nodes = run.nodes[run.nodes["snippet_id"] == "s3"]
    np.testing.assert_allclose(nodes["value"].to_numpy(), ex.values, atol=1e-6, equal_nan=True)
    toks = run.tokens[run.tokens["snippet_id"] == "s3"]
    np.testing.assert_allclose(toks["prob"].to_numpy(), ex.scores.prob, atol=1e-6, equal_nan=True)
    assert run.snippets.set_index("id").loc["s3", "loss"] == pytest.approx(ex.loss, abs=1e-6)
    # absent concepts have no row (missing, not 0); present ones match the snippet's values
    conc = run.concepts[run.concepts["snippet_id"] == "s3"]
    cats = conc[conc["kind"] == "category"].set_index("name")["value"]
    assert "Exceptions" not in cats.index
    for name, value in ex.category_values.items():
        if not np.isnan(value):
            assert cats[name] == pytest.approx(value)
    assert (conc["kind"] == "global").sum() == 1


def test_resume_skips_done_snippets_and_cleans_cut_chunks(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, _snippets(4), out, batch_size=2, progress=False)
    # simulate a chunk cut after its token part was written but before its snippets part
    pd.DataFrame({"snippet_id": ["ghost"]}).to_parquet(out / "tokens" / "part-00009.parquet")
    calls = []
    run_corpus(tiny, _snippets(7), out, batch_size=2, progress=False, on_progress=lambda d, t: calls.append((d, t)))
    run = load_run(out)
    assert sorted(run.snippets["id"]) == sorted(f"s{i}" for i in range(7))
    assert run.snippets["id"].is_unique
    assert "ghost" not in set(run.tokens["snippet_id"])
    assert calls == [(6, 7), (7, 7)]  # only the 3 new snippets were scored


def test_other_settings_are_refused(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, _snippets(2), out, progress=False)
    with pytest.raises(CorpusError, match="other settings"):
        run_corpus(tiny, _snippets(2), out, aggregate="mean", progress=False)
    with pytest.raises(CorpusError, match="other settings"):
        run_corpus(tiny, _snippets(2), out, options=AlignOptions(whitespace="skip"), progress=False)


def test_load_run_requires_meta(tmp_path):
    with pytest.raises(CorpusError, match="meta.json"):
        load_run(tmp_path)


def test_category_table_is_seeded_and_counts_nodes(tiny, tmp_path):
    run_corpus(tiny, _snippets(6), tmp_path / "run", progress=False)
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


def test_meta_is_json(tiny, tmp_path):
    run_corpus(tiny, _snippets(1), tmp_path / "r", corpus="x", progress=False)
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["settings"]["corpus"] == "x" and "finished" in meta
