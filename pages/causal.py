"""Causal effects (AsC-Causal, paper Table II): which syntax concepts drive the model's loss.

Widgets and calls into ``asc.causal`` only; estimates are cached by (results folder, settings).
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import pandas as pd
import streamlit as st

from asc import MIN_SNIPPETS, REFUTE_SAMPLE, JobKind, csv_text
from asc.viz import causal_graph_figure, figure_html, table2_views, treatment_scatter
from ui import cache, gate, guards, jobs
from ui.widgets import plain

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

st.title("Causal effects")
st.caption("Per concept: Pearson r with the confounders and the loss, and the average treatment effect "
           "p(Y | do(T)) of the snippet's AsC-Eval value on its cross-entropy, controlling for sequence size, AST "
           "levels, AST nodes and cyclomatic complexity (dowhy: backdoor, linear regression), checked by three "
           "refuters. A concept absent from a snippet is missing, not 0.")


jobs.live_job_panel(JobKind.EVAL)  # this tab's jobs and the queue, refreshed
folders, infos = guards.runs_or_stop("run a corpus (100+ snippets recommended) on the Global AsC-Eval page",
                                      demo="causal", note="The Global AsC-Eval page shows this run too; the "
                                      "estimates appear here when it finishes.")
chosen = st.multiselect("Results (one or two models)", folders, default=folders[:1], max_selections=2,
                        format_func=guards.titles(infos), key="causal_runs")
c1, c2, c3, c4 = st.columns(4)
min_n = c1.number_input("Minimum snippets per treatment", 5, 10_000, MIN_SNIPPETS, 5, key="causal_min",
                        help="a treatment is estimated only from at least this many snippets that have the concept")
sims = c2.number_input("Refuter simulations", 10, 500, 50, 10, key="causal_sims")
refute_n = c3.number_input("Refuter subsample", 100, 1_000_000, REFUTE_SAMPLE, 500, key="causal_refute_sample",
                           help="the refuters re-estimate each effect on a seeded subsample of this many snippets "
                                "when a concept has more; the effect itself always uses every snippet")
seed = c4.number_input("Seed", 0, 2**31 - 1, 0, key="causal_seed")
if not chosen:
    st.info("Choose one or two results above.")
    st.stop()

results = {infos[path].short: cache.causal_result(path, int(min_n), int(sims), int(seed), int(refute_n))
           for path in chosen}

st.subheader("Table II")
for label, result in results.items():  # how much of the table the run's size allows
    done = int((result.table["status"] == "estimated").sum()) if "status" in result.table else 0
    st.caption(f"{plain(label)}: {done} of {len(result.table)} treatments estimated from {len(result.snippets)} "
               f"snippets (each needs at least {int(min_n)} snippets with the concept); the one-click demo scores all "
               f"{jobs.DEMO_CAUSAL_LIMIT} HumanEval functions so that most categories have that many.")
if len(results) == 2:  # the two models' rows next to each other, marked A and B
    st.caption(f"A = {plain(list(results)[0])}, B = {plain(list(results)[1])}")  # run titles: typed by users
correlations, effects = table2_views({"AB"[k] if len(results) == 2 else label: result.table
                                      for k, (label, result) in enumerate(results.items())})
wide = {"treatment": st.column_config.TextColumn(width="medium")}
st.markdown("**Correlations** (Pearson r of the treatment with each confounder and with the loss)")
st.dataframe(correlations, hide_index=True, width="stretch", key="causal_r", column_config=wide)
st.markdown("**Average treatment effect on the loss, and the refuters' verdicts**")
st.dataframe(effects, hide_index=True, width="stretch", key="causal_ate", column_config=wide)
st.caption("r: Pearson correlation of the treatment with each confounder and with the loss; ATE: change of the "
           "loss (nats/token) when the concept's value goes from 0 to 1, with its 95% interval. Verdicts: placebo "
           "(treatment permuted) should give ~0; a random common cause and random 80% subsets should leave the "
           f"effect unchanged. For a concept in more than {REFUTE_SAMPLE:,} snippets the refuters check the effect "
           "re-estimated on a seeded subsample of that size (refute_n, refute_ate, in the CSV); the ATE uses every "
           f"snippet. A cell without a value says why: absent (no snippet has the concept), too few (fewer than "
           f"{int(min_n)} snippets have it: the minimum above), constant (one value in every snippet: nothing to "
           "compare), undefined (a correlation with a confounder that does not vary).")

g1, g2 = st.columns(2)
graph = causal_graph_figure()
g1.plotly_chart(graph, key="causal_graph")
label = g2.selectbox("Scatter of", list(results), key="causal_scatter_model")
shown = results[label]
treatment = g2.selectbox("Concept", shown.estimated, key="causal_treatment")
scatter = treatment_scatter(shown.snippets, treatment) if treatment in shown.snippets.columns else None
if scatter is not None:
    g2.plotly_chart(scatter, key="causal_scatter")

with st.expander("Export"):
    e1, e2 = st.columns(2)
    e1.download_button("Table II (CSV)", lambda: csv_text(pd.concat([r.table.assign(model=m) for m, r in results.items()])),
                       "asc-causal.csv", "text/csv", on_click="ignore", key="dl_causal")
    e1.download_button("Snippet table (CSV)", lambda: csv_text(pd.concat([r.snippets.assign(model=m) for m, r in results.items()]),
                                                                index=True),
                       "asc-causal-snippets.csv", "text/csv", on_click="ignore", key="dl_causal_snip")
    e2.download_button("Causal graph (HTML)", lambda: figure_html(graph), "causal-graph.html", "text/html",
                       on_click="ignore", key="dl_causal_graph")
    if scatter is not None:
        e2.download_button("Scatter (HTML)", lambda: figure_html(scatter), "causal-scatter.html", "text/html",
                           on_click="ignore", key="dl_causal_scatter")
