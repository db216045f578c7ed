"""Every command on ``--device cuda`` (``pytest -m gpu``, which the GPU report runs): explain, eval (with the lens),
branch, probes inspect, attention, gluecode and blanca. The same commands run on the CPU here, so their arguments
cannot rot while no GPU is there; other tests check the commands' results in detail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from asc.cli import main as asc_main
from probes.cli import main as probes_main
from tests.helpers import ATTENTION_CODES, toy_task
from tests.probes.blanca.conftest import small_items

CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(),
                                                                        reason="needs a CUDA GPU")])
DEVICES = ["cpu", CUDA]
SNIPPET = "def count(xs, y):\n    n = 0\n    for x in xs:\n        if x == y:\n            n = n + 1\n    return n\n"


def model_args(device: str) -> list[str]:
    return ["--model", "tiny-random", "--device", device, "--dtype", "float32" if device == "cpu" else "bfloat16"]


@pytest.mark.parametrize("device", DEVICES)
def test_asc_commands(device: str, tmp_path: Path, capsys):
    source = tmp_path / "count.py"
    source.write_text(SNIPPET)
    assert asc_main(["explain", str(source), "--json", *model_args(device)]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["tokens"] and explained["nodes"]
    assert asc_main(["branch", str(source), "--at", "3:8", "--choose", "2", "--max-new", "4", "--json",
                     *model_args(device)]) == 0
    assert json.loads(capsys.readouterr().out)
    out = tmp_path / "run"
    assert asc_main(["eval", "--corpus", "humaneval", "--limit", "3", "--out", str(out), "--per-layer", "--quiet",
                     "--n-boot", "50", *model_args(device)]) == 0
    assert (out / "layers").is_dir() and "humaneval" in capsys.readouterr().out


@pytest.mark.parametrize("device", DEVICES)
def test_probes_commands(device: str, tmp_path: Path, capsys):
    tsv = tmp_path / "toy.tsv"
    toy_task().to_tsv(tsv)
    assert probes_main(["inspect", "--task-file", str(tsv), "--out", str(tmp_path / "l"), "--quiet",
                        *model_args(device)]) == 0
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"code": c}) for c in ATTENTION_CODES))
    assert probes_main(["attention", "--corpus", str(corpus), "--out", str(tmp_path / "a"), "--max-k", "3", "--quiet",
                        *model_args(device)]) == 0
    assert probes_main(["gluecode", "--tasks", "OPS", "--corpus", "algorithms", "--size", "24", "--context",
                        "function", "--out", str(tmp_path / "g"), "--quiet", *model_args(device)]) == 0
    from probes.blanca.build import blanca_set_name
    from probes.blanca.items import save_items

    for task, items in small_items().items():
        save_items(tmp_path / "b" / "tasks" / blanca_set_name() / f"{task}.jsonl", task, items, {"source": "tests"})
    assert probes_main(["blanca", "--tasks", "R,L,H", "--out", str(tmp_path / "b"), "--quiet",
                        *model_args(device)]) == 0
    text = capsys.readouterr().out
    assert "OPS: 24 items" in text and "dependent -> head" in text and "R MRR" in text
