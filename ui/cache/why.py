"""Cached attributions and activation patchings of the inspector's "Why this token?" view.

An attribution is ``st.cache_data`` keyed by the model, the placement, the snippet's exact token ids and the
request (target token or node, method, steps, contrast): a rerun, a node click or a page switch that asks the same
again never runs the model (a patching likewise, keyed by the corruption's spec, the target and the spans). The
explanation itself is passed unhashed (``_ex``): its text and ids are the key, and so is the progress callback
(``_on_progress``, :mod:`ui.progress`), which the work calls from its thread.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from asc import Explanation
from asc.why.attribute import Attribution, attribute
from asc.why.corrupt import corrupt
from asc.why.patching import Patching, patch
from asc.why.targets import node_target
from ui.cache.models import get_bundle

Progress = Callable[[str, int, int], None]  # on_progress(stage, done, total)


def explanation_key(ex: Explanation) -> tuple:
    """What identifies an explanation in a cache key: its text, exact ids and offsets, language and aggregation."""
    s = ex.scores
    return ex.source, s.ids.tobytes(), s.start.tobytes(), ex.tree.language, ex.aggregate


@st.cache_data(max_entries=32, show_spinner=False)
def cached_attribution(spec: str, trust_remote_code: bool, device: str, dtype: str, key: tuple, _ex: Explanation,
                       index: int | None, node: int | None, method: str, steps: int | str,
                       contrast: str | None, _on_progress: Progress | None = None) -> Attribution:
    """:func:`asc.why.attribute.attribute` of token ``index`` (or of ``node``'s mean, when given) of ``_ex``, whose
    :func:`explanation_key` is ``key``. An :class:`~asc.errors.InputError` is raised, not cached."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    target = node_target(bundle, _ex, node) if node is not None else int(index or 0)
    return attribute(bundle, _ex.source, target, method, steps, contrast=contrast, language=_ex.tree.language,
                     explanation=_ex, on_progress=_on_progress)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_patching(spec: str, trust_remote_code: bool, device: str, dtype: str, key: tuple, _ex: Explanation,
                    index: int, corruption: str, spans: str, _on_progress: Progress | None = None) -> Patching:
    """:func:`asc.why.patching.patch` of ``_ex``'s source corrupted by ``corruption`` (a ``--corrupt`` spec), target
    token ``index``, over every layer. An :class:`~asc.errors.InputError` is raised, not cached."""
    bundle = get_bundle(spec, trust_remote_code, device, dtype)
    language = _ex.tree.language
    return patch(bundle, corrupt(_ex.source, corruption, language, bundle.tokenizer), index, spans=spans,
                 language=language, on_progress=_on_progress)
