"""asc.viz.corpus: the corpus figures plot exactly the numbers of the summary tables (real SmolLM2 runs)."""

import numpy as np
import pandas as pd
import pytest

from asc.concepts import load_categories
from asc.corpus.runs import load_digest
from asc.corpus.summary import box_table, difference_table, summary_table, type_table, wide_table
from asc.viz import category_bars, concept_treemap, difference_bars, styled_table, value_distribution

CATS = load_categories("python").categories


@pytest.mark.real
def test_corpus_figures_show_the_tables(runs):
    smol_run, _ = runs
    smol, tiny = (load_digest(r.path) for r in runs)
    summary = summary_table([smol, tiny], CATS, n_boot=100)
    bars = category_bars(summary, 0.6)
    first = summary[summary["model"] == "smollm2-135m"]
    np.testing.assert_allclose(np.array(bars.data[0].y, dtype=float), first["median"].to_numpy(), equal_nan=True)
    models = [t for t in bars.data if not t.name.startswith("below")]  # and the hatching's legend entry
    assert len(models) == 2 and any(s.y0 == 0.6 for s in bars.layout.shapes)
    boxes = box_table([smol, tiny], "Scope")
    dist = value_distribution(boxes, "Scope")
    scope = smol_run.nodes[(smol_run.nodes["category"] == "Scope") & smol_run.nodes["value"].notna()]["value"]
    assert len(dist.data) == 2 and dist.data[0].x[0] == "smollm2-135m"
    assert abs(dist.data[0].median[0] - scope.median()) <= 0.5e-4 + 1e-12
    assert dist.data[0].q1[0] <= dist.data[0].median[0] <= dist.data[0].q3[0]
    tree = concept_treemap(type_table(smol))
    assert tree.data[0].values[0] == type_table(smol)["nodes"].sum()
    diff = difference_table(smol, tiny, "type")
    assert len(difference_bars(diff, "type").data[0].x) == min(30, diff["difference"].notna().sum())
    html = styled_table(wide_table(summary), 0.6).to_html()
    assert "background-color" in html and "absent" in html


def _summary(medians: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"model": m, "corpus": "he", "category": c, "median": v, "ci_low": v - 0.05, "ci_high": v + 0.05,
             "boot_std": 0.02, "n_nodes": 10, "n_snippets": 4}
            for m, values in medians.items() for c, v in zip(["Global", "Scope", "Iteration"], values)]
    return pd.DataFrame(rows)


def test_category_bars_mark_the_bars_below_the_line():
    """A category below the confidence line is hatched with a red outline over its model's color, and the legend says
    so (before, it had the same plain bar as the others); each model's own legend entry stays its plain color."""
    from asc.viz.colors import BELOW_LINE

    bars = category_bars(_summary({"m1": [0.7, 0.4, 0.65], "m2": [0.5, 0.9, 0.61]}), 0.6)
    m1, m2, h1, h2 = bars.data
    assert m1.marker.color != m2.marker.color and m1.marker.pattern.shape is None  # plain model bars
    for model, hatch, below in ((m1, h1, [False, True, False]), (m2, h2, [True, False, False])):
        assert hatch.offsetgroup == model.offsetgroup  # drawn over the model's own bars
        assert [not np.isnan(v) for v in np.asarray(hatch.y, dtype=float)] == below
        assert hatch.marker.pattern.shape == "/" and hatch.marker.line.color == BELOW_LINE
    assert h1.name == "below 0.6 (hatched)" and h1.showlegend and not h2.showlegend  # one legend entry
    assert len(category_bars(_summary({"m1": [0.7, 0.8, 0.9]}), 0.6).data) == 1  # nothing below: no hatching


def test_difference_bars_use_the_difference_scale_with_a_color_bar():
    import plotly.graph_objects as go

    from asc.viz.colors import DIFFERENCE_SCALE

    diff = pd.DataFrame({"model_a": ["a"] * 3, "model_b": ["b"] * 3, "category": ["Global", "Scope", "Iteration"],
                         "difference": [0.1, -0.2, np.nan]})
    (bar,) = difference_bars(diff).data
    assert bar.marker.colorscale == go.Bar(marker={"colorscale": DIFFERENCE_SCALE}).marker.colorscale
    assert bar.marker.showscale and bar.marker.colorbar.title.text == "a − b"
    assert "purple: a more confident" in difference_bars(diff).layout.title.text
