"""Per-layer corpus figures (asc.viz.corpus_depth): the heatmap's grid and crossing rings, curves on relative depth."""

from __future__ import annotations

import pandas as pd
import pytest

from asc.errors import InputError
from asc.viz.corpus_depth import depth_curves, layer_heatmap


def _summary() -> pd.DataFrame:
    rows = []
    for model, layers in (("deep", 4), ("shallow", 2)):
        for category, curve in (("Global", [0.1, 0.3, 0.65, 0.7, 0.8]), ("Scope", [0.0, 0.2, 0.4, 0.5, 0.55])):
            for layer in range(layers + 1):
                rows.append({"model": model, "category": category, "layer": layer, "depth": layer / layers,
                             "value": curve[layer], "n": 10 + layer})
    return pd.DataFrame(rows)


def test_heatmap_grid_and_the_first_layer_at_the_line():
    fig = layer_heatmap(_summary(), "deep", threshold=0.6)
    heat, rings = fig.data
    assert list(heat.y) == ["Global", "Scope"] and list(heat.x) == [0, 1, 2, 3, 4]
    assert heat.z[0][2] == 0.65 and heat.zmin == 0 and heat.zmax == 1
    assert list(rings.x) == [2] and list(rings.y) == ["Global"]  # Scope never reaches 0.6
    assert list(layer_heatmap(_summary(), "deep", threshold=0.5).data[1].x) == [2, 3]
    with pytest.raises(InputError, match="choose one of deep, shallow"):
        layer_heatmap(_summary(), "other")


def test_curves_put_models_of_different_depth_on_one_axis():
    fig = depth_curves(_summary(), "Scope")
    assert [t.name for t in fig.data] == ["deep", "shallow"]
    assert list(fig.data[1].x) == [0.0, 0.5, 1.0] and list(fig.data[1].y) == [0.0, 0.2, 0.4]
    assert fig.layout.shapes[0].y0 == 0.6
    with pytest.raises(InputError, match="choose one of Global, Scope"):
        depth_curves(_summary(), "Types")
