"""The one-click demos (ui.jobs.demo_button): on a fresh runs folder each page offers one, a click submits it
to the app's queue, and once it has finished the page shows its figures.

The demos run on asc.paths.default_model(), here the tiny random model ($ASC_MODEL); the layer demo then
leaves out its MiniLM baseline (no real model in these tests: see ui.jobs.demo_models).
"""

import json
import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from asc.jobs import JobKind, run_folder
from tests.helpers import ATTENTION_CODES
from tests.pages.helpers import button, charts, page
from ui import jobs


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """The tiny model and an empty runs folder; the app's queue idle."""
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    assert jobs.job_queue().wait(300)
    return tmp_path / "runs"


def _hold_queue(out: Path, kind: JobKind) -> threading.Event:
    """Keep the app's queue busy (with another tab's job of another kind than ``kind``, writing nothing to ``out``)
    until the returned event is set: what is submitted next stays queued, so the page can be checked before its
    demo has finished."""
    gate = threading.Event()
    other = JobKind.BLANCA if kind is not JobKind.BLANCA else JobKind.EVAL
    jobs.job_queue().submit_call(other, "tiny-random", "hold", out, lambda *_: gate.wait(120), owner="other")
    return gate


def _click_demo(name: str, kind: JobKind, runs: Path) -> tuple[AppTest, list]:
    """Open ``pages/<name>.py``, check it has no results and offers the demo, click it: (page, new jobs)."""
    at = AppTest.from_file(page(name), default_timeout=300)
    at.run()
    assert not at.exception
    assert any("yet" in i.value and "demo" in i.value for i in at.info)  # "No results yet: run the small demo..."
    gate = _hold_queue(runs / "held", kind)
    before = len(jobs.job_queue().jobs())
    button(at, jobs.demo_label(kind)).click().run()
    assert not at.exception
    new = jobs.job_queue().jobs()[before:]
    assert [job.kind for job in new] == [kind] * len(new) and new
    assert not [b for b in at.button if b.label.startswith(jobs.DEMO_BUTTON)]  # no second demo while it runs
    assert any("A run is under way" in i.value for i in at.info)
    assert at.get("progress")  # the page's job panel shows it
    assert any("1 job ahead of it" in p.text for p in at.get("progress"))  # the other tab's job runs first
    gate.set()
    assert jobs.job_queue().wait(300)
    assert [job.status for job in new] == ["done"] * len(new), [job.error for job in new]
    at.run()
    assert not at.exception
    assert not any("yet" in i.value for i in at.info)
    assert charts(at)  # plotly figures of the new results
    return at, new


def test_global_demo_runs_humaneval_on_the_default_model_and_shows_figures(fresh):
    at, new = _click_demo("global_eval", JobKind.EVAL, fresh)
    (job,) = new
    assert (job.model, job.corpus, job.limit) == ("tiny-random", jobs.DEMO_CORPUS, jobs.DEMO_LIMIT) == (
        "tiny-random", "humaneval", 40)
    assert job.out == run_folder(fresh, "tiny-random", "humaneval", 40)
    assert job.total == 40
    assert at.dataframe  # Table I


@pytest.mark.slow
def test_causal_demo_is_the_same_eval_run(fresh):
    at = AppTest.from_file(page("causal"), default_timeout=300)
    at.run()
    assert any("estimates appear here when it finishes" in c.value for c in at.caption)
    gate = _hold_queue(fresh / "held", JobKind.EVAL)
    button(at, jobs.demo_label(JobKind.EVAL)).click().run()
    assert not at.exception
    (job,) = jobs.job_queue().jobs()[-1:]
    assert job.kind is JobKind.EVAL and job.out == run_folder(fresh, "tiny-random", "humaneval", 40)
    assert any("A run is under way" in i.value for i in at.info)
    gate.set()
    assert jobs.job_queue().wait(300) and job.status == "done"
    at.run()
    assert not at.exception and not any("No results yet" in i.value for i in at.info)
    assert at.dataframe  # Table II


@pytest.mark.slow
def test_layers_demo_uses_only_the_default_model_under_the_tiny_model(fresh):
    assert jobs.demo_models(JobKind.LAYERS) == ["tiny-random"]
    at, new = _click_demo("probing", JobKind.LAYERS, fresh)
    assert [job.model for job in new] == ["tiny-random"]
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert titles[0] == "tiny-random: accuracy per task and layer (box: layer chosen on dev)"
    heat = charts(at)[0]["data"][0]
    assert set(heat["y"]) == set(jobs.DEMO_TASKS)


def test_attention_demo_scores_the_default_model(fresh, monkeypatch, tmp_path):
    # the tiny model's 64-token window takes no HumanEval function whole (attention runs skip longer ones):
    # the demo reads short functions here instead, through the same path
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(json.dumps({"id": f"s{i}", "code": code.replace("def ", f"def v{i}_", 1)})
                               for i, code in enumerate(ATTENTION_CODES * 3)))
    monkeypatch.setattr(jobs, "DEMO_CORPUS", str(short))
    _, new = _click_demo("attention", JobKind.ATTENTION, fresh)
    assert [job.model for job in new] == ["tiny-random"]
    assert new[0].corpus == f"attention maps: {short} ({jobs.DEMO_LIMIT})"


@pytest.mark.slow
def test_gluecode_demo_answers_the_algorithms_tasks_at_two_levels(fresh):
    at, new = _click_demo("gluecode", JobKind.GLUECODE, fresh)
    assert [job.model for job in new] == ["tiny-random"]
    from probes.gluecode.runs import load_predictions

    predictions = load_predictions(fresh / "gluecode", "algorithms-24-seed0")
    assert {p.context for p in predictions} == {"function", "file"}
    assert {p.task for p in predictions} == {"NPATH", "OPS", "NAME", "CALL", "NULL"}
    assert {p.mode for p in predictions if p.task == "NAME"} == {"generate"}
    assert at.dataframe[0].value["model"].iloc[0] == "tiny-random"  # Table 2


@pytest.mark.slow
def test_blanca_demo_scores_the_stdlib_tasks(fresh):
    at, new = _click_demo("blanca", JobKind.BLANCA, fresh)
    assert [job.model for job in new] == ["tiny-random"]  # MiniLM's place under the tiny default (no real model)
    from probes.blanca.build import load_task_set
    from probes.blanca.runs import load_scores

    task_set = load_task_set(fresh / "blanca" / "tasks" / "stdlib-seed0")
    built = set(task_set.items)
    assert {"H", "U"} <= built and set(load_scores(fresh / "blanca", "stdlib-seed0")["task"]) == built
    assert at.dataframe[0].value["model"].iloc[0] == "tiny-random"  # the paper-style table


def test_layer_demo_adds_the_minilm_baseline_for_a_real_default(monkeypatch):
    from asc.models import EMBEDDED

    monkeypatch.setenv("ASC_MODEL", "smollm2-135m")
    expected = ["smollm2-135m", "minilm-l6"] if EMBEDDED["minilm-l6"].installed() else ["smollm2-135m"]
    assert jobs.demo_models(JobKind.LAYERS) == expected
    assert jobs.demo_models(JobKind.EVAL) == jobs.demo_models(JobKind.ATTENTION) == ["smollm2-135m"]
    # the BLANCA demo embeds text: MiniLM in the default decoder's place
    assert jobs.demo_models(JobKind.BLANCA) == (["minilm-l6"] if EMBEDDED["minilm-l6"].installed()
                                                else ["smollm2-135m"])
    monkeypatch.delenv("ASC_MODEL")
    assert jobs.demo_models(JobKind.EVAL) == ["smollm2-135m"]  # asc.paths.default_model()


def test_a_new_tab_shows_the_queued_demo_of_another_without_its_controls(fresh):
    """Tab A's layer demo waits in the queue: tab B, opened afterwards, lists it (kind, status, place in line, none of
    A's text), offers no second demo and no Cancel for it, and says the results will appear."""
    first = AppTest.from_file(page("probing"), default_timeout=300)
    first.run()
    gate = _hold_queue(fresh / "held", JobKind.LAYERS)
    button(first, jobs.demo_label(JobKind.LAYERS)).click().run()
    (job,) = [j for j in jobs.job_queue().jobs(JobKind.LAYERS) if j.active]
    second = AppTest.from_file(page("probing"), default_timeout=300)
    second.run()
    assert not second.exception
    assert second.session_state["asc_tab_token"] != job.owner
    texts = [p.text for p in second.get("progress")]
    assert any(f"{job.id} another tab" in t and "layer probes" in t and "queued" in t and "1 job ahead of it" in t
               for t in texts), texts
    assert not any("tiny-random" in t for t in texts)  # what the other tab chose stays its own
    assert not [b for b in second.button if b.key == f"cancel_{job.id}" or b.label.startswith(jobs.DEMO_BUTTON)]
    assert any("A run is under way" in i.value for i in second.info)
    gate.set()
    assert jobs.job_queue().wait(300) and job.status == "done"
