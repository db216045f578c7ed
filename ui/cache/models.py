"""The two model slots of the app process and the results computed from the inspected model.

* the model users inspect (:data:`get_bundle`) is a ``st.cache_resource`` shared by every session, one model at
  a time (``max_entries=1``: choosing another model evicts and frees the previous one). The backend never
  mutates it and serializes forward passes with the bundle's lock, so concurrent sessions cannot corrupt each
  other's results. Background jobs load through their own slot (:data:`get_job_bundle`, also one model), so a job
  on another model never evicts the model a user is inspecting;
* Streamlit keys a cache by the arguments *as given*, so ``f(spec)`` and ``f(spec, False, "auto", "auto")`` would be
  two entries of a one-model slot, each evicting the other: a :class:`ModelSlot` always passes all four, whatever
  form its caller uses;
* explanations, per-layer explanations and completions are ``st.cache_data`` keyed by (model, text, settings):
  re-renders, node clicks and page switches that do not change the text or the model reuse them.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable

import streamlit as st

# asc.explain is called through the facade: `from asc import explain` names the module asc.explain to import-linter
import asc
from asc import (
    Completion,
    Explanation,
    LayerExplanation,
    ModelBundle,
    complete,
    explain_completion,
    explain_completion_layers,
    explain_layers,
    load_model,
    top_vocab,
)

log = logging.getLogger("asc.ui")


def _release(bundle: ModelBundle) -> None:
    log.info("releasing model %s", getattr(bundle, "name", bundle))
    gc.collect()


# two functions, not one decorated twice: Streamlit keys a cache by the function's name and source
@st.cache_resource(max_entries=1, show_spinner=False, on_release=_release)
def _inspected(spec: str, trust_remote_code: bool, device: str, dtype: str) -> ModelBundle:
    return load_model(spec, trust_remote_code=trust_remote_code, device=device, dtype=dtype)


@st.cache_resource(max_entries=1, show_spinner=False, on_release=_release)
def _for_jobs(spec: str, trust_remote_code: bool, device: str, dtype: str) -> ModelBundle:
    return load_model(spec, trust_remote_code=trust_remote_code, device=device, dtype=dtype)


class ModelSlot:
    """A one-model cache called in one form: ``slot(spec)``, ``slot(spec, False)`` and
    ``slot(spec, trust_remote_code=False, device="auto", dtype="auto")`` are the same entry. ``clear()`` empties it."""

    def __init__(self, cached: Callable[[str, bool, str, str], ModelBundle], doc: str) -> None:
        self._cached = cached
        self.__doc__ = doc

    def __call__(self, spec: str, trust_remote_code: bool = False, device: str = "auto",
                 dtype: str = "auto") -> ModelBundle:
        return self._cached(str(spec), bool(trust_remote_code), str(device), str(dtype))

    def clear(self) -> None:
        self._cached.clear()  # type: ignore[attr-defined]


get_bundle = ModelSlot(_inspected, "The model users inspect, on the sidebar's device and dtype "
                                   "(``auto``: see :func:`asc.device.resolve`).")
get_job_bundle = ModelSlot(_for_jobs, "The model of background jobs: a slot of its own, so jobs never evict the "
                                      "model users inspect; on the job's device and dtype (the sidebar's when a page "
                                      "submitted it).")
bundle_for = get_bundle  # the name pages used when get_bundle could be keyed two ways


@st.cache_data(max_entries=64, show_spinner=False)
def cached_explain(spec: str, trust_remote_code: bool, source: str, language: str, aggregate: str,
                   device: str = "auto", dtype: str = "auto") -> Explanation:
    return asc.explain(get_bundle(spec, trust_remote_code, device, dtype), source, language=language,
                       aggregate=aggregate)


def completion_key(comp: Completion) -> tuple[str, str, bytes, bytes, bytes, int]:
    """What identifies a completion in a cache key (its text, exact ids and their offsets, the prompt's length)."""
    return comp.prompt, comp.text, comp.ids.tobytes(), comp.start.tobytes(), comp.end.tobytes(), comp.n_prompt


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs={Completion: completion_key})
def cached_explain_layers(spec: str, trust_remote_code: bool, source: str, language: str, aggregate: str,
                          device: str = "auto", dtype: str = "auto",
                          completion: Completion | None = None) -> tuple[LayerExplanation, dict[int, str]]:
    """AsC-Eval at every layer (logit lens) keyed like :func:`cached_explain`, with the texts of every layer's
    top-k ids (:func:`asc.depth.top_vocab`), so moving the layer slider never touches the model. With a
    ``completion`` (whose text is ``source``) its exact ids are scored, as :func:`cached_complete` scores the
    output, so every layer has the completion's tokens. An :class:`~asc.errors.InputError` (an encoder, an
    architecture the lens does not know) is raised, not cached."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    if completion is not None:
        depth = explain_completion_layers(bundle, completion, language=language, aggregate=aggregate)
    else:
        depth = explain_layers(bundle, source, language=language, aggregate=aggregate)
    return depth, top_vocab(depth.lens, bundle.tokenizer)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_complete(spec: str, trust_remote_code: bool, prompt: str, max_new_tokens: int, temperature: float,
                    top_p: float, seed: int, language: str, aggregate: str, device: str = "auto",
                    dtype: str = "auto") -> tuple[Completion, Explanation]:
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    comp = complete(bundle, prompt, max_new_tokens, temperature=temperature, top_p=top_p, seed=seed,
                    language=language)
    return comp, explain_completion(bundle, comp, language=language, aggregate=aggregate)
