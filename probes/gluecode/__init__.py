"""glueCode for Python (the glueCode benchmark paper, ICLR 2021 submission): do code models need more than the
function in front of them? Five tasks from local to global, zero-shot, at three context levels.

- :mod:`probes.gluecode.items`: the task item and its JSONL file format.
- :mod:`probes.gluecode.build`: balanced, seeded NPATH, OPS, NAME and CALL task sets from a corpus, split by package.
- :mod:`probes.gluecode.splits`: the finer split of a one-package corpus, by file or top-level definition.
- :mod:`probes.gluecode.masks`: operator and call sites (with api/local kinds) of a function, NAME targets.
- :mod:`probes.gluecode.context`: the function, file and call-graph contexts, and masking across them.
- :mod:`probes.gluecode.callgraph`: the corpus's files parsed once, the static name-based call graph.
- :mod:`probes.gluecode.nullcheck` / :mod:`probes.gluecode.nulltoken`: NullToken labels from mypy, and the items.
- :mod:`probes.gluecode.likelihood` / :mod:`probes.gluecode.zeroshot`: answering items zero-shot, the tables.
- :mod:`probes.gluecode.runs`: resumable runs and the Table 2 layout.
- :mod:`probes.gluecode.bleu`: character-level BLEU with Chen & Cherry smoothing 1 (the NAME metric).
- :mod:`probes.gluecode.browse` / :mod:`probes.gluecode.figures`: the app's views of a run: answers, mistakes,
  confusion, candidates, and their figures.
"""

from probes.gluecode.browse import (
    CONFUSION_TASKS,
    SHOWN,
    Answered,
    answered,
    candidate_table,
    confusion,
    context_frame,
    item_answers,
    levels_answered,
    mistakes,
    scored_answers,
)
from probes.gluecode.figures import CONTEXT_LABELS, candidates_figure, confusion_figure, context_figure
from probes.gluecode.items import (
    CONTEXTS,
    MASK,
    NO_WARNING,
    NPATH_BUCKETS,
    OPERATORS,
    TASK_SUMMARY,
    TASKS,
    Item,
    load_items,
    save_items,
)
from probes.gluecode.runs import PAPER_TABLE2, gluecode_job, load_predictions, load_task_sets, run_gluecode, table2
from probes.gluecode.zeroshot import Prediction, accuracy_table, baselines, predictions_frame

__all__ = [
    "CONFUSION_TASKS", "CONTEXTS", "CONTEXT_LABELS", "MASK", "NO_WARNING", "NPATH_BUCKETS", "OPERATORS", "PAPER_TABLE2",
    "SHOWN", "TASKS", "TASK_SUMMARY",
    "Answered", "Item", "Prediction",
    "accuracy_table", "answered", "baselines", "candidate_table", "candidates_figure", "confusion", "confusion_figure",
    "context_figure", "context_frame", "gluecode_job", "item_answers", "levels_answered", "load_items",
    "load_predictions", "load_task_sets", "mistakes", "predictions_frame", "run_gluecode", "save_items",
    "scored_answers", "table2",
]
