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
from asc.why import Attribution, AttributionRequest, Patching, PatchingRequest
from ui.cache.models import get_bundle

Progress = Callable[[str, int, int], None]  # on_progress(stage, done, total)
ExplanationKey = tuple[str, bytes, bytes, str, str]  # explanation_key's


def explanation_key(ex: Explanation) -> ExplanationKey:
    """What identifies an explanation in a cache key: its text, exact ids and offsets, language and aggregation."""
    s = ex.scores
    return ex.source, s.ids.tobytes(), s.start.tobytes(), ex.tree.language, ex.aggregate


@st.cache_data(max_entries=32, show_spinner=False)
def cached_attribution(spec: str, trust_remote_code: bool, device: str, dtype: str, key: ExplanationKey, _ex: Explanation,
                       request: AttributionRequest, _on_progress: Progress | None = None) -> Attribution:
    """``request`` (:class:`asc.why.AttributionRequest`) run on ``_ex``, whose :func:`explanation_key` is ``key``.
    An :class:`~asc.errors.InputError` is raised, not cached."""
    return request.run(get_bundle(spec, trust_remote_code, device, dtype), _ex, _on_progress)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_patching(spec: str, trust_remote_code: bool, device: str, dtype: str, key: ExplanationKey, _ex: Explanation,
                    request: PatchingRequest, _on_progress: Progress | None = None) -> Patching:
    """``request`` (:class:`asc.why.PatchingRequest`) run on ``_ex`` over every layer. An
    :class:`~asc.errors.InputError` is raised, not cached."""
    return request.run(get_bundle(spec, trust_remote_code, device, dtype), _ex, _on_progress)
