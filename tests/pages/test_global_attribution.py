"""pages/global_eval.py, corpus attribution: the target x source matrix and the distance chart of a run with an
attribution/ table (python -m asc attribute-corpus), their exports, and the caption naming the command otherwise."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.helpers import charts, page

GLOBAL_PAGE = page("global_eval")


@pytest.fixture(scope="module")
def runs(tiny, tmp_path_factory):
    """Two tiny-model runs of the same 4 snippets (one per corpus name, so both are preselected); only the first
    attributed."""
    from asc.corpus.runs import run_corpus
    from asc.corpus.sources import load_corpus
    from asc.why.corpus_run import attribute_run

    root = tmp_path_factory.mktemp("attr-runs")
    corpus = root / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    if x > {i}:\n        return "
                                                                  f"[x, {i}]\n    return x\n"}) for i in range(4)))
    snippets = load_corpus(str(corpus))
    run_corpus(tiny, snippets, root / "runs" / "attributed", corpus="a", progress=False)
    run_corpus(tiny, snippets, root / "runs" / "plain", corpus="b", progress=False)
    attribute_run(root / "runs" / "attributed", tiny, k=3)
    return root / "runs"


def test_the_page_shows_the_attribution_matrix_of_an_attributed_run(monkeypatch, runs):
    from asc.why.matrix import run_matrix

    monkeypatch.setenv("ASC_RUNS_DIR", str(runs))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert not at.exception and not at.error
    assert len(at.multiselect(key="results").value) == 2
    assert any(t.value == "Corpus attribution (why this token?)" for t in at.subheader)
    expected = run_matrix(runs / "attributed", n_boot=500, seed=0)
    heat = next(c for c in charts(at) if c["data"][0]["type"] == "heatmap"
                and c["layout"]["title"]["text"].endswith("(k = 3 targets per snippet; 95% intervals in the hover text)"))
    assert heat["data"][0]["y"] == list(expected.targets) and heat["data"][0]["x"] == list(expected.sources)
    absent = expected.share == 0  # no token of the source category in the row's prompts: absent, not 0.00
    np.testing.assert_allclose(np.asarray(heat["data"][0]["z"], dtype=float), np.where(absent, np.nan, expected.share))
    assert (np.asarray(heat["data"][0]["text"]) == "absent").tolist() == absent.tolist()
    np.testing.assert_allclose(np.asarray(heat["data"][0]["customdata"], dtype=float)[..., :2],
                               np.stack([expected.ci_low, expected.ci_high], axis=-1))
    curve = next(c for c in charts(at) if "AST distance" in c["layout"].get("title", {}).get("text", ""))
    np.testing.assert_allclose(np.asarray(curve["data"][1]["y"], dtype=float), expected.distance[0])
    table = next(d.value for d in at.dataframe if d.value is not None and "source_category" in d.value.columns)
    assert len(table) == len(expected.targets) * len(expected.sources)
    assert (table["share"] == "absent").sum() == absent.sum() and "0.000" not in set(table["share"])
    labels = [b.label for b in at.get("download_button")]
    assert {"Matrix (CSV)", "Matrix and distances (JSON)", "Matrix heatmap (HTML)", "Distance chart (HTML)"} <= set(labels)


def test_the_page_names_the_command_when_no_run_has_attribution(monkeypatch, runs):
    monkeypatch.setenv("ASC_RUNS_DIR", str(runs))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    at.multiselect(key="results").set_value([p for p in at.multiselect(key="results").value
                                             if "plain" in str(p)]).run()
    assert not at.exception and not at.error
    assert any("None of the chosen runs has corpus attribution" in c.value and "attribute-corpus" in c.value
               for c in at.caption)
    assert not any("AST distance" in c["layout"].get("title", {}).get("text", "") for c in charts(at))


def test_a_run_without_attribution_gets_it_from_the_button(monkeypatch, runs, tmp_path):
    """The app's way to attribute-corpus: the button queues the run's attribution with its own model (a job of the
    page's queue); once it is done, the page shows that run's matrix."""
    import shutil

    from asc.why.corpus_run import has_attribution
    from ui import jobs

    root = tmp_path / "runs"
    shutil.copytree(runs / "plain", root / "plain")
    monkeypatch.setenv("ASC_RUNS_DIR", str(root))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert not at.exception and not at.error
    assert at.number_input(key="attr_compute_k").value == 8
    at.number_input(key="attr_compute_k").set_value(2)
    at.button(key="attr_compute_start").click().run()
    assert not at.exception and not at.error
    assert jobs.job_queue().wait(300)
    job = [j for j in jobs.job_queue().jobs() if j.out == root / "plain"][-1]
    assert job.status == "done", job.error
    assert has_attribution(root / "plain")
    at.run()
    assert not any("None of the chosen runs has corpus attribution" in c.value for c in at.caption)
    assert any(c["data"][0]["type"] == "heatmap" and "(k = 2 targets" in c["layout"]["title"]["text"]
               for c in charts(at))
    assert not [b for b in at.button if b.key == "attr_compute_start"]  # nothing left to compute
