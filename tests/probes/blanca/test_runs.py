"""Runs (probes.blanca.runs): every task scored once per model and read back, a changed task file scored again,
the background-queue job, and the real MiniLM on the small set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probes.blanca.build import build_task_set
from probes.blanca.evaluate import SCORE_COLUMNS, summarize
from probes.blanca.items import load_items, save_items
from probes.blanca.runs import blanca_job, load_scores, model_label, run_blanca, score_folder, target_kinds


def test_a_run_scores_every_task_and_resumes(small_run: Path, tiny, monkeypatch):
    task_set = build_task_set(small_run)
    scores = run_blanca(tiny, task_set, small_run)
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert scores.groupby("task").size().to_dict() == {"R": 18, "L": 16, "F": 16, "H": 12, "U": 12}
    folder = next(score_folder(small_run, task_set.name).iterdir())
    assert sorted(p.name for p in folder.iterdir()) == ["F.parquet", "H.parquet", "L.parquet", "R.parquet",
                                                        "U.parquet", "model.json"]
    assert json.loads((folder / "model.json").read_text())["pooling"] == "mean"

    def refuse(*args, **kwargs):
        raise AssertionError("scored again")

    monkeypatch.setattr("probes.blanca.runs.score_task", refuse)
    again = run_blanca(tiny, task_set, small_run)
    assert again.sort_values(["task", "id", "row"]).reset_index(drop=True).equals(
        scores.sort_values(["task", "id", "row"]).reset_index(drop=True))


def test_a_changed_task_file_is_scored_again(small_run: Path, tiny, monkeypatch):
    task_set = build_task_set(small_run)
    run_blanca(tiny, task_set, small_run)
    path = task_set.folder / "H.jsonl"
    header, items = load_items(path)
    save_items(path, "H", items[:-1], header["provenance"])
    calls = []
    real = __import__("probes.blanca.runs", fromlist=["score_task"]).score_task

    def counting(bundle, task, *args, **kwargs):
        calls.append(task)
        return real(bundle, task, *args, **kwargs)

    monkeypatch.setattr("probes.blanca.runs.score_task", counting)
    scores = run_blanca(tiny, build_task_set(small_run), small_run)
    assert calls == ["H"]
    assert (scores["task"] == "H").sum() == 11


def test_load_scores_reads_every_model_and_the_job_runs_a_set(small_run: Path, tiny, tiny_bos):
    assert load_scores(small_run, "stdlib-seed0").empty
    stages = []
    job = blanca_job(["L", "H"], small_run)
    job(tiny, lambda stage, k, n: stages.append((stage, k, n)), lambda: False)
    run_blanca(tiny_bos, build_task_set(small_run, ["L"]), small_run)
    scores = load_scores(small_run, "stdlib-seed0")
    assert set(scores["model"]) == {model_label(tiny), model_label(tiny_bos)}
    assert set(scores.loc[scores["model"] == tiny_bos.name, "task"]) == {"L"}
    assert stages[0][0] == "building BLANCA tasks" and stages[-1][1] == stages[-1][2]
    assert target_kinds(build_task_set(small_run)) == {"H": "distance", "U": "similarity"}


def test_stopping_leaves_no_partial_task(small_run: Path, tiny):
    with pytest.raises(InterruptedError):
        run_blanca(tiny, build_task_set(small_run), small_run, should_stop=lambda: True)
    assert load_scores(small_run, "stdlib-seed0").empty


@pytest.mark.real
def test_minilm_separates_related_texts_on_the_small_set(small_run: Path):
    from asc.models import load_model

    bundle = load_model("minilm-l6")
    scores = run_blanca(bundle, build_task_set(small_run), small_run)
    summary = summarize(scores, "all", n_boot=100).set_index(["task", "metric"])
    # F/L positives are a text and "About <the same text>": a sentence encoder must put them closer than negatives
    assert summary.loc[("F", "t"), "value"] > 3 and summary.loc[("L", "d"), "value"] > 1
    assert summary.loc[("R", "MRR"), "value"] > 0.9  # chance is (1 + 1/2 + 1/3) / 3 = 0.61
