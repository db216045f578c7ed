"""Cached models and results, shared by every session of the app process, one module per concern.

* :mod:`ui.cache.models`: the two one-model slots (the inspected model, the jobs' model) and the explanations,
  per-layer explanations and completions computed from the inspected model;
* :mod:`ui.cache.runs`: corpus runs (tables, digests, Table I, AsC-Causal, per-layer medians, fork rates);
* :mod:`ui.cache.inspect_probes`, :mod:`ui.cache.gluecode`, :mod:`ui.cache.blanca`: one module per probe family;
* :mod:`ui.cache.branches`: the inspector's branches and HumanEval's tests;
* :mod:`ui.cache.stamp`: the one "has this changed on disk?" stamp every file-backed cache is keyed by.

This package re-exports their public names so ``from ui import cache; cache.get_bundle(...)`` keeps working;
new code may import the module of its concern.
"""

from __future__ import annotations

from ui.cache.blanca import blanca_finetuned, blanca_scores, blanca_summary, blanca_task_sets
from ui.cache.branches import cached_branch, cached_explore, cached_tests
from ui.cache.gluecode import gluecode_accuracy, gluecode_items, gluecode_predictions
from ui.cache.inspect_probes import attention_run, probe_results, snippet_attention
from ui.cache.models import (
    ModelSlot,
    bundle_for,
    cached_complete,
    cached_explain,
    cached_explain_layers,
    get_bundle,
    get_job_bundle,
)
from ui.cache.runs import (
    CAUSAL_KEEP,
    cached_digest,
    cached_run,
    cached_summary,
    causal_result,
    fork_table,
    layer_summary,
)
from ui.cache.stamp import change_stamp, run_stamp

__all__ = [
    "CAUSAL_KEEP", "ModelSlot", "attention_run", "blanca_finetuned", "blanca_scores", "blanca_summary",
    "blanca_task_sets", "bundle_for", "cached_branch", "cached_complete", "cached_digest", "cached_explain",
    "cached_explain_layers", "cached_explore", "cached_run", "cached_summary", "cached_tests", "causal_result",
    "change_stamp", "fork_table", "get_bundle", "get_job_bundle", "gluecode_accuracy", "gluecode_items", "gluecode_predictions",
    "layer_summary", "probe_results", "run_stamp", "snippet_attention",
]
