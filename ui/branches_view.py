"""The inspector's fork points and branches: widgets and calls into ``asc`` only.

* :func:`fork_settings` (thresholds of :class:`asc.branching.forks.ForkSettings`), :func:`fork_marks` (the fork points of the
  shown explanation, marked in the sequence view) and :func:`colour_options` (the trees' colours: AsC-Eval value or
  fork rate per node, :func:`asc.branching.forks.node_fork_rate`);
* :func:`tree_of` keeps one :class:`asc.branching.tree.BranchTree` per browser tab (``st.session_state``), started from
  the completion shown (its trunk) and reset by a new completion; :func:`open_picker` chooses the completion the
  inspector's views show (the trunk or a branch);
* :func:`section`: branch at a token (one of the model's top-k alternatives or a typed text), "Explore forks" (the
  N most uncertain fork points at once, batched), the branch tree (a click opens a branch), two branches compared
  on their aligned ASTs (:func:`asc.branching.treediff.ast_diff`), and the exports (the whole tree as one JSON file).

Branches continue with the trunk's decoding settings (greedy, or sampling with the same seed) through
:func:`ui.cache.cached_branch` / :func:`ui.cache.cached_explore`; nothing here runs on a node click.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from asc import ABSENT, AscError, Completion, Explanation, csv_text
from asc.branching import (
    MAX_EXPLORE,
    Branch,
    BranchNode,
    BranchRequest,
    BranchTree,
    ExploreRequest,
    ForkPoints,
    ForkSettings,
    ast_diff,
    category_frame,
    confidence_split,
    default_fork_token,
    diff_frame,
    find_problem,
    fork_points,
    node_fork_rate,
)
from asc.viz import (
    FORK_RATE_SCALE,
    TREE_VIEWS,
    branch_compare_figures,
    branch_tree_figure,
    figure_html,
    visible_whitespace,
)
from asc.viz import shown as shown_table
from ui import access, cache, charts, widgets
from ui.results import InspectorResult

FORK_HELP = ("A fork point is a token where the model hesitated: the margin between its first and second choice "
             "is below the first threshold (default 0.1: nearly a coin flip), or the entropy of its prediction "
             "is above the second (default 2.0 nats, about 7 equally likely tokens). Marked with a purple bar "
             "above the token in the sequence view.")
COLOURS = {"value": "AsC-Eval value", "fork": "fork rate"}
STATE = "branch_tree"  # (key of the result it belongs to, BranchTree)


def fork_settings() -> ForkSettings:
    """The fork-point thresholds (a small expander; defaults are :class:`~asc.branching.forks.ForkSettings`'s)."""
    default = ForkSettings()
    with st.expander("Fork points (where the model hesitates)"):
        st.caption(FORK_HELP)
        c1, c2 = st.columns(2)
        margin = c1.number_input("Top-2 margin below", 0.0, 1.0, default.max_margin, 0.01, key="fork_margin",
                                 help="p(first choice) - p(second choice); default 0.1")
        entropy = c2.number_input("or entropy above (nats)", 0.0, 20.0, default.min_entropy, 0.1, key="fork_entropy",
                                  help="entropy of the next-token distribution; default 2.0 nats")
    return ForkSettings(max_margin=float(margin), min_entropy=float(entropy))


def fork_marks(shown: Explanation, settings: ForkSettings) -> ForkPoints | None:
    """The fork points of the shown explanation (None when its scores carry no top-k probabilities)."""
    try:
        return fork_points(shown.scores, settings)
    except AscError:
        return None


def colour_options(shown: Explanation, forks: ForkPoints | None) -> dict[str, Any]:
    """The "Tree colours" radio; the extra ``tree_figure`` arguments for the fork-rate colouring ({} for values)."""
    mode = st.radio("Tree colours", list(COLOURS), format_func=COLOURS.get, horizontal=True, key="tree_colours",
                    help="fork rate: the share of a node's tokens that are fork points (0 to 1, NaN = grey)")
    if mode != "fork" or forks is None:
        return {}
    return {"values": node_fork_rate(shown, forks), "colorscale": FORK_RATE_SCALE, "value_label": "fork rate"}


def _key(result: InspectorResult, comp: Completion) -> tuple[str, str, bytes, str, str]:
    ex = result.ex
    return result.model, comp.text, comp.ids.tobytes(), ex.aggregate, ex.tree.language


def tree_of(result: InspectorResult) -> BranchTree | None:
    """This tab's branch tree of ``result`` (started from its completion, kept until another result is shown);
    None for a text explained as it is (branches start from a completion)."""
    comp = result.completion
    if comp is None:
        return None
    key = _key(result, comp)
    kept = st.session_state.get(STATE)
    if kept is None or kept[0] != key:
        kept = (key, BranchTree.start(comp, result.ex, result.decoding))
        st.session_state[STATE] = kept
        st.session_state.pop("br_open_pick", None)
    return kept[1]


def open_picker(tree: BranchTree | None) -> BranchNode | None:
    """The completion the views show: a selectbox once the tree has branches (a click in the branch tree sets it)."""
    if tree is None:
        return None
    if "br_pending_open" in st.session_state:
        st.session_state["br_open_pick"] = st.session_state.pop("br_pending_open")
    if len(tree) == 1:
        return tree.trunk
    if st.session_state.get("br_open_pick") not in range(len(tree)):
        st.session_state["br_open_pick"] = 0
    picked = st.selectbox("Showing", range(len(tree)), key="br_open_pick", format_func=lambda i: tree.nodes[i].label,
                          help="The trunk (the completion) or one of its branches: the views below show it.")
    node = tree.node(picked)
    shown = (st.session_state[STATE][0], node.id)
    if st.session_state.get("br_shown") != shown:  # another tree: node ids of the previous one mean nothing here
        st.session_state.update(br_shown=shown, selected=None, node_pick=-1, last_pick=-1)
    if node.branch is not None:
        br = node.branch
        how = f"the model's choice {br.forced_rank}" if br.forced_rank else "typed"
        replaced = tree.replaced_text(node.id)
        st.caption(f"Branch {node.id}: {widgets.plain(_shown(br.forced_text))} forced at token {br.fork_index} ({how}, "
                   f"p={_fmt(br.forced_prob, 4)}) instead of {widgets.plain(_shown(replaced)) if replaced else '(end)'}; "
                   "mean AsC-Eval from the "
                   f"fork on {_fmt(node.mean_value)}; parses: {'yes' if node.parses else 'no'}.")
    return node


def _fmt(x: float, digits: int = 3) -> str:
    return ABSENT if math.isnan(x) else f"{x:.{digits}f}"


def tree_json(tree: BranchTree) -> str:
    """The whole tree as one JSON document (:meth:`BranchTree.to_dict`)."""
    return json.dumps(tree.to_dict(), ensure_ascii=False, allow_nan=False)


def _shown(text: str) -> str:
    """A token as a label shows it: quoted, whitespace visible (``'⏎····'``: a label would collapse it)."""
    return f"'{visible_whitespace(text)}'"


def _token_label(ex: Explanation, i: int, forks: ForkPoints | None) -> str:
    s = ex.scores
    p = s.prob[i]
    mark = " · fork" if forks is not None and forks.is_fork[i] else ""
    return f"{i}: {_shown(s.text[i])}" + ("" if math.isnan(p) else f" (p={p:.3f}{mark})")


def _at_node_token() -> None:
    ex: Explanation = st.session_state["br_node_ex"]
    selected = st.session_state.get("selected")
    tokens = ex.alignment.tokens_of(selected) if selected is not None else np.zeros(0, np.int64)
    if len(tokens):
        st.session_state["br_at"] = max(1, int(min(tokens)))
    else:
        st.session_state["br_msg"] = "Pick a node in a tree first (or choose the token from the list)."


def _alternatives(ex: Explanation, at: int) -> dict[int, str]:
    s = ex.scores
    if math.isnan(s.prob[at]):
        return {}
    own = int(s.ids[at])
    return {k + 1: f"{k + 1}. {_shown(t)}  p={p:.3f}" + (" (this completion's)" if own == int(i) else "")
            for k, (t, p, i) in enumerate(zip(s.top_text[at], s.top_probs[at], s.top_ids[at], strict=False))}


def _add(tree: BranchTree, parent: int, made: list[tuple[Branch, Explanation]]) -> None:
    for br, ex in made:
        tree = tree.add(parent, br, ex)
    key = st.session_state[STATE][0]
    st.session_state[STATE] = (key, tree)
    st.session_state["br_pending_open"] = len(tree) - 1 if len(made) == 1 else parent
    st.rerun()


def _controls(result: InspectorResult, tree: BranchTree, node: BranchNode, fork_cfg: ForkSettings) -> None:
    """Pick a token and an alternative (or type one), Branch; Explore forks."""
    ex = node.explanation
    forks = fork_marks(ex, fork_cfg)
    n = len(node.completion.ids)
    if st.session_state.get("br_at_for") != (id(tree), node.id) or st.session_state.get("br_at") not in range(1, n):
        st.session_state["br_at"] = default_fork_token(node, forks)
        st.session_state["br_at_for"] = (id(tree), node.id)
    st.session_state["br_node_ex"] = ex
    left, right = st.columns([3, 2])
    at = left.selectbox(f"Branch {'the trunk' if node.branch is None else f'branch {node.id}'} at token", range(1, n),
                        key="br_at", format_func=lambda i: _token_label(ex, i, forks),
                        help="Default: the most uncertain fork point of the generated part that is not whitespace.")
    right.button("At the selected tree node's first token", on_click=_at_node_token, key="br_at_node")
    if msg := st.session_state.pop("br_msg", None):
        right.caption(msg)
    alts = _alternatives(ex, at)
    default = next((k for k, label in alts.items() if "this completion's" not in label), None)
    if st.session_state.get("br_choice_for") != (node.id, at) or st.session_state.get("br_choice") not in alts:
        st.session_state["br_choice"] = default
        st.session_state["br_choice_for"] = (node.id, at)
    c1, c2, c3 = st.columns([3, 2, 2])
    choice = c1.radio("The model's alternatives here", list(alts), key="br_choice", format_func=alts.get) if alts else None
    if not alts:
        c1.caption("This token has no prediction: type a replacement.")
    typed = c2.text_input("or type a replacement", key="br_token", help="Forced as typed (one or several tokens); "
                          "leave empty to take the alternative chosen on the left.")
    max_new = c3.slider("Continue for up to N tokens", 8, 256, tree.settings.max_new_tokens, step=8,
                        key="br_max_new")
    chosen = result.settings
    decoding = replace(tree.settings, max_new_tokens=int(max_new), language=result.ex.tree.language)
    temperature, top_p, seed = decoding.temperature, decoding.top_p, decoding.seed
    c3.caption("greedy, as the trunk" if temperature == 0 else f"sampling as the trunk: T={temperature}, "
               f"top-p={top_p}, seed {seed}")
    b1, b2, b3 = st.columns([2, 2, 3])
    do_branch = b1.button("Branch", type="primary", key="br_go", width="stretch")
    n_explore = b3.number_input(f"Fork points to explore (1-{MAX_EXPLORE})", 1, MAX_EXPLORE, 4, key="br_n")
    do_explore = b2.button("Explore forks", key="br_explore", width="stretch",
                           help="Branch at the N most uncertain fork points of the generated part at once (each with "
                                "the best choice other than this completion's token), batched into one model call.")
    try:
        if do_branch:
            if not typed and choice is None:
                raise ValueError("Choose an alternative or type a replacement.")
            with st.spinner("Branching..."):
                request = BranchRequest(int(at), choose=None if typed else int(choice or 1), token=typed or None,
                                        decoding=decoding)
                made = [cache.cached_branch(result.model, chosen.trust_remote_code, node.completion, request,
                                            result.ex.aggregate, chosen.device, chosen.dtype)]
            _add(tree, node.id, made)
        if do_explore:
            if forks is None or not forks.is_fork[node.completion.n_prompt:].any():
                raise ValueError("No fork points in the generated part under these thresholds: raise the margin or "
                                 "lower the entropy threshold (Fork points, above).")
            with st.spinner(f"Exploring {n_explore} fork points..."):
                made = cache.cached_explore(result.model, chosen.trust_remote_code, node.completion, forks,
                                            ExploreRequest(int(n_explore), decoding), result.ex.aggregate,
                                            chosen.device, chosen.dtype)
            _add(tree, node.id, made)
    except (AscError, ValueError) as err:
        st.error(str(err))  # the tree stays as it was


def _open_clicked() -> None:
    event = st.session_state.get("br_tree_chart")
    points = event.selection.points if event and event.selection else []
    if points and points[0].get("customdata") is not None:
        st.session_state["br_open_pick"] = int(points[0]["customdata"])


def _compare(tree: BranchTree, node: BranchNode) -> tuple[Any, ...]:
    """Two branches on their aligned ASTs; returns what the exports need."""
    st.markdown("**Compare two branches** (aligned ASTs: orange = a node only on one side, green = text changed, "
                "magenta = the first node where they part)")
    ids = list(range(len(tree)))
    if st.session_state.get("br_cmp_for") != len(tree):
        st.session_state["br_cmp_a"] = node.parent if node.parent is not None else 0
        st.session_state["br_cmp_b"] = node.id if node.id else len(tree) - 1
        st.session_state["br_cmp_for"] = len(tree)
    c1, c2, c3 = st.columns([2, 2, 2])
    label = {i: tree.nodes[i].label for i in ids}
    a = c1.selectbox("A", ids, key="br_cmp_a", format_func=label.__getitem__)
    b = c2.selectbox("B", ids, key="br_cmp_b", format_func=label.__getitem__)
    view = c3.radio("Tree", TREE_VIEWS, horizontal=True, key="br_cmp_view",
                    format_func={"partial": "Partial AST", "complete": "Complete AST"}.__getitem__)
    ea, eb = tree.nodes[a].explanation, tree.nodes[b].explanation
    diff = ast_diff(ea.tree, eb.tree)
    names = ("trunk" if a == 0 else f"branch {a}", "trunk" if b == 0 else f"branch {b}")
    first = diff.first_divergence
    if first is None:
        st.info("The two trees are equal.")
    else:
        where = [f"`{ex.tree.type[i]}` {ex.tree.text(i)[:30]!r} (line {ex.source.count(chr(10), 0, ex.tree.start[i]) + 1})"
                 if i >= 0 else "nothing" for ex, i in zip((ea, eb), first, strict=True)]
        st.markdown(f"{len(diff.removed)} node(s) only in {names[0]}, {len(diff.added)} only in {names[1]}, "
                    f"{len(diff.changed)} changed. First divergence: {names[0]} {widgets.plain(where[0])} · "
                    f"{names[1]} {widgets.plain(where[1])}")
    figs = branch_compare_figures(ea, eb, diff, view, names, max_width=charts.MAIN_PX)
    for k, fig in enumerate(figs):  # one above the other: side by side, no tree fits half the main column
        charts.panel_chart(st, fig, f"br_cmp_tree_{k}", f"brbox_{k}", charts.MAIN_PX, config={"displaylogo": False})
    table = diff_frame(ea, eb, diff, named_only=view == "partial")
    cats = category_frame(ea, eb, names)
    st.markdown("**Nodes that differ** (source order)")  # the main column's width: ten columns cut in 3/5 of it
    shown_diff = shown_table(shown_table(table, ["node_a", "node_b"], digits=0), ["value_a", "value_b"],
                             words=["text_a", "text_b"])  # 'absent': no node on that side, or no value
    st.container(key="br_diff").dataframe(shown_diff, hide_index=True, width="stretch")
    d1, _ = st.columns([3, 2])
    d1.markdown("**AsC-Eval per category**")
    d1.dataframe(shown_table(cats, [*names, "difference"]), hide_index=True, width="stretch", key="br_cats")
    d1.caption("'absent': no node of that category on that side (no value), or no node on that side at all.")
    return table, figs, names


def _tests(tree: BranchTree) -> None:
    """HumanEval's own tests on every completion of the tree, opt-in and in local mode only (it runs the generated
    code), with the mean AsC-Eval of passing and failing ones: does confidence tell them apart?"""
    if access.policy().shared or find_problem(tree.nodes[0].explanation.source) is None:
        return
    if not st.checkbox("Run HumanEval's tests on each branch (runs the generated code on this machine, in a "
                       "subprocess with a 5 s limit)", key="br_run_tests"):
        return
    runs = [cache.cached_tests(n.explanation.source) for n in tree.nodes]
    rows = [{"completion": n.label, "passed": r.passed, "result": r.result, "mean AsC-Eval from the fork": n.mean_value}
            for n, r in zip(tree.nodes, runs, strict=True)]
    st.dataframe(shown_table(pd.DataFrame(rows), ["mean AsC-Eval from the fork"]), hide_index=True, width="stretch",
                 key="br_tests")
    split = confidence_split([r.passed for r in runs], [n.mean_value for n in tree.nodes])
    st.caption(f"Mean AsC-Eval from the fork on: passing {_fmt(split.mean_passing)} ({split.n_passing}), "
               f"failing {_fmt(split.mean_failing)} ({split.n_failing}).")


def section(result: InspectorResult, tree: BranchTree | None, node: BranchNode | None, fork_cfg: ForkSettings) -> None:
    """The Branches section (module doc)."""
    st.subheader("Branches")
    if tree is None or node is None:
        st.caption("Branches start from a completion: press **Complete** to branch it at any token.")
        return
    st.caption("What if the model had taken another token? Pick a position and one of its alternatives (or type "
               "one); the model continues from there with the trunk's decoding settings.")
    _controls(result, tree, node, fork_cfg)
    fig = branch_tree_figure(tree, selected=node.id)
    st.plotly_chart(fig, key="br_tree_chart", on_select=_open_clicked, selection_mode="points",
                    config={"displaylogo": False})
    st.caption("Click a branch point (or choose it under **Showing**, above) to open it in the views.")
    _tests(tree)
    compared = None
    if len(tree) > 1:
        with st.container(key="br_compare"):
            compared = _compare(tree, node)
    with st.expander("Export branches"):
        e1, e2, e3 = st.columns(3)
        e1.download_button("Branch tree JSON", lambda: tree_json(tree), "branches.json", "application/json",
                           on_click="ignore", key="dl_branches_json")
        e2.download_button("Branch tree (HTML)", lambda: figure_html(fig), "branch-tree.html", "text/html",
                           on_click="ignore", key="dl_branches_html")
        if compared is not None:
            table, figs, names = compared
            e1.download_button("Differences CSV", lambda: csv_text(table), "branch-differences.csv", "text/csv",
                               on_click="ignore", key="dl_branches_diff")
            for k, (f, name) in enumerate(zip(figs, names, strict=True)):
                e3.download_button(f"{name} tree (HTML)", partial(figure_html, f), f"branch-compare-{k + 1}.html",
                                   "text/html", on_click="ignore", key=f"dl_branches_cmp_{k}")
