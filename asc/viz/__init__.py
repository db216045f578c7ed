"""AsC-Viz: pure figure builders (results in, plotly figures or HTML strings out; nothing computed).

- :mod:`asc.viz.colors`: one palette per quantity (red-to-blue for confidence only) and the model palette;
- :mod:`asc.viz.layout`: the tree layout (node positions, folding) of a syntax tree;
- :mod:`asc.viz.snippet`: one snippet's tree, sequence view and category bars;
- :mod:`asc.viz.corpus`: corpus-level figures (Table I bars, distributions, treemap, differences);
- :mod:`asc.viz.causal`: AsC-Causal's graph and treatment scatter;
- :mod:`asc.viz.depth`: AsC-Eval per layer: category x layer heatmap, one node's curve across layers;
- :mod:`asc.viz.branches`: the inspector's branch tree and two branches' trees side by side;
- :mod:`asc.viz.html`: offline HTML exports, and :func:`escape_text` for user text in figures;
- :mod:`asc.viz.notebook`: the results' notebook views (their ``_repr_html_`` and figure methods), registered on import;
- :mod:`asc.viz.tables`: the inspector's tables (tokens, nodes, weakest nodes, disagreements) and their exports;
- :mod:`asc.viz.compare`: two models on one snippet; :mod:`asc.viz.forks`: fork rates;
  :mod:`asc.viz.corpus_depth`: corpus runs per layer;
- :mod:`asc.viz.attribution`, :mod:`asc.viz.statements`, :mod:`asc.viz.why`, :mod:`asc.viz.attribution_matrix`:
  attribution on the tree and the sequence, per statement, activation patching, corpus attribution's matrix.
"""

from asc.viz.attribution import (
    attribution_sequence_html,
    attribution_tree,
    category_attribution_figure,
    source_nodes_table,
)
from asc.viz.attribution_matrix import distance_curves, matrix_heatmap, matrix_table
from asc.viz.branches import DIFF_COLORS, branch_compare_figures, branch_tree_figure
from asc.viz.causal import causal_graph_figure, table2_views, treatment_scatter
from asc.viz.colors import COLORSCALE, FORK_RATE_SCALE, MODEL_COLORS, NEUTRAL, NO_VALUE, value_color
from asc.viz.compare import difference_tree, node_values, summary_table
from asc.viz.corpus import category_bars, concept_treemap, difference_bars, styled_table, value_distribution
from asc.viz.corpus_depth import depth_curves, layer_heatmap
from asc.viz.depth import category_layer_heatmap, node_layer_curve
from asc.viz.forks import fork_bars
from asc.viz.html import escape_text, figure_html, standalone_html, visible_whitespace
from asc.viz.layout import TREE_VIEWS, TreeLayout, TreeView, tree_layout, tree_view
from asc.viz.notebook import category_strip
from asc.viz.snippet import category_figure, node_label, sequence_html, tree_figure
from asc.viz.statements import TARGET_RANK, agreement_pairs, agreement_table, breakdown_table
from asc.viz.tables import disagreement_table, node_export, shown, token_export, token_table, weakest_table
from asc.viz.why import patching_heatmap

__all__ = [
    "COLORSCALE", "DIFF_COLORS", "FORK_RATE_SCALE", "MODEL_COLORS", "NEUTRAL", "NO_VALUE", "TARGET_RANK", "TREE_VIEWS",
    "TreeLayout", "TreeView",
    "agreement_pairs", "agreement_table", "attribution_sequence_html", "attribution_tree", "branch_compare_figures",
    "branch_tree_figure", "breakdown_table", "category_attribution_figure", "category_bars", "category_figure",
    "category_layer_heatmap", "category_strip", "causal_graph_figure", "concept_treemap", "depth_curves",
    "difference_bars", "difference_tree", "disagreement_table", "distance_curves", "escape_text", "figure_html",
    "fork_bars", "layer_heatmap", "matrix_heatmap", "matrix_table", "node_export", "node_label", "node_layer_curve",
    "node_values", "patching_heatmap", "sequence_html", "shown", "source_nodes_table", "standalone_html",
    "styled_table", "summary_table", "table2_views", "token_export", "token_table", "treatment_scatter", "tree_figure",
    "tree_layout", "tree_view", "value_color", "value_distribution", "visible_whitespace", "weakest_table",
]
