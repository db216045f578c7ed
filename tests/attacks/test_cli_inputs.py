"""Attacks through the command line, run as a user runs it (``python -m asc`` in a subprocess, offline): every bad
input exits 2 with exactly one line on stderr and no traceback, and a refused run leaves nothing half-written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from asc.corpus.runs import run_corpus
from tests.helpers import run_module

pytestmark = pytest.mark.slow  # subprocesses: a second or more each (make test runs them)

CODE = "def f{i}(x):\n    if x:\n        return x + {i}\n    y = [x]\n    return y\n"


def asc(*args: str) -> subprocess.CompletedProcess:
    return run_module("asc", *args, timeout=300)


def assert_one_line(out: subprocess.CompletedProcess, needle: str) -> str:
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2, (out.returncode, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err, err
    return err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "m.py").write_text("\n\n".join(CODE.format(i=i) for i in range(3)))
    return folder


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, corpus):
    from asc.corpus.sources import load_corpus
    from asc.models import tiny_random_model

    out = tmp_path_factory.mktemp("runs") / "good"
    run_corpus(tiny_random_model(), load_corpus(str(corpus)), out, corpus=str(corpus), progress=False)
    return out


EVAL_ARGS = {  # bad eval inputs refused before any model is loaded: (extra args, what stderr says)
    "empty corpus": (["--corpus", ""], "empty corpus"),
    "blank corpus": (["--corpus", "   "], "empty corpus"),
    "filesystem root": (["--corpus", "/"], "filesystem root"),
    "limit 0": (["--limit", "0"], "--limit"),
    "limit -1": (["--limit", "-1"], "--limit"),
    "limit not a number": (["--limit", "ten"], "--limit"),
    "batch size 0": (["--batch-size", "0"], "--batch-size"),
    "n-boot 0": (["--n-boot", "0"], "--n-boot"),
    "max-window 0": (["--max-window", "0"], "--max-window"),
}


@pytest.mark.parametrize("case", list(EVAL_ARGS))
def test_bad_eval_arguments_exit_2_with_one_line_and_write_nothing(corpus, tmp_path, case):
    extra, needle = EVAL_ARGS[case]
    args = ["eval", "--corpus", str(corpus), "--out", str(tmp_path / "out"), "--model", "tiny-random", "--quiet"]
    out = asc(*args, *extra)  # a later --corpus wins over the first
    assert_one_line(out, needle)
    assert not (tmp_path / "out").exists()


def test_compare_refuses_a_non_positive_n_boot(good_run):
    assert_one_line(asc("compare", str(good_run), "--n-boot", "-5"), "--n-boot")


def test_a_jsonl_of_lone_surrogates_is_refused_and_a_mixed_one_runs(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"code": "def f():\\n    return \'\\ud800\'\\n"}\n[1]\n')
    out = asc("eval", "--corpus", str(bad), "--out", str(tmp_path / "o1"), "--model", "tiny-random", "--quiet")
    assert_one_line(out, "no usable line")
    assert not (tmp_path / "o1").exists()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(bad.read_text() + json.dumps({"id": "ok", "code": CODE.format(i=1)}) + "\n")
    out = asc("eval", "--corpus", str(mixed), "--out", str(tmp_path / "o2"), "--model", "tiny-random", "--quiet",
              "--n-boot", "20")
    assert out.returncode == 0, out.stderr.decode()
    assert "1 snippets" in out.stdout.decode()


def test_a_second_corpus_into_a_run_folder_is_refused_and_the_folder_is_untouched(good_run, tmp_path):
    out_dir = tmp_path / "run"
    shutil.copytree(good_run, out_dir)
    before = {p.relative_to(out_dir): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "code": CODE.format(i=7)}) + "\n")
    out = asc("eval", "--corpus", str(other), "--out", str(out_dir), "--model", "tiny-random", "--quiet")
    assert_one_line(out, "another corpus")
    after = {p.relative_to(out_dir): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}
    assert after == before


def test_a_run_folder_being_written_is_refused(corpus, tmp_path):
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(120)\n",
         str(out_dir / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        out = asc("eval", "--corpus", str(corpus), "--out", str(out_dir), "--model", "tiny-random", "--quiet")
        assert_one_line(out, "another evaluation is writing into")
        assert not (out_dir / "meta.json").exists()
    finally:
        holder.kill()
        holder.wait()


def test_an_out_that_is_a_file_is_refused(corpus, tmp_path):
    (tmp_path / "f").write_text("x")
    out = asc("eval", "--corpus", str(corpus), "--out", str(tmp_path / "f"), "--model", "tiny-random", "--quiet")
    assert_one_line(out, "another --out")


def test_compare_on_a_folder_holding_only_meta_json(good_run, tmp_path):
    folder = tmp_path / "meta-only"
    folder.mkdir()
    shutil.copy(good_run / "meta.json", folder / "meta.json")
    assert_one_line(asc("compare", str(folder)), "no finished snippet")
    (folder / "meta.json").write_text("{}")
    assert_one_line(asc("compare", str(folder)), str(folder))


@pytest.mark.parametrize("command", ["compare", "causal"])
def test_a_truncated_meta_json_exits_2_with_one_line(good_run, tmp_path, command):
    folder = tmp_path / "cut"
    shutil.copytree(good_run, folder)
    text = (folder / "meta.json").read_text()
    (folder / "meta.json").write_text(text[: len(text) // 3])
    args = [command, str(folder)] + (["--out", str(tmp_path / "t.csv")] if command == "causal" else [])
    assert_one_line(asc(*args), "meta.json")
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize(("command", "table"), [("compare", "digest"), ("causal", "concepts")])
def test_broken_parquet_parts_exit_2_with_one_line(good_run, tmp_path, command, table):
    """Each command reads what it needs (compare the digests, causal the snippets and concepts): a broken part of
    it is one line naming the problem."""
    folder = tmp_path / "parts"
    shutil.copytree(good_run, folder)
    part = sorted((folder / table).glob("part-*.parquet"))[0]
    pd.read_parquet(part).drop(columns=["value"]).to_parquet(part)
    args = [command, str(folder)] + (["--out", str(tmp_path / "t.csv"), "--quiet"] if command == "causal" else [])
    assert_one_line(asc(*args), "lacks the column value")
    part.write_bytes(part.read_bytes()[:64])
    assert_one_line(asc(*args), "cannot be read")
