"""Which folders under a results root are runs, and what their meta.json says.

:func:`run_folders` is the one listing of run folders (corpus runs, and with ``"heads.npz"`` attention runs),
newest first, readable ones only; :func:`broken_runs` lists the others with why, so pages can say which
folder to delete (a meta.json is read by :mod:`asc.corpus.folder`, the run folder's owner); :func:`run_info` is a run's
name in pickers in parts (:class:`RunInfo`), :func:`run_title` the one line they make.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from asc.corpus.folder import RunMeta, meta_problem, read_meta
from asc.errors import CorpusError

__all__ = ["RunInfo", "broken_runs", "run_folders", "run_info", "run_title"]


def _problem(folder: Path, required: tuple[str, ...]) -> str | None:
    """Why ``folder`` is not a readable run (None: it is). Without ``required`` it must be a corpus run."""
    if not (folder / "meta.json").is_file():
        return "no meta.json"
    try:
        meta = read_meta(folder)
    except CorpusError as err:  # "<folder>/meta.json cannot be read (why); the fix": keep the middle
        return str(err).replace(f"{folder}{os.sep}", "").split("; ")[0]
    missing = [f for f in required if not (folder / f).exists()]
    if missing:
        return f"{', '.join(missing)} missing"
    if not required:
        problem = meta_problem(meta)
        if problem:
            return problem
        if not any((folder / "snippets").glob("part-*.parquet")):
            return "no finished snippet yet (the run failed, was stopped, or is running its first chunk)"
    return None


def _candidates(root: Path, required: tuple[str, ...]) -> list[Path]:
    """Sub-folders that are or were meant to be runs: a meta.json, or (corpus runs) a snippets table."""
    try:
        subs = [p for p in root.iterdir() if p.is_dir()]
    except OSError:
        return []
    return [p for p in subs if (p / "meta.json").exists() or (not required and (p / "snippets").is_dir())]


def _mtime(path: Path) -> float:
    try:
        return (path / "meta.json").stat().st_mtime
    except OSError:
        return 0.0


def run_folders(root: str | Path, *required: str) -> list[Path]:
    """Readable runs under ``root`` (meta.json a JSON object, every file in ``required`` present), newest first.

    The one listing of run folders: corpus runs (which must also name their model and have a finished chunk),
    and (with ``"heads.npz"``) attention runs. :func:`broken_runs` lists the others."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in _candidates(root, required) if _problem(p, required) is None]
    return sorted(found, key=_mtime, reverse=True)


def broken_runs(root: str | Path, *required: str) -> list[tuple[Path, str]]:
    """``(folder, reason)`` for each run folder under ``root`` that :func:`run_folders` leaves out, by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [(p, _problem(p, required)) for p in sorted(_candidates(root, required))]
    return [(p, reason) for p, reason in found if reason is not None]


@dataclass(frozen=True)
class RunInfo:
    """A run's name in pickers, in parts, from its meta.json: ``model`` and ``corpus`` names (``?`` when missing),
    ``n_planned`` snippets (None when missing), whether it ``finished``, and its ``folder``'s name. Pages read the
    parts (never split :attr:`title` apart)."""

    model: str
    corpus: str
    n_planned: int | None
    finished: bool
    folder: str

    @property
    def title(self) -> str:
        """``model · corpus · N snippets · folder`` (``(incomplete)`` after the count of a run still going)."""
        count = "?" if self.n_planned is None else str(self.n_planned)
        done = "" if self.finished else " (incomplete)"
        return f"{self.model} · {self.corpus} · {count} snippets{done} · {self.folder}"

    @property
    def short(self) -> str:
        """``model · folder``: the run in a table or legend beside others."""
        return f"{self.model} · {self.folder}"


def run_info(path: str | Path) -> RunInfo:
    """The parts of the run folder's name in pickers (:class:`RunInfo`); a meta.json that cannot be read is a
    :class:`CorpusError` (:func:`read_meta`)."""
    meta = read_meta(path)
    if meta_problem(meta) is not None:  # not a corpus run (an attention run, or a broken one): its parts unknown
        planned = meta.get("n_planned")
        return RunInfo(model="?", corpus="?", n_planned=planned if isinstance(planned, int) and not isinstance(
            planned, bool) else None, finished=bool(meta.get("finished")), folder=Path(path).name)
    run = RunMeta.from_dict(meta, path)
    return RunInfo(model=run.model_name, corpus=run.settings.corpus or "?", n_planned=run.n_planned,
                   finished=run.finished is not None, folder=Path(path).name)


def run_title(path: str | Path) -> str:
    """``model · corpus · N snippets · folder`` for a run folder (:attr:`RunInfo.title`)."""
    return run_info(path).title
