"""The user study's shared state: its definition, frozen content and store, and the researcher password."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from asc import study_db_url, study_dir, study_file, study_password
from asc.study import StudyStore, default_url, frozen_path, load_frozen, load_study


def study_paths() -> tuple[Path, Path, str]:
    """(study file, its frozen file, database URL): see :mod:`asc.paths` for the variables that set them."""
    study = study_file()
    definition = load_study(study)  # milliseconds; raises InputError naming the field when malformed
    return study, frozen_path(definition), study_db_url() or default_url(study_dir())


@st.cache_resource(max_entries=4, show_spinner=False)
def _study(study_path: str, frozen: str, url: str, stamp: float) -> tuple[Any, Any, StudyStore]:
    definition = load_study(study_path)
    prepared = load_frozen(frozen, definition) if Path(frozen).exists() else None
    return definition, prepared, StudyStore(url, definition)


def study() -> tuple[Any, Any, StudyStore]:
    """(definition, frozen study or None, store), shared by every session; re-read when the files change."""
    study_path, frozen, url = study_paths()
    stamp = sum(p.stat().st_mtime for p in (study_path, frozen) if p.exists())
    return _study(str(study_path), str(frozen), url, stamp)


def rating_label(labels: Sequence[str], value: int) -> str:
    """The words of rating ``value`` on a scale whose ``labels`` name 1, 2, ... in order."""
    return labels[value - 1]


def optional_label(text: str) -> str:
    """``text`` marked "(optional)" once: a study file's question text may say so already."""
    return text if text.rstrip().lower().endswith("(optional)") else f"{text} (optional)"


def password() -> str:
    """The researcher password: Streamlit secret ``study_password`` or ``ASC_STUDY_PASSWORD`` ("" = not set)."""
    try:
        secret = st.secrets.get("study_password", "")
    except Exception:  # no secrets.toml at all: Streamlit raises its own error type
        secret = ""
    return str(secret or study_password())
