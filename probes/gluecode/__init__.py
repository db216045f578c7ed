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
