"""pages/gluecode.py, Benchmark tasks (glueCode): how to get results, a run through the app's queue, the table,
the context plot, the confusion matrix, and an item drawn with AsC-Viz at the masked spot."""

import html

import pytest
from streamlit.testing.v1 import AppTest

from asc.jobs import JobKind
from probes.gluecode import runs
from probes.gluecode.items import OPERATORS
from tests.helpers import gluecode_items as toy_items
from tests.pages.helpers import button, charts, page
from ui import jobs

GLUECODE_PAGE = page("gluecode")
@pytest.fixture
def gluecode_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    assert jobs.job_queue().wait(300)
    return tmp_path / "gluecode"


def test_gluecode_page_without_results_says_how_to_get_them(gluecode_runs):
    at = AppTest.from_file(GLUECODE_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("python -m probes gluecode" in i.value for i in at.info)
    # the shell command under the message runs what the form's defaults run
    corpus, size = at.selectbox(key="gc_corpus").value, at.selectbox(key="gc_size").value
    assert any(f"--corpus {corpus} --size {size} " in i.value for i in at.info), (corpus, size)
    assert at.multiselect(key="gc_models").value == ["tiny-random"]
    assert at.multiselect(key="gc_tasks").value == ["NPATH", "OPS", "NAME", "CALL", "NULL"]
    at.multiselect(key="gc_contexts").set_value([]).run()
    button(at, "Start").click().run()
    assert any("one context level" in e.value for e in at.error)
    assert [b for b in at.button if b.label == jobs.demo_label(JobKind.GLUECODE)]


def test_gluecode_page_shows_a_run_made_through_the_queue(gluecode_runs):
    tasks = ["NPATH", "OPS", "NAME", "CALL", "NULL"]
    runs.build_or_load(gluecode_runs, "toy", tasks, 4, 0, lambda task, *_: (toy_items(task), {}))
    queue = jobs.job_queue()
    call = runs.gluecode_job(tasks, "toy", gluecode_runs, contexts=["function", "file"], size=4)
    queue.submit_call(JobKind.GLUECODE, "tiny-random", "glueCode: toy", gluecode_runs, call)
    assert queue.wait(300)
    assert queue.jobs()[-1].status == "done", queue.jobs()[-1].error
    predictions = runs.load_predictions(gluecode_runs, "toy-4-seed0")
    assert len(predictions) == 2 * 6 * 2  # 2 test items, 6 answers (NAME twice), 2 levels

    at = AppTest.from_file(GLUECODE_PAGE, default_timeout=300)
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    ours = table[table["model"] == "tiny-random"]
    assert list(ours["context"]) == ["function", "file"]
    ops_function = [p for p in predictions if p.task == "OPS" and p.context == "function"]
    assert ours["OPS"].iloc[0] == f"{sum(p.correct for p in ops_function) / 2:.3f}"  # as shown: 3 decimals
    assert "paper: Transformer (CodeBERTa)" in set(table["model"])
    specs = charts(at)
    context = specs[0]
    assert [a["text"] for a in context["layout"]["annotations"]] == [
        "NPATH (accuracy)", "OPS (accuracy)", "NAME (char-BLEU)", "CALL (accuracy)", "NULL (accuracy)"]
    lines = [t for t in context["data"] if t.get("mode") == "lines+markers"]
    assert len(lines) == 5 and all(t["x"] == ["function", "file"] for t in lines)
    npath_confusion = specs[1]
    right = sum(p.correct for p in predictions if p.task == "NPATH" and p.context == "function")
    assert npath_confusion["layout"]["title"]["text"] == f"tiny-random · NPATH · function: {right}/2 right"

    # an OPS item: its candidates ranked, then the function with the answer in place, outlined in both views
    at.selectbox(key="gc_it_task").set_value("OPS").run()
    assert not at.exception
    shown = at.selectbox(key="gc_it_pick")
    item_id = shown.format_func(shown.value).split()[1]
    item = next(it for it in toy_items("OPS") if it.id == item_id)
    cands = next(s for s in charts(at) if s["layout"]["title"]["text"].startswith("12 candidates"))
    assert sorted(html.unescape(y.replace("  ✓", "")) for y in cands["data"][0]["y"]) == sorted(OPERATORS)
    assert item.label in ("-", "/")  # the test items: a binary operator, the node outlined
    assert any(c.value.startswith("Outlined: node") and "`binary_operator`" in c.value for c in at.caption)
    tree = next(s for s in charts(at) if s["layout"]["title"]["text"].startswith("partial AST"))
    assert any(t.get("name") == "selected" for t in tree["data"])
    assert any(item.label in h.proto.body and "outline:2px" in h.proto.body for h in at.get("html"))


def test_a_model_that_has_not_answered_a_task_gets_a_line_not_an_error(gluecode_runs, tiny):
    items = runs.build_or_load(gluecode_runs, "toy", ["OPS", "CALL"], 4, 0, lambda task, *_: (toy_items(task), {}))
    runs.run_gluecode(tiny, {"OPS": items["OPS"], "CALL": items["CALL"]}, gluecode_runs, task_set="toy-4-seed0",
                      contexts=["function"])
    other = runs.prediction_file(gluecode_runs, "tiny-random", "toy-4-seed0", "OPS", "function")
    twin = runs.prediction_file(gluecode_runs, "other-model", "toy-4-seed0", "CALL", "function")
    twin.parent.mkdir(parents=True)
    twin.write_text(other.read_text().replace('"task": "OPS"', '"task": "CALL"').replace(
        '"model": "tiny-random"', '"model": "other-model"').replace('"item_id": "OPS/', '"item_id": "CALL/'))
    at = AppTest.from_file(GLUECODE_PAGE, default_timeout=300)
    at.run()
    assert not at.exception
    at.selectbox(key="gc_cm_model").set_value("other-model").run()
    at.selectbox(key="gc_cm_task").set_value("OPS").run()
    assert not at.exception
    assert any("has not answered this task" in i.value for i in at.info)
