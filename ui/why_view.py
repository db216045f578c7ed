"""The inspector's "Why this token?" section: what in the code a prediction used (issue 30).

Pick a target (one token, or the node selected in a tree: the mean over its predicted tokens), a method
(gradient x input, integrated gradients, syntax-aware occlusion) and, for a token, an optional contrast (one of its
top alternatives: then the target is ``log p(actual) - log p(alternative)``); **Explain this prediction** computes
it (:func:`ui.cache.why.cached_attribution`) and the section draws the prompt's attributions on the sequence view and
on both trees on a diverging scale with a legend, the top source nodes with their text, and the attribution per
category. Everything exports (JSON, CSV, HTML). The request is kept per tab in ``st.session_state[STATE]`` until
another result is shown; nothing runs until the button is pressed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np
import streamlit as st

from asc import AscError, Explanation
from asc.export import csv_text
from asc.viz.attribution import (
    attribution_sequence_html,
    attribution_tree,
    category_attribution_figure,
    source_nodes_table,
)
from asc.viz.html import figure_html, standalone_html
from asc.why.attribute import (
    ATTRIBUTION_METHODS,
    AUTO_MAX_STEPS,
    AUTO_STEPS,
    AUTO_TOLERANCE,
    DEFAULT_STEPS,
    Attribution,
)
from ui import charts
from ui.cache.why import cached_attribution, explanation_key
from ui.results import InspectorResult

T = TypeVar("T")
STATE = "why_request"
MAX_STEPS = AUTO_MAX_STEPS  # integrated gradients' path points the inspector offers
UNTIL = f"Until {AUTO_TOLERANCE:.0%}"  # the checkbox of steps="auto"
METHOD_NAMES = {"grad": "gradient x input", "ig": "integrated gradients", "occlusion": "occlusion (syntax-aware)"}
NO_CONTRAST = "(none: the token's log-probability)"


def _token_label(ex: Explanation, i: int) -> str:
    s = ex.scores
    return f"{i}: {s.text[i]!r}  p={s.prob[i]:.3f}"


def _targets(ex: Explanation, n_prompt: int | None) -> list[int]:
    """Tokens that can be explained: those with a prediction (the first token and special tokens have none)."""
    ok = np.flatnonzero(~np.isnan(ex.scores.prob))
    return [int(i) for i in ok if i > 0]


def _default_token(ex: Explanation, choices: list[int], selected: int | None) -> int:
    """The selected node's last predicted token, else the least confident token."""
    if selected is not None:
        mine = [int(i) for i in ex.alignment.tokens_of(selected) if int(i) in set(choices)]
        if mine:
            return mine[-1]
    return min(choices, key=lambda i: (ex.scores.prob[i], i))


def _controls(ex: Explanation, selected: int | None, n_prompt: int | None) -> dict | None:
    """The request the widgets describe, or None when there is nothing to explain."""
    choices = _targets(ex, n_prompt)
    if not choices:
        st.caption("No token of this text has a prediction to explain.")
        return None
    c1, c2, c3, c4 = st.columns([3, 2, 3, 1])
    node_ok = selected is not None and bool(set(ex.alignment.tokens_of(selected).tolist()) & set(choices))
    what = c1.radio("Explain", ["one token", "the selected node"] if node_ok else ["one token"], horizontal=True,
                    key="why_what", help="a node's target is the mean log-probability of its predicted tokens; "
                                         "select a node in a tree above")
    node = selected if what == "the selected node" else None
    index = None
    contrast = None
    if node is None:
        default = _default_token(ex, choices, selected)
        index = c1.selectbox("Target token", choices, index=choices.index(default),
                             format_func=lambda i: _token_label(ex, i), key="why_token")
        alternatives = [t for t in ex.scores.top_text[index] if t != ex.scores.text[index]]
        contrast = c3.selectbox("Contrast with", [NO_CONTRAST, *alternatives], key="why_contrast",
                                help="explain log p(actual) - log p(alternative): why this token rather than that one")
        contrast = None if contrast == NO_CONTRAST else contrast
    method = c2.radio("Method", list(ATTRIBUTION_METHODS), format_func=METHOD_NAMES.__getitem__, key="why_method")
    steps: int | str = int(c4.number_input(
        "Steps", 1, MAX_STEPS, DEFAULT_STEPS, key="why_steps", disabled=method != "ig",
        help="integrated gradients: Gauss-Legendre points on the path from the pad token's embedding (the first "
             "token, the attention sink, held); more points, a smaller completeness gap"))
    if c4.checkbox(UNTIL, key="why_auto", disabled=method != "ig",
                   help=f"integrated gradients: {DEFAULT_STEPS} points, then twice as many until the attributions sum "
                        f"to value - baseline value within {AUTO_TOLERANCE:.0%} (at most {AUTO_MAX_STEPS} points)"):
        steps = AUTO_STEPS
    return {"index": index, "node": node, "method": method, "steps": steps if method == "ig" else DEFAULT_STEPS,
            "contrast": contrast}


def _show(attr: Attribution) -> None:
    t = attr.target
    line = f"**{t.describe()}** · value {attr.value:.4f}"
    if attr.method == "ig":
        line += (f" · {attr.steps} path points · at the baseline {attr.baseline_value:.4f} · attributions sum to "
                 f"{attr.value - attr.baseline_value + attr.delta:.4f} (completeness gap {attr.delta:+.4f})")
    elif attr.method == "occlusion":
        line += f" · {attr.steps} occluded variants (value minus the target with the node replaced)"
    st.markdown(line)
    if attr.method == "ig" and attr.relative_gap > AUTO_TOLERANCE:
        fix = ("more points than the inspector offers would be needed" if attr.steps >= AUTO_MAX_STEPS else
               f"raise Steps (up to {MAX_STEPS}) or tick **{UNTIL}** to bring their sum closer")
        st.warning(f"The attributions miss value - baseline value by {100 * attr.relative_gap:.1f}% (completeness "
                   f"gap over {AUTO_TOLERANCE:.0%}): {fix}.")
    st.html(attribution_sequence_html(attr))
    tabs = st.tabs(["Partial AST (named nodes)", "Complete AST (all nodes)"])
    figs = {}
    views: tuple[Literal["partial", "complete"], ...] = ("partial", "complete")
    for tab, view in zip(tabs, views, strict=True):
        figs[view] = attribution_tree(attr, view, collapse_unary=view == "partial", max_width=charts.MAIN_PX)
        charts.panel_chart(tab, figs[view], f"why_tree_{view}", f"why_treebox_{view}", charts.MAIN_PX)
    w1, w2 = st.columns([3, 2])
    with w1:
        st.markdown("**Top source nodes**")
        table = source_nodes_table(attr, 10)
        st.dataframe(table, hide_index=True, width="stretch", key="why_nodes")
    cat_fig = category_attribution_figure(attr)
    w2.plotly_chart(cat_fig, key="why_categories")
    with st.expander("Export the attribution"):
        e1, e2, e3 = st.columns(3)
        e1.download_button("Attribution JSON", lambda: json.dumps(attr.to_dict(), ensure_ascii=False),
                           "attribution.json", "application/json", on_click="ignore", key="dl_why_json")
        e1.download_button("Top nodes CSV", lambda: csv_text(table), "attribution-nodes.csv", "text/csv",
                           on_click="ignore", key="dl_why_csv")
        e2.download_button("Sequence view (HTML)", lambda: standalone_html(attribution_sequence_html(attr)),
                           "attribution-sequence.html", "text/html", on_click="ignore", key="dl_why_seq")
        e2.download_button("Categories (HTML)", lambda: figure_html(cat_fig), "attribution-categories.html",
                           "text/html", on_click="ignore", key="dl_why_cats")
        e3.download_button("Partial AST (HTML)", lambda: figure_html(figs["partial"]), "attribution-partial.html",
                           "text/html", on_click="ignore", key="dl_why_partial")
        e3.download_button("Complete AST (HTML)", lambda: figure_html(figs["complete"]),
                           "attribution-complete.html", "text/html", on_click="ignore", key="dl_why_complete")


def computed(spinner: str, run: Callable[[], T]) -> T | None:
    """``run()`` under a spinner; None, with its message shown as an error, when it raises an :class:`AscError`."""
    try:
        with st.spinner(spinner):
            return run()
    except AscError as err:
        st.error(str(err))
        return None


def requested(state: str, key: tuple, request: Any, label: str, button_key: str, hint: str) -> Any:
    """The request kept in ``st.session_state[state]`` for the explanation ``key``: the widgets' ``request`` once the
    button ``label`` is pressed, kept across reruns until another explanation is shown; None (and ``hint`` as a
    caption) before that."""
    if st.button(label, key=button_key):
        st.session_state[state] = (key, request)
    kept = st.session_state.get(state)
    if kept is None or kept[0] != key:
        st.caption(hint)
        return None
    return kept[1]


def section(result: InspectorResult, ex: Explanation, selected: int | None, n_prompt: int | None) -> None:
    """The "Why this token?" section (module doc) for the explanation shown (the trunk or an open branch)."""
    st.subheader("Why this token?")
    st.caption("What in the code did a prediction use? Attributions are signed: green tokens and nodes raised the "
               "target, magenta ones lowered it (the confidence colours above are another scale).")
    request = _controls(ex, selected, n_prompt)
    if request is None:
        return
    key = explanation_key(ex)
    asked = requested(STATE, key, request, "Explain this prediction", "why_run",
                      "Pick a target and a method, then press **Explain this prediction** (gradient x input takes one "
                      "forward and one backward pass; integrated gradients one per step).")
    if asked is None:
        return
    chosen = result.settings
    attr = computed("Attributing...", lambda: cached_attribution(
        result.model, chosen.trust_remote_code, chosen.device, chosen.dtype, key, ex, **asked))
    if attr is None:
        return
    if not math.isfinite(attr.value):
        st.warning("The target has no finite value here: nothing to attribute.")
        return
    _show(attr)
