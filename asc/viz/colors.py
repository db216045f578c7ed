"""The colors of every AsC-Viz figure: one palette per quantity, each written down here, and the model palette.

Each quantity has a scale of its own, so that a color means one thing wherever it appears; every figure that colors by
a scale shows that scale's color bar (or a legend) naming the quantity.

* confidence (AsC-Eval value, 0 to 1): :data:`CONFIDENCE_SCALE`, red (0, poorly predicted) - yellow - blue (1);
* model difference (A - B): :data:`DIFFERENCE_SCALE`, orange (B more confident) - white (0) - purple (A more
  confident);
* attribution (signed): :data:`ATTRIBUTION_SCALE`, magenta (lowered the target) - white (0) - green (raised it);
* share of the attribution (0 to 1): :data:`SHARE_SCALE`, white (none of it) - green (all of it);
* activation patching's share restored (-1 to 1): :data:`PATCHING_SCALE`, brown (below 0: patching made it worse) -
  white (0) - teal (restored);
* fork rate (0 to 1): :data:`FORK_RATE_SCALE`, white - purple (the sequence view's fork marks are purple);
* a covariate's magnitude (the causal scatter): :data:`MAGNITUDE_SCALE`, viridis (no good or bad end);
* how an SAE latent fires on a syntax category (F1, precision or firing rate, 0 to 1): :data:`LATENT_SCALE`,
  (white, never - orange, always);
* one model's series: :data:`MODEL_COLORS` (Tableau 10), with a legend naming each model;
* plain bars (counts, shares of nodes): :data:`NEUTRAL`, one grey; no value (no predicted token): :data:`NO_VALUE`,
  a lighter grey.

Red to blue is confidence only: no other quantity is drawn red-to-blue. Confidence values map with ``cmin=0, cmax=1``
in every view (the paper's AsC-Viz uses the same red-to-blue reading). Against the confidence line (the paper's 0.6,
:data:`asc.concepts.CONFIDENCE_LINE`) a value is :data:`BELOW_LINE` red or :data:`ABOVE_LINE` blue, paler within 0.1
of the line (:func:`line_color`: Table I's cells); bars of several models keep their model's color and a category
below the line is hatched with a red outline.

Text drawn on such a color (the sequence view's tokens, colored table cells) is black or white, whichever contrasts
more (:func:`text_color`): WCAG 2's contrast ratio (:func:`contrast_ratio`) of the two is then at least 4.58 on any
background, above the 4.5 that WCAG asks of normal text (level AA).
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["ABOVE_LINE", "ATTRIBUTION_SCALE", "BELOW_LINE", "COLORSCALE", "CONFIDENCE_SCALE", "DIFFERENCE_SCALE",
           "FORK_RATE_SCALE", "LATENT_SCALE", "MAGNITUDE_SCALE", "MODEL_COLORS", "NEAR_LINE", "NEUTRAL", "NO_VALUE", "PATCHING_SCALE",
           "SCALES", "SHARE_SCALE", "blend", "colorbar_trace", "contrast_ratio", "line_color", "relative_luminance",
           "rgb_channels", "text_color", "value_color"]

CONFIDENCE_SCALE = "RdYlBu"  # red (low) -> yellow -> blue (high)
COLORSCALE = CONFIDENCE_SCALE  # the default scale of the tree views: confidence
DIFFERENCE_SCALE = "PuOr"  # orange (negative: B more confident) -> white (0) -> purple (positive: A more confident)
ATTRIBUTION_SCALE = "PiYG"  # magenta (lowered the target) -> white (0) -> green (raised it)
SHARE_SCALE = "Greens"  # white (none of the attribution) -> green (all of it)
PATCHING_SCALE = "BrBG"  # brown (negative: patching made it worse) -> white (0) -> teal (restored)
FORK_RATE_SCALE = "Purples"  # white (no fork point) -> purple (every token a fork point)
MAGNITUDE_SCALE = "Viridis"  # a covariate's value, no good or bad end (the causal scatter)
LATENT_SCALE = "Oranges"  # an SAE latent on a syntax category: white 0 (never fires there) -> orange 1 (Syntax features page)
#: every scale by the quantity it draws: one scale per quantity, no scale for two
SCALES = {"confidence": CONFIDENCE_SCALE, "model difference": DIFFERENCE_SCALE, "attribution": ATTRIBUTION_SCALE,
          "attribution share": SHARE_SCALE, "patching": PATCHING_SCALE, "fork rate": FORK_RATE_SCALE,
          "covariate": MAGNITUDE_SCALE, "SAE latent by category": LATENT_SCALE}
NO_VALUE = "#b8b8b8"
NEUTRAL = "#6f6f6f"  # plain bars (counts, shares of nodes): no quantity of the scales above
BELOW_LINE = "rgb(215, 48, 39)"  # the confidence scale at 0.1: a value below the confidence line
ABOVE_LINE = "rgb(69, 117, 180)"  # the confidence scale at 0.9: a value at or above it
NEAR_LINE = 0.1  # within this of the line a value's red or blue is paler


@cache
def _color_table() -> tuple[str, ...]:
    """The scale sampled at 0.000, 0.001, ..., 1.000 in one plotly call (it costs ~1 ms per call)."""
    from plotly.colors import sample_colorscale

    return tuple(sample_colorscale(CONFIDENCE_SCALE, list(np.linspace(0.0, 1.0, 1001))))


def value_color(value: float | None) -> str:
    """The confidence scale's color for a value in [0, 1], to the nearest 0.001 (grey for missing)."""
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


def line_color(value: float | None, threshold: float) -> str:
    """A value against the confidence line: :data:`BELOW_LINE` red below ``threshold``, :data:`ABOVE_LINE` blue at or
    above it, each blended halfway to white within :data:`NEAR_LINE` of the line; :data:`NO_VALUE` for a missing one."""
    if value is None or math.isnan(float(value)):
        return NO_VALUE
    color = BELOW_LINE if float(value) < threshold else ABOVE_LINE
    return blend(color, 0.5) if abs(float(value) - threshold) < NEAR_LINE else color


def colorbar_trace(scale: str, cmin: float, cmax: float, title: str, **colorbar: object) -> go.Scatter:
    """A trace that draws nothing but the color bar of ``scale`` from ``cmin`` to ``cmax`` titled ``title``: the legend
    of a figure whose marks take their colors from the scale one by one (``colorbar``: more color bar settings)."""
    import plotly.graph_objects as go

    return go.Scatter(x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False, name="scale",
                      marker={"color": [cmin], "colorscale": scale, "cmin": cmin, "cmax": cmax, "showscale": True,
                              "colorbar": {"title": {"text": title}, "thickness": 12, **colorbar}})


MODEL_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#e45756", "#72b7b2", "#eeca3b", "#ff9da6",
                "#bab0ac")  # Tableau 10: eight BLANCA models (pretrained and fine-tuned) need more than six
