"""Cached SAE folders for the *Syntax features* page and the inspector's *Features* view.

* :func:`sae_report`: a folder's SAE with its saved quality, activations and enrichment (:func:`probes.sae.open_report`),
  a ``st.cache_resource`` keyed by the folder's :func:`~ui.cache.stamp.change_stamp` (a job that rewrites it shows at
  the next rerun);
* :func:`cached_sae`: the SAE alone (the inspector computes its latents on the inspected snippet);
* :func:`node_features`: :func:`probes.sae.features` of an explanation, ``st.cache_data`` keyed by the model, the
  explanation's ids (:func:`ui.cache.why.explanation_key`) and the SAE folder's stamp.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from asc import Explanation
from probes.sae import QUALITY_FILE, NodeFeatures, SaeReport, SparseAutoencoder, features, load_sae, open_report
from ui.cache.models import get_bundle
from ui.cache.stamp import change_stamp
from ui.cache.why import ExplanationKey


def folder_stamp(folder: Path) -> str:
    """The stamp of an SAE folder: its config, weights, quality and saved activations."""
    return change_stamp([folder / "cfg.json", folder / "sae_weights.safetensors", folder / QUALITY_FILE,
                         *(folder / "activations").glob("*.npz")])


@st.cache_resource(max_entries=8, show_spinner=False)
def _report(folder: str, which: int, stamp: str) -> SaeReport:
    return open_report(folder, which)


def sae_report(folder: Path, which: int = 0) -> SaeReport:
    """The report of ``folder`` (its ``which``-th saved activations); an :class:`~asc.errors.InputError` is raised,
    not cached."""
    return _report(str(folder), which, folder_stamp(folder))


@st.cache_resource(max_entries=8, show_spinner=False)
def _sae(folder: str, stamp: str) -> SparseAutoencoder:
    return load_sae(folder)


def cached_sae(folder: Path) -> SparseAutoencoder:
    """The SAE of ``folder``, read once per change of its files."""
    return _sae(str(folder), folder_stamp(folder))


@st.cache_data(max_entries=16, show_spinner=False)
def node_features(spec: str, trust_remote_code: bool, device: str, dtype: str, key: ExplanationKey, _ex: Explanation,
                  folder: str, stamp: str) -> NodeFeatures:
    """The strongest latents of every node of ``_ex`` (whose :func:`~ui.cache.why.explanation_key` is ``key``) for
    the SAE of ``folder`` (at ``stamp``); an :class:`~asc.errors.InputError` is raised, not cached."""
    return features(cached_sae(Path(folder)), _ex, get_bundle(spec, trust_remote_code, device, dtype))
