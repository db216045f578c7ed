"""Cached models and results, shared by every session of the app process.

Caching rules (checked on Streamlit 1.67):

* the model is a ``st.cache_resource`` shared by every session, one model at a time
  (``max_entries=1``: choosing another model evicts and frees the previous one). The backend never
  mutates it and serializes forward passes with the bundle's lock, so concurrent sessions cannot
  corrupt each other's results. Background jobs load through their own slot (:func:`get_job_bundle`,
  also one model), so a job on another model never evicts the model a user is inspecting;
* the causal results store is a dict shared by every session: inserts and evictions hold a lock;
* results are ``st.cache_data`` keyed by (model, text, settings): re-renders, node clicks and page
  switches that do not change the text or the model reuse them without touching the model;
* corpus summaries read run digests (:func:`cached_digest`): one per folder, shared, extended by the parts a
  growing run adds (never re-read whole); Table I is cached by (digests' parts, settings);
* the causal page's tables (snippets, concepts) are keyed by their path and a stamp that changes when a part
  is added; the glueCode and BLANCA pages' task sets, predictions and scores likewise (a stamp over their files),
  so a job that finishes (or writes one more task) shows at the next rerun.
"""

from __future__ import annotations

import gc
import logging
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from asc import Explanation, explain, load_model
from asc.branch import Branch, branch, explore_forks
from asc.concepts import load_categories
from asc.corpus.digest import RunDigest
from asc.corpus.listing import run_title
from asc.corpus.runs import RunData, load_digest, load_run
from asc.corpus.summary import summary_table
from asc.depth import LayerExplanation, explain_layers, top_vocab
from asc.errors import AscError, CorpusError
from asc.forks import ForkPoints
from asc.generate import Completion, complete, explain_completion
from asc.humaneval_check import TestRun
from asc.models import ModelBundle

log = logging.getLogger("asc.ui")
CAUSAL_KEEP = 16  # causal tables kept (oldest dropped first): a long-running app must not grow without bound
_causal_lock = threading.Lock()  # guards the shared causal store (computing runs outside it)
_digest_lock = threading.Lock()  # guards the shared digest store


def _release(bundle: ModelBundle) -> None:
    log.info("releasing model %s", getattr(bundle, "name", bundle))
    gc.collect()


@st.cache_resource(max_entries=1, show_spinner=False, on_release=_release)
def get_bundle(spec: str, trust_remote_code: bool = False, device: str = "auto", dtype: str = "auto") -> ModelBundle:
    """The model users inspect, on the sidebar's device and dtype (``auto``: see :func:`asc.device.resolve`)."""
    return load_model(spec, trust_remote_code=trust_remote_code, device=device, dtype=dtype)


def bundle_for(spec: str, trust_remote_code: bool = False, device: str = "auto", dtype: str = "auto") -> ModelBundle:
    """:func:`get_bundle`, called in one form for the default placement: Streamlit keys its cache by the
    arguments as given, so ``get_bundle(spec, trust)`` and ``get_bundle(spec, trust, "auto", "auto")`` would
    otherwise be two entries of a one-model slot, each evicting the other."""
    if (device, dtype) == ("auto", "auto"):
        return get_bundle(spec, trust_remote_code)
    return get_bundle(spec, trust_remote_code, device, dtype)


@st.cache_resource(max_entries=1, show_spinner=False, on_release=_release)
def get_job_bundle(spec: str, trust_remote_code: bool = False, device: str = "auto",
                   dtype: str = "auto") -> ModelBundle:
    """The model of background jobs: a slot of its own, so jobs never evict the model users inspect; on the
    job's device and dtype (the sidebar's when a page submitted it)."""
    return load_model(spec, trust_remote_code=trust_remote_code, device=device, dtype=dtype)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_explain(spec: str, trust_remote_code: bool, source: str, language: str, aggregate: str,
                   device: str = "auto", dtype: str = "auto") -> Explanation:
    return explain(bundle_for(spec, trust_remote_code, device, dtype), source, language=language, aggregate=aggregate)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_explain_layers(spec: str, trust_remote_code: bool, source: str, language: str, aggregate: str,
                          device: str = "auto", dtype: str = "auto") -> tuple[LayerExplanation, dict[int, str]]:
    """AsC-Eval at every layer (logit lens) keyed like :func:`cached_explain`, with the texts of every layer's
    top-k ids (:func:`asc.depth.top_vocab`), so moving the layer slider never touches the model. An
    :class:`~asc.errors.InputError` (an encoder, an architecture the lens does not know) is raised, not cached."""
    bundle = bundle_for(spec, trust_remote_code, device, dtype)
    depth = explain_layers(bundle, source, language=language, aggregate=aggregate)
    return depth, top_vocab(depth.lens, bundle.tokenizer)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_complete(spec: str, trust_remote_code: bool, prompt: str, max_new_tokens: int, temperature: float,
                    top_p: float, seed: int, language: str, aggregate: str, device: str = "auto",
                    dtype: str = "auto") -> tuple[Completion, Explanation]:
    bundle = bundle_for(spec, trust_remote_code, device, dtype)
    comp = complete(bundle, prompt, max_new_tokens, temperature=temperature, top_p=top_p, seed=seed,
                    language=language)
    return comp, explain_completion(bundle, comp, language=language, aggregate=aggregate)


def _stamp(path: Path) -> float:
    """Changes whenever a run gains a chunk (so cached tables of a growing run refresh)."""
    try:
        parts = list((path / "snippets").glob("part-*.parquet"))
        return max([p.stat().st_mtime for p in parts] + [(path / "meta.json").stat().st_mtime])
    except OSError:  # removed meanwhile: loading says so
        return 0.0


@st.cache_resource(max_entries=12, show_spinner=False)
def _run(path: str, stamp: float) -> RunData:
    # cache_resource, not cache_data: large frames are shared read-only instead of unpickled per rerun
    return load_run(path, tables=("snippets", "concepts"))


def cached_run(path: Path) -> RunData:
    """The snippets and concepts tables of the run at ``path`` (AsC-Causal's input), read once per chunk it
    gains. A broken run (:class:`CorpusError`) is shown as an error naming the folder and the fix, and the
    page stops: never a traceback."""
    try:
        return _run(str(path), _stamp(path))
    except CorpusError as err:
        st.error(str(err))
        st.stop()


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
    with _digest_lock:
        store[key] = digest
        while len(store) > 16:  # dicts keep insertion order: drop the oldest
            store.pop(next(iter(store)))
    return digest


def _digest_key(digest: RunDigest) -> tuple:
    return str(digest.path), digest.parts


@st.cache_data(max_entries=32, show_spinner=False, hash_funcs={RunDigest: _digest_key})
def cached_summary(digests: list[RunDigest], categories: tuple[str, ...], n_boot: int, seed: int,
                   method: str = "snippet") -> Any:
    """Table I (long) of ``digests`` (from :func:`cached_digest`), computed once per state of their parts."""
    return summary_table(digests, categories, n_boot=n_boot, seed=seed, method=method)


@st.cache_resource(show_spinner=False)
def _causal_store() -> dict:
    return {}


def causal_result(path: Path, min_snippets: int, simulations: int, seed: int,
                  refute_sample: int | None = None) -> tuple[Any, Any]:
    """AsC-Causal of a run, cached by (results folder state, settings); shows progress while computing.
    ``refute_sample``: snippets the refuters use per concept (None: :data:`asc.causal.REFUTE_SAMPLE`)."""
    from asc.causal import REFUTE_SAMPLE, causal_table, snippet_table, treatments_of

    refute_sample = REFUTE_SAMPLE if refute_sample is None else refute_sample
    key = (str(path), _stamp(path), min_snippets, simulations, seed, refute_sample)
    store = _causal_store()
    with _causal_lock:
        found = store.get(key)
    if found is None:  # two sessions may compute the same key at once; both get a correct result
        run = cached_run(path)
        language = str(run.snippets["language"].iloc[0]) if len(run.snippets) else "python"
        table = snippet_table(run)
        treatments = treatments_of(load_categories(language))
        bar = st.progress(0.0, text=f"Estimating effects for {run_title(path)}")
        result = causal_table(table, treatments, min_snippets=min_snippets, seed=seed, simulations=simulations,
                              refute_sample=refute_sample, on_progress=lambda d, t: bar.progress(d / t, text=f"{d}/{t} treatments"))
        bar.empty()
        found = (table, result)
        with _causal_lock:
            store[key] = found
            while len(store) > CAUSAL_KEEP:  # dicts keep insertion order: drop the oldest
                store.pop(next(iter(store)))
    return found


@st.cache_resource(max_entries=8, show_spinner=False)
def _probe_results(path: str, stamp: float) -> list:
    from probes.inspect.layers import load_results

    return load_results(path)


def probe_results(path: Path) -> list:
    """Every probe result under ``path``, re-read whenever a result file is added or rewritten."""
    stamps = [p.stat().st_mtime for p in path.glob("*/*.json")] if path.is_dir() else []
    return _probe_results(str(path), max(stamps, default=0.0) + len(stamps))


@st.cache_resource(max_entries=8, show_spinner=False)
def _attention_run(path: str, stamp: float) -> Any:
    from probes.codesyntax.attention import load_attention_run

    return load_attention_run(path)


def attention_run(path: Path) -> Any:
    return _attention_run(str(path), (path / "meta.json").stat().st_mtime)


@st.cache_data(max_entries=16, show_spinner=False)
def snippet_attention(spec: str, code: str) -> tuple:
    """Word-level attention of one snippet ``(layers, heads, words, words)`` and its labels, kept server-side:
    pages send only the chosen head's matrix to the browser."""
    from probes.codesyntax.attention import snippet_attention as attend
    from probes.codesyntax.relations import extract

    sample = extract(code)
    return sample, attend(get_bundle(spec), sample)


def _stamps(paths: list[Path]) -> float:
    """A number that changes when a file of ``paths`` is added, removed or rewritten."""
    return sum(p.stat().st_mtime_ns for p in paths) / 1e9 + len(paths)


@st.cache_resource(max_entries=4, show_spinner=False)
def _gluecode_predictions(path: str, task_set: str, stamp: float) -> list:
    from probes.gluecode.runs import load_predictions

    return load_predictions(path, task_set)


def gluecode_predictions(path: Path, task_set: str) -> list:
    """Every glueCode prediction of one task set under ``path`` (all models, tasks, levels), re-read when one
    of its prediction files changes (a run in progress rewrites its file after every chunk)."""
    files = [p for p in path.glob(f"*/{task_set}/*-*.jsonl") if p.parts[-3] != "tasks"] if path.is_dir() else []
    return _gluecode_predictions(str(path), task_set, _stamps(files))


@st.cache_resource(max_entries=2, show_spinner=False)
def _gluecode_items(path: str, stamp: float) -> dict:
    from probes.gluecode.runs import load_task_sets

    return load_task_sets(path)


def gluecode_items(path: Path) -> dict:
    """The glueCode task sets under ``path``: ``{set name: {task: items}}``, re-read when a task file changes."""
    files = list((path / "tasks").glob("*/*.jsonl")) if path.is_dir() else []
    return _gluecode_items(str(path), _stamps(files))


def _set_files(path: Path) -> list[Path]:
    tasks = path / "tasks"
    return [*tasks.glob("*/*.jsonl"), *tasks.glob("*/skipped.json")] if tasks.is_dir() else []


@st.cache_resource(max_entries=2, show_spinner=False)
def _blanca_sets(path: str, stamp: float) -> tuple[dict, dict[str, str]]:
    from probes.blanca.build import load_task_set

    sets, broken = {}, {}
    for folder in sorted({p.parent for p in _set_files(Path(path))}):
        try:
            sets[folder.name] = load_task_set(folder)
        except (AscError, OSError, ValueError) as err:  # a task file that does not validate: named, with its line, instead of a traceback
            broken[folder.name] = str(err)
    return sets, broken


def blanca_task_sets(path: Path) -> tuple[dict, dict[str, str]]:
    """The BLANCA task sets under ``path``: ``({set name: BlancaTaskSet}, {set name: why it cannot be read})``,
    re-read when a task file or a set's ``skipped.json`` is added or rewritten (a build in progress)."""
    return _blanca_sets(str(path), _stamps(_set_files(path)))


def _score_files(path: Path, set_name: str) -> list[Path]:
    from probes.blanca.runs import score_folder

    folder = score_folder(path, set_name)
    return [*folder.glob("*/*.parquet"), *folder.glob("*/model.json")] if folder.is_dir() else []


@st.cache_data(max_entries=4, show_spinner=False)
def _blanca_scores(path: str, set_name: str, stamp: float) -> pd.DataFrame:
    from probes.blanca.runs import load_scores

    return load_scores(path, set_name)


def blanca_scores(path: Path, set_name: str) -> pd.DataFrame:
    """Every model's BLANCA scores on task set ``set_name`` under ``path`` (``probes.blanca.runs.load_scores``),
    re-read when a model's task is scored (a run writes one Parquet file per task)."""
    return _blanca_scores(str(path), set_name, _stamps(_score_files(path, set_name)))


@st.cache_data(max_entries=4, show_spinner=False)
def _blanca_finetuned(path: str, set_name: str, stamp: float) -> list[str]:
    from probes.blanca.runs import finetuned_labels

    return sorted(finetuned_labels(path, set_name))


def blanca_finetuned(path: Path, set_name: str) -> list[str]:
    """The labels of the fine-tuned models scored on ``set_name`` (``probes.blanca.runs.finetuned_labels``): they
    trained on the train split, so the "all" split leaves them out."""
    return _blanca_finetuned(str(path), set_name, _stamps(_score_files(path, set_name)))


@st.cache_data(max_entries=16, show_spinner=False)
def _blanca_summary(path: str, set_name: str, split: str, targets: tuple, leave_out: tuple, seed: int,
                    stamp: float) -> pd.DataFrame:
    from probes.blanca.evaluate import summarize

    scores = _blanca_scores(path, set_name, stamp)
    return summarize(scores[~scores["model"].isin(leave_out)], split, targets=dict(targets), seed=seed)


def blanca_summary(path: Path, set_name: str, split: str, targets: dict[str, str], leave_out: tuple[str, ...] = (),
                   seed: int = 0) -> pd.DataFrame:
    """The BLANCA summary table (``probes.blanca.evaluate.summarize``) of the scores of ``set_name`` on ``split``,
    without the models in ``leave_out``; computed once per (scores on disk, settings)."""
    stamp = _stamps(_score_files(path, set_name))
    return _blanca_summary(str(path), set_name, split, tuple(sorted(targets.items())), tuple(leave_out), seed, stamp)


@st.cache_data(max_entries=12, show_spinner=False)
def _layer_summary(path: str, label: str, stamp: float) -> pd.DataFrame:
    from asc.corpus.layers import layer_summary

    return layer_summary(path, label)


def layer_summary(path: Path, label: str) -> pd.DataFrame | None:
    """The category x layer medians of a run made with ``--layers`` (``asc.corpus.layers.layer_summary``),
    labelled ``label``; None for a run without per-layer values. Re-read when the run gains a chunk."""
    from asc.corpus.layers import has_layers

    return _layer_summary(str(path), label, _stamp(path)) if has_layers(path) else None


def _completion_key(comp: Completion) -> tuple:
    return comp.prompt, comp.text, comp.ids.tobytes(), comp.start.tobytes(), comp.end.tobytes(), comp.n_prompt


def _forks_key(forks: ForkPoints) -> tuple:
    return forks.is_fork.tobytes(), forks.margin.tobytes(), forks.entropy.tobytes(), forks.settings


@st.cache_data(max_entries=64, show_spinner=False, hash_funcs={Completion: _completion_key})
def cached_branch(spec: str, trust_remote_code: bool, trunk: Completion, at: int, choose: int | None,
                  token: str | None, max_new_tokens: int, temperature: float, top_p: float, seed: int, language: str,
                  aggregate: str, device: str = "auto", dtype: str = "auto") -> tuple[Branch, Explanation]:
    """:func:`asc.branch.branch` of ``trunk`` at token ``at`` (the K-th choice or a typed text) and the branch's
    AsC-Eval on its exact ids, keyed by the trunk's ids and the settings: the same branch asked again (another
    tab, a rerun) never runs the model."""
    bundle = bundle_for(spec, trust_remote_code, device, dtype)
    br = branch(bundle, trunk, at, choose=choose, token=token, max_new_tokens=max_new_tokens, temperature=temperature,
                top_p=top_p, seed=seed, language=language)
    return br, explain_completion(bundle, br.completion, language=language, aggregate=aggregate)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs={Completion: _completion_key, ForkPoints: _forks_key})
def cached_explore(spec: str, trust_remote_code: bool, trunk: Completion, forks: ForkPoints, n: int,
                   max_new_tokens: int, temperature: float, top_p: float, seed: int, language: str, aggregate: str,
                   device: str = "auto", dtype: str = "auto") -> list[tuple[Branch, Explanation]]:
    """:func:`asc.branch.explore_forks` (the ``n`` most uncertain fork points of the generated part, batched) with
    each branch's AsC-Eval."""
    bundle = bundle_for(spec, trust_remote_code, device, dtype)
    branches = explore_forks(bundle, trunk, forks, n, max_new_tokens, temperature=temperature, top_p=top_p, seed=seed,
                             language=language, generated_only=True)
    return [(br, explain_completion(bundle, br.completion, language=language, aggregate=aggregate)) for br in branches]


@st.cache_data(max_entries=12, show_spinner=False)
def _fork_table(path: str, label: str, n_boot: int, seed: int, stamp: float) -> pd.DataFrame:
    from asc.corpus.forks import fork_table

    return fork_table(path, n_boot=n_boot, seed=seed, label=label)


def fork_table(path: Path, label: str, n_boot: int, seed: int) -> pd.DataFrame | None:
    """The fork rates per category of a run made with ``--forks`` (``asc.corpus.forks.fork_table``), labelled
    ``label``; None for a run without fork data. Re-read when the run gains a chunk."""
    from asc.corpus.forks import has_forks

    return _fork_table(str(path), label, n_boot, seed, _stamp(path)) if has_forks(path) else None


@st.cache_data(max_entries=64, show_spinner="Running HumanEval's tests...")
def cached_tests(text: str) -> TestRun:
    """HumanEval's tests on ``text`` (``asc.humaneval_check.run_tests``), once per text."""
    from asc.humaneval_check import run_tests

    return run_tests(text)
