"""probes.inspect.taskfile: the Task (validated, read-only) and its TSV files, INSPECT's raw ones and ours (escaped)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from asc.errors import InputError
from probes.inspect.taskfile import TASK_SPLITS, TSV_HEADER, Task, load_tsv
from probes.inspect.tasks import build_task


# ------------------------------------------------------------------------------------------ TSV
def test_load_tsv_skips_broken_rows(tmp_path, caplog):
    path = tmp_path / "mxn.tsv"
    path.write_text("tr\t10\tpublic void f() { int x; }\n"
                    "va\t2\tvoid g() {\n"
                    "  return; }\n"
                    "te\t1\tvoid h() {}\n"
                    "xx\t1\tfoo\n"
                    "tr\t2\t   \n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="probes.inspect.tasks"):
        task = load_tsv(path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "3 malformed" in warnings[0] and "line 3" in warnings[0]
    assert task.name == "MXN" and task.labels == ("1", "2", "10")  # natural order
    assert task.texts == ("public void f() { int x; }", "void g() {", "void h() {}")
    assert [task.labels[c] for c in task.y] == ["10", "2", "1"] and task.split.tolist() == ["tr", "va", "te"]
    assert task.meta["skipped_rows"] == 3 and task.meta["first_bad_line"] == 3


def test_tsv_round_trip_with_tabs_newlines_backslashes(tmp_path):
    texts = ("def f():\n\treturn '\\n'\n", "a\\tb\tc\r\nd", "ends with \\", "plain")
    task = Task("KTX", ("kw_flow", "symbol"), texts, np.array([0, 1, 1, 0]), np.array(["tr", "va", "te", "tr"]), {})
    path = tmp_path / "ktx.tsv"
    task.to_tsv(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "#asc-studio escaped" and len(lines) == 6 and lines[-1] == ""
    back = load_tsv(path)
    assert back.texts == texts and back.name == "KTX" and back.digest == task.digest
    assert load_tsv(path, name="other").name == "other"


def test_load_tsv_without_valid_rows(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("nothing here\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no valid"):
        load_tsv(path)


def test_built_task_round_trips(tmp_path, algorithms):
    task = build_task("MXN", algorithms, size=50)
    task.to_tsv(tmp_path / "mxn.tsv")
    back = load_tsv(tmp_path / "mxn.tsv")
    assert back.digest == task.digest and back.labels == ("1", "2", "3", "4", "5+")


# ------------------------------------------------------------------------------------------ Task


def test_task_checks_its_fields_and_is_read_only():
    y, split = np.array([0, 1, 1]), np.array(["tr", "va", "te"])
    task = Task("T", ("a", "b"), ["x", "y", "z"], y, split)
    assert task.texts == ("x", "y", "z") and task.labels == ("a", "b") and task.n == 3
    assert not task.y.flags.writeable and not task.split.flags.writeable
    with pytest.raises(ValueError):
        task.y[0] = 1
    y[0] = 1  # the caller's arrays were copied: still writable, and the task did not change
    assert task.y.tolist() == [0, 1, 1]
    with pytest.raises(InputError, match="task T: 2 texts, 3 labels, 3 splits"):
        Task("T", ("a", "b"), ("x", "y"), np.array([0, 1, 1]), split)
    with pytest.raises(InputError, match="label index out of range"):
        Task("T", ("a", "b"), ("x", "y", "z"), np.array([0, 2, 1]), split)
    with pytest.raises(InputError, match="label index out of range"):
        Task("T", ("a", "b"), ("x", "y", "z"), np.array([0, -1, 1]), split)
    with pytest.raises(InputError, match="splits must be among"):
        Task("T", ("a", "b"), ("x", "y", "z"), y, np.array(["tr", "dev", "te"]))
    assert Task("E", ("a",), (), np.array([], dtype=int), np.array([])).n == 0  # an empty task is allowed


def test_digest_depends_on_every_field_but_meta():
    base = Task("T", ("a", "b"), ("x", "y"), np.array([0, 1]), np.array(["tr", "te"]), {"source": "here"})
    same = Task("T", ("a", "b"), ("x", "y"), np.array([0, 1]), np.array(["tr", "te"]), {"source": "there"})
    assert base.digest == same.digest and len(base.digest) == 16
    others = [Task("U", ("a", "b"), ("x", "y"), np.array([0, 1]), np.array(["tr", "te"])),
              Task("T", ("a", "c"), ("x", "y"), np.array([0, 1]), np.array(["tr", "te"])),
              Task("T", ("a", "b"), ("x", "w"), np.array([0, 1]), np.array(["tr", "te"])),
              Task("T", ("a", "b"), ("x", "y"), np.array([1, 0]), np.array(["tr", "te"])),
              Task("T", ("a", "b"), ("x", "y"), np.array([0, 1]), np.array(["te", "tr"]))]
    assert len({base.digest, *(t.digest for t in others)}) == 6


def test_indices_per_split():
    task = Task("T", ("a", "b"), tuple("pqrst"), np.array([0, 1, 0, 1, 0]), np.array(["tr", "te", "tr", "va", "te"]))
    assert [task.indices(s).tolist() for s in TASK_SPLITS] == [[0, 2], [3], [1, 4]]
    with pytest.raises(InputError, match="unknown split 'test': use one of tr, va, te"):
        task.indices("test")


def test_raw_inspect_file_with_bom_crlf_and_natural_label_order(tmp_path):
    path = tmp_path / "len.tsv"
    path.write_bytes("\ufefftr\t10\tdef a(): pass\r\nva\t2\tdef b(): pass\r\nte\t9\tx = 1\r\ntr\t2\ty\r\n".encode())
    task = load_tsv(path)
    assert task.name == "LEN" and task.labels == ("2", "9", "10")
    assert task.texts == ("def a(): pass", "def b(): pass", "x = 1", "y")  # the CR of each row is dropped
    assert task.split.tolist() == ["tr", "va", "te", "tr"]
    assert task.meta["format"] == "inspect raw" and task.meta["skipped_rows"] == 0
    assert task.meta["first_bad_line"] is None and task.meta["warnings"] == []
    assert task.meta["per_class"] == {"2": 2, "9": 1, "10": 1}
    assert task.meta["per_split"] == {"tr": 2, "va": 1, "te": 1}
    assert task.meta["source"] == str(path)


def test_escaped_file_starts_with_its_header_and_keeps_raw_backslashes_apart(tmp_path):
    task = Task("KTX", ("a\tb", "c"), ("x\\ny", "line1\nline2"), np.array([0, 1]), np.array(["tr", "te"]))
    path = tmp_path / "k.tsv"
    task.to_tsv(path)
    assert path.read_text(encoding="utf-8") == f"{TSV_HEADER}\ntr\ta\\tb\tx\\\\ny\nte\tc\tline1\\nline2\n"
    back = load_tsv(path)
    assert back.texts == task.texts and back.labels == ("a\tb", "c") and back.meta["format"] == "asc-studio escaped"
    # without the header the same text is read raw: escapes stay as typed
    path.write_text("tr\tc\tx\\ny\n", encoding="utf-8")
    assert load_tsv(path).texts == ("x\\ny",)
