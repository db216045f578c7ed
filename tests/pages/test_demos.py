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
def test_causal_demo_scores_all_of_humaneval_and_estimates_several_categories(fresh):
    """Issue 44: the Causal page's demo is an eval run of its own, all 164 HumanEval functions, so that Table II
    estimates several categories at the usual minimum of 30 snippets per treatment (on the Global demo's 40 only
    the concepts every snippet has reach it), and the page says so."""
    from asc.causal import MIN_SNIPPETS

    at = AppTest.from_file(page("causal"), default_timeout=600)
    at.run()
    assert any("estimates appear here when it finishes" in c.value for c in at.caption)
    assert any(f"all {jobs.DEMO_CAUSAL_LIMIT} HumanEval functions" in c.value and f"at least {MIN_SNIPPETS} snippets"
               in c.value for c in at.caption)  # the demo's size, and why, under its button
    gate = _hold_queue(fresh / "held", JobKind.EVAL)
    button(at, jobs.demo_label(jobs.CAUSAL_DEMO)).click().run()
    assert not at.exception
    (job,) = jobs.job_queue().jobs()[-1:]
    assert job.kind is JobKind.EVAL and (job.corpus, job.limit) == ("humaneval", jobs.DEMO_CAUSAL_LIMIT) == (
        "humaneval", 164)
    assert job.out == run_folder(fresh, "tiny-random", "humaneval", 164)
    assert any("A run is under way" in i.value for i in at.info)
    gate.set()
    assert jobs.job_queue().wait(600) and job.status == "done"
    at.session_state["causal_sims"] = 10  # the fewest refuter simulations the page offers: what is asserted here is
    at.run()  # which treatments are estimated (set by the snippets, not the refuters); 50 cost this test 30 s
    assert not at.exception and not any("No results yet" in i.value for i in at.info)
    assert at.number_input(key="causal_sims").value == 10
    effects = at.dataframe[1].value  # Table II: the effects and verdicts
    estimated = effects[(effects["status"] == "estimated") & effects["treatment"].str.startswith("category: ")]
    assert len(estimated) >= 5, effects[["treatment", "status"]]
    assert any(f"from {jobs.DEMO_CAUSAL_LIMIT} snippets" in c.value for c in at.caption)


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


def test_every_demo_button_states_the_time_make_bench_measured():
    """Issue 44: each button's minutes come from docs/bench/demos.txt (benchmarks/bench_demos.py runs each demo as the
    app submits it), its measured seconds times the margin, rounded up: never a number typed by hand."""
    from benchmarks.report import read
    from tests.helpers import ROOT

    bench = read(jobs.DEMO_BENCH)
    assert "benchmarks/bench_demos.py" in (ROOT / "Makefile").read_text()  # `make bench` measures them
    for demo in jobs.DEMOS:
        seconds = float(bench.figures[f"{demo}_s"])
        assert jobs.DEMO_MINUTES[demo] == jobs.promised_minutes(seconds) >= seconds * jobs.DEMO_MARGIN / 60, demo
        minutes = jobs.DEMO_MINUTES[demo]
        assert f"up to {minutes} minute{'s' if minutes != 1 else ''} on" in jobs.demo_label(demo)
    assert jobs.DEMO_MINUTES[JobKind.EVAL] == jobs.DEMO_MINUTES["eval"]  # a JobKind is its demo's name


def test_demo_minutes_are_read_from_the_bench_file(tmp_path):
    from benchmarks.report import Report

    report = Report("demos", "a demo", out=tmp_path / "demos.txt")
    report.line(f"eval {report.figure('eval_s', 100.4, '.0f')} s, layers {report.figure('layers_s', 20, '.0f')} s")
    report.write()
    minutes = jobs.demo_minutes(tmp_path / "demos.txt")
    assert (minutes["eval"], minutes["layers"]) == (3, 1)  # 100 s x 1.5 = 2.5 min: 3; at least 1
    assert minutes["causal"] == minutes["blanca"] == jobs.DEMO_UNMEASURED  # not measured there
    assert jobs.demo_minutes(tmp_path / "none.txt") == dict.fromkeys(map(str, jobs.DEMOS), jobs.DEMO_UNMEASURED)


@pytest.mark.slow
def test_the_layer_demo_tests_enough_samples_for_a_readable_accuracy():
    """Issue 44: at 20 test samples per task a 10-class accuracy (KTX) moves by 0.05 a sample and MiniLM's heatmap read
    as broken; the demo's tasks are large enough for 60 test samples each (6 per KTX class)."""
    from probes.catalog import build_tasks

    for task in build_tasks(jobs.DEMO_TASKS, jobs.DEMO_TASK_CORPUS, jobs.DEMO_SIZE):
        assert (task.split == "te").sum() >= 60, task.name
