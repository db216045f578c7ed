"""Attacks through the command line, run as a user runs it (``python -m asc`` in a subprocess, offline): every bad
input exits 2 with exactly one line on stderr and no traceback, and a refused run leaves nothing half-written."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from asc.causal import MAX_SIMULATIONS
from asc.cli import build_parser as asc_parser
from asc.cli import main as asc_main
from asc.corpus.bootstrap import MAX_N_BOOT
from asc.corpus.runs import run_corpus
from asc.why.attribute import AUTO_MAX_STEPS
from asc.why.corpus import MAX_K
from probes.cli import build_parser as probes_parser
from probes.cli import main as probes_main
from probes.cli.attention import MAX_TOP_K
from probes.cli.blanca import MAX_EPOCHS
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
    from tests.support.models import tiny_random_model

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


# ------------------------------------------------------------------ issue 28, part 6: loose ends of the commands

LONG = "a" * 300  # one path part over the 255 bytes file systems take (ENAMETOOLONG)


def run_args(good_run: Path, tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Bad arguments of every command: (argv, what stderr names). Each is refused before anything is read."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    big = tmp_path / "big.py"
    with open(big, "wb") as f:  # 50 MB, sparse: its size is refused before a byte is read
        f.truncate(50 * 2**20)
    code = tmp_path / "m.py"
    code.write_text(CODE.format(i=1))
    ok = ["--model", "tiny-random"]
    return {
        "compare a symlink loop": (["compare", str(loop)], "symlink loop"),
        "compare --out in /proc": (["compare", str(good_run), "--out", "/proc/x.csv", "--n-boot", "10"], "/proc/x.csv"),
        "compare --seed -1": (["compare", str(good_run), "--seed", "-1"], "--seed"),
        "compare a long name": (["compare", str(tmp_path / LONG)], "at most 255"),
        "explain --device ''": (["explain", str(code), "--device", "", *ok], "--device: is empty"),
        "eval --min-lines -3": (["eval", "--corpus", "humaneval", "--out", str(tmp_path / "o"), "--min-lines", "-3",
                                 *ok], "--min-lines"),
        "eval --min-lines above --max-lines": (["eval", "--corpus", "humaneval", "--out", str(tmp_path / "o"),
                                                "--min-lines", "9", "--max-lines", "3", *ok], "min <= max"),
        "eval --seed -1": (["eval", "--corpus", "humaneval", "--out", str(tmp_path / "o"), "--seed", "-1", *ok],
                           "--seed"),
        "eval a 50 MB file": (["eval", "--corpus", str(big), "--out", str(tmp_path / "o"), *ok], "50.0 MB, over the 8 MB"),
        "eval a long corpus name": (["eval", "--corpus", str(tmp_path / LONG), "--out", str(tmp_path / "o"), *ok],
                                    "at most 255"),
        "causal --min-snippets -1": (["causal", str(good_run), "--out", str(tmp_path / "c.csv"), "--min-snippets", "-1"],
                                     "--min-snippets"),
        "causal --simulations 0": (["causal", str(good_run), "--out", str(tmp_path / "c.csv"), "--simulations", "0"],
                                   "--simulations"),
        "causal --out a folder": (["causal", str(good_run), "--out", str(tmp_path)], "is a folder: give a file name"),
        "causal --treatments unknown": (["causal", str(good_run), "--out", str(tmp_path / "c.csv"), "--treatments",
                                         "Global,Nope"], "unknown treatment(s) 'Nope': choose from Global, "),
        "explain a folder": (["explain", str(tmp_path), *ok], "is a folder, not a file"),
        "explain a named pipe": (["explain", str(fifo), *ok], "is a named pipe (FIFO), not a file"),  # never blocks
        "explain /dev/null": (["explain", "/dev/null", *ok], "/dev/null is a character device, not a file"),
        "explain /dev/zero": (["explain", "/dev/zero", *ok], "/dev/zero is a character device, not a file"),
        "explain a long name": (["explain", str(tmp_path / f"{LONG}.py"), *ok], "at most 255"),
    }


CASES_6 = ["compare a symlink loop", "compare --out in /proc", "compare --seed -1", "compare a long name",
           "explain --device ''", "eval --min-lines -3", "eval --min-lines above --max-lines", "eval --seed -1",
           "eval a 50 MB file", "eval a long corpus name", "causal --min-snippets -1", "causal --simulations 0",
           "causal --out a folder", "causal --treatments unknown", "explain a folder", "explain a named pipe", "explain /dev/null", "explain /dev/zero",
           "explain a long name"]


@pytest.mark.parametrize("case", CASES_6)
def test_loose_ends_exit_2_with_one_line_and_write_nothing(good_run, tmp_path, case):
    cases = run_args(good_run, tmp_path)
    assert sorted(cases) == sorted(CASES_6)
    args, needle = cases[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert_one_line(asc(*args), needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no --out folder or table was made
    assert not Path("/proc/x.csv").exists()


@pytest.mark.parametrize("extra, needle", [
    (["--package", "nonexistent_pkg_zz", "--import-packages"], "--package nonexistent_pkg_zz: no installed package"),
    (["--max-pairs", "0", "--finetune", "R"], "--max-pairs: must be at least 1"),
    (["--epochs", "0", "--finetune", "R"], "--epochs: must be at least 1"),
    (["--seed", "-1"], "--seed: must be at least 0"),
], ids=["unknown package", "max-pairs 0", "epochs 0", "seed -1"])
def test_blanca_refuses_bad_arguments_before_writing_a_task_file(tmp_path, extra, needle):
    out = run_module("probes", "blanca", "--model", "tiny-random", "--out", str(tmp_path / "X"), "--quiet", *extra,
                     timeout=300)
    assert_one_line(out, needle)
    assert not (tmp_path / "X").exists()  # it used to leave 11 MB of task files under X/tasks


def test_a_file_over_the_limit_inside_a_corpus_folder_is_skipped_unread(tmp_path, caplog):
    import logging

    from asc.corpus.sources import MAX_SOURCE_BYTES, load_corpus

    (tmp_path / "a.py").write_text(CODE.format(i=1))
    with open(tmp_path / "b.py", "wb") as f:
        f.truncate(MAX_SOURCE_BYTES + 1)
    with caplog.at_level(logging.WARNING, logger="asc.corpus.sources"):
        snippets = load_corpus(str(tmp_path))
    assert [s.origin for s in snippets] == ["a.py"]
    assert "b.py" in caplog.text and "over the 8 MB a file may have" in caplog.text


# ------------------------------------------------------------------ issue 43, section 3: loose ends of the CLI


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``(prog, parser)`` of ``parser`` and of every subcommand under it, nested ones too, from the parser
    objects."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias maps to the same parser
                yield from _subcommands(sub)


PARSERS = dict(kv for build in (asc_parser, probes_parser) for kv in _subcommands(build()))


@pytest.mark.parametrize("prog", list(PARSERS))
def test_every_help_formats(prog):
    """argparse %-formats help strings: a lone % in one (``within 1% (at most``) crashed ``--help``."""
    text = PARSERS[prog].format_help()
    assert text.startswith("usage: ") and len(text.splitlines()) > 2, text


def test_the_help_walk_reaches_every_command():
    assert {"python -m asc attribute", "python -m asc attribute-corpus", "python -m asc intervene",
            "python -m probes blanca"} <= set(PARSERS)
    assert len(PARSERS) == 2 + 9 + 5 + 5  # the two programs, asc's 9 commands, probes' 5, sae's 5 actions


def test_attribute_help_exits_0():
    out = asc("attribute", "--help")
    assert out.returncode == 0, out.stderr.decode()
    assert "--steps" in out.stdout.decode() and "within 1%" in out.stdout.decode()


def main_refusals(tmp_path: Path) -> dict[str, tuple[str, list[str], str]]:
    """(program, argv, what stderr says) of the inputs that crashed, hung or were taken silently: each is refused
    when parsed, before a file is read, a model loads or Ray starts (the run folders named do not exist)."""
    code = tmp_path / "m.py"
    code.write_text(CODE.format(i=1))
    run, model = str(tmp_path / "run"), ["--model", "tiny-random"]
    ev = ["eval", "--corpus", "humaneval", *model, "--quiet"]
    out = ["--out", str(tmp_path / "out")]
    boot_cap = f"must be at most {MAX_N_BOOT:,}"
    return {
        "attribute --steps 1000000": ("asc", ["attribute", str(code), "--at", "3:9", "--method", "ig", "--steps",
                                              "1000000", *model], f"--steps: must be at most {AUTO_MAX_STEPS}"),
        "compare --n-boot 1e9": ("asc", ["compare", run, "--n-boot", "1000000000"], f"--n-boot: {boot_cap}"),
        "eval --n-boot 1e9": ("asc", [*ev, *out, "--n-boot", "1000000000"], f"--n-boot: {boot_cap}"),
        "attribute-corpus --k 1e9": ("asc", ["attribute-corpus", run, "--k", "1000000000"],
                                     f"--k: must be at most {MAX_K}"),
        "attribute-corpus --n-boot 1e9": ("asc", ["attribute-corpus", run, "--n-boot", "1000000000"],
                                          f"--n-boot: {boot_cap}"),
        "causal --simulations 1e9": ("asc", ["causal", run, "--out", str(tmp_path / "c.csv"), "--simulations",
                                             "1000000000"], f"--simulations: must be at most {MAX_SIMULATIONS:,}"),
        "causal --seed 2**32": ("asc", ["causal", run, "--out", str(tmp_path / "c.csv"), "--seed", str(2**32)],
                                "--seed: must be at most 4,294,967,295"),
        "explain --max-window 1e30": ("asc", ["explain", str(code), "--max-window", "1" + "0" * 30, *model],
                                      "--max-window: must be at most 2,147,483,647"),
        "eval --out ''": ("asc", [*ev, "--out", ""], "--out: is empty"),
        "eval --out blank": ("asc", [*ev, "--out", "  "], "--out: is empty"),
        "eval --threshold nan": ("asc", [*ev, *out, "--threshold", "nan"], "--threshold: 'nan' is not a finite number"),
        "eval --threshold 2": ("asc", [*ev, *out, "--threshold", "2"], "--threshold: must be at least 0 and at most 1"),
        "eval --fork-entropy inf": ("asc", [*ev, *out, "--forks", "--fork-entropy", "inf"],
                                    "--fork-entropy: 'inf' is not a finite number"),
        "eval --fork-margin nan": ("asc", [*ev, *out, "--forks", "--fork-margin", "nan"], "--fork-margin: 'nan'"),
        "eval --gpus-per-worker -1": ("asc", [*ev, *out, "--engine", "ray", "--gpus-per-worker", "-1"],
                                      "--gpus-per-worker: must be at least 0"),
        "eval --gpus-per-worker nan": ("asc", [*ev, *out, "--engine", "ray", "--gpus-per-worker", "nan"],
                                       "--gpus-per-worker: 'nan' is not a finite number"),
        "eval --gpus-per-worker 1.5": ("asc", [*ev, *out, "--engine", "ray", "--gpus-per-worker", "1.5"],
                                       "a fraction of one GPU from 0 to 1 or a whole number of GPUs"),
        "compare --out x.txt": ("asc", ["compare", run, "--out", str(tmp_path / "x.txt")],
                                "tables are written as .csv or .json"),
        "causal --out x.xlsx": ("asc", ["causal", run, "--out", str(tmp_path / "x.xlsx")],
                                "tables are written as .csv or .json"),
        "attribute-corpus --out x.parquet": ("asc", ["attribute-corpus", run, "--out", str(tmp_path / "x.parquet")],
                                             "tables are written as .csv or .json"),
        "intervene rename, an extra field": ("asc", ["intervene", str(code), "--corrupt", "rename:x:y:z", *model],
                                             "'rename:x:y:z' has 1 extra field: rename takes rename:NAME or"),
        "intervene operator, an extra field": ("asc", ["intervene", str(code), "--corrupt", "operator:3:18:-:x",
                                                       *model], "has 1 extra field: operator takes"),
        "intervene docstring, an extra field": ("asc", ["intervene", str(code), "--corrupt", "docstring:2:3", *model],
                                                "has 1 extra field: docstring takes docstring or docstring:LINE"),
        "intervene rename, an empty NEW": ("asc", ["intervene", str(code), "--corrupt", "rename:x:", *model],
                                           "has an empty field"),
        "branch --temperature inf": ("asc", ["branch", str(code), "--at", "3:9", "--choose", "1", "--temperature",
                                             "inf", *model], "--temperature: 'inf' is not a finite number"),
        "branch --top-p nan": ("asc", ["branch", str(code), "--at", "3:9", "--choose", "1", "--top-p", "nan", *model],
                               "--top-p: 'nan' is not a finite number"),
        "probes attention --max-k 1e9": ("probes", ["attention", *model, *out, "--max-k", "1000000000"],
                                         f"--max-k: must be at most {MAX_TOP_K}"),
        "probes attention --val-fraction nan": ("probes", ["attention", *model, *out, "--val-fraction", "nan"],
                                                "--val-fraction: 'nan' is not a finite number"),
        "probes attention --val-fraction 1": ("probes", ["attention", *model, *out, "--val-fraction", "1"],
                                              "--val-fraction: must be above 0 and below 1"),
        "probes blanca --epochs 1e9": ("probes", ["blanca", *model, *out, "--finetune", "R", "--epochs", "1000000000"],
                                       f"--epochs: must be at most {MAX_EPOCHS}"),
        "probes layers --out ''": ("probes", ["layers", *model, "--out", ""], "--out: is empty"),
        "probes gluecode --seed 2**32": ("probes", ["gluecode", *out, "--seed", str(2**32)],
                                         "--seed: must be at most 4,294,967,295"),
    }


CASES_43 = ["attribute --steps 1000000", "compare --n-boot 1e9", "eval --n-boot 1e9", "attribute-corpus --k 1e9",
            "attribute-corpus --n-boot 1e9", "causal --simulations 1e9", "causal --seed 2**32",
            "explain --max-window 1e30", "eval --out ''", "eval --out blank", "eval --threshold nan",
            "eval --threshold 2", "eval --fork-entropy inf", "eval --fork-margin nan", "eval --gpus-per-worker -1",
            "eval --gpus-per-worker nan", "eval --gpus-per-worker 1.5", "compare --out x.txt", "causal --out x.xlsx",
            "attribute-corpus --out x.parquet", "intervene rename, an extra field",
            "intervene operator, an extra field", "intervene docstring, an extra field",
            "intervene rename, an empty NEW", "branch --temperature inf", "branch --top-p nan",
            "probes attention --max-k 1e9", "probes attention --val-fraction nan",
            "probes attention --val-fraction 1", "probes blanca --epochs 1e9", "probes layers --out ''",
            "probes gluecode --seed 2**32"]


@pytest.mark.parametrize("case", CASES_43)
def test_cli_loose_ends_are_refused_in_one_line_and_write_nothing(tmp_path, monkeypatch, capsys, case):
    """Each used to crash (MemoryError, exit 1), hang (a billion resamples or targets), wait on Ray's start-up or
    run into the current folder (``--out ''``); now: exit 2, one line naming the fix, nothing written (the
    current folder is ``tmp_path``, where ``--out ''`` would have written)."""
    cases = main_refusals(tmp_path)
    assert sorted(cases) == sorted(CASES_43)
    program, args, needle = cases[case]
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    main = {"asc": asc_main, "probes": probes_main}[program]
    try:
        code = main(args)
    except SystemExit as stop:  # argparse's refusals exit from inside main
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err, err
    assert "(see python -m" in err  # the usage error names the --help that shows the valid values
    assert sorted(p.name for p in tmp_path.iterdir()) == before
