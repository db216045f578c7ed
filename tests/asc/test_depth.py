"""AsC-Eval per layer (asc.depth): the last layer equals explain(), layer values aggregate the lens like the output,
crossings read the category curves, the JSON block is complete; ``python -m asc explain --layers --json``."""

from __future__ import annotations

import json
import math

import numpy as np

from asc.depth import CROSSING, LayerExplanation, explain_layers
from asc.explain import explain, node_values

SOURCE = "def count(xs):\n    n = 0\n    for x in xs:\n        if x > 0:\n            n += 1\n    return n\n"


def test_last_layer_equals_explain_and_every_layer_is_aggregated(tiny):
    depth = explain_layers(tiny, SOURCE)
    plain = explain(tiny, SOURCE)
    assert depth.values.shape == (3, plain.tree.n_nodes)
    assert np.allclose(depth.values[-1], plain.values, equal_nan=True, atol=1e-9)
    assert np.allclose(depth.category_values[-1], [plain.category_values[c] for c in plain.categories], equal_nan=True)
    from asc.concepts import load_categories

    again, _, cats = node_values(depth.lens.prob[1], plain.tree, plain.alignment, load_categories("python"))
    assert np.allclose(depth.values[1], again, equal_nan=True)
    assert np.allclose(depth.category_values[1], [cats[c] for c in plain.categories], equal_nan=True)


def _fake(curves: list[list[float]]) -> LayerExplanation:
    class Ex:
        categories = ("A", "B", "C")

    return LayerExplanation(Ex(), None, np.zeros((len(curves), 1)), np.asarray(curves, dtype=float))  # type: ignore[arg-type]


def test_crossing_is_the_first_layer_at_or_above_the_line():
    depth = _fake([[0.1, 0.2, math.nan], [0.6, 0.3, math.nan], [0.5, 0.7, math.nan], [0.9, 0.8, math.nan]])
    assert CROSSING == 0.6
    assert depth.crossing() == {"A": 1, "B": 2, "C": None}
    assert depth.crossing(0.85) == {"A": 3, "B": None, "C": None}
    frame = depth.category_frame()
    assert len(frame) == 8 and frame["depth"].max() == 1.0 and set(frame["category"]) == {"A", "B"}


def test_json_block_has_every_layer(tiny):
    depth = explain_layers(tiny, SOURCE)
    block = json.loads(json.dumps(depth.to_dict(), allow_nan=False))
    assert block["n_layers"] == 3 and len(block["token_prob"]) == 3
    assert len(block["token_prob"][0]) == depth.explanation.scores.n_tokens and block["token_prob"][0][0] is None
    assert set(block["category_values"]) == set(depth.categories)
    assert block["crossing"] == depth.crossing()


def test_cli_explain_layers_json(tiny, tmp_path, capsys):
    from asc.__main__ import main

    path = tmp_path / "s.py"
    path.write_text(SOURCE)
    assert main(["explain", str(path), "--model", "tiny-random", "--layers", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["layers"]["n_layers"] == 3 and "tokens" in payload
    assert main(["explain", str(path), "--model", "tiny-random", "--layers"]) == 0
    out = capsys.readouterr().out
    assert "per layer (logit lens; layer 0 = embeddings, 2 = output)" in out and "Iteration" in out
