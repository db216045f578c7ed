"""pages/blanca.py, Text about code (BLANCA): how to get results, a run submitted and one made through the app's
queue, the paper-style table equal to the backend's summary, the figures with their downloads, and R's questions
browsed with the real MiniLM encoder."""

import json
import shutil
import threading

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from asc.jobs import JobKind
from probes.blanca.build import load_task_set
from probes.blanca.evaluate import blanca_table, summarize
from probes.blanca.runs import blanca_job, load_scores, run_blanca, target_kinds
from tests.helpers import blanca_items, write_blanca_set
from tests.pages.helpers import button, charts, page
from ui import jobs

BLANCA_PAGE = page("blanca")
NO_DOCS = "the Python documentation's sources are missing: apt-get install python3.11-doc (a test)"


@pytest.fixture
def blanca_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    assert jobs.job_queue().wait(300)
    return tmp_path / "blanca"


def _downloads(at) -> list[str]:
    return [b.proto.label for b in at.get("download_button")]


def _titles(at) -> list[str]:
    return [c["layout"]["title"]["text"] for c in charts(at)]


def test_blanca_page_without_results_says_how_to_get_them_and_submits_runs(blanca_runs):
    at = AppTest.from_file(BLANCA_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("python -m probes blanca" in i.value for i in at.info)
    assert [b for b in at.button if b.label == jobs.demo_label(JobKind.BLANCA)]
    assert at.multiselect(key="bl_models").value == ["tiny-random"]  # the demo's model: no real one in tests
    assert at.multiselect(key="bl_tasks").value == ["R", "L", "F", "H", "U"]
    at.multiselect(key="bl_tasks").set_value([]).run()
    button(at, "Start").click().run()
    assert any("one task" in e.value for e in at.error)

    queue = jobs.job_queue()
    gate = threading.Event()  # keeps the queue busy, so the page's job is checked (and cancelled) before it runs
    queue.submit_call(JobKind.EVAL, "tiny-random", "hold", blanca_runs.parent / "held", lambda *_: gate.wait(120),
                      owner="other")
    try:
        at.multiselect(key="bl_tasks").set_value(["H", "U"]).run()
        before = len(queue.jobs())
        button(at, "Start").click().run()
        assert not at.exception
        [job] = queue.jobs()[before:]
        assert (job.kind, job.model, job.corpus, job.out) == (JobKind.BLANCA, "tiny-random",
                                                              "BLANCA: H, U (stdlib-seed0)", blanca_runs)
        assert at.get("progress")  # the page's job panel
        job.cancel.set()
    finally:
        gate.set()
    assert queue.wait(120) and job.status == "cancelled"


def test_blanca_page_shows_a_run_made_through_the_queue(blanca_runs):
    write_blanca_set(blanca_runs, skipped={"U": NO_DOCS})
    queue = jobs.job_queue()
    queue.submit_call(JobKind.BLANCA, "tiny-random", "BLANCA: toy", blanca_runs, blanca_job(["R", "L", "F", "H"],
                                                                                           blanca_runs))
    assert queue.wait(300)
    assert queue.jobs()[-1].status == "done", queue.jobs()[-1].error
    task_set = load_task_set(blanca_runs / "tasks" / "stdlib-seed0")
    scores = load_scores(blanca_runs, "stdlib-seed0")
    assert set(scores["task"]) == {"R", "L", "F", "H"} and set(scores["model"]) == {"tiny-random"}

    at = AppTest.from_file(BLANCA_PAGE, default_timeout=300)
    at.run()
    assert not at.exception
    assert [i.value.replace("\\", "") for i in at.info] == [f"U (class usage similarity) is not in this task set: "
                                                             f"{NO_DOCS}"]  # the reason, as plain text
    for split in ("test", "all"):
        if split == "all":
            at.radio(key="bl_split").set_value("all").run()
            assert not at.exception
        summary = summarize(scores, split, targets=target_kinds(task_set), seed=0)
        shown = at.dataframe[0].value
        pd.testing.assert_frame_equal(shown.reset_index(drop=True), blanca_table(summary))
        assert list(shown["model"]) == ["tiny-random", "paper: USE", "paper: best fine-tuned"]
        pd.testing.assert_frame_equal(at.dataframe[1].value.reset_index(drop=True), summary)
    n_r = summary[(summary["task"] == "R") & (summary["metric"] == "MRR")]["n"].iloc[0]
    assert n_r == len(blanca_items("R"))  # all: the six questions, train and test
    assert _downloads(at)[:3] == ["Table (CSV)", "Summary (JSON)", "Scores (CSV)"]
    assert {"Main metric per task (HTML)", "L, linked vs unlinked posts (HTML)", "F, forum text vs class "
            "documentation (HTML)", "H, class hierarchy distance (HTML)", "Ranked answers (HTML)"} <= set(_downloads(at))
    titles = _titles(at)
    assert titles[0].startswith("BLANCA per task") and titles[1].startswith("L: linked")
    assert any(t.startswith("Embedding distance predicted from class hierarchy distance (H:") for t in titles)
    assert any(c.value == "U, class usage similarity: not scored." for c in at.caption)
    bars = charts(at)[0]
    assert [a["text"] for a in bars["layout"]["annotations"]] == ["R (MRR)", "L (d)", "F (d)", "H (r)"]
    assert bars["data"][0]["y"] == [pytest.approx(summary.query("task == 'R' and metric == 'MRR'")["value"].iloc[0])]

    # a fine-tuned model (its model.json records the fine-tuning) trained on the train split: test only
    [scored] = (blanca_runs / "scores" / "stdlib-seed0").iterdir()
    twin = shutil.copytree(scored, scored.with_name("ft-r"))
    (twin / "model.json").write_text(json.dumps({"label": "FT-R (tiny)", "finetune": {"tasks": ["R"]}}))
    at.run()
    assert not at.exception
    assert list(at.dataframe[0].value["model"])[:1] == ["tiny-random"] and "FT-R (tiny)" not in set(
        at.dataframe[0].value["model"])
    assert any(c.value.startswith("Left out on all items (fine-tuned on the train split): FT\\-R") for c in at.caption)
    at.radio(key="bl_split").set_value("test").run()
    assert list(at.dataframe[0].value["model"]) == ["FT-R (tiny)", "tiny-random", "paper: USE", "paper: best fine-tuned"]


@pytest.mark.real
def test_blanca_page_browses_r_questions_scored_by_minilm(blanca_runs):
    from asc.models import load_model

    folder = write_blanca_set(blanca_runs)
    run_blanca(load_model("minilm-l6"), load_task_set(folder), blanca_runs)
    scores = load_scores(blanca_runs, "stdlib-seed0")
    at = AppTest.from_file(BLANCA_PAGE, default_timeout=300)
    at.run()
    assert not at.exception and not at.info
    table = at.dataframe[0].value
    assert table["model"].iloc[0] == "minilm-l6" and table.iloc[0, 1:].notna().all()  # every task has its numbers
    assert len(_titles(at)) == 6  # bars, L, F, H, U, the ranked answers
    assert len([d for d in _downloads(at) if d.endswith("(HTML)")]) == 6

    picker = at.selectbox(key="bl_r_question")
    tests = [it for it in blanca_items("R") if it.split == "test"]
    assert picker.options == [it.question for it in tests]  # the test split's questions, shown by their text
    seen = {}
    for item in tests:
        picker = at.selectbox(key="bl_r_question").set_value(item.id)
        at.run()
        assert not at.exception
        ranked = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("minilm-l6: answers to"))
        seen[item.id] = ranked
        rows = scores[(scores["id"] == item.id)].sort_values("distance", kind="stable")
        true = int(rows["row"][rows["target"] > 0].iloc[0])
        rank = list(rows["row"]).index(true) + 1
        assert f"question {item.id} " in ranked["layout"]["title"]["text"]
        assert f"true answer ranked {rank} of 3" in ranked["layout"]["title"]["text"]
        assert ranked["data"][0]["x"] == pytest.approx(list(1 - rows["distance"]))
        texts = [t.value for t in at.get("text")]
        assert texts[0] == item.question and item.answers[true] in texts  # the true answer's text, wherever it ranks
        assert len(texts) == 4  # the question and its three answers (three at most are shown: all of them here)
    assert len({json.dumps(c["data"]) for c in seen.values()}) == len(tests)  # each question draws its own answers
