"""Compare: two or three models on one snippet, on the same AST, and their difference node by node.

Every model's tokens are bound to the nodes of one tree (the tree depends on the text, not on the
tokenizer), so the comparison is tokenizer-independent.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import json
from functools import partial

import streamlit as st

from asc import AscError, SnippetComparison, compare_snippet, csv_text, default_model, embedded_names, json_records
from asc.viz import (
    TREE_VIEWS,
    difference_tree,
    disagreement_table,
    figure_html,
    node_values,
    shown,
    summary_table,
    tree_figure,
)
from ui import cache, charts, gate, guards, widgets

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

settings = widgets.current_settings()
st.title("Compare models on one snippet")
st.caption("Each model's AsC-Eval on the same syntax tree, and model A minus model B per node on a diverging "
           "scale of its own (purple: A more confident, orange: B more confident; red to blue is confidence).")

examples = widgets.examples()
if "cmp_code" not in st.session_state:
    st.session_state["cmp_example"] = "count_chars.py"
    st.session_state["cmp_code"] = examples["count_chars.py"]

left, right = st.columns([3, 2])
with right:
    names = embedded_names("decoder")
    default = [n for n in (default_model(), "gemma3-270m" if default_model() != "gemma3-270m" else "smollm2-135m")
               if n in names]
    chosen = widgets.model_picker(st, "Models (2 or 3)", names, default, "cmp", max_selections=3)[:3]
    run = st.button("Compare", type="primary", width="stretch", key="cmp_run")
with left:
    st.selectbox("Example", list(examples), key="cmp_example",
                 on_change=lambda: st.session_state.update(cmp_code=examples[st.session_state["cmp_example"]]))
    code = st.text_area("Code", key="cmp_code", height=220)

if run:
    try:
        if len(chosen) < 2:
            raise ValueError("Choose at least two models.")
        if not code.strip():
            raise ValueError("The editor is empty: pick an example or paste some code.")
        guards.check_length(code)
        guards.check_access(chosen, trust_remote_code=settings.trust_remote_code)  # before any model loads
        explanations = []
        for model in chosen:
            with st.spinner(f"{model}: loading and scoring..."):
                cache.bundle_for(model, settings.trust_remote_code, settings.device, settings.dtype)
                explanations.append(cache.cached_explain(model, settings.trust_remote_code, code, settings.language,
                                                      settings.aggregate, settings.device, settings.dtype))
        st.session_state["comparison"] = compare_snippet(explanations, chosen)
    except (AscError, ValueError) as err:
        st.error(str(err))  # the previous comparison stays below
    except Exception as err:  # a model that cannot be loaded: say so, keep the page alive
        st.error(f"{type(err).__name__}: {err}")

found = st.session_state.get("comparison")
if not isinstance(found, SnippetComparison):
    st.info("Choose two or three models and press **Compare**.")
    st.stop()
comp = found

exs = comp.explanations
table = summary_table(comp)  # a row per measure, a column per model
st.dataframe(shown(table, comp.models), hide_index=True, width="stretch", key="cmp_summary",
             height=charts.table_height(len(table)))  # every row in view, no inner scroll
st.caption(f"{len(table)} rows: cross-entropy, perplexity, tokens and {len(table) - 3} categories. "
           f"{exs[0].tree.n_nodes} AST nodes shared by all models; tokens differ per tokenizer; 'absent': no "
           "node of that category in the snippet.")

view = st.radio("Tree", TREE_VIEWS, horizontal=True, key="cmp_view",
                format_func={"partial": "Partial AST (named nodes)", "complete": "Complete AST"}.__getitem__)
trees = []  # one above the other, each the main column's width: side by side, no tree fits half of it
for model, ex in zip(comp.models, exs):
    fig = tree_figure(ex, view, collapse_unary=True, title=f"{model}: loss {ex.loss:.3f}", max_width=charts.MAIN_PX)
    trees.append(fig)
    charts.panel_chart(st, fig, f"cmptree_{len(trees)}", f"cmpbox_{len(trees)}", charts.MAIN_PX,
                      config={"displaylogo": False})

st.subheader("Difference")
a_col, b_col = st.columns(2)
a = a_col.selectbox("Model A", range(len(exs)), format_func=lambda i: comp.models[i], key="cmp_a")
b = b_col.selectbox("Model B", range(len(exs)), index=1, format_func=lambda i: comp.models[i], key="cmp_b")
diff_fig = difference_tree(comp, a, b, view, max_width=charts.MAIN_PX)  # its scale fitted to the largest difference
charts.panel_chart(st, diff_fig, "cmptree_diff", "cmpbox_diff", charts.MAIN_PX, config={"displaylogo": False})
worst = comp.disagreements(a, b, k=15)
st.markdown("**Nodes where they disagree most**")
st.dataframe(disagreement_table(worst, [comp.models[a], comp.models[b]]), hide_index=True, width="stretch",
             key="cmp_worst")

with st.expander("Export"):
    e1, e2 = st.columns(2)
    e1.download_button("Per-model summary (CSV)", lambda: csv_text(table, index=True), "compare-summary.csv", "text/csv",
                       on_click="ignore", key="dl_cmp_summary")
    e1.download_button("Node values (CSV)", lambda: csv_text(node_values(comp)), "compare-nodes.csv", "text/csv",
                       on_click="ignore", key="dl_cmp_nodes")
    e1.download_button("Disagreements (JSON)", lambda: json.dumps(json_records(worst), allow_nan=False),
                       "compare-disagreements.json", "application/json", on_click="ignore", key="dl_cmp_json")
    e2.download_button("Difference tree (HTML)", lambda: figure_html(diff_fig), "difference-tree.html", "text/html",
                       on_click="ignore", key="dl_cmp_diff")
    for i, (model, fig) in enumerate(zip(comp.models, trees)):
        e2.download_button(f"{model} tree (HTML)", partial(figure_html, fig), f"tree-{i + 1}.html",
                           "text/html", on_click="ignore", key=f"dl_cmp_tree_{i}")
