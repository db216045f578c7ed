"""AsC Studio probes: what a model's layers and attention heads encode about code.

- layer probes (INSPECT): :func:`build_task` / :func:`load_tsv` make tasks, :func:`build_tasks` any of
  :data:`LAYER_TASKS` (INSPECT's 15 and glueCode's NPATH and NULL, :mod:`probes.catalog`),
  :func:`extract_features` gives per-layer summary vectors, :func:`train_probes` fits one linear probe per
  layer and :func:`run_layers` does all of it for a run folder (CLI: ``python -m probes inspect``);
- attention heads (CodeSyntax): :func:`extract` labels Python code with relation edges,
  :func:`snippet_attention` gives word-level attention, :class:`HeadScorer` and :func:`baseline_scores`
  score heads and baselines, :func:`run_attention` does all of it for a corpus (CLI: ``python -m probes attention``);
- their figures (:mod:`probes.figures`): layer heatmaps and curves, best layers, attention maps, head heatmaps.

Each probe family has its own facade (``probes.inspect``, ``probes.codesyntax``, ``probes.gluecode``,
``probes.blanca``); the app imports from these and from here only.

Importable without Streamlit; models come in as :class:`asc.ModelBundle` objects.
"""

from probes.catalog import LAYER_TASK_INFO, LAYER_TASKS, build_tasks, layer_job
from probes.codesyntax.attention import (
    AttentionRun,
    load_attention_run,
    relation_table,
    run_attention,
    snippet_attention,
)
from probes.codesyntax.heads import HeadScorer, HeadScores, baseline_scores, word_attention
from probes.codesyntax.relations import extract, extract_many
from probes.codesyntax.samples import RELATIONS, Sample, read_json, write_json
from probes.features import POOLINGS, cached_features, default_pooling, extract_features
from probes.figures import (
    attention_map,
    best_layer_heatmap,
    confusion_figure,
    edge_example_html,
    head_heatmap,
    layer_curves,
    layer_heatmap,
    normalized_heatmap,
)
from probes.inspect.linear import ProbeResult, load_probes, save_probes, train_probes
from probes.inspect.runs import (
    best_layer_table,
    load_results,
    normalized_table,
    results_table,
    run_layers,
)
from probes.inspect.tasks import Task, build_task, load_tsv

__all__ = [
    "LAYER_TASKS", "LAYER_TASK_INFO", "POOLINGS", "RELATIONS",
    "AttentionRun", "HeadScorer", "HeadScores", "ProbeResult", "Sample", "Task",
    "attention_map", "baseline_scores", "best_layer_heatmap", "best_layer_table", "build_task", "build_tasks",
    "cached_features", "confusion_figure", "default_pooling", "edge_example_html", "extract", "extract_features",
    "extract_many", "head_heatmap", "layer_curves", "layer_heatmap", "layer_job", "load_attention_run", "load_probes",
    "load_results", "load_tsv", "normalized_heatmap", "normalized_table", "read_json", "relation_table",
    "results_table", "run_attention", "run_layers", "save_probes", "snippet_attention", "train_probes",
    "word_attention", "write_json",
]
