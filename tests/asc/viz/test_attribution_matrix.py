"""asc.viz.attribution_matrix: a source category with no token in the row's prompts reads ``absent``, in the heatmap,
the shown table and the exports, never a ``0.00`` that would pass for a measured share; the share scale is not the
confidence scale."""

from __future__ import annotations

import numpy as np

from asc.export import csv_text
from asc.missing import json_records
from asc.viz.attribution_matrix import absent_cells, matrix_heatmap, matrix_table
from asc.why.matrix import AttributionMatrix


def _matrix() -> AttributionMatrix:
    share = np.array([[0.5, 0.0, 0.3], [0.2, 0.1, np.nan]])
    zeros = np.zeros((3, 2))
    return AttributionMatrix(model="m", k=3, targets=("Scope", "Iteration"), sources=("Scope", "Exceptions", "Types"),
                             share=share, ci_low=share - 0.05, ci_high=share + 0.05, signed=share / 10,
                             n_targets=np.array([4, 2]), n_snippets=np.array([3, 2]), n_snippets_all=3,
                             distance_bins=("0-2", "3+"), distance=zeros, distance_low=zeros, distance_high=zeros,
                             n_boot=100, seed=0, ci=0.95)


def test_absent_cells_read_absent_in_the_heatmap():
    m = _matrix()
    assert absent_cells(m).tolist() == [[False, True, False], [False, False, False]]
    (heat,) = matrix_heatmap(m).data
    assert heat.text[0][1] == "absent" and np.isnan(heat.z[0][1])  # not colored as a share of 0
    assert heat.text[0][0] == "0.50" and heat.text[1][2] == ""
    assert "0.00" not in np.asarray(heat.text).ravel().tolist()
    assert heat.colorbar.title.text == "share"


def test_absent_cells_are_missing_in_the_table_and_the_exports():
    table = matrix_table(_matrix())
    row = table[(table["target_category"] == "Scope") & (table["source_category"] == "Exceptions")].iloc[0]
    assert np.isnan(row["share"]) and np.isnan(row["signed"]) and row["n_targets"] == 4
    assert "Scope,Exceptions,absent,absent,absent,absent,4,3" in csv_text(table)
    record = json_records(table)[1]
    assert record["share"] is None and record["missing"]["share"] == "absent"
