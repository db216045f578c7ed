"""The tables of a scored chunk of a corpus run: per snippet its rows of ``tokens``, ``nodes``, ``concepts`` and
``snippets`` (the layout is in :mod:`asc.corpus.runs`), and with ``--forks`` the fork columns and the ``forks``
rows (:mod:`asc.corpus.forks`). Both engines build a chunk's tables here: the local one in its process (or its
worker processes, :mod:`asc.corpus.feed`), :mod:`asc.corpus.engines` in its Ray actors.

:func:`prepared_tables` builds a chunk's tables at once from its prepared snippets (:mod:`asc.batch`): one
aggregation per level for the whole chunk, every column made for the chunk in one go and one DataFrame per
table. :func:`chunk_tables_reference` is the function-by-function path it replaced (an :class:`Explanation`,
then pandas frames, per snippet), kept as the reference the equality test compares with and for ``--forks``
runs; :func:`chunk_tables` takes scores alone and prepares the snippets itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.align import AlignOptions, align
from asc.batch import BatchValues, Prepared, explain_prepared
from asc.branching.forks import ForkSettings
from asc.complexity import complexity_of_tree
from asc.concepts import GLOBAL, CategoryMap, aggregate_segments, load_categories
from asc.corpus.forks import with_forks
from asc.explain import Explanation, explain_scored
from asc.scores import TokenScores
from asc.syntax import parse

if TYPE_CHECKING:
    import pandas as pd

    from asc.corpus.sources import Snippet

__all__ = ["ONE_THREAD", "chunk_tables", "chunk_tables_reference", "parquet_bytes", "prepared_parts",
           "prepared_tables", "snippet_tables"]

#: pyarrow converts a DataFrame of more than 100 rows per column in a thread pool by default; a corpus run converts
#: its chunks in the job's thread instead. When the server stops (Ctrl-C), Python refuses new pool work before the
#: app's exit hook lets the running chunk end, and a pooled conversion then failed the run with "cannot schedule new
#: futures after interpreter shutdown" (tests/e2e/test_stop.py saw it on a slowed machine). The columns are few and
#: a chunk small: one thread costs nothing measurable.
ONE_THREAD = 1


def parquet_bytes(df: Any) -> bytes:
    """A DataFrame as the bytes of the Parquet file :func:`write_chunk` would write (to ship it between processes):
    the bytes pandas writes with ``index=False``, converted in the calling thread (:data:`ONE_THREAD`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False, nthreads=ONE_THREAD), sink, compression="snappy")
    return bytes(sink.getvalue().to_pybytes())


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


def chunk_tables_reference(info: dict, chunk: Sequence[Snippet], scored: Sequence[Any], *, aggregate: str,
                           options: AlignOptions, cmaps: dict[str, CategoryMap] | None = None,
                           forks: ForkSettings | None = None) -> dict[str, pd.DataFrame]:
    """The four tables (pandas DataFrames by name) of one scored chunk, snippet by snippet; ``info``:
    :meth:`ModelBundle.summary`. With ``forks`` the fork columns and a fifth table, ``forks``
    (:func:`asc.corpus.forks.with_forks`)."""
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


def chunk_tables(info: dict, chunk: Sequence[Snippet], scored: Sequence[Any], *, aggregate: str,
                 options: AlignOptions, cmaps: dict[str, CategoryMap] | None = None,
                 forks: ForkSettings | None = None) -> dict[str, pd.DataFrame]:
    """:func:`chunk_tables_reference`'s tables from the chunk's scores (``scored``: :class:`TokenScores`), built
    by :func:`prepared_tables` (``forks``: by the reference path)."""
    if forks:
        return chunk_tables_reference(info, chunk, scored, aggregate=aggregate, options=options, cmaps=cmaps,
                                      forks=forks)
    prepared = [_prepared_of(s, sc, options) for s, sc in zip(chunk, scored, strict=False)]
    return prepared_tables(info, chunk[: len(prepared)], prepared, list(scored)[: len(prepared)], aggregate=aggregate,
                           cmaps=cmaps)


def _prepared_of(snip: Snippet, scores: Any, options: AlignOptions) -> Prepared:
    tree = parse(scores.source, snip.language)
    return Prepared(scores.source, snip.language, scores.ids, scores.start, scores.end, scores.special, tree,
                    align(tree, scores.start, scores.end, scores.special, options))


def prepared_parts(info: dict, chunk: Sequence[Snippet], prepared: Sequence[Prepared], scored: Sequence[TokenScores],
                   texts: np.ndarray, *, aggregate: str, cmaps: dict[str, CategoryMap] | None = None) -> dict[str, bytes]:
    """:func:`prepared_tables` as the Parquet bytes of each table (what :func:`asc.corpus.runs.write_chunk` takes),
    the same bytes ``DataFrame.to_parquet`` writes. The tokens' list columns (``top_text``, ``top_prob``) go
    straight from the arrays of the top-k ids and probabilities into Arrow lists (``texts``: the vocabulary's,
    :func:`asc.scores.vocab_array`), instead of through a Python list per token."""

    frames = prepared_tables(info, chunk, prepared, scored, aggregate=aggregate, cmaps=cmaps, lists=False)
    return {t: _tokens_bytes(df, scored, texts) if t == "tokens" else parquet_bytes(df) for t, df in frames.items()}


def _tokens_bytes(frame: pd.DataFrame, scored: Sequence[TokenScores], texts: np.ndarray) -> bytes:
    """The tokens table's Parquet bytes from its frame without the list columns, and the chunk's top-k arrays. The
    schema (types and pandas metadata) is pandas' own, taken from one row converted the usual way."""
    import pyarrow as pa
    import pyarrow.parquet as pq


    top_ids = np.concatenate([s.top_ids for s in scored])
    probs = np.concatenate([s.top_probs for s in scored])
    has_id, has_p = top_ids >= 0, ~np.isnan(probs)
    full = np.flatnonzero(has_id.any(1) & has_p.any(1))
    if not len(full):  # no token with alternatives: pandas infers the list columns' types from none
        return parquet_bytes(frame.assign(
            top_text=[[str(texts[i]) for i in r[r >= 0]] for r in top_ids],
            top_prob=[[float(p) for p in r[~np.isnan(r)]] for r in probs]))
    row = int(full[0])
    sample = frame.iloc[row : row + 1].assign(top_text=[texts[top_ids[row][has_id[row]]].tolist()],
                                              top_prob=[probs[row][has_p[row]].tolist()])
    schema = pa.Table.from_pandas(sample, preserve_index=False, nthreads=ONE_THREAD).schema
    body = pa.Table.from_pandas(frame, preserve_index=False, nthreads=ONE_THREAD)

    def lists(flat: np.ndarray, has: np.ndarray, name: str) -> pa.Array:
        offsets = np.concatenate([[0], np.cumsum(has.sum(1))]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=schema.field(name).type.value_type))

    table = pa.Table.from_arrays([*body.columns, lists(texts[top_ids[has_id]], has_id, "top_text"),
                                  lists(probs[has_p], has_p, "top_prob")], schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy")
    return bytes(sink.getvalue().to_pybytes())


def prepared_tables(info: dict, chunk: Sequence[Snippet], prepared: Sequence[Prepared], scored: Sequence[TokenScores],
                    *, aggregate: str, cmaps: dict[str, CategoryMap] | None = None,
                    lists: bool = True) -> dict[str, pd.DataFrame]:
    """The four tables of one chunk, equal to :func:`chunk_tables_reference`'s, built for the whole chunk at once
    from its prepared snippets and their scores (``lists`` False: the tokens without ``top_text`` and ``top_prob``,
    which :func:`prepared_parts` adds as Arrow lists)."""
    import pandas as pd

    cmaps = {} if cmaps is None else cmaps
    explanations, got = explain_prepared(info, prepared, scored, aggregate, cmaps)
    ids = [s.id for s in chunk]
    n_tok = [s.n_tokens for s in scored]
    cat = lambda name: np.concatenate([getattr(s, name) for s in scored])  # noqa: E731
    tokens = pd.DataFrame({
        "snippet_id": np.repeat(np.array(ids, dtype=object), n_tok),
        "index": np.concatenate([np.arange(n) for n in n_tok]), "text": [t for s in scored for t in s.text],
        "start": cat("start"), "end": cat("end"), "special": cat("special"), "prob": cat("prob"),
        "logprob": cat("logprob"), "entropy": cat("entropy"), "rank": cat("rank")})
    if lists:
        top_probs = cat("top_probs")
        top_prob = top_probs.tolist()
        for i in np.flatnonzero(np.isnan(top_probs).any(1)).tolist():
            top_prob[i] = [p for p in top_prob[i] if not math.isnan(p)]
        tokens = tokens.assign(top_text=[list(x) for s in scored for x in s.top_text], top_prob=top_prob)
    trees = [p.tree for p in prepared]
    node_of = lambda name: np.concatenate([getattr(t, name) for t in trees])  # noqa: E731
    n_nodes = [t.n_nodes for t in trees]
    nodes = pd.DataFrame({
        "snippet_id": np.repeat(np.array(ids, dtype=object), n_nodes),
        "id": np.concatenate([np.arange(n) for n in n_nodes]), "type": [t for tr in trees for t in tr.type],
        "named": node_of("named"), "start": node_of("start"), "end": node_of("end"), "parent": node_of("parent"),
        "depth": node_of("depth"), "category": [c for ex in explanations for c in ex.node_category],
        "is_error": node_of("is_error"), "is_missing": node_of("is_missing"),
        "n_tokens": np.concatenate([p.alignment.counts() for p in prepared]), "value": got.values})
    return {"tokens": tokens, "nodes": nodes, "concepts": _concepts(ids, explanations, got),
            "snippets": pd.DataFrame([{
                "id": snip.id, "origin": snip.origin, "name": snip.name, "language": snip.language, "line": snip.line,
                "n_tokens": s.n_tokens, "n_nodes": t.n_nodes, "ast_levels": t.n_levels, "has_error": t.has_error,
                "loss": s.loss, "n_windows": s.n_windows, "complexity": complexity_of_tree(t), "source": snip.source,
            } for snip, s, t in zip(chunk, scored, trees, strict=True)])}


def _concepts(ids: list[str], explanations: Sequence[Explanation], got: BatchValues) -> pd.DataFrame:
    """The concepts rows of a chunk: per snippet its types (with their node counts), its categories with a value
    (with their counts of valued nodes) and the global value, in :func:`snippet_tables`' order."""
    import pandas as pd

    n_f, n_types = len(ids), len(got.type_names)
    type_counts = np.bincount(got.snippet * n_types + got.type_of, minlength=n_f * n_types).reshape(n_f, n_types)
    valued = ~np.isnan(got.values) & (got.category >= 0)
    n_cats = got.per_category.shape[1]
    cat_counts = np.bincount((got.snippet * n_cats + got.category)[valued], minlength=n_f * n_cats).reshape(n_f, n_cats)
    glob_counts = np.bincount(got.snippet[valued], minlength=n_f)
    index = {name: k for k, name in enumerate(got.type_names)}
    rows: list[tuple] = []
    for sid, ex, types, cats, glob, n_glob in zip(ids, explanations, type_counts.tolist(), cat_counts.tolist(),
                                                  got.per_global.tolist(), glob_counts.tolist(), strict=True):
        rows += [(sid, "type", k, v, types[index[k]]) for k, v in ex.concept_values.items()]
        rows += [(sid, "category", k, v, cats[j]) for j, (k, v) in enumerate(ex.category_values.items())
                 if not math.isnan(v)]
        if not math.isnan(glob):
            rows.append((sid, "global", GLOBAL, glob, n_glob))
    return pd.DataFrame(rows, columns=["snippet_id", "kind", "name", "value", "n_nodes"])
