"""pages/global_eval.py, Global AsC-Eval: Table I from run folders, and background runs."""

import json

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.helpers import button, charts, page
from ui import jobs

GLOBAL_PAGE = page("global_eval")


def test_global_page_without_results_says_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("No results yet" in i.value for i in at.info)


def _table1(at) -> pd.DataFrame:
    """Table I as the page shows it (a row per category, a column per run: it fits the panel; every cell text),
    turned back into a row per run of numbers; 'absent' cells as NaN."""
    shown = at.dataframe[0].value.set_index("category").T
    return shown.replace("absent", np.nan).replace(",", "", regex=True).astype(float)


@pytest.fixture
def strict_arrow(monkeypatch):
    """Every table the page shows reaches Arrow as it is: Streamlit's fallback for a column that mixes words and
    numbers (it logs ``ArrowInvalid`` and converts the column) raises instead, which AppTest reports."""
    import streamlit.dataframe_util as util

    def refuse(df):
        raise AssertionError(f"a shown table mixes types in a column: {list(df.columns)}")

    monkeypatch.setattr(util, "fix_arrow_incompatible_column_types", refuse)


def test_table1_with_an_absent_category_reaches_arrow_and_says_absent(monkeypatch, tmp_path, tiny, strict_arrow):
    """The server log showed three ``ArrowInvalid ('absent' ... to double)`` tracebacks from Table I: a run where a
    category has no node renders with no exception, the cell reads 'absent', and no shown table mixes types."""
    from asc import load_corpus, run_corpus

    run_corpus(tiny, load_corpus("humaneval", limit=2), tmp_path / "run", corpus="humaneval", progress=False)
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert (table.to_numpy() == "absent").any()  # HumanEval's first two functions have no try: Exceptions
    assert all(isinstance(v, str) for v in table.to_numpy().ravel())
    assert any("'absent': no node of that category" in c.value for c in at.caption)
    assert not (_table1(at).isna().all(axis=None))


@pytest.mark.real
def test_global_page_numbers_equal_backend(monkeypatch, runs_dir):
    from asc import load_categories
    from asc.corpus.runs import load_digest
    from asc.corpus.summary import summary_table, wide_table

    monkeypatch.setenv("ASC_RUNS_DIR", str(runs_dir))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=180)
    at.run()
    assert not at.exception and not at.error
    assert len(at.multiselect(key="results").value) == 2  # newest run per model preselected
    shown = _table1(at)
    runs = [load_digest(runs_dir / name) for name in ("smol", "tiny")]
    expected = wide_table(summary_table(runs, load_categories("python").categories, n_boot=500, seed=0))
    assert list(shown.index) == [f"{m} · {c}" for m, c in zip(expected["model"], expected["corpus"])] == [
        "smollm2-135m · humaneval", "tiny-random · humaneval"]
    np.testing.assert_allclose(shown["Global"].to_numpy(float), expected["Global"].to_numpy(float), atol=5e-4)
    np.testing.assert_allclose(shown["Scope"].to_numpy(float), expected["Scope"].to_numpy(float), atol=5e-4)
    # a widget changes one output: the threshold moves the line in the category bars
    at.number_input(key="threshold").set_value(0.8).run()
    bars = next(c for c in charts(at) if "barmode" in c["layout"])
    assert any(s.get("y0") == 0.8 for s in bars["layout"]["shapes"])
    assert any(d.value is not None and "difference" in getattr(d.value, "columns", []) for d in at.dataframe)


def test_global_page_starts_a_background_run(monkeypatch, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    return [x, {i}]\n"})
                                for i in range(5)))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert at.multiselect(key="run_models").value == ["tiny-random"]
    at.selectbox(key="run_corpus").set_value("a folder, .py/.java or .jsonl path").run()
    at.text_input(key="run_corpus_path").set_value(str(corpus)).run()
    at.number_input(key="run_limit").set_value(0).run()
    button(at, "Start").click().run()
    assert jobs.job_queue().wait(120)
    job = jobs.job_queue().jobs()[-1]
    assert job.status == "done" and job.total == 5 and job.out.parent == tmp_path / "runs"
    at.run()
    assert not at.exception
    assert any(t.value == "AsC-Eval per model (Table I)" for t in at.subheader)
    assert _table1(at)["snippets"].tolist() == [5]


@pytest.mark.slow
def test_global_page_opens_a_100000_snippet_run(monkeypatch, tmp_path, tiny):
    """Issue 16's scale: a real tiny-model run of 20 HumanEval functions copied to 100,000 snippets (the
    benchmark's way, benchmarks/synthetic_runs.py). The page reads the digests, not the tables: Table I,
    the distribution and the node types render, and Table I equals the backend's on the same digest."""
    from asc import load_categories, load_corpus, run_corpus
    from asc.corpus.runs import load_digest
    from asc.corpus.summary import summary_table, wide_table
    from benchmarks.synthetic_runs import make_run

    run_corpus(tiny, load_corpus("humaneval", limit=20), tmp_path / "base", corpus="humaneval", progress=False)
    big = make_run(tmp_path / "base", 100_000, tmp_path / "runs" / "big", part_size=2000)
    monkeypatch.setenv("ASC_RUNS_DIR", str(big.parent))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=300)
    at.run()
    assert not at.exception and not at.error
    shown = _table1(at)
    assert list(shown["snippets"]) == [100_000]
    digest = load_digest(big)
    assert digest.n_snippets == 100_000 and digest.n_nodes > 1_000_000
    expected = wide_table(summary_table([digest], load_categories("python").categories, n_boot=500, seed=0))
    np.testing.assert_allclose(shown["Global"].to_numpy(float), expected["Global"].to_numpy(float), atol=5e-4)
    box = next(c for c in charts(at) if c["data"] and c["data"][0].get("type") == "box")
    assert box["data"][0]["q1"][0] <= box["data"][0]["median"][0] <= box["data"][0]["q3"][0]


def test_global_page_shows_layers_of_layer_runs(monkeypatch, tmp_path, tiny):
    from asc import load_corpus, run_corpus
    from asc.corpus.depth import layer_summary

    snippets = load_corpus("humaneval", limit=3)
    run_corpus(tiny, snippets, tmp_path / "layered", corpus="humaneval", progress=False, layers=True)
    run_corpus(tiny, snippets[:2], tmp_path / "plain", corpus="humaneval", progress=False)
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert len(at.multiselect(key="results").value) == 1  # one model and corpus: the newest run, the plain one
    assert any("None of the chosen runs has per-layer values" in c.value for c in at.caption)
    from asc.corpus.listing import run_folders

    at.multiselect(key="results").set_value(run_folders(tmp_path)).run()
    assert not at.exception and not at.error
    figures = charts(at)
    heat = next(c for c in figures if c["data"][0]["type"] == "heatmap")
    expected = layer_summary(tmp_path / "layered")
    assert heat["data"][0]["x"] == [0, 1, 2] and heat["data"][0]["y"][0] == "Global"
    out = expected[(expected["category"] == "Global") & (expected["layer"] == 2)]["value"].iloc[0]
    grid = np.asarray(heat["data"][0]["z"])  # charts() decodes plotly's typed arrays
    assert grid[0][2] == pytest.approx(out)
    curves = next(c for c in figures if c["layout"].get("xaxis", {}).get("title", {}).get("text", "").startswith(
        "relative depth"))
    assert len(curves["data"]) == 1  # the plain run has no per-layer values
    at.selectbox(key="layer_cat").set_value("Scope").run()
    assert any("Scope across depth" in c["layout"]["title"]["text"] for c in charts(at) if "title" in c["layout"])
    assert any(d.value is not None and "crossing" in getattr(d.value, "columns", []) for d in at.dataframe)
    labels = [b.label for b in at.get("download_button")]
    assert "Per layer (CSV)" in labels and "Layer heatmap (HTML)" in labels


def test_global_page_shows_fork_rates_of_fork_runs(monkeypatch, tmp_path, tiny):
    from asc import load_corpus, run_corpus
    from asc.branching.forks import ForkSettings
    from asc.corpus.forks import fork_table
    from asc.corpus.listing import run_folders

    snippets = load_corpus("humaneval", limit=3)
    settings = ForkSettings(max_margin=0.0004, min_entropy=100.0)  # splits the tiny model's tokens
    run_corpus(tiny, snippets, tmp_path / "forked", corpus="humaneval", progress=False, forks=settings)
    run_corpus(tiny, snippets[:2], tmp_path / "plain", corpus="humaneval", progress=False)
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert any(t.value == "Fork points (where models hesitate)" for t in at.subheader)
    assert any("None of the chosen runs has fork data" in c.value and "--forks" in c.value for c in at.caption)
    at.multiselect(key="results").set_value(run_folders(tmp_path)).run()
    assert not at.exception and not at.error
    expected = fork_table(tmp_path / "forked", n_boot=500, seed=0).set_index("category")
    bars = next(c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith("Fork points"))
    assert len(bars["data"]) == 1 and bars["data"][0]["x"][0] == "Global"  # the plain run has no fork data
    shown = next(d.value for d in at.dataframe if d.value is not None and "n_forks" in getattr(d.value, "columns", []))
    shown = shown.set_index("category")
    assert float(shown.loc["Global", "rate"]) == pytest.approx(expected.loc["Global", "rate"], abs=5e-4)
    assert float(shown.loc["Global", "ci_high"]) == pytest.approx(expected.loc["Global", "ci_high"], abs=5e-4)
    labels = [b.label for b in at.get("download_button")]
    assert "Fork rates (CSV)" in labels and "Fork bars (HTML)" in labels
