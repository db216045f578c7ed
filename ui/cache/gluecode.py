"""Cached glueCode task sets and predictions, re-read when a run writes more.

Each loader is a ``st.cache_resource`` keyed by the :func:`~ui.cache.stamp.change_stamp` of the files it reads,
so a run in progress (it rewrites its prediction file after every chunk) shows at the next rerun.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from ui.cache.stamp import change_stamp

if TYPE_CHECKING:
    import pandas as pd

    from probes.gluecode import Item, Prediction


@st.cache_resource(max_entries=4, show_spinner=False)
def _gluecode_predictions(path: str, task_set: str, stamp: str) -> list[Prediction]:
    from probes.gluecode import load_predictions

    return load_predictions(path, task_set)


def _prediction_files(path: Path, task_set: str) -> list[Path]:
    return [p for p in path.glob(f"*/{task_set}/*-*.jsonl") if p.parts[-3] != "tasks"] if path.is_dir() else []


def gluecode_predictions(path: Path, task_set: str) -> list[Prediction]:
    """Every glueCode prediction of one task set under ``path`` (all models, tasks, levels), re-read when one
    of its prediction files changes."""
    return _gluecode_predictions(str(path), task_set, change_stamp(_prediction_files(path, task_set)))


@st.cache_resource(max_entries=4, show_spinner=False)
def _gluecode_accuracy(path: str, task_set: str, tasks: tuple[str, ...], stamp: str) -> pd.DataFrame:
    from probes.gluecode import accuracy_table

    predictions = [p for p in gluecode_predictions(Path(path), task_set) if p.task in tasks]
    return accuracy_table(predictions)


def gluecode_accuracy(path: Path, task_set: str, tasks: tuple[str, ...]) -> pd.DataFrame:
    """The accuracy table (with its 1,000-resample bootstrap intervals) of one task set's predictions of ``tasks``:
    computed once per change of the prediction files, not on every rerun of the page."""
    return _gluecode_accuracy(str(path), task_set, tuple(sorted(tasks)),
                              change_stamp(_prediction_files(path, task_set)))


@st.cache_resource(max_entries=2, show_spinner=False)
def _gluecode_items(path: str, stamp: str) -> dict[str, dict[str, list[Item]]]:
    from probes.gluecode import load_task_sets

    return load_task_sets(path)


def gluecode_items(path: Path) -> dict[str, dict[str, list[Item]]]:
    """The glueCode task sets under ``path``: ``{set name: {task: items}}``, re-read when a task file changes."""
    return _gluecode_items(str(path), change_stamp((path / "tasks").glob("*/*.jsonl")))
