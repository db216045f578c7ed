"""The inspector's "Why this token?" section: what in the code a prediction used (issue 30).

Pick a target (one token, or the node selected in a tree: the mean over its predicted tokens), a method
(gradient x input, integrated gradients, syntax-aware occlusion) and, for a token, an optional contrast (one of its
top alternatives: then the target is ``log p(actual) - log p(alternative)``); **Explain this prediction** computes
it (:func:`ui.cache.why.cached_attribution`) and the section draws the prompt's attributions on the sequence view and
on both trees on a diverging scale with a legend; a sentence naming the code the prediction relied on most; the
ranked rows, by default one per statement (each token counted once, :mod:`asc.why.statements`), or each node's own
tokens, or the nested nodes; the attribution per category; the method notes (what each method measures, what
value, baseline and completeness gap mean); and, on request, the three methods side by side with their rank
correlations. Everything exports (JSON, CSV, HTML). The requests are kept per tab in ``st.session_state`` until
another result is shown; nothing runs until a button is pressed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import streamlit as st

from asc import AscError, Explanation, csv_text
from asc.viz import (
    TARGET_RANK,
    agreement_pairs,
    agreement_table,
    attribution_sequence_html,
    attribution_tree,
    breakdown_table,
    category_attribution_figure,
    figure_html,
    source_nodes_table,
    standalone_html,
)
from asc.why import (
    ATTRIBUTION_METHODS,
    AUTO_MAX_STEPS,
    AUTO_STEPS,
    AUTO_TOLERANCE,
    DEFAULT_STEPS,
    Attribution,
    AttributionRequest,
    Breakdown,
    agreement,
    by_own_tokens,
    by_statement,
    default_target_token,
    explainable_tokens,
    summary,
)
from ui import charts
from ui.cache.why import cached_attribution, explanation_key
from ui.progress import Cancelled, with_progress
from ui.results import InspectorResult

T = TypeVar("T")
STATE = "why_request"
AGREE_STATE = "why_agree_request"
MAX_STEPS = AUTO_MAX_STEPS  # integrated gradients' path points the inspector offers
UNTIL = f"Until {AUTO_TOLERANCE:.0%}"  # the checkbox of steps="auto"
METHOD_NAMES = {"grad": "gradient x input", "ig": "integrated gradients", "occlusion": "occlusion (syntax-aware)"}
NO_CONTRAST = "(none: the token's log-probability)"
VIEWS = {"statement": "statements (each token once)", "own": "each node's own tokens",
         "nested": "nested nodes (each sums its descendants)"}
NOTES_ANCHOR = "method-notes"  # the heading "Method notes" below, and the docs' section of the same name (docs/why.md)
README_NOTES = "docs/why.md, *Why this token?*, section *Method notes*"
MEASURES = {
    "grad": "**Gradient x input** measures how fast the target moves as each token's embedding is scaled, at the "
            "input only (one gradient): a local slope, not a share of the target.",
    "ig": "**Integrated gradients** split the change of the target from the baseline to the input among the tokens "
          "(gradients averaged along the straight path between them): the parts add up to value - baseline value.",
    "occlusion": "**Occlusion** measures how much the target drops when one node is removed (a valid edit: a "
                 "statement as `pass`, a fresh name, a docstring removed; else its tokens blanked).",
}
TERMS = ("**value**: the target the model computes on this code: the token's log-probability (a node: the mean over "
         "its tokens; a contrast: log p(actual) - log p(alternative)).",
         "**baseline**: integrated gradients' starting point, the value with every attributed token replaced by the "
         "pad token's embedding; the attributions explain value - baseline value.",
         "**completeness gap**: the attributions' sum minus (value - baseline value): 0 for exact integrated "
         "gradients; more path points shrink it, and over 1% the page warns.")
KNOWN_ANSWERS = ("On six small functions whose target is a name or literal defined once above, occlusion ranked the "
                 "defining statement first on five; gradient x input and integrated gradients did not pass.")
DISAGREE = ("Gradient x input and integrated gradients can rank the same code very differently on one target: read "
            f"each method as one view, not the answer ([method notes](#{NOTES_ANCHOR})).")


def _token_label(ex: Explanation, i: int) -> str:
    s = ex.scores
    return f"{i}: {s.text[i]!r}  p={s.prob[i]:.3f}"


def _controls(ex: Explanation, selected: int | None) -> AttributionRequest | None:
    """The request the widgets describe, or None when there is nothing to explain."""
    choices = explainable_tokens(ex)
    if not choices:
        st.caption("No token of this text has a prediction to explain.")
        return None
    c1, c2, c3, c4 = st.columns([3, 2, 2.6, 1.4])  # c4: room for "Until 1%" and its help icon at 1400 px
    node_ok = selected is not None and bool(set(ex.alignment.tokens_of(selected).tolist()) & set(choices))
    what = c1.radio("Explain", ["one token", "the selected node"] if node_ok else ["one token"], horizontal=True,
                    key="why_what", help="a node's target is the mean log-probability of its predicted tokens; "
                                         "select a node in a tree above")
    node = selected if what == "the selected node" else None
    index = None
    contrast = None
    if node is None:
        default = default_target_token(ex, selected)
        index = c1.selectbox("Target token", choices, index=choices.index(default) if default in choices else 0,
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
    return AttributionRequest(index=None if node is not None else index, node=node, method=method, steps=steps,
                              contrast=contrast)


def _terms(attr: Attribution) -> None:
    """The target line: what is explained, its value (and baseline, gap); what the method measures, in one line,
    and that another method can rank the code differently; a completeness gap over 1% as a warning."""
    t = attr.target
    line = f"**{t.describe()}** · value {attr.value:.4f}"
    if attr.method == "ig":
        line += (f" · {attr.steps} path points · at the baseline {attr.baseline_value:.4f} · attributions sum to "
                 f"{attr.value - attr.baseline_value + attr.delta:.4f} (completeness gap {attr.delta:+.4f})")
    elif attr.method == "occlusion":
        line += f" · {attr.steps} occluded variants (value minus the target with the node replaced)"
    st.markdown(line)
    st.caption(f"{MEASURES[attr.method]} {DISAGREE}")
    if attr.method == "ig" and attr.relative_gap > AUTO_TOLERANCE:
        fix = ("more points than the inspector offers would be needed" if attr.steps >= AUTO_MAX_STEPS else
               f"raise Steps (up to {MAX_STEPS}) or tick **{UNTIL}** to bring their sum closer")
        st.warning(f"The attributions miss value - baseline value by {100 * attr.relative_gap:.1f}% (completeness "
                   f"gap over {AUTO_TOLERANCE:.0%}): {fix}.")


def _view(attr: Attribution, statements: Breakdown) -> tuple[Any, str]:
    """The ranked rows the "Rank by" choice asks for (statements by default) as a table, and its CSV name."""
    names = dict(VIEWS)
    if attr.method == "occlusion":
        names.pop("own")  # occlusion has no per-token values to split among nodes
    how = st.radio("Rank by", list(names), format_func=names.__getitem__, horizontal=True, key="why_view",
                   help="statements: each token counted once, in the innermost statement holding it (a compound "
                        "statement keeps its header), so the shares add up to 1; own tokens: each token in the "
                        "deepest named node holding it; nested: each node sums every token below it, so an "
                        "ancestor contains its children and the sizes overlap")
    if how == "nested":
        table = source_nodes_table(attr, 10)
        st.dataframe(table, hide_index=True, width="stretch", key="why_nodes", column_config={  # 890 px in all
            "node": st.column_config.NumberColumn("node", width=50),
            "type": st.column_config.TextColumn("type", width=150),
            "category": st.column_config.TextColumn("category", width=180),  # "Functional Programming" whole
            "attribution": st.column_config.TextColumn("attribution", width=90),
            "of |total|": st.column_config.TextColumn(
                "of |total|", width=80, help="the node's |attribution| over the prompt tokens' absolute total: "
                                             "nested nodes overlap, so these do not add up to 1"),
            "text": st.column_config.TextColumn("text", width=340, help="the node's first 60 characters; its "
                                                "whole text is under the table")})
        tree = attr.explanation.tree
        _full_code([(f"node {int(n)}, {tree.type[int(n)]}", tree.text(int(n), limit=2000)) for n in table["node"]])
        return table, "attribution-nodes.csv"
    view = statements if how == "statement" else by_own_tokens(attr)
    table = breakdown_table(view, 10)
    code_px = 400 if view.unit == "node" else 450  # the columns' widths add up to 890 px, under the panel's 940
    config = {"rank": st.column_config.TextColumn("rank", width=60, help="by |attribution|; the target's own line "
                                                  f"(its tokens before the target) is ranked apart: {TARGET_RANK}"),
              "node": st.column_config.NumberColumn("node", width=50),
              "line": st.column_config.TextColumn("line", width=60),
              "code": st.column_config.TextColumn("code", width=code_px, help="the row's code on one line (its "
                                                  "tokens, before the target); the full code is under the table"),
              "kind": st.column_config.TextColumn("kind", width=170),
              "attribution": st.column_config.TextColumn("attribution", width=90),
              "share": st.column_config.TextColumn("share", width=60, help="|attribution| over the rows' sum: "
                                                   "the shares of all rows add up to 1")}
    st.dataframe(table, hide_index=True, width="stretch", key="why_rows", column_config=config)
    rows = [view.target_row] * (view.target_row >= 0) + view.ranked(10, target_line=False)
    _full_code([(f"line {int(view.line[r])}, {view.kind[r]}"
                 + (", the target's line before the target" if r == view.target_row else ""), view.text[r])
                for r in rows])
    return table, f"attribution-{view.unit}s.csv"


def _full_code(rows: list[tuple[str, str]]) -> None:
    """Each table row's whole code (a cell shows one line, cut to its column), in an expander under the table."""
    with st.expander("Each row's full code"):
        for label, code in rows:
            st.caption(label)
            st.code(code or " ", language=None)


def _notes() -> None:
    """The method notes: one line per method, one per term; docs/why.md has the details."""
    st.markdown("##### Method notes")
    st.markdown("\n".join(f"- {MEASURES[m]}" for m in ATTRIBUTION_METHODS))
    st.markdown("\n".join(f"- {t}" for t in TERMS))
    st.caption(f"{KNOWN_ANSWERS} More in {README_NOTES}.")


def _agreement(result: InspectorResult, ex: Explanation, asked: AttributionRequest) -> None:
    """The three methods on the same target, side by side: each one's top statements and their rank correlations
    (each method computed, or read from the cache, once the button is pressed)."""
    st.markdown("**Where the methods agree**")
    same = asked.with_method(ATTRIBUTION_METHODS[0])  # the target, whichever method asked for it
    request = requested(AGREE_STATE, (explanation_key(ex), same), same,
                        "Compare the three methods", "why_agree",
                        "Press **Compare the three methods** to attribute the same target with each method (this "
                        "runs the two others: occlusion takes one forward pass per node) and compare their top "
                        "statements.")
    if request is None:
        return
    chosen = result.settings
    views = []
    for method in ATTRIBUTION_METHODS:
        each = asked.with_method(method)

        def run(report: Callable[[str, int, int], None], each: AttributionRequest = each) -> Attribution:
            return cached_attribution(result.model, chosen.trust_remote_code, chosen.device, chosen.dtype,
                                      explanation_key(ex), ex, each, _on_progress=report)

        got = computed(f"Attributing ({METHOD_NAMES[method]})...", run, f"why_agree_cancel_{method}", AGREE_STATE)
        if got is None:
            return
        views.append(by_statement(got))
    ag = agreement(views)
    st.dataframe(agreement_table(ag, METHOD_NAMES), hide_index=True, width="stretch", key="why_agree_top",
                 column_config={"rank": st.column_config.NumberColumn("rank", width=50),
                                **{METHOD_NAMES[m]: st.column_config.TextColumn(METHOD_NAMES[m], width=280)
                                   for m in ag.methods}})
    st.dataframe(agreement_pairs(ag, METHOD_NAMES), hide_index=True, key="why_agree_pairs", column_config={
        "methods": st.column_config.TextColumn("methods", width=360),
        "Spearman": st.column_config.TextColumn("Spearman", width=90, help="rank correlation of the statements' "
                                                "signed attributions: 1 same order, 0 unrelated, -1 reversed"),
        "statements": st.column_config.NumberColumn("statements", width=90)})
    st.caption("Each column ranks the statements (the target's line apart) by |attribution|, the method's value "
               "first; Spearman compares the signed values over the statements both methods attribute.")


def _show(result: InspectorResult, ex: Explanation, attr: Attribution, asked: AttributionRequest) -> None:
    _terms(attr)
    st.html(attribution_sequence_html(attr))
    tabs = st.tabs(["Partial AST (named nodes)", "Complete AST (all nodes)"])
    figs = {}
    views: tuple[Literal["partial", "complete"], ...] = ("partial", "complete")
    for tab, view in zip(tabs, views, strict=True):
        figs[view] = attribution_tree(attr, view, collapse_unary=view == "partial", max_width=charts.MAIN_PX)
        charts.panel_chart(tab, figs[view], f"why_tree_{view}", f"why_treebox_{view}", charts.MAIN_PX)
    statements = by_statement(attr)
    st.markdown(f"**Which code mattered** · {summary(statements)}")
    table, csv_name = _view(attr, statements)
    w1, w2 = st.columns(2)
    cat_fig = category_attribution_figure(attr)
    w1.plotly_chart(cat_fig, key="why_categories")
    w1.caption("Beside each category: the part of the absolute attribution on its tokens. A token can count for "
               "several categories, so these parts need not add up to 100%.")
    with w2:
        _notes()
    _agreement(result, ex, asked)
    with st.expander("Export the attribution"):
        e1, e2, e3 = st.columns(3)
        e1.download_button("Attribution JSON", lambda: json.dumps(
            {**attr.to_dict(), "statements": statements.to_dict()}, ensure_ascii=False),
            "attribution.json", "application/json", on_click="ignore", key="dl_why_json")
        e1.download_button("Ranked rows CSV", lambda: csv_text(table), csv_name, "text/csv",
                           on_click="ignore", key="dl_why_csv")
        e2.download_button("Sequence view (HTML)", lambda: standalone_html(attribution_sequence_html(attr)),
                           "attribution-sequence.html", "text/html", on_click="ignore", key="dl_why_seq")
        e2.download_button("Categories (HTML)", lambda: figure_html(cat_fig), "attribution-categories.html",
                           "text/html", on_click="ignore", key="dl_why_cats")
        e3.download_button("Partial AST (HTML)", lambda: figure_html(figs["partial"]), "attribution-partial.html",
                           "text/html", on_click="ignore", key="dl_why_partial")
        e3.download_button("Complete AST (HTML)", lambda: figure_html(figs["complete"]),
                           "attribution-complete.html", "text/html", on_click="ignore", key="dl_why_complete")


def computed(label: str, run: Callable[[Callable[[str, int, int], None]], T], cancel_key: str,
             state: str | None = None) -> T | None:
    """``run(on_progress)`` with a progress bar and a Cancel button (:func:`ui.progress.with_progress`); None, with
    its message shown as an error, when it raises an :class:`AscError`, and None, with a note, after Cancel (the
    request kept in ``st.session_state[state]`` is dropped, so it does not start again by itself)."""
    try:
        return with_progress(label, run, cancel_key)
    except Cancelled as cancelled:
        if state is not None:
            st.session_state.pop(state, None)
        stage, done, total = cancelled.progress or ("", 0, 0)
        where = f" at {done} of {total} ({stage})" if total else ""
        st.info(f"Stopped{where}. Press the button again to start it anew.")
        return None
    except AscError as err:
        st.error(str(err))
        return None


def requested(state: str, key: tuple[object, ...], request: Any, label: str, button_key: str, hint: str) -> Any:
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
    request = _controls(ex, selected)
    if request is None:
        return
    key = explanation_key(ex)
    asked = requested(STATE, key, request, "Explain this prediction", "why_run",
                      "Pick a target and a method, then press **Explain this prediction** (gradient x input takes one "
                      "forward and one backward pass; integrated gradients one per step).")
    if asked is None:
        return
    chosen = result.settings
    attr = computed("Attributing...", lambda report: cached_attribution(
        result.model, chosen.trust_remote_code, chosen.device, chosen.dtype, key, ex, asked, _on_progress=report),
        "why_cancel", STATE)
    if attr is None:
        return
    if not math.isfinite(attr.value):
        st.warning("The target has no finite value here: nothing to attribute.")
        return
    _show(result, ex, attr, asked)
