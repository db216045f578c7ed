"""asc.causal: synthetic recovery, refuters, complexity, missing treatments, a real run and its CLI table.

The Causal page is tested in tests/pages/test_causal.py."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from asc import load_categories, load_run
from asc.causal import (
    CONFOUNDERS,
    MIN_REFUTE_SAMPLE,
    REFUTE_SAMPLE,
    CausalResult,
    causal_graph,
    causal_table,
    estimate,
    run_causal,
    run_treatments,
    snippet_table,
    treatments_of,
)
from asc.cli import build_parser, main
from asc.concepts import GLOBAL
from asc.corpus.runs import RunData
from asc.errors import InputError
from tests.helpers import corpus_snippets

TRUE_EFFECT = -2.0


def _synthetic(n=400, seed=0):
    """T and Y share the confounders; Y = -2 T + confounding + noise."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4))
    t = 0.5 + 0.1 * (z @ np.array([0.8, -0.5, 0.6, 0.3])) + 0.05 * rng.normal(size=n)
    y = TRUE_EFFECT * t + z @ np.array([0.9, 0.7, -0.6, 0.8]) + 0.1 * rng.normal(size=n)
    data = pd.DataFrame(z, columns=list(CONFOUNDERS))
    data["T"], data["loss"] = t, y
    return data


@pytest.mark.slow
def test_recovers_known_effect_where_naive_slope_is_biased():
    data = _synthetic()
    res = estimate(data, "T", simulations=30)
    assert res["ci_low"] <= TRUE_EFFECT <= res["ci_high"]
    naive = np.polyfit(data["T"], data["loss"], 1)[0]
    assert not res["ci_low"] <= naive <= res["ci_high"]  # confounding biases the correlation
    assert abs(res["placebo_effect"]) < 0.1 * abs(TRUE_EFFECT) and res["placebo"].startswith("passed")
    assert res["random_cause"].startswith("passed") and res["subset"].startswith("passed")
    assert res["n"] == len(data)


def test_shuffled_treatment_has_no_effect():
    data = _synthetic()
    data["T"] = np.random.default_rng(1).permutation(data["T"].to_numpy())
    res = estimate(data, "T", refute=False)
    assert res["ci_low"] <= 0 <= res["ci_high"]


def test_causal_graph_is_the_backdoor_model():
    g = causal_graph()
    assert set(g.predecessors("T")) == set(CONFOUNDERS)
    assert set(g.predecessors("Y")) == set(CONFOUNDERS) | {"T"}


def test_cyclomatic_complexity_on_known_functions():
    from asc.complexity import complexity_of_source as cyclomatic_complexity  # the confounder's values

    assert cyclomatic_complexity("def f(x):\n    return x\n") == 1
    branches = "def f(x):\n    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n    for i in x:\n        pass\n    return 0\n"
    assert cyclomatic_complexity(branches) == 4
    assert cyclomatic_complexity("int f(int a) { if (a > 0) { return 1; } return 0; }", "java") == 2
    assert np.isnan(cyclomatic_complexity("x = 1\n"))


@pytest.mark.real
def test_snippet_table_keeps_absent_concepts_missing(runs_dir):
    run = load_run(runs_dir / "smol")
    table = snippet_table(run)
    assert len(table) == len(run.snippets)
    assert set(CONFOUNDERS) | {"loss", GLOBAL} <= set(table.columns)
    assert (table["seq_size"].to_numpy() == run.snippets.set_index("id").loc[table.index, "n_tokens"]).all()
    # 3 of the 5 problems have a for loop: the other 2 have no value for it (missing), not 0
    assert table["type: for_statement"].notna().sum() == 3 and table["type: for_statement"].isna().sum() == 2
    # none of them has a while loop or an assert statement: no column at all, rather than a column of zeros
    assert "type: while_statement" not in table and "category: Testing" not in table
    assert not (table.drop(columns=["loss", *CONFOUNDERS]) == 0).any().any()  # never coded as 0


def test_too_few_snippets_is_not_enough_data():
    data = _synthetic(n=20)
    res = causal_table(data, ["T", "absent"], min_snippets=30)
    assert res.set_index("treatment").loc["T", "status"].startswith("not enough data (20 snippets")
    assert res.set_index("treatment").loc["absent", "status"].startswith("not enough data")
    assert "ate" not in res.columns  # nothing estimated: no effect columns at all (not zeros)


def test_progress_counts_every_treatment_absent_ones_too():
    """Regression: an absent treatment used to `continue` past on_progress, so the bar never reached its end."""
    seen = []
    causal_table(_synthetic(n=20), ["absent", "T", "also_absent"], min_snippets=30,
                 on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.real
def test_real_run_global_value_lowers_the_loss(humaneval30, tmp_path, capsys):
    """SmolLM2 on the first 30 HumanEval problems (tests/conftest.py), the estimate's minimum: enough for the global
    effect, whose 95% interval ends well below zero there (about -0.65; about -0.35 on the first 40). The Global row alone is computed here (each row of the table
    is computed on its own, with the same seed); the CLI computes the same row with ``--treatments Global`` (worker
    processes give the same table: test_worker_processes_give_the_same_table; the whole table comes from the causal
    demo's test, tests/pages/test_demos.py). The CLI runs in this process (its ``main``, as ``python -m asc`` calls
    it): the claim is the table it writes, and a subprocess would import pandas, dowhy and the rest again
    (tests/asc/test_real_models.py runs ``python -m asc`` as a process)."""
    table = snippet_table(load_run(humaneval30))
    assert GLOBAL in treatments_of(load_categories("python"))
    res = causal_table(table, [GLOBAL], simulations=20).set_index("treatment")
    glob = res.loc[GLOBAL]
    assert glob["n"] == 30 and glob["status"] == "estimated"
    assert glob["ate"] < 0 and glob["ci_high"] < 0 and glob["r_loss"] < 0  # as in the paper
    assert glob["placebo"].startswith("passed")
    # the CLI writes the same table
    capsys.readouterr()
    code = main(["causal", str(humaneval30), "--out", str(tmp_path / "c.json"), "--simulations", "20", "--quiet",
                 "--jobs", "1", "--treatments", GLOBAL])
    out = capsys.readouterr()
    assert code == 0, out.err
    written = pd.DataFrame(json.loads((tmp_path / "c.json").read_text())).set_index("treatment")
    assert list(written.index) == [GLOBAL]
    assert written.loc[GLOBAL, "ate"] == pytest.approx(glob["ate"])
    assert written.loc[GLOBAL, "placebo_effect"] == pytest.approx(glob["placebo_effect"])
    assert "Global" in out.out


# ------------------------------------------------------------------------------------ scale: subsample and workers

REFUTED = ["placebo_effect", "placebo_p", "placebo", "random_cause_effect", "random_cause_p", "random_cause",
           "subset_effect", "subset_p", "subset"]


def test_data_smaller_than_the_subsample_is_refuted_whole_as_before():
    data = _synthetic(n=300)
    whole = estimate(data, "T", simulations=10, refute_sample=None)
    same = estimate(data, "T", simulations=10, refute_sample=300)
    assert same == whole  # every key, refuter effects and verdicts included
    assert whole["refute_n"] == whole["n"] == 300 and whole["refute_ate"] == whole["ate"]


def test_refuters_run_on_the_documented_seeded_subsample():
    data = _synthetic(n=1000)
    res = estimate(data, "T", simulations=10, refute_sample=200, seed=3)
    full = estimate(data, "T", refute=False)
    assert res["n"] == 1000 and res["refute_n"] == 200
    assert (res["ate"], res["ci_low"], res["ci_high"]) == (full["ate"], full["ci_low"], full["ci_high"])  # all rows
    # the subsample: 200 rows drawn without replacement by default_rng(seed), in their original order
    rows = np.sort(np.random.default_rng(3).choice(1000, size=200, replace=False))
    assert res["refute_ate"] == pytest.approx(estimate(data.iloc[rows], "T", refute=False)["ate"])
    assert res["refute_ate"] != res["ate"]
    assert res["placebo"].startswith("passed") and abs(res["placebo_effect"]) < 0.5
    assert estimate(data, "T", simulations=10, refute_sample=200, seed=3) == res  # seeded: the same again
    assert estimate(data, "T", simulations=10, refute_sample=200, seed=4)["refute_ate"] != res["refute_ate"]


@pytest.mark.parametrize("bad", [MIN_REFUTE_SAMPLE - 1, 0, -5, True, 2.5, "1000"])
def test_a_subsample_below_the_minimum_names_the_fix(bad):
    with pytest.raises(InputError, match=f"at least {MIN_REFUTE_SAMPLE} snippets, or None for every row \\(--refute-sample all\\)"):
        estimate(_synthetic(n=50), "T", refute_sample=bad)
    with pytest.raises(InputError, match=f"at least {MIN_REFUTE_SAMPLE}"):
        causal_table(_synthetic(n=50), ["T"], refute_sample=bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_jobs_must_be_a_positive_count(bad):
    with pytest.raises(InputError, match="jobs must be a whole number of at least 1"):
        causal_table(_synthetic(n=50), ["T"], jobs=bad)


@pytest.mark.slow
def test_worker_processes_give_the_same_table():
    data = _synthetic(n=400)
    data["T2"] = data["T"] * 0.5 + np.random.default_rng(5).normal(size=len(data)) * 0.01
    data["T3"] = np.where(np.arange(len(data)) % 2 == 0, data["T"], np.nan)
    treatments = ["T", "absent", "T2", "T3"]
    seen: list[tuple[int, int]] = []
    serial = causal_table(data, treatments, simulations=5, refute_sample=150)
    parallel = causal_table(data, treatments, simulations=5, refute_sample=150, jobs=2,
                            on_progress=lambda d, t: seen.append((d, t)))
    pd.testing.assert_frame_equal(serial, parallel)
    assert (parallel["status"] == "estimated").sum() == 3 and (parallel["refute_n"].dropna() == 150).all()
    assert sorted(seen) == [(k, 4) for k in range(1, 5)]


def _run(snippets: pd.DataFrame, concepts: pd.DataFrame) -> RunData:
    return RunData(path=Path("."), meta={}, snippets=snippets, tokens=pd.DataFrame(), nodes=pd.DataFrame(),
                   concepts=concepts)


SOURCES = ["def f(x):\n    if x and x > 1:\n        return 1\n    return 0\n",  # 3
           "def g(x):\n    return [a for a in x if a]\n",  # 3
           "int h(int a) { return a > 0 ? 1 : 0; }"]  # 2 (java)


def _snippets(**extra) -> pd.DataFrame:
    return pd.DataFrame({"id": ["a", "b", "c"], "language": ["python", "python", "java"], "loss": [1.0, 2.0, 3.0],
                         "n_tokens": [10, 20, 30], "n_nodes": [5, 6, 7], "ast_levels": [3, 4, 5], "source": SOURCES,
                         **extra})


CONCEPTS = pd.DataFrame({"snippet_id": ["a", "a", "b", "c", "zz"], "kind": ["type", "global", "global", "category", "type"],
                         "name": ["if_statement", GLOBAL, GLOBAL, "Decision", "if_statement"],
                         "value": [0.5, 0.7, 0.6, 0.4, 0.9], "n_nodes": [1, 5, 6, 2, 1]})


def test_snippet_table_computes_complexity_like_lizard_without_the_column():
    table = snippet_table(_run(_snippets(), CONCEPTS))
    assert table["complexity"].tolist() == [3.0, 3.0, 2.0]
    assert table.loc["a", "type: if_statement"] == 0.5 and np.isnan(table.loc["b", "type: if_statement"])
    assert table.loc["c", "category: Decision"] == 0.4 and table[GLOBAL].tolist()[:2] == [0.7, 0.6]
    assert "zz" not in table.index  # concepts of a snippet the table does not have are left out


def test_snippet_table_reads_the_runs_complexity_column_and_fills_its_gaps(monkeypatch):
    import asc.causal as causal

    asked = []
    real = causal.complexity_column
    monkeypatch.setattr(causal, "complexity_column", lambda s, lang: asked.append(list(s)) or real(s, lang))
    table = snippet_table(_run(_snippets(complexity=[11.0, np.nan, 13.0]), CONCEPTS))
    assert table["complexity"].tolist() == [11.0, 3.0, 13.0]  # the stored values, not recomputed
    assert asked == [[SOURCES[1]]]  # only the missing one is computed


def test_wide_table_equals_pivot_table():
    """The fast pivot equals pandas' pivot_table(aggfunc="first"): duplicates, NaN values, many snippets."""
    rng = np.random.default_rng(0)
    n = 3000
    concepts = pd.DataFrame({"snippet_id": rng.choice([f"s{i}" for i in range(300)], n),
                             "kind": rng.choice(["type", "category", "global"], n),
                             "name": rng.choice(["if_statement", "Decision", "x", GLOBAL], n),
                             "value": np.where(rng.random(n) < 0.1, np.nan, rng.random(n)), "n_nodes": 1})
    concepts.loc[concepts["name"] == "x", "value"] = np.nan  # a concept with no value anywhere: no column
    snippets = pd.DataFrame({"id": [f"s{i}" for i in range(310)], "language": "python", "loss": 1.0, "n_tokens": 1,
                             "n_nodes": 1, "ast_levels": 1, "source": "x = 1\n", "complexity": 1.0})
    table = snippet_table(_run(snippets, concepts))
    c = concepts.copy()
    c["column"] = np.where(c["kind"] == "type", "type: " + c["name"],
                           np.where(c["kind"] == "category", "category: " + c["name"], GLOBAL))
    wide = c.pivot_table(index="snippet_id", columns="column", values="value", aggfunc="first")
    expected = snippets.set_index("id")[[]].join(wide, how="left")
    pd.testing.assert_frame_equal(table[expected.columns.tolist()], expected, check_names=False)
    assert list(table.columns[5:]) == list(expected.columns) and "type: x" not in table


def test_cli_subsample_and_jobs_options():
    parser = build_parser()
    args = parser.parse_args(["causal", "RUN", "--out", "o.csv"])
    assert args.refute_sample == REFUTE_SAMPLE and args.jobs >= 1
    assert parser.parse_args(["causal", "RUN", "--out", "o.csv", "--refute-sample", "all"]).refute_sample is None
    assert parser.parse_args(["causal", "RUN", "--out", "o.csv", "--refute-sample", "800", "--jobs", "3"]).jobs == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["causal", "RUN", "--out", "o.csv", "--jobs", "0"])


# ------------------------------------------------------------------------- one run: what the CLI and the page call


@pytest.fixture(scope="module")
def tiny_run(tiny, tmp_path_factory):
    from asc.corpus import run_corpus

    out = tmp_path_factory.mktemp("causal") / "tiny"
    run_corpus(tiny, corpus_snippets(8), out, corpus="toy", progress=False)
    return out


def test_run_causal_is_table_ii_of_the_runs_snippet_table_over_its_languages_treatments(tiny_run, monkeypatch):
    run = load_run(tiny_run, tables=("snippets", "concepts"))
    seen: list[tuple[int, int]] = []
    result = run_causal(run, min_snippets=30, simulations=10, on_progress=lambda d, t: seen.append((d, t)))
    expected_data = snippet_table(run)
    pd.testing.assert_frame_equal(result.snippets, expected_data)
    treatments = treatments_of(load_categories("python"))
    assert run_treatments(run) == treatments
    pd.testing.assert_frame_equal(result.table, causal_table(expected_data, treatments, min_snippets=30,
                                                             simulations=10))
    assert seen[-1] == (len(treatments), len(treatments))
    monkeypatch.setattr(RunData, "language", property(lambda self: "java"))  # the run's language picks the map
    assert run_treatments(run) == treatments_of(load_categories("java"))


def test_chosen_treatments_are_the_same_rows_as_in_the_whole_table(tiny_run):
    """``treatments``: only those rows, in Table II's order, each equal to its row of the whole table (every row is
    computed on its own with the same seed); an unknown name or none is refused, listing the valid names."""
    run = load_run(tiny_run, tables=("snippets", "concepts"))
    chosen = ["category: Decision", GLOBAL]
    part = run_causal(run, min_snippets=4, simulations=5, treatments=chosen).table
    assert list(part["treatment"]) == [GLOBAL, "category: Decision"]
    whole = run_causal(run, min_snippets=4, simulations=5).table
    assert (part["status"] == "estimated").any()
    pd.testing.assert_frame_equal(part.reset_index(drop=True),
                                  whole[whole["treatment"].isin(chosen)].reset_index(drop=True),
                                  check_dtype=False)  # counts: float in the whole table, where other rows have none
    for bad, said in ((["Global", "category: Nope"], "unknown treatment(s) 'category: Nope'"), ([" "], "no treatment")):
        listed = ".*choose from Global, category: Data Structures, type: if_statement"  # Table II's order
        with pytest.raises(InputError, match=re.escape(said) + listed):
            run_causal(run, treatments=bad)


def test_the_scatter_offers_estimated_treatments_or_else_every_one():
    table = pd.DataFrame({"treatment": ["a", "b", "c"], "status": ["estimated", "not enough data", "estimated"]})
    assert CausalResult(pd.DataFrame(), table).estimated == ["a", "c"]
    none = table.assign(status="not enough data (absent from every snippet)")
    assert CausalResult(pd.DataFrame(), none).estimated == ["a", "b", "c"]


def test_the_cli_prints_table_ii_as_the_page_shows_it(tiny_run, tmp_path, capsys):
    from asc.cli import main
    from asc.viz.causal import table2_views

    assert main(["causal", str(tiny_run), "--out", str(tmp_path / "t.csv"), "--simulations", "10", "--quiet"]) == 0
    printed = capsys.readouterr().out
    written = pd.read_csv(tmp_path / "t.csv")
    correlations, effects = table2_views({"": written})
    assert correlations.to_string(index=False) in printed and effects.to_string(index=False) in printed
    assert "too few" in printed  # 8 snippets, fewer than 30: the word the page shows, not NaN
