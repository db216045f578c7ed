"""Attacks on corpus specs: empty specs, the filesystem root, the home folder, huge folders, paths outside the
allowed data folders (symlinks and ``..`` included), non-positive limits, and hostile ``.jsonl`` lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from asc.corpus import sources
from asc.corpus.sources import load_corpus
from asc.errors import CorpusError

CODE = "def f{i}(x):\n    if x:\n        return x + {i}\n    y = [x]\n    return y\n"


def _folder(path: Path, n: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (path / f"m{i}.py").write_text(CODE.format(i=i))
    return path


@pytest.mark.parametrize("spec", ["", "   ", "\t\n"])
def test_an_empty_spec_is_refused_instead_of_reading_the_working_directory(spec):
    with pytest.raises(CorpusError, match="empty corpus"):
        load_corpus(spec)


@pytest.mark.parametrize("spec", ["/", "//", "/.", "/tmp/.."])
def test_the_filesystem_root_is_refused(spec):
    with pytest.raises(CorpusError, match="filesystem root") as err:
        load_corpus(spec, limit=1)
    assert "folder that holds" in str(err.value)  # names the fix


def test_the_home_folder_itself_is_refused_but_a_folder_in_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _folder(tmp_path / "code", 2)
    for spec in (str(tmp_path), "~", "~/", str(tmp_path / "code" / "..")):
        with pytest.raises(CorpusError, match="home folder"):
            load_corpus(spec, limit=1)
    assert len(load_corpus("~/code", min_lines=1)) == 2


def test_a_folder_with_too_many_files_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_FILES", 3)
    assert len(load_corpus(str(_folder(tmp_path / "ok", 3)), min_lines=1)) == 3
    with pytest.raises(CorpusError, match="smaller folder"):
        load_corpus(str(_folder(tmp_path / "big", 5)), min_lines=1)


def test_the_default_file_cap():
    assert sources.MAX_FILES == 50_000


@pytest.mark.parametrize("limit", [0, -1, -100])
def test_a_limit_below_one_is_refused(tmp_path, limit):
    folder = _folder(tmp_path / "c", 2)
    with pytest.raises(CorpusError, match="at least 1"):
        load_corpus(str(folder), limit=limit, min_lines=1)


def test_paths_outside_the_data_roots_are_refused(tmp_path):
    from asc.corpus.sources import check_corpus_spec

    data = _folder(tmp_path / "data", 2)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "m0.py").write_text(CODE.format(i=99))
    (data / "link").symlink_to(secret, target_is_directory=True)
    (data / "link.py").symlink_to(secret / "m0.py")
    roots = [data]
    # a file link inside the folder that points outside is skipped (with a warning), not read
    assert sorted(s.origin for s in load_corpus(str(data), min_lines=1, roots=roots)) == ["m0.py", "m1.py"]
    assert len(load_corpus(str(data), min_lines=1)) == 3  # without roots, links are followed as before
    assert len(load_corpus(str(data / "m1.py"), min_lines=1, roots=roots)) == 1
    check_corpus_spec(str(data), roots)  # allowed: returns quietly
    for spec in (str(secret), str(secret / "m0.py"), str(data / ".." / "secret"), str(data / "link"),
                 str(data / "link.py"), "/etc/passwd"):
        with pytest.raises(CorpusError, match="outside the allowed data folders") as err:
            load_corpus(spec, min_lines=1, roots=roots)
        assert "ASC_DATA_ROOTS" in str(err.value)
    # the built-in corpora are always allowed
    check_corpus_spec("humaneval", roots)
    assert len(load_corpus("humaneval", limit=1, roots=roots)) == 1


def test_data_roots_come_from_the_environment(tmp_path, monkeypatch):
    import os

    from asc import paths

    monkeypatch.delenv("ASC_DATA_ROOTS", raising=False)
    assert paths.data_roots() is None
    monkeypatch.setenv("ASC_DATA_ROOTS", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}{os.pathsep}")
    assert paths.data_roots() == [tmp_path / "a", tmp_path / "b"]
    assert "data_roots" in paths.__all__ and "ASC_DATA_ROOTS" in (paths.__doc__ or "")


def test_the_app_queue_keeps_runs_inside_the_data_roots(tmp_path, monkeypatch):
    from asc.jobs import JobQueue
    from tests.support.models import tiny_random_model

    data = tmp_path / "data"
    data.mkdir()
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({"code": CODE.format(i=1)}) + "\n")
    monkeypatch.setenv("ASC_DATA_ROOTS", str(data))
    queue = JobQueue(lambda spec: tiny_random_model())
    job = queue.submit("tiny-random", str(outside), None, tmp_path / "runs")
    assert queue.wait(60) and job.status == "failed" and "outside the allowed data folders" in job.error
    assert not job.out.exists()  # nothing half-written


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_lines_with_lone_surrogates_are_skipped(tmp_path, caplog):
    good = json.dumps({"id": "ok", "code": CODE.format(i=1)})
    bad_code = '{"id": "bad", "code": "def f():\\n    return \'\\ud800\'\\n"}'
    bad_id = '{"id": "\\udfff", "code": "def g():\\n    return 2\\n"}'
    bad_name = '{"code": "def h():\\n    return 3\\n", "name": "\\ud83d"}'
    snips = load_corpus(str(_jsonl(tmp_path / "c.jsonl", [good, bad_code, bad_id, bad_name])))
    assert [s.id for s in snips] == ["ok"]
    for s in snips:
        s.source.encode("utf-8"), s.id.encode("utf-8"), s.name.encode("utf-8")
    assert caplog.text.count("surrogate") == 3


def test_jsonl_lines_that_are_not_objects_or_have_an_unknown_language_are_skipped(tmp_path, caplog):
    lines = ["[1, 2]", '"def f(): pass"', "42", "null",
             json.dumps({"code": "x = 1\n", "language": "cobol"}),
             json.dumps({"code": "x = 2\n", "language": 7}),
             json.dumps({"id": "kept", "code": "x = 3\n", "language": "python"})]
    snips = load_corpus(str(_jsonl(tmp_path / "c.jsonl", lines)))
    assert [s.id for s in snips] == ["kept"]
    assert "unknown language" in caplog.text and caplog.text.count("skipped") == 6


def test_a_jsonl_without_a_usable_line_is_refused(tmp_path):
    path = _jsonl(tmp_path / "c.jsonl", ["[1]", '{"code": "\\ud800"}', '{"nocode": 1}'])
    with pytest.raises(CorpusError, match="no usable line") as err:
        load_corpus(str(path))
    assert "'code'" in str(err.value)


def test_a_big_jsonl_is_read_line_by_line_not_whole(tmp_path):
    """A .jsonl corpus up to 512 MB used to be read whole, decoded whole and split (three copies: a multi-GB job);
    now one line is held at a time. 24 MB of lines that the filter drops, one kept: traced allocations stay a
    small fraction of the file."""
    import tracemalloc

    long_snippet = json.dumps({"code": "x = 1\n" * 2000})  # 12 KB a line, dropped by max_lines
    path = tmp_path / "big.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "kept", "code": "x = 2\n"}) + "\n")
        fh.writelines(long_snippet + "\n" for _ in range(2000))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        snips = load_corpus(str(path), max_lines=10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [s.id for s in snips] == ["kept"]
    assert size > 20 * 2**20 and peak < size / 8, f"peak {peak / 2**20:.1f} MB for a {size / 2**20:.0f} MB file"


def test_a_jsonl_line_over_the_line_limit_is_skipped_and_the_next_one_read(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(sources, "MAX_JSONL_LINE_BYTES", 1000)
    lines = [json.dumps({"id": "long", "code": "y = 1\n" * 400}), json.dumps({"id": "next", "code": "z = 1\n"})]
    assert [s.id for s in load_corpus(str(_jsonl(tmp_path / "c.jsonl", lines)))] == ["next"]
    assert "line 1 skipped: over" in caplog.text


def test_a_builtin_corpus_is_read_from_its_own_folder_whatever_the_data_roots(tmp_path):
    """A shared server's roots confine users' folders, not the standard library: glueCode's context reader
    confined ``stdlib`` to the data roots too, so every file context silently disappeared. It reads the
    standard library's folder, and nothing outside it."""
    import sysconfig

    from probes.gluecode.build import corpus_files

    files = corpus_files("stdlib", [tmp_path])
    assert files is not None and "def " in (files.text("os.py") or "")
    secret = tmp_path / "secret.py"
    secret.write_text("k = 'hunter2'\n")
    assert files.text(os.path.relpath(secret, sysconfig.get_paths()["stdlib"])) is None  # ../../..: confined


@pytest.mark.parametrize(("lines", "says"), [((10, 5), "--min-lines 10 is above --max-lines 5"),
                                             ((-3, None), "0 or more"), ((None, 0), "at least 1")])
def test_line_filters_that_keep_nothing_are_refused_before_anything_is_read(tmp_path, lines, says):
    """The rule lived in the CLI only: the app's and the probes' loads took any range (a negative minimum kept
    everything, a minimum above the maximum read the whole corpus to keep nothing)."""
    with pytest.raises(CorpusError, match=says):
        load_corpus(str(tmp_path / "not-read"), min_lines=lines[0], max_lines=lines[1])
