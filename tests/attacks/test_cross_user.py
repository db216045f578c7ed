"""What one visitor types must not reach another visitor's page as live content, nor steer their jobs.

* text users control (model ids, corpus specs, job labels and errors) is escaped wherever Markdown renders
  it (``ui.widgets.plain``), so nobody can place a link in every other user's job panel;
* plotly renders a subset of HTML (``<a href>``, ``<b>``...) in labels, hover text, legends and titles: every
  user-derived string in a figure is HTML-escaped (``asc.viz.html.escape_text``), e.g. a string literal in
  a snippet's syntax tree or a word of an attention map;
* each browser tab sees its own jobs (``Job.owner`` = the tab's token); results in run folders stay shared.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from tests.pages.helpers import page

LINK = "<a href='http://evil.example'>y</a>"
RAW_LINK = re.compile(r"<\s*a[\s>]", re.I)
PAYLOADS = [
    "[click](http://evil.example)", "![img](http://evil.example/x.png)", LINK, "<script>alert(1)</script>",
    "http://evil.example", "www.evil.example", "**bold** _it_ `code`", ":red[red] :material/home:",
    "$x^2$", "# Heading", "line\n\n- item", "a\\[b](http://evil.example)",
]


def _strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, (list, tuple)):
        return [s for v in obj for s in _strings(v)]
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "OU":  # object or unicode arrays (plotly takes both)
        return [s for v in obj.tolist() for s in _strings(v)]
    return []


def _raw_html(fig) -> list[str]:
    return [s for s in _strings(fig.to_plotly_json()) if RAW_LINK.search(s) or "<script" in s.lower()]


# ------------------------------------------------------------------------------------------------ Markdown


@pytest.mark.parametrize("payload", PAYLOADS)
def test_plain_text_renders_as_text(payload):
    from ui.widgets import plain

    shown = plain(payload)
    html = MarkdownIt("commonmark").enable("table").render(shown)
    for tag in ("<a", "<img", "<script", "<strong", "<em", "<code", "<h1", "<ul", "<li"):
        assert tag not in html, (payload, shown, html)
    assert "://" not in shown and "www." not in shown  # no bare-URL autolinks (GitHub-flavoured Markdown)
    unescaped = re.sub(r"\\[!-/:-@\[-`{-~]", "", shown)  # Streamlit's directives and LaTeX need bare : [ $
    assert not re.search(r"[!-/:-@\[-`{-~]", unescaped), (payload, shown)
    assert "\n" not in shown


# ------------------------------------------------------------------------------------------------ plotly labels


def test_escape_text_leaves_no_markup():
    from asc.viz.html import escape_text

    assert escape_text(LINK) == "&lt;a href='http://evil.example'&gt;y&lt;/a&gt;"
    assert escape_text("a < b & c") == "a &lt; b &amp; c"


def test_a_string_literal_in_a_snippet_is_no_link_in_its_tree(tiny):
    from asc import explain
    from asc.viz import tree_figure

    code = f'x = "{LINK}"\nprint(x)\n'
    ex = explain(tiny, code)
    for view in ("partial", "complete"):
        fig = tree_figure(ex, view)
        assert not _raw_html(fig), _raw_html(fig)
        texts = [str(t) for trace in fig.data if trace.text is not None for t in trace.text]
        assert any("&lt;a href" in t for t in texts), "the literal stays readable (escaped, not dropped)"
    fig = tree_figure(ex, "partial", title=f"{LINK}: loss 1.0", value_label=LINK)
    assert not _raw_html(fig)


def test_attention_map_words_are_no_links():
    from probes.figures import attention_map

    tokens = ["x", "=", LINK, "<b>bold</b>"]
    fig = attention_map(np.eye(4), tokens, [(0, 2, 2)], causal=False, title=f"{LINK} layer 0 head 0")
    assert not _raw_html(fig), _raw_html(fig)


class _Result:
    """Just what ``confusion_figure`` reads of a ProbeResult, with labels from an uploaded file."""

    model = LINK
    task = "UP"
    labels = (LINK, "<b>b</b>")
    accuracy = np.array([0.5, 0.75])

    def confusion(self, layer):
        return np.array([[1, 0], [0, 1]])


def test_probe_figures_escape_labels_and_models():
    from probes.figures import best_layer_heatmap, confusion_figure, layer_curves, layer_heatmap

    assert not _raw_html(confusion_figure(_Result(), 1))
    table = pd.DataFrame({"model": [LINK] * 2, "task": ["UP", "UP"], "layer": [0, 1], "accuracy": [0.5, 0.7],
                          "control_accuracy": [0.5, 0.5], "majority": [0.5, 0.5], "best_layer": [False, True],
                          "depth": [0.0, 1.0]})
    assert not _raw_html(layer_heatmap(table, LINK))
    assert not _raw_html(layer_curves(table, "UP"))
    best = pd.DataFrame({"model": [LINK], "task": ["UP"], "accuracy": [0.7], "layer": [1]})
    assert not _raw_html(best_layer_heatmap(best))


def test_corpus_figures_escape_model_and_corpus_names():
    from asc.viz import category_bars, concept_treemap, difference_bars, treatment_scatter, value_distribution

    summary = pd.DataFrame({"model": [LINK], "corpus": [LINK], "category": ["Global"], "median": [0.5],
                            "ci_low": [0.4], "ci_high": [0.6], "n_nodes": [10]})
    assert not _raw_html(category_bars(summary))
    boxes = pd.DataFrame({"model": [LINK], "n": [2], "mean": [0.55], "min": [0.5], "q1": [0.52], "median": [0.55],
                          "q3": [0.58], "max": [0.6], "lowerfence": [0.5], "upperfence": [0.6]})
    assert not _raw_html(value_distribution(boxes))
    types = pd.DataFrame({"model": [LINK], "category": ["Scope"], "type": ["block"], "nodes": [3], "median": [0.5],
                          "snippets": [1]})
    assert not _raw_html(concept_treemap(types))
    diff = pd.DataFrame({"category": ["Scope"], "type": ["block"], "difference": [0.1], "model_a": [LINK],
                         "model_b": ["b"]})
    assert not _raw_html(difference_bars(diff))
    assert not _raw_html(difference_bars(diff, label="type"))
    table = pd.DataFrame({"T": [0.1, 0.2], "loss": [1.0, 2.0], "seq_size": [3, 4]}, index=[LINK, "ok"])
    assert not _raw_html(treatment_scatter(table, "T"))


# ------------------------------------------------------------------------------------------------ jobs per tab


def test_the_queue_records_and_filters_owners(tmp_path):
    from asc.jobs import JobKind, JobQueue
    from tests.support.models import tiny_random_model

    queue = JobQueue(lambda spec, trust_remote_code=False: tiny_random_model())
    a = queue.submit_call(JobKind.LAYERS, "m", "a", tmp_path / "a", lambda b, p, s: None, owner="tab-a")
    b = queue.submit_call(JobKind.LAYERS, "m", "b", tmp_path / "b", lambda b, p, s: None, owner="tab-b")
    c = queue.submit("m", str(tmp_path / "missing"), None, tmp_path / "runs", owner="tab-a")
    assert queue.wait(60)
    assert (a.owner, b.owner, c.owner) == ("tab-a", "tab-b", "tab-a")
    assert queue.jobs(JobKind.LAYERS, owner="tab-a") == [a]
    assert queue.jobs(owner="tab-a") == [a, c]
    assert queue.jobs(JobKind.LAYERS) == [a, b]


def _panel_texts(at) -> list[str]:
    return [p.text for p in at.get("progress")] + [e.value for e in at.error]


def test_each_tab_sees_its_own_jobs_and_their_text_is_escaped(monkeypatch, tmp_path):
    from asc.errors import AscError
    from asc.jobs import JobKind
    from ui import jobs

    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    mine = AppTest.from_file(page("probing"), default_timeout=120)
    theirs = AppTest.from_file(page("probing"), default_timeout=120)
    mine.run()
    theirs.run()
    token = mine.session_state["asc_tab_token"]
    assert token != theirs.session_state["asc_tab_token"]

    def fail(bundle, progress, stop):
        raise AscError("[open me](http://evil.example) **now**")

    job = jobs.job_queue().submit_call(JobKind.LAYERS, "tiny-random", "probes [click](http://evil.example)",
                                       tmp_path / "out", fail, owner=token)
    assert jobs.job_queue().wait(120) and job.status == "failed"
    mine.run()
    theirs.run()
    shown = _panel_texts(mine)
    assert any(f"\\#{job.id}" in t or f"#{job.id}" in t for t in shown), shown
    assert all("[click](" not in t and "[open me](" not in t and "**now**" not in t for t in shown), shown
    assert any("click" in t for t in shown) and any("open me" in t for t in shown)
    others = _panel_texts(theirs)
    assert not any("click" in t or "open me" in t for t in others), others
    assert not [b for b in theirs.button if b.key == f"cancel_{job.id}"]


def test_a_run_started_in_one_tab_is_not_listed_in_another(monkeypatch, tmp_path):
    from ui import jobs

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    return [x, {i}]\n"})
                                for i in range(3)))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    mine = AppTest.from_file(page("global_eval"), default_timeout=120)
    theirs = AppTest.from_file(page("global_eval"), default_timeout=120)
    mine.run()
    theirs.run()
    mine.selectbox(key="run_corpus").set_value("a folder, .py/.java or .jsonl path").run()
    mine.text_input(key="run_corpus_path").set_value(str(corpus)).run()
    next(b for b in mine.button if b.label == "Start").click().run()
    assert jobs.job_queue().wait(120)
    job = jobs.job_queue().jobs()[-1]
    assert job.owner == mine.session_state["asc_tab_token"]
    mine.run()
    theirs.run()
    assert any(f"{job.id}" in t and "c" in t for t in _panel_texts(mine))
    assert not any(str(corpus.name) in t for t in _panel_texts(theirs))
    # the finished run is a result folder: every tab may read it
    assert not theirs.exception and any("Table I" in s.value for s in theirs.subheader)
