"""Attention maps: attention heads scored against syntactic relations (CodeSyntax, Tables 3 and 6).

Runs go to the app-wide background queue and write to ``<runs>/attention`` (``probes.codesyntax.attention``),
as ``python -m probes attention --out runs/attention`` does. For one snippet the page recomputes the
word-level attention server-side and sends only the chosen head's matrix to the browser.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import streamlit as st

from asc import BUILTIN_CORPORA, AscError, JobKind, attention_dir, csv_text, default_model, embedded_names
from asc.viz import figure_html
from probes import attention_map, edge_example_html, head_heatmap
from probes.codesyntax import METRICS, attention_job, attention_runs, relation_table
from ui import access, cache, charts, gate, guards, jobs, widgets

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

st.title("Attention maps")
st.caption("Do attention heads follow the syntax of code better than trivial baselines? (CodeSyntax, Shen et al.) "
           "Every relation edge (e.g. If: if → test) is scored per head: a hit at k when the gold word is among "
           "the k words attended most. The best head per relation is chosen on half of the snippets (val) and "
           "reported on the other half (test), next to the offset and keyword baselines on the same edges.")

root = attention_dir()
with st.expander("Score a model's heads", expanded=not attention_runs(root)):
    c1, c2, c3 = st.columns([3, 2, 1])
    models = widgets.model_picker(c1, "Models", embedded_names(), [default_model()], "at")
    paths_ok = access.policy().corpus_paths_allowed()  # shared mode: only under ASC_DATA_ROOTS, if any
    corpus = c2.selectbox("Corpus", [*BUILTIN_CORPORA, *(["a folder, .py file or .jsonl path"] if paths_ok else [])],
                          key="at_corpus")
    if corpus not in BUILTIN_CORPORA:
        corpus = c2.text_input("Corpus path", key="at_corpus_path").strip()
    limit = c3.number_input("Functions", 10, 5000, 200, step=10, key="at_limit",
                            help="functions of at most 40 lines. Attention takes layers x heads x n^2 numbers per "
                                 "snippet (SmolLM2 at 512 tokens: 283 MB), so longer snippets are skipped")
    if st.button("Start", type="primary", key="at_start"):
        if not models or not corpus:
            st.error("Choose at least one model and a corpus.")
        # the page shows the snippets a run read: a corpus outside the allowed folders is never submitted
        elif guards.allowed(models, corpus, widgets.trust_remote_code()):
            for model in models:
                jobs.submit(JobKind.ATTENTION, model, f"attention maps: {corpus} ({int(limit)})", root,
                            attention_job(corpus, root, spec=model, limit=int(limit), roots=access.policy().corpus_roots))


jobs.live_job_panel(JobKind.ATTENTION)  # this tab's jobs and the queue, refreshed

folders = attention_runs(root)
if not folders:
    jobs.no_results(JobKind.ATTENTION, "attention", "No attention scores yet: run the small demo below, start a run "
                    "above, or from a shell: `.venv/bin/python -m probes attention --model smollm2-135m --corpus "
                    "humaneval --out runs/attention`.")
    st.stop()
runs = {f: cache.attention_run(f) for f in folders}
folder = st.selectbox("Model run", folders, key="at_run", format_func=lambda f: (
    f"{runs[f].model} · {runs[f].meta.get('corpus', '?')} · {runs[f].meta['n_scored']} snippets · {f.name}"))
run = runs[folder]
direction = run.meta["direction"]
st.info(f"{widgets.plain(run.model)} is {'a decoder' if run.scores.causal else 'an encoder'}: edges are read **{direction}**. "
        + ("A causal model's earlier word cannot attend to a later one, so the dependent's row is scored for "
           "attention back to the head." if run.scores.causal else "The head word's row is scored, as in the paper."))
m1, m2, m3 = st.columns(3)
metric = m1.radio("Metric", METRICS, horizontal=True, key="at_metric",
                  help="first / last: the dependent's first or last word must be hit; any: any of its words")
k = m2.select_slider("Top-k", options=list(run.scores.ks), value=1, key="at_k")
min_edges = m3.number_input("Relations with at least this many edges per split", 1, 1000, 5, key="at_min")

table = relation_table(run, metric, int(k), int(min_edges))
if table.empty:
    st.info("No relation has that many edges in both splits: lower the minimum or score more functions.")
    st.stop()
score = table.iloc[-1]
s1, s2, s3 = st.columns(3)
s1.metric("Model score (mean over relations, test)", f"{score['model']:.3f}")
s2.metric("Combined baseline", f"{score['combined']:.3f}")
s3.metric("Difference", f"{score['difference']:+.3f}")
fmt = st.column_config.NumberColumn(format="%.3f")
st.dataframe(table, hide_index=True, width="stretch",
             column_config={c: fmt for c in ("val_score", "model", "offset", "keyword", "combined", "difference")})
st.caption("Table 3/6 of the paper: best head per relation (layer, head chosen on val), its test score (model), "
           "the offset and keyword baselines with predictors chosen greedily on val, combined = their maximum.")
e1, e2 = st.columns(2)
e1.download_button("Relation table (CSV)", lambda: csv_text(table), f"heads-{run.model}.csv", "text/csv",
                   key="at_dl_table", on_click="ignore")
e2.download_button("Baselines, every k (CSV)", lambda: csv_text(run.baselines),
                   f"baselines-{run.model}.csv", "text/csv", key="at_dl_base", on_click="ignore")

relations = [r for r in table["relation"] if r != "mean"]
relation = st.selectbox("Relation", relations, key="at_relation")
row = table[table["relation"] == relation].iloc[0]
best = (int(row["layer"]), int(row["head"]))
heat = head_heatmap(run.scores.layer_head(relation, metric, int(k), "test"), relation, best,
                    f"test hit rate @ {k}")
st.plotly_chart(heat, key="at_heat")
st.download_button("Head heatmap (HTML)", lambda: figure_html(heat), "heads.html", "text/html", key="at_dl_heat",
                   on_click="ignore")

st.subheader("One snippet, one head")
with_edges = [i for i, s in enumerate(run.samples) if s.relns.get(relation)]
if not with_edges:
    st.info("No scored snippet has this relation.")
    st.stop()
p1, p2, p3 = st.columns([2, 1, 1])
pick = p1.selectbox("Snippet", with_edges, key=f"at_snip_{relation}", format_func=lambda i: (
    f"#{i} ({run.splits[i]}) " + run.samples[i].code.splitlines()[0][:60]))
layer = p2.number_input("Layer", 0, run.scores.hits["test"].shape[3] - 1, best[0], key=f"at_layer_{relation}")
head = p3.number_input("Head", 0, run.scores.hits["test"].shape[4] - 1, best[1], key=f"at_head_{relation}")
sample = run.samples[pick]
try:
    with st.spinner("Computing attention for this snippet..."):
        # the sidebar's hardware, as the inspector loads this model: one cache key for the model in both
        _, word_attn = cache.snippet_attention(run.meta.get("spec", run.model), sample.code,
                                               **widgets.placement())
except AscError as err:
    st.error(str(err))
    st.stop()
matrix = word_attn[int(layer), int(head)]  # only this head's matrix goes to the browser
edges = list(sample.relns[relation])
fig = attention_map(matrix, sample.tokens, edges, run.scores.causal,
                    f"{run.model} layer {layer} head {head}: {relation} (circles: gold edges)",
                    max_width=charts.MAIN_PX)
charts.fit_square(fig, charts.MAIN_PX)  # drawn for the panel already: a no-op
charts.panel_chart(st, fig, "at_map", "treebox_attention", charts.MAIN_PX)  # at most the panel's width
edge_i = st.selectbox("Edge", range(len(edges)), key=f"at_edge_{relation}_{pick}", format_func=lambda i: (
    f"{sample.tokens[edges[i][0]]!r} → {' '.join(sample.tokens[edges[i][1]:edges[i][2] + 1])[:50]!r}"))
h, s, _ = edges[edge_i]
source_row = s if run.scores.causal else h
attended = int(matrix[source_row].argmax())
st.html(edge_example_html(sample.code, sample.spans, edges[edge_i], attended, run.scores.causal))
