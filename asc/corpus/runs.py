"""Corpus evaluation runs: AsC-Eval over many snippets, written to Parquet, resumable.

A run folder holds ``meta.json`` (``settings``: format, model, corpus spec, aggregate, alignment options,
max_window; ``corpus``: the digest and size of the planned corpus), ``corpus.json`` (the planned snippets'
ids and the sha256 of their sources, with the digest over them), a ``.lock`` file, and four tables, each a
folder of Parquet parts that ``pandas.read_parquet(folder)`` reads whole:

``snippets/``  one row per snippet: id, origin, name, language, n_tokens, n_nodes, ast_levels,
               has_error, loss (mean cross-entropy, nats/token), n_windows, complexity (McCabe, as lizard counts
               it: :mod:`asc.complexity`; AsC-Causal's confounder, absent in runs written before it), source
``tokens/``    one row per token: snippet_id, index, text, start, end, special, prob, logprob,
               entropy, rank, top_text (list), top_prob (list)
``nodes/``     one row per AST node: snippet_id, id, type, named, start, end, parent, depth,
               category, is_error, is_missing, n_tokens, value
``concepts/``  snippet-level values in long form: snippet_id, kind ("type" | "category" | "global"),
               name, value, n_nodes. Absent concepts have no row (missing, not 0).
``digest/``    per part, the categorized node values every corpus summary reads (:mod:`asc.corpus.digest`).

Runs made with ``--per-layer`` or ``--forks`` hold more: :mod:`asc.corpus.depth`, :mod:`asc.corpus.forks`.

Snippets are processed in chunks (one batched scoring call each); each chunk is written as part
``NNNNN`` of every table and its digest, the ``snippets`` part last and every file atomically, so an interrupted run
leaves only whole chunks. Running again with the same folder skips the snippets already done; a
folder made with another model, other settings, an older format or another corpus (a done snippet missing
from the new plan, or whose source changed) is refused with a :class:`CorpusError` saying what differs.
One writer at a time: a run holds an exclusive ``flock`` on ``.lock`` (released when its process ends,
however it ends), and a second writer is refused at once. A fresh folder whose run fails or stops before
its first chunk is removed again.

The steps (:func:`open_run`, :func:`plan_run`, :func:`chunk_tables`, :func:`write_chunk`, :func:`finish_run`)
are public: :mod:`asc.corpus.engines` writes the same folders from Ray actors' results.

:func:`load_run` never fails with anything but :class:`CorpusError` naming the folder and the fix: a
garbled meta.json, a run without a finished chunk, an unreadable Parquet part or one that lacks a column
the tables need. :func:`load_digest` reads the per-part digests (``digest/``, :mod:`asc.corpus.digest`) that
every corpus summary uses instead of the tables. Listing run folders is :mod:`asc.corpus.listing`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from asc.align import AlignOptions
from asc.atomic import write_atomic
from asc.branching.forks import ForkSettings
from asc.concepts import GLOBAL, CategoryMap, language_of, load_categories
from asc.corpus.depth import chunk_layers, write_layers
from asc.corpus.digest import DIGEST, RunDigest, digest_bytes, read_digest
from asc.corpus.feed import ChunkFeed, PartWriter, default_workers
from asc.corpus.folder import CORE_TABLES, TABLE_SPECS, RunMeta, read_meta, read_run_meta
from asc.corpus.forks import settings_entry
from asc.corpus.resume import (
    check_corpus,
    corpus_identity,
    remove_unstarted,
    settings_differences,
    source_digest,
    writer_lock,
)
from asc.corpus.sources import Snippet
from asc.corpus.tables import chunk_tables, chunk_tables_reference, parquet_bytes
from asc.device import model_device
from asc.errors import CorpusError, InputError
from asc.lens import lens_scores
from asc.models import ModelBundle
from asc.scores import score_texts

__all__ = ["TABLES", "RunData", "RunPlan", "check_out", "chunk_tables", "done_ids", "finish_run", "load_digest",
           "load_run", "open_run", "parquet_bytes", "plan_run", "progress_bar", "run_corpus", "write_chunk"]

log = logging.getLogger(__name__)
TABLES = CORE_TABLES  # write order: snippets last marks a chunk done (asc.corpus.folder registers every table)
FORMAT_VERSION = 2  # 2: meta.json records the corpus identity (corpus.json); folders of format 1 are read, not resumed


@dataclass(frozen=True)
class RunData:
    """A run folder read back: its ``meta`` (:class:`asc.corpus.folder.RunMeta`) and one pandas DataFrame per
    table."""

    path: Path
    meta: RunMeta
    snippets: Any  # pandas DataFrames (pandas is imported lazily)
    tokens: Any
    nodes: Any
    concepts: Any

    @property
    def language(self) -> str:
        """The run's language (:func:`asc.concepts.language_of` its snippets' languages)."""
        return language_of(self.snippets["language"].unique() if "language" in self.snippets else ())

    def to_pandas(self, table: str | None = None) -> Any:
        """A pandas DataFrame (a copy). ``table`` None: one row per snippet, the ``snippets`` table's columns and
        then ``Global`` (over its categorized nodes) and a column per category of its language's mapping with the
        snippet's value (NaN where the snippet has no node of it); a table's name (:data:`TABLES`): that table as read."""
        if table is not None:
            if table not in TABLES:
                raise InputError(f"table={table!r}; choose one of {', '.join(TABLES)}, or none for a row per snippet")
            return getattr(self, table).copy()
        if "kind" not in self.concepts:
            raise InputError(f"the concepts table of {self.path} was not read: load_run(path) reads it by default")
        cats = self.concepts[self.concepts["kind"].isin(("category", "global"))]
        wide = cats.pivot_table(index="snippet_id", columns="name", values="value", sort=False)
        known = [GLOBAL, *load_categories(self.language).categories]  # mapping order; another language's after
        wide = wide.reindex(columns=known + [c for c in wide.columns if c not in known])
        wide.columns.name = None
        return self.snippets.merge(wide, left_on="id", right_index=True, how="left")


def _settings(model: dict, corpus: str, aggregate: str, options: AlignOptions, max_window: int | None,
              layers: bool = False, forks: ForkSettings | None = None) -> dict:
    settings = {"format": FORMAT_VERSION, "model": model, "corpus": corpus, "aggregate": aggregate,
                "align": asdict(options), "max_window": max_window}
    settings |= {"layers": True} if layers else {}  # absent, not False: older runs stay resumable
    return settings | {"forks": settings_entry(forks)} if forks else settings


def _broken(path: Path, what: str) -> CorpusError:
    return CorpusError(f"run folder {path} is broken: {what}; delete it and run the evaluation again")


def _read_part(path: Path, part: Path, table: str, columns: list[str] | None = None) -> Any:
    """One Parquet part, or CorpusError naming the folder when it is truncated, garbled or lacks a column."""
    import pandas as pd
    import pyarrow as pa

    try:
        df = pd.read_parquet(part, columns=columns)
    except (OSError, ValueError, pa.ArrowException) as err:
        raise _broken(path, f"{table}/{part.name} cannot be read ({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None
    missing = [c for c in (columns or TABLE_SPECS[table].columns) if c not in df.columns]
    if missing:
        raise _broken(path, f"{table}/{part.name} lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return df


def done_ids(out: Path) -> tuple[dict[str, str], int]:
    """sha256 of the source per snippet id of complete chunks, and the next part number. Orphan parts of a cut
    chunk are removed."""
    done_parts = {p.stem for p in (out / "snippets").glob("part-*.parquet")}
    for table in [t for t in TABLE_SPECS if t not in ("snippets", "attribution")]:
        for p in (out / table).glob("part-*.parquet"):
            if p.stem not in done_parts:
                p.unlink()
    numbers = [int(s.split("-")[1]) for s in done_parts]
    return _done(out), (max(numbers) + 1 if numbers else 0)


def _done(out: Path) -> dict[str, str]:
    done: dict[str, str] = {}
    for p in sorted((out / "snippets").glob("part-*.parquet")):
        df = _read_part(out, p, "snippets", ["id", "source"])
        done.update(zip(df["id"].astype(str), map(source_digest, df["source"].astype(str)), strict=True))
    return done


def check_out(out: str | Path, snippets: Sequence[Snippet]) -> None:
    """Refuse what a run into ``out`` would refuse that needs no model, before one is loaded (the CLI's seconds): a
    path under a file, a folder another writer holds, a folder of another corpus. It writes nothing; the run checks
    all again under its lock."""
    out = Path(out)
    under = next((p for p in (out, *out.parents) if p.exists()), None)
    if under is not None and not under.is_dir():
        raise CorpusError(f"cannot create the run folder {out} ({under} is a file): give another --out")
    if (out / ".lock").is_file():
        with writer_lock(out):
            pass
    if (out / "snippets").is_dir():
        check_corpus(out, _done(out), snippets)


@dataclass
class RunPlan:
    """A run folder opened for writing (see :func:`plan_run`): its ``meta`` (written again by :func:`finish_run`),
    the snippets still ``todo`` in plan order, how many are done, and the next free part number."""

    out: Path
    meta: dict
    todo: list[Snippet]
    n_done: int
    n_planned: int
    next_part: int

    @property
    def run_meta(self) -> RunMeta:
        """The meta.json being written, typed (:class:`asc.corpus.folder.RunMeta`)."""
        return RunMeta.from_dict(self.meta, self.out)

    def chunks(self, batch_size: int) -> list[list[Snippet]]:
        """The snippets to do in chunks of ``batch_size`` (chunk ``i`` is written as part ``next_part + i``)."""
        return [self.todo[lo : lo + batch_size] for lo in range(0, len(self.todo), batch_size)]


@contextmanager
def open_run(out: str | Path) -> Iterator[Path]:
    """Create ``out`` if needed and hold its writer lock; a fresh folder that ends without a finished chunk is
    removed again (however the body ends). Yields the folder as a Path."""
    out = Path(out)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CorpusError(f"cannot create the run folder {out} ({err.strerror or err}): give another --out") from None
    with writer_lock(out):
        fresh = not (out / "meta.json").exists() and not any((out / "snippets").glob("part-*.parquet"))
        finished = False
        try:
            yield out
            finished = True
        finally:
            if fresh and not any((out / "snippets").glob("part-*.parquet")):
                if finished:
                    log.info("no chunk finished: %s removed", out)
                remove_unstarted(out, tuple(TABLE_SPECS), created)


def plan_run(model: dict, snippets: Sequence[Snippet], out: Path, *, corpus: str, aggregate: str,
             options: AlignOptions, max_window: int | None, layers: bool = False,
             forks: ForkSettings | None = None) -> RunPlan:
    """Check a locked run folder against the settings (``model``: :meth:`ModelBundle.describe`) and the corpus,
    write corpus.json and meta.json, and say what is left to do. Whichever engine wrote the done snippets."""
    settings = _settings(model, corpus, aggregate, options, max_window, layers, forks)
    meta_path = out / "meta.json"
    old = read_meta(out) if meta_path.exists() else None
    if old is not None:
        differences = settings_differences(old.get("settings"), settings)
        if differences:
            raise CorpusError(f"{out} holds a run with other settings ({'; '.join(differences)}); "
                              "use another --out folder, or delete this one")
    elif any((out / "snippets").glob("part-*.parquet")):
        raise CorpusError(f"{out} holds results without a meta.json: use another --out folder, or delete this one")
    done, part = done_ids(out)
    check_corpus(out, done, snippets)
    for table in TABLES:
        (out / table).mkdir(exist_ok=True)
    identity = corpus_identity(snippets)
    described = {"digest": identity["digest"], "n_snippets": len(snippets), "file": "corpus.json"}
    meta: dict[str, Any]
    if old is None:
        meta = {"settings": settings, "corpus": described, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    else:
        meta = {k: v for k, v in old.items() if k != "finished"} | {"corpus": described}
    meta["n_planned"] = len(snippets)
    write_atomic(out / "corpus.json", lambda tmp: tmp.write_text(json.dumps(identity, indent=1)))
    write_atomic(meta_path, lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))
    todo = [s for s in snippets if s.id not in done]
    if len(done):
        log.info("resuming %s: %d snippets already done, %d to go", out, len(snippets) - len(todo), len(todo))
    return RunPlan(out=out, meta=meta, todo=todo, n_done=len(snippets) - len(todo), n_planned=len(snippets),
                   next_part=part)


def write_chunk(out: Path, part: int, tables: dict[str, Any]) -> None:
    """Write one chunk as part ``part`` of every table and its digest (:mod:`asc.corpus.digest`), each file
    atomically, the snippets part last (marking it done). ``tables`` maps each table (the four, and ``forks`` of a
    ``--forks`` run) to a DataFrame or to its :func:`parquet_bytes`."""
    data = {t: df if isinstance(df, bytes) else parquet_bytes(df) for t, df in tables.items()}
    name = f"part-{part:05d}.parquet"
    for table in [t for t in data if t != "snippets"]:
        (out / table).mkdir(exist_ok=True)
        write_atomic(out / table / name, _bytes_writer(data[table]))
    (out / DIGEST).mkdir(exist_ok=True)
    write_atomic(out / DIGEST / name, _bytes_writer(_digest_of(data["nodes"], data["snippets"])))
    write_atomic(out / "snippets" / name, _bytes_writer(data["snippets"]))


def _digest_of(nodes: bytes, snippets: bytes) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    snips = pq.read_table(pa.BufferReader(snippets), columns=["id", "language"])
    table = pq.read_table(pa.BufferReader(nodes), columns=["snippet_id", "category", "type", "value"])
    return digest_bytes(table, [str(i) for i in snips["id"].to_pylist()], [str(x) for x in snips["language"].to_pylist()])


def _bytes_writer(data: bytes) -> Callable[[Path], Any]:
    return lambda tmp: tmp.write_bytes(data)


def finish_run(plan: RunPlan) -> Path:
    """Record in meta.json that every planned snippet is done; returns the folder."""
    plan.meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    write_atomic(plan.out / "meta.json", lambda tmp: tmp.write_text(json.dumps(plan.meta, indent=2)))
    return plan.out


def progress_bar(progress: bool | None, plan: RunPlan, desc: str) -> Any:
    """A tqdm bar over the planned snippets (None unless ``progress``, or stderr is a terminal when None)."""
    if not (progress or (progress is None and os.isatty(2))):
        return None
    from tqdm import tqdm

    return tqdm(total=plan.n_planned, initial=plan.n_done, unit="snippet", desc=desc)


def run_corpus(bundle: ModelBundle, snippets: Sequence[Snippet], out: str | Path, *, corpus: str = "",
               aggregate: str = "median", options: AlignOptions | None = None, batch_size: int = 8,
               max_window: int | None = None, progress: bool | None = None,
               on_progress: Callable[[int, int], None] | None = None,
               should_stop: Callable[[], bool] | None = None, layers: bool = False,
               forks: ForkSettings | None = None, cpu_workers: int | None = None) -> Path:
    """Evaluate ``snippets`` and write/extend the run folder ``out``. Returns the folder.

    The CPU's work runs beside the model's (:mod:`asc.corpus.feed`): ``cpu_workers`` worker processes tokenize, parse
    and align the next chunks and build the finished ones' tables while the model scores, and a thread writes the
    parts (None: :func:`asc.corpus.feed.default_workers`, none when the model is on the CPU or the machine has two
    cores; 0: all in this process). ``--per-layer`` and ``--forks`` runs go snippet by snippet.

    ``layers`` scores each snippet with the logit lens and adds the ``layers/`` table (:mod:`asc.corpus.depth`);
    ``forks`` counts fork points with these thresholds (:mod:`asc.corpus.forks`).

    ``progress`` shows a tqdm bar (default: when stderr is a terminal); ``on_progress(done, total)`` is
    called after every chunk (for UIs); ``should_stop()`` is asked before every chunk and ends the
    run early when it returns True (finished chunks stay on disk: running again resumes).
    """
    options = options or AlignOptions()
    with open_run(out) as folder:
        plan = plan_run(bundle.describe(), snippets, folder, corpus=corpus, aggregate=aggregate, options=options,
                        max_window=max_window, layers=layers, forks=forks)
        cmaps: dict[str, CategoryMap] = {}
        info = bundle.summary()
        bar = progress_bar(progress, plan, bundle.name)
        try:
            if layers or forks:
                stopped = _run_by_snippet(bundle, plan, folder, info, cmaps, batch_size=batch_size, aggregate=aggregate,
                                          options=options, max_window=max_window, layers=layers, forks=forks,
                                          report=_reporter(bar, on_progress, plan), should_stop=should_stop)
            else:
                workers = default_workers(model_device(bundle.model).type) if cpu_workers is None else cpu_workers
                stopped = _run_fed(bundle, plan, folder, cmaps, batch_size=batch_size, aggregate=aggregate,
                                   options=options, max_window=max_window, workers=workers,
                                   report=_reporter(bar, on_progress, plan), should_stop=should_stop)
        finally:
            if bar is not None:
                bar.close()
        if stopped:
            log.info("stopped on request after %d of %d snippets", plan.n_done, plan.n_planned)
            return folder
        return finish_run(plan)


def _reporter(bar: Any, on_progress: Callable[[int, int], None] | None, plan: RunPlan) -> Callable[[int], None]:
    """What a run calls after each chunk written (``n`` snippets): the bar, ``on_progress``, ``plan.n_done``."""
    def report(n: int) -> None:
        plan.n_done += n
        if bar is not None:
            bar.update(n)
        if on_progress is not None:
            on_progress(plan.n_done, plan.n_planned)
    return report


def _run_fed(bundle: ModelBundle, plan: RunPlan, folder: Path, cmaps: dict[str, CategoryMap], *, batch_size: int,
             aggregate: str, options: AlignOptions, max_window: int | None, workers: int,
             report: Callable[[int], None], should_stop: Callable[[], bool] | None) -> bool:
    """The chunks through a :class:`~asc.corpus.feed.ChunkFeed` (``workers`` processes) to a writer thread; True when
    ``should_stop`` ended the run early."""
    chunks = plan.chunks(batch_size)
    writer = PartWriter(lambda part, tables: write_chunk(folder, part, tables))
    reported = n_given = 0
    try:
        with ChunkFeed(bundle, options=options, aggregate=aggregate, max_window=max_window, cmaps=cmaps,
                       workers=workers) as feed:
            for i, tables in feed.tables(chunks, should_stop):
                writer.put(plan.next_part + i, tables, len(chunks[i]))
                n_given += 1
                for n in writer.written[reported:]:
                    reported += 1
                    report(n)
    finally:
        writer.close()
    for n in writer.written[reported:]:
        report(n)
    return n_given < len(chunks)


def _run_by_snippet(bundle: ModelBundle, plan: RunPlan, folder: Path, info: dict, cmaps: dict[str, CategoryMap], *,
                    batch_size: int, aggregate: str, options: AlignOptions, max_window: int | None, layers: bool,
                    forks: ForkSettings | None, report: Callable[[int], None],
                    should_stop: Callable[[], bool] | None) -> bool:
    """The function-by-function path (``--per-layer`` and ``--forks`` runs): each chunk scored, explained snippet by
    snippet and written in turn; True when ``should_stop`` ended the run early."""
    for i, chunk in enumerate(plan.chunks(batch_size)):
        if should_stop is not None and should_stop():
            return True
        if layers:
            lenses = [lens_scores(bundle, s.source, max_window=max_window) for s in chunk]
            scored = [lens.output for lens in lenses]
            write_layers(folder, plan.next_part + i, chunk_layers(info, chunk, lenses, aggregate=aggregate,
                                                                  options=options, cmaps=cmaps))
        else:
            scored = score_texts(bundle, [s.source for s in chunk], max_window=max_window)
        write_chunk(folder, plan.next_part + i, chunk_tables_reference(info, chunk, scored, aggregate=aggregate,
                                                                       options=options, cmaps=cmaps, forks=forks))
        report(len(chunk))
    return False


def load_run(path: str | Path, tables: tuple[str, ...] = TABLES) -> RunData:
    """Read a run folder written by :func:`run_corpus` (``tables`` left out come back empty, e.g. tokens).

    Only complete chunks are read (a part whose chunk has no ``snippets`` part yet is left out). Any problem is
    a :class:`CorpusError` naming the folder and the fix."""
    import pandas as pd

    path = Path(path)
    meta = read_run_meta(path)
    done = sorted((path / "snippets").glob("part-*.parquet"))
    if not done:
        raise CorpusError(f"{path} holds no finished snippet yet (the run failed, was stopped, or is still "
                          "running its first chunk): run the evaluation again, or delete the folder")
    frames = {}
    for table in TABLES:
        if table not in tables:
            frames[table] = pd.DataFrame()
            continue
        parts = [path / table / p.name for p in done]
        missing = [p.name for p in parts if not p.is_file()]
        if missing:
            raise _broken(path, f"{table}/{missing[0]} is missing")
        frames[table] = pd.concat([_read_part(path, p, table) for p in parts], ignore_index=True)
    return RunData(path=path, meta=meta, **frames)


def load_digest(path: str | Path, previous: RunDigest | None = None) -> RunDigest:
    """The digest (:mod:`asc.corpus.digest`) of a run folder's finished parts: what every corpus summary reads,
    without the tables themselves. ``previous`` (the same folder's digest read before) is extended by the
    parts added since. Any problem is a :class:`CorpusError` naming the folder and the fix."""
    path = Path(path)
    return read_digest(path, read_run_meta(path), previous)
