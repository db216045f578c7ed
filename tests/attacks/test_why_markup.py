"""Why this token? on a snippet whose code is markup: every piece of user code the attribution views draw is escaped
(the sequence view's text and hover, the legend's target, the trees' labels and hovers)."""

from __future__ import annotations

import re

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


MARKUP = 'def f(x):\n    s = "[go](javascript:alert(1)) <img src=x> **b** :red[y]"\n    return s + x\n'


def test_the_patch_view_writes_the_corruption_and_its_target_as_plain_text(monkeypatch):
    """The inspector's "What changes it?" line names the corruption (the literal's text) and the target token: both
    come from the user's code and reach ``st.markdown``, where a link, an image, emphasis or a Streamlit colour
    directive would be rendered. Every punctuation mark of them is escaped (ui.widgets.plain)."""
    from tests.pages.helpers import button, inspector

    at = inspector(monkeypatch)
    at.text_area(key="code").set_value(MARKUP)
    button(at, "Explain").click().run()
    assert not at.exception and not at.error
    token = at.selectbox(key="patch_token")  # the last token the tiny model's 64-token context reaches
    token.select_index(max(i for i, o in enumerate(token.options) if int(o.split(":")[0]) < 64)).run()
    corruption = at.selectbox(key="patch_corruption")
    corruption.select_index(next(i for i, o in enumerate(corruption.options) if o.startswith("literal"))).run()
    button(at, "Corrupt and patch").click().run()
    assert not at.exception and not at.error
    line = next(m.value for m in at.markdown if "log p clean" in m.value)
    assert "javascript" in line  # the literal is named in the line ...
    for raw in ("[go]", "](javascript", "**b**", ":red["):  # ... as text, never as markup
        assert raw not in line, (raw, line)
    assert not re.search(r"(?<!\\)<img", line), line
    assert r"\[go\]\(javascript" in line and r"\<img" in line
