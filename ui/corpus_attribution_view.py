"""The Global page's corpus attribution section: the target x source category matrix and the shares by AST distance
of the chosen runs that hold an ``attribution/`` table (``python -m asc attribute-corpus RUN``, or this section's
*Compute corpus attribution* button, a job of the page's queue), and their exports.

The matrix (:func:`asc.why.matrix.run_matrix`) is cached per run folder, settings and the stamp of its attribution
parts, so a run the command is still filling shows its new parts at the next rerun. Runs without attribution get a
caption naming the command that makes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from asc import CorpusError, JobKind, csv_text, json_records
from asc.corpus import read_run_meta
from asc.viz import distance_curves, figure_html, matrix_heatmap, matrix_table, shown
from asc.why import (
    ATTRIBUTE_CORPUS_COMMAND,
    ATTRIBUTION_TABLE,
    DEFAULT_K,
    AttributionMatrix,
    attribution_job,
    attribution_settings,
    has_attribution,
    pending_parts,
    run_matrix,
)
from ui import guards, jobs
from ui.cache.stamp import change_stamp, run_stamp
from ui.widgets import placement, plain

MAX_UI_K = 64  # target nodes per snippet the page offers (the command line's --k has its own bound)

__all__ = ["attribution_section", "cached_matrix"]


@st.cache_data(max_entries=12, show_spinner=False)
def _matrix(path: str, label: str, n_boot: int, seed: int, stamp: str) -> AttributionMatrix:
    return run_matrix(path, n_boot=n_boot, seed=seed, label=label)


def cached_matrix(path: Path, label: str, n_boot: int, seed: int) -> AttributionMatrix | None:
    """The attribution matrix of the run at ``path`` labelled ``label``, None when it has no attribution; re-read
    when the run or its attribution gains a part."""
    if not has_attribution(path):
        return None
    stamp = run_stamp(path) + change_stamp((path / ATTRIBUTION_TABLE).glob("*"))
    return _matrix(str(path), label, n_boot, seed, stamp)


def _compute(chosen: list[Path], labels: list[str], expanded: bool) -> None:
    """A button that queues the attribution of a chosen run that lacks (part of) it, with the run's own model: the
    app's way to what ``attribute-corpus`` does (the job shows in the page's job panel, and the matrix below once a
    part is done; a stopped job keeps its finished snippets and resumes when started again)."""
    todo: dict[str, Path] = {}
    for path, label in zip(chosen, labels, strict=True):
        try:
            if pending_parts(path):
                todo[label] = Path(path)
        except CorpusError:
            continue  # a broken run says so in the rest of the page
    if not todo:
        return
    with st.expander("Compute corpus attribution", expanded=expanded):
        c1, c2 = st.columns([3, 1])
        name = c1.selectbox("Run", list(todo), key="attr_compute_run")
        path = todo[name]
        earlier = attribution_settings(path)  # a table begun with other settings is continued with those
        k = c2.number_input("Targets per snippet (k)", 1, MAX_UI_K, int(earlier["k"]) if earlier else DEFAULT_K,
                            key="attr_compute_k", disabled=earlier is not None,
                            help="target nodes per snippet, sampled by category; a table begun keeps its k")
        st.caption(f"{len(pending_parts(path))} part(s) of this run still to attribute, about k gradient passes per "
                   "snippet with the run's own model; stop it in the job panel, start it again to resume.")
        if st.button("Compute corpus attribution", key="attr_compute_start", disabled=jobs.running(JobKind.EVAL)):
            try:
                model = read_run_meta(path).model_name
            except (CorpusError, KeyError, TypeError) as err:
                st.error(plain(str(err)))
                return
            if guards.allowed([model]):
                jobs.job_queue().submit_call(JobKind.EVAL, model, f"corpus attribution of {name}", path,
                                             attribution_job(path, k=int(k)), owner=jobs.owner(), **placement())
                st.rerun()


def attribution_section(chosen: list[Path], labels: list[str], n_boot: int, seed: int) -> None:
    """The section (module doc) for the chosen runs, labelled ``labels``."""
    st.subheader("Corpus attribution (why this token?)")
    found: dict[str, AttributionMatrix] = {}
    for path, label in zip(chosen, labels, strict=True):
        try:
            matrix = cached_matrix(Path(path), label, n_boot, seed)
        except CorpusError as err:
            st.error(str(err))
            continue
        if matrix is not None:
            found[label] = matrix
    _compute(chosen, labels, expanded=not found)
    if not found:
        st.caption(f"None of the chosen runs has corpus attribution: *Compute corpus attribution* above (or "
                   f"`{ATTRIBUTE_CORPUS_COMMAND}`) computes gradient x input for {DEFAULT_K} target nodes per snippet "
                   "(k), sampled by category, and stores where each prediction's attribution lies per source category "
                   "and AST distance (about k gradient passes per snippet).")
        return
    name = st.selectbox("Attribution of", list(found), key="attr_run") if len(found) > 1 else next(iter(found))
    matrix = found[name]
    heat, curves = matrix_heatmap(matrix), distance_curves(matrix)
    st.plotly_chart(heat, key="attr_matrix")
    st.plotly_chart(curves, key="attr_distance")
    table, distance = matrix_table(matrix), matrix.distance_frame()  # absent cells: missing, not 0
    st.dataframe(shown(shown(table, ["share", "ci_low", "ci_high"]), ["signed"], digits=4), hide_index=True,
                 width="stretch", key="attr_table")
    st.caption(f"Gradient x input of {int(matrix.n_targets.sum())} target nodes in {matrix.n_snippets_all} snippets "
               f"(k = {matrix.k} per snippet, stratified by category; a node's target is the mean log-probability of "
               "its predicted tokens). A cell: the mean over the row's targets of the share of the absolute "
               "attribution on the prompt tokens of the column's category (categories overlap where nodes nest, so a "
               f"row need not add up to 1); {round(100 * matrix.ci)}% intervals from {matrix.n_boot} resamples of "
               f"snippets (seed {matrix.seed}). Distance: edges on the tree path from a token's node to the target. "
               "'absent': no token of the column's category in the prompts of the row's targets.")
    with st.expander("Export the attribution matrix"):
        e1, e2, e3 = st.columns(3)
        e1.download_button("Matrix (CSV)", lambda: csv_text(table), "attribution-matrix.csv", "text/csv",
                           on_click="ignore", key="dl_attr_csv")
        e1.download_button("Distance shares (CSV)", lambda: csv_text(distance), "attribution-distance.csv",
                           "text/csv", on_click="ignore", key="dl_attr_dist_csv")
        e2.download_button("Matrix and distances (JSON)",
                           lambda: json.dumps({"matrix": json_records(table), "distance": json_records(distance)},
                                              indent=1, allow_nan=False),
                           "attribution-matrix.json", "application/json", on_click="ignore", key="dl_attr_json")
        e3.download_button("Matrix heatmap (HTML)", lambda: figure_html(heat), "attribution-matrix.html", "text/html",
                           on_click="ignore", key="dl_attr_heat")
        e3.download_button("Distance chart (HTML)", lambda: figure_html(curves), "attribution-distance.html",
                           "text/html", on_click="ignore", key="dl_attr_curves")
