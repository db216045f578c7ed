"""asc.viz.colors: the fixed red-to-blue value scale (RdYlBu, 0..1, to the nearest 0.001), grey for missing
values, and the model palette."""

import math
import re

import numpy as np
import pytest
from plotly.colors import sample_colorscale

from asc.viz import COLORSCALE, MODEL_COLORS, NO_VALUE, value_color
from tests.helpers import rgb as _rgb


def test_value_color_scale_ends():
    r0, _g0, b0 = _rgb(value_color(0.0))
    r1, _g1, b1 = _rgb(value_color(1.0))
    assert r0 > b0 + 50, "0 (poorly predicted) should be red"
    assert b1 > r1 + 50, "1 (confident) should be blue"
    # the scale is monotone from red to blue at the ends, and clipped outside [0, 1]
    assert value_color(-0.5) == value_color(0.0) and value_color(7.0) == value_color(1.0)
    assert value_color(1) == value_color(1.0)
    assert value_color(0.25) != value_color(0.75)


@pytest.mark.parametrize("missing", [None, float("nan"), math.nan, np.float64("nan")])
def test_value_color_missing_is_grey(missing):
    assert value_color(missing) == NO_VALUE


def test_value_color_numpy_float32_nan_is_grey():
    # float32 arrays (e.g. values computed in half/single precision) give np.float32 NaN, not a float
    assert value_color(np.float32("nan")) == NO_VALUE


@pytest.mark.parametrize("value", [0.0, 0.001, 0.25, 0.5, 0.6, 0.999, 1.0])
def test_value_color_is_plotlys_rdylbu_at_that_value(value):
    assert COLORSCALE == "RdYlBu"
    assert value_color(value) == sample_colorscale(COLORSCALE, [value])[0]


def test_value_color_rounds_to_the_nearest_thousandth():
    assert value_color(0.1234) == value_color(0.123) != value_color(0.124)
    assert value_color(0.1236) == value_color(0.124)
    assert value_color(np.float32(0.5)) == value_color(0.5) == value_color(np.float64(0.5))
    assert value_color(True) == value_color(1.0)  # anything float() takes


def test_every_value_color_is_an_rgb_string_and_no_value_is_grey():
    colors = {value_color(v) for v in np.linspace(0, 1, 101)}
    assert all(re.fullmatch(r"rgb\(\d+, ?\d+, ?\d+\)", c) for c in colors)
    assert len(colors) > 50 and NO_VALUE not in colors
    r, g, b = (int(NO_VALUE[i:i + 2], 16) for i in (1, 3, 5))
    assert r == g == b  # a neutral grey, not on the red-yellow-blue scale


def test_model_colors_are_distinct_hex_colors():
    assert len(MODEL_COLORS) == 10 and len(set(MODEL_COLORS)) == 10  # a BLANCA table has eight models
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in MODEL_COLORS) and NO_VALUE not in MODEL_COLORS


# ------------------------------------------------------------------------------------------ text on colors


def test_relative_luminance_and_contrast_follow_wcag():
    from asc.viz.colors import contrast_ratio, relative_luminance

    assert relative_luminance("#ffffff") == pytest.approx(1) and relative_luminance("#000000") == 0
    assert relative_luminance("rgb(255, 255, 255)") == pytest.approx(1)
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21) == contrast_ratio("#ffffff", "#000000")
    assert contrast_ratio("#777777", "#777777") == pytest.approx(1)
    # WCAG's own example: #767676 on white is the lightest grey that passes 4.5
    assert 4.5 <= contrast_ratio("#767676", "#ffffff") < 4.6


def test_text_on_every_color_of_the_scale_has_contrast_of_at_least_4_5():
    from asc.viz.colors import blend, contrast_ratio, text_color

    scale = [value_color(v) for v in np.linspace(0, 1, 1001)]  # every color value_color gives
    backgrounds = scale + [NO_VALUE] + [blend(c, 0.35) for c in scale]  # whitespace tokens: a lighter tint
    ratios = [contrast_ratio(text_color(c), c) for c in backgrounds]
    assert min(ratios) >= 4.5, backgrounds[int(np.argmin(ratios))]
    # the ends of the scale (dark red, dark blue) take white text, its light middle black
    assert text_color(value_color(0.0)) == text_color(value_color(1.0)) == "#ffffff"
    assert text_color(value_color(0.5)) == "#000000"


# ------------------------------------------------------------------------------------------ one palette per quantity


def _red_to_blue(scale: str) -> bool:
    """True when ``scale`` runs from a red end to a blue end (or back): the confidence scale's reading."""
    ends = [_rgb(c) for c in sample_colorscale(scale, [0.0, 1.0])]
    red = [r > b + 50 and r > g for r, g, b in ends]
    blue = [b > r + 50 and b > g for r, g, b in ends]
    return (red[0] and blue[1]) or (blue[0] and red[1])


def test_each_quantity_has_a_scale_of_its_own_and_only_confidence_is_red_to_blue():
    from asc.viz.colors import CONFIDENCE_SCALE, DIFFERENCE_SCALE, PATCHING_SCALE, SCALES

    assert len(set(SCALES.values())) == len(SCALES)  # no scale draws two quantities
    assert SCALES["confidence"] == CONFIDENCE_SCALE == COLORSCALE and _red_to_blue(CONFIDENCE_SCALE)
    assert [q for q, s in SCALES.items() if _red_to_blue(s)] == ["confidence"]
    assert not _red_to_blue(PATCHING_SCALE) and not _red_to_blue(DIFFERENCE_SCALE)


def test_scales_are_named_in_colors_only():
    """Every figure builder, view and page takes its scale from asc.viz.colors: no scale name written anywhere else
    (``colorscale="RdBu"`` in three places drew model differences and patching in the confidence colors)."""
    from tests.helpers import ROOT

    literal = re.compile(r"""colorscale["']?\s*[:=]\s*["']|^\s*[A-Z_]*SCALE\s*=\s*["']""")
    files = [*sorted((ROOT / "asc" / "viz").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py")),
             *sorted((ROOT / "pages").glob("*.py"))]
    bad = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in files if path.name != "colors.py"
           for n, line in enumerate(path.read_text().splitlines(), 1) if literal.search(line)]
    assert not bad, "name the scale in asc/viz/colors.py:\n" + "\n".join(bad)


def test_line_colors_are_red_below_and_blue_at_or_above_paler_near_the_line():
    from asc.viz.colors import ABOVE_LINE, BELOW_LINE, line_color, text_color

    assert line_color(0.2, 0.6) == BELOW_LINE and line_color(0.95, 0.6) == ABOVE_LINE
    assert line_color(0.6, 0.6) != BELOW_LINE and line_color(float("nan"), 0.6) == NO_VALUE
    for v in (0.1, 0.55, 0.599, 0.6, 0.65, 0.9):
        r, g, b = _rgb(line_color(v, 0.6))
        assert (r > b) == (v < 0.6) and (r > g if v < 0.6 else b > g)  # red or blue, never amber or yellow
        assert _contrast_ok(line_color(v, 0.6), text_color(line_color(v, 0.6)))


def _contrast_ok(background: str, text: str) -> bool:
    from asc.viz.colors import contrast_ratio

    return contrast_ratio(background, text) >= 4.5


def test_colorbar_trace_draws_only_a_color_bar():
    from asc.viz.colors import DIFFERENCE_SCALE, colorbar_trace

    trace = colorbar_trace(DIFFERENCE_SCALE, -0.5, 0.5, "A − B")
    assert list(trace.x) == [None] and trace.marker.showscale and trace.marker.colorscale is not None
    assert (trace.marker.cmin, trace.marker.cmax) == (-0.5, 0.5) and trace.marker.colorbar.title.text == "A − B"
