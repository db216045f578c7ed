"""Cached corpus runs: a run's tables, its digest, Table I, AsC-Causal, per-layer medians and fork rates.

* a run's snippets and concepts tables (AsC-Causal's input) are a ``st.cache_resource`` keyed by the run's
  :func:`~ui.cache.stamp.run_stamp`, so a growing run is re-read once per chunk it gains;
* corpus summaries read run digests (:func:`cached_digest`): one per folder, shared, extended by the parts a
  growing run adds (never re-read whole); Table I is cached by (digests' parts, settings);
* the causal results store is a dict shared by every session: inserts and evictions hold a lock.

A broken run (:class:`~asc.errors.CorpusError`) is shown as an error naming the folder and the fix, and the page
stops: never a traceback.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from asc import CorpusError
from asc.corpus import RunData, RunDigest, load_digest, load_run, run_title, summary_table
from ui.cache.stamp import run_stamp

if TYPE_CHECKING:
    from asc import CausalResult

CAUSAL_KEEP = 16  # causal tables kept (oldest dropped first): a long-running app must not grow without bound
DIGESTS_KEEP = 16  # run digests kept, likewise
_causal_lock = threading.Lock()  # guards the shared causal store (computing runs outside it)
_digest_lock = threading.Lock()  # guards the shared digest store


@st.cache_resource(max_entries=12, show_spinner=False)
def _run(path: str, stamp: str) -> RunData:
    # cache_resource, not cache_data: large frames are shared read-only instead of unpickled per rerun
    return load_run(path, tables=("snippets", "concepts"))


def cached_run(path: Path) -> RunData:
    """The snippets and concepts tables of the run at ``path`` (AsC-Causal's input), read once per chunk it
    gains. A broken run stops the page with an error naming the folder and the fix."""
    try:
        return _run(str(path), run_stamp(path))
    except CorpusError as err:
        st.error(str(err))
        st.stop()


def _keep(store: dict[Any, Any], key: Any, value: Any, lock: threading.Lock, most: int) -> None:
    with lock:
        store[key] = value
        while len(store) > most:  # dicts keep insertion order: drop the oldest
            store.pop(next(iter(store)))


@st.cache_resource(show_spinner=False)
def _digest_store() -> dict[str, RunDigest]:
    return {}


def cached_digest(path: Path) -> RunDigest:
    """The digest of the run at ``path`` (what Table I, node types, distributions and differences read): read
    once, then extended by the parts the run adds (a 100,000-snippet run is not re-read every rerun). A broken
    run is an error naming the folder and the fix, and the page stops."""
    store = _digest_store()
    key = str(path)
    try:
        digest = load_digest(path, previous=store.get(key))
    except CorpusError as err:
        st.error(str(err))
        st.stop()
    _keep(store, key, digest, _digest_lock, DIGESTS_KEEP)
    return digest


def _digest_key(digest: RunDigest) -> tuple[str, tuple[tuple[str, int, int], ...]]:
    return str(digest.path), digest.parts


@st.cache_data(max_entries=32, show_spinner=False, hash_funcs={RunDigest: _digest_key})
def cached_summary(digests: list[RunDigest], categories: tuple[str, ...], n_boot: int, seed: int,
                   method: str = "snippet") -> Any:
    """Table I (long) of ``digests`` (from :func:`cached_digest`), computed once per state of their parts."""
    return summary_table(digests, categories, n_boot=n_boot, seed=seed, method=method)


@st.cache_resource(show_spinner=False)
def _causal_store() -> dict[tuple[str, str, int, int, int, int], CausalResult]:
    return {}


def causal_result(path: Path, min_snippets: int, simulations: int, seed: int,
                  refute_sample: int | None = None) -> CausalResult:
    """AsC-Causal of a run (:func:`asc.causal.run_causal`), cached by (results folder state, settings); shows
    progress while computing. ``refute_sample``: snippets the refuters use per concept (None:
    :data:`asc.causal.REFUTE_SAMPLE`)."""
    from asc import REFUTE_SAMPLE, run_causal

    refute_sample = REFUTE_SAMPLE if refute_sample is None else refute_sample
    key = (str(path), run_stamp(path), min_snippets, simulations, seed, refute_sample)
    store = _causal_store()
    with _causal_lock:
        found = store.get(key)
    if found is None:  # two sessions may compute the same key at once; both get a correct result
        bar = st.progress(0.0, text=f"Estimating effects for {run_title(path)}")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"{done}/{total} treatments")

        found = run_causal(cached_run(path), min_snippets=min_snippets, seed=seed, simulations=simulations,
                           refute_sample=refute_sample, on_progress=progress)
        bar.empty()
        _keep(store, key, found, _causal_lock, CAUSAL_KEEP)
    return found


@st.cache_data(max_entries=12, show_spinner=False)
def _layer_summary(path: str, label: str, stamp: str) -> pd.DataFrame:
    from asc.corpus import layer_summary

    return layer_summary(path, label)


def layer_summary(path: Path, label: str) -> pd.DataFrame | None:
    """The category x layer medians of a run made with ``--per-layer`` (``asc.corpus.depth.layer_summary``),
    labelled ``label``; None for a run without per-layer values. Re-read when the run gains a chunk."""
    from asc.corpus import has_layers

    return _layer_summary(str(path), label, run_stamp(path)) if has_layers(path) else None


@st.cache_data(max_entries=12, show_spinner=False)
def _fork_table(path: str, label: str, n_boot: int, seed: int, stamp: str) -> pd.DataFrame:
    from asc.corpus import fork_table

    return fork_table(path, n_boot=n_boot, seed=seed, label=label)


def fork_table(path: Path, label: str, n_boot: int, seed: int) -> pd.DataFrame | None:
    """The fork rates per category of a run made with ``--forks`` (``asc.corpus.forks.fork_table``), labelled
    ``label``; None for a run without fork data. Re-read when the run gains a chunk."""
    from asc.corpus import has_forks

    return _fork_table(str(path), label, n_boot, seed, run_stamp(path)) if has_forks(path) else None
