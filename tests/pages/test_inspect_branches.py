"""pages/inspect.py's fork points and branches (ui/branches_view.py) on the tiny model: branch by choosing an
alternative or typing one, explore forks, the branch tree, the comparison of two branches, the JSON export."""

import json

import numpy as np
import pytest

from asc.branching.forks import fork_points, node_fork_rate
from tests.pages.helpers import button, charts, inspector, tree_traces
from ui import branches_view

PROMPT = "def add(a, b):\n"


@pytest.fixture
def app(monkeypatch):
    return inspector(monkeypatch, timeout=180)


@pytest.fixture
def completed(app):
    app.slider(key="max_new").set_value(16).run()
    app.text_area(key="code").set_value(PROMPT).run()
    button(app, "Complete").click().run()
    assert not app.exception and not app.error
    return app


def _tree(app):
    return app.session_state[branches_view.STATE][1]


def _branch_chart(app):
    return next(c for c in charts(app) if c["layout"].get("title", {}).get("text", "").startswith("Branch tree"))


def _seq(app):
    return next(h.proto.body for h in app.get("html") if "asc-seq" in h.proto.body)


def test_explain_marks_fork_points_and_trees_switch_to_fork_rate(app, tiny):
    button(app, "Explain").click().run()
    ex = app.session_state["result"].ex
    forks = fork_points(ex.scores)
    assert forks.is_fork.any()
    assert _seq(app).count('data-fork="1"') == int(forks.is_fork.sum())
    assert any("Branches start from a completion" in c.value for c in app.caption)  # Explain: nothing to branch

    app.radio(key="tree_colours").set_value("fork").run()
    assert not app.exception
    value = tree_traces(app)["value"]
    rate = node_fork_rate(ex, forks)
    np.testing.assert_allclose(value["marker"]["color"], rate[np.array(value["customdata"])])
    assert value["marker"]["colorbar"]["title"]["text"] == "fork rate"

    # stricter thresholds: fewer marks
    app.number_input(key="fork_margin").set_value(0.0).run()
    app.number_input(key="fork_entropy").set_value(20.0).run()
    assert 'data-fork="1"' not in _seq(app)


def test_branch_by_choosing_an_alternative(completed):
    app = completed
    tree = _tree(app)
    trunk = tree.trunk.completion
    assert len(tree) == 1 and len(_branch_chart(app)["data"][1]["x"]) == 1
    at = trunk.n_prompt + 2
    app.selectbox(key="br_at").set_value(at).run()
    choices = app.radio(key="br_choice")
    assert len(choices.options) == 5 and "p=" in choices.options[0]
    choices.set_value(3).run()
    app.slider(key="br_max_new").set_value(8).run()
    button(app, "Branch").click().run()
    assert not app.exception and not app.error
    tree = _tree(app)
    assert len(tree) == 2
    node = tree.nodes[1]
    br = node.branch
    ex = tree.trunk.explanation
    assert node.parent == 0 and br.fork_index == at and br.forced_rank == 3
    assert br.forced_id == int(ex.scores.top_ids[at][2])  # the third alternative shown
    cut = int(trunk.start[at])
    assert node.completion.text.startswith(trunk.text[:cut] + br.forced_text)
    np.testing.assert_array_equal(node.completion.ids[:at], trunk.ids[:at])
    # the tree view: two branch points, the new one opened in the views
    chart = _branch_chart(app)
    points = next(t for t in chart["data"] if t.get("name") == "branches")
    assert points["customdata"] == [0, 1] and points["x"] == [trunk.n_prompt, at]
    assert app.selectbox(key="br_open_pick").value == 1
    assert app.session_state["result"].completion is not None
    assert html_text(_seq(app)).startswith(node.completion.text[:20])
    assert any(c.value.startswith("Branch 1:") for c in app.caption)


def html_text(body: str) -> str:
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_typed_replacement_and_compare_view(completed):
    app = completed
    trunk = _tree(app).trunk.completion
    at = trunk.n_prompt
    app.selectbox(key="br_at").set_value(at).run()
    app.text_input(key="br_token").set_value("    return a + b").run()
    app.slider(key="br_max_new").set_value(8).run()
    button(app, "Branch").click().run()
    assert not app.exception and not app.error
    node = _tree(app).nodes[1]
    assert node.branch.forced_rank == 0 and node.completion.text.startswith(trunk.text[:int(trunk.start[at])]
                                                                            + "    return a + b")
    # compare: A = the trunk, B = the branch; the differences are listed and both trees drawn with rings
    assert app.selectbox(key="br_cmp_a").value == 0 and app.selectbox(key="br_cmp_b").value == 1
    diff = next(d.value for d in app.dataframe if "status" in d.value.columns)
    assert len(diff) > 0 and set(diff["status"]) <= {"added", "removed", "changed"}
    assert diff["first"].any()
    cells = {str(v) for v in diff.drop(columns=["first"]).to_numpy().ravel()}
    assert not {"None", "nan", "<NA>", "—"} & cells  # a side without the node reads 'absent' (asc.missing)
    one_sided = diff[diff["status"] != "changed"]
    assert one_sided.empty or (one_sided[["node_a", "node_b"]] == "absent").any(axis=1).all()
    assert any("First divergence" in m.value for m in app.markdown)
    rings = {"only here", "changed", "first divergence"}
    cmp = [c for c in charts(app) if rings & {t.get("name") for t in c["data"]}]
    assert len(cmp) == 2 and any(t.get("name") == "first divergence" for c in cmp for t in c["data"])
    labels = {b.proto.label for b in app.get("download_button")}
    assert {"Branch tree JSON", "Branch tree (HTML)", "Differences CSV", "trunk tree (HTML)",
            "branch 1 tree (HTML)"} <= labels


def test_explore_forks_creates_n_branches_and_json_export_parses(completed):
    app = completed
    app.number_input(key="br_n").set_value(3).run()
    app.slider(key="br_max_new").set_value(8).run()
    button(app, "Explore forks").click().run()
    assert not app.exception and not app.error
    tree = _tree(app)
    assert len(tree) == 4 and all(n.parent == 0 for n in tree.nodes[1:])
    assert app.selectbox(key="br_open_pick").value == 0  # several branches: the trunk stays open
    points = next(t for t in _branch_chart(app)["data"] if t.get("name") == "branches")
    assert points["customdata"] == [0, 1, 2, 3]

    # a branch of a branch: open branch 1 and branch it
    app.selectbox(key="br_open_pick").set_value(1).run()
    branch1 = tree.nodes[1]
    app.selectbox(key="br_at").set_value(branch1.branch.fork_index + 1).run()
    button(app, "Branch").click().run()
    assert not app.exception and not app.error
    tree = _tree(app)
    assert len(tree) == 5 and tree.nodes[4].parent == 1 and tree.depth(4) == 2

    doc = json.loads(branches_view.tree_json(tree))
    assert doc["prompt"] == tree.trunk.completion.prompt and doc["settings"]["temperature"] == 0
    assert [b["id"] for b in doc["branches"]] == [0, 1, 2, 3, 4]
    assert [b["parent"] for b in doc["branches"]] == [None, 0, 0, 0, 1]
    assert doc["branches"][0]["fork"] is None
    fork = doc["branches"][4]["fork"]
    assert fork["fork_index"] == branch1.branch.fork_index + 1 and fork["forced_rank"] == 2
    assert doc["branches"][4]["asc_eval"]["tokens"] and doc["branches"][4]["asc_eval"]["nodes"]


def test_a_new_completion_starts_a_new_tree(completed):
    app = completed
    app.slider(key="br_max_new").set_value(8).run()
    button(app, "Branch").click().run()
    assert len(_tree(app)) == 2
    app.text_area(key="code").set_value("def sub(a, b):\n").run()
    button(app, "Complete").click().run()
    assert not app.exception and not app.error
    assert len(_tree(app)) == 1 and _tree(app).trunk.completion.prompt.startswith("def sub")
    assert not [s for s in app.selectbox if s.key == "br_open_pick"]


FAKE = {"task_id": "Fake/0", "prompt": PROMPT, "entry_point": "add", "canonical_solution": "    return a + b\n",
        "test": "def check(f):\n    assert f(1, 2) == 3\n"}  # a HumanEval-shaped problem the tiny model's context fits


def test_humaneval_tests_run_on_every_completion_only_when_asked(app, monkeypatch):
    from asc.branching.humaneval import run_tests

    monkeypatch.setattr("asc.branching.humaneval._problems", lambda: (FAKE,))
    assert run_tests(PROMPT + FAKE["canonical_solution"]).passed  # the fake problem is a working one
    app.slider(key="max_new").set_value(8).run()
    app.text_area(key="code").set_value(PROMPT).run()
    button(app, "Complete").click().run()
    assert not app.exception and not app.error
    box = app.checkbox(key="br_run_tests")
    assert not box.value and not any("passed" in getattr(d.value, "columns", []) for d in app.dataframe)
    box.check().run()
    assert not app.exception
    shown = next(d.value for d in app.dataframe if "passed" in getattr(d.value, "columns", []))
    tree = _tree(app)
    assert len(shown) == len(tree)
    expected = run_tests(tree.nodes[0].explanation.source)  # the tiny model's trunk: the checker's own verdict
    assert bool(shown["passed"].iloc[0]) == expected.passed and shown["result"].iloc[0] == expected.result
    assert any("Mean AsC-Eval from the fork on: passing" in c.value for c in app.caption)


def test_humaneval_tests_are_not_offered_on_a_shared_server(app, monkeypatch):
    monkeypatch.setattr("asc.branching.humaneval._problems", lambda: (FAKE,))
    monkeypatch.setenv("ASC_SHARED", "1")
    app.slider(key="max_new").set_value(4).run()
    app.text_area(key="code").set_value(PROMPT).run()
    button(app, "Complete").click().run()
    assert not app.exception
    assert not [c for c in app.checkbox if c.key == "br_run_tests"]


def test_the_default_branch_point_is_the_most_uncertain_fork_that_is_not_whitespace(completed):
    from asc.branching.forks import most_uncertain
    from asc.viz.html import visible_whitespace

    app = completed
    trunk = _tree(app).trunk
    s = trunk.explanation.scores
    forks = fork_points(s)
    ranked = [int(i) for i in most_uncertain(forks, len(forks.indices), first=trunk.completion.n_prompt)]
    visible = [i for i in ranked if s.text[i].strip()]
    assert visible, "the tiny model's completion has a fork point that is not whitespace"
    assert app.selectbox(key="br_at").value == visible[0]
    # labels draw whitespace: a token of spaces or newlines never reads as an empty or collapsed string
    labels = app.selectbox(key="br_at").options  # token 1, 2, ... (as shown)
    assert all(" " not in label.split("'")[1] and "\n" not in label for label in labels), labels
    blank = [i for i in range(1, len(s.text)) if any(c.isspace() for c in s.text[i])]  # " b", "\n"...
    assert blank and all(labels[i - 1].startswith(f"{i}: '{visible_whitespace(s.text[i])}'") for i in blank)
    assert all(" " not in option.split("'")[1] for option in app.radio(key="br_choice").options)
