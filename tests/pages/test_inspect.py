"""pages/inspect.py, the completion inspector, on the tiny model: plotted values equal the backend's."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from asc import explain
from tests.pages.helpers import TINY, button, page, tree_traces
from ui import widgets


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(page("inspect"), default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    assert not at.exception
    return at


def test_first_render_asks_for_an_action(app):
    assert any("Explain" in i.value for i in app.info)
    assert app.text_area(key="code").value.startswith("def count_chars(")


def test_explain_plots_backend_values(app, tiny):
    button(app, "Explain").click().run()
    assert not app.exception and not app.error
    ex = explain(tiny, app.text_area(key="code").value)
    traces = tree_traces(app)
    ids = np.array(traces["value"]["customdata"])
    np.testing.assert_allclose(traces["value"]["marker"]["color"], ex.values[ids], rtol=1e-9)
    assert traces["value"]["marker"]["cmin"] == 0 and traces["value"]["marker"]["cmax"] == 1
    grey = np.array(traces["no tokens"].get("customdata") or [] if "no tokens" in traces else [], dtype=int)
    # grey are exactly the shown nodes without a value (none for this example: every named node has tokens)
    shown = np.concatenate([ids, grey]).astype(int)
    assert sorted(grey.tolist()) == sorted(n for n in shown.tolist() if np.isnan(ex.values[n]))
    assert not np.isnan(ex.values[ids]).any()
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Cross-entropy"] == f"{ex.loss:.3f}" and metrics["AST nodes"] == str(ex.tree.n_nodes)


def test_changing_aggregation_changes_values(app, tiny):
    button(app, "Explain").click().run()
    before = tree_traces(app)["value"]["marker"]["color"]
    app.session_state["settings"] = widgets.Settings("tiny-random", False, "python", "max")
    app.run()
    button(app, "Explain").click().run()
    after = tree_traces(app)["value"]
    ex = explain(tiny, app.text_area(key="code").value, aggregate="max")
    np.testing.assert_allclose(after["marker"]["color"], ex.values[np.array(after["customdata"])])
    assert after["marker"]["color"] != before


def test_picking_a_node_shows_its_details(app):
    button(app, "Explain").click().run()
    assert not any(m.value.startswith("**Node ") for m in app.markdown)
    app.selectbox(key="node_pick").set_value(4).run()
    details = [m.value for m in app.markdown if m.value.startswith("**Node 4:")]
    assert details and "`parameters`" in details[0]
    assert tree_traces(app).get("selected") is not None


def test_complete_marks_generated_tokens(app):
    app.text_area(key="code").set_value("def add(a, b):\n").run()
    button(app, "Complete").click().run()
    assert not app.exception and not app.error
    tokens = next(m.value for m in app.metric if m.label == "Tokens")
    assert " + " in tokens
    assert any("Generated tokens are underlined" in c.value for c in app.caption)


def test_empty_editor_is_refused_and_previous_result_stays(app):
    button(app, "Explain").click().run()
    app.text_area(key="code").set_value("   \n").run()
    button(app, "Explain").click().run()
    assert any("empty" in e.value for e in app.error)
    assert any(m.label == "Cross-entropy" for m in app.metric)  # the previous result is still shown


def test_unknown_model_is_a_message_not_a_crash(app):
    button(app, "Explain").click().run()
    app.session_state["settings"] = widgets.Settings("no-such-model", False, "python", "median")
    button(app, "Explain").click().run()
    assert not app.exception
    assert any("unknown model" in e.value for e in app.error)
    assert any(m.label == "Cross-entropy" for m in app.metric)


def test_syntax_error_example_warns(app):
    app.selectbox(key="example").set_value("syntax_error.py").run()
    button(app, "Explain").click().run()
    assert any("syntax errors" in w.value for w in app.warning)
    traces = tree_traces(app, "complete")
    symbols = [s for t in traces.values() if t.get("marker") for s in (t["marker"].get("symbol") or [])
               if isinstance(t["marker"].get("symbol"), list)]
    assert "x" in symbols


def test_too_long_text_is_refused(app):
    app.text_area(key="code").set_value("x = 1\n" * 20_000).run()
    button(app, "Explain").click().run()
    assert any("characters" in e.value for e in app.error)
