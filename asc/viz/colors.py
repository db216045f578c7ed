"""The colors every AsC-Viz figure shares: one fixed value scale and one palette of model colors.

Values in [0, 1] map to red (0, poorly predicted) through yellow to blue (1, confident) with
``cmin=0, cmax=1`` in every view (the paper's AsC-Viz uses the same red-to-blue reading); nodes
and tokens without a value are grey.

Text drawn on such a color (the sequence view's tokens, colored table cells) is black or white, whichever contrasts
more (:func:`text_color`): WCAG 2's contrast ratio (:func:`contrast_ratio`) of the two is then at least 4.58 on any
background, above the 4.5 that WCAG asks of normal text (level AA).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

__all__ = ["COLORSCALE", "MODEL_COLORS", "NO_VALUE", "blend", "contrast_ratio", "relative_luminance",
           "rgb_channels", "text_color", "value_color"]

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


def rgb_channels(color: str) -> tuple[int, int, int]:
    """The red, green and blue channels (0-255) of ``#rrggbb`` or ``rgb(r, g, b)``."""
    if color.startswith("#") and len(color) == 7:
        return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)
    if color.startswith("rgb(") and color.endswith(")"):
        r, g, b = (int(round(float(part))) for part in color[4:-1].split(","))
        return r, g, b
    raise ValueError(f"not an #rrggbb or rgb(r, g, b) color: {color!r}")


def blend(color: str, alpha: float, under: str = "#ffffff") -> str:
    """``color`` at opacity ``alpha`` over ``under``, as ``rgb(r, g, b)``: the color a reader sees."""
    top, bottom = rgb_channels(color), rgb_channels(under)
    r, g, b = (round(alpha * t + (1 - alpha) * u) for t, u in zip(top, bottom))
    return f"rgb({r}, {g}, {b})"


def relative_luminance(color: str) -> float:
    """WCAG 2's relative luminance of an sRGB color: 0 for black, 1 for white."""
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb_channels(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two colors, from 1 (the same) to 21 (black on white)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_color(background: str) -> str:
    """Black or white, whichever contrasts more with ``background`` (ratio >= 4.58 on any color)."""
    return "#000000" if contrast_ratio("#000000", background) >= contrast_ratio("#ffffff", background) else "#ffffff"


MODEL_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#e45756", "#72b7b2", "#eeca3b", "#ff9da6",
                "#bab0ac")  # Tableau 10: eight BLANCA models (pretrained and fine-tuned) need more than six
