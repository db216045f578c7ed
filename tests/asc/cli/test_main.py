"""The command line ``python -m asc`` (asc/__main__.py, the entry point of asc.cli), run as users run it: in a
subprocess."""

import json

import numpy as np
import pandas as pd
import pytest

from asc.concepts import load_categories
from asc.corpus.summary import summary_table
from tests.helpers import run_module

SRC = "def count_chars(string, character):\n    count = 0\n    for letter in string:\n        if letter == character:\n            count += 1\n    return count\n"
CATS = load_categories("python").categories


def asc(*args, stdin=None, timeout=300):
    return run_module("asc", *args, stdin=stdin, timeout=timeout)


def test_models_lists_embedded():
    out = asc("models")
    assert out.returncode == 0
    text = out.stdout.decode()
    for name in ("smollm2-135m", "gemma3-270m", "tiny-random"):
        assert name in text
    assert "(default)" in text


@pytest.mark.slow
def test_explain_json_layout(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(SRC)
    out = asc("explain", str(f), "--model", "tiny-random", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["model"]["name"] == "tiny-random" and doc["model"]["layers"] == 2
    tok = doc["tokens"]
    assert tok[0]["prob"] is None  # no BOS: position 0 has no prediction
    for t in tok:
        assert set(t) >= {"index", "text", "start", "end", "prob", "logprob", "entropy", "rank", "top"}
        assert SRC[t["start"]:t["end"]] == t["text"]
    for n in doc["nodes"]:
        assert set(n) >= {"id", "type", "named", "start", "end", "parent", "depth", "category", "is_error",
                          "token_slice", "value"}
    assert doc["snippet"]["n_tokens"] == len(tok)
    assert set(doc["snippet"]["categories"]) >= {"Scope", "Natural Language"}
    assert doc["snippet"]["categories"]["Exceptions"] is None


@pytest.mark.slow
def test_explain_reads_stdin_and_prints_tables():
    out = asc("explain", "-", "--model", "tiny-random", "--aggregate", "max", stdin=SRC.encode())
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "for_statement" in text and "aggregate max" in text and "Natural Language" in text


@pytest.mark.parametrize("setup,args,needle", [
    (lambda p: None, ["explain", "{d}/missing.py"], "file not found"),
    (lambda p: (p / "bad.py").write_bytes(b"x = '\xe9'\n"), ["explain", "{d}/bad.py"], "not valid UTF-8"),
    (lambda p: (p / "empty.py").write_text("  \n"), ["explain", "{d}/empty.py"], "empty"),
    (lambda p: (p / "a.py").write_text("x = 1\n"), ["explain", "{d}/a.py", "--model", "no-such-model"],
     "unknown model"),
    (lambda p: None, ["eval", "--corpus", "{d}/nothing-here", "--out", "{d}/o"], "unknown corpus"),
])
def test_bad_input_is_one_clear_line(tmp_path, setup, args, needle):
    setup(tmp_path)
    args = [a.format(d=tmp_path) for a in args]
    if "--model" not in args:
        args += ["--model", "tiny-random"]
    out = asc(*args)
    err = out.stderr.decode()
    assert out.returncode == 2
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_eval_writes_results_and_prints_table(tmp_path):
    corpus = tmp_path / "code"
    corpus.mkdir()
    (corpus / "m.py").write_text(SRC + "\n\n" + SRC.replace("count_chars", "count_other"))
    out = asc("eval", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--model", "tiny-random",
              "--quiet", "--n-boot", "50")
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert "2 snippets" in text and "Global" in text and "Iteration" in text
    assert (tmp_path / "run" / "categories.csv").exists()
    assert list((tmp_path / "run" / "nodes").glob("part-*.parquet"))


@pytest.mark.real
def test_cli_compare_prints_and_writes(runs, tmp_path):
    smol, tiny = runs
    out = asc("compare", str(tiny.path), str(smol.path), "--n-boot", "100", "--out", str(tmp_path / "t.csv"))
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    assert out.returncode == 0, stderr
    lines = stdout.splitlines()
    first_row = next(i for i, line in enumerate(lines) if line.strip().startswith(("smollm2", "tiny")))
    assert lines[first_row].strip().startswith("smollm2-135m")  # sorted by the global value
    assert "tiny-random minus smollm2-135m" in stdout
    written = pd.read_csv(tmp_path / "t.csv")
    from asc.corpus.runs import load_digest

    expected = summary_table([load_digest(tiny.path), load_digest(smol.path)], CATS, n_boot=100)
    np.testing.assert_allclose(written["median"], expected["median"], equal_nan=True)
    bad = asc("compare", str(tmp_path), timeout=120)
    assert bad.returncode == 2 and "meta.json" in bad.stderr.decode()
