"""Completion inspector (AsC-Viz): a prompt, the model's completion, and where it was confident.

Widgets and calls into ``asc`` only. The model runs when "Complete" or "Explain" is pressed (results
cached by text and settings); node clicks and the layer slider rerun only the views fragment. "Per layer" adds
AsC-Eval from every layer's prediction (logit lens: ``ui.depth_view``); fork points, branches of a completion and
their comparison are ``ui.branches_view``; the SAE latents of the selected node, ``ui.features_view``.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import json
from dataclasses import replace

import streamlit as st

from asc import (
    ABSENT,
    FEW_TOKENS,
    AscError,
    Decoding,
    category_label,
    check_source,
    csv_text,
    first_lines,
    stop_message,
)
from asc.viz import (
    TREE_VIEWS,
    category_figure,
    figure_html,
    node_export,
    sequence_html,
    standalone_html,
    token_export,
    token_table,
    tree_figure,
    weakest_table,
)
from ui import branches_view, cache, charts, depth_view, features_view, gate, guards, patch_view, why_view, widgets
from ui.results import InspectorResult

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

settings = widgets.current_settings()
st.title("Completion inspector")
st.caption("Next-token probabilities aligned to the syntax tree (AsC-Eval), colored from red (poorly predicted) "
           "to blue (confident) on a fixed 0-1 scale (AsC-Viz). Grey: no predicted token.")

examples = widgets.examples()


def _load_example() -> None:
    st.session_state["code"] = examples[st.session_state["example"]]


if "code" not in st.session_state:
    st.session_state["example"] = "count_chars.py"
    _load_example()

left, right = st.columns([3, 2])
with left:
    st.selectbox("Example", list(examples), key="example", on_change=_load_example)
    upload = st.file_uploader("or upload a .py / .java file", key="upload",  # name checked below, not by type=
                              max_upload_size=guards.MAX_UPLOAD_MB)
    if upload is not None and st.session_state.get("uploaded_id") != upload.file_id:
        try:
            name = guards.upload_name(upload.name, guards.CODE_UPLOADS)
            st.session_state["code"] = guards.decode_upload(upload.getvalue(), name)
            st.session_state["uploaded_id"] = upload.file_id
        except AscError as err:
            st.error(widgets.plain(str(err)))  # the browser's file name is the visitor's text
    code = st.text_area("Code", key="code", height=280)
    st.button("Keep the first 2 lines (a prompt for Complete)", key="to_prompt",
              on_click=lambda: st.session_state.update(code=first_lines(st.session_state["code"])),
              help="A whole function leaves the model nothing to write: Complete stops at once. Its signature and "
                   "first statement leave it the rest.")
with right:
    max_new = st.slider("New tokens for Complete", 8, 256, 64, step=8, key="max_new")
    with st.expander("Sampling (greedy by default)"):
        temperature = st.slider("Temperature (0 = greedy)", 0.0, 1.5, 0.0, 0.05, key="temperature")
        top_p = st.slider("Top-p", 0.05, 1.0, 0.95, 0.05, key="top_p", disabled=temperature == 0)
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="seed", disabled=temperature == 0)
    b1, b2 = st.columns(2)
    do_complete = b1.button("Complete", type="primary", width="stretch",
                            help="Generate up to N tokens (stops at the end of the function), then explain.")
    do_explain = b2.button("Explain", width="stretch", help="Score the text as it is.")

if do_complete or do_explain:
    try:
        if not code.strip():
            raise ValueError("The editor is empty: pick an example or paste some code.")
        guards.check_length(code)
        check_source(code, settings.language)  # a too-deep tree is refused before any model loads or runs
        bundle = guards.model_or_none(settings)
        if bundle is not None:
            args = (settings.model, settings.trust_remote_code)
            with st.spinner("Running the model..."):
                if do_complete:
                    comp, ex = cache.cached_complete(*args, code, max_new, temperature, top_p, int(seed), settings.language,
                                                  settings.aggregate, settings.device, settings.dtype)
                    result = InspectorResult(ex, settings.model, settings, comp,
                                             Decoding(max_new, temperature, top_p, int(seed), settings.language))
                else:
                    result = InspectorResult(cache.cached_explain(*args, code, settings.language, settings.aggregate,
                                                                  settings.device, settings.dtype),
                                             settings.model, settings)
            st.session_state["result"] = result
            st.session_state["selected"] = None
    except (AscError, ValueError) as err:
        st.error(str(err))  # the previous result stays below

found = st.session_state.get("result")
if not isinstance(found, InspectorResult):
    st.info("Pick an example (or type code) and press **Explain** to score it as is, or **Complete** to let the "
            "model continue it.")
    st.stop()
result = found

st.caption(f"Model **{result.model}** · aggregation **{result.ex.aggregate}** · language "
           f"**{result.ex.tree.language}**")
branches = branches_view.tree_of(result)  # this tab's trunk and branches (None for Explain)
opened = branches_view.open_picker(branches)  # the trunk or a branch: what the views below show
ex = opened.explanation if opened else result.ex
n_prompt = opened.completion.n_prompt if opened else result.n_prompt
if ex.scores.n_windows > 1:
    st.info(f"The text is longer than the model's window: scored in {ex.scores.n_windows} overlapping windows, "
            "every token with at least half a window of left context.")
if ex.tree.has_error:
    st.warning("The code has syntax errors: ERROR nodes are drawn with an X, MISSING nodes as open diamonds.")

# summary strip
m = st.columns(4)
m[0].metric("Cross-entropy", f"{ex.loss:.3f}", help="mean over tokens with a prediction, nats/token")
m[1].metric("Perplexity", f"{ex.perplexity:.2f}")
m[2].metric("Tokens", ex.scores.n_tokens if n_prompt is None else f"{n_prompt} + {ex.scores.n_tokens - n_prompt}")
m[3].metric("AST nodes", ex.tree.n_nodes)
if n_prompt is not None:
    completion = opened.completion if opened else result.completion
    assert completion is not None  # n_prompt is set by Complete only
    stopped = stop_message(completion, result.decoding.max_new_tokens if result.decoding else None)
    if completion.stop_reason == "function_end" and len(completion.ids) - completion.n_prompt < FEW_TOKENS:
        st.info(stopped)  # looks as if nothing happened: say why, and what to do
    else:
        st.caption(stopped)
    st.caption("Generated tokens are underlined, after the black bar.")
s1, s2 = st.columns(2)
s1.plotly_chart(category_figure(ex.category_values), key="categories")
with s2:
    st.markdown("**Least confident nodes**")
    st.dataframe(weakest_table(ex, 6), hide_index=True, width="stretch", key="weakest",
                 column_config={"node": st.column_config.NumberColumn(width=45),
                                "text": st.column_config.TextColumn(width=130, help="the node's source text"),
                                "type": st.column_config.TextColumn(width=85),
                                "category": st.column_config.TextColumn(width=120),
                                "value": st.column_config.TextColumn(width=55)})

layers = depth_view.load(replace(result, ex=ex, completion=opened.completion if opened else result.completion),
                         settings)  # the branch shown, if one is
fork_cfg = branches_view.fork_settings()


@st.fragment
def views() -> None:
    """Sequence view + trees + node details (+ the per-layer panels): reruns alone when a node is clicked or
    the layer slider moves."""
    shown, layer = depth_view.layer_slider(layers, ex)  # that layer's Explanation (the output's when off)
    forks = branches_view.fork_marks(shown, fork_cfg)
    colours = branches_view.colour_options(shown, forks)  # {} for values, else the fork rate per node
    c1, c2, c3 = st.columns([2, 2, 3])
    fold = c1.number_input("Fold below depth (0 = off)", 0, 60, 0, key="fold")
    collapse = c2.checkbox("Collapse unary chains", value=True, key="collapse")
    options = {-1: "none"} | {i: f"{i}: {ex.tree.type[i]}  {ex.tree.text(i, limit=40)!r}" for i in range(ex.tree.n_nodes)
                              if ex.tree.named[i] or ex.tree.is_missing[i]}
    picked = c3.selectbox("Inspect node", list(options), format_func=options.__getitem__, key="node_pick")
    selected = st.session_state.get("selected")
    if picked != -1 and picked != st.session_state.get("last_pick"):
        selected = picked
    st.session_state["last_pick"] = picked

    tabs = st.tabs(["Partial AST (named nodes)", "Complete AST (all nodes)"])
    for tab, view in zip(tabs, TREE_VIEWS):
        fig = tree_figure(shown, view, max_depth=fold or None, collapse_unary=collapse, selected=selected,
                          max_width=charts.MAIN_PX,
                          **({"value_label": None if layer is None else f"value ({ex.aggregate}), layer {layer}"}
                             | colours))
        event = charts.panel_chart(tab, fig, f"tree_{view}", f"treebox_{view}", charts.MAIN_PX,
                                  ", or fold it below a depth (above)", on_select="rerun", selection_mode="points",
                                  config={"scrollZoom": True, "displaylogo": False})
        points = event.selection.points if event and event.selection else []
        if points and points[0].get("customdata") is not None:
            clicked = int(points[0]["customdata"])
            if clicked != st.session_state.get(f"clicked_{view}"):
                st.session_state[f"clicked_{view}"] = clicked
                selected = clicked
    st.session_state["selected"] = selected

    st.markdown("**Sequence view** (hover a token for its probability, rank, entropy and top-5 alternatives; a "
                "purple bar marks a fork point)"
                + ("" if layer is None else f" at layer {layer}"))
    st.html(sequence_html(shown, selected=selected, n_prompt=n_prompt,
                          forks=None if forks is None else forks.indices))
    if selected is not None:
        t = ex.tree
        value = shown.values[selected]
        shown_value = ABSENT if value != value else f"{value:.3f}"
        st.markdown(f"**Node {selected}: `{t.type[selected]}`** · category: "
                    f"{category_label(ex.node_category[selected])} · value ({ex.aggregate}): {shown_value} · "
                    f"depth {t.depth[selected]}"
                    + (" · ERROR" if t.is_error[selected] else "") + (" · MISSING" if t.is_missing[selected] else ""))
        d1, d2 = st.columns([2, 3])
        d1.code(t.text(selected) or "(empty)", language=t.language)
        d2.dataframe(token_table(shown, selected), hide_index=True, width="stretch", key="node_tokens",
                     column_config={"index": st.column_config.NumberColumn(width=50)} | {
                         c: st.column_config.TextColumn(width=w) for c, w in (("token", 90), ("p", 60), ("rank", 45),
                                                                              ("entropy", 60))})
    else:
        st.caption("Click a node in a tree (or pick one above) to see its tokens and outline them in the sequence view.")
    if layers is not None and layer is not None:
        depth_view.panels(layers, layer, selected)
    with st.expander("Features (SAE latents on the selected node)"):
        features_view.section(result, ex, selected)
    why_view.section(result, ex, selected, n_prompt)  # in the fragment: a node click retargets it
    patch_view.section(result, ex)


views()
branches_view.section(result, branches, opened, fork_cfg)

with st.expander("Export"):
    e1, e2, e3, e4 = st.columns(4)
    e1.download_button("Tokens CSV", lambda: csv_text(token_export(ex)), "tokens.csv", "text/csv",
                       on_click="ignore", key="dl_tokens_csv")
    e1.download_button("Nodes CSV", lambda: csv_text(node_export(ex)), "nodes.csv", "text/csv",
                       on_click="ignore", key="dl_nodes_csv")
    e2.download_button("Result JSON", lambda: json.dumps(ex.to_dict(), ensure_ascii=False, allow_nan=False),
                       "asc-eval.json", "application/json", on_click="ignore", key="dl_json")
    e3.download_button("Partial AST (HTML)", lambda: figure_html(tree_figure(ex, "partial", collapse_unary=True)),
                       "partial-ast.html", "text/html", on_click="ignore", key="dl_partial")
    e3.download_button("Complete AST (HTML)", lambda: figure_html(tree_figure(ex, "complete")), "complete-ast.html",
                       "text/html", on_click="ignore", key="dl_complete")
    e4.download_button("Sequence view (HTML)", lambda: standalone_html(sequence_html(ex, n_prompt=n_prompt)),
                       "sequence.html", "text/html", on_click="ignore", key="dl_sequence")
    e4.download_button("Categories (HTML)", lambda: figure_html(category_figure(ex.category_values)),
                       "categories.html", "text/html", on_click="ignore", key="dl_categories")
