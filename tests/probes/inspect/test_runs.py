"""probes.inspect.runs: result files, resume, tables, Table III normalization; probes.catalog's task building
and background job (glueCode's tasks in the catalogue: tests/probes/test_catalog.py).

The command line (``python -m probes layers``) is tested in tests/probes/test_main.py."""

import json

import numpy as np
import pandas as pd
import pytest

from asc.jobs import JobKind, JobQueue
from probes.catalog import build_tasks, layer_job
from probes.inspect import runs as L
from probes.inspect.runs import (
    best_layer_table,
    load_results,
    normalized_table,
    result_path,
    results_table,
    run_layers,
)
from tests.helpers import toy_task
from tests.support.models import tiny_random_model


def test_run_writes_results_and_resumes(tiny, tmp_path, monkeypatch):
    task = toy_task()
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
    run_layers(tiny, [toy_task("A"), toy_task("B", 60)], tmp_path)
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
    toy_task().to_tsv(tsv)
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


@pytest.mark.real
def test_real_smollm2_layers_encode_token_kinds(tmp_path, smol):
    """SmolLM2 on KTX and IDN (100 samples each, stdlib, each sample's last 32 tokens): the probe beats the control
    and the majority class (by 0.5 or more on this sample, 0.4 or more at the default 512 tokens; 0.2 is asked). The
    last 32 tokens keep what the kinds need and cost 30% less CPU than 512 (most KTX samples are 40-70 tokens)."""
    tasks = build_tasks(["KTX", "IDN"], "stdlib", size=100, seed=0)
    results = run_layers(smol, tasks, tmp_path, max_tokens=32)
    for r in results:
        best = r.accuracy[r.best_layer]
        assert r.n_layers == 31
        assert best > r.majority + 0.2, (r.task, best, r.majority)
        assert best > r.control_accuracy[r.best_layer] + 0.2, (r.task, best, r.control_accuracy)
    assert load_results(tmp_path)[0].provenance["corpus"] == "stdlib"
    assert results[0].provenance["max_tokens"] == 32 and results[0].provenance["truncated"] > 0
