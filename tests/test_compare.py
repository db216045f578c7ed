"""Corpus comparisons (Table I, differences, node types), snippet comparison, background jobs, CLI compare.

The run fixtures come from the real SmolLM2 on a handful of HumanEval problems (and the tiny model
for a second, different model).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from asc import explain, load_categories, load_run
from asc.concepts import GLOBAL, bootstrap_median
from asc.corpus.jobs import JobQueue, run_folder
from asc.corpus.summary import difference_table, summary_table, type_table, wide_table
from asc.errors import InputError
from asc.explain import compare_snippet
from asc.viz import category_bars, concept_treemap, difference_bars, styled_table, value_distribution

ROOT = Path(__file__).resolve().parent.parent
CATS = load_categories("python").categories


@pytest.fixture(scope="module")
def runs(runs_dir):
    """SmolLM2 and the tiny model on the same 5 HumanEval problems (conftest.runs_dir)."""
    return load_run(runs_dir / "smol"), load_run(runs_dir / "tiny")


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
def test_corpus_figures_show_the_tables(runs):
    smol, tiny = runs
    summary = summary_table(list(runs), CATS, n_boot=100)
    bars = category_bars(summary, 0.6)
    first = summary[summary["model"] == "smollm2-135m"]
    np.testing.assert_allclose(np.array(bars.data[0].y, dtype=float), first["median"].to_numpy(), equal_nan=True)
    assert len(bars.data) == 2 and any(s.y0 == 0.6 for s in bars.layout.shapes)
    dist = value_distribution({"smol": smol.nodes, "tiny": tiny.nodes}, "Scope")
    scope = smol.nodes[(smol.nodes["category"] == "Scope") & smol.nodes["value"].notna()]["value"]
    np.testing.assert_allclose(np.sort(np.asarray(dist.data[0].y, dtype=float)), np.sort(scope.to_numpy()))
    tree = concept_treemap(type_table(smol))
    assert tree.data[0].values[0] == type_table(smol)["nodes"].sum()
    diff = difference_table(smol, tiny, "type")
    assert len(difference_bars(diff, "type").data[0].x) == min(30, diff["difference"].notna().sum())
    html = styled_table(wide_table(summary), 0.6).to_html()
    assert "background-color" in html and "absent" in html


def test_compare_snippet_on_shared_tree(tiny):
    src = "def f(x):\n    return [x, x + 1]\n"
    ex = explain(tiny, src)
    comp = compare_snippet([ex, ex], ["a", "b"])
    assert comp.values.shape == (2, ex.tree.n_nodes)
    assert np.nansum(np.abs(comp.difference())) == 0
    assert (comp.disagreements()["difference"] == 0).all()
    with pytest.raises(InputError, match="same text"):
        compare_snippet([ex, explain(tiny, src + "\n# other\n")])
    with pytest.raises(InputError, match="two models"):
        compare_snippet([ex])
    assert compare_snippet([ex, ex]).models == ("tiny-random (1)", "tiny-random (2)")


def test_job_queue_runs_in_background_and_resumes(tmp_path, monkeypatch):
    from asc import tiny_random_model

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    return x + {i}\n"})
                                for i in range(6)))
    queue = JobQueue(lambda spec: tiny_random_model())
    job = queue.submit("tiny-random", str(corpus), None, tmp_path / "runs", batch_size=2)
    assert queue.wait(120) and job.status == "done" and job.done == job.total == 6
    assert job.out == run_folder(tmp_path / "runs", "tiny-random", str(corpus), None)
    assert len(load_run(job.out).snippets) == 6
    bad = queue.submit("tiny-random", str(tmp_path / "missing-corpus"), None, tmp_path / "runs")
    assert queue.wait(60) and bad.status == "failed" and "unknown corpus" in bad.error
    cancelled = queue.submit("tiny-random", str(corpus), 3, tmp_path / "runs")
    cancelled.cancel.set()
    assert queue.wait(60) and cancelled.status == "cancelled"


@pytest.mark.real
def test_cli_compare_prints_and_writes(runs, tmp_path):
    smol, tiny = runs
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "asc", "compare", str(tiny.path), str(smol.path), "--n-boot", "100",
                          "--out", str(tmp_path / "t.csv")], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    first_row = next(i for i, line in enumerate(lines) if line.strip().startswith(("smollm2", "tiny")))
    assert lines[first_row].strip().startswith("smollm2-135m")  # sorted by the global value
    assert "tiny-random minus smollm2-135m" in out.stdout
    written = pd.read_csv(tmp_path / "t.csv")
    expected = summary_table([tiny, smol], CATS, n_boot=100)
    np.testing.assert_allclose(written["median"], expected["median"], equal_nan=True)
    bad = subprocess.run([sys.executable, "-m", "asc", "compare", str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert bad.returncode == 2 and "meta.json" in bad.stderr


@pytest.mark.real
def test_difference_by_category_lists_global_first(runs):
    smol, tiny = runs
    table = difference_table(smol, tiny, "category")
    assert table["category"].iloc[0] == GLOBAL
    assert list(table["category"].iloc[1:]) == sorted(table["category"].iloc[1:])
