"""AsC Studio backend: AsC-Eval (next-token scores aligned to the tree-sitter AST), importable without Streamlit.

    >>> from asc import load_model, explain
    >>> bundle = load_model("smollm2-135m")
    >>> ex = explain(bundle, "def f(x):\\n    return x + 1\\n")
    >>> ex.category_values["Scope"], ex.loss
    >>> ex  # in a notebook: the colored sequence view and the category strip; ex.partial_tree() draws its AST

``wrap(model, tokenizer)`` takes a ``transformers`` causal LM already in memory instead of a name;
``compare(runs)`` is Table I of corpus runs (``run_corpus``'s folders); results draw the app's figures
(``.partial_tree()``, ``.complete_tree()``, ``.category_chart()``, and ``explain_layers(...).layers_heatmap()``).

Importing ``asc`` loads no model and no heavy library; torch and transformers are imported when a
model is loaded.
"""

from asc.align import Alignment, AlignOptions, align
from asc.concepts import AGGREGATES, CategoryMap, aggregate_segments, bootstrap_median, load_categories
from asc.corpus.runs import RunData, load_run, run_corpus
from asc.corpus.sources import BUILTIN_CORPORA, Snippet, extract_functions, load_corpus
from asc.corpus.summary import category_table, compare
from asc.depth import LayerExplanation, explain_layers
from asc.errors import AscError, CorpusError, InputError, ModelLoadError, UnknownModelError
from asc.explain import Explanation, explain, explain_many, explain_scored
from asc.generate import Completion, complete, explain_completion
from asc.models import DEFAULT_MODEL, EMBEDDED, ModelBundle, embedded_names, load_model, wrap
from asc.scores import TokenScores, score_ids, score_text, score_texts
from asc.syntax import LANGUAGES, SyntaxTree, parse
from asc.viz import category_figure, figure_html, sequence_html, tree_figure
from asc.viz.layout import TreeLayout, tree_layout

__all__ = [
    "AGGREGATES", "BUILTIN_CORPORA", "DEFAULT_MODEL", "EMBEDDED", "LANGUAGES",
    "AlignOptions", "Alignment", "AscError", "CategoryMap", "Completion", "CorpusError", "Explanation", "InputError",
    "LayerExplanation",
    "ModelBundle", "ModelLoadError", "RunData", "Snippet", "SyntaxTree", "TokenScores", "TreeLayout",
    "UnknownModelError", "aggregate_segments", "align", "bootstrap_median", "category_figure", "category_table",
    "compare", "complete", "explain", "explain_completion", "explain_layers", "explain_many", "explain_scored",
    "extract_functions",
    "embedded_names", "figure_html", "load_categories", "load_corpus", "load_model", "load_run", "parse", "run_corpus", "score_ids",
    "score_text", "score_texts", "sequence_html", "tree_figure", "tree_layout", "wrap",
]
