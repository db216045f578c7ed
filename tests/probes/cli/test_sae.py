"""``python -m probes sae {train,eval,enrich,show,versus}`` on the tiny model: reports, JSON, and one-line errors (exit 2)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from probes.cli import main
from probes.inspect.taskfile import Task
from probes.sae import load_sae, save_sae
from tests.probes.sae.conftest import FUNCTIONS, random_sae


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny SAE trained through the CLI, and its corpus file."""
    root = tmp_path_factory.mktemp("sae-cli")
    corpus = root / "funcs.py"
    corpus.write_text("\n\n".join(FUNCTIONS))
    out = root / "sae"
    code = main(["sae", "train", "--model", "tiny-random", "--layer", "1", "--corpus", str(corpus), "--tokens", "768",
                 "--width", "40", "--k", "4", "--batch-size", "64", "--out", str(out), "--quiet"])
    assert code == 0
    return out, corpus


def _one_line_error(capsys, words):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and all(w in err for w in words), err


def test_train_eval_enrich_show(trained, capsys, tmp_path):
    out, corpus = trained
    capsys.readouterr()
    assert load_sae(out).cfg.d_sae == 40
    assert main(["sae", "eval", str(out), "--corpus", str(corpus), "--json", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == "tiny-random" and report["layer"] == 1 and 0 < report["l0"] <= 4
    assert {"variance_explained", "dead_latents", "ce_recovered", "ce_clean", "ce_sae", "ce_zero"} <= set(report)
    assert main(["sae", "eval", "--sae", str(out), "--corpus", str(corpus), "--quiet"]) == 0
    assert "variance explained" in capsys.readouterr().out
    table = tmp_path / "enrich.csv"
    assert main(["sae", "enrich", str(out), "--corpus", str(corpus), "--quiet", "--out", str(table), "--n-boot",
                 "20"]) == 0
    text = capsys.readouterr().out
    assert "Natural Language" in text and table.read_text().startswith("latent,kind,name")
    assert main(["sae", "enrich", str(out), "--corpus", str(corpus), "--quiet", "--json", "--n-boot", "20"]) == 0
    enriched = json.loads(capsys.readouterr().out)
    assert len(enriched["latents"]) == 40 and "Iteration" in enriched["categories"]
    assert list((out / "activations").glob("*.npz"))  # the corpus's activations are kept for show
    assert main(["sae", "show", str(out), "--corpus", str(corpus), "--latent", "0", "--quiet", "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["latent"] == 0 and card["label"] and "histogram" in card and "categories" in card
    assert main(["sae", "show", str(out), "--corpus", str(corpus), "--latent", "0", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("latent 0: ")


def test_bad_input_is_one_line_and_exit_2(trained, capsys, tmp_path):
    out, corpus = trained
    capsys.readouterr()
    assert main(["sae", "show", str(tmp_path / "missing"), "--latent", "1", "--quiet"]) == 2
    _one_line_error(capsys, ["missing", "is not a folder"])
    assert main(["sae", "show", str(out), "--corpus", str(corpus), "--latent", "40", "--quiet"]) == 2
    _one_line_error(capsys, ["latent 40 is out of range", "40 latents"])
    # a folder whose weights are of another width than its cfg.json says
    other = tmp_path / "other-width"
    shutil.copytree(out, other)
    save_sae(random_sae(32, width=24, k=4), tmp_path / "w24")
    shutil.copy(tmp_path / "w24" / "sae_weights.safetensors", other / "sae_weights.safetensors")
    assert main(["sae", "show", str(other), "--corpus", str(corpus), "--latent", "1", "--quiet"]) == 2
    _one_line_error(capsys, ["another SAE width"])
    # an SAE of another model: the model it names is not the one given
    save_sae(random_sae(32, model="gpt2-small"), tmp_path / "gpt2")
    assert main(["sae", "show", str(tmp_path / "gpt2"), "--model", "tiny-random", "--corpus", str(corpus),
                 "--latent", "1", "--quiet"]) == 2
    _one_line_error(capsys, ["'gpt2-small'", "'tiny-random'"])
    assert main(["sae", "eval", str(tmp_path / "gpt2"), "--model", "tiny-random", "--corpus", str(corpus),
                 "--quiet"]) == 2
    _one_line_error(capsys, ["'gpt2-small'", "'tiny-random'"])
    # an SAE of another layer than the one asked for
    assert main(["sae", "eval", str(out), "--layer", "0", "--corpus", str(corpus), "--quiet"]) == 2
    _one_line_error(capsys, ["reads layer 1", "not layer 0"])
    assert main(["sae", "eval", "--corpus", str(corpus), "--quiet"]) == 2
    _one_line_error(capsys, ["give the SAE folder once"])
    assert main(["sae", "train", "--model", "tiny-random", "--layer", "7", "--corpus", str(corpus), "--tokens", "64",
                 "--width", "8", "--k", "2", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    _one_line_error(capsys, ["--layer 7 is outside tiny-random"])
    assert main(["sae", "train", "--model", "tiny-random", "--layer", "1", "--corpus", str(corpus), "--tokens", "64",
                 "--width", "8", "--k", "9", "--out", str(tmp_path / "x"), "--quiet"]) == 2
    _one_line_error(capsys, ["--k 9 is above --width 8"])


def test_versus_on_a_task_file(trained, capsys, tmp_path):
    out, _ = trained
    texts = [f"count = {i}\n" if i % 2 else f"return x + {i}\n" for i in range(40)]
    split = np.array(["tr", "tr", "tr", "va", "te"] * 8)
    Task("MINE", ("return", "count"), tuple(texts), np.arange(40) % 2, split).to_tsv(tmp_path / "mine.tsv")
    capsys.readouterr()
    args = ["sae", "versus", str(out), "--task-file", str(tmp_path / "mine.tsv"), "--n-boot", "50", "--quiet"]
    assert main([*args, "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["tasks"][0]
    assert row["task"] == "MINE" and row["n_test"] == 8 and 0 <= row["latent"] < 40
    assert row["probe_ci"][0] <= row["probe_accuracy"] <= row["probe_ci"][1]
    assert main([*args, "--out", str(tmp_path / "v.csv")]) == 0
    text = capsys.readouterr().out
    assert "MINE" in text and "probe" in text and (tmp_path / "v.csv").read_text().startswith("task,")
    assert main(["sae", "versus", str(tmp_path / "missing"), "--tasks", "KTX", "--quiet"]) == 2
    _one_line_error(capsys, ["missing", "is not a folder"])
    assert main(["sae", "versus", str(out), "--tasks", "KTY", "--quiet"]) == 2
    _one_line_error(capsys, ["unknown task(s) KTY", "choose from"])
