"""Check-then-branch guards: each either returns what the page needs or shows why not (and stops or
returns None). Errors the user can fix are shown as one line, never as a traceback."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from asc.corpus.runs import run_folders, run_title
from asc.errors import AscError, InputError
from asc.models import ModelBundle
from asc.paths import runs_dir
from ui.cache import get_bundle
from ui.widgets import Settings

MAX_CHARS = 60_000  # longer text is refused in the browser (the CLI takes any length)


def runs_or_stop(where: str) -> tuple[list[Path], dict[Path, str]]:
    """Run folders and their titles; without any, say how to make one (``where``) and stop the page."""
    folders = run_folders(runs_dir())
    if not folders:
        st.info(f"No results yet: {where}, or from a shell: "
                "`.venv/bin/python -m asc eval --corpus humaneval --out runs/smollm2-he`.")
        st.stop()
    return folders, {f: run_title(f) for f in folders}


def model_or_none(settings: Settings) -> ModelBundle | None:
    """Load (or reuse) the chosen model with visible progress; on failure show why and return None."""
    if not settings.model:
        st.info("Enter a Hugging Face id or a local path in the sidebar.")
        return None
    try:
        with st.spinner(f"Loading {settings.model} (the first load of a GGUF model de-quantizes it: ~20-90 s)"):
            return get_bundle(settings.model, settings.trust_remote_code)
    except AscError as err:
        st.error(str(err))
    except Exception as err:  # a broken model folder: say what happened, no traceback
        st.error(f"Could not load {settings.model!r}: {type(err).__name__}: {err}")
    return None


def decode_upload(data: bytes, name: str) -> str:
    """Uploaded bytes as text, or an InputError naming the fix (invalid UTF-8)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{name} is not valid UTF-8 (byte {err.start}: {err.reason}); re-save it as UTF-8 "
                         "and upload it again") from None


def check_length(text: str) -> None:
    """InputError when ``text`` is longer than the browser view takes."""
    if len(text) > MAX_CHARS:
        raise InputError(f"the snippet has {len(text):,} characters; the browser view takes at most {MAX_CHARS:,}. "
                         "Explain a single function, or use `python -m asc explain FILE` for longer files")
