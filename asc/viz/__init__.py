"""AsC-Viz: pure figure builders (results in, plotly figures or HTML strings out; nothing computed).

- :mod:`asc.viz.colors`: one palette per quantity (red-to-blue for confidence only) and the model palette;
- :mod:`asc.viz.layout`: the tree layout (node positions, folding) of a syntax tree;
- :mod:`asc.viz.snippet`: one snippet's tree, sequence view and category bars;
- :mod:`asc.viz.corpus`: corpus-level figures (Table I bars, distributions, treemap, differences);
- :mod:`asc.viz.causal`: AsC-Causal's graph and treatment scatter;
- :mod:`asc.viz.depth`: AsC-Eval per layer: category x layer heatmap, one node's curve across layers;
- :mod:`asc.viz.branches`: the inspector's branch tree and two branches' trees side by side;
- :mod:`asc.viz.html`: offline HTML exports, and :func:`escape_text` for user text in figures;
- :mod:`asc.viz.notebook`: the results' notebook views (their ``_repr_html_`` and figure methods), registered on import.
"""

from asc.viz.branches import DIFF_COLORS, branch_compare_figures, branch_tree_figure
from asc.viz.causal import causal_graph_figure, treatment_scatter
from asc.viz.colors import COLORSCALE, MODEL_COLORS, NO_VALUE, value_color
from asc.viz.corpus import category_bars, concept_treemap, difference_bars, styled_table, value_distribution
from asc.viz.depth import category_layer_heatmap, node_layer_curve
from asc.viz.html import escape_text, figure_html, standalone_html
from asc.viz.layout import TREE_VIEWS, TreeLayout, tree_layout
from asc.viz.notebook import category_strip
from asc.viz.snippet import category_figure, node_label, sequence_html, tree_figure

__all__ = [
    "COLORSCALE", "DIFF_COLORS", "MODEL_COLORS", "NO_VALUE", "TREE_VIEWS", "TreeLayout", "branch_compare_figures",
    "branch_tree_figure", "category_bars", "category_figure",
    "category_layer_heatmap", "category_strip", "causal_graph_figure", "concept_treemap", "difference_bars", "escape_text", "figure_html",
    "node_label", "node_layer_curve", "sequence_html", "standalone_html", "styled_table", "treatment_scatter",
    "tree_figure", "tree_layout", "value_color", "value_distribution",
]
