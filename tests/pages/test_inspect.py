"""pages/inspect.py, the completion inspector, on the tiny model: plotted values equal the backend's."""

import html
import re

import numpy as np
import pytest

from asc import explain
from tests.pages.helpers import button, charts, inspector, tree_traces
from ui import widgets


@pytest.fixture
def app(monkeypatch):
    at = inspector(monkeypatch)
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


def _per_layer(app):
    """Explain the example, then turn "Per layer (logit lens)" on."""
    button(app, "Explain").click().run()
    toggle = app.toggle(key="per_layer")
    assert toggle.value is False and "forward passes" in toggle.help  # off by default: it costs forward passes
    toggle.set_value(True).run()
    assert not app.exception and not app.error


def _heatmap(app):
    return next(c for c in charts(app) if c["layout"].get("title", {}).get("text", "").startswith("Category value per layer"))


def test_per_layer_slider_recolors_the_views_and_the_heatmap_follows(app, tiny):
    from asc.depth import explain_layers

    _per_layer(app)
    depth = explain_layers(tiny, app.text_area(key="code").value)
    slider = app.slider(key="depth_layer")
    assert slider.label == "layer (0 = embeddings, L = output)"
    assert slider.min == 0 and slider.max == depth.n_layers - 1 == 2 and slider.value == 2  # default: the output
    traces = tree_traces(app)
    ids = np.array(traces["value"]["customdata"])
    np.testing.assert_allclose(traces["value"]["marker"]["color"], depth.values[-1][ids], rtol=1e-9)
    heat = _heatmap(app)
    present = [k for k, c in enumerate(depth.categories) if not np.isnan(depth.category_values[:, k]).all()]
    np.testing.assert_allclose(np.array(heat["data"][0]["z"], dtype=float), depth.category_values[:, present].T)
    assert [s["x0"] for s in heat["layout"]["shapes"] if s.get("name") == "layer"] == [1.5]

    slider.set_value(0).run()
    assert not app.exception
    traces = tree_traces(app)
    ids = np.array(traces["value"]["customdata"])
    colors = np.array(traces["value"]["marker"]["color"])
    np.testing.assert_allclose(colors, depth.values[0][ids], rtol=1e-9)  # the embeddings' values now
    assert not np.allclose(colors, depth.values[-1][ids])
    assert traces["value"]["marker"]["colorbar"]["title"]["text"] == "value (median), layer 0"
    assert [s["x0"] for s in _heatmap(app)["layout"]["shapes"] if s.get("name") == "layer"] == [-0.5]
    assert any(m.value.endswith("at layer 0") for m in app.markdown)
    # the sequence view shows layer 0's probabilities
    seq = next(h.proto.body for h in app.get("html") if "asc-seq" in h.proto.body)
    first = next(i for i in range(depth.explanation.scores.n_tokens)
                 if not np.isnan(depth.lens.prob[0, i]))
    assert f"p={depth.lens.prob[0, first]:.3f}" in seq

    app.toggle(key="per_layer").set_value(False).run()  # off: the output's values, no slider, no heatmap
    assert not [s for s in app.slider if s.key == "depth_layer"]
    assert not any(c["layout"].get("title", {}).get("text", "").startswith("Category value per layer")
                   for c in charts(app))
    ex = explain(tiny, app.text_area(key="code").value)
    traces = tree_traces(app)
    np.testing.assert_allclose(traces["value"]["marker"]["color"], ex.values[np.array(traces["value"]["customdata"])])


def test_per_layer_node_curve_and_exports(app, tiny):
    from asc.depth import explain_layers

    _per_layer(app)
    assert any("see its value across layers" in c.value for c in app.caption)
    labels = [b.proto.label for b in app.get("download_button")]
    assert {"Categories per layer CSV", "Per-layer JSON", "Heatmap (HTML)"} <= set(labels)
    assert not any("curve" in label for label in labels)
    app.selectbox(key="node_pick").set_value(4).run()
    depth = explain_layers(tiny, app.text_area(key="code").value)
    curve = next(c for c in charts(app) if c["layout"].get("title", {}).get("text", "").startswith("Node 4 "))
    line = next(t for t in curve["data"] if t.get("name") == "value")
    np.testing.assert_allclose(np.array(line["y"], dtype=float), depth.values[:, 4])
    assert line["x"] == [0, 1, 2]
    labels = [b.proto.label for b in app.get("download_button")]
    assert {"Node 4 curve CSV", "Node 4 curve (HTML)"} <= set(labels)


def test_per_layer_on_a_model_without_a_lens_is_an_info(app, tiny, monkeypatch):
    import dataclasses

    import asc.depth
    from asc.lens import lens_parts
    from ui import cache

    def encoder_lens(bundle, *args, **kwargs):
        return lens_parts(dataclasses.replace(bundle, causal=False))  # what an encoder gets

    monkeypatch.setattr(asc.depth, "lens_scores", encoder_lens)
    cache.cached_explain_layers.clear()
    _per_layer(app)
    assert any("not available for this model" in i.value and "encoder: the logit lens needs a causal" in i.value
               for i in app.info)
    assert not [s for s in app.slider if s.key == "depth_layer"]
    assert any(m.label == "Cross-entropy" for m in app.metric)  # the output's result stays
    cache.cached_explain_layers.clear()


def _sequence(app) -> str:
    return next(h.proto.body for h in app.get("html") if "asc-seq" in h.proto.body)


def _tokens(seq: str) -> list[tuple[str, str]]:
    """(index, text) of each token the sequence view draws."""
    return re.findall(r'<span data-token="(\d+)"[^>]*>([^<]*)</span>', seq)


def test_per_layer_on_a_completion_keeps_its_tokens_and_the_generated_mark(app):
    # the tiny model writes 64 tokens here that the text's own tokenization would cut into 103
    app.text_area(key="code").set_value("def count(xs):\n    n = 0\n").run()
    button(app, "Complete").click().run()
    completed = _sequence(app)
    app.toggle(key="per_layer").set_value(True).run()
    assert not app.exception and not app.error
    assert _sequence(app) == completed  # the output layer is the completion's own scores, token for token
    app.slider(key="depth_layer").set_value(1).run()
    seq = _sequence(app)
    assert _tokens(seq) == _tokens(completed) and len(_tokens(seq)) == 64
    assert seq.count('title="generated from here"') == 1
    before, after = seq.split('title="generated from here"')
    assert "def count(xs):" in html.unescape(re.sub(r"<[^>]+>", "", before))  # the prompt comes before the mark
    assert "underline" in after and "underline" not in before
