"""asc.viz.snippet with the tiny random model: the AST figure, the sequence view, category bars, purity.

Expected values are recomputed from the Explanation (values, scores, alignment) and from
asc.viz.layout, never copied from the random model's output.
"""

from __future__ import annotations

import copy
import html
import math
import re

import numpy as np
import pytest

from asc.explain import explain, explain_scored
from asc.scores import score_ids
from asc.viz import NO_VALUE, category_figure, sequence_html, tree_figure, value_color
from asc.viz import snippet as figures
from asc.viz.layout import TREE_VIEWS, tree_layout
from tests.helpers import rgb as _rgb

SRC = "def f(x):\n    y = x + 1\n    return y\n"
BROKEN = "def f(x:\n  return (1\n"  # ERROR nodes
MISSING = "def f(:\n  pass\n"  # a MISSING ")"
NON_ASCII = 'def größe(x):\n    s = "héllo ✓"\n    return s\n'
TABS_CRLF = 'def f(a,\tb):\r\n\tx = "a\tb"\r\n\treturn a\r\n'
SPECIAL = 'def g(a, b, c, d, e):\n    return a < b and c > d & e\ns = "<script>alert(1)</script> &amp;"\n'
SOURCES = [SRC, BROKEN, MISSING, NON_ASCII, TABS_CRLF, SPECIAL]
SOURCE_IDS = ["plain", "error", "missing", "non-ascii", "tabs-crlf", "special-chars"]

SPAN = re.compile(r'<span data-token="(\d+)" title="([^"]*)" style="([^"]*)">([^<]*)</span>')
MARKER = '<span title="generated from here"'


@pytest.fixture(scope="module")
def explained(tiny):
    cache = {}

    def get(source, bundle=None):
        key = (source, id(bundle))
        if key not in cache:
            cache[key] = explain(bundle or tiny, source)
        return cache[key]

    return get


def _traces(fig):
    return {tr.name: tr for tr in fig.data}


def _positions(fig) -> dict[int, tuple[float, float]]:
    """Node id -> (x, y) of its marker in the value / no-tokens traces."""
    out = {}
    for t in fig.data:
        if t.name in ("value", "no tokens") and t.customdata is not None:
            for n, x, y in zip(t.customdata, t.x, t.y):
                out[int(n)] = (float(x), float(y))
    return out


def _symbols(trace) -> list[str]:
    """The trace's marker symbol per point (a figure gives one scalar when every point has the same symbol)."""
    symbol = trace.marker.symbol
    return [symbol] * len(trace.customdata) if isinstance(symbol, str) else list(symbol)


def _background_ok(style: str, value, piece: str) -> bool:
    """The span's background is value_color(value); whitespace-only tokens may use a lighter tint of it."""
    m = re.search(r"background:([^;]+)", style)
    assert m, style
    got, color = m.group(1), value_color(value)
    if got == color:
        return True
    if piece.strip():
        return False
    if color.startswith("rgb("):  # the same rgb with an alpha
        m = re.fullmatch(r"rgba\((\d+), ?(\d+), ?(\d+), ?(0?\.\d+)\)", got)
        return bool(m) and tuple(int(v) for v in m.groups()[:3]) == _rgb(color)
    return bool(re.fullmatch(r"#[0-9a-f]{6}", got)) and all(int(got[j:j + 2], 16) > 0xB0 for j in (1, 3, 5))


def _drop_tags(fragment: str) -> str:
    return re.sub(r"<[^>]*>", "", fragment)


def _visible_text(fragment: str) -> str:
    return html.unescape(_drop_tags(fragment))


def _drawn(ex) -> list[int]:
    """Tokens the sequence view draws: those reaching past every earlier token (shared characters once)."""
    out, reach = [], 0
    for i in range(ex.scores.n_tokens):
        if ex.scores.end[i] > reach:
            out.append(i)
            reach = int(ex.scores.end[i])
    return out


def _spans(fragment: str) -> list[tuple[int, str, str, str]]:
    return [(int(i), html.unescape(t), s, html.unescape(txt)) for i, t, s, txt in SPAN.findall(fragment)]


# ------------------------------------------------------------------------------------------ tree_figure


@pytest.mark.parametrize("max_depth,collapse", [(None, False), (2, True)], ids=["plain", "folded-collapsed"])
@pytest.mark.parametrize("view", TREE_VIEWS)
@pytest.mark.parametrize("source", SOURCES, ids=SOURCE_IDS)
def test_tree_figure_nodes_values_and_symbols(explained, source, view, max_depth, collapse):
    ex = explained(source)
    lay = tree_layout(ex.tree, view, max_depth, collapse)
    fig = tree_figure(ex, view, max_depth=max_depth, collapse_unary=collapse)
    tr = _traces(fig)
    assert {"edges", "value", "no tokens"} <= set(tr) and "selected" not in tr
    box_of = {int(n): k for k, n in enumerate(lay.node)}

    valued = [int(c) for c in tr["value"].customdata]
    grey = [int(c) for c in (tr["no tokens"].customdata if tr["no tokens"].customdata is not None else ())]
    # the two node traces partition the shown boxes
    assert sorted(valued + grey) == lay.node.tolist()
    # value trace: marker.color is exactly ex.values of the drawn nodes, all finite, fixed 0..1 scale
    colors = list(tr["value"].marker.color)
    assert colors == ex.values[valued].tolist()
    assert np.isfinite(colors).all()
    assert tr["value"].marker.cmin == 0 and tr["value"].marker.cmax == 1
    assert tr["value"].marker.showscale
    # no-tokens trace: exactly the shown nodes whose value is NaN, drawn grey
    assert set(grey) == {int(n) for n in lay.node if math.isnan(ex.values[n])}
    assert tr["no tokens"].marker.color == NO_VALUE
    for name, ids in (("value", valued), ("no tokens", grey)):
        t = tr[name]
        if not ids:
            continue
        ks = [box_of[n] for n in ids]
        np.testing.assert_array_equal(np.asarray(t.y, float), lay.y[ks])
        expected = ["diamond-open" if ex.tree.is_missing[n] else "x" if ex.tree.is_error[n] else "circle" for n in ids]
        assert _symbols(t) == expected
        # folded boxes carry a "+" after their label
        assert [lbl.endswith(" +") for lbl in t.text] == [bool(lay.folded[k]) for k in ks]
    # x: one position per layout column, increasing left to right (the figure may scale columns)
    pos = _positions(fig)
    col_x = {}
    for k, n in enumerate(lay.node.tolist()):
        col_x.setdefault(int(lay.x[k]), set()).add(pos[n][0])
    assert all(len(xs) == 1 for xs in col_x.values()), col_x
    xs = [next(iter(col_x[c])) for c in sorted(col_x)]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)
    # one elbow (5 points incl. the gap) per edge
    assert sum(v is None or v != v for v in tr["edges"].x) == lay.n_boxes - 1  # None or NaN: a gap


def test_error_and_missing_symbols(explained):
    ex = explained(BROKEN)
    errors = np.flatnonzero(ex.tree.is_error).tolist()
    assert errors
    fig = tree_figure(ex, "partial")
    symbol = {}
    for t in fig.data:
        if t.name in ("value", "no tokens") and t.customdata is not None:
            symbol.update(zip((int(c) for c in t.customdata), _symbols(t)))
    assert all(symbol[e] == "x" for e in errors)
    assert all(s == "circle" for n, s in symbol.items() if n not in errors)

    ex = explained(MISSING)
    missing = np.flatnonzero(ex.tree.is_missing).tolist()
    assert missing
    fig = tree_figure(ex, "partial")
    tr = _traces(fig)
    # a MISSING node has no token: grey, open diamond
    assert set(missing) <= {int(c) for c in tr["no tokens"].customdata}
    symbols = dict(zip((int(c) for c in tr["no tokens"].customdata), _symbols(tr["no tokens"])))
    assert all(symbols[m] == "diamond-open" for m in missing)


@pytest.mark.parametrize("view", TREE_VIEWS)
def test_selected_node_is_marked_at_its_position(explained, view):
    ex = explained(SRC)
    lay = tree_layout(ex.tree, view)
    for k in (0, lay.n_boxes // 2, lay.n_boxes - 1):
        node = int(lay.node[k])
        fig = tree_figure(ex, view, selected=node)
        tr = _traces(fig)
        assert "selected" in tr
        assert (float(tr["selected"].x[0]), float(tr["selected"].y[0])) == _positions(fig)[node]
        assert len(tr["selected"].x) == 1 and tr["selected"].y[0] == lay.y[k]
        assert sum(1 for t in tree_figure(ex, view, selected=node).data if t.name == "selected") == 1


def test_selected_member_of_collapsed_chain_is_marked(explained):
    """A node merged into a unary-chain box is drawn (in that box), so selecting it must mark the box.

    The inspect page collapses chains by default and lets the user pick any named node from a list.
    """
    ex = explained("x = 1\n")
    lay = tree_layout(ex.tree, "partial", collapse_unary=True)
    chain = next(mem for mem in lay.members if len(mem) > 1)
    k = lay.members.index(chain)
    fig = tree_figure(ex, "partial", collapse_unary=True, selected=chain[-1])
    tr = _traces(fig)
    assert "selected" in tr, f"selecting {ex.tree.type[chain[-1]]} (inside box {chain}) marks nothing"
    assert (float(tr["selected"].x[0]), float(tr["selected"].y[0])) == _positions(fig)[int(lay.node[k])]


def test_figure_height_grows_with_rows(explained):
    small = explained("x = 1\n")
    big_src = "def f(a):\n" + "".join(f"    a{i} = a + {i}\n" for i in range(20)) + "    return a\n"
    big = explained(big_src)
    h_small = tree_figure(small).layout.height
    lay_big = tree_layout(big.tree, "partial")
    h_big = tree_figure(big).layout.height
    assert lay_big.n_rows > tree_layout(small.tree, "partial").n_rows
    assert h_big > h_small
    assert h_big >= figures.ROW_PX * lay_big.n_rows
    # the complete view has more rows than the partial view, and is taller
    assert tree_figure(big, "complete").layout.height > h_big


# ------------------------------------------------------------------------------------------ purity


def _snapshot(ex):
    s, t = ex.scores, ex.tree
    arrays = [ex.values, s.ids, s.start, s.end, s.special, s.prob, s.logprob, s.entropy, s.rank, s.top_ids,
              s.top_probs, t.start, t.end, t.parent, t.depth, ex.alignment.order, ex.alignment.lo, ex.alignment.hi]
    return [a.copy() for a in arrays], copy.deepcopy(ex.to_dict()), dict(ex.category_values)


def test_builders_do_not_mutate_the_explanation(explained):
    ex = explained(MISSING)
    before_arrays, before_dict, before_cats = _snapshot(ex)
    node = int(np.flatnonzero(ex.tree.named)[2])
    for view in TREE_VIEWS:
        tree_figure(ex, view, max_depth=2, collapse_unary=True, selected=node)
        tree_figure(ex, view)
    sequence_html(ex, selected=node, n_prompt=3)
    category_figure(ex.category_values)
    after_arrays, after_dict, after_cats = _snapshot(ex)
    for a, b in zip(before_arrays, after_arrays):
        np.testing.assert_array_equal(a, b)
    assert after_dict == before_dict
    assert after_cats.keys() == before_cats.keys()
    assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(before_cats.values(), after_cats.values()))


def test_builders_are_repeatable(explained):
    ex = explained(BROKEN)
    node = int(np.flatnonzero(ex.tree.is_error)[0])
    for kwargs in ({}, {"view": "complete"}, {"max_depth": 2, "collapse_unary": True, "selected": node}):
        assert tree_figure(ex, **kwargs).to_json() == tree_figure(ex, **kwargs).to_json()
    assert sequence_html(ex, selected=node, n_prompt=4) == sequence_html(ex, selected=node, n_prompt=4)
    assert category_figure(ex.category_values).to_json() == category_figure(ex.category_values).to_json()


# ------------------------------------------------------------------------------------------ sequence_html


@pytest.mark.parametrize("source", SOURCES, ids=SOURCE_IDS)
def test_sequence_html_reproduces_the_source(explained, source):
    ex = explained(source)
    out = sequence_html(ex)
    assert out.startswith("<pre") and out.endswith("</pre>")
    assert _visible_text(out) == source
    spans = _spans(out)
    indices = [i for i, *_ in spans]
    assert indices == _drawn(ex)  # each token at most once, in order
    assert len(SPAN.findall(out)) == out.count("<span data-token=")  # every span was matched by the regex
    reach = 0
    for i, _title, _style, text in spans:
        a, b = int(ex.scores.start[i]), int(ex.scores.end[i])
        assert text == source[max(a, reach):b]
        reach = b
    if source.isascii():
        assert indices == list(range(ex.scores.n_tokens))  # every token exactly once


def test_sequence_html_with_bos_skips_the_empty_special_token(explained, tiny_bos):
    ex = explained(SRC, tiny_bos)
    assert ex.scores.special[0] and ex.scores.start[0] == ex.scores.end[0]
    out = sequence_html(ex)
    assert _visible_text(out) == SRC
    assert [i for i, *_ in _spans(out)] == list(range(1, ex.scores.n_tokens))
    # with a BOS, the first code token has a prediction
    assert "no prediction" not in _spans(out)[0][1]


@pytest.mark.parametrize("source", [SRC, NON_ASCII], ids=["plain", "non-ascii"])
def test_sequence_html_hover_titles(explained, source):
    ex = explained(source)
    s = ex.scores
    spans = _spans(sequence_html(ex))
    assert spans
    for i, title, style, text in spans:
        if math.isnan(s.prob[i]):
            assert "no prediction" in title and "p=" not in title
            assert _background_ok(style, None, text)
        else:
            assert f"p={s.prob[i]:.3f}" in title
            assert re.search(r"\bp=\d\.\d{3}\b", title)
            assert f"rank {int(s.rank[i])}" in title
            assert "no prediction" not in title
            assert _background_ok(style, float(s.prob[i]), text)
    # no BOS: the first token has no prediction and says why
    assert spans[0][0] == 0 and "no prediction" in spans[0][1] and "no BOS" in spans[0][1]


@pytest.mark.parametrize("source", [SRC, NON_ASCII], ids=["plain", "non-ascii"])
def test_sequence_html_outlines_exactly_the_selected_nodes_tokens(explained, source):
    ex = explained(source)
    drawn = set(_drawn(ex))
    assert "outline:2px" not in sequence_html(ex)
    for node in range(ex.tree.n_nodes):
        out = sequence_html(ex, selected=node)
        expected = set(ex.alignment.tokens_of(node).tolist()) & drawn
        outlined = {i for i, _t, style, _x in _spans(out) if "outline:2px" in style}
        assert outlined == expected, (node, ex.tree.type[node])
        assert out.count("outline:2px") == len(expected)


@pytest.mark.parametrize("source", [SRC, TABS_CRLF, NON_ASCII], ids=["plain", "tabs-crlf", "non-ascii"])
def test_sequence_html_marks_generated_tokens(explained, source):
    ex = explained(source)
    drawn = _drawn(ex)
    plain = sequence_html(ex)
    assert MARKER not in plain and "underline" not in plain
    for k in drawn[1:]:
        out = sequence_html(ex, n_prompt=k)
        underlined = [i for i, _t, style, _x in _spans(out) if "text-decoration:underline" in style]
        assert underlined == [i for i in drawn if i >= k]
        assert out.count(MARKER) == 1
        # the marker sits right before the first generated token and adds no text
        marker_at = out.index(MARKER)
        assert out.index(f'<span data-token="{k}"') > marker_at
        assert "data-token" not in out[marker_at:out.index(f'<span data-token="{k}"')]
        assert _visible_text(out) == source
    # nothing generated: no marker, nothing underlined
    out = sequence_html(ex, n_prompt=ex.scores.n_tokens)
    assert MARKER not in out and "underline" not in out


def test_sequence_html_draws_uncovered_text_escaped(tiny):
    """Text no token covers (a tokenizer that drops characters) is drawn plain, escaped, in place."""
    src = "a = 1 < 2\nb = a & c > d\n"
    enc = tiny.tokenizer(src, return_offsets_mapping=True)
    # drop the token of "<" (a gap) and everything from "&" on (uncovered tail)
    keep = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if "<" not in src[a:b] and b <= src.index("&")]
    assert 0 < len(keep) < len(enc["input_ids"]) - 2
    scores = score_ids(tiny, src, [enc["input_ids"][i] for i in keep], [enc["offset_mapping"][i][0] for i in keep],
                       [enc["offset_mapping"][i][1] for i in keep])
    ex = explain_scored({"name": tiny.name}, scores)
    out = sequence_html(ex)
    assert _visible_text(out) == src
    assert [i for i, *_ in _spans(out)] == list(range(len(keep)))
    assert "&lt;" in out and "&amp;" in out and "&gt;" in out
    assert "<" not in _drop_tags(out) and ">" not in _drop_tags(out) and " & " not in out


def test_sequence_html_escapes_code(explained):
    ex = explained(SPECIAL)
    out = sequence_html(ex)
    assert "<script>" not in out and "</script>" not in out
    assert "&lt;" in out and "&gt;" in out and "&amp;" in out and "&quot;" in out
    # between tags there is no raw markup character left
    text_nodes = re.findall(r">([^<]*)<", out)
    assert any("&lt;" in t for t in text_nodes)
    assert all(t == html.escape(html.unescape(t)) for t in text_nodes)  # every text node fully escaped
    assert _visible_text(out) == SPECIAL
    # the only tags are the pre and the token spans
    tags = set(re.findall(r"<(/?\w+)", out))
    assert tags == {"pre", "/pre", "span", "/span"}


def test_category_figure_absent_and_colors():
    values = {"a": 0.2, "absent_nan": float("nan"), "absent_none": None, "b": 0.95, "c": 0.0}
    fig = category_figure(values, threshold=0.75)
    bar = fig.data[0]
    assert list(bar.x) == list(values)
    assert list(bar.text) == ["0.20", "absent", "absent", "0.95", "0.00"]
    assert list(bar.marker.color) == [value_color(0.2), NO_VALUE, NO_VALUE, value_color(0.95), value_color(0.0)]
    assert list(bar.y) == [0.2, 0, 0, 0.95, 0.0]
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 1
    assert lines[0].y0 == lines[0].y1 == 0.75
    assert tuple(fig.layout.yaxis.range) == (0, 1.12)


def test_category_figure_from_explanation(explained):
    ex = explained(SRC)
    fig = category_figure(ex.category_values, threshold=0.6)
    bar = fig.data[0]
    assert list(bar.x) == list(ex.category_values)
    for name, text, color in zip(bar.x, bar.text, bar.marker.color):
        v = ex.category_values[name]
        if math.isnan(v):
            assert text == "absent" and color == NO_VALUE
        else:
            assert text == f"{v:.2f}" and color == value_color(v)
    assert any(math.isnan(v) for v in ex.category_values.values())  # a small snippet misses some categories
    assert [s.y0 for s in fig.layout.shapes if s.type == "line"] == [0.6]


def test_generated_marker_survives_a_split_character(tiny):
    from asc.explain import explain as _explain

    ex = _explain(tiny, 's = "é"\n')
    shared = [i for i in range(1, ex.scores.n_tokens)
              if ex.scores.start[i] == ex.scores.start[i - 1] and ex.scores.end[i] == ex.scores.end[i - 1]]
    assert shared, "the tiny tokenizer splits é into two byte tokens"
    assert sequence_html(ex, n_prompt=shared[0]).count("generated from here") == 1


@pytest.mark.parametrize("source", SOURCES, ids=SOURCE_IDS)
def test_sequence_html_text_contrasts_with_its_background(explained, source):
    from asc.viz.colors import blend, contrast_ratio, text_color

    ex = explained(source)
    for i, _tip, style, piece in _spans(sequence_html(ex)):
        background = re.search(r"background:([^;]+)", style).group(1)
        color = re.search(r"(?:^|;)color:([^;]+)", style).group(1)
        m = re.fullmatch(r"rgba\((\d+), ?(\d+), ?(\d+), ?(0?\.\d+)\)", background)
        seen = blend(f"rgb({m[1]}, {m[2]}, {m[3]})", float(m[4])) if m else background  # as drawn on white
        assert color == text_color(seen) and contrast_ratio(color, seen) >= 4.5, (i, piece, style)
