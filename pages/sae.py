"""Syntax features: the latents of a sparse autoencoder on the residual stream, read through the AST (issue 47).

Lists the SAE folders under ``<runs>/sae`` (``ui.jobs.sae_root``; ``python -m probes sae train --out runs/sae/NAME``
writes one, so does the demo) and shows, for the one picked: its quality when an eval was saved (variance explained,
L0, dead latents, CE loss recovered), the syntax category x latent heatmap, each category's latents ranked, and one
latent's dashboard (top contexts with the node highlighted, histogram, categories and node types, label); everything
exports. The inspector's *Features* view opens a latent here (``?sae=NAME&latent=I``).
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import json

import pandas as pd
import streamlit as st

from asc import AscError, JobKind, csv_text
from asc.viz import figure_html, standalone_html
from probes.sae import HEATMAP_VALUES, activation_histogram, card_html, category_heatmap, sae_folders, saved_activations
from ui import charts, gate, jobs, widgets
from ui.cache.sae import sae_report

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

st.title("Syntax features")
st.caption("Which latents of a sparse autoencoder (SAE) on a code model's residual stream stand for which syntax "
           "concepts. Every token of a corpus is bound to its AST node and category (AsC-Eval's binding); a latent "
           "fires on a token where its activation is above 0. Precision: of the tokens it fires on, the share in the "
           "category; recall (firing rate): of the category's tokens, the share it fires on; F1 ranks them. Labels "
           "are derived from the syntax, not written by a language model.")

root = jobs.sae_root()
jobs.live_job_panel(JobKind.SAE)
folders = sae_folders(root)
if not folders:
    jobs.no_results(JobKind.SAE, "sae", "No SAE yet: run the small demo below, or from a shell: `.venv/bin/python -m "
                    "probes sae train --model smollm2-135m --layer 9 --tokens 200000 --width 1024 --k 32 --out "
                    "runs/sae/mine`, then `python -m probes sae eval runs/sae/mine` and `python -m probes sae enrich "
                    "runs/sae/mine`.")
    st.stop()

names = [str(f.relative_to(root)) for f in folders]
asked, asked_latent = st.query_params.get("sae"), st.query_params.get("latent")
if asked in names and st.session_state.get("sae_asked") != (asked, asked_latent):  # opened from the inspector
    st.session_state["sae_asked"] = (asked, asked_latent)
    st.session_state["sae_pick"] = asked
    if asked_latent is not None and asked_latent.isdigit():
        st.session_state[f"sae_latent_{asked}"] = int(asked_latent)
c1, c2 = st.columns([3, 2])
name = c1.selectbox("SAE folder", names, key="sae_pick", help=f"SAE folders (SAELens's layout) under {root}")
folder = root / name
stem = name.replace("/", "-")  # a file name for the exports
saved = saved_activations(folder)
which = 0
if len(saved) > 1:
    which = c2.selectbox("Corpus", range(len(saved)), key=f"sae_corpus_{name}", format_func=lambda i: (
        f"{saved[i][0]['corpus']} (limit {saved[i][0]['limit']}, {saved[i][0]['max_tokens']} tokens each)"))
try:
    report = sae_report(folder, int(which))
except AscError as err:
    st.error(widgets.plain(str(err)))
    st.stop()
ench, cfg = report.enrichment, report.cfg
c2.caption(f"{widgets.plain(cfg.model_name or '?')} · layer {cfg.layer} · {cfg.d_sae:,} latents · "
           f"{cfg.architecture}{f' k={cfg.k}' if cfg.k else ''} · {ench.n_tokens:,} tokens of {ench.n_snippets} "
           f"snippets of {widgets.plain(report.corpus.get('corpus', '?'))}")

st.subheader("Quality")
q = report.quality
if q:
    m = st.columns(4)
    for col, (label, key, fmt) in zip(m, (("Variance explained", "variance_explained", "{:.3f}"), ("L0", "l0", "{:.1f}"),
                                          ("Dead latents", "dead_latents", "{:,}"),
                                          ("CE loss recovered", "ce_recovered", "{:.3f}")), strict=True):
        value = q.get(key)
        col.metric(label, "-" if value is None else fmt.format(value))
    st.caption(f"Measured on {q.get('n_tokens', 0):,} tokens of {widgets.plain(q.get('corpus', '?'))}. CE loss "
               "recovered: 1 when splicing the SAE in keeps the model's loss, 0 when it is as bad as zeroing the layer.")
else:
    st.info(f"No eval saved for this SAE: `python -m probes sae eval {folder}` measures it (and saves quality.json).")

st.subheader("Categories x latents")
h1, h2 = st.columns([3, 1])
value = h1.radio("Color by", list(HEATMAP_VALUES), horizontal=True, key="sae_value")
per = h2.number_input("Latents per category", 1, 10, 3, key="sae_per")
heat = category_heatmap(ench, value, int(per), width=charts.MAIN_PX)
st.plotly_chart(heat, key="sae_heatmap", width=charts.MAIN_PX)

st.subheader("Ranked latents per category")
category = st.selectbox("Category", ench.categories, key="sae_category")
ranked = pd.DataFrame([{**r, "label": ench.label(r["latent"])} for r in ench.ranked(category, 20)],
                      columns=["latent", "f1", "precision", "recall", "label"])
if ranked.empty:
    st.info(f"No latent fires on {widgets.plain(category)} tokens of this corpus.")
else:
    st.dataframe(ranked, hide_index=True, width="stretch", key="sae_ranked",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("f1", "precision", "recall")})

st.subheader("Latent dashboard")
first = int(ranked["latent"].iloc[0]) if not ranked.empty else int(ench.fires.argmax())
latent = st.number_input("Latent", 0, cfg.d_sae - 1, first, key=f"sae_latent_{name}")
card = report.card(int(latent))
st.html(card_html(card, report.acts.sources))
d1, d2 = st.columns(2)
hist = activation_histogram(card, width=charts.panel_px(2))
d1.plotly_chart(hist, key="sae_hist", width=charts.panel_px(2))
types = pd.DataFrame(card["node_types"][:12], columns=["name", "precision", "firing_rate", "tokens"])
d2.markdown("**Node types it fires on**")
d2.dataframe(types, hide_index=True, width="stretch", key="sae_types", height=charts.table_height(len(types)))

with st.expander("Export"):
    e = st.columns(5)
    e[0].download_button("Enrichment (JSON)", lambda: json.dumps(report.to_dict(), indent=1), f"{stem}-enrichment.json",
                         "application/json", key="sae_dl_json", on_click="ignore")
    e[1].download_button("Enrichment (CSV)", lambda: csv_text(ench.to_frame()), f"{stem}-enrichment.csv", "text/csv",
                         key="sae_dl_csv", on_click="ignore")
    e[2].download_button("Heatmap (HTML)", lambda: figure_html(heat), f"{stem}-heatmap.html", "text/html",
                         key="sae_dl_heat", on_click="ignore")
    e[3].download_button("Dashboard (JSON)", lambda: json.dumps(card, indent=1), f"{stem}-latent-{latent}.json",
                         "application/json", key="sae_dl_card", on_click="ignore")
    e[4].download_button("Dashboard (HTML)", lambda: standalone_html(card_html(card, report.acts.sources)),
                         f"{stem}-latent-{latent}.html", "text/html", key="sae_dl_card_html", on_click="ignore")
