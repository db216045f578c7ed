"""Attacks on run folders already on disk: garbled or truncated meta.json, runs that failed before their first
chunk, truncated Parquet parts and parts without a column. Loading gives a CorpusError naming the folder and
the fix, listings keep such folders apart, and the pages show an error instead of a traceback (the BLANCA page too,
for its scores and task files)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from asc.corpus.listing import broken_runs, run_folders
from asc.corpus.runs import load_run, run_corpus
from asc.errors import CorpusError
from tests.helpers import ROOT, corpus_snippets


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    from tests.support.models import tiny_random_model

    out = tmp_path_factory.mktemp("good") / "run"
    run_corpus(tiny_random_model(), corpus_snippets(4), out, corpus="test", batch_size=2, progress=False)
    return out


def _copy(good_run: Path, root: Path, name: str) -> Path:
    folder = root / name
    shutil.copytree(good_run, folder)
    return folder


def _meta_text(folder: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        (folder / "meta.json").write_bytes(text)
    else:
        (folder / "meta.json").write_text(text)
    return folder


GARBLED_META = {
    "truncated": lambda good: good[: len(good) // 2],
    "empty": lambda good: "",
    "not utf-8": lambda good: b"\xff\xfe{}",
    "a list": lambda good: "[1, 2]",
    "no settings": lambda good: "{}",
    "settings not a dict": lambda good: json.dumps({"settings": "x"}),
    "model not a dict": lambda good: json.dumps({"settings": {"model": "tiny"}}),
    "deeply nested": lambda good: "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("kind", list(GARBLED_META))
def test_a_garbled_meta_json_gives_a_corpus_error_and_the_run_is_listed_apart(good_run, tmp_path, kind):
    folder = _copy(good_run, tmp_path, "bad")
    _meta_text(folder, GARBLED_META[kind]((good_run / "meta.json").read_text()))
    good = _copy(good_run, tmp_path, "good")
    with pytest.raises(CorpusError) as err:
        load_run(folder)
    message = str(err.value)
    assert str(folder) in message and "delete" in message
    assert run_folders(tmp_path) == [good]
    [(path, reason)] = broken_runs(tmp_path)
    assert path == folder and reason and str(tmp_path) not in reason  # the reason is short: no full path


def test_a_run_without_a_finished_chunk_gives_a_corpus_error(good_run, tmp_path):
    folder = _copy(good_run, tmp_path, "started")
    for table in ("tokens", "nodes", "concepts", "snippets"):
        shutil.rmtree(folder / table)
    with pytest.raises(CorpusError, match="no finished snippet") as err:
        load_run(folder)
    assert str(folder) in str(err.value)
    assert run_folders(tmp_path) == []
    assert [p for p, _ in broken_runs(tmp_path)] == [folder]


def _first_part(folder: Path, table: str) -> Path:
    return sorted((folder / table).glob("part-*.parquet"))[0]


@pytest.mark.parametrize("table", ["snippets", "nodes", "tokens", "concepts"])
def test_a_truncated_parquet_part_gives_a_corpus_error(good_run, tmp_path, table):
    folder = _copy(good_run, tmp_path, "cut")
    part = _first_part(folder, table)
    part.write_bytes(part.read_bytes()[:100])
    with pytest.raises(CorpusError) as err:
        load_run(folder)
    message = str(err.value)
    assert str(folder) in message and part.name in message and "delete it" in message


def test_garbage_in_a_parquet_part_gives_a_corpus_error(good_run, tmp_path):
    folder = _copy(good_run, tmp_path, "garbage")
    _first_part(folder, "nodes").write_bytes(b"PAR1" + os.urandom(300) + b"PAR1")
    with pytest.raises(CorpusError, match="cannot be read"):
        load_run(folder)


@pytest.mark.parametrize("table,column", [("nodes", "value"), ("snippets", "language"), ("concepts", "kind"),
                                          ("snippets", "loss")])
def test_a_part_without_a_needed_column_gives_a_corpus_error(good_run, tmp_path, table, column):
    folder = _copy(good_run, tmp_path, "nocol")
    part = _first_part(folder, table)
    pd.read_parquet(part).drop(columns=[column]).to_parquet(part)
    with pytest.raises(CorpusError, match=f"lacks the column {column}"):
        load_run(folder)


def test_a_missing_part_of_a_finished_chunk_gives_a_corpus_error(good_run, tmp_path):
    folder = _copy(good_run, tmp_path, "gap")
    _first_part(folder, "nodes").unlink()
    with pytest.raises(CorpusError, match="missing"):
        load_run(folder)
    assert len(load_run(folder, tables=("snippets", "concepts")).snippets) == 4  # tables not asked for: not read


def test_orphan_parts_of_a_cut_chunk_are_not_read(good_run, tmp_path):
    folder = _copy(good_run, tmp_path, "orphan")
    pd.DataFrame({"snippet_id": ["ghost"]}).to_parquet(folder / "nodes" / "part-00099.parquet")
    run = load_run(folder)
    assert "ghost" not in set(run.nodes["snippet_id"])


def test_resuming_a_broken_folder_is_refused_with_a_corpus_error(tiny, good_run, tmp_path):
    garbled = _meta_text(_copy(good_run, tmp_path, "garbled"), "{\"settings\": ")
    with pytest.raises(CorpusError, match="meta.json"):
        run_corpus(tiny, corpus_snippets(4), garbled, progress=False)
    cut = _copy(good_run, tmp_path, "cut")
    part = _first_part(cut, "snippets")
    part.write_bytes(part.read_bytes()[:50])
    with pytest.raises(CorpusError, match="cannot be read"):
        run_corpus(tiny, corpus_snippets(4), cut, progress=False)
    headless = _copy(good_run, tmp_path, "headless")
    (headless / "meta.json").unlink()
    with pytest.raises(CorpusError, match="without a meta.json"):
        run_corpus(tiny, corpus_snippets(4), headless, progress=False)
    # listings look at meta.json only (cheap on every page render); the cut part is found when the run is loaded
    reasons = {p.name: reason for p, reason in broken_runs(tmp_path)}
    assert list(reasons) == ["garbled", "headless"] and reasons["headless"] == "no meta.json"
    assert reasons["garbled"].startswith("meta.json cannot be read")


def test_an_out_that_is_a_file_is_refused(tiny, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(CorpusError, match="another --out"):
        run_corpus(tiny, corpus_snippets(1), tmp_path / "file", progress=False)
    with pytest.raises(CorpusError, match="another --out"):
        run_corpus(tiny, corpus_snippets(1), tmp_path / "file" / "run", progress=False)


# ------------------------------------------------------------------------------------------ pages


def _runs_page():
    import streamlit as st

    from ui import guards

    folders, infos = guards.runs_or_stop("start a run")
    st.write(f"{len(folders)} readable: " + ", ".join(infos[f].title for f in folders))


def test_runs_or_stop_lists_broken_runs_apart(good_run, tmp_path, monkeypatch):
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    _copy(good_run, tmp_path, "good")
    _meta_text(_copy(good_run, tmp_path, "truncated"), "{\"sett")
    started = _copy(good_run, tmp_path, "started")
    shutil.rmtree(started / "snippets")
    at = AppTest.from_function(_runs_page, default_timeout=60)
    at.run()
    assert not at.exception
    [expander] = at.expander
    assert expander.label == "2 run folders could not be read"
    listed = " ".join(t.value for t in expander.text)
    assert "truncated" in listed and "started" in listed and "no finished snippet" in listed
    assert any("1 readable: tiny-random · test" in m.value for m in at.markdown)


def test_runs_or_stop_with_only_broken_runs_says_how_to_get_results(good_run, tmp_path, monkeypatch):
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    _meta_text(_copy(good_run, tmp_path, "bad"), "[]")
    at = AppTest.from_function(_runs_page, default_timeout=60)
    at.run()
    assert not at.exception
    assert at.expander[0].label == "1 run folder could not be read"
    assert any("No results yet" in i.value for i in at.info)


def _newest_run_lacks_values(good_run: Path, root: Path, table: str) -> Path:
    _copy(good_run, root, "good")
    bad = _copy(good_run, root, "bad")
    part = _first_part(bad, table)
    pd.read_parquet(part).drop(columns=["value"]).to_parquet(part)
    os.utime(bad / "meta.json", (2e9, 2e9))  # the newest run: preselected by the pages
    return bad


@pytest.mark.parametrize(("page", "table"), [("global_eval", "digest"), ("causal", "concepts")])
def test_pages_show_an_error_for_a_run_with_broken_parts(good_run, tmp_path, monkeypatch, page, table):
    """Each page reads what it needs (Global AsC-Eval the digests, AsC-Causal the concepts), and a broken part
    of it is an error naming the folder."""
    from tests.pages.helpers import TINY

    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    bad = _newest_run_lacks_values(good_run, tmp_path, table)
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    assert not at.exception, at.exception
    assert any(str(bad) in e.value and "lacks the column value" in e.value for e in at.error)


# ------------------------------------------------------------------------------------------------ BLANCA folders


@pytest.mark.parametrize("broken", ["parquet", "model.json", "task file"])
def test_the_blanca_page_shows_an_error_for_broken_files(tiny, tmp_path, monkeypatch, broken):
    """A truncated scores file, a garbled model.json or a task file that does not validate: an error on the
    BLANCA page (naming the set, or the file and line), never a traceback."""
    from probes.blanca.build import load_task_set
    from probes.blanca.runs import run_blanca
    from tests.helpers import write_blanca_set

    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    out = tmp_path / "blanca"
    folder = write_blanca_set(out, skipped={"R": "no docs", "L": "no docs", "F": "no docs"})
    run_blanca(tiny, load_task_set(folder), out)
    [scored] = (out / "scores" / folder.name).iterdir()
    if broken == "parquet":
        part = scored / "H.parquet"
        part.write_bytes(part.read_bytes()[:200])
    elif broken == "model.json":
        (scored / "model.json").write_text('{"label": ')
    else:
        (folder / "U.jsonl").write_text((folder / "U.jsonl").read_text().replace('"target": 0.9', '"target": "near"'))
    at = AppTest.from_file(str(ROOT / "pages" / "blanca.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    if broken == "task file":
        assert errors[0].startswith(f"The task set {folder.name} cannot be read: {folder / 'U.jsonl'}, line ")
        assert any("No BLANCA results yet" in i.value for i in at.info)  # its only set: the page says how to start
    else:
        assert errors and errors[0].startswith(f"The scores of {folder.name} under {out} cannot be read")
