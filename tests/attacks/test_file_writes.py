"""Files a visitor can make the server write, and files the app hands out.

* an uploaded INSPECT task file is parsed in memory, its size capped, and saved under a name the server
  makes (a content hash) inside the run folder: the browser's file name (``../../evil.tsv``) never
  becomes a path, and the task name taken from it is reduced to ``[A-Za-z0-9_-]``;
* CSV exports (study responses, every download button) cannot carry spreadsheet formulas: a text cell
  that starts with ``=``, ``+``, ``-``, ``@``, a tab or a CR is prefixed with a single quote.
"""

from __future__ import annotations

import ast
import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT, toy_task
from tests.pages.helpers import button, page

LAYERS_PAGE = page("probing")


def _files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def _toy_bytes(tmp_path: Path) -> bytes:
    tsv = tmp_path / "toy-source.tsv"
    toy_task().to_tsv(tsv)
    data = tsv.read_bytes()
    tsv.unlink()
    return data


def test_an_upload_named_dot_dot_writes_nothing_outside_the_run_folder(monkeypatch, tmp_path):
    from ui import jobs

    runs = tmp_path / "deep" / "er" / "runs"
    folder = runs / "layers"
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(runs))
    data = _toy_bytes(tmp_path)
    before = _files_under(tmp_path)
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    at.multiselect(key="lp_models").set_value(["tiny-random"])
    at.multiselect(key="lp_tasks").set_value([])
    at.file_uploader(key="lp_files").set_value([("../../evil.tsv", data, "text/tab-separated-values"),
                                                ("../../../../../x/evil2.tsv", data, "text/tab-separated-values")])
    at.run()
    button(at, "Start").click().run()
    assert not at.exception
    assert jobs.job_queue().wait(180)
    created = _files_under(tmp_path) - before
    outside = [p for p in created if folder not in p.parents]
    assert not outside, f"written outside {folder}: {outside}"
    assert not (runs / "evil.tsv").exists() and not (tmp_path / "deep" / "evil.tsv").exists()
    uploads = sorted((folder / "uploads").iterdir())
    assert uploads, "the upload is kept in the run folder"
    for path in uploads:  # the server's name: a content hash, never the browser's
        assert re.fullmatch(r"[0-9a-f]{16,64}\.tsv", path.name), path.name
        assert "evil" not in path.name


def test_the_uploader_caps_the_file_size(monkeypatch, tmp_path):
    from probes.inspect import taskfile

    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    assert taskfile.MAX_TASK_FILE_BYTES == 50 * 1024 * 1024
    assert at.file_uploader(key="lp_files").proto.max_upload_size_mb == 50


def test_parse_tsv_checks_the_size_before_decoding(monkeypatch):
    from asc.errors import InputError
    from probes.inspect import taskfile

    monkeypatch.setattr(taskfile, "MAX_TASK_FILE_BYTES", 64)
    with pytest.raises(InputError, match="MB|bytes"):
        taskfile.parse_tsv(b"\xff" * 65, "big.tsv")  # invalid UTF-8: the size is refused first


@pytest.mark.parametrize("name, expected", [
    ("../../evil.tsv", "EVIL"),
    ("..\\..\\win.tsv", "WIN"),
    ("my task!<b>.tsv", "MY_TASK__B"),
    ("....tsv", "UPLOAD"),
    ("x" * 100 + ".tsv", "X" * 40),
    ("toy.tsv", "TOY"),
])
def test_parse_tsv_takes_a_safe_task_name_from_the_file_name(name, expected, tmp_path):
    from probes.inspect.taskfile import parse_tsv

    task = parse_tsv(_toy_bytes(tmp_path), name)
    assert task.name == expected
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", task.name)
    assert task.meta["source"] == "upload" and task.n == 80


def test_load_tsv_reads_through_parse_tsv(tmp_path):
    from probes.inspect.taskfile import load_tsv, parse_tsv

    path = tmp_path / "toy.tsv"
    toy_task().to_tsv(path)
    from_file = load_tsv(path)
    in_memory = parse_tsv(path.read_bytes(), "toy.tsv", source=str(path))
    assert from_file.digest == in_memory.digest and from_file.meta == in_memory.meta
    assert load_tsv(path, name="OWN").name == "OWN"


# --------------------------------------------------------------------------------------------- CSV exports

FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+2", "-2+3", "@SUM(A1)", "\tx", "\r=1"]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_spreadsheet_safe_prefixes_formula_cells_only():
    from asc.export import csv_text, spreadsheet_safe

    df = pd.DataFrame({"text": FORMULAS + ["plain", "a=b"], "number": [-1.5, 2, 3, 4, 5, 6, 7, 8],
                       "maybe": [None, np.nan, "=x", "ok", None, "y", "z", "-"]})
    safe = spreadsheet_safe(df)
    assert safe["text"].tolist() == ["'" + f for f in FORMULAS] + ["plain", "a=b"]
    assert safe["number"].tolist() == df["number"].tolist()  # numbers stay numbers (also negative ones)
    assert [None if pd.isna(v) else v for v in safe["maybe"]][2:] == ["'=x", "ok", None, "y", "z", "'-"]
    assert df["text"].tolist()[0] == FORMULAS[0]  # the input is not modified
    text = csv_text(df)
    for row in list(csv.reader(io.StringIO(text, newline="")))[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or _is_number(cell), row
    parsed = pd.read_csv(io.StringIO(text), keep_default_na=False)
    assert parsed["text"].tolist()[:4] == ["'" + f for f in FORMULAS[:4]]


def test_csv_text_matches_pandas_for_harmless_tables():
    from asc.export import csv_text

    df = pd.DataFrame({"model": ["a", "b"], "value": [0.1 + 0.2, np.nan], "n": [1, 2]}, index=["x", "y"])
    assert csv_text(df) == df.to_csv(index=False, na_rep="absent")  # a missing value: its word (asc.missing)
    assert csv_text(df, index=True) == df.to_csv(na_rep="absent")
    named = df.rename_axis("row")
    assert csv_text(named, index=True) == named.to_csv(na_rep="absent")
    assert csv_text(df, missing="too few") == df.to_csv(index=False, na_rep="too few")


STUDY = """\
id: csv-study
title: CSV study
model: tiny-random
consent: ok
groups:
  - {id: S1, name: Sequence, view: sequence}
background:
  - {id: python, text: "Python?", choices: [Novice, Expert]}
ratings:
  - {id: useful, text: Useful}
comment: {id: comment, text: "Anything else?"}
samples:
  - {id: a, prompt: "def f(x):\\n", completion: "    return x\\n"}
"""


def test_study_export_writes_no_formula(tmp_path):
    from asc.study import StudyStore, default_url, load_study

    path = tmp_path / "s.yaml"
    path.write_text(STUDY)
    store = StudyStore(default_url(tmp_path), load_study(path))
    try:
        code = store.new_participant()
        store.consent(code)
        store.save_background(code, {"python": "Novice"})
        store.save_ratings(code, "a", {"useful": 4, "comment": "=cmd|' /C calc'!A0"})
        out = store.export_csv(tmp_path / "responses.csv")
    finally:
        store.close()
    text = out.read_text(encoding="utf-8")
    assert "'=cmd|" in text
    assert not re.search(r"(^|,)\"?[=+@]", text, flags=re.M)


def test_pages_export_csv_through_csv_text():
    """Every CSV download button of a page goes through the spreadsheet-safe writer (no bare ``to_csv``)."""
    bad = []
    for path in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "to_csv":
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "export CSV with asc.export.csv_text (or ui.widgets.csv_download):\n" + "\n".join(bad)
