"""asc.why.corrupt: corruptions that keep code valid, property-tested on the stdlib corpus, then kind by kind.

The properties (issue 30): the result parses as well as the original (no new ERROR or MISSING node), only the
intended spans change (the text between the edits is the clean text, each edit replaces exactly its target),
and a renamed identifier keeps no occurrence of its old name as an identifier.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asc.corpus.sources import load_corpus
from asc.errors import InputError
from asc.syntax import parse
from asc.why.corrupt import Corruption, CorruptionSpec, Edit, apply_edits, corrupt, node_corruptions, parse_spec
from asc.why.rewrites import GRAMMARS, docstrings, operator_nodes

PY = GRAMMARS["python"]
SNIPPET = '''def f(a, b=0x1F):
    """Add things."""
    # a lone comment
    x = a + b * 2.5e3 if a not in b else a is not b  # trailing
    y = f"v{a!r}\\n" + '' + "q"
    z = a and b or not a
    return x < y, None, True
'''
# derandomize: the same examples on every run (a suite that never flakes); a new rule is explored by raising
# max_examples locally, as was done at 500 examples over 400 functions
SETTINGS = settings(max_examples=50, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def stdlib():
    """60 functions of the installed standard library (the corpus loader's deterministic order)."""
    return [s.source for s in load_corpus("stdlib", limit=60)]


def _where(source: str, offset: int) -> str:
    return f"{source.count(chr(10), 0, offset) + 1}:{offset - (source.rfind(chr(10), 0, offset) + 1) + 1}"


def _errors(tree) -> int:
    return int((tree.is_error | tree.is_missing).sum())


def _assert_only_edits_change(c: Corruption) -> None:
    """The corrupted text is the clean text with each edit's ``old`` replaced by its ``new``, nothing else."""
    assert c.edits == tuple(sorted(c.edits, key=lambda e: e.start))
    at, at_new = 0, 0
    for e in c.edits:
        assert e.start >= at and c.source[e.start:e.end] == e.old and e.old != e.new
        a, b = c.corrupted_span(e)
        assert c.corrupted[at_new:a] == c.source[at:e.start]  # untouched text in between
        assert c.corrupted[a:b] == e.new
        at, at_new = e.end, b
    assert c.corrupted[at_new:] == c.source[at:]
    assert apply_edits(c.source, c.edits) == c.corrupted


def _draw_spec(data, source: str) -> tuple[str, list[int]]:
    """A spec of a kind the snippet has, and the clean nodes it targets."""
    tree = parse(source)
    idents = [i for i in range(tree.n_nodes) if tree.type[i] == "identifier"]
    ops, lits = operator_nodes(tree, PY), [i for i in range(tree.n_nodes) if tree.type[i] in PY.literals
                                           and tree.type[i] != "none"]
    kinds = ["rename"] + ["operator"] * bool(ops) + ["literal"] * bool(lits) + ["docstring"] * bool(docstrings(tree)) \
        + ["comment"] * any(tree.type[i] == "comment" for i in range(tree.n_nodes))
    kind = data.draw(st.sampled_from(kinds))
    if kind == "rename":
        name = tree.text(data.draw(st.sampled_from(idents)))
        return f"rename:{name}", [i for i in idents if tree.text(i) == name]
    if kind in {"operator", "literal"}:
        node = data.draw(st.sampled_from(ops if kind == "operator" else lits))
        return f"{kind}:{_where(source, int(tree.start[node]))}", [node]
    return kind, []


@SETTINGS
@given(data=st.data())
def test_a_corruption_parses_as_well_and_changes_only_its_spans(stdlib, data):
    source = data.draw(st.sampled_from(stdlib))
    spec, targets = _draw_spec(data, source)
    try:
        c = corrupt(source, spec)
    except InputError as err:  # only an operator whose every swap regroups the expression may be refused
        assert spec.startswith("operator") and "no valid replacement" in str(err)
        return
    clean, new = parse(source), parse(c.corrupted)
    assert _errors(new) <= _errors(clean)
    assert c.edits and c.kind == spec.split(":")[0]
    _assert_only_edits_change(c)
    if targets:  # rename, operator, literal: the edits are exactly the targeted nodes
        assert [(e.start, e.end) for e in c.edits] == [(int(clean.start[i]), int(clean.end[i])) for i in targets]
    else:  # a removal takes its comments or docstrings and the blanks around them, no other code
        gone = docstrings(clean) if spec == "docstring" else [i for i in range(clean.n_nodes)
                                                              if clean.type[i] == "comment"]
        for e in c.edits:
            inside = [i for i in gone if e.start <= clean.start[i] and clean.end[i] <= e.end]
            rest = e.old
            for i in inside:
                rest = rest.replace(clean.text(i), "", 1)
            assert len(inside) == 1 and not rest.strip() and e.new in {"", " ", "pass"}


@SETTINGS
@given(data=st.data())
def test_a_renamed_identifier_keeps_no_occurrence_of_its_old_name(stdlib, data):
    source = data.draw(st.sampled_from(stdlib))
    clean = parse(source)
    names = sorted({clean.text(i) for i in range(clean.n_nodes) if clean.type[i] == "identifier"})
    name = data.draw(st.sampled_from(names))
    c = corrupt(source, f"rename:{name}")
    new = parse(c.corrupted)
    new_names = [new.text(i) for i in range(new.n_nodes) if new.type[i] == "identifier"]
    fresh = c.edits[0].new
    assert name not in new_names
    assert new_names.count(fresh) == sum(clean.text(i) == name for i in range(clean.n_nodes)
                                         if clean.type[i] == "identifier")
    if any(ch.isalnum() for ch in name):  # the name's shape (a name of underscores only has no other: `_` -> `_1`)
        assert len(fresh) == len(name) and all(a.isupper() == b.isupper() and a.isdigit() == b.isdigit()
                                               for a, b in zip(name, fresh, strict=True))
    else:
        assert fresh.startswith(name) and fresh[len(name):].isdigit()
    assert not re.search(rf"(?<!\w){fresh}(?!\w)", source)  # a word the snippet did not have


@SETTINGS
@given(data=st.data())
def test_a_node_corruption_is_valid_and_touches_its_node(stdlib, data):
    source = data.draw(st.sampled_from(stdlib))
    tree = parse(source)
    node = data.draw(st.integers(0, tree.n_nodes - 1))
    c = node_corruptions(tree, node)
    if c is None:
        return
    assert _errors(parse(c.corrupted)) <= _errors(tree)
    _assert_only_edits_change(c)
    start, end = int(tree.start[node]), int(tree.end[node])
    for e in c.edits:  # the node's own span, or its lines when a comment or docstring goes with them
        assert e.start <= start and end <= e.end and not (source[e.start:start] + source[end:e.end]).strip()


# ------------------------------------------------------------------------------------------------ kind by kind


def test_rename_every_occurrence_to_a_given_or_fresh_name():
    c = corrupt(SNIPPET, "rename:a:qq")
    assert c.kind == "rename" and len(c.edits) == 7 and {e.old for e in c.edits} == {"a"}
    assert "qq" in c.corrupted and "(qq, b=0x1F)" in c.corrupted and "{qq!r}" in c.corrupted
    assert "# a lone comment" in c.corrupted  # comments and strings keep the word
    fresh = corrupt(SNIPPET, "rename:x").edits[0].new
    assert len(fresh) == 1 and fresh.islower() and fresh not in {"a", "b", "x", "y", "z", "f"}


def test_a_fresh_name_keeps_the_token_count_under_the_models_tokenizer(tiny):
    tok = tiny.tokenizer
    count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    source = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
              "        if letter == character:\n            count = count + 1\n    return count\n")
    for name in ("count", "letter", "character", "count_chars"):
        c = corrupt(source, f"rename:{name}", tokenizer=tok)
        assert count(c.corrupted) == count(source), c.description
        assert "off" not in c.description


def test_operator_swaps_within_its_class_opposite_first():
    def swapped(spec: str) -> tuple[str, str]:
        e = corrupt(SNIPPET, spec).edits
        return e[0].old, e[0].new

    assert swapped("operator:4:11") == ("+", "-")
    assert swapped("operator:4:15") == ("*", "/")
    assert swapped("operator:4:30") == ("not in", "in")  # the column of "in" inside "not in"
    assert swapped("operator:4:44") == ("is not", "is")
    assert swapped("operator:7:14") == ("<", ">")
    assert corrupt("x = a and b\n", "operator:1:7").corrupted == "x = a or b\n"
    assert corrupt("x = a & b\n", "operator:1:7").corrupted == "x = a | b\n"
    assert corrupt("x += 1\n", "operator:1:3").corrupted == "x -= 1\n"
    assert corrupt("x = a + b\n", "operator:1:7:*").corrupted == "x = a * b\n"


def test_an_operator_swap_that_would_regroup_the_expression_is_refused():
    # a * b ** c: every other arithmetic operator binds like * or +, so the tree would group differently
    with pytest.raises(InputError, match="no valid replacement"):
        corrupt("y = a * b ** c\n", "operator:1:11")
    with pytest.raises(InputError, match="no valid replacement"):
        corrupt("y = a or b and c\n", "operator:1:12")
    assert corrupt("y = a * b ** c\n", "operator:1:7").corrupted == "y = a / b ** c\n"


@pytest.mark.parametrize("source, spec, expected", [
    ("x = 41\n", "literal:1:5", "x = 42\n"),
    ("x = 9\n", "literal:1:5", "x = 0\n"),
    ("x = 00\n", "literal:1:5", "x = 10\n"),
    ("x = 0x1F\n", "literal:1:5", "x = 0x10\n"),
    ("x = 2.5e3\n", "literal:1:5", "x = 2.6e3\n"),
    ("x = 1_000\n", "literal:1:5", "x = 1_001\n"),
    ('x = f"v{a!r}\\n"\n', "literal:1:5", 'x = f"i{a!r}\\n"\n'),
    ("x = rb'Az9'\n", "literal:1:5", "x = rb'Nm4'\n"),
    ("x = ''\n", "literal:1:5", "x = 'x'\n"),
    ("x = True\n", "literal:1:5", "x = False\n"),
    ("x = 3\n", "literal:1:5:17", "x = 17\n"),
])
def test_literal_becomes_another_of_its_type(source, spec, expected):
    c = corrupt(source, spec)
    assert c.corrupted == expected and c.kind == "literal"
    kinds = [[PY.literals[t] for t in parse(text).type if t in PY.literals] for text in (source, c.corrupted)]
    assert kinds[0] == kinds[1]  # a literal of the same type


def test_none_has_no_other_value():
    with pytest.raises(InputError, match="only value of its type"):
        corrupt("x = None\n", "literal:1:5")


def test_docstring_removal_keeps_a_body():
    c = corrupt(SNIPPET, "docstring")
    assert '"""Add things."""' not in c.corrupted and c.edits[0].old == '    """Add things."""\n'
    assert corrupt('def f():\n    """Only."""\n', "docstring").corrupted == "def f():\n    pass\n"
    assert corrupt('def f(): "one"\n', "docstring").corrupted == "def f(): pass\n"
    assert corrupt('"""Module."""\nimport os\n', "docstring").corrupted == "import os\n"
    two = 'class C:\n    """C."""\n    def m(self):\n        """M."""\n        return 1\n'
    assert corrupt(two, "docstring").corrupted == "class C:\n    def m(self):\n        return 1\n"
    assert corrupt(two, "docstring:4").corrupted == 'class C:\n    """C."""\n    def m(self):\n        return 1\n'
    with pytest.raises(InputError, match="no docstring on line 2"):  # a string after a statement is none
        corrupt('x = 1\n"""not a docstring"""\n', "docstring:2")


def test_comment_removal_takes_whole_lines_or_trailing_blanks():
    c = corrupt(SNIPPET, "comment")
    assert "#" not in c.corrupted and "    x = a + b" in c.corrupted and "a is not b\n" in c.corrupted
    assert [e.old for e in c.edits] == ["    # a lone comment\n", "  # trailing"]
    assert corrupt(SNIPPET, "comment:4").edits == (c.edits[1],)
    java = "class A {\n  int f() { return 1/* x */+2; }\n}\n"
    assert corrupt(java, "comment", language="java").corrupted == "class A {\n  int f() { return 1 +2; }\n}\n"


def test_java_rename_operator_and_literal():
    java = "class A {\n  int f(int a) {\n    return a + 7;\n  }\n}\n"
    assert corrupt(java, "rename:a:b", language="java").corrupted.count("b") == 2
    assert corrupt(java, "operator:3:14", language="java").corrupted.endswith("return a - 7;\n  }\n}\n")
    assert "return a + 8;" in corrupt(java, "literal:3:16", language="java").corrupted
    with pytest.raises(InputError, match="no docstrings"):
        corrupt(java, "docstring", language="java")


def test_node_corruptions_neutralize_one_node():
    tree = parse(SNIPPET)

    def node(type_: str, text: str) -> int:
        return next(i for i in range(tree.n_nodes) if tree.type[i] == type_ and tree.text(i) == text)

    one = node_corruptions(tree, node("identifier", "x"))
    assert one is not None and len(one.edits) == 1 and one.edits[0].old == "x"  # that occurrence only
    assert node_corruptions(tree, node("+", "+")).edits[0].new == "-"
    assert node_corruptions(tree, node("integer", "0x1F")).edits[0].new == "0x10"
    assert node_corruptions(tree, node("comment", "# trailing")).edits[0].old == "  # trailing"
    doc = node_corruptions(tree, node("string", '"""Add things."""'))
    assert doc is not None and doc.kind == "docstring"
    ret = node_corruptions(tree, node("return_statement", "return x < y, None, True"))
    assert ret is not None and "    pass\n" in ret.corrupted
    assert node_corruptions(tree, node("parameters", "(a, b=0x1F)")) is None
    assert node_corruptions(tree, node("none", "None")) is None
    call = parse("y = f(a)\ndel x.z\n")
    made = [node_corruptions(call, i) for i in range(call.n_nodes) if call.type[i] in {"call", "attribute"}]
    assert made[0] is not None and made[0].corrupted == "y = None\ndel x.z\n"
    assert not parse("del None\n").has_error and made[1] is None  # tree-sitter takes del None, Python does not


# ------------------------------------------------------------------------------------------- specs and errors


def test_parse_spec_forms():
    assert parse_spec("rename:count") == CorruptionSpec("rename", name="count")
    assert parse_spec("rename:count:total") == CorruptionSpec("rename", name="count", new="total")
    assert parse_spec("operator:3:9") == CorruptionSpec("operator", line=3, col=9)
    assert parse_spec("literal:3:9:'a:b'") == CorruptionSpec("literal", line=3, col=9, new="'a:b'")
    assert parse_spec("docstring") == CorruptionSpec("docstring")
    assert parse_spec("comment:4") == CorruptionSpec("comment", line=4)
    assert str(parse_spec("operator:3:9")) == "operator:3:9"


@pytest.mark.parametrize("spec, message", [
    ("swap:x", "write one of rename:NAME, operator:LINE:COL"),
    ("rename:", "names no identifier"),
    ("operator:3", "needs a position"),
    ("operator:a:2", "is not a number"),
    ("literal:0:2", "is not a number"),
    ("rename:nope", "names present: f, a, b, x, y, z"),
    ("rename:x:for", "cannot rename 'x' to 'for'"),
    ("rename:x:y", "cannot rename 'x' to 'y'"),
    ("operator:2:5", "no binary operator on line 2; lines with one: 4, 5, 6, 7"),
    ("operator:4:13", "on line 4: '+' at 4:11, '*' at 4:15, 'not in' at 4:28, 'is not' at 4:44"),
    ("literal:99:1", "outside the snippet"),
    ("literal:1:3", "on line 1: '0x1F' at 1:12"),
    ("docstring:4", "no docstring on line 4; lines with one: 2"),
    ("comment:1", "no comment on line 1; lines with one: 3, 4"),
])
def test_a_bad_spec_names_the_fix(spec, message):
    with pytest.raises(InputError, match=re.escape(message)):
        corrupt(SNIPPET, spec)


def test_nothing_to_remove_is_an_error():
    with pytest.raises(InputError, match="no comment in the snippet"):
        corrupt("x = 1\n", "comment")
    with pytest.raises(InputError, match="no docstring in the snippet"):
        corrupt("x = 1\n", "docstring")


def test_spans_move_with_the_edits():
    src = "ab = ab + 1\n"
    c = corrupt(src, "rename:ab:xyz")
    assert [c.corrupted_span(e) for e in c.edits] == [(0, 3), (6, 9)]
    assert c.changed_mask().tolist() == [True, True] + [False] * 3 + [True, True] + [False] * 5
    start, end, ok = c.map_spans(np.array([0, 2, 4, 7, 10, 5]), np.array([2, 4, 6, 9, 12, 5]))
    assert ok.tolist() == [False, True, False, True, True, True]
    assert [c.corrupted[s:e] for s, e, k in zip(start, end, ok, strict=True) if k] == [" =", " +", "1\n", ""]
    empty = Corruption("none", "nothing", src, src, ())
    assert empty.first_change is None and empty.map_spans(np.array([1]), np.array([3]))[2].all()
    insert = Corruption("insert", "x", "ab", "aXb", (Edit(1, 1, "", "X"),))
    assert insert.map_spans(np.array([0, 1, 0]), np.array([1, 2, 2]))[2].tolist() == [True, True, False]
