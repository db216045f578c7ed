"""The inspector's *Features* view: the SAE latents that fire on the selected node (issue 47).

Pick an SAE folder among those under ``<runs>/sae`` that read the inspected model (:func:`probes.sae.check_sae_for`
on each: another model, width or layer count is left out, and said so); for the selected node the view shows its
strongest latents (:func:`probes.sae.features`, one call, cached by :func:`ui.cache.sae.node_features`), each with
its label when the folder holds an enrichment, its activation on every one of the node's tokens, and a button that
opens the latent's dashboard on the *Syntax features* page.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from asc import AscError, Explanation
from probes.sae import SaeMismatchError, check_sae_for, sae_folders
from ui import jobs
from ui.cache import get_bundle
from ui.cache.sae import cached_sae, folder_stamp, node_features, sae_report
from ui.cache.why import explanation_key
from ui.results import InspectorResult
from ui.widgets import plain

SAE_PAGE = "pages/sae.py"


def matching(result: InspectorResult, folders: list[Path]) -> tuple[list[Path], int]:
    """The folders whose SAE reads the inspected model, and how many were left out (another model or layer, or
    unreadable)."""
    s = result.settings
    bundle = get_bundle(result.model, s.trust_remote_code, s.device, s.dtype)
    kept = []
    for folder in folders:
        try:
            check_sae_for(cached_sae(folder), bundle)
        except (SaeMismatchError, AscError):
            continue
        kept.append(folder)
    return kept, len(folders) - len(kept)


def _labels(folder: Path) -> dict[int, str]:
    """Every latent's label from the folder's enrichment, or {} when it holds no activations."""
    try:
        report = sae_report(folder)
    except AscError:
        return {}
    return {i: report.enrichment.label(i) for i in range(report.enrichment.n_latents)}


def section(result: InspectorResult, ex: Explanation, selected: int | None) -> None:
    """The *Features* view (module doc) for node ``selected`` of ``ex``."""
    st.markdown("#### Features: the SAE latents on this node")
    root = jobs.sae_root()
    found = sae_folders(root)
    if not found:
        st.caption("No SAE yet: the Syntax features page trains a small one (its demo), or `python -m probes sae "
                   "train --out runs/sae/NAME` does.")
        return
    folders, left_out = matching(result, found)
    if not folders:
        st.caption(f"None of the {len(found)} SAE folders under {plain(root)} reads {plain(result.model)} (their "
                   "cfg.json names another model, width or layer).")
        return
    names = [str(f.relative_to(root)) for f in folders]
    name = st.selectbox("SAE folder", names, key="features_sae",
                        help=f"{left_out} folder(s) of other models left out" if left_out else None)
    if selected is None:
        st.caption("Select a node (click it in a tree) to see its latents.")
        return
    folder = root / name
    s = result.settings
    try:
        feats = node_features(result.model, s.trust_remote_code, s.device, s.dtype, explanation_key(ex), ex,
                              str(folder), folder_stamp(folder))
    except AscError as err:
        st.error(plain(str(err)))
        return
    pairs = feats.of(selected)
    if not pairs:
        st.caption("No latent fires on this node's tokens.")
        return
    tokens = ex.alignment.tokens_of(selected)
    labels = _labels(folder)
    texts = [f"{int(t)}: {ex.scores.text[int(t)]!r}" for t in tokens]
    rows = []
    for latent, top in pairs:
        on = feats.on_tokens(latent, tokens)
        rows.append({"latent": latent, "label": labels.get(latent, "(no enrichment saved)"), "max": round(top, 4),
                     **{t: round(float(v), 4) for t, v in zip(texts, on, strict=True)}})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="features_table")
    st.caption(f"Layer {feats.layer}: the node's strongest latents (largest activation on any of its tokens) and their "
               "activation on each token (0: not active).")
    cols = st.columns(len(pairs))
    for col, (latent, _) in zip(cols, pairs, strict=True):
        if col.button(f"Latent {latent}", key=f"features_open_{latent}", help="open its dashboard"):
            st.switch_page(SAE_PAGE, query_params={"sae": name, "latent": str(latent)})
