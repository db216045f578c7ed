"""Layer heatmaps: INSPECT-style linear probes on every layer (task x layer heatmaps, Table III).

Runs go to the app-wide background queue (they continue when the user leaves the page) and write
to ``<runs>/layers`` (``probes.inspect.runs``): a second run of the same task reuses cached features
and finished probes. Everything shown here is read back from that folder, including results
written by ``python -m probes inspect --out runs/layers``.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
from functools import partial

import streamlit as st

from asc import BUILTIN_CORPORA, AscError, JobKind, csv_text, default_model, embedded_names, layers_dir
from asc.viz import figure_html
from probes import (
    LAYER_TASK_INFO,
    LAYER_TASKS,
    best_layer_heatmap,
    confusion_figure,
    layer_curves,
    layer_heatmap,
    layer_job,
    normalized_heatmap,
)
from probes.inspect import MAX_TASK_FILE_BYTES, best_layer_table, normalized_table, results_table, store_upload
from ui import access, cache, gate, guards, jobs, widgets

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

st.title("Layer heatmaps")
st.caption("Which layers linearly encode which properties of code (INSPECT, Karmakar and Robbes). One forward "
           "pass per sample gives a summary vector for the embeddings and every layer; a logistic-regression "
           "probe per layer is trained on 60% of the samples, its L2 strength chosen on 20% and its accuracy "
           "reported on the last 20%. The control task (shuffled labels) and the majority class tell learned "
           "structure from probe capacity. The English MiniLM encoder plays BERT's role as the baseline.")

folder = layers_dir()
with st.expander("Run probes", expanded=not cache.probe_results(folder)):
    c1, c2 = st.columns([3, 2])
    models = widgets.model_picker(c1, "Models", embedded_names(), [default_model(), "minilm-l6"], "lp",
                             help="Decoders are summarised by their last token, encoders by [CLS] (change below).")
    tasks = c2.multiselect("Tasks", LAYER_TASKS, default=["KTX", "IDN", "LEN", "TYP", "CPX"], key="lp_tasks",
                           help="; ".join(f"{t}: {LAYER_TASK_INFO[t]}" for t in LAYER_TASKS))  # chips: names alone fit
    uploads = c2.file_uploader("INSPECT task files (split<TAB>label<TAB>text), .tsv or .txt",  # names: upload_name
                               accept_multiple_files=True, key="lp_files",
                               max_upload_size=MAX_TASK_FILE_BYTES // 2**20)
    d1, d2, d3, d4 = st.columns(4)
    corpus = d1.selectbox("Corpus", [*BUILTIN_CORPORA[::-1]], key="lp_corpus",
                          help="Python functions the tasks are built from (stdlib gives the most samples).")
    size = d2.selectbox("Samples per task", [1000, 10000], key="lp_size", help="balanced classes, 60/20/20 splits")
    pooling = d3.selectbox("Summary vector", ["auto", "last", "mean", "first"], key="lp_pooling",
                           help="auto: last token for decoders, first ([CLS]) for encoders")
    seed = d4.number_input("Seed", 0, 2**31 - 1, 0, key="lp_seed")
    if st.button("Start", type="primary", key="lp_start"):
        uploaded, refused = [], False  # parsed in memory, kept under a content hash: the browser's name is no path
        for up in uploads or []:
            try:
                name = guards.upload_name(up.name, guards.TASK_UPLOADS)
                uploaded.append(store_upload(up.getvalue(), name, folder / "uploads"))
            except AscError as err:
                st.error(widgets.plain(str(err)))  # the browser's file name is the visitor's text
                refused = True
        if not models or not (tasks or uploaded):
            st.error("Choose at least one model and one task (or upload a task file).")
        elif not refused and guards.allowed(models, None, widgets.trust_remote_code()):  # nothing is submitted after an error
            for model in models:
                call = layer_job(tasks, folder, corpus=corpus, size=int(size), seed=int(seed), extra=uploaded,
                                 roots=access.policy().corpus_roots,
                                 pooling=None if pooling == "auto" else pooling)
                jobs.submit(JobKind.LAYERS, model, f"layer probes: {', '.join(tasks + [t.name for t in uploaded])}",
                            folder, call)


jobs.live_job_panel(JobKind.LAYERS)  # this tab's jobs and the queue, refreshed

results = cache.probe_results(folder)
if not results:
    jobs.no_results(JobKind.LAYERS, "layers", "No probe results yet: run the small demo below, start a run above, "
                    "or from a shell: `.venv/bin/python -m probes inspect --model smollm2-135m --tasks KTX,IDN,LEN "
                    "--out runs/layers`.")
    st.stop()

poolings = sorted({r.pooling for r in results})
if len(poolings) > 1:
    keep = st.multiselect("Summary vectors", poolings, default=poolings, key="lp_show_pooling")
    results = [r for r in results if r.pooling in keep]
if not results:
    st.info("Choose at least one summary vector above.")
    st.stop()
table = results_table(results)
best = best_layer_table(results)
order: list[str] = [t for t in LAYER_TASKS if t in set(table["task"])] + sorted(set(table["task"]) - set(LAYER_TASKS))
model_names = list(dict.fromkeys(table["model"]))

heat_tab, best_tab, curve_tab, conf_tab = st.tabs(["Heatmaps", "Best layer & Table III", "Layer curves",
                                                   "Confusion matrix"])
with heat_tab:
    metric = st.radio("Value", ["accuracy", "selectivity", "control_accuracy"], horizontal=True, key="lp_metric",
                      format_func=lambda v: v.replace("_", " "),
                      help="selectivity = accuracy - accuracy of the same probe on shuffled labels")
    for model in model_names:
        fig = layer_heatmap(table, model, metric, order)
        st.plotly_chart(fig, key=f"heat_{model}")
        st.download_button(f"{model} heatmap (HTML)", partial(figure_html, fig), f"layers-{model}.html",
                           "text/html", key=f"heat_dl_{model}", on_click="ignore")
    tested = sorted(set(table["n_test"]))
    if metric != "selectivity":
        st.caption("References, right of each heatmap on the same scale: the majority class (always guessing the most "
                   "frequent training label) and the control task (the same probe on shuffled labels, mean over "
                   "layers). An accuracy near them is chance, not something the layer encodes. Every accuracy is "
                   f"measured on {' to '.join(str(n) for n in tested[::max(len(tested) - 1, 1)])} test samples per "
                   "task: with few, one sample moves it by several points.")
with best_tab:
    fig = best_layer_heatmap(best, order)
    st.plotly_chart(fig, key="best")
    base_default = model_names.index(jobs.DEMO_BASELINE) if jobs.DEMO_BASELINE in model_names else 0
    if st.session_state.get("lp_base_models") != model_names:  # another set of models (a run has finished since):
        st.session_state["lp_base_models"] = model_names  # the default baseline again, not the one kept from the
        st.session_state.pop("lp_base", None)  # smaller set (the first model then, whose Table III is empty)
    baseline = st.selectbox("Baseline model (0 in Table III)", model_names, index=base_default, key="lp_base")
    norm = normalized_table(best, baseline).reindex(columns=order)
    if len(model_names) < 2:
        st.info(f"Table III needs at least two models: run the baseline ({jobs.DEMO_BASELINE}) and a code model.")
    elif norm.isna().all().all():  # never an empty chart: say why there is nothing to draw
        st.info(f"Table III is empty with {widgets.plain(baseline)} as the baseline: no model beats it on any of "
                f"these tasks (0 is the baseline, 100 the task's best model: the baseline itself here). Choose a "
                f"weaker baseline, such as {jobs.DEMO_BASELINE}, the English encoder that plays BERT's role.")
    else:
        st.plotly_chart(normalized_heatmap(norm, baseline), key="norm")
    st.dataframe(best, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f")
                                for c in ("accuracy", "control_accuracy", "majority", "max_accuracy")})
    st.caption("accuracy: test accuracy at the layer chosen on dev (honest); max_accuracy: the best test accuracy "
               "over layers (optimistic, what papers usually print). KTX's test tokens are unseen in training "
               "and dev, so the two differ most there.")
    e1, e2, e3 = st.columns(3)
    e1.download_button("Per-layer results (CSV)", lambda: csv_text(table), "layer-probes.csv", "text/csv",
                       key="dl_table", on_click="ignore")
    e2.download_button("Best layers (CSV)", lambda: csv_text(best), "best-layers.csv", "text/csv",
                       key="dl_best", on_click="ignore")
    e3.download_button("Table III (CSV)", lambda: csv_text(norm, index=True), "normalized.csv", "text/csv", key="dl_norm",
                       on_click="ignore")
with curve_tab:
    k1, k2 = st.columns([2, 1])
    task = k1.selectbox("Task", order, key="lp_curve_task", format_func=lambda t: f"{t}: {LAYER_TASK_INFO.get(t, 'from file')}")
    axis = k2.radio("x axis", ["layer", "depth"], horizontal=True, key="lp_axis",
                    help="depth puts models with different numbers of layers on one 0-1 scale")
    fig = layer_curves(table, task, axis)
    st.plotly_chart(fig, key="curves")
    st.download_button("Curves (HTML)", lambda: figure_html(fig), f"curves-{task}.html", "text/html",
                       key="dl_curves", on_click="ignore")
with conf_tab:
    f1, f2, f3 = st.columns(3)
    cmodel = f1.selectbox("Model", model_names, key="lp_cm_model")
    ctask = f2.selectbox("Task", [t for t in order if any(r.model == cmodel and r.task == t for r in results)],
                         key="lp_cm_task")
    chosen = next(r for r in results if r.model == cmodel and r.task == ctask)
    layer = f3.number_input("Layer", 0, chosen.n_layers - 1, chosen.best_layer, key=f"lp_cm_layer_{cmodel}_{ctask}",
                            help="defaults to the layer chosen on dev")
    fig = confusion_figure(chosen, int(layer))
    st.plotly_chart(fig, key="confusion")
    st.caption(f"Majority-class baseline {chosen.majority:.3f}; control task at this layer "
               f"{chosen.control_accuracy[int(layer)]:.3f}; L2 strength {chosen.l2[int(layer)]:g}. "
               f"Provenance: {widgets.plain(chosen.provenance.get('corpus', '?'))} corpus, "
               f"{chosen.provenance.get('n_samples', '?')} "
               f"samples, task hash {chosen.task_digest}, seed {chosen.seed}.")
