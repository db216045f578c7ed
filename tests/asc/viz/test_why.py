"""asc.viz.why: the activation patching heatmap, on the tiny model's patching of a rename (some spans unaligned, so
NaN cells), compared with the arrays it draws."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from asc.viz.why import PATCHING_SCALE, patching_heatmap
from asc.why.corrupt import Corruption, Edit, apply_edits
from asc.why.patching import patch

SRC = "def f(xs):\n    n = 0\n    for x in xs:\n        if x > 0:\n            n += 1\n    return n\n"


def _rename(src: str, old: str, new: str) -> Corruption:
    """Every whole word ``old`` to ``new``, built by hand: ``new`` need not be a name (here, code with markup), which
    asc.why.corrupt would refuse."""
    edits = tuple(Edit(m.start(), m.end(), old, new) for m in re.finditer(rf"\b{old}\b", src))
    return Corruption("rename", f"{old} to {new}", src, apply_edits(src, edits), edits)


@pytest.fixture(scope="module")
def patching(tiny):
    return patch(tiny, _rename(SRC, "x", "x_<b>"), spans="after")


def test_heatmap_draws_the_layer_x_node_matrix_on_a_diverging_scale(patching):
    fig = patching_heatmap(patching)
    (heat,) = fig.data
    assert heat.type == "heatmap" and heat.zmid == 0 and heat.zmin == -1 and heat.zmax == 1
    assert heat.colorscale == patching_heatmap(patching).data[0].colorscale
    from plotly.colors import sample_colorscale

    ends = sample_colorscale(PATCHING_SCALE, [0.0, 1.0])
    assert PATCHING_SCALE != "RdBu" and "rgb(103, 0, 31)" not in ends  # red to blue is confidence, not restoration
    assert "made it worse" in heat.colorbar.title.text  # what a negative share means
    z = np.array([[np.nan if v is None else v for v in row] for row in heat.z], dtype=float)
    np.testing.assert_array_equal(np.isnan(z), np.isnan(patching.restored))
    np.testing.assert_allclose(z[~np.isnan(z)], patching.restored[~np.isnan(patching.restored)])
    assert list(heat.y) == patching.layers.tolist() and len(heat.x) == len(patching.node_ids)
    assert all(label.startswith(f"{k}: ") for k, label in enumerate(heat.x))


def test_heatmap_escapes_code_and_fits_a_panel(patching):
    fig = patching_heatmap(patching)
    assert "<b>" not in fig.layout.title.text and "&lt;b&gt;" in fig.layout.title.text
    assert all("<b>" not in cell for row in fig.data[0].text for cell in row)
    assert 360 <= fig.layout.width <= 1100 and 320 <= fig.layout.height <= 720 + 19 * 4
    assert all(len(label) <= 24 for label in fig.data[0].x)
    assert any(math.isnan(v) for v in patching.restored.ravel()) == any(
        v is None for row in fig.data[0].z for v in row)


def test_a_long_title_is_wrapped_inside_a_narrow_heatmap(tiny):
    """Issue 44's screenshot: a one-node heatmap cut its title ("rename 'count_chars' to 'ware_planet' (1 occurren")."""
    import html

    from asc.viz.treefit import text_px

    one = patch(tiny, _rename(SRC, "x", "y"), spans=[1])  # one node: the narrowest heatmap
    fig = patching_heatmap(one)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) > 1
    assert all(text_px(html.unescape(line), fig.layout.title.font.size) <= fig.layout.width - fig.layout.title.x
               * fig.layout.width for line in lines)
    assert fig.layout.margin.t >= len(lines) * fig.layout.title.font.size  # the lines have room above the plot
