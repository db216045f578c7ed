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

This is also the facade of asc's single modules (:mod:`asc.paths`, :mod:`asc.jobs`, :mod:`asc.errors`,
:mod:`asc.access`, ...): the app (``ui/``, ``pages/``, ``app.py``) imports their names from here, as it imports the
packages' names from their own facades (``asc.why``, ``asc.corpus``, ``asc.branching``, ``asc.viz``, ``asc.study``).
:func:`csv_text` (:mod:`asc.export`, which needs pandas) is imported on first use.
"""

from typing import TYPE_CHECKING, Any

from asc.access import (
    AccessPolicy,
    RateLimiter,
    access_cookie_header,
    access_cookie_matches,
    access_cookie_name,
    access_cookie_value,
    is_loopback,
    password_matches,
)
from asc.align import Alignment, AlignOptions, align
from asc.atomic import private_writes, write_atomic
from asc.causal import MIN_SNIPPETS, REFUTE_SAMPLE, CausalResult, run_causal
from asc.concepts import (
    AGGREGATES,
    CONFIDENCE_LINE,
    GLOBAL,
    CategoryMap,
    aggregate_segments,
    bootstrap_median,
    category_label,
    load_categories,
)
from asc.corpus.runs import RunData, load_run, run_corpus
from asc.corpus.sources import BUILTIN_CORPORA, Snippet, extract_functions, load_corpus
from asc.corpus.summary import category_table, compare
from asc.depth import LayerExplanation, explain_completion_layers, explain_layers, top_vocab
from asc.device import DTYPES
from asc.errors import (
    AscError,
    CorpusError,
    InputError,
    MissingExtraError,
    ModelLoadError,
    TooDeepError,
    UnknownModelError,
    UnsupportedArchitectureError,
)
from asc.explain import (
    Explanation,
    SnippetComparison,
    check_source,
    compare_snippet,
    explain,
    explain_many,
    explain_scored,
)
from asc.extras import require
from asc.files import shown
from asc.generate import FEW_TOKENS, Completion, Decoding, complete, explain_completion, first_lines, stop_message
from asc.jobs import Job, JobKind, JobQueue
from asc.missing import ABSENT, UNDEFINED, json_records
from asc.models import DEFAULT_MODEL, EMBEDDED, ModelBundle, embedded_names, load_model, wrap
from asc.paths import (
    APP_INSTALLED,
    APP_ROOT,
    EXAMPLES_DIR,
    app_defaults,
    app_password,
    attention_dir,
    blanca_dir,
    child_environment,
    default_model,
    gluecode_dir,
    layers_dir,
    runs_dir,
    study_db_url,
    study_dir,
    study_file,
    study_mode,
    study_password,
)
from asc.scores import TokenScores, score_ids, score_text, score_texts
from asc.syntax import LANGUAGES, SyntaxTree, parse
from asc.viz import category_figure, figure_html, sequence_html, tree_figure
from asc.viz.layout import TreeLayout, tree_layout

if TYPE_CHECKING:  # imported on first use (module __getattr__ below): their modules import pandas
    from asc.export import csv_text

__all__ = [
    "ABSENT", "AGGREGATES", "APP_INSTALLED", "APP_ROOT", "BUILTIN_CORPORA", "CONFIDENCE_LINE", "DEFAULT_MODEL",
    "DTYPES", "EMBEDDED", "EXAMPLES_DIR", "FEW_TOKENS", "GLOBAL", "LANGUAGES", "MIN_SNIPPETS", "REFUTE_SAMPLE",
    "UNDEFINED",
    "AccessPolicy", "AlignOptions", "Alignment", "AscError", "CategoryMap", "CausalResult", "Completion", "CorpusError",
    "Decoding", "Explanation", "InputError", "Job", "JobKind", "JobQueue", "LayerExplanation", "MissingExtraError",
    "ModelBundle", "ModelLoadError", "RateLimiter", "RunData", "Snippet", "SnippetComparison", "SyntaxTree",
    "TokenScores", "TooDeepError", "TreeLayout", "UnknownModelError", "UnsupportedArchitectureError",
    "access_cookie_header", "access_cookie_matches", "access_cookie_name", "access_cookie_value",
    "aggregate_segments", "align", "app_defaults", "app_password", "attention_dir", "blanca_dir", "bootstrap_median",
    "category_figure", "category_label", "category_table", "check_source", "child_environment", "compare",
    "compare_snippet", "complete", "csv_text", "default_model", "embedded_names", "explain", "explain_completion",
    "explain_completion_layers", "explain_layers", "explain_many", "explain_scored", "extract_functions",
    "figure_html", "first_lines", "gluecode_dir", "is_loopback", "json_records", "layers_dir", "load_categories",
    "load_corpus", "load_model", "load_run", "parse", "password_matches", "private_writes", "require", "run_causal",
    "run_corpus", "runs_dir", "score_ids", "score_text", "score_texts", "sequence_html", "shown", "stop_message",
    "study_db_url", "study_dir", "study_file", "study_mode", "study_password", "top_vocab", "tree_figure",
    "tree_layout", "wrap", "write_atomic",
]

#: names imported on first use, and their modules (those import pandas, which ``import asc`` must not)
_LAZY = {"csv_text": "asc.export"}


def __getattr__(name: str) -> Any:
    """A name of :data:`_LAZY`, imported from its module on first use (PEP 562); any other name is missing."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
