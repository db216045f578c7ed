"""Check-then-branch guards: each either returns what the page needs or shows why not (and stops or
returns None). Errors the user can fix are shown as one line, never as a traceback. Pages call
:func:`allowed` before they load or submit anything: a refused input is never submitted anyway."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import streamlit as st

from asc import AscError, CorpusError, InputError, JobKind, ModelBundle, runs_dir, shown
from asc.corpus import RunInfo, broken_runs, run_folders, run_info
from ui import access, jobs
from ui.cache import get_bundle
from ui.widgets import Settings, plain

MAX_CHARS = 60_000  # longer text is refused in the browser (the CLI takes up to asc.explain.MAX_SOURCE_CHARS)


def runs_or_stop(where: str, demo: str = "", note: str = "") -> tuple[list[Path], dict[Path, RunInfo]]:
    """Readable run folders and their names in parts (:class:`~asc.corpus.listing.RunInfo`: ``.title`` for a
    picker); without any, say how to make one (``where``) and stop the page.

    ``demo`` (a page's name, e.g. ``"global"``): offer the one-click eval demo there too (:func:`ui.jobs.no_results`;
    ``note``: a line on what appears when it finishes); the Causal page's (``"causal"``) is its own, larger one
    (:data:`ui.jobs.CAUSAL_DEMO`).

    Folders that cannot be read (garbled meta.json, no finished chunk) are listed apart in an expander with
    why, as plain text: they never reach the page."""
    broken = broken_runs(runs_dir())
    if broken:
        with st.expander(f"{len(broken)} run folder{'s' if len(broken) != 1 else ''} could not be read"):
            for folder, reason in broken:
                st.text(f"{folder.name}: {reason}")
            st.caption("Delete such a folder, or run its evaluation again into a new folder.")
    infos: dict[Path, RunInfo] = {}
    for folder in run_folders(runs_dir()):
        try:
            infos[folder] = run_info(folder)
        except CorpusError:  # changed since it was listed
            continue
    if not infos:
        message = (f"No results yet: {'run the small demo below, ' if demo else ''}{where}, or from a shell: "
                   "`.venv/bin/python -m asc eval --corpus humaneval --out runs/smollm2-he`.")
        if demo:
            jobs.no_results(JobKind.EVAL, demo, message, note,
                            demo=jobs.CAUSAL_DEMO if demo == jobs.CAUSAL_DEMO else JobKind.EVAL)
        else:
            st.info(message)
        st.stop()
    return list(infos), infos


def titles(infos: Mapping[Path, RunInfo]) -> Callable[[Path], str]:
    """A run picker's ``format_func``: each folder's :attr:`RunInfo.title` (a folder no longer listed: its name)."""
    return lambda folder: infos[folder].title if folder in infos else folder.name


def model_or_none(settings: Settings) -> ModelBundle | None:
    """Load (or reuse) the chosen model with visible progress; on failure show why and return None."""
    if not settings.model:
        st.info("Enter a Hugging Face id or a local path in the sidebar.")
        return None
    if not allowed([settings.model], trust_remote_code=settings.trust_remote_code):
        return None  # shared mode: a typed spec never reaches the loader (its messages would describe server folders)
    try:
        with st.spinner(f"Loading {settings.model} (the first load of a GGUF model de-quantizes it: ~20-90 s)"):
            # the default placement in get_bundle's two-argument form, the key cache.bundle_for uses too
            placement = () if (settings.device, settings.dtype) == ("auto", "auto") else (settings.device, settings.dtype)
            return get_bundle(settings.model, settings.trust_remote_code, *placement)
    except AscError as err:
        st.error(str(err))
    except Exception as err:  # a broken model folder: say what happened, no traceback
        st.error(f"Could not load {settings.model!r}: {type(err).__name__}: {err}")
    return None


def check_access(models: list[str], corpus: str | None = None, trust_remote_code: bool = False) -> None:
    """AscError (the first reason) unless this server's policy (:func:`ui.access.policy`) lets a visitor use
    every model of ``models``, the corpus ``corpus`` (None: no corpus) and, when asked, remote code."""
    policy = access.policy()
    for model in models:
        policy.check_model(model)
    policy.check_remote_code(trust_remote_code)
    if corpus is not None:
        policy.check_corpus(corpus)


def allowed(models: list[str], corpus: str | None = None, trust_remote_code: bool = False) -> bool:
    """:func:`check_access` for a page about to load or submit: False after showing why (then submit nothing)."""
    try:
        check_access(models, corpus, trust_remote_code)
    except AscError as err:
        st.error(plain(str(err)))
        return False
    return True


CODE_UPLOADS = (".py", ".java", ".txt")  # what the inspector's uploader takes
TASK_UPLOADS = (".tsv", ".txt")  # what the layer page's uploader of INSPECT task files takes


def upload_name(name: str, suffixes: tuple[str, ...]) -> str:
    """The browser's file name of an upload, or an InputError: a NUL character in it, or another suffix than
    ``suffixes``. Uploaders are made without Streamlit's ``type=`` check, which shows a traceback in place of the
    page for a name with a NUL character: pages check the name here instead, before reading the bytes."""
    if "\0" in name:
        raise InputError(f"the uploaded file's name {shown(name)} contains a NUL character: rename the file and upload "
                         "it again")
    if not name.lower().endswith(suffixes):
        raise InputError(f"{shown(name)} is not a {' / '.join(suffixes)} file: upload one of those")
    return name


MAX_UPLOAD_MB = 1  # the inspector's uploader (Streamlit refuses more; 60,000 characters are at most 240 KB)


def decode_upload(data: bytes, name: str) -> str:
    """Uploaded bytes as text, or an InputError naming the fix: more than :data:`MAX_CHARS` characters could hold
    (checked before decoding, so a large file never reaches the session or the text box), or invalid UTF-8."""
    if len(data) > 4 * MAX_CHARS:
        raise InputError(f"{name} has {len(data):,} bytes, more than the browser view takes ({MAX_CHARS:,} characters):"
                         " explain a single function, or use `python -m asc explain FILE` for longer files")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{name} is not valid UTF-8 (byte {err.start}: {err.reason}); re-save it as UTF-8 "
                         "and upload it again") from None
    check_length(text)
    return text


def check_length(text: str) -> None:
    """InputError when ``text`` is longer than the browser view takes."""
    if len(text) > MAX_CHARS:
        raise InputError(f"the snippet has {len(text):,} characters; the browser view takes at most {MAX_CHARS:,}. "
                         "Explain a single function, or use `python -m asc explain FILE` for longer files")
