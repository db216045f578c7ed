"""AppTest tests of the Streamlit app on the tiny model (no browser; test_e2e.py drives a real one).

AppTest in Streamlit 1.67 runs only the page script on reruns of an ``st.navigation`` app, so the
router's sidebar widgets vanish after the first run (the real app keeps them: test_e2e.py). Page
tests therefore run the page file with the settings the router would put in session state.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from asc import explain
from asc.corpus.jobs import JobKind
from asc.errors import InputError
from ui import cache, guards, jobs, widgets
from ui import study as ui_study

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
INSPECT = str(ROOT / "pages" / "inspect.py")
TINY = widgets.Settings(model="tiny-random", trust_remote_code=False, language="python", aggregate="median")


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(INSPECT, default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    assert not at.exception
    return at


def test_router_renders_sidebar_and_inspector(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert [w.key for w in at.sidebar.selectbox] == ["model_choice", "language", "aggregate"]
    assert at.sidebar.selectbox[0].value == "tiny-random"
    assert at.session_state["settings"] == TINY
    assert any(t.value == "Completion inspector" for t in at.title)


def _tree_traces(at, view="partial"):
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    trees = [c for c in charts if any(t.get("name") == "edges" for t in c["data"])]
    spec = trees[0 if view == "partial" else 1]
    return {t.get("name"): t for t in spec["data"]}


def _button(at, label):
    return next(b for b in at.button if b.label == label)


def test_first_render_asks_for_an_action(app):
    assert any("Explain" in i.value for i in app.info)
    assert app.text_area(key="code").value.startswith("def count_chars(")


def test_explain_plots_backend_values(app, tiny):
    _button(app, "Explain").click().run()
    assert not app.exception and not app.error
    ex = explain(tiny, app.text_area(key="code").value)
    traces = _tree_traces(app)
    ids = np.array(traces["value"]["customdata"])
    np.testing.assert_allclose(traces["value"]["marker"]["color"], ex.values[ids], rtol=1e-9)
    assert traces["value"]["marker"]["cmin"] == 0 and traces["value"]["marker"]["cmax"] == 1
    grey = np.array(traces["no tokens"]["customdata"] if "no tokens" in traces else [], dtype=int)
    assert np.isnan(ex.values[grey]).all()
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Cross-entropy"] == f"{ex.loss:.3f}" and metrics["AST nodes"] == str(ex.tree.n_nodes)


def test_changing_aggregation_changes_values(app, tiny):
    _button(app, "Explain").click().run()
    before = _tree_traces(app)["value"]["marker"]["color"]
    app.session_state["settings"] = widgets.Settings("tiny-random", False, "python", "max")
    app.run()
    _button(app, "Explain").click().run()
    after = _tree_traces(app)["value"]
    ex = explain(tiny, app.text_area(key="code").value, aggregate="max")
    np.testing.assert_allclose(after["marker"]["color"], ex.values[np.array(after["customdata"])])
    assert after["marker"]["color"] != before


def test_picking_a_node_shows_its_details(app):
    _button(app, "Explain").click().run()
    assert not any(m.value.startswith("**Node ") for m in app.markdown)
    app.selectbox(key="node_pick").set_value(4).run()
    details = [m.value for m in app.markdown if m.value.startswith("**Node 4:")]
    assert details and "`parameters`" in details[0]
    assert _tree_traces(app).get("selected") is not None


def test_complete_marks_generated_tokens(app):
    app.text_area(key="code").set_value("def add(a, b):\n").run()
    _button(app, "Complete").click().run()
    assert not app.exception and not app.error
    tokens = next(m.value for m in app.metric if m.label == "Tokens")
    assert " + " in tokens
    assert any("Generated tokens are underlined" in c.value for c in app.caption)


def test_empty_editor_is_refused_and_previous_result_stays(app):
    _button(app, "Explain").click().run()
    app.text_area(key="code").set_value("   \n").run()
    _button(app, "Explain").click().run()
    assert any("empty" in e.value for e in app.error)
    assert any(m.label == "Cross-entropy" for m in app.metric)  # the previous result is still shown


def test_unknown_model_is_a_message_not_a_crash(app):
    _button(app, "Explain").click().run()
    app.session_state["settings"] = widgets.Settings("no-such-model", False, "python", "median")
    _button(app, "Explain").click().run()
    assert not app.exception
    assert any("unknown model" in e.value for e in app.error)
    assert any(m.label == "Cross-entropy" for m in app.metric)


def test_syntax_error_example_warns(app):
    app.selectbox(key="example").set_value("syntax_error.py").run()
    _button(app, "Explain").click().run()
    assert any("syntax errors" in w.value for w in app.warning)
    traces = _tree_traces(app, "complete")
    symbols = [s for t in traces.values() if t.get("marker") for s in (t["marker"].get("symbol") or [])
               if isinstance(t["marker"].get("symbol"), list)]
    assert "x" in symbols


def test_too_long_text_is_refused(app):
    app.text_area(key="code").set_value("x = 1\n" * 20_000).run()
    _button(app, "Explain").click().run()
    assert any("characters" in e.value for e in app.error)


def test_invalid_utf8_upload_message():
    with pytest.raises(InputError, match="not valid UTF-8"):
        guards.decode_upload(b"x = '\xff'\n", "bad.py")
    assert guards.decode_upload("x = 'é'\n".encode(), "ok.py") == "x = 'é'\n"


def test_switching_models_frees_the_previous_one(tmp_path):
    import gc
    import weakref

    from asc import tiny_random_model

    other = tmp_path / "tiny-folder"
    tiny = tiny_random_model()
    tiny.model.save_pretrained(other)
    tiny.tokenizer.save_pretrained(other)
    del tiny
    cache.get_bundle.clear()
    first = weakref.ref(cache.get_bundle("tiny-random", False))
    assert cache.get_bundle("tiny-random", False) is first()  # cached: loaded once
    second = cache.get_bundle(str(other), False)
    gc.collect()
    assert first() is None and second.name == "tiny-folder"
    cache.get_bundle.clear()


# --- Global AsC-Eval and Compare pages ---------------------------------------------------------

GLOBAL_PAGE = str(ROOT / "pages" / "global_eval.py")
COMPARE_PAGE = str(ROOT / "pages" / "compare.py")


def test_global_page_without_results_says_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("No results yet" in i.value for i in at.info)


@pytest.mark.real
def test_global_page_numbers_equal_backend(monkeypatch, runs_dir):
    from asc import load_categories, load_run
    from asc.corpus.summary import summary_table, wide_table

    monkeypatch.setenv("ASC_RUNS_DIR", str(runs_dir))
    at = AppTest.from_file(GLOBAL_PAGE, default_timeout=180)
    at.run()
    assert not at.exception and not at.error
    assert len(at.multiselect(key="results").value) == 2  # newest run per model preselected
    shown = at.dataframe[0].value
    runs = [load_run(runs_dir / name) for name in ("smol", "tiny")]
    expected = wide_table(summary_table(runs, load_categories("python").categories, n_boot=500, seed=0))
    assert list(shown["model"]) == list(expected["model"]) == ["smollm2-135m", "tiny-random"]
    np.testing.assert_allclose(shown["Global"].to_numpy(float), expected["Global"].to_numpy(float))
    np.testing.assert_allclose(shown["Scope"].to_numpy(float), expected["Scope"].to_numpy(float))
    # a widget changes one output: the threshold moves the line in the category bars
    at.number_input(key="threshold").set_value(0.8).run()
    bars = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "barmode" in json.loads(c.proto.spec)
                ["layout"])
    assert any(s.get("y0") == 0.8 for s in bars["layout"]["shapes"])
    assert any(d.value is not None and "difference" in getattr(d.value, "columns", []) for d in at.dataframe)


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
    _button(at, "Compare").click().run()
    assert not at.exception and not at.error
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    diff = next(c for c in charts if c["layout"]["title"]["text"].startswith("difference tree"))
    colors = next(t for t in diff["data"] if t.get("name") == "value")["marker"]["color"]
    assert colors and all(v == 0 for v in colors)
    ex = explain(tiny, at.text_area(key="cmp_code").value)
    model_tree = next(t for t in charts[0]["data"] if t.get("name") == "value")
    np.testing.assert_allclose(model_tree["marker"]["color"], ex.values[np.array(model_tree["customdata"])])


def test_compare_page_needs_two_models(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(COMPARE_PAGE, default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    at.multiselect(key="cmp_models").set_value(["tiny-random"]).run()
    _button(at, "Compare").click().run()
    assert any("at least two models" in e.value for e in at.error)


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
    _button(at, "Start").click().run()
    assert jobs.job_queue().wait(120)
    job = jobs.job_queue().jobs()[-1]
    assert job.status == "done" and job.total == 5 and job.out.parent == tmp_path / "runs"
    at.run()
    assert not at.exception
    assert any(t.value == "AsC-Eval per model (Table I)" for t in at.subheader)
    assert at.dataframe[0].value["snippets"].tolist() == [5]


LAYERS_PAGE = str(ROOT / "pages" / "layers.py")


@pytest.mark.parametrize("page, command", [("layers.py", "python -m probes layers"),
                                           ("attention.py", "python -m probes attention")])
def test_probe_pages_without_results_say_how_to_get_them(monkeypatch, tmp_path, page, command):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "pages" / page), default_timeout=120)
    at.run()
    assert not at.exception
    assert any(command in i.value for i in at.info)
    if page == "layers.py":
        assert at.multiselect(key="lp_models").value == ["tiny-random", "minilm-l6"]


def test_layers_page_runs_probes_and_plots_them(monkeypatch, tmp_path):
    from probes.inspect.layers import load_results
    from tests.test_layers import _toy_task

    tsv = tmp_path / "toy.tsv"
    _toy_task().to_tsv(tsv)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    at.multiselect(key="lp_models").set_value(["tiny-random"]).run()
    at.multiselect(key="lp_tasks").set_value([]).run()
    _button(at, "Start").click().run()
    assert any("at least one model and one task" in e.value for e in at.error)
    # a run from a task file goes through the app's queue, like the Start button with an upload
    queue = jobs.job_queue()
    from probes.inspect.layers import layer_job

    out = tmp_path / "runs" / "layers"
    queue.submit_call(JobKind.LAYERS, "tiny-random", "layer probes: toy", out, layer_job([], out, task_files=[tsv]))
    assert queue.wait(120)
    assert queue.jobs()[-1].status == "done"
    at.run()
    assert not at.exception
    result = load_results(out)[0]
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    heat = charts[0]["data"][0]
    assert heat["y"] == ["TOY"] and np.allclose(heat["z"][0], result.accuracy)
    titles = [c["layout"]["title"]["text"] for c in charts]
    assert any("confusion" in t.lower() or "layer" in t for t in titles)
    assert any(t.startswith("tiny-random · TOY · layer") for t in titles)


ATTENTION_PAGE = str(ROOT / "pages" / "attention.py")


def test_attention_page_shows_backend_scores(monkeypatch, tmp_path):
    from asc.models import tiny_random_model
    from probes.codesyntax.attention import relation_table, run_attention
    from tests.test_attention import CODES

    run = run_attention(tiny_random_model(), CODES * 3, tmp_path / "runs" / "attention", spec="tiny-random", ks=(1, 2))
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
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    relation = at.selectbox(key="at_relation").value
    heat = charts[0]["data"][0]
    assert np.allclose(np.asarray(heat["z"], dtype=float), run.scores.layer_head(relation, "first", 1, "test"),
                       equal_nan=True)
    amap = charts[1]
    assert any(t.get("name") == "gold edge" for t in amap["data"])
    assert any("top-1 attention" in h.proto.body for h in at.get("html"))


TINY_STUDY = """\
id: tiny-study
title: Tiny study
model: tiny-random
consent: You agree to rate two samples.
groups:
  - {id: S2, name: AST partial, view: partial}
background:
  - {id: python, text: "How proficient are you in Python?", choices: [Novice, Expert]}
ratings:
  - {id: useful, text: The visualization is useful}
  - {id: readable, text: The visualization is easy to read}
comment: {id: comment, text: "Anything else?"}
samples:
  - {id: a, prompt: "def f(x):\\n", completion: "    return x\\n"}
  - {id: b, prompt: "def g(y):\\n", completion: "    return [y\\n"}
"""


@pytest.fixture
def tiny_study(monkeypatch, tmp_path):
    from asc.study.definition import load_study
    from asc.study.frozen import prepare_study, save_frozen

    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_STUDY)
    monkeypatch.setenv("ASC_STUDY", str(path))
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    _, frozen_path, _ = ui_study.study_paths()
    frozen_path.parent.mkdir(parents=True, exist_ok=True)
    save_frozen(prepare_study(load_study(path), cache.get_bundle("tiny-random")), frozen_path)
    return path


def test_participant_completes_the_study_and_answers_are_stored(tiny_study):
    at = AppTest.from_file(str(ROOT / "pages" / "study.py"), default_timeout=120)
    at.run()
    assert not at.exception
    _button(at, "Start the study").click().run()
    code = at.query_params["code"]
    code = code[0] if isinstance(code, list) else code
    assert len(code) == 8
    _button(at, "I agree and want to take part").click().run()
    at.radio(key="bg_python").set_value("Expert")
    at.get("form_submit_button")[0].click().run()
    assert any("Sample 1 of 2" in s.value for s in at.subheader)
    assert at.get("plotly_chart"), "the partial AST is shown to group S2"
    at.get("form_submit_button")[0].click().run()  # nothing rated: refused with the question named
    assert any("useful" in e.value.lower() for e in at.error)
    at.radio(key="r_a_useful").set_value(4)
    at.radio(key="r_a_readable").set_value(2)
    at.get("form_submit_button")[0].click().run()
    assert any("Sample 2 of 2" in s.value for s in at.subheader)
    at.radio(key="r_b_useful").set_value(5)
    at.radio(key="r_b_readable").set_value(5)
    at.text_area(key="c_b").set_value("nice tree")
    at.get("form_submit_button")[0].click().run()
    assert not at.exception
    assert any("Thank you" in s.value for s in at.success) or at.success
    _, _, store = ui_study.study()
    rows = store.responses()
    mine = rows[rows["code"] == code]
    assert sorted(mine["question_id"].tolist()) == sorted(["python", "useful", "readable", "comment"] * 1 +
                                                          ["useful", "readable", "comment"])
    assert set(mine[mine["sample_id"] == "b"]["value"].dropna()) == {"5", "nice tree"}
    assert store.state(code).finished


def test_study_results_page_needs_the_password(tiny_study, monkeypatch):
    page = str(ROOT / "pages" / "study_admin.py")
    at = AppTest.from_file(page, default_timeout=120)
    at.run()
    assert any("ASC_STUDY_PASSWORD" in i.value for i in at.info) and not at.dataframe
    monkeypatch.setenv("ASC_STUDY_PASSWORD", "s3cret")
    at = AppTest.from_file(page, default_timeout=120)
    at.run()
    at.text_input(key="study_pw").set_value("wrong").run()
    assert not at.dataframe and any("Wrong password" in e.value for e in at.error)
    _, _, store = ui_study.study()
    code = store.new_participant()
    store.consent(code)
    store.save_background(code, {"python": "Novice"})
    store.save_ratings(code, "a", {"useful": 5, "readable": 1, "comment": ""})
    at.text_input(key="study_pw").set_value("s3cret").run()
    assert not at.exception
    progress, table = at.dataframe[0].value, at.dataframe[1].value
    assert progress["assigned"].tolist() == [1]
    row = table[table["question"] == "useful"].iloc[0]
    assert row["n"] == 1 and row["Strongly agree"] == 100
