"""Global AsC-Eval: corpus runs per model, Table I, Fig. 3 and Fig. 6 of the paper, model differences.

Runs started here go to the app-wide background queue (they continue when the user leaves the
page); results are the run folders under ``runs/`` (or ``$ASC_RUNS_DIR``), including those written
by ``python -m asc eval``.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import json

import pandas as pd
import streamlit as st

from asc import (
    BUILTIN_CORPORA,
    CONFIDENCE_LINE,
    GLOBAL,
    Job,
    JobKind,
    csv_text,
    default_model,
    embedded_names,
    json_records,
    runs_dir,
)
from asc.corpus import (
    METHODS,
    box_table,
    crossing_table,
    difference_table,
    run_folders,
    run_labels,
    summary_categories,
    type_table,
    wide_table,
)
from asc.viz import (
    NEUTRAL,
    category_bars,
    concept_treemap,
    depth_curves,
    difference_bars,
    figure_html,
    fork_bars,
    layer_heatmap,
    shown,
    styled_table,
    value_distribution,
)
from ui import access, cache, charts, gate, guards, jobs, widgets
from ui.corpus_attribution_view import attribution_section

gate.enter()  # first: the password, the token, the study's pages (ui.gate)


def _layer_categories(table: pd.DataFrame) -> list[str]:
    names = sorted(c for c in table["category"].unique() if c != GLOBAL)
    return [GLOBAL, *names]


st.title("Global AsC-Eval")
st.caption("AsC-Eval over whole corpora: the bootstrapped median of node values per syntax category (paper "
           "Table I, Fig. 3) and the distribution of node values (Fig. 6), for one or several models.")

queue = jobs.job_queue()
with st.expander("Run a corpus evaluation", expanded=not run_folders(runs_dir())):
    c1, c2, c3 = st.columns([3, 2, 1])
    decoders = embedded_names("decoder")
    models = widgets.model_picker(c1, "Models", decoders, [default_model()], "run")
    paths_ok = access.policy().corpus_paths_allowed()  # shared mode: only under ASC_DATA_ROOTS, if any
    corpus = c2.selectbox("Corpus", [*BUILTIN_CORPORA, *(["a folder, .py/.java or .jsonl path"] if paths_ok else [])],
                          key="run_corpus")
    if corpus not in BUILTIN_CORPORA:
        corpus = c2.text_input("Corpus path", key="run_corpus_path").strip()
    limit = c3.number_input("Limit (0 = all)", 0, 100_000, 50, step=10, key="run_limit")
    if st.button("Start", type="primary", key="run_start"):
        if not models or not corpus:
            st.error("Choose at least one model and a corpus.")
        elif guards.allowed(models, corpus, widgets.trust_remote_code()):  # nothing is submitted after an error
            for model in models:
                queue.submit(model, corpus, int(limit) or None, runs_dir(), owner=jobs.owner(),
                             trust_remote_code=widgets.trust_remote_code(), **widgets.placement())


def describe(job: Job) -> str:
    """A corpus run (or a run's corpus attribution) in the panel: model, corpus, limit, status, and while running
    snippets done and seconds."""
    label = (f"#{job.id} {job.model}: {job.corpus}: {job.status}" if job.call is not None  # corpus attribution
             else f"#{job.id} {job.model} on {job.corpus} ({job.limit or 'all'}): {job.status}")
    if job.status == "running" and job.total:
        label += f", {job.done}/{job.total} snippets, {job.elapsed:.0f} s"
    return label


jobs.live_job_panel(JobKind.EVAL, describe)  # corpus runs (probes: their page)

folders, infos = guards.runs_or_stop("start a run above", demo="global")
latest: dict[tuple[str, str], object] = {}
for f in folders:  # the newest run per (model, corpus) is preselected
    latest.setdefault((infos[f].model, infos[f].corpus), f)
chosen = st.multiselect("Results to show", folders, default=list(latest.values())[:4], format_func=guards.titles(infos),
                        key="results")
if not chosen:
    st.info("Choose one or more results above.")
    st.stop()
s1, s2, s3, s4 = st.columns(4)
threshold = s1.number_input("Threshold", 0.0, 1.0, CONFIDENCE_LINE, 0.05, key="threshold",
                            help="the paper's 'acceptable confidence' line")
n_boot = s2.number_input("Bootstrap resamples", 100, 5000, 500, 100, key="n_boot")
seed = s3.number_input("Seed", 0, 2**31 - 1, 0, key="boot_seed")
method = s4.selectbox("Resample", METHODS, key="boot_method",
                      format_func={"snippet": "snippets (default)", "node": "nodes (paper)"}.__getitem__,
                      help="snippets: nodes of one snippet are not independent, so whole snippets are resampled; "
                           "nodes: the paper's Table I, every category's nodes resampled on their own")

with st.spinner("Reading the runs..."):
    runs = [cache.cached_digest(f) for f in chosen]
labels = run_labels(runs)
categories = summary_categories(runs)
with st.spinner("Bootstrapping..."):
    summary = cache.cached_summary(runs, categories, int(n_boot), int(seed), method)
wide = wide_table(summary)

st.subheader("AsC-Eval per model (Table I)")
table1 = styled_table(wide, threshold)
st.dataframe(table1, hide_index=True, width="stretch", key="table1", height=charts.table_height(len(table1.data)))
st.caption(f"A row per category, a column per run. Bootstrapped median of node values ({n_boot} resamples of "
           f"{method}s, seed {seed}; medians within 0.5e-4 of the exact ones); red below {threshold:g}, blue at or "
           "above, paler within 0.1 of it; 'absent': no node of that category in the corpus.")
with st.expander("Intervals and counts (long table)"):
    st.dataframe(shown(summary, ["median", "ci_low", "ci_high", "boot_std"]), hide_index=True, width="stretch",
                 key="intervals")
bars = category_bars(summary, threshold)
st.plotly_chart(bars, key="bars")

d1, d2 = st.columns(2)
dist_cat = d1.selectbox("Distribution of", [GLOBAL, *categories], key="dist_cat")
boxes = box_table(runs, dist_cat)
dist = value_distribution(boxes, dist_cat)
d1.plotly_chart(dist, key="dist")
types = [type_table(run, label) for run, label in zip(runs, labels)]
types_all = pd.concat(types, ignore_index=True)
type_cat = d2.selectbox("Node types behind", categories, key="type_cat")
behind = types_all[types_all["category"] == type_cat].drop(columns=["category"] + (["model"] if len(runs) == 1 else []))
st.dataframe(behind, hide_index=True, width="stretch", key="types_behind",  # the main column's width: half is too narrow
             column_config={"median": st.column_config.NumberColumn(format="%.3f", width=60),
                            "mean": st.column_config.NumberColumn(format="%.3f", width=60),
                            "nodes": st.column_config.NumberColumn(width=55),
                            "snippets": st.column_config.NumberColumn(width=65),
                            "share": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f",
                                                                     width=80, color=NEUTRAL)})  # no quantity's color
treemap = concept_treemap(types_all)
st.plotly_chart(treemap, key="treemap")

diff_cat = diff_type = diff_fig = None
if len(runs) >= 2:
    st.subheader("Difference between two models")
    a_col, b_col = st.columns(2)
    a = a_col.selectbox("Model A", range(len(runs)), format_func=lambda i: labels[i], key="diff_a")
    b = b_col.selectbox("Model B", range(len(runs)), index=1, format_func=lambda i: labels[i], key="diff_b")
    diff_cat = difference_table(runs[a], runs[b], "category")
    diff_type = difference_table(runs[a], runs[b], "type")
    diff_fig = difference_bars(diff_type, label="type")
    st.dataframe(shown(diff_cat.drop(columns=["model_a", "model_b"]),  # the models: chosen above
                       ["median_a", "median_b", "difference", "nodes_a", "nodes_b"]),
                 hide_index=True, width="stretch", key="diff_table")  # the main column's width: half is too narrow
    st.caption("_a: model A, _b: model B; 'absent': no node of that category in that model's corpus.")
    st.plotly_chart(diff_fig, key="diff_bars")

st.subheader("Per layer (logit lens)")
layer_tables = [t for t in (cache.layer_summary(f, label) for f, label in zip(chosen, labels)) if t is not None]
layers_all = heat = curves = None
if not layer_tables:
    st.caption("None of the chosen runs has per-layer values: `python -m asc eval --model M --corpus C --out F "
               "--per-layer` computes AsC-Eval from every layer's prediction (logit lens), at a few times the cost.")
else:
    layers_all = pd.concat(layer_tables, ignore_index=True)
    l1, l2 = st.columns(2)
    heat_model = l1.selectbox("Heatmap of", list(layers_all["model"].unique()), key="layer_model")
    heat = layer_heatmap(layers_all, heat_model, threshold)
    l1.plotly_chart(heat, key="layer_heat")
    curve_cat = l2.selectbox("Across depth", _layer_categories(layers_all), key="layer_cat")
    curves = depth_curves(layers_all, curve_cat, threshold)
    l2.plotly_chart(curves, key="layer_curves")
    crossings = shown(crossing_table(layers_all, threshold), ["crossing"], digits=0)
    crossings = shown(shown(crossings, ["crossing_depth"], digits=2), ["output"])
    st.dataframe(crossings, hide_index=True, width="stretch", key="crossings")
    st.caption(f"Median node value per syntax category at every layer (layer 0 = embeddings), read through the "
               f"model's own final norm and head; the ring marks the first layer at or above {threshold:g} "
               "('absent': no layer reaches it). "
               "Relative depth = layer / number of layers, so models of different depth share an axis.")

st.subheader("Fork points (where models hesitate)")
fork_tables = [t for t in (cache.fork_table(f, label, int(n_boot), int(seed)) for f, label in zip(chosen, labels))
               if t is not None]
forks_all = fork_fig = None
if not fork_tables:
    st.caption("None of the chosen runs has fork data: `python -m asc eval --model M --corpus C --out F --forks` "
               "also marks the tokens where the model hesitates (top-2 margin below 0.1 or entropy above 2 nats; "
               "`--fork-margin`, `--fork-entropy`), at no extra model cost.")
else:
    forks_all = pd.concat(fork_tables, ignore_index=True)
    fork_fig = fork_bars(forks_all)
    st.plotly_chart(fork_fig, key="fork_bars")
    st.dataframe(shown(forks_all, ["rate", "ci_low", "ci_high", "boot_std"]), hide_index=True, width="stretch",
                 key="fork_table")
    st.caption(f"Share of each category's tokens that are fork points (the model's top-2 margin is small or its "
               f"entropy high: the thresholds each run was made with), pooled over the corpus; 95% intervals from "
               f"{n_boot} resamples of snippets (seed {seed}).")

attribution_section(chosen, labels, int(n_boot), int(seed))  # runs with an attribution/ table (attribute-corpus)

with st.expander("Export"):
    e1, e2, e3 = st.columns(3)
    e1.download_button("Table I (CSV)", lambda: csv_text(wide), "asc-eval-table.csv", "text/csv",
                       on_click="ignore", key="dl_wide")
    e1.download_button("Intervals (CSV)", lambda: csv_text(summary), "asc-eval-intervals.csv", "text/csv",
                       on_click="ignore", key="dl_long")
    e1.download_button("Intervals (JSON)", lambda: json.dumps(json_records(summary), indent=1, allow_nan=False),
                       "asc-eval-intervals.json", "application/json", on_click="ignore", key="dl_long_json")
    e2.download_button("Node types (CSV)", lambda: csv_text(types_all), "asc-eval-node-types.csv",
                       "text/csv", on_click="ignore", key="dl_types")
    e2.download_button("Distribution (CSV)", lambda: csv_text(boxes), "asc-eval-distribution.csv", "text/csv",
                       on_click="ignore", key="dl_boxes")
    if diff_type is not None:
        e2.download_button("Differences (CSV)", lambda: csv_text(pd.concat([diff_cat, diff_type])),
                           "asc-eval-differences.csv", "text/csv", on_click="ignore", key="dl_diff")
    e3.download_button("Category bars (HTML)", lambda: figure_html(bars), "asc-eval-bars.html", "text/html",
                       on_click="ignore", key="dl_bars")
    e3.download_button("Distribution (HTML)", lambda: figure_html(dist), "asc-eval-distribution.html", "text/html",
                       on_click="ignore", key="dl_dist")
    e3.download_button("Treemap (HTML)", lambda: figure_html(treemap), "asc-eval-treemap.html", "text/html",
                       on_click="ignore", key="dl_treemap")
    if layers_all is not None and heat is not None and curves is not None:
        e1.download_button("Per layer (CSV)", lambda: csv_text(layers_all), "asc-eval-layers.csv", "text/csv",
                           on_click="ignore", key="dl_layers")
        e3.download_button("Layer heatmap (HTML)", lambda: figure_html(heat), "asc-eval-layer-heatmap.html",
                           "text/html", on_click="ignore", key="dl_layer_heat")
        e3.download_button("Depth curves (HTML)", lambda: figure_html(curves), "asc-eval-depth-curves.html",
                           "text/html", on_click="ignore", key="dl_layer_curves")
    if forks_all is not None and fork_fig is not None:
        e1.download_button("Fork rates (CSV)", lambda: csv_text(forks_all), "asc-eval-forks.csv", "text/csv",
                           on_click="ignore", key="dl_forks")
        e3.download_button("Fork bars (HTML)", lambda: figure_html(fork_fig), "asc-eval-fork-bars.html",
                           "text/html", on_click="ignore", key="dl_fork_bars")
