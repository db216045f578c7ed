"""Tree labels that fit a panel: text widths, node type abbreviations, and the label detail a width allows.

A tree figure (:func:`asc.viz.snippet.tree_figure`) draws depth across: each column is as wide as the longest
label of an *inner* node in it (a leaf's label may run on to the right: its row holds nothing further right, since
rows are the leaves in source order and a subtree owns a contiguous band of rows). :func:`fit_labels` tries the
label styles of :data:`STYLES` from the most detailed to the most compact and keeps the first whose drawing is no
wider than the panel: full type names; abbreviated types (``comparison_operator`` -> ``compare_op``, whole words
only, never a word cut short: the hover text keeps the full names); collapsed chains shown by their last node;
children placed right after their own parent's label rather than in one column per depth; a smaller font. Each
leaf keeps the most of ``type: text`` that fits (the text alone, then shortened with an ellipsis). When even the
most compact style is too wide it says so (``fits``), and the page makes the overflow obvious (a scrollbar and a
hint).

Widths are computed, not measured: labels are set in Arial (Liberation Sans and Helvetica share its metrics) and
:func:`text_px` adds up Arial's advance widths, so the estimate holds in any browser that has one of the three.
"""

from __future__ import annotations

import html
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from asc.explain import Explanation
from asc.viz.layout import TreeLayout

__all__ = ["FONT_FAMILY", "STYLES", "FittedLabels", "LabelStyle", "abbreviate", "chain_label", "fit_labels",
           "node_label", "text_px", "wrap_px"]

FONT_FAMILY = "Arial, 'Liberation Sans', Helvetica, sans-serif"
# Arial's advance widths of the printable ASCII characters (space to ~), in thousandths of the font size
_ARIAL = (278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556,
          556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667,
          556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556,
          556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722,
          500, 500, 500, 334, 260, 334, 584)
_SAFETY = 1.06  # fallback fonts and hinting: a few percent wider than Arial's own metrics
MARKER_PX = 11.0  # from a node's center to its label's end, besides the text: plotly starts it 8.5 px right

# whole-word abbreviations of tree-sitter's Python and Java node types (the hover keeps the full name)
WORDS = {
    "access": "acc", "annotation": "annot", "argument": "arg", "arguments": "args", "assignment": "assign",
    "attribute": "attr", "augmented": "aug", "binary": "bin", "boolean": "bool", "character": "char",
    "comparison": "compare", "comprehension": "compr", "conditional": "cond", "constructor": "ctor",
    "declaration": "decl", "declarator": "decl", "decorated": "decor", "decorator": "decor", "default": "dflt",
    "definition": "def", "dictionary": "dict", "expression": "expr", "function": "func", "generator": "gen",
    "identifier": "id", "integer": "int", "interpolation": "interp", "invocation": "call", "keyword": "kw",
    "literal": "lit", "modifiers": "mods", "operator": "op", "parameter": "param",
    "parameters": "params", "parenthesized": "paren", "primitive": "prim", "statement": "stmt", "string": "str",
    "subscript": "subscr", "variable": "var",
}


@lru_cache(maxsize=65536)
def text_px(text: str, size: float = 11.0) -> float:
    """Width of ``text`` in pixels at ``size`` px in Arial (other characters: 0.6 em, 1 em for wide ones)."""
    total = 0
    for ch in text:
        code = ord(ch)
        if 32 <= code < 127:
            total += _ARIAL[code - 32]
        else:
            total += 1000 if unicodedata.east_asian_width(ch) in ("W", "F") else 600
    return total * size / 1000 * _SAFETY


@lru_cache(maxsize=4096)
def abbreviate(type_name: str) -> str:
    """``type_name`` with every snake_case word of :data:`WORDS` abbreviated, the others kept whole."""
    return "_".join(WORDS.get(word, word) for word in type_name.split("_"))


def _shorten(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters with an ellipsis, at a ``_`` or ``.`` when one lies in the second half."""
    if len(text) <= chars:
        return text
    head = text[:chars]
    cut = max(head.rfind("_"), head.rfind("."))
    return (head[:cut] if cut >= chars // 2 else head) + "…"


@dataclass(frozen=True)
class LabelStyle:
    """How inner nodes (those with drawn children) are labelled, and how far apart the columns stand."""

    abbreviate: bool  # node types by :func:`abbreviate`
    short_chains: bool  # a collapsed chain by its last node (``… › assign``) instead of ``top › … › bottom``
    font_px: float = 11.0
    gap_px: float = 26.0  # between a parent's label and its children (the edges' elbows live here)
    aligned: bool = True  # one column per depth (False: children start right after their own parent's label)


STYLES = (
    LabelStyle(abbreviate=False, short_chains=False),
    LabelStyle(abbreviate=True, short_chains=False),
    LabelStyle(abbreviate=True, short_chains=True, gap_px=20.0),
    LabelStyle(abbreviate=True, short_chains=True, gap_px=20.0, aligned=False),
    LabelStyle(abbreviate=True, short_chains=True, font_px=10.0, gap_px=14.0, aligned=False),
)
# a leaf's labels from the most detailed on: (types abbreviated, "type: text" or the text alone, at most n characters)
LEAF_LABELS = ((False, True, 24), (True, True, 24), (True, False, 24), (True, False, 16), (True, False, 10),
               (True, False, 6))
LEAF_FLOOR = 3  # before the most compact style, a leaf keeps at least LEAF_LABELS[LEAF_FLOOR]: 16 characters


def node_label(ex: Explanation, node: int, width: int = 24, abbreviated: bool = False, with_type: bool = True) -> str:
    """Short label: the type for named nodes, the source text for anonymous leaves (``)``, ``if``); named leaves
    (identifiers, literals) add their one-line text, at most ``width`` characters (``with_type=False``: the text
    alone)."""
    t = ex.tree
    kind = abbreviate(t.type[node]) if abbreviated else t.type[node]
    if t.is_missing[node]:
        return f"MISSING {kind}"
    if not t.named[node]:
        return t.type[node]
    if node + 1 >= t.n_nodes or t.parent[node + 1] != node:  # pre-order: a first child comes right after
        text = t.text(node, limit=width + 1)  # never more of a long string than is shown
        if text and "\n" not in text:
            return f"{kind}: {_shorten(text, width)}" if with_type else _shorten(text, width)
    return kind


def chain_label(ex: Explanation, members: tuple[int, ...], abbreviated: bool = False, short: bool = False,
                width: int = 24, with_type: bool = True) -> str:
    """A collapsed chain reads ``top › … › bottom`` (``short``: ``… › bottom``); one node reads as
    :func:`node_label`."""
    def one(node: int) -> str:
        return node_label(ex, node, width, abbreviated, with_type)

    if len(members) > 1 and short:
        return f"… › {one(members[-1])}"
    if len(members) > 2:
        return f"{one(members[0])} › … › {one(members[-1])}"
    return " › ".join(one(m) for m in members)


@dataclass(frozen=True)
class FittedLabels:
    """Labels of a layout's boxes in one style, and where that puts each box (pixels from the root's center)."""

    labels: list[str]
    label_px: np.ndarray  # (V,) from a box's center to the end of its label
    x_px: np.ndarray  # (V,) the box's center
    width_px: float  # from the root's center to the end of the rightmost label
    style: LabelStyle
    fits: bool  # width_px <= the width asked for (True when none was asked for)


def _columns(lay: TreeLayout, inner: np.ndarray, label_px: np.ndarray, style: LabelStyle) -> np.ndarray:
    """Each box's x. Aligned: one column per depth, as wide as its longest inner label (leaves' labels run on to the
    right). Not aligned: a box's children start right after its own label, so a long label widens only its own
    subtree; boxes of one parent still share an x (sibling subtrees own disjoint rows: nothing overlaps)."""
    if not style.aligned:
        x = np.zeros(lay.n_boxes)
        for k in range(1, lay.n_boxes):  # pre-order: a parent's x is set before its children's
            p = lay.parent_box[k]
            x[k] = x[p] + max(label_px[p], MARKER_PX) + style.gap_px
        return x
    cols = lay.x.astype(int)
    col_px = np.full(int(cols.max()) + 1, MARKER_PX)
    np.maximum.at(col_px, cols[inner], label_px[inner])
    return np.concatenate([[0.0], np.cumsum(col_px + style.gap_px)])[cols]


def _suffix(folded: bool) -> str:
    return " +" if folded else ""


def _try(ex: Explanation, lay: TreeLayout, inner: np.ndarray, style: LabelStyle, room: float | None,
         floor: int) -> FittedLabels:
    """``style`` for the inner boxes; each leaf the most detailed of LEAF_LABELS[:floor + 1] that ends within
    ``room`` (else the last of them)."""
    labels = [""] * lay.n_boxes
    label_px = np.zeros(lay.n_boxes)
    for k in np.flatnonzero(inner):
        labels[k] = chain_label(ex, lay.members[k], style.abbreviate, style.short_chains) + _suffix(lay.folded[k])
        label_px[k] = MARKER_PX + text_px(labels[k], style.font_px)
    x = _columns(lay, inner, label_px, style)
    fits = room is None or bool((x + label_px).max(initial=0.0) <= room)
    for k in np.flatnonzero(~inner):
        seen = set()
        for abbreviated, with_type, width in LEAF_LABELS[:floor + 1]:
            members = lay.members[k] if with_type else lay.members[k][-1:]  # the text alone: no chain
            label = chain_label(ex, members, abbreviated or style.abbreviate, style.short_chains, width,
                                with_type) + _suffix(lay.folded[k])
            if label in seen:
                continue
            seen.add(label)
            labels[k], label_px[k] = label, MARKER_PX + text_px(label, style.font_px)
            if room is None or x[k] + label_px[k] <= room:
                break
        else:
            fits = False
    drawn = float((x + label_px).max()) if lay.n_boxes else 0.0
    return FittedLabels(labels, label_px, x, drawn, style, fits)


def fit_labels(ex: Explanation, lay: TreeLayout, max_width: float | None = None) -> FittedLabels:
    """The most detailed style of :data:`STYLES` (and leaf labels) whose drawing of ``lay`` is at most ``max_width``
    px wide: the first style, leaves in full, without a width; the most compact, with ``fits=False``, when none is."""
    inner = np.zeros(lay.n_boxes, dtype=bool)
    inner[lay.parent_box[lay.parent_box >= 0]] = True  # boxes with drawn children: their labels need the column
    if max_width is None:
        return _try(ex, lay, inner, STYLES[0], None, 0)
    styles: tuple[LabelStyle, ...] = STYLES
    n_cols = int(lay.x.max()) + 1 if lay.n_boxes else 1
    if n_cols * (MARKER_PX + STYLES[-1].gap_px) > max_width:
        styles = STYLES[-1:]  # too deep for any labels to fit: straight to the most compact
    for k, style in enumerate(styles):
        last = k == len(styles) - 1
        fitted = _try(ex, lay, inner, style, max_width, len(LEAF_LABELS) - 1 if last else LEAF_FLOOR)
        if fitted.fits or last:
            return fitted
    raise AssertionError("unreachable")  # the loop returns at its last style


def wrap_px(text: str, width: float, size: float = 13.0) -> str:
    """``text`` HTML-escaped for a plotly title and broken (``<br>``) between words into lines of at most ``width``
    px at ``size`` px (a word longer than a line gets a line of its own)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_px(f"{lines[-1]} {word}", size) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "<br>".join(html.escape(line, quote=False) for line in lines)
