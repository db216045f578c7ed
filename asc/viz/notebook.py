"""Notebook views of results: the HTML a result shows inline (``_repr_html_``) and the figures its methods return.

Each builder is registered for its result class and view name (:func:`asc.display.register`; the result's method
calls :func:`asc.display.show`, see there why). Figures are the app's own (:func:`~asc.viz.snippet.tree_figure`,
:func:`~asc.viz.snippet.category_figure`, :func:`~asc.viz.depth.category_layer_heatmap`,
:func:`~asc.viz.branches.branch_tree_figure`). The inline HTML is static and self-contained: inline styles and
text only, no script, no stylesheet or font fetched from anywhere, so a notebook shows it offline, on GitHub and
after export. An explanation shows a one-line summary, the colored sequence view
(:func:`~asc.viz.snippet.sequence_html`, token details on hover) and the category strip (:func:`category_strip`:
a cell per category on the value scale); a completion, never scored, shows its text with the generated part
underlined; the per-layer result shows a category x layer table colored like the heatmap.
"""

from __future__ import annotations

import html
import math
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.branching.branches import Branch
from asc.branching.tree import BranchNode, BranchTree
from asc.concepts import CONFIDENCE_LINE
from asc.depth import LayerExplanation
from asc.display import register
from asc.explain import Explanation
from asc.generate import STOP_REASONS, Completion
from asc.missing import ABSENT
from asc.viz.branches import branch_tree_figure
from asc.viz.colors import text_color, value_color
from asc.viz.depth import category_layer_heatmap
from asc.viz.snippet import category_figure, sequence_html, tree_figure

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["branch_html", "branch_node_html", "branch_tree_html", "category_strip", "completion_html",
           "explanation_html", "layers_html", "scale_legend"]

BOX = "font-family:system-ui,sans-serif;font-size:13px;color:#111;max-width:100%"
CELL = "padding:3px 8px;border-radius:4px;border:1px solid #999;white-space:nowrap"


def _fmt(value: float | None, digits: int = 3) -> str:
    return ABSENT if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _cell(value: float | None, label: str, tip: str) -> str:
    """A span colored by ``value`` on the fixed scale (grey when missing), its text black or white for contrast."""
    bg = value_color(value)
    return (f'<span title="{html.escape(tip)}" style="{CELL};background:{bg};color:{text_color(bg)}">'
            f"{html.escape(label)}</span>")


def scale_legend() -> str:
    """The value scale as a small bar, red (0) to blue (1), grey for no value (static HTML)."""
    stops = ", ".join(value_color(x) for x in np.linspace(0.0, 1.0, 11))
    bar = (f'<span style="display:inline-block;width:120px;height:10px;vertical-align:middle;border:1px solid #999;'
           f'background:linear-gradient(to right, {stops})"></span>')
    return (f'<div style="font-size:11px;color:#444;margin:2px 0">0 {bar} 1 · '
            f'{_cell(None, "no value", "no token, or no prediction")}</div>')


def category_strip(values: Mapping[str, float], threshold: float = CONFIDENCE_LINE) -> str:
    """A cell per category on the value scale (``absent``: no node of it in the snippet, grey), in the mapping's
    order; a category below ``threshold`` is marked with ▼ (static HTML, the bar chart's content in one line)."""
    cells = []
    for name, value in values.items():
        missing = value is None or math.isnan(value)
        mark = "" if missing or value >= threshold else " ▼"
        label = f"{name} {ABSENT if missing else _fmt(value, 2)}{mark}"
        tip = f"{name}: " + ("no node of this category in the snippet" if missing
                             else f"{value:.3f} ({'below' if mark else 'at or above'} {threshold:g})")
        cells.append(_cell(None if missing else value, label, tip))
    return ('<div class="asc-categories" style="display:flex;flex-wrap:wrap;gap:4px;margin:6px 0">'
            + "".join(cells) + "</div>")


def _summary(ex: Explanation, n_prompt: int | None) -> str:
    s, t = ex.scores, ex.tree
    tokens = f"{s.n_tokens} tokens" if n_prompt is None else f"{n_prompt} + {s.n_tokens - n_prompt} tokens"
    parts = [f"<b>{html.escape(str(ex.model.get('name', 'model')))}</b>", f"aggregation {html.escape(ex.aggregate)}",
             f"cross-entropy {_fmt(ex.loss)}", f"perplexity {_fmt(ex.perplexity, 2)}", tokens,
             f"{t.n_nodes} AST nodes", html.escape(t.language)]
    if t.has_error:
        parts.append("syntax errors")
    return f'<div style="margin:2px 0">{" · ".join(parts)}</div>'


@register(Explanation, "html")
def explanation_html(ex: Explanation, n_prompt: int | None = None, forks: Collection[int] | None = None,
                     threshold: float = CONFIDENCE_LINE) -> str:
    """An explanation inline: its summary, the colored sequence view and the category strip."""
    return (f'<div class="asc-result" style="{BOX}">{_summary(ex, n_prompt)}'
            f"{sequence_html(ex, n_prompt=n_prompt, forks=forks)}{category_strip(ex.category_values, threshold)}"
            f"{scale_legend()}</div>")


@register(Explanation, "complete_tree")
def _complete_tree(ex: Explanation, **options: Any) -> go.Figure:
    return tree_figure(ex, "complete", **options)


@register(Explanation, "partial_tree")
def _partial_tree(ex: Explanation, **options: Any) -> go.Figure:
    return tree_figure(ex, "partial", **({"collapse_unary": True} | options))


@register(Explanation, "category_chart")
def _category_chart(ex: Explanation, **options: Any) -> go.Figure:
    return category_figure(ex.category_values, **options)


@register(Completion, "html")
def completion_html(comp: Completion) -> str:
    """A completion inline (not scored: no colors): the prompt, then the generated text underlined, and why
    generation stopped."""
    n_new = len(comp.ids) - comp.n_prompt
    why = STOP_REASONS.get(comp.stop_reason, comp.stop_reason)
    head = (f"{comp.n_prompt} prompt + {n_new} generated tokens; stopped: {html.escape(why)}. "
            "<code>asc.explain_completion(bundle, completion)</code> colors each token by its probability.")
    text = (f'<pre style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;white-space:pre;'
            f'overflow-x:auto;padding:8px;border:1px solid #ddd;border-radius:6px;background:#fff;color:#111">'
            f'{html.escape(comp.prompt)}<span style="text-decoration:underline;text-decoration-thickness:2px;'
            f'font-weight:600">{html.escape(comp.completion)}</span></pre>')
    return f'<div class="asc-result" style="{BOX}"><div style="margin:2px 0">{head}</div>{text}</div>'


def _forced(br: Branch) -> str:
    rank = "typed" if br.forced_rank == 0 else f"rank {br.forced_rank}"
    return (f"forced <code>{html.escape(repr(br.forced_text))}</code> at token {br.fork_index} ({rank}, "
            f"p {_fmt(br.forced_prob)})")


@register(Branch, "html")
def branch_html(br: Branch) -> str:
    """A branch inline: what was forced where, then its completion (:func:`completion_html`)."""
    return f'<div style="{BOX}"><div style="margin:2px 0">Branch: {_forced(br)}</div>{completion_html(br.completion)}</div>'


@register(BranchNode, "html")
def branch_node_html(node: BranchNode) -> str:
    """A node of a branch tree inline: its label and mean value, then its explanation with the generated tokens
    underlined and its fork point marked."""
    head = f"<b>{html.escape(node.label)}</b> · mean value after the fork {_fmt(node.mean_value)}"
    head += "" if node.parses else " · does not parse"
    forks = None if node.branch is None else [node.fork_index]
    return (f'<div style="{BOX}"><div style="margin:2px 0">{head}</div>'
            f"{explanation_html(node.explanation, n_prompt=node.completion.n_prompt, forks=forks)}</div>")


@register(BranchTree, "html")
def branch_tree_html(tree: BranchTree) -> str:
    """A branch tree inline: a row per node (parent, what was forced, mean value after the fork, whether it
    parses), then the trunk (:func:`branch_node_html`)."""
    rows = []
    for node in tree.nodes:
        forced = "" if node.branch is None else _forced(node.branch)
        rows.append(f'<tr><td>{node.id}</td><td>{"" if node.parent is None else node.parent}</td><td>{forced}</td>'
                    f"<td>{_cell(node.mean_value, _fmt(node.mean_value), 'mean value after the fork')}</td>"
                    f"<td>{'yes' if node.parses else 'no'}</td></tr>")
    table = ('<table style="border-collapse:collapse;margin:4px 0"><tr><th>node</th><th>parent</th><th>branch</th>'
             "<th>mean value</th><th>parses</th></tr>" + "".join(rows) + "</table>")
    return f'<div style="{BOX}">{table}{branch_node_html(tree.trunk)}</div>'


@register(BranchTree, "tree")
def _branch_tree(tree: BranchTree, selected: int | None = None) -> go.Figure:
    return branch_tree_figure(tree, selected=selected)


@register(LayerExplanation, "html")
def layers_html(depth: LayerExplanation, threshold: float = CONFIDENCE_LINE) -> str:
    """The per-layer result inline: a category (rows) x layer (columns) table colored like the heatmap, each row
    ending with its first layer at or above ``threshold``, then the output layer's explanation."""
    crossing = depth.crossing(threshold)
    head = "".join(f'<th style="font-weight:normal;font-size:10px">{k}</th>' for k in range(depth.n_layers))
    rows = []
    for k, cat in enumerate(depth.categories):
        column = depth.category_values[:, k]
        if np.isnan(column).all():
            continue
        cells = "".join(f'<td title="{html.escape(cat)}, layer {layer}: {_fmt(v)}" style="width:14px;height:16px;'
                        f'background:{value_color(v)}"></td>' for layer, v in enumerate(column.tolist()))
        hit = crossing[cat]
        rows.append(f'<tr><td style="white-space:nowrap;padding-right:6px">{html.escape(cat)}</td>{cells}'
                    f'<td style="white-space:nowrap;padding-left:6px">{"never" if hit is None else f"L{hit}"}</td></tr>')
    table = (f'<table class="asc-layers" style="border-collapse:separate;border-spacing:1px;margin:4px 0">'
             f"<tr><th></th>{head}<th>first ≥ {threshold:g}</th></tr>{''.join(rows)}</table>")
    title = (f"<div style='margin:2px 0'><b>Category value per layer</b> (layer 0 = embeddings, "
             f"{depth.n_layers - 1} = output)</div>")
    return f'<div style="{BOX}">{title}{table}{explanation_html(depth.explanation, threshold=threshold)}</div>'


@register(LayerExplanation, "layers_heatmap")
def _layers_heatmap(depth: LayerExplanation, **options: Any) -> go.Figure:
    return category_layer_heatmap(depth, **options)
