"""Attacks on run folders: a second corpus, another model or other settings written into one folder, two writers
at once, an old format, and run names that collide."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
import threading

import pytest

from asc.corpus.runs import load_run, run_corpus
from asc.corpus.sources import Snippet
from asc.errors import CorpusError
from tests.helpers import corpus_snippets


def _other_snippets(n: int) -> list[Snippet]:
    return [Snippet(id=f"o{i}", source=f"def other{i}(y):\n    while y:\n        y -= {i + 1}\n    return y\n")
            for i in range(n)]


def test_a_second_corpus_into_the_same_folder_is_refused(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(3), out, corpus="a", progress=False)
    before = (out / "meta.json").read_text()
    with pytest.raises(CorpusError) as err:
        run_corpus(tiny, _other_snippets(3), out, corpus="b", progress=False)
    message = str(err.value)
    assert "another corpus" in message and "'s0'" in message and "--out" in message
    assert (out / "meta.json").read_text() == before  # nothing rewritten
    assert sorted(load_run(out).snippets["id"]) == ["s0", "s1", "s2"]


def test_a_changed_snippet_with_the_same_id_is_refused(tiny, tmp_path):
    out = tmp_path / "run"
    snips = corpus_snippets(3)
    run_corpus(tiny, snips, out, progress=False)
    changed = [*snips[:2], dataclasses.replace(snips[2], source=snips[2].source + "# edited\n")]
    with pytest.raises(CorpusError, match="'s2' changed"):
        run_corpus(tiny, changed, out, progress=False)


def test_a_smaller_plan_that_leaves_out_done_snippets_is_refused_a_larger_one_resumes(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(4), out, progress=False)
    with pytest.raises(CorpusError, match="not in this corpus"):
        run_corpus(tiny, corpus_snippets(2), out, progress=False)
    run_corpus(tiny, corpus_snippets(6), out, progress=False)  # the same corpus with a larger limit resumes
    assert len(load_run(out).snippets) == 6


def test_another_model_is_refused_and_the_message_says_what_differs(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(2), out, progress=False)
    other = dataclasses.replace(tiny, name="other-model")
    with pytest.raises(CorpusError) as err:
        run_corpus(other, corpus_snippets(2), out, progress=False)
    message = str(err.value)
    assert "other settings" in message and "model" in message and "other-model" in message and "--out" in message
    with pytest.raises(CorpusError, match="max_window"):
        run_corpus(tiny, corpus_snippets(2), out, max_window=32, progress=False)


def test_meta_records_the_corpus_identity_and_corpus_json_lists_it(tiny, tmp_path):
    out = tmp_path / "run"
    snips = corpus_snippets(3)
    run_corpus(tiny, snips, out, corpus="c", progress=False)
    meta = json.loads((out / "meta.json").read_text())
    settings = meta["settings"]
    assert settings["format"] == 2
    assert {"model", "aggregate", "align", "max_window", "corpus"} <= set(settings)
    listed = json.loads((out / "corpus.json").read_text())
    hashes = [hashlib.sha256(s.source.encode()).hexdigest() for s in snips]
    assert listed["snippets"] == [{"id": s.id, "sha256": h} for s, h in zip(snips, hashes)]
    assert meta["corpus"]["digest"] == listed["digest"] and meta["corpus"]["n_snippets"] == 3
    # the digest depends on ids and sources, not on the spec string
    run_corpus(tiny, snips, tmp_path / "again", corpus="other spec", progress=False)
    assert json.loads((tmp_path / "again" / "meta.json").read_text())["corpus"]["digest"] == listed["digest"]


def test_a_folder_of_the_old_format_is_not_resumed(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(2), out, progress=False)
    meta = json.loads((out / "meta.json").read_text())
    meta["settings"]["format"] = 1
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CorpusError, match="format"):
        run_corpus(tiny, corpus_snippets(2), out, progress=False)
    assert len(load_run(out).snippets) == 2  # still readable


def test_a_second_writer_is_refused_while_the_first_runs(tiny, tmp_path):
    out = tmp_path / "run"
    errors: list[Exception] = []

    def second(done, total):
        if done == 2:  # the first run holds the folder: a second one must not write into it
            try:
                run_corpus(tiny, corpus_snippets(6), out, batch_size=2, progress=False)
            except CorpusError as err:
                errors.append(err)

    run_corpus(tiny, corpus_snippets(6), out, batch_size=2, progress=False, on_progress=second)
    assert len(errors) == 1 and f"another evaluation is writing into {out} right now" in str(errors[0])
    run = load_run(out)
    assert len(run.snippets) == 6 and run.snippets["id"].is_unique


def test_two_threads_writing_one_folder_never_duplicate_rows(tiny, tmp_path):
    out = tmp_path / "run"
    snips = corpus_snippets(12)
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def work():
        start.wait()
        try:
            run_corpus(tiny, snips, out, batch_size=2, progress=False)
            outcomes.append("done")
        except CorpusError as err:
            outcomes.append(str(err))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert "done" in outcomes
    assert all(o == "done" or "another evaluation is writing" in o for o in outcomes)
    run = load_run(out)
    assert len(run.snippets) == 12 and run.snippets["id"].is_unique


def test_the_lock_dies_with_its_process(tiny, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n",
         str(out / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(CorpusError, match="another evaluation is writing"):
            run_corpus(tiny, corpus_snippets(2), out, progress=False)
        assert not (out / "meta.json").exists()  # the refused run wrote nothing
    finally:
        holder.kill()
        holder.wait()
    run_corpus(tiny, corpus_snippets(2), out, progress=False)  # the holder died: its lock went with it
    assert len(load_run(out).snippets) == 2


def test_a_run_that_fails_before_its_first_chunk_leaves_no_folder(tiny, tmp_path, monkeypatch):
    import asc.scores as scores

    def boom(*args, **kwargs):
        raise RuntimeError("scoring failed")

    monkeypatch.setattr(scores, "_forward_rows", boom)  # the forward passes, whichever path a run takes
    out = tmp_path / "run"
    with pytest.raises(RuntimeError):
        run_corpus(tiny, corpus_snippets(2), out, progress=False)
    assert not out.exists()


def test_run_folder_names_are_unique_and_readable(tmp_path):
    from asc.jobs import run_folder

    pairs = [
        (("a/b", "c", 5), ("a-b", "c", 5)),  # slugs collide
        (("org/m", "c", 5), ("other/m", "c", 5)),  # same last part of a hub id
        (("smollm2-135m", "", 5), ("smollm2-135m", "/", 5)),  # the `smollm2-135m____5` case
        (("x" * 80 + "1", "c", None), ("x" * 80 + "2", "c", None)),  # cut at 60 characters
        (("m", "/data/one/code", None), ("m", "/data/two/code", None)),  # same folder name
        (("m", "humaneval", 5), ("m", "humaneval", 6)),
    ]
    for a, b in pairs:
        assert run_folder(tmp_path, *a) != run_folder(tmp_path, *b), (a, b)
    name = run_folder(tmp_path, "smollm2-135m", "humaneval", 20).name
    assert name.startswith("smollm2-135m__humaneval__20__") and len(name.rsplit("__", 1)[1]) == 8
    assert run_folder(tmp_path, "m", "c", 0) == run_folder(tmp_path, "m", "c", None)  # 0 and None: all
    assert run_folder(tmp_path, "m", "c", 3) == run_folder(tmp_path, "m", "c", 3)  # stable
    assert len(run_folder(tmp_path, "x" * 500, "y" * 500, None).name) < 160
