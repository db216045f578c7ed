"""asc.viz.corpus: the corpus figures plot exactly the numbers of the summary tables (real SmolLM2 runs)."""

import numpy as np
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
    assert len(bars.data) == 2 and any(s.y0 == 0.6 for s in bars.layout.shapes)
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
