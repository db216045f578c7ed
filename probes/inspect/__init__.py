"""INSPECT for Python (Karmakar & Robbes, "What do pre-trained code models know about code?"): linear probes on
every layer's hidden states, one per task, to read off where a model encodes each property of code.

- :mod:`probes.inspect.tasks`: the 15 INSPECT tasks for Python (label definitions, balanced seeded sampling).
- :mod:`probes.inspect.taskfile`: :class:`Task` and INSPECT's TSV format (read raw or escaped, write escaped).
- :mod:`probes.inspect.labels`: label and mutation functions of one function (tokens, metrics, NPath, mutations).
- :mod:`probes.inspect.linear`: per-layer logistic probes, dev-chosen L2, majority and control baselines.
- :mod:`probes.inspect.runs`: resumable probe runs over tasks x models, result tables, Table III.
"""

from probes.inspect.linear import L2_GRID, ProbeResult, load_probes, save_probes, train_probes
from probes.inspect.runs import (
    best_layer_table,
    load_results,
    normalized_table,
    result_path,
    results_table,
    run_layers,
)
from probes.inspect.taskfile import (
    MAX_TASK_FILE_BYTES,
    TASK_SPLITS,
    TSV_HEADER,
    Task,
    load_tsv,
    parse_tsv,
    store_upload,
    task_name,
)
from probes.inspect.tasks import TASK_INFO, TASK_NAMES, build_task

__all__ = ["L2_GRID", "MAX_TASK_FILE_BYTES", "TASK_INFO", "TASK_NAMES", "TASK_SPLITS", "TSV_HEADER", "ProbeResult",
           "Task", "best_layer_table", "build_task", "load_probes", "load_results", "load_tsv", "normalized_table",
           "parse_tsv", "result_path", "results_table", "run_layers", "save_probes", "store_upload", "task_name",
           "train_probes"]
