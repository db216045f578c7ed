"""Several models on one snippet, as the Compare page and its exports show them (results in, tables and figures out).

* :func:`summary_table`: a row per measure (cross-entropy, perplexity, tokens, then each category's value), a
  column per model: as narrow as the models are few, however many categories there are;
* :func:`difference_span`: the half-width of the diverging scale of a difference, fitted to its largest value
  (rounded up to a tenth, at least :data:`LEAST_SPAN`), so small gaps stay visible;
* :func:`difference_tree`: model A minus model B node by node on the shared tree, on that scale (purple: A more
  confident, orange: B);
* :func:`node_values`: every node's value under each model (the node values export).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

import numpy as np

from asc.explain import SnippetComparison
from asc.viz.colors import DIFFERENCE_SCALE

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["LEAST_SPAN", "difference_span", "difference_tree", "node_values", "summary_table"]

LEAST_SPAN = 0.2  # the narrowest diverging scale: +-0.2, so that noise never fills the whole colour range
MEASURES = ("cross-entropy", "perplexity", "tokens")


def summary_table(comp: SnippetComparison) -> pd.DataFrame:
    """A row per measure (``measure``: cross-entropy, perplexity, tokens, then the categories of the first model's
    explanation), a column per model (:attr:`SnippetComparison.models`); object dtype, so token counts stay whole
    numbers; a category absent from the snippet is NaN."""
    import pandas as pd

    per_model = [{"cross-entropy": ex.loss, "perplexity": ex.perplexity, "tokens": ex.scores.n_tokens,
                  **ex.category_values} for ex in comp.explanations]
    rows = [[measure, *(values.get(measure, math.nan) for values in per_model)] for measure in per_model[0]]
    return pd.DataFrame(rows, columns=["measure", *comp.models], dtype=object)


def difference_span(diff: np.ndarray, least: float = LEAST_SPAN) -> float:
    """The half-width of a symmetric scale for ``diff`` (NaN: no value): its largest absolute value rounded up to a
    tenth, at least ``least``."""
    largest = float(np.nanmax(np.abs(diff), initial=0.0)) if np.isfinite(diff).any() else 0.0
    return max(least, math.ceil(round(largest * 10, 9)) / 10)


def difference_tree(comp: SnippetComparison, a: int, b: int, view: Literal["partial", "complete"] = "partial",
                    max_width: int | None = None) -> go.Figure:
    """Model ``a`` minus model ``b`` on the shared tree (:func:`asc.viz.snippet.tree_figure`, unary chains folded), on
    the model difference scale (:data:`asc.viz.colors.DIFFERENCE_SCALE`: purple where ``a`` is more confident, orange
    where ``b`` is; red to blue stays confidence) that :func:`difference_span` fits, its span in the title."""
    from asc.viz.snippet import tree_figure

    diff = comp.difference(a, b)
    label = f"{comp.models[a]} − {comp.models[b]}"
    span = difference_span(diff)
    return tree_figure(comp.explanations[a], view, collapse_unary=True, values=diff, colorscale=DIFFERENCE_SCALE,
                       cmin=-span,
                       cmax=span, value_label=label, title=f"difference tree: {label} (scale ±{span:g})",
                       max_width=max_width)


def node_values(comp: SnippetComparison) -> pd.DataFrame:
    """One row per node of the shared tree: ``id``, ``type``, then its value under each model (NaN: none)."""
    import pandas as pd

    tree = comp.explanations[0].tree
    return pd.DataFrame({"id": range(tree.n_nodes), "type": tree.type,
                         **{m: comp.values[i] for i, m in enumerate(comp.models)}})
