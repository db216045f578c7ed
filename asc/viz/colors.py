"""The colors every AsC-Viz figure shares: one fixed value scale and one palette of model colors.

Values in [0, 1] map to red (0, poorly predicted) through yellow to blue (1, confident) with
``cmin=0, cmax=1`` in every view (the paper's AsC-Viz uses the same red-to-blue reading); nodes
and tokens without a value are grey.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

__all__ = ["COLORSCALE", "MODEL_COLORS", "NO_VALUE", "value_color"]

COLORSCALE = "RdYlBu"  # red (low) -> yellow -> blue (high)
NO_VALUE = "#b8b8b8"


@cache
def _color_table() -> tuple[str, ...]:
    """The scale sampled at 0.000, 0.001, ..., 1.000 in one plotly call (it costs ~1 ms per call)."""
    from plotly.colors import sample_colorscale

    return tuple(sample_colorscale(COLORSCALE, list(np.linspace(0.0, 1.0, 1001))))


def value_color(value: float | None) -> str:
    """The scale's color for a value in [0, 1], to the nearest 0.001 (grey for missing)."""
    if value is None or math.isnan(float(value)):  # float(): numpy float32 NaN too
        return NO_VALUE
    return _color_table()[int(round(min(1.0, max(0.0, float(value))) * 1000))]


MODEL_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#e45756", "#72b7b2", "#eeca3b", "#ff9da6",
                "#bab0ac")  # Tableau 10: eight BLANCA models (pretrained and fine-tuned) need more than six
