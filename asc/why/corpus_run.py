"""Corpus attribution stored beside a run: ``python -m asc attribute-corpus RUN`` fills the run folder's
``attribution/`` table from its snippets, resumably.

Why a command on a finished run rather than an ``eval`` option: the attribution reads nothing but the run's
snippets and settings, so it works on runs already made (docs/repro-attribution.md's runs) without scoring them again;
``eval``'s settings, which decide whether a run folder may be resumed, stay as they are; and it costs about ``k``
gradient passes per snippet, an order of magnitude more than ``eval``'s one forward pass, which a user should
choose on its own. It holds the run's writer lock (:func:`asc.corpus.resume.writer_lock`), so it never runs beside
an ``eval`` writing the same folder.

Layout: ``attribution/settings.json`` (``format``, ``method`` "grad", ``k``, ``seed``, the model's ``name`` and
``dtype``) and one Parquet part per finished chunk of the run, named like its ``snippets`` part, rows of
:data:`asc.why.corpus.ROW_COLUMNS` (:func:`asc.why.corpus.attribute_snippet`: per sampled target node, its
attribution per source category and per AST distance). Each snippet's rows are written atomically as it finishes
(``attribution/.pending-<part>/``), and the part once all its snippets are done, so an interrupted command (a stop
request, Ctrl-C, a kill) loses at most the snippet it was on; running it again does the snippets and parts still
missing (and those of chunks the run gained since), with the same settings only: other ``--k``/``--seed``/model are refused, naming the
fix. Snippets are explained as the run scored them (its aggregate and alignment options) from the token scores it
stored, without a model pass (a snippet whose stored tokens the tokenizer no longer gives is scored again), so the
command costs the ``k`` gradient passes and little else (``benchmarks/bench_corpus_attribution.py``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.align import AlignOptions
from asc.atomic import write_atomic
from asc.corpus.folder import RunSettings, read_run_meta
from asc.corpus.resume import writer_lock
from asc.corpus.runs import parquet_bytes
from asc.errors import CorpusError
from asc.explain import Explanation
from asc.models import ModelBundle
from asc.scores import TokenScores, encode
from asc.why.corpus import DEFAULT_K, ROW_COLUMNS, attribute_snippet

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ATTRIBUTE_CORPUS_COMMAND", "ATTRIBUTION_TABLE", "attribute_run", "attribution_job", "attribution_settings", "has_attribution", "load_attribution",
           "pending_parts", "run_settings"]

ATTRIBUTION_TABLE = "attribution"
_PENDING = ".pending-"  # attribution/.pending-<part>/<position>.parquet: the finished snippets of an unfinished part
_SETTINGS = "settings.json"
_FORMAT = 1
ATTRIBUTE_CORPUS_COMMAND = "python -m asc attribute-corpus RUN"  # what makes the table


def attribution_settings(path: str | Path) -> dict | None:
    """The settings the run's ``attribution/`` table was made with, or None when it has none."""
    file = Path(path) / ATTRIBUTION_TABLE / _SETTINGS
    if not file.is_file():
        return None
    try:
        settings = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise CorpusError(f"{file} cannot be read ({str(err)[:200]}); delete {file.parent} and run `{ATTRIBUTE_CORPUS_COMMAND}` "
                          "again") from None
    if not isinstance(settings, dict):
        raise CorpusError(f"{file} is not a JSON object; delete {file.parent} and run `{ATTRIBUTE_CORPUS_COMMAND}` again")
    return settings


def _done_parts(path: Path) -> list[Path]:
    return sorted((path / "snippets").glob("part-*.parquet"))


def has_attribution(path: str | Path) -> bool:
    """Whether the run folder holds attribution rows for at least one finished chunk."""
    path = Path(path)
    try:
        return attribution_settings(path) is not None and any(
            (path / ATTRIBUTION_TABLE / p.name).is_file() for p in _done_parts(path))
    except CorpusError:
        return False


def pending_parts(path: str | Path) -> list[str]:
    """Names of the run's finished chunks whose attribution part is still missing."""
    path = Path(path)
    return [p.name for p in _done_parts(path) if not (path / ATTRIBUTION_TABLE / p.name).is_file()]


def _check_settings(path: Path, old: dict | None, new: dict) -> None:
    if old is None:
        return
    differ = [f"{key}: {old.get(key)!r} there, {new[key]!r} here" for key in new if old.get(key) != new[key]]
    if differ:
        raise CorpusError(f"{path / ATTRIBUTION_TABLE} was made with other settings ({'; '.join(differ)}): run it "
                          f"with those, or delete {path / ATTRIBUTION_TABLE} to start again")


def run_settings(path: str | Path) -> dict:
    """The run's settings as meta.json records them, or a CorpusError naming the fix (readers in the backend use
    :func:`asc.corpus.folder.read_run_meta`)."""
    return read_run_meta(path).settings.as_dict()


def attribute_run(path: str | Path, bundle: ModelBundle, *, k: int = DEFAULT_K, seed: int = 0,
                  on_progress: Callable[[int, int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> Path:
    """Fill ``path``'s ``attribution/`` table (module doc) with ``bundle``, the run's own model. ``on_progress(done,
    total)`` is called after every snippet (parts and snippets already done count as done); ``should_stop()`` is
    asked before every snippet. Returns the folder."""
    import pandas as pd

    path = Path(path)
    settings = read_run_meta(path).settings
    if bundle.name != settings.model.name:
        raise CorpusError(f"{path} was evaluated with {settings.model.name}, not {bundle.name}: attribute it with its "
                          "own model (leave --model out)")
    bundle.require_causal("next-token probabilities to attribute")
    wanted = {"format": _FORMAT, "method": "grad", "k": int(k), "seed": int(seed),
              "model": {"name": bundle.name, "dtype": bundle.dtype}}
    options = settings.align_options
    with writer_lock(path):
        _check_settings(path, attribution_settings(path), wanted)
        table = path / ATTRIBUTION_TABLE
        table.mkdir(exist_ok=True)
        write_atomic(table / _SETTINGS, lambda tmp: tmp.write_text(json.dumps(wanted, indent=2)))
        todo = pending_parts(path)
        parts = _done_parts(path)
        total = sum(_n_rows(p) for p in parts)
        done = total - sum(_n_rows(path / "snippets" / name) for name in todo)
        for name in todo:
            pending = table / f"{_PENDING}{name.removesuffix('.parquet')}"
            kept = _kept_snippets(pending)
            done += len(kept)
            if on_progress is not None and kept:
                on_progress(done, total)
            for position, snippet_id, ex in _explanations(bundle, path, name, settings, options, skip=kept):
                if should_stop is not None and should_stop():
                    return path  # the snippets done so far are kept in ``pending``: running again resumes there
                rows = attribute_snippet(bundle, ex, snippet_id, k, seed)
                _write_part(pending / f"{position:06d}.parquet", parquet_bytes(rows))
                done += 1
                if on_progress is not None:
                    on_progress(done, total)
            frames = [pd.read_parquet(f) for f in sorted(pending.glob("*.parquet"))] if pending.is_dir() else []
            rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ROW_COLUMNS)
            _write_part(table / name, parquet_bytes(rows.reindex(columns=ROW_COLUMNS)))
            shutil.rmtree(pending, ignore_errors=True)
    return path


def attribution_job(path: str | Path, *, k: int = DEFAULT_K, seed: int = 0
                    ) -> Callable[[ModelBundle, Callable[[str, int, int], None], Callable[[], bool]], None]:
    """A ``call(bundle, on_progress, should_stop)`` for :meth:`asc.jobs.JobQueue.submit_call` (the Global page's
    button): :func:`attribute_run` on the run at ``path`` with its own model, reporting snippets done."""
    def call(bundle: ModelBundle, on_progress: Callable[[str, int, int], None], should_stop: Callable[[], bool]) -> None:
        attribute_run(path, bundle, k=k, seed=seed, should_stop=should_stop,
                      on_progress=lambda done, total: on_progress("attributing snippets", done, total))

    return call


def _kept_snippets(pending: Path) -> list[int]:
    """Positions (in their part) of the snippets an interrupted command finished, each in its own file of
    ``pending`` (a file that cannot be read is dropped and done again)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kept = []
    for file in sorted(pending.glob("*.parquet")) if pending.is_dir() else []:
        try:
            pq.ParquetFile(file)
            kept.append(int(file.stem))
        except (OSError, ValueError, pa.ArrowException):  # a damaged file: its snippet is done again
            file.unlink(missing_ok=True)
    return kept


def _write_part(file: Path, data: bytes) -> None:
    write_atomic(file, lambda tmp: tmp.write_bytes(data))


def _explanations(bundle: ModelBundle, path: Path, name: str, settings: RunSettings, options: AlignOptions,
                  skip: Collection[int] = ()) -> Iterator[tuple[int, str, Explanation]]:
    """Each snippet of part ``name`` but those at the positions ``skip``, as (position, id, explanation), explained
    as the run scored it: from its ``tokens`` rows (no model pass) where the tokenizer gives the tokens stored there,
    else scored again (in one batched pass)."""
    import pandas as pd

    from asc.explain import explain_many, explain_scored

    snippets = pd.read_parquet(path / "snippets" / name, columns=["id", "language", "source", "n_windows"])
    try:
        tokens = pd.read_parquet(path / "tokens" / name, columns=list(_TOKEN_COLUMNS))
    except (OSError, ValueError):
        tokens = pd.DataFrame(columns=list(_TOKEN_COLUMNS))
    by_id = {str(i): rows.sort_values("index") for i, rows in tokens.groupby("snippet_id", sort=False)}
    aggregate = settings.aggregate or "median"
    again = []
    for position, row in enumerate(snippets.itertuples(index=False)):
        if position in skip:
            continue
        scores = _stored_scores(bundle, str(row.source), by_id.get(str(row.id)), int(row.n_windows))
        if scores is None:
            again.append((position, row))
        else:
            yield position, str(row.id), explain_scored(bundle.summary(), scores, str(row.language), aggregate, options)
    for language in dict.fromkeys(str(r.language) for _, r in again):
        rows = [(i, r) for i, r in again if str(r.language) == language]
        explained = explain_many(bundle, [str(r.source) for _, r in rows], language, aggregate, options,
                                 max_window=settings.max_window)
        for (position, row), ex in zip(rows, explained, strict=True):
            yield position, str(row.id), ex


_TOKEN_COLUMNS = ("snippet_id", "index", "start", "end", "special", "prob", "logprob", "entropy", "rank", "top_text",
                  "top_prob")


def _stored_scores(bundle: ModelBundle, source: str, rows: Any, n_windows: int) -> TokenScores | None:
    """The run's scores of one snippet with the token ids of ``bundle``'s tokenizer, or None when the tokens
    stored are not the tokenizer's (then the snippet is scored again)."""
    ids, start, end, special = encode(bundle, source)
    if rows is None or len(rows) != len(ids) or not (np.array_equal(rows["start"].to_numpy(np.int64), start)
                                                    and np.array_equal(rows["end"].to_numpy(np.int64), end)
                                                    and np.array_equal(rows["special"].to_numpy(bool), special)):
        return None
    texts = [tuple(str(t) for t in x) for x in rows["top_text"]]
    width = max([len(t) for t in texts] or [0])
    probs = np.full((len(ids), width), np.nan)
    for i, row in enumerate(rows["top_prob"]):
        probs[i, : len(row)] = row
    return TokenScores(source=source, ids=ids, start=start, end=end, special=special,
                       prob=rows["prob"].to_numpy(np.float64), logprob=rows["logprob"].to_numpy(np.float64),
                       entropy=rows["entropy"].to_numpy(np.float64), rank=rows["rank"].to_numpy(np.int64),
                       top_ids=np.full((len(ids), width), -1, dtype=np.int64), top_probs=probs,
                       top_text=tuple(texts), n_windows=n_windows)


def _n_rows(part: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(part).metadata.num_rows)


def load_attribution(path: str | Path) -> tuple[Any, dict]:
    """The ``attribution/`` rows of the run's finished chunks (those attributed so far) and their settings, or a
    CorpusError naming the fix."""
    import pandas as pd
    import pyarrow as pa

    path = Path(path)
    settings = attribution_settings(path)
    parts = [path / ATTRIBUTION_TABLE / p.name for p in _done_parts(path)]
    parts = [p for p in parts if p.is_file()]
    if settings is None or not parts:
        raise CorpusError(f"{path} holds no corpus attribution yet: run `{ATTRIBUTE_CORPUS_COMMAND.replace('RUN', str(path))}`")
    frames: list[pd.DataFrame] = []
    for part in parts:
        try:
            frames.append(pd.read_parquet(part, columns=ROW_COLUMNS))
        except (OSError, ValueError, pa.ArrowException):
            raise CorpusError(f"{part} cannot be read: delete it and run `{ATTRIBUTE_CORPUS_COMMAND.replace('RUN', str(path))}` "
                              "again") from None
    return pd.concat(frames, ignore_index=True), settings
