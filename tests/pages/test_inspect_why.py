"""The inspector's "Why this token?" section (ui/why_view.py) on the tiny model: what it draws is the backend's
attribution of the chosen target, and a bad choice is a message, not a traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest

from asc import explain
from asc.why.attribute import attribute
from asc.why.statements import agreement, by_own_tokens, by_statement, summary
from tests.pages.helpers import button, charts, inspector


@pytest.fixture
def app(monkeypatch):
    at = inspector(monkeypatch)
    button(at, "Explain").click().run()
    assert not at.exception and not at.error
    return at


def _sequence(at) -> str:
    return next(h.proto.body for h in at.get("html") if "asc-why" in h.proto.body)


def test_nothing_runs_until_the_button_and_then_the_views_show_the_backend_values(app, tiny):
    assert any("Explain this prediction" in c.value for c in app.caption)
    assert not [h for h in app.get("html") if "asc-why" in h.proto.body]
    token = app.selectbox(key="why_token")
    index = int(token.value)
    app.radio(key="why_method").set_value("grad").run()
    button(app, "Explain this prediction").click().run()
    assert not app.exception and not app.error
    source = app.text_area(key="code").value
    expected = attribute(tiny, source, index, "grad", explanation=explain(tiny, source))
    seq = _sequence(app)
    assert re.search(rf'data-token="{index}" data-target="1"', seq)
    shown = {int(i): v for i, v in re.findall(r'data-token="(\d+)"[^>]*?data-attribution="([^"]*)"', seq)}
    for i in range(index):
        if not np.isnan(expected.token_attr[i]):
            assert float(shown[i]) == pytest.approx(expected.token_attr[i], rel=1e-4, abs=1e-9)
    m = float(np.nanmax(np.abs(expected.node_attr)))
    why = [t for c in charts(app) for t in c["data"] if t.get("marker", {}).get("cmin") == pytest.approx(-m)]
    assert len(why) == 2  # the partial and the complete tree, on the scale -m..m of the node attributions
    for trace in why:
        ids = np.array(trace["customdata"])
        np.testing.assert_allclose(trace["marker"]["color"], expected.node_attr[ids], rtol=1e-5)
    app.radio(key="why_view").set_value("nested").run()  # the nested nodes, one click from the statements
    nodes = next(d.value for d in app.dataframe if list(d.value.columns)[:4] == ["node", "type", "category",
                                                                                  "attribution"])
    assert len(nodes) > 0
    top = int(nodes["node"].iloc[0])
    assert float(nodes["attribution"].iloc[0]) == pytest.approx(expected.node_attr[top], abs=1e-4)


def test_the_selected_node_is_a_target_and_a_contrast_is_offered(app):
    app.selectbox(key="node_pick").set_value(4).run()
    app.radio(key="why_what").set_value("the selected node").run()
    button(app, "Explain this prediction").click().run()
    assert not app.exception and not app.error
    assert any(m.value.startswith("**node 4 ") for m in app.markdown)
    app.radio(key="why_what").set_value("one token").run()
    options = app.selectbox(key="why_contrast").options
    assert len(options) >= 2 and options[0].startswith("(none")
    app.selectbox(key="why_contrast").set_value(options[1]).run()
    app.radio(key="why_method").set_value("ig").run()
    button(app, "Explain this prediction").click().run()
    assert not app.exception and not app.error
    line = next(m.value for m in app.markdown if "completeness gap" in m.value)
    assert "at the baseline" in line


@pytest.mark.parametrize("steps", [1, 64])
def test_an_integrated_gradients_gap_over_one_percent_is_a_warning_that_names_the_fix(app, tiny, steps):
    index = int(app.selectbox(key="why_token").value)
    app.radio(key="why_method").set_value("ig").run()
    app.number_input(key="why_steps").set_value(steps).run()
    button(app, "Explain this prediction").click().run()
    assert not app.exception and not app.error
    source = app.text_area(key="code").value
    expected = attribute(tiny, source, index, "ig", steps, explanation=explain(tiny, source))
    warned = [w.value for w in app.warning if "completeness gap" in w.value]
    assert bool(warned) == (expected.relative_gap > 0.01), (expected.relative_gap, warned)
    assert (expected.relative_gap > 0.01) == (steps == 1)  # both branches are seen on the tiny model
    if warned:
        assert f"{100 * expected.relative_gap:.1f}%" in warned[0] and "raise Steps" in warned[0]


def test_corrupt_and_patch_draws_the_backends_heatmap_and_exports_it(app, tiny):
    assert any("Corrupt and patch" in c.value for c in app.caption)  # nothing runs before the button
    token = app.selectbox(key="patch_token")
    token.select_index(len(token.options) - 1).run()  # the last token: every corruption comes before it
    index = int(app.selectbox(key="patch_token").value)
    corruption = app.selectbox(key="patch_corruption")
    corruption.select_index(next(i for i, o in enumerate(corruption.options) if o.startswith("rename"))).run()
    spec = app.selectbox(key="patch_corruption").value
    button(app, "Corrupt and patch").click().run()
    assert not app.exception and not app.error
    from asc.why.corrupt import corrupt
    from asc.why.patching import patch

    source = app.text_area(key="code").value
    expected = patch(tiny, corrupt(source, spec, tokenizer=tiny.tokenizer), index)
    heat = next(t for c in charts(app) for t in c["data"] if t.get("type") == "heatmap" and t.get("name") == "restored")
    got = np.array([[np.nan if v is None else v for v in row] for row in heat["z"]], dtype=float)
    np.testing.assert_allclose(got, expected.restored, rtol=1e-5, atol=1e-7)
    table = next(d.value for d in app.dataframe if "all spans" in d.value.columns)  # as shown: 3 decimals, or a word
    shown_all = np.array([np.nan if v == "undefined" else float(v) for v in table["all spans"]])
    np.testing.assert_allclose(shown_all, expected.all_restored, atol=5e-4)
    from ui.widgets import plain

    assert any(m.value.startswith(f"**{plain(expected.description)}**") for m in app.markdown)
    assert {"Patching JSON", "Per category CSV", "Heatmap (HTML)"} <= {b.label for b in app.get("download_button")}


def test_a_target_before_every_corruption_is_a_caption_not_an_error(app):
    app.selectbox(key="patch_token").select_index(0).run()
    assert not app.exception and not app.error
    # the first predicted token follows only "def": nothing to corrupt before it, so no corruption list, no button
    assert any("Nothing before this token can be corrupted" in c.value for c in app.caption)
    assert not [s for s in app.selectbox if s.key == "patch_corruption"]
    assert "Corrupt and patch" not in {b.label for b in app.button}


def test_until_one_percent_runs_the_backends_auto_steps(app, tiny):
    index = int(app.selectbox(key="why_token").value)
    app.radio(key="why_method").set_value("ig").run()
    app.checkbox(key="why_auto").check().run()
    button(app, "Explain this prediction").click().run()
    assert not app.exception and not app.error
    source = app.text_area(key="code").value
    expected = attribute(tiny, source, index, "ig", "auto", explanation=explain(tiny, source))
    line = next(m.value for m in app.markdown if "completeness gap" in m.value)
    assert f"· {expected.steps} path points ·" in line
    assert bool([w for w in app.warning if "completeness gap" in w.value]) == (expected.relative_gap > 0.01)


def _explained(app, tiny, method="grad"):
    """Explain the default token with ``method``; the backend's attribution of it."""
    index = int(app.selectbox(key="why_token").value)
    app.radio(key="why_method").set_value(method).run()
    button(app, "Explain this prediction").click().run()
    assert not app.exception and not app.error
    source = app.text_area(key="code").value
    return attribute(tiny, source, index, method, explanation=explain(tiny, source))


def _table(app, first_columns):
    return next(d.value for d in app.dataframe if list(d.value.columns)[:len(first_columns)] == first_columns)


def test_the_default_ranking_is_by_statement_with_a_sentence_and_shares_adding_up_to_one(app, tiny):
    """Issue 48: a ranking an ancestor cannot win by containing everything, shares that add up to 1, and the code
    that mattered named in words."""
    expected = by_statement(_explained(app, tiny))
    assert app.radio(key="why_view").value == "statement"
    rows = _table(app, ["rank", "line", "code", "kind", "attribution", "share"])
    assert len(rows) == min(expected.n_rows, 11)
    assert sum(float(v) for v in rows["share"]) == pytest.approx(1.0, abs=2e-3)
    assert "function_definition" not in set(rows["kind"]) or rows["code"].str.startswith("def").any()
    first = expected.ranked(1, target_line=False)[0]
    ranked = rows[rows["rank"] == "1"]
    assert float(ranked["attribution"].iloc[0]) == pytest.approx(expected.value[first], abs=1e-4)
    said = [m.value for m in app.markdown if m.value.startswith("**Which code mattered**")]
    assert said == [f"**Which code mattered** · {summary(expected)}"]
    shown_code = [c.value for c in app.code]  # each row's whole code, under the table (a cell shows one line)
    for r in expected.ranked(10):
        assert (expected.text[r] or " ") in shown_code


def test_rank_by_offers_own_tokens_and_nested_nodes_and_occlusion_has_no_own_tokens(app, tiny):
    attr = _explained(app, tiny)
    app.radio(key="why_view").set_value("own").run()
    own = _table(app, ["rank", "node", "line", "code"])
    assert int(own["node"].iloc[0]) == int(by_own_tokens(attr).node[by_own_tokens(attr).ranked(1)[0]])
    assert sum(float(v) for v in own["share"]) <= 1.0 + 1e-3  # the top 10 of rows whose shares add up to 1
    app.radio(key="why_view").set_value("nested").run()
    nested = _table(app, ["node", "type", "category", "attribution"])
    assert "share" not in nested.columns and "of |total|" in nested.columns  # nested sizes are no shares
    app.radio(key="why_method").set_value("occlusion").run()
    assert "own" not in app.radio(key="why_view").options


def test_the_page_says_what_each_method_measures_and_what_value_baseline_and_gap_mean(app, tiny):
    from ui.why_view import DISAGREE, KNOWN_ANSWERS, MEASURES, NOTES_ANCHOR, TERMS

    _explained(app, tiny, "ig")
    captions = [c.value for c in app.caption]
    assert any(MEASURES["ig"] in c and DISAGREE in c for c in captions)  # under the target line
    assert f"(#{NOTES_ANCHOR})" in DISAGREE and "very differently" in DISAGREE
    texts = [m.value for m in app.markdown]
    assert "##### Method notes" in texts
    assert any(KNOWN_ANSWERS in c for c in captions)
    notes = "\n".join(texts)
    for line in (*MEASURES.values(), *TERMS):
        assert line in notes
    for word in ("**value**", "**baseline**", "**completeness gap**"):
        assert sum(word in t for t in TERMS) == 1


def test_compare_the_three_methods_shows_each_ones_top_statements_and_spearman(app, tiny):
    attr = _explained(app, tiny)
    assert any("Compare the three methods" in c.value for c in app.caption)  # nothing runs before the button
    button(app, "Compare the three methods").click().run()
    assert not app.exception and not app.error
    source = app.text_area(key="code").value
    ex = explain(tiny, source)
    views = [by_statement(attribute(tiny, source, attr.target.index, m, explanation=ex))
             for m in ("grad", "ig", "occlusion")]
    ag = agreement(views)
    side = _table(app, ["rank", "gradient x input", "integrated gradients", "occlusion (syntax-aware)"])
    for m, column in enumerate(list(side.columns)[1:]):
        top = ag.top(m, 1)[0]
        assert side[column].iloc[0].startswith(f"{ag.value[m, top]:+.3g} · line {int(ag.line[top])}: ")
    pairs = _table(app, ["methods", "Spearman", "statements"])
    assert pairs["methods"].tolist() == ["gradient x input / integrated gradients",
                                         "gradient x input / occlusion (syntax-aware)",
                                         "integrated gradients / occlusion (syntax-aware)"]
    for (a, b), got in zip([(0, 1), (0, 2), (1, 2)], pairs["Spearman"], strict=True):
        want = ag.spearman[a, b]
        assert got == (("too few" if ag.n_common[a, b] < 3 else "constant") if np.isnan(want) else f"{want:.2f}")


def test_the_category_chart_labels_each_category_with_its_part_beside_the_axis(app, tiny):
    attr = _explained(app, tiny)
    bars = next(t for c in charts(app) for t in c["data"] if t.get("type") == "bar" and t.get("orientation") == "h")
    assert [y.split(" · ")[0] for y in bars["y"]] == list(attr.category_attr)
    assert "text" not in bars
