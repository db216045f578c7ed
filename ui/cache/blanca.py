"""Cached BLANCA task sets, scores and summaries, re-read when a build or a run writes more.

Each loader is keyed by the :func:`~ui.cache.stamp.change_stamp` of the files it reads: a set's task files and
``skipped.json`` (a build in progress), a set's score files (a run writes one Parquet file per model and task).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from asc import AscError
from ui.cache.stamp import change_stamp

if TYPE_CHECKING:
    from probes.blanca import BlancaTaskSet


def _set_files(path: Path) -> list[Path]:
    tasks = path / "tasks"
    return [*tasks.glob("*/*.jsonl"), *tasks.glob("*/skipped.json")] if tasks.is_dir() else []


@st.cache_resource(max_entries=2, show_spinner=False)
def _blanca_sets(path: str, stamp: str) -> tuple[dict[str, BlancaTaskSet], dict[str, str]]:
    from probes.blanca import load_task_set

    sets, broken = {}, {}
    for folder in sorted({p.parent for p in _set_files(Path(path))}):
        try:
            sets[folder.name] = load_task_set(folder)
        except (AscError, OSError, ValueError) as err:  # a task file that does not validate: named, with its line, instead of a traceback
            broken[folder.name] = str(err)
    return sets, broken


def blanca_task_sets(path: Path) -> tuple[dict[str, BlancaTaskSet], dict[str, str]]:
    """The BLANCA task sets under ``path``: ``({set name: BlancaTaskSet}, {set name: why it cannot be read})``,
    re-read when a task file or a set's ``skipped.json`` is added or rewritten (a build in progress)."""
    return _blanca_sets(str(path), change_stamp(_set_files(path)))


def _scores_stamp(path: Path, set_name: str) -> str:
    from probes.blanca import score_folder

    folder = score_folder(path, set_name)
    return change_stamp([*folder.glob("*/*.parquet"), *folder.glob("*/model.json")] if folder.is_dir() else [])


@st.cache_data(max_entries=4, show_spinner=False)
def _blanca_scores(path: str, set_name: str, stamp: str) -> pd.DataFrame:
    from probes.blanca import load_scores

    return load_scores(path, set_name)


def blanca_scores(path: Path, set_name: str) -> pd.DataFrame:
    """Every model's BLANCA scores on task set ``set_name`` under ``path`` (``probes.blanca.runs.load_scores``),
    re-read when a model's task is scored."""
    return _blanca_scores(str(path), set_name, _scores_stamp(path, set_name))


@st.cache_data(max_entries=4, show_spinner=False)
def _blanca_finetuned(path: str, set_name: str, stamp: str) -> list[str]:
    from probes.blanca import finetuned_labels

    return sorted(finetuned_labels(path, set_name))


def blanca_finetuned(path: Path, set_name: str) -> list[str]:
    """The labels of the fine-tuned models scored on ``set_name`` (``probes.blanca.runs.finetuned_labels``): they
    trained on the train split, so the "all" split leaves them out."""
    return _blanca_finetuned(str(path), set_name, _scores_stamp(path, set_name))


@st.cache_data(max_entries=16, show_spinner=False)
def _blanca_summary(path: str, set_name: str, split: str, targets: tuple[tuple[str, str], ...], leave_out: tuple[str, ...],
                    seed: int,
                    stamp: str) -> pd.DataFrame:
    from probes.blanca import summarize

    scores = _blanca_scores(path, set_name, stamp)
    return summarize(scores[~scores["model"].isin(leave_out)], split, targets=dict(targets), seed=seed)


def blanca_summary(path: Path, set_name: str, split: str, targets: dict[str, str], leave_out: tuple[str, ...] = (),
                   seed: int = 0) -> pd.DataFrame:
    """The BLANCA summary table (``probes.blanca.evaluate.summarize``) of the scores of ``set_name`` on ``split``,
    without the models in ``leave_out``; computed once per (scores on disk, settings)."""
    return _blanca_summary(str(path), set_name, split, tuple(sorted(targets.items())), tuple(leave_out), seed,
                           _scores_stamp(path, set_name))
