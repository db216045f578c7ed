"""asc.causal: synthetic recovery, refuters, complexity, missing treatments, a real run and its CLI table.

The Causal page is tested in tests/pages/test_causal.py."""

import json

import numpy as np
import pandas as pd
import pytest

from asc import load_categories, load_corpus, load_model, load_run, run_corpus
from asc.causal import (
    CONFOUNDERS,
    causal_graph,
    causal_table,
    cyclomatic_complexity,
    estimate,
    snippet_table,
    treatments_of,
)
from asc.concepts import GLOBAL
from tests.helpers import run_module

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


@pytest.fixture(scope="module")
def he100(tmp_path_factory):
    """The real SmolLM2 on 100 HumanEval problems."""
    out = tmp_path_factory.mktemp("he100") / "smol"
    run_corpus(load_model("smollm2-135m"), load_corpus("humaneval", limit=100), out, corpus="humaneval",
               progress=False)
    return out


@pytest.mark.real
def test_real_run_global_value_lowers_the_loss(he100, tmp_path):
    table = snippet_table(load_run(he100))
    treatments = treatments_of(load_categories("python"))
    res = causal_table(table, treatments, simulations=20).set_index("treatment")
    glob = res.loc[GLOBAL]
    assert glob["n"] == 100 and glob["status"] == "estimated"
    assert glob["ate"] < 0 and glob["ci_high"] < 0 and glob["r_loss"] < 0  # as in the paper
    assert glob["placebo"].startswith("passed")
    # the CLI writes the same table
    out = run_module("asc", "causal", str(he100), "--out", str(tmp_path / "c.json"), "--simulations", "20", "--quiet",
                     timeout=600)
    assert out.returncode == 0, out.stderr.decode()
    written = pd.DataFrame(json.loads((tmp_path / "c.json").read_text())).set_index("treatment")
    assert written.loc[GLOBAL, "ate"] == pytest.approx(glob["ate"])
    assert written.loc[GLOBAL, "placebo_effect"] == pytest.approx(glob["placebo_effect"])
    assert "Global" in out.stdout.decode()
