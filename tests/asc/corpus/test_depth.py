"""Per-layer corpus runs (asc.corpus.depth): ``--layers`` adds a layers/ table whose output layer equals the nodes
table, the summary's medians come from it and a run keeps its --layers setting (Ray writes the same table:
tests/asc/corpus/test_engines.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from asc.concepts import GLOBAL
from asc.corpus import load_run, run_corpus
from asc.corpus.depth import crossing_table, has_layers, layer_frame, layer_summary
from asc.corpus.sources import load_corpus
from asc.errors import CorpusError

N = 6


@pytest.fixture(scope="module")
def snippets():
    return load_corpus("humaneval", limit=N)


@pytest.fixture(scope="module")
def layered(tiny, snippets, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("layers") / "run"
    run_corpus(tiny, snippets, out, corpus="humaneval", batch_size=4, progress=False, layers=True)
    return out


def test_layer_frame_keeps_nodes_with_a_value():
    values = np.array([[0.1, math.nan, 0.3], [math.nan, math.nan, 0.9]])
    frame = layer_frame("s", values)
    assert frame[["layer", "node"]].values.tolist() == [[0, 0], [0, 2], [1, 2]]
    assert frame["value"].dtype == np.float32 and frame["layer"].dtype == np.int16


def test_output_layer_equals_the_nodes_table(layered, tiny):
    run = load_run(layered)
    layers = pd.read_parquet(layered / "layers")
    assert sorted(p.name for p in (layered / "layers").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    assert set(layers["layer"]) == set(range(tiny.n_layers + 1)) and set(layers["snippet_id"]) == set(run.snippets["id"])
    last = layers[layers["layer"] == tiny.n_layers].merge(run.nodes, left_on=["snippet_id", "node"],
                                                          right_on=["snippet_id", "id"])
    assert len(last) == run.nodes["value"].notna().sum()
    assert np.allclose(last["value_x"], last["value_y"], atol=1e-6)
    assert has_layers(layered) and load_run(layered).meta.settings.per_layer is True


def test_summary_is_the_median_per_category_and_layer(layered, tiny):
    summary = layer_summary(layered, "tiny")
    run = load_run(layered)
    out = summary[summary["layer"] == tiny.n_layers].set_index("category")
    expected = run.nodes.dropna(subset=["value", "category"]).groupby("category")["value"]
    for category, values in expected:
        assert out.loc[category, "value"] == pytest.approx(float(np.median(values.astype(np.float32))), abs=1e-6)
        assert out.loc[category, "n"] == len(values)
    assert out.loc[GLOBAL, "n"] == sum(len(v) for _, v in expected)
    assert set(summary["model"]) == {"tiny"} and summary["depth"].max() == 1.0


def test_settings_keep_layers_apart(layered, tiny, snippets, tmp_path):
    with pytest.raises(CorpusError, match="other settings"):
        run_corpus(tiny, snippets, layered, corpus="humaneval", batch_size=4, progress=False)
    plain = tmp_path / "plain"
    run_corpus(tiny, snippets[:2], plain, corpus="humaneval", progress=False)
    assert not load_run(plain).meta.settings.per_layer and not has_layers(plain)
    with pytest.raises(CorpusError, match="without --per-layer: run `python -m asc eval ... --per-layer`"):
        layer_summary(plain)


def test_crossing_table_reads_the_first_layer_at_the_line():
    summary = pd.DataFrame({"model": "m", "category": ["A"] * 3 + ["B"] * 3, "layer": [0, 1, 2] * 2,
                            "depth": [0, 0.5, 1] * 2, "value": [0.2, 0.7, 0.9, 0.1, 0.2, 0.5], "n": 5})
    table = crossing_table(summary).set_index("category")
    assert table.loc["A", "crossing"] == 1 and table.loc["A", "crossing_depth"] == 0.5
    assert math.isnan(table.loc["B", "crossing"]) and table.loc["B", "output"] == 0.5


def test_cli_eval_layers_prints_the_layer_summary(tmp_path, capsys):
    from asc.__main__ import main

    out = tmp_path / "cli"
    assert main(["eval", "--model", "tiny-random", "--corpus", "humaneval", "--limit", "3", "--out", str(out),
                 "--layers", "--quiet", "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    assert "per layer (logit lens, layer 0 = embeddings, 2 = output)" in printed and "L1:" in printed
    assert (out / "layers.csv").is_file()


def test_cli_compare_adds_crossings_of_layer_runs_and_refuses_a_run_twice(layered, tiny, snippets, tmp_path, capsys):
    from asc.__main__ import main

    other = tmp_path / "other"
    run_corpus(tiny, snippets[:3], other, corpus="humaneval", progress=False, layers=True)
    assert main(["compare", str(layered), str(other), "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    assert "relative depth (layer / layers) where each category's median first reaches 0.6" in printed
    assert "Global" in printed.split("first reaches 0.6")[1]
    assert main(["compare", str(layered), str(layered)]) == 2
    assert "the same run folder is given twice" in capsys.readouterr().err
