"""Why this token? on a snippet whose code is markup: every piece of user code the attribution views draw is escaped
(the sequence view's text and hover, the legend's target, the trees' labels and hovers)."""

from __future__ import annotations

from asc.viz.attribution import attribution_sequence_html, attribution_tree
from asc.why.attribute import attribute

CODE = 'def f(x):\n    s = "<script>alert(1)</script>"\n    return s + "<b>"\n'


def test_attribution_views_escape_the_code(tiny_bos):
    n = len(tiny_bos.tokenizer(CODE)["input_ids"])
    attr = attribute(tiny_bos, CODE, n - 3, "grad")
    page = attribution_sequence_html(attr)
    assert "<script" not in page and "</script" not in page and "<b>" not in page
    assert "&lt;" in page and "&gt;" in page  # drawn, escaped (tokens may split the tag)
    fig = attribution_tree(attr, "complete")
    labels = " ".join(str(t.text) + str(t.hovertext) for t in fig.data)
    assert "<script>" not in labels
