"""asc.syntax: the flat node table, char vs byte spans, error recovery, languages."""

from __future__ import annotations

import numpy as np
import pytest

from asc.errors import InputError
from asc.syntax import LANGUAGES, byte_to_char, get_parser, parse

COUNT = "def countChars(string, character):\n    return 1\n"
NON_ASCII = 'def größe(x):\n    s = "héllo ✓"\n    return s\n'
ASTRAL = 'def f():\n    return "😀 ok"  # café 😀\n'
TABS = 'def f(a,\tb):\n\tx = "a\tb"\n\treturn a\n'
CRLF = 'def f(a, b):\r\n    s = "x y"\r\n    return a\r\n'
BROKEN = "def f(x:\n  return (1\n"
MISSING = "def f(:\n  pass\n"
JAVA = "class A { int f() { return 1; } }"

PY_SOURCES = [COUNT, NON_ASCII, ASTRAL, TABS, CRLF, BROKEN, MISSING, ""]
ALL_SOURCES = [(s, "python") for s in PY_SOURCES] + [(JAVA, "java"), ("int x = 1\n", "java")]


def _ids(sources):
    return [repr(s[0] if isinstance(s, tuple) else s)[:24] for s in sources]


def _node(tree, type_, text=None):
    hits = [i for i in range(tree.n_nodes) if tree.type[i] == type_ and (text is None or tree.text(i) == text)]
    assert len(hits) == 1, f"expected one {type_!r} node with text {text!r}, got {hits}"
    return hits[0]


# ---------------------------------------------------------------------------------------------- node table


@pytest.mark.parametrize("source,language", ALL_SOURCES, ids=_ids(ALL_SOURCES))
def test_node_table_invariants(source, language):
    t = parse(source, language)
    n = t.n_nodes
    assert n >= 1
    for arr in (t.named, t.start, t.end, t.start_byte, t.end_byte, t.parent, t.depth, t.is_error, t.is_missing):
        assert arr.shape == (n,)
    assert t.parent[0] == -1 and t.depth[0] == 0
    assert t.type[0] == ("module" if language == "python" else "program")
    idx = np.arange(1, n)
    par = t.parent[1:]
    assert np.all(par >= 0)
    assert np.all(par < idx), "pre-order: a parent comes before its children"
    assert np.all(t.depth[1:] == t.depth[par] + 1)
    # children lie within their parent, in chars and in bytes
    assert np.all(t.start[par] <= t.start[1:]) and np.all(t.end[1:] <= t.end[par])
    assert np.all(t.start_byte[par] <= t.start_byte[1:]) and np.all(t.end_byte[1:] <= t.end_byte[par])
    assert np.all(t.start <= t.end) and np.all(t.start_byte <= t.end_byte)
    assert np.all(t.end <= len(source)) and np.all(t.end_byte <= len(source.encode("utf-8")))
    # children in source order
    for i in range(n):
        kids = t.children(i)
        assert np.all(np.diff(t.start[kids]) >= 0)
    assert t.n_levels == int(t.depth.max()) + 1
    # a leaf is exactly a node that is nobody's parent
    parents = set(t.parent[1:].tolist())
    assert t.is_leaf.tolist() == [i not in parents for i in range(n)]


@pytest.mark.parametrize("source,language", ALL_SOURCES, ids=_ids(ALL_SOURCES))
def test_char_spans_match_byte_spans(source, language):
    t = parse(source, language)
    data = source.encode("utf-8")
    for i in range(t.n_nodes):
        by_char = source[t.start[i] : t.end[i]]
        by_byte = data[t.start_byte[i] : t.end_byte[i]].decode("utf-8")
        assert by_char == by_byte, (t.type[i], by_char, by_byte)
        assert t.text(i) == by_char


def test_non_ascii_identifier_and_string_spans():
    t = parse(NON_ASCII)
    ident = _node(t, "identifier", "größe")
    assert (t.start[ident], t.end[ident]) == (4, 9)
    assert (t.start_byte[ident], t.end_byte[ident]) == (4, 11)  # ö and ß take two bytes each
    s = _node(t, "string")
    assert t.text(s) == '"héllo ✓"'
    content = _node(t, "string_content")
    assert t.text(content) == "héllo ✓"
    assert t.end_byte[content] - t.start_byte[content] == len("héllo ✓".encode())
    # everything after the non-ASCII text is shifted in bytes but not in characters
    s_idents = [i for i in range(t.n_nodes) if t.type[i] == "identifier" and t.text(i) == "s"]
    assert len(s_idents) == 2
    assert [int(t.start[i]) for i in s_idents] == [NON_ASCII.index("s ="), NON_ASCII.rindex("s")]


def test_astral_characters_count_as_one_char():
    t = parse(ASTRAL)
    comment = _node(t, "comment")
    assert t.text(comment) == "# café 😀"
    assert t.end[comment] == len(ASTRAL) - 1  # before the final newline
    assert t.end_byte[comment] - t.start_byte[comment] == len("# café 😀".encode())


def test_tabs():
    t = parse(TABS)
    assert not t.has_error
    b = _node(t, "identifier", "b")
    assert t.start[b] == TABS.index("b)")
    content = _node(t, "string_content")
    assert t.text(content) == "a\tb"
    ret = _node(t, "return_statement")
    assert t.text(ret) == "return a"


def test_crlf_line_endings():
    t = parse(CRLF)
    assert not t.has_error
    assert [t.text(i) for i in range(t.n_nodes) if t.type[i] == "identifier"] == ["f", "a", "b", "s", "a"]
    assert t.text(_node(t, "string")) == '"x y"'
    assert t.text(_node(t, "return_statement")) == "return a"
    fn = _node(t, "function_definition")
    assert t.text(fn) == CRLF[: CRLF.rindex("\r\n")]
    assert "\r" not in "".join(t.text(i) for i in range(t.n_nodes) if t.is_leaf[i])


def test_syntax_error_is_data_not_exception():
    t = parse(BROKEN)
    assert t.has_error
    assert t.is_error.any()
    errors = [i for i in range(t.n_nodes) if t.is_error[i]]
    assert all(t.type[i] == "ERROR" for i in errors)
    assert t.is_error.dtype == bool and t.is_missing.dtype == bool


def test_missing_node_is_zero_width():
    t = parse(MISSING)
    assert t.has_error
    missing = np.flatnonzero(t.is_missing)
    assert len(missing) >= 1
    for i in missing:
        assert t.start[i] == t.end[i] and t.start_byte[i] == t.end_byte[i]
        assert t.text(i) == ""
    assert not t.is_error.any()  # has_error comes from the MISSING node alone here


def test_clean_source_has_no_error():
    t = parse(COUNT)
    assert not t.has_error
    assert not t.is_error.any() and not t.is_missing.any()


def test_empty_source():
    t = parse("")
    assert t.n_nodes == 1
    assert t.type == ("module",)
    assert (t.start[0], t.end[0], t.parent[0], t.depth[0]) == (0, 0, -1, 0)
    assert not t.has_error
    assert t.n_levels == 1


def test_named_flags():
    t = parse(COUNT)
    assert t.named[_node(t, "identifier", "countChars")]
    assert not t.named[_node(t, ")")]
    assert not t.named[_node(t, "def")]


def test_java_parses():
    t = parse(JAVA, "java")
    assert t.language == "java"
    assert not t.has_error
    m = _node(t, "method_declaration")
    assert t.text(m) == "int f() { return 1; }"
    assert t.text(_node(t, "return_statement")) == "return 1;"


def test_java_missing_semicolon():
    t = parse("int x = 1\n", "java")
    missing = np.flatnonzero(t.is_missing)
    assert [t.type[i] for i in missing] == [";"]


@pytest.mark.parametrize("call", [lambda: parse("x = 1", "cobol"), lambda: get_parser("cobol")])
def test_unknown_language(call):
    with pytest.raises(InputError) as err:
        call()
    msg = str(err.value)
    assert "python" in msg and "java" in msg and "cobol" in msg


def test_languages_constant():
    assert set(LANGUAGES) == {"python", "java"}


def test_bytes_source_rejected():
    with pytest.raises(InputError):
        parse(b"x = 1")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- byte_to_char


def test_byte_to_char_ascii_is_identity():
    m = byte_to_char("abc")
    assert m.tolist() == [0, 1, 2, 3]
    assert m.dtype == np.int64
    assert byte_to_char("").tolist() == [0]


def test_byte_to_char_multibyte():
    # a: 1 byte, é: 2 bytes, ✓: 3 bytes, 😀: 4 bytes
    m = byte_to_char("aé✓😀")
    assert m.tolist() == [0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4]
    assert m.dtype == np.int64


@pytest.mark.parametrize("source", [NON_ASCII, ASTRAL, "ß", "x✓y\n"])
def test_byte_to_char_agrees_with_python(source):
    m = byte_to_char(source)
    data = source.encode("utf-8")
    assert len(m) == len(data) + 1
    assert m[-1] == len(source)
    # at every character boundary the mapping is exact
    pos = 0
    for k, ch in enumerate(source):
        assert m[pos] == k
        width = len(ch.encode("utf-8"))
        assert all(m[pos + j] == k for j in range(width))  # continuation bytes map to their character
        pos += width
    assert np.all(np.diff(m) >= 0)


def test_root_covers_leading_blank_lines_and_whole_source():
    from asc.syntax import parse as _parse

    src = "\n\n# c\nx = 1\n"
    tree = _parse(src)
    assert tree.start[0] == 0 and tree.end[0] == len(src)
    assert tree.start_byte[0] == 0


def test_lone_surrogate_is_an_input_error():
    import pytest as _pytest

    from asc.errors import InputError as _InputError
    from asc.syntax import parse as _parse

    with _pytest.raises(_InputError, match="surrogate"):
        _parse("x = '\ud800'\n")


def test_covering_finds_the_smallest_named_node_around_a_span():
    source = "def f(a, b):\n    return a <= b\n"
    tree = parse(source)
    at = source.index("<=")
    node = tree.covering(at, at + 2)
    assert tree.type[node] == "comparison_operator" and tree.text(node) == "a <= b"
    anon = tree.covering(at, at + 2, named=False)
    assert tree.type[anon] == "<=" and tree.text(anon) == "<="
    name = tree.covering(4, 5)
    assert tree.type[name] == "identifier" and tree.text(name) == "f"
    whole = tree.covering(0, len(source.rstrip()))
    assert tree.type[whole] == "function_definition"
    assert tree.covering(0, len(source)) == 0  # only the module holds the trailing newline
