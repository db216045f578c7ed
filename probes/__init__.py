"""AsC Studio probes: what a model's layers and attention heads encode about code.

- layer probes (INSPECT): :func:`build_task` / :func:`load_tsv` make tasks, :func:`build_tasks` any of
  :data:`LAYER_TASKS` (INSPECT's 15 and glueCode's NPATH and NULL, :mod:`probes.catalog`),
  :func:`extract_features` gives per-layer summary vectors, :func:`train_probes` fits one linear probe per
  layer and :func:`run_layers` does all of it for a run folder (CLI: ``python -m probes layers``);
- attention heads (CodeSyntax): :func:`extract` labels Python code with relation edges,
  :func:`snippet_attention` gives word-level attention, :class:`HeadScorer` and :func:`baseline_scores`
  score heads and baselines, :func:`run_attention` does all of it for a corpus (CLI: ``python -m probes attention``).

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
    "AttentionRun", "HeadScorer", "HeadScores", "baseline_scores", "load_attention_run", "relation_table",
    "run_attention", "snippet_attention", "word_attention", "POOLINGS", "RELATIONS", "LAYER_TASK_INFO", "LAYER_TASKS", "ProbeResult", "Sample", "Task", "best_layer_table",
    "build_task", "build_tasks", "cached_features", "default_pooling", "extract", "extract_features", "extract_many",
    "layer_job", "load_probes", "load_results", "load_tsv", "normalized_table", "read_json", "results_table", "run_layers",
    "save_probes", "train_probes", "write_json",
]
