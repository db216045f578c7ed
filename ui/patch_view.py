"""The inspector's "What changes it?" part of "Why this token?": a corruption that keeps the code valid, and activation
patching of it (issue 30, interventions).

Pick a target token and one of the corruptions the snippet offers before it (:func:`asc.why.choices.
corruption_choices`: rename an identifier everywhere, swap a binary operator, change a literal, remove the
docstrings or comments); **Corrupt and patch** computes :func:`asc.why.patching.patch` over every layer
(:func:`ui.cache.why.cached_patching`) and the section shows the corrupted code, the target's log-probability in
the clean and the corrupted run, the layer x node heatmap (:func:`asc.viz.why.patching_heatmap`) and the share
restored per category and layer, with exports (JSON, CSV, HTML). Like the attribution, the request is kept per tab
in ``st.session_state[STATE]`` and nothing runs until the button is pressed; a corruption that fails its validity
check, or a target before the corruption, is one message.
"""

from __future__ import annotations

import json

import streamlit as st

from asc import UNDEFINED, Explanation, csv_text
from asc.viz import figure_html, patching_heatmap, shown
from asc.why import PATCH_SPANS, Patching, PatchingRequest, corruption_choices, explainable_tokens
from ui import charts
from ui.cache.why import cached_patching, explanation_key
from ui.results import InspectorResult
from ui.why_view import computed, requested
from ui.widgets import plain

STATE = "patch_request"
SPANS = dict(zip(PATCH_SPANS, ("the changed nodes", "the changed nodes and every named leaf up to the target"),
                 strict=True))


def _controls(ex: Explanation, choices: list[int]) -> PatchingRequest | None:
    """The request the widgets describe, or None when the snippet offers nothing."""
    c1, c2, c3 = st.columns([2, 3, 2])
    default = st.session_state.get("why_token")
    index = c1.selectbox("Target token", choices, index=choices.index(default) if default in choices else
                         len(choices) - 1, format_func=lambda i: f"{i}: {ex.scores.text[i]!r}", key="patch_token")
    offered = corruption_choices(ex.source, ex.tree.language, before=int(ex.scores.start[index]))
    if not offered:
        c2.caption("Nothing before this token can be corrupted (no identifier, operator, literal, docstring or "
                   "comment): pick a later target.")
        return None
    labels = {c.spec: c.label for c in offered}
    spec = c2.selectbox("Corruption", list(labels), format_func=labels.__getitem__, key="patch_corruption",
                        help="the code stays valid: checked after the change (python -m asc intervene --corrupt)")
    spans = c3.radio("Patched nodes", list(SPANS), format_func=SPANS.__getitem__, key="patch_spans")
    return PatchingRequest(int(index), str(spec), str(spans))


def _show(p: Patching) -> None:
    st.markdown(f"**{plain(p.description)}** · target {plain(repr(p.target.get('text', '')))}: log p clean {p.clean_value:.4f}, "
                f"corrupted {p.corrupted_value:.4f} · {p.method} runs, {p.cost:.1f} forward passes")
    if p.note:
        st.caption(plain(p.note))
    with st.expander("The corrupted code"):
        st.code(p.corrupted, language=None)
    fig = patching_heatmap(p)
    charts.panel_chart(st, fig, "patch_heatmap", "patch_heatmapbox", charts.MAIN_PX)
    table = p.category_table()
    st.markdown("**Share of the clean value restored, per layer: every span, and each category's spans together**")
    # a share without a value: the corruption did not move the target, or no span of the category was patched
    st.dataframe(shown(table, [c for c in table.columns if c != "layer"], missing=UNDEFINED), hide_index=True,
                 width="stretch", key="patch_categories")
    with st.expander("Export the patching"):
        e1, e2, e3 = st.columns(3)
        e1.download_button("Patching JSON", lambda: json.dumps(p.to_dict(), ensure_ascii=False), "patching.json",
                           "application/json", on_click="ignore", key="dl_patch_json")
        e2.download_button("Per category CSV", lambda: csv_text(table, missing=UNDEFINED), "patching-categories.csv", "text/csv",
                           on_click="ignore", key="dl_patch_csv")
        e3.download_button("Heatmap (HTML)", lambda: figure_html(fig), "patching-heatmap.html", "text/html",
                           on_click="ignore", key="dl_patch_html")


def section(result: InspectorResult, ex: Explanation) -> None:
    """The "What changes it?" part (module doc) for the explanation shown."""
    st.markdown("#### What changes it? Corrupt the code and patch the model")
    st.caption("A corruption that keeps the code valid changes the target's log-probability; activation patching "
               "restores the clean run's residual stream at one node and one layer at a time and measures how much of "
               "the clean value comes back: where and when the model reads what the corruption changed.")
    choices = explainable_tokens(ex)
    if not choices:
        return
    request = _controls(ex, choices)
    if request is None:
        return
    key = explanation_key(ex)
    asked = requested(STATE, key, request, "Corrupt and patch", "patch_run",
                      "Pick a target and a corruption, then press **Corrupt and patch** (two forward passes, then "
                      "about half a pass per layer).")
    if asked is None:
        return
    chosen = result.settings
    p = computed("Patching every layer...", lambda report: cached_patching(
        result.model, chosen.trust_remote_code, chosen.device, chosen.dtype, key, ex, asked, _on_progress=report),
        "patch_cancel", STATE)
    if p is None:
        return
    _show(p)
