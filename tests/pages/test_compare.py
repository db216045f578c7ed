"""pages/compare.py, Compare models on one snippet: a model against itself differs by zero everywhere."""

import numpy as np
from streamlit.testing.v1 import AppTest

from asc import explain
from tests.pages.helpers import TINY, button, charts, dataframe_heights, page
from ui.charts import table_height

COMPARE_PAGE = page("compare")


def test_compare_page_model_against_itself_is_zero(monkeypatch, tmp_path, tiny):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    folder = tmp_path / "tiny-copy"
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    at = AppTest.from_file(COMPARE_PAGE, default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    assert any("Compare" in i.value for i in at.info)
    at.multiselect(key="cmp_models").set_value(["tiny-random"]).run()
    at.text_input(key="cmp_other").set_value(str(folder)).run()
    button(at, "Compare").click().run()
    assert not at.exception and not at.error
    specs = charts(at)
    diff = next(c for c in specs if c["layout"]["title"]["text"].startswith("difference tree"))
    colors = next(t for t in diff["data"] if t.get("name") == "value")["marker"]["color"]
    assert colors and all(v == 0 for v in colors)
    ex = explain(tiny, at.text_area(key="cmp_code").value)
    model_tree = next(t for t in specs[0]["data"] if t.get("name") == "value")
    np.testing.assert_allclose(model_tree["marker"]["color"], ex.values[np.array(model_tree["customdata"])])


def test_compare_page_shows_every_summary_row_and_names_missing_values(monkeypatch, tmp_path, tiny):
    """The per-model summary is sized to its rows (it hid rows behind an inner scroll: more than ten rows) and says
    how many; no table shows None, a dash or an empty cell, and an uncategorized node is labelled so."""
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    folder = tmp_path / "tiny-copy"
    tiny.model.save_pretrained(folder)
    tiny.tokenizer.save_pretrained(folder)
    heights = dataframe_heights(monkeypatch)
    at = AppTest.from_file(COMPARE_PAGE, default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    at.multiselect(key="cmp_models").set_value(["tiny-random"]).run()
    at.text_input(key="cmp_other").set_value(str(folder)).run()
    button(at, "Compare").click().run()
    assert not at.exception and not at.error
    summary = at.dataframe[0].value
    assert len(summary) > 10 and heights["cmp_summary"] == table_height(len(summary))  # no inner scroll
    assert any(c.value.startswith(f"{len(summary)} rows:") for c in at.caption)
    assert "absent" in set(summary.to_numpy().ravel())  # a category the snippet lacks
    worst = next(d.value for d in at.dataframe if "difference" in d.value.columns)
    for table in (summary, worst):
        assert not {"None", "nan", "<NA>", "", "—"} & {str(v) for v in table.to_numpy().ravel()}
    assert "uncategorized" in set(worst["category"]) and None not in set(worst["category"])


def test_compare_page_needs_two_models(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(COMPARE_PAGE, default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    at.multiselect(key="cmp_models").set_value(["tiny-random"]).run()
    button(at, "Compare").click().run()
    assert any("at least two models" in e.value for e in at.error)
