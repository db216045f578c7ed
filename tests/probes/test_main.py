"""The command line ``python -m probes layers|attention|gluecode`` (probes/__main__.py): reports, one-line errors."""

import json

from probes.__main__ import main
from tests.helpers import ATTENTION_CODES, toy_task


def test_cli_runs_and_reports(tmp_path, capsys):
    tsv = tmp_path / "toy.tsv"
    toy_task().to_tsv(tsv)
    code = main(["layers", "--model", "tiny-random", "--task-file", str(tsv), "--out", str(tmp_path / "o"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "TOY" in out and "tiny-random" in out
    assert main(["layers", "--model", "tiny-random", "--tasks", "XYZ", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "XYZ" in err and "KTX" in err
    assert main(["layers", "--model", "nonsense", "--task-file", str(tsv), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model 'nonsense'" in err


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
