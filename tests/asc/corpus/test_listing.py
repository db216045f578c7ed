"""asc.corpus.listing: a run's name in pickers comes in parts (RunInfo), read from its meta.json; the title is made
from the parts, so a model or corpus name holding the separator " · " stays whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asc.corpus.listing import RunInfo, run_info, run_title
from asc.errors import CorpusError


def _run(root: Path, name: str, meta: object) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_run_info_reads_the_parts_and_the_title_joins_them(tmp_path):
    folder = _run(tmp_path, "he-1", {"settings": {"model": {"name": "org/a · b"}, "corpus": "my · corpus"},
                                     "n_planned": 164, "finished": True})
    info = run_info(folder)
    assert info == RunInfo(model="org/a · b", corpus="my · corpus", n_planned=164, finished=True, folder="he-1")
    assert info.title == run_title(folder) == "org/a · b · my · corpus · 164 snippets · he-1"
    assert info.short == "org/a · b · he-1"


def test_a_run_still_going_says_so_after_its_count(tmp_path):
    folder = _run(tmp_path, "going", {"settings": {"model": {"name": "m"}, "corpus": "c"}, "n_planned": 8})
    assert not run_info(folder).finished
    assert run_info(folder).title == "m · c · 8 snippets (incomplete) · going"


@pytest.mark.parametrize("meta", [{}, {"settings": []}, {"settings": {"model": "m"}, "n_planned": "8"},
                                  {"settings": {"model": {}}, "n_planned": True}])
def test_missing_or_odd_parts_read_as_unknown(tmp_path, meta):
    info = run_info(_run(tmp_path, "odd", meta))
    assert (info.model, info.corpus, info.n_planned, info.finished) == ("?", "?", None, False)
    assert info.title == "? · ? · ? snippets (incomplete) · odd"


def test_a_folder_without_meta_json_is_a_corpus_error_naming_the_fix(tmp_path):
    with pytest.raises(CorpusError, match="python -m asc eval"):
        run_info(tmp_path)
