"""``python -m probes blanca``: scores a task set, prints the paper-style table, fine-tunes MiniLM and scores the
result; user mistakes get one line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probes.cli import main


def test_cli_scores_and_prints_the_table(small_run: Path, capsys):
    code = main(["blanca", "--model", "tiny-random", "--tasks", "R,L,H", "--out", str(small_run), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "R: 6 items (3 test)" in out and "U: 12 items" not in out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("model"))
    assert "R MRR" in header and "L t" in header and "H r" in header and "U r" in header  # paper columns kept
    assert "tiny-random" in out and "paper: USE" in out
    assert not list((small_run / "scores" / "stdlib-seed0").glob("*/U.parquet"))


def test_cli_mistakes_exit_2_with_one_line(small_run: Path, capsys):
    assert main(["blanca", "--tasks", "R,Q", "--out", str(small_run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown BLANCA task Q" in err
    assert main(["blanca", "--package", "json", "--out", str(small_run)]) == 2
    assert "--import-packages" in capsys.readouterr().err
    assert main(["blanca", "--finetune", "R", "--finetune-base", "tiny-random", "--out", str(small_run)]) == 2
    assert "sentence-transformers" in capsys.readouterr().err


@pytest.mark.real
def test_cli_fine_tunes_minilm_and_scores_it(small_run: Path, capsys):
    code = main(["blanca", "--model", "minilm-l6", "--tasks", "L,F", "--finetune", "L", "--max-pairs", "16",
                 "--out", str(small_run), "--quiet", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0, out
    folder = small_run / "finetuned" / "stdlib-seed0" / "FT-L-minilm-l6"
    assert json.loads((folder / "blanca-finetune.json").read_text())["name"] == "FT-L"
    rows = [line.split()[0] for line in out.splitlines() if line.strip().startswith(("minilm", "FT-L"))]
    assert rows == ["FT-L", "minilm-l6"]  # both scored and in the table
    code = main(["blanca", "--tasks", "L,F", "--split", "all", "--out", str(small_run), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "FT-L" not in out and "minilm-l6" in out  # --split all: pretrained models only
