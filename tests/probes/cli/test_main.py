"""The command line ``python -m probes inspect|attention|gluecode`` (probes.cli): reports, one-line errors, and the
old name ``layers`` of ``inspect``."""

import json

from probes.cli import main
from tests.helpers import ATTENTION_CODES, toy_task


def test_cli_runs_and_reports(tmp_path, capsys):
    tsv = tmp_path / "toy.tsv"
    toy_task().to_tsv(tsv)
    code = main(["inspect", "--model", "tiny-random", "--task-file", str(tsv), "--out", str(tmp_path / "o"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "TOY" in out and "tiny-random" in out
    assert main(["inspect", "--model", "tiny-random", "--tasks", "XYZ", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "XYZ" in err and "KTX" in err
    assert main(["inspect", "--model", "nonsense", "--task-file", str(tsv), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model 'nonsense'" in err


def test_the_old_name_layers_runs_the_same_and_says_the_new_one_once(tmp_path, capsys):
    """``probes layers`` (before ``inspect`` was its name) still runs; once it succeeded, one line on stderr names
    ``inspect``; an error stays one line (no note)."""
    tsv = tmp_path / "toy.tsv"
    toy_task().to_tsv(tsv)
    args = ["--model", "tiny-random", "--task-file", str(tsv), "--out", str(tmp_path / "o"), "--quiet"]
    assert main(["inspect", *args]) == 0
    new = capsys.readouterr()
    assert main(["layers", *args]) == 0  # resumed from the same folder: the same report
    old = capsys.readouterr()
    assert old.out == new.out and new.err == ""
    assert old.err == "note: `python -m probes layers` is now `python -m probes inspect` (the old name still works)\n"
    assert main(["layers", "--model", "tiny-random", "--tasks", "XYZ", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "XYZ" in err


def test_cli_attention(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"code": c}) for c in ATTENTION_CODES))
    code = main(["attention", "--model", "tiny-random", "--corpus", str(corpus), "--out", str(tmp_path / "o"),
                 "--max-k", "3", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "dependent -> head" in out and "mean" in out
    assert main(["attention", "--model", "tiny-random", "--corpus", "nowhere", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: unknown corpus 'nowhere'")


def test_cli_gluecode_builds_runs_and_prints_table2(tmp_path, capsys):
    out = tmp_path / "g"
    code = main(["gluecode", "--model", "tiny-random", "--tasks", "OPS", "--corpus", "algorithms", "--size", "24",
                 "--context", "function", "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0 and "OPS: 24 items" in text
    assert "paper: Transformer (CodeBERTa)" in text and "most frequent operator" in text
    assert (out / "tasks" / "algorithms-24-seed0" / "OPS.jsonl").is_file()
    assert (out / "tiny-random" / "algorithms-24-seed0" / "OPS-function.jsonl").is_file()
    assert json.loads((out / "tiny-random" / "algorithms-24-seed0" / "settings.json").read_text())["max_window"] == 2048
    # resuming with another window is refused in one line, and the predictions stay
    assert main(["gluecode", "--model", "tiny-random", "--tasks", "OPS", "--corpus", "algorithms", "--size", "24",
                 "--context", "function", "--out", str(out), "--quiet", "--max-window", "512"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-window" in err
    assert (out / "tiny-random" / "algorithms-24-seed0" / "OPS-function.jsonl").stat().st_size > 0
    assert main(["gluecode", "--tasks", "OPS", "--context", "global", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "function, file, callgraph" in err
