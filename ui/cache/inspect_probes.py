"""Cached INSPECT and CodeSyntax results: layer-probe results, attention runs and one snippet's attention.

Probe results and attention runs are ``st.cache_resource`` keyed by the :func:`~ui.cache.stamp.change_stamp` of
their files, so a probe job that writes another result shows at the next rerun; a snippet's word-level attention
is computed on the inspected model's slot and kept server-side (pages send only the chosen head's matrix).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from ui.cache.models import get_bundle
from ui.cache.stamp import change_stamp

if TYPE_CHECKING:
    import numpy as np

    from probes import ProbeResult
    from probes.codesyntax import Sample


@st.cache_resource(max_entries=8, show_spinner=False)
def _probe_results(path: str, stamp: str) -> list[ProbeResult]:
    from probes.inspect import load_results

    return load_results(path)


def probe_results(path: Path) -> list[ProbeResult]:
    """Every probe result under ``path``, re-read whenever a result file is added or rewritten."""
    return _probe_results(str(path), change_stamp(path.glob("*/*.json")))


@st.cache_resource(max_entries=8, show_spinner=False)
def _attention_run(path: str, stamp: str) -> Any:
    from probes.codesyntax import load_attention_run

    return load_attention_run(path)


def attention_run(path: Path) -> Any:
    """The CodeSyntax attention run at ``path``, re-read when its ``meta.json`` is rewritten."""
    return _attention_run(str(path), change_stamp([path / "meta.json"]))


@st.cache_data(max_entries=16, show_spinner=False)
def snippet_attention(spec: str, code: str, trust_remote_code: bool = False, device: str = "auto",
                      dtype: str = "auto") -> tuple[Sample, np.ndarray]:
    """Word-level attention of one snippet ``(layers, heads, words, words)`` and its labels, kept server-side:
    pages send only the chosen head's matrix to the browser. The model comes from the inspected model's slot,
    called in its one form (never a second key that would evict the model users inspect)."""
    from probes.codesyntax import extract
    from probes.codesyntax import snippet_attention as attend

    sample = extract(code)
    return sample, attend(get_bundle(spec, trust_remote_code, device, dtype), sample)
