"""asc.viz.treefit and tree_figure(max_width=...): trees drawn to fit their panel, labels shortened by whole words.

Widths are recomputed here from the figure's own positions and labels (asc.viz.treefit.text_px); the browser check
of the same property at 1400 x 1000 px is tests/e2e/test_fit.py.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from asc.explain import explain
from asc.paths import EXAMPLES_DIR
from asc.viz import tree_figure
from asc.viz.layout import tree_layout
from asc.viz.treefit import MARKER_PX, STYLES, WORDS, abbreviate, fit_labels, text_px, wrap_px

MAIN_PX = 940  # ui.charts.MAIN_PX: the inspector's panel at a 1400 px window
EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".py", ".java"))


@pytest.fixture(scope="module")
def explained(tiny):
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            path = EXAMPLES_DIR / name
            cache[name] = explain(tiny, path.read_text(encoding="utf-8"),
                                  language="java" if name.endswith(".java") else "python")
        return cache[name]

    return get


def _labels(fig) -> list[tuple[float, str, float]]:
    """(x, label text, font size) of every drawn node."""
    out = []
    for trace in fig.data:
        if trace.name in ("value", "no tokens") and trace.customdata is not None:
            out += [(float(x), str(t), float(trace.textfont.size)) for x, t in zip(trace.x, trace.text)]
    return out


def test_text_px_adds_up_arial_widths():
    assert text_px("") == 0
    assert text_px("ii") < text_px("mm") and text_px("abc") == pytest.approx(text_px("a") + text_px("bc"))
    assert text_px("module", 22) == pytest.approx(2 * text_px("module", 11))
    assert text_px("漢") > text_px("a")  # a wide character takes a whole em


def test_abbreviations_keep_whole_words():
    assert abbreviate("comparison_operator") == "compare_op"
    assert abbreviate("expression_statement") == "expr_stmt" and abbreviate("block") == "block"
    for full in ("function_definition", "local_variable_declaration", "method_invocation", "identifier", "if"):
        short = abbreviate(full)
        # each word is the original word or its listed abbreviation: never a word cut short
        assert [w if w == orig else WORDS[orig] for w, orig in zip(short.split("_"), full.split("_"))] == short.split("_")


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("view", ["partial", "complete"])
def test_trees_of_the_examples_fit_the_inspector_panel(explained, name, view):
    ex = explained(name)
    fig = tree_figure(ex, view, collapse_unary=view == "partial", max_width=MAIN_PX)
    assert fig.layout.meta["fits"] and fig.layout.width <= MAIN_PX
    room = fig.layout.xaxis.range[1]  # the x range is the plot's width in pixels
    assert max(x + MARKER_PX + text_px(t, size) for x, t, size in _labels(fig)) <= room  # every label ends inside


def test_a_deep_tree_places_children_after_their_own_parent(explained):
    """Past the aligned styles a child starts right after its own parent's label: no edge or label crosses another
    (siblings share an x; a child lies right of its parent's label end)."""
    ex = explained("Main.java")
    lay = tree_layout(ex.tree, "complete", None, False)
    fitted = fit_labels(ex, lay, MAIN_PX - 44)
    assert fitted.fits and not fitted.style.aligned
    for k in range(1, lay.n_boxes):
        p = lay.parent_box[k]
        assert fitted.x_px[k] >= fitted.x_px[p] + fitted.label_px[p]
        siblings = np.flatnonzero(lay.parent_box == p)
        assert (fitted.x_px[siblings] == fitted.x_px[k]).all()


def test_the_default_examples_trees_fit_the_panel(explained):
    """The inspector's default example (count_chars.py) fits in both views: what a new user sees first."""
    for view in ("partial", "complete"):
        fig = tree_figure(explained("count_chars.py"), view, collapse_unary=view == "partial", max_width=MAIN_PX)
        assert fig.layout.meta["fits"] and fig.layout.width <= MAIN_PX


def test_labels_are_shortened_by_whole_words_and_the_hover_keeps_the_names(explained):
    ex = explained("count_chars.py")
    lay = tree_layout(ex.tree, "partial", None, True)
    full = fit_labels(ex, lay)
    narrow = fit_labels(ex, lay, 520)
    assert full.style == STYLES[0] and full.fits
    assert narrow.width_px <= 520 or not narrow.fits
    assert narrow.width_px < full.width_px
    vocabulary = set(WORDS.values()) | {"…", "›", "+"}
    for long, short in zip(full.labels, narrow.labels, strict=True):
        words = set(re.findall(r"[A-Za-z]+", long))
        for word in re.findall(r"[A-Za-z]+|…|›", short):
            # a shortened label reads whole words of the full one, listed abbreviations, or ends on an ellipsis
            assert word in words or word in vocabulary or short.endswith("…"), (long, short)
    fig = tree_figure(ex, "partial", collapse_unary=True, max_width=520)
    hovers = " ".join(h for t in fig.data if t.hovertext is not None for h in t.hovertext)
    assert "comparison_operator" in hovers and "expression_statement › assignment" in hovers


def test_an_unbounded_figure_keeps_every_full_label(explained):
    ex = explained("count_chars.py")
    texts = [t for _, t, _ in _labels(tree_figure(ex, "partial", collapse_unary=True))]
    assert "comparison_operator" in texts and "identifier: count_chars" in texts
    assert "expression_statement › assignment" in texts


def test_the_legend_is_a_horizontal_bar_at_the_top_left(explained):
    fig = tree_figure(explained("word_counts.py"), "complete", max_width=MAIN_PX)
    bar = next(t for t in fig.data if t.name == "value").marker.colorbar
    inset = math.ceil(max(text_px(t, 10) for t in bar.ticktext) / 2) + 2  # half the widest tick label (its minus)
    assert bar.orientation == "h" and bar.xanchor == "left" and bar.x * fig.layout.width <= fig.layout.margin.l + inset
    assert bar.yref == "container" and bar.y * fig.layout.height > fig.layout.height - fig.layout.margin.t
    assert bar.len + 80 <= fig.layout.width  # the bar and its title fit the figure


def test_titles_wrap_to_the_width_and_stay_escaped():
    title = "A: 3 node(s) removed (orange), 2 changed (green), first divergence (magenta) <a href='x'>y</a>"
    wrapped = wrap_px(title, 200)
    lines = wrapped.split("<br>")
    assert len(lines) > 2 and all(text_px(line.replace("&lt;", "<").replace("&gt;", ">"), 13) <= 200
                                  or " " not in line for line in lines)
    assert "<a" not in wrapped and "&lt;a" in wrapped


def test_a_tree_too_deep_for_its_panel_says_so(tiny):
    deep = "x = " + "(" * 60 + "1" + ")" * 60 + "\n"
    fig = tree_figure(explain(tiny, deep), "complete", max_width=MAIN_PX)
    assert not fig.layout.meta["fits"] and fig.layout.width > MAIN_PX
    assert np.isfinite(fig.layout.width)
