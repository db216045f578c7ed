"""The tables of a scored chunk of a corpus run: per snippet its rows of ``tokens``, ``nodes``, ``concepts`` and
``snippets`` (the layout is in :mod:`asc.corpus.runs`), and with ``--forks`` the fork columns and the ``forks``
rows (:mod:`asc.corpus.forks`). Both engines build a chunk's tables here: the local one in its process,
:mod:`asc.corpus.engines` in its Ray actors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.align import AlignOptions
from asc.branching.forks import ForkSettings
from asc.complexity import complexity_of_tree
from asc.concepts import GLOBAL, CategoryMap, aggregate_segments, load_categories
from asc.corpus.forks import with_forks
from asc.explain import Explanation, explain_scored

if TYPE_CHECKING:
    import pandas as pd

    from asc.corpus.sources import Snippet

__all__ = ["chunk_tables", "snippet_tables"]


def snippet_tables(snip: Snippet, ex: Explanation, aggregate: str) -> dict[str, pd.DataFrame]:
    """The rows of one explained snippet in each of the four tables (layout: :mod:`asc.corpus.runs`)."""
    import pandas as pd

    s, t = ex.scores, ex.tree
    tok = ex.token_frame().drop(columns=["top"])
    tok.insert(0, "snippet_id", snip.id)
    tok["top_text"] = [list(x) for x in s.top_text]
    tok["top_prob"] = [[float(p) for p in row if not math.isnan(p)] for row in s.top_probs]
    nodes = ex.node_frame()
    nodes.insert(0, "snippet_id", snip.id)
    counts = nodes.groupby("type").size()
    rows = [(snip.id, "type", k, v, int(counts[k])) for k, v in ex.concept_values.items()]
    cat_counts = nodes.dropna(subset=["value"]).groupby("category").size()
    rows += [(snip.id, "category", k, v, int(cat_counts.get(k, 0))) for k, v in ex.category_values.items()
             if not math.isnan(v)]
    categorized = np.array([c is not None for c in ex.node_category])
    glob = aggregate_segments(ex.values[categorized], np.zeros(int(categorized.sum()), dtype=np.int64), 1, aggregate)[0]
    if not math.isnan(glob):
        rows.append((snip.id, "global", GLOBAL, float(glob), int((categorized & ~np.isnan(ex.values)).sum())))
    concepts = pd.DataFrame(rows, columns=["snippet_id", "kind", "name", "value", "n_nodes"])
    snippets = pd.DataFrame([{
        "id": snip.id, "origin": snip.origin, "name": snip.name, "language": snip.language, "line": snip.line,
        "n_tokens": s.n_tokens, "n_nodes": t.n_nodes, "ast_levels": t.n_levels, "has_error": t.has_error,
        "loss": s.loss, "n_windows": s.n_windows, "complexity": complexity_of_tree(t), "source": snip.source,
    }])
    return {"tokens": tok, "nodes": nodes, "concepts": concepts, "snippets": snippets}


def chunk_tables(info: dict, chunk: Sequence[Snippet], scored: Sequence[Any], *, aggregate: str,
                 options: AlignOptions, cmaps: dict[str, CategoryMap] | None = None,
                 forks: ForkSettings | None = None) -> dict[str, pd.DataFrame]:
    """The four tables (pandas DataFrames by name) of one scored chunk; ``info``: :meth:`ModelBundle.summary`.
    With ``forks`` the fork columns and a fifth table, ``forks`` (:func:`asc.corpus.forks.with_forks`)."""
    import pandas as pd

    cmaps = {} if cmaps is None else cmaps
    frames: dict[str, list] = {}
    for snip, sc in zip(chunk, scored, strict=False):
        cmap = cmaps.setdefault(snip.language, load_categories(snip.language))
        ex = explain_scored(info, sc, snip.language, aggregate, options, cmap)
        tables = snippet_tables(snip, ex, aggregate)
        for table, df in (with_forks(tables, ex, forks) if forks else tables).items():
            frames.setdefault(table, []).append(df)
    return {table: pd.concat(dfs, ignore_index=True) for table, dfs in frames.items()}
