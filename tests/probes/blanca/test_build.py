"""Task sets (probes.blanca.build): task names checked, sets named by their sources, built once and then loaded,
tasks that need the documentation skipped with the fix when it is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asc.errors import InputError
from probes.blanca import build
from probes.blanca.build import blanca_set_name, build_task_set, load_task_set, parse_tasks
from probes.blanca.faq import DOCS_ROOT


def test_parse_tasks_orders_checks_and_expands_all():
    assert parse_tasks("all") == ["R", "L", "F", "H", "U"]
    assert parse_tasks("u, r") == ["R", "U"]
    assert parse_tasks(["H", "L,F"]) == ["L", "F", "H"]
    with pytest.raises(InputError, match="unknown BLANCA task X.*R, L, F, H, U"):
        parse_tasks("R,X")


def test_set_name_records_the_sources_and_refuses_odd_package_names():
    assert blanca_set_name() == "stdlib-seed0"
    assert blanca_set_name(["sqlalchemy", "attr", "sqlalchemy"], seed=3) == "package-attr+sqlalchemy-seed3"
    with pytest.raises(InputError, match="importable top-level package"):
        blanca_set_name(["../etc"])


def test_packages_need_explicit_consent_to_be_imported(tmp_path: Path):
    with pytest.raises(InputError, match="--import-packages"):
        build_task_set(tmp_path, ["H"], packages=["json"])


def test_missing_docs_skip_r_l_f_with_the_fix(tmp_path: Path):
    task_set = build_task_set(tmp_path, ["R", "F"], docs=tmp_path / "nowhere")
    assert task_set.items == {}
    assert set(task_set.skipped) == {"R", "F"}
    assert "python3.11-doc" in task_set.skipped["R"]
    assert json.loads((task_set.folder / "skipped.json").read_text())["F"] == task_set.skipped["F"]
    assert not list(task_set.folder.glob("*.jsonl"))


def test_an_existing_set_is_loaded_not_rebuilt(small_run: Path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the set was rebuilt")

    monkeypatch.setattr("probes.blanca.faq.faq_questions", refuse)
    monkeypatch.setattr("probes.blanca.classes.scan_classes", refuse)
    task_set = build_task_set(small_run)
    assert list(task_set.items) == ["R", "L", "F", "H", "U"]
    assert task_set.counts()["R"] == (3, 3)
    assert task_set.only(["H"]).items.keys() == {"H"}


def test_load_reports_tasks_without_a_file(small_run: Path):
    (small_run / "tasks" / "stdlib-seed0" / "U.jsonl").unlink()
    task_set = load_task_set(small_run / "tasks" / "stdlib-seed0")
    assert "U" not in task_set.items and "build the task set" in task_set.skipped["U"]


@pytest.mark.skipif(not (DOCS_ROOT / "faq").is_dir(), reason="python3.11-doc is not installed (make docs-data)")
def test_real_documentation_and_stdlib_give_r_l_f_h(tmp_path: Path):
    task_set = build_task_set(tmp_path, ["R", "L", "F", "H"])
    counts = task_set.counts()
    assert counts["R"][0] + counts["R"][1] > 150  # the FAQ's questions
    assert counts["L"][1] > 20 and counts["F"][1] > 20 and counts["H"][1] > 50
    positives = [it for it in task_set.items["L"] if it.positive]
    assert 0.4 < len(positives) / len(task_set.items["L"]) < 0.6  # linked and unlinked pairs balanced
    assert {it.target for it in task_set.items["H"]} >= {1.0, 2.0, 3.0}
    assert build.PER_DISTANCE >= max(sum(it.target == d for it in task_set.items["H"]) for d in range(1, 11))
