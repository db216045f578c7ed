"""glueCode for Python (paper: ../shared/papers/gluecode-benchmark.txt): do code models need more than the
function in front of them? Five tasks from local to global, zero-shot, at three context levels.

- :mod:`probes.gluecode.items`: the task item and its JSONL file format.
"""

from probes.gluecode.items import (
    CONTEXTS,
    MASK,
    NO_WARNING,
    NPATH_BUCKETS,
    OPERATORS,
    TASKS,
    Item,
    load_items,
    save_items,
)

__all__ = ["CONTEXTS", "MASK", "NO_WARNING", "NPATH_BUCKETS", "OPERATORS", "TASKS", "Item", "load_items", "save_items"]
