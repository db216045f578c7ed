"""asc.viz.html: offline exports, a plotly figure with plotly.js inlined and an HTML fragment wrapped in a
document."""

import re

import plotly.graph_objects as go

from asc.explain import explain
from asc.viz import figure_html, sequence_html, standalone_html, tree_figure

SRC = "def f(x):\n    y = x + 1\n    return y\n"
SPECIAL = 'def g(a, b, c, d, e):\n    return a < b and c > d & e\ns = "<script>alert(1)</script> &amp;"\n'


def test_figure_html_is_self_contained(tiny):
    out = figure_html(tree_figure(explain(tiny, SRC)))
    assert len(out.encode()) > 1_000_000  # plotly.js inlined
    assert re.search(r"plotly\.js v\d+\.\d+\.\d+", out)  # the bundle's banner, with its version
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?https?:", out, flags=re.I)
    assert "cdn.plot.ly" not in out.split("<body")[0]
    assert out.startswith("<!doctype html>") and out.rstrip().endswith("</html>")


def test_figure_html_holds_the_figure_and_loads_nothing():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name="points-of-test"))
    out = figure_html(fig)
    assert "Plotly.newPlot" in out and '"name":"points-of-test"' in out
    assert set(re.findall(r"<script[^>]*>", out)) == {"<script>"}  # inline scripts only: no src, no CDN
    assert "<link" not in out


def test_standalone_html_wraps_fragment(tiny):
    fragment = sequence_html(explain(tiny, SPECIAL))
    doc = standalone_html(fragment, title="a <b> & c")
    assert doc.startswith("<!doctype html>")
    assert "<meta charset='utf-8'>" in doc
    assert fragment in doc
    assert "<title>a &lt;b&gt; &amp; c</title>" in doc
    assert doc.endswith("</html>")


def test_standalone_html_is_exactly_the_fragment_in_a_document():
    fragment = "<pre class='asc-seq'><span>x</span> &amp; y</pre>"
    assert standalone_html(fragment) == (
        "<!doctype html><html><head><meta charset='utf-8'><title>AsC Studio</title></head>"
        f"<body style='font-family:sans-serif'>{fragment}</body></html>")
    # the fragment is trusted HTML (already escaped by sequence_html); only the title is escaped
    assert "<title>&quot;q&quot; &#x27;s&#x27;</title>" in standalone_html("", title="\"q\" 's'")
