"""Layer-probing runs: result files, resume, tables, Table III normalization, the job and the CLI."""

import json

import numpy as np
import pandas as pd
import pytest

from asc.corpus.jobs import JobKind, JobQueue
from asc.models import tiny_random_model
from probes.inspect import layers as L
from probes.__main__ import main
from probes.inspect.layers import (
    best_layer_table,
    build_tasks,
    layer_job,
    load_results,
    normalized_table,
    result_path,
    results_table,
    run_layers,
)
from probes.inspect.tasks import Task


def _toy_task(name="TOY", n=80):
    """Label 1 when the snippet returns, 0 when it prints: visible to a probe even on random weights."""
    texts, y = [], []
    for i in range(n):
        if i % 2:
            texts.append(f"def f{i}(x):\n    return x + {i}\n")
        else:
            texts.append(f"def f{i}(x):\n    print(x, {i})\n")
        y.append(i % 2)
    split = np.array((["tr"] * 6 + ["va"] * 2 + ["te"] * 2) * (n // 10))
    return Task(name, ("prints", "returns"), tuple(texts), np.array(y), split)


def test_run_writes_results_and_resumes(tiny, tmp_path, monkeypatch):
    task = _toy_task()
    stages = []
    results = run_layers(tiny, [task], tmp_path, on_progress=lambda s, d, t: stages.append(s))
    assert len(results) == 1 and results[0].n_layers == tiny.n_layers + 1
    path = result_path(tmp_path, tiny, "TOY", "last")
    doc = json.loads(path.read_text())
    assert doc["task_digest"] == task.digest and doc["provenance"]["tokenizer"]["vocab_size"] == len(tiny.tokenizer)
    assert (tmp_path / "tasks" / f"TOY-{task.digest}.tsv").exists()
    assert {"TOY features", "TOY probes"} <= set(stages)

    def boom(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(L, "train_probes", boom)
    again = run_layers(tiny, [task], tmp_path)  # resumed: nothing recomputed
    assert np.array_equal(again[0].accuracy, results[0].accuracy)
    with pytest.raises(AssertionError, match="trained again"):  # another seed is another result
        run_layers(tiny, [task], tmp_path, seed=1)


def test_tables_from_results(tiny, tmp_path):
    run_layers(tiny, [_toy_task("A"), _toy_task("B", 60)], tmp_path)
    results = load_results(tmp_path)
    table = results_table(results)
    assert len(table) == 2 * (tiny.n_layers + 1)
    assert table.groupby("task")["best_layer"].sum().tolist() == [1, 1]
    best = best_layer_table(results)
    assert set(best["task"]) == {"A", "B"}
    for r in results:
        row = best[best["task"] == r.task].iloc[0]
        assert row["layer"] == r.best_layer and row["accuracy"] == r.accuracy[r.best_layer]


def test_normalized_table_is_table_iii():
    best = pd.DataFrame({"model": ["base", "a", "b", "base", "a", "b"], "task": ["X"] * 3 + ["Y"] * 3,
                         "layer": 0, "accuracy": [0.5, 0.7, 0.9, 0.8, 0.6, 0.8], "control_accuracy": 0.1,
                         "majority": 0.1})
    norm = normalized_table(best, "base")
    assert norm.loc["base", "X"] == 0 and norm.loc["b", "X"] == 100 and norm.loc["a", "X"] == pytest.approx(50)
    assert np.isnan(norm.loc["a", "Y"])  # nobody beats the baseline on Y
    assert normalized_table(best, "missing").isna().all().all()


def test_build_tasks_errors_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="choose from KTX, IDN"):
        build_tasks(["NOPE"])
    with pytest.raises(ValueError, match="no task"):
        build_tasks([])
    with pytest.raises(ValueError, match="not found"):
        build_tasks([], task_files=[tmp_path / "missing.tsv"])


def test_background_job_runs_tasks_from_a_file(tmp_path):
    tsv = tmp_path / "toy.tsv"
    _toy_task().to_tsv(tsv)
    queue = JobQueue(lambda spec: tiny_random_model())
    job = queue.submit_call(JobKind.LAYERS, "tiny-random", "layer probes", tmp_path / "out",
                            layer_job([], tmp_path / "out", task_files=[tsv]))
    assert queue.wait(120)
    assert job.status == "done", job.error
    assert [r.task for r in load_results(tmp_path / "out")] == ["TOY"]
    assert queue.jobs(JobKind.LAYERS) == [job] and queue.jobs(JobKind.ATTENTION) == []


def test_a_probe_job_with_an_unknown_task_fails_with_the_message_not_a_crash(tmp_path, caplog):
    queue = JobQueue(lambda spec: tiny_random_model())
    job = queue.submit_call(JobKind.LAYERS, "tiny-random", "layer probes", tmp_path / "out",
                            layer_job(["XYZ"], tmp_path / "out"))
    with caplog.at_level("ERROR"):
        assert queue.wait(120)
    assert job.status == "failed" and "XYZ" in job.error and "KTX" in job.error
    assert "Traceback" not in caplog.text and "failed" not in caplog.text  # a user error is no crash


def test_cli_runs_and_reports(tmp_path, capsys):
    tsv = tmp_path / "toy.tsv"
    _toy_task().to_tsv(tsv)
    code = main(["layers", "--model", "tiny-random", "--task-file", str(tsv), "--out", str(tmp_path / "o"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "TOY" in out and "tiny-random" in out
    assert main(["layers", "--model", "tiny-random", "--tasks", "XYZ", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "XYZ" in err and "KTX" in err
    assert main(["layers", "--model", "nonsense", "--task-file", str(tsv), "--out", str(tmp_path / "o")]) == 2


@pytest.mark.real
def test_real_smollm2_layers_encode_token_kinds(tmp_path):
    """SmolLM2 on KTX and IDN (200 samples each, stdlib): the probe beats the control and the majority class."""
    from asc.models import load_model

    tasks = build_tasks(["KTX", "IDN"], "stdlib", size=200, seed=0)
    results = run_layers(load_model("smollm2-135m"), tasks, tmp_path)
    for r in results:
        best = r.accuracy[r.best_layer]
        assert r.n_layers == 31
        assert best > r.majority + 0.2, (r.task, best, r.majority)
        assert best > r.control_accuracy[r.best_layer] + 0.2, (r.task, best, r.control_accuracy)
    assert load_results(tmp_path)[0].provenance["corpus"] == "stdlib"
