"""Per-part digests of a corpus run: the node values every corpus summary reads, kept next to the parts.

A run folder (:mod:`asc.corpus.runs`) writes, with each part ``part-NNNNN`` of its tables, a digest
``digest/part-NNNNN.parquet`` (atomically, before the ``snippets`` part that marks the chunk done): one row
per *categorized node with a value* (the only nodes Table I, the node-type table, the distributions and the
differences use), seven narrow columns:

``snippet``          int32, the snippet's position in the part's ``snippets`` table (0 .. n-1)
``category``/``type`` dictionary-encoded strings
``value``            float64, the node value exactly as in ``nodes/``
``first_snippet``    bool, the snippet's first row (counts the snippets behind the Global value)
``first_category``   bool, the first row of its (snippet, category) (snippets behind a category)
``first_type``       bool, the first row of its (snippet, type) (snippets behind a node type)

and the part's snippet count in the Parquet schema metadata (``n_snippets``). A HumanEval-sized part of 1,000
snippets digests to about 80,000 rows and 0.3 MB.

:func:`read_digest` reads the digests of a run's finished parts with pyarrow (no pandas frames; dictionary
columns become small integer codes) into one :class:`RunDigest` of numpy arrays with run-wide snippet
positions. Given the digest it read before, it reads only the parts added since (a growing run costs its new
parts, not the whole folder again). A part without a digest (runs written before digests existed, or by
other tools) is digested from its ``nodes`` part in memory, the same computation; nothing is written by a
reader.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from asc.concepts import language_of
from asc.corpus.folder import RunMeta
from asc.corpus.tables import ONE_THREAD
from asc.errors import CorpusError

__all__ = ["DIGEST", "RunDigest", "digest_bytes", "digest_table", "read_digest"]

DIGEST = "digest"  # the folder of a run that holds the digests
_META_KEY = b"asc.digest"
_READERS = min(4, os.cpu_count() or 1)  # threads reading parts
_COLUMNS = ("snippet", "category", "type", "value", "first_snippet", "first_category", "first_type")


def digest_table(nodes: Any, snippet_ids: Sequence[str], languages: Sequence[str] = ()) -> Any:
    """The digest (a pyarrow Table) of one part from its ``nodes`` table (pandas or pyarrow), the ids of its
    ``snippets`` table in order and their languages. Nodes of a snippet not in ``snippet_ids`` are a
    :class:`CorpusError`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = nodes if isinstance(nodes, pa.Table) else pa.Table.from_pandas(nodes, preserve_index=False, nthreads=ONE_THREAD)
    table = table.select(["snippet_id", "category", "type", "value"])
    keep = pc.and_(pc.is_valid(table["category"]), pc.invert(pc.is_nan(pc.fill_null(table["value"], float("nan")))))
    table = table.filter(keep)
    position = {sid: k for k, sid in enumerate(snippet_ids)}
    sids = table["snippet_id"].to_pylist()
    try:
        snippet = np.fromiter((position[s] for s in sids), dtype=np.int32, count=len(sids))
    except KeyError as err:
        raise CorpusError(f"nodes of snippet {err.args[0]!r} have no row in the snippets table") from None
    category = table["category"].combine_chunks().dictionary_encode()
    types = table["type"].combine_chunks().dictionary_encode()
    cat_codes = category.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    type_codes = types.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    out = pa.table({
        "snippet": snippet, "category": category, "type": types,
        "value": table["value"].to_numpy().astype(np.float64),
        "first_snippet": _first(snippet, np.zeros_like(cat_codes)),
        "first_category": _first(snippet, cat_codes),
        "first_type": _first(snippet, type_codes),
    })
    meta = {"n_snippets": len(snippet_ids), "languages": sorted(set(languages)), "format": 1}
    return out.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})


def _first(snippet: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """True at the first row of each (snippet, code) pair."""
    if not len(snippet):
        return np.zeros(0, dtype=bool)
    key = snippet.astype(np.int64) * (int(codes.max()) + 1) + codes
    first = np.zeros(len(key), dtype=bool)
    first[np.unique(key, return_index=True)[1]] = True
    return first


def digest_bytes(nodes: Any, snippet_ids: Sequence[str], languages: Sequence[str] = ()) -> bytes:
    """:func:`digest_table` as the bytes of its Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(digest_table(nodes, snippet_ids, languages), sink)
    return bytes(sink.getvalue().to_pybytes())


@dataclass(frozen=True)
class _Part:
    """One part's digest as arrays; codes index the part's own ``categories``/``types``."""

    n_snippets: int
    languages: tuple[str, ...]
    snippet: np.ndarray
    category: np.ndarray
    type: np.ndarray
    value: np.ndarray
    flags: np.ndarray  # (n, 3) bool: first_snippet, first_category, first_type
    categories: tuple[str, ...]
    types: tuple[str, ...]


@dataclass(frozen=True)
class RunDigest:
    """The digests of a run's finished parts, concatenated. ``n`` rows = categorized nodes with a value.

    ``snippet`` int32 (n,): run-wide snippet position (0 .. n_snippets-1, parts in order); ``category`` int16
    (n,) and ``type`` int32 (n,): codes into ``categories`` / ``types``; ``value`` float64 (n,);
    ``first_snippet``/``first_category``/``first_type`` bool (n,) (see the module docstring); ``n_snippets``:
    every finished snippet, those without a categorized node included; ``meta``: the run's meta.json (:class:`asc.corpus.folder.RunMeta`); ``languages``: of its snippets, sorted; ``parts``: the part names read, with
    the state (size, mtime) they were read in, so :func:`read_digest` can extend it."""

    path: Path
    meta: RunMeta
    languages: tuple[str, ...]
    n_snippets: int
    snippet: np.ndarray
    category: np.ndarray
    type: np.ndarray
    value: np.ndarray
    first_snippet: np.ndarray
    first_category: np.ndarray
    first_type: np.ndarray
    categories: tuple[str, ...]
    types: tuple[str, ...]
    parts: tuple[tuple[str, int, int], ...] = ()
    _cache: dict[str, _Part] = field(default_factory=dict, repr=False, compare=False)

    @property
    def language(self) -> str:
        """The run's language (:func:`asc.concepts.language_of` its snippets' languages)."""
        return language_of(self.languages)

    @functools.cached_property
    def bins(self) -> np.ndarray:
        """The histogram bin of each value (:func:`asc.corpus.bootstrap.bin_of`), computed once per digest."""
        from asc.corpus.bootstrap import bin_of

        return bin_of(self.value)

    @property
    def n_nodes(self) -> int:
        return len(self.value)

    def to_pandas(self) -> Any:
        """A pandas DataFrame with one row per categorized node with a value: ``snippet`` (run-wide position),
        ``category``, ``type``, ``value`` (what every corpus summary reads)."""
        import pandas as pd

        return pd.DataFrame({"snippet": self.snippet.astype(np.int64),
                             "category": np.asarray(self.categories, dtype=object)[self.category.astype(np.int64)],
                             "type": np.asarray(self.types, dtype=object)[self.type.astype(np.int64)],
                             "value": self.value})

    def category_code(self, name: str) -> int:
        """The code of category ``name`` (-1 when no node of the run has it)."""
        return self.categories.index(name) if name in self.categories else -1


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _part_from_table(table: Any) -> _Part:
    meta = json.loads((table.schema.metadata or {}).get(_META_KEY, b"{}"))
    category = table["category"].combine_chunks()
    types = table["type"].combine_chunks()
    return _Part(
        n_snippets=int(meta.get("n_snippets", 0)), languages=tuple(meta.get("languages", ())),
        snippet=table["snippet"].to_numpy().astype(np.int32),
        category=category.indices.to_numpy(zero_copy_only=False).astype(np.int16),
        type=types.indices.to_numpy(zero_copy_only=False).astype(np.int32),
        value=table["value"].to_numpy().astype(np.float64),
        flags=np.stack([table[c].to_numpy(zero_copy_only=False) for c in ("first_snippet", "first_category",
                                                                          "first_type")], axis=1),
        categories=tuple(category.dictionary.to_pylist()), types=tuple(types.dictionary.to_pylist()))


def _read_parquet(path: Path, columns: list[str] | None = None) -> Any:
    """One Parquet file as a pyarrow Table. ``ParquetFile``, not ``read_table``: that builds a dataset per file
    (and imports pyarrow's dataset module), ten times the cost of reading a digest."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as file:
        return file.read(columns=columns)


def _read_part(folder: Path, name: str) -> _Part:
    """The digest of part ``name`` (``part-NNNNN``): its digest file, else computed from its nodes part."""
    import pyarrow as pa

    digest = folder / DIGEST / f"{name}.parquet"
    try:
        if digest.is_file():
            table = _read_parquet(digest)
            missing = [c for c in _COLUMNS if c not in table.column_names]
            if missing:
                raise CorpusError(f"run folder {folder} is broken: {DIGEST}/{name}.parquet lacks the column"
                                  f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}; delete it and run the "
                                  "evaluation again")
            return _part_from_table(table)
        snippets = _read_parquet(folder / "snippets" / f"{name}.parquet", ["id", "language"])
        nodes = _read_parquet(folder / "nodes" / f"{name}.parquet", ["snippet_id", "category", "type", "value"])
        return _part_from_table(digest_table(nodes, [str(i) for i in snippets["id"].to_pylist()],
                                             [str(x) for x in snippets["language"].to_pylist()]))
    except (OSError, ValueError, KeyError, pa.ArrowException) as err:
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CorpusError(f"run folder {folder} is broken: part {name} cannot be read ({why}); delete it and run the "
                          "evaluation again") from None


def read_digest(path: str | Path, meta: RunMeta, previous: RunDigest | None = None) -> RunDigest:
    """The digest of every finished part of the run at ``path`` whose meta.json is ``meta`` (reusing ``previous``
    for the parts it already read in the same state). A run without a finished part is a :class:`CorpusError`.
    :func:`asc.corpus.runs.load_digest` reads and checks the meta.json first."""
    folder = Path(path)
    names = sorted(p.stem for p in (folder / "snippets").glob("part-*.parquet"))
    if not names:
        raise CorpusError(f"{folder} holds no finished snippet yet (the run failed, was stopped, or is still running "
                          "its first chunk): run the evaluation again, or delete the folder")
    old = previous._cache if previous is not None and previous.path == folder else {}
    stamps = {n: s for n, *s in previous.parts} if previous is not None and previous.path == folder else {}
    seen: list[tuple[str, int, int]] = []
    for name in names:
        digest = folder / DIGEST / f"{name}.parquet"
        seen.append((name, *(_stat(digest) if digest.is_file() else _stat(folder / "snippets" / f"{name}.parquet"))))
    cache = {name: old[name] for name, *stamp in seen if name in old and tuple(stamps.get(name, ())) == tuple(stamp)}
    new = [name for name in names if name not in cache]
    with ThreadPoolExecutor(max_workers=_READERS) as pool:  # pyarrow reads and decodes without the GIL
        cache.update(zip(new, pool.map(lambda name: _read_part(folder, name), new)))
    return _concat(folder, meta, [cache[name] for name in names], tuple(seen), cache)


def _concat(folder: Path, meta: RunMeta, parts: list[_Part], seen: tuple[tuple[str, int, int], ...], cache: dict[str, _Part]) -> RunDigest:
    categories: dict[str, int] = {}
    types: dict[str, int] = {}
    snippet, category, type_, value, flags = [], [], [], [], []
    offset = 0
    for p in parts:
        cat_map = np.array([categories.setdefault(c, len(categories)) for c in p.categories] or [0], dtype=np.int16)
        type_map = np.array([types.setdefault(t, len(types)) for t in p.types] or [0], dtype=np.int32)
        snippet.append(p.snippet + offset)
        category.append(cat_map[p.category])
        type_.append(type_map[p.type])
        value.append(p.value)
        flags.append(p.flags)
        offset += p.n_snippets
    flag = np.concatenate(flags) if flags else np.zeros((0, 3), dtype=bool)
    languages = tuple(sorted({lang for p in parts for lang in p.languages}))
    return RunDigest(path=folder, meta=meta, languages=languages, n_snippets=offset, snippet=np.concatenate(snippet), category=np.concatenate(category),
                     type=np.concatenate(type_), value=np.concatenate(value), first_snippet=flag[:, 0],
                     first_category=flag[:, 1], first_type=flag[:, 2], categories=tuple(categories),
                     types=tuple(types), parts=seen, _cache=cache)
