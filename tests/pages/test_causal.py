"""pages/causal.py, AsC-Causal: Table II (correlations, then effects) equals the backend's as shown (3 decimals, a
missing cell as the word that says why), and how to get results."""

import pytest
from streamlit.testing.v1 import AppTest

from asc import load_categories, load_run
from asc.causal import causal_table, snippet_table, treatments_of
from asc.concepts import GLOBAL
from tests.pages.helpers import page

CAUSAL_PAGE = page("causal")
# Refuter simulations the tests set on the page (its smallest; default 50) and give the backend: the page computes
# every treatment with enough snippets (8 at 5 snippets), each refuted 3 x SIMS times by dowhy (~20 ms a refit), and
# the claims (the page shows the backend's ATE and placebo verdict for the settings chosen) hold for any count.
SIMS = 10


@pytest.mark.real
def test_causal_page(monkeypatch, runs_dir):
    monkeypatch.setenv("ASC_RUNS_DIR", str(runs_dir))
    at = AppTest.from_file(CAUSAL_PAGE, default_timeout=300)
    at.run()
    assert not at.exception
    correlations, shown = at.dataframe[0].value, at.dataframe[1].value
    assert list(shown["treatment"]) == list(correlations["treatment"]) == treatments_of(load_categories("python"))
    assert set(shown["status"]) <= {"too few", "absent", "constant"}  # 5 snippets < 30
    assert (shown.drop(columns=["treatment", "n", "status"]).to_numpy() == shown[["status"]].to_numpy()).all()
    at.number_input(key="causal_sims").set_value(SIMS)
    at.number_input(key="causal_min").set_value(5).run()
    shown = at.dataframe[1].value.set_index("treatment")
    assert shown.loc[GLOBAL, "status"] == "estimated"
    expected = causal_table(snippet_table(load_run(runs_dir / at.multiselect(key="causal_runs").value[0].name)),
                            [GLOBAL], min_snippets=5, simulations=SIMS).set_index("treatment")
    assert shown.loc[GLOBAL, "ate"] == f"{expected.loc[GLOBAL, 'ate']:.3f}"
    assert shown.loc[GLOBAL, "placebo"] == expected.loc[GLOBAL, "placebo"].split(":")[0]  # passed / failed
    assert len(at.get("plotly_chart")) == 2


def test_causal_page_without_results(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(CAUSAL_PAGE, default_timeout=60)
    at.run()
    assert any("No results yet" in i.value for i in at.info)


@pytest.mark.slow
def test_causal_page_on_a_tiny_run(monkeypatch, tmp_path):
    from asc.corpus import run_corpus
    from tests.helpers import corpus_snippets
    from tests.support.models import tiny_random_model

    run_corpus(tiny_random_model(), corpus_snippets(8), tmp_path / "tiny", corpus="toy", progress=False)
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(CAUSAL_PAGE, default_timeout=300)
    at.run()
    assert not at.exception
    assert [p.name for p in at.multiselect(key="causal_runs").value] == ["tiny"]
    shown = at.dataframe[1].value
    assert list(shown["treatment"]) == treatments_of(load_categories("python"))
    assert set(shown["status"]) <= {"too few", "absent", "constant"}  # at most 8 snippets < 30
    assert shown.set_index("treatment").loc[GLOBAL, ["status", "ate"]].tolist() == ["too few", "too few"]
    assert any("too few (fewer than 30 snippets" in c.value for c in at.caption)  # the word, explained
    at.number_input(key="causal_sims").set_value(SIMS)
    at.number_input(key="causal_min").set_value(5).run()
    assert not at.exception
    shown = at.dataframe[1].value.set_index("treatment")
    expected = causal_table(snippet_table(load_run(tmp_path / "tiny")), [GLOBAL], min_snippets=5,
                            simulations=SIMS).set_index("treatment")
    assert shown.loc[GLOBAL, "status"] == expected.loc[GLOBAL, "status"] == "estimated"
    assert shown.loc[GLOBAL, "ate"] == f"{expected.loc[GLOBAL, 'ate']:.3f}"
