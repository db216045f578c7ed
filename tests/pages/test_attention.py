"""pages/attention.py, Attention maps: how to get results, and a run's head scores shown as computed."""

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.helpers import ATTENTION_CODES
from tests.pages.helpers import charts, page

ATTENTION_PAGE = page("attention")


def test_attention_page_without_results_says_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(ATTENTION_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("python -m probes attention" in i.value for i in at.info)


def test_attention_page_shows_backend_scores(monkeypatch, tmp_path):
    from probes.codesyntax.attention import relation_table, run_attention
    from tests.support.models import tiny_random_model

    run = run_attention(tiny_random_model(), ATTENTION_CODES * 3, tmp_path / "runs" / "attention", spec="tiny-random",
                        ks=(1, 2))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(ATTENTION_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("dependent -> head" in i.value for i in at.info)
    at.number_input(key="at_min").set_value(1).run()
    table = relation_table(run, "first", 1)
    shown = at.dataframe[0].value
    assert shown["relation"].tolist() == table["relation"].tolist()
    assert np.allclose(shown["model"].astype(float), table["model"].astype(float))
    specs = charts(at)
    relation = at.selectbox(key="at_relation").value
    heat = specs[0]["data"][0]
    assert np.allclose(np.asarray(heat["z"], dtype=float), run.scores.layer_head(relation, "first", 1, "test"),
                       equal_nan=True)
    amap = specs[1]
    assert any(t.get("name") == "gold edge" for t in amap["data"])
    assert any("top-1 attention" in h.proto.body for h in at.get("html"))
