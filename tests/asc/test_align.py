"""asc.align: the token-node binding (paper's delta) and its three options.

Spans are built by hand (no model) for the exact cases of the spec, and with the tiny model's
byte-level BPE tokenizer for realistic offsets (split multi-byte characters, tabs, CRLF).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asc.align import AlignOptions, _overlaps, align
from asc.syntax import parse
from tests.helpers import binding_pairs

COUNT = "def countChars(string, character):\n    return 1\n"
COUNT_PIECES = ["def", " countChars", "(", "string", ",", " character", "):", "\n   ", " return", " 1", "\n"]
TWO_STMTS = "def f(x):\n    y = x\n    return y\n"
TWO_PIECES = ["def", " f", "(", "x", "):", "\n   ", " y", " =", " x", "\n   ", " return", " y", "\n"]
MISSING = "def f(:\n  pass\n"
MISSING_PIECES = ["def", " f", "(", ":", "\n  ", "pass", "\n"]
NON_ASCII = 'def größe(x):\n    s = "héllo ✓"\n    return s\n'
TABS = 'def f(a,\tb):\n\tx = "a\tb"\n\treturn a\n'
CRLF = 'def f(a, b):\r\n    s = "x y"\r\n    return a\r\n'
ASTRAL = 'def f():\n    return "😀 ok"  # café 😀\n'
REAL_SOURCES = [COUNT, TWO_STMTS, NON_ASCII, TABS, CRLF, ASTRAL, MISSING]

ALL_OPTIONS = [AlignOptions(w, m, z) for w in ("enclosing", "skip") for m in ("all", "first")
               for z in ("none", "next_token")]


# ---------------------------------------------------------------------------------------------- helpers


def pieces_to_spans(source, pieces):
    """Consecutive token spans for ``pieces`` that concatenate to ``source``."""
    start, end, pos = [], [], 0
    for p in pieces:
        assert source.startswith(p, pos), (p, pos)
        start.append(pos)
        pos += len(p)
        end.append(pos)
    assert pos == len(source)
    return np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)


def tokenize(bundle, source):
    enc = bundle.tokenizer(source, return_offsets_mapping=True, return_special_tokens_mask=True)
    off = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    return off[:, 0].copy(), off[:, 1].copy(), np.asarray(enc["special_tokens_mask"], dtype=bool)


def node(tree, type_, text=None):
    hits = [i for i in range(tree.n_nodes) if tree.type[i] == type_ and (text is None or tree.text(i) == text)]
    assert len(hits) == 1, f"expected one {type_!r} node with text {text!r}, got {hits}"
    return hits[0]


def bound_nodes(al, token):
    """Set of nodes that own ``token``."""
    return {int(n) for n, t in zip(*binding_pairs(al), strict=True) if t == token}


def pairs(al):
    nodes, tokens = binding_pairs(al)
    return set(zip(nodes.tolist(), tokens.tolist(), strict=True))


def core(source, s, e):
    """(core start, core end, whitespace-only) of a token, computed independently of asc.align."""
    text = source[s:e]
    if not text.strip():
        return s, e, e > s
    lead = len(text) - len(text.lstrip())
    trail = len(text) - len(text.rstrip())
    return s + lead, e - trail, False


def brute_force(tree, start, end, special=None):
    """Default binding by definition: each non-special token counts for every non-empty node its core
    span overlaps."""
    out = set()
    for t in range(len(start)):
        if special is not None and special[t]:
            continue
        cs, ce, _ = core(tree.source, int(start[t]), int(end[t]))
        if ce <= cs:
            continue
        for n in range(tree.n_nodes):
            a, b = int(tree.start[n]), int(tree.end[n])
            if b > a and a < ce and cs < b:
                out.add((n, t))
    return out


def check_structure(al, tree, n_tokens):
    assert al.n_nodes == tree.n_nodes
    assert al.lo.shape == al.hi.shape == (tree.n_nodes,)
    assert np.all((0 <= al.lo) & (al.lo <= al.hi) & (al.hi <= len(al.order)))
    assert np.array_equal(al.counts(), al.hi - al.lo)
    for n in range(tree.n_nodes):
        toks = al.tokens_of(n)
        assert np.all(np.diff(toks) > 0), "tokens of a node are sorted and unique"
        assert np.all((toks >= 0) & (toks < n_tokens))


# ---------------------------------------------------------------------------------------------- the paper's binding


def test_binding_includes_ancestors_hand_made():
    tree = parse(COUNT)
    start, end = pieces_to_spans(COUNT, COUNT_PIECES)
    al = align(tree, start, end)
    check_structure(al, tree, len(start))
    params = node(tree, "parameters")
    # "(", "string", ",", " character", "):" -- the tokens inside "(string, character)"
    assert al.tokens_of(params).tolist() == [2, 3, 4, 5, 6]
    assert al.tokens_of(0).tolist() == list(range(len(COUNT_PIECES)))  # module owns every token
    fn = node(tree, "function_definition")
    assert al.tokens_of(fn).tolist() == list(range(10))  # the final "\n" lies after the function
    assert al.tokens_of(node(tree, "identifier", "string")).tolist() == [3]
    assert al.tokens_of(node(tree, "identifier", "character")).tolist() == [5]
    assert al.tokens_of(node(tree, "identifier", "countChars")).tolist() == [1]
    assert al.tokens_of(node(tree, "return_statement")).tolist() == [8, 9]
    assert al.tokens_of(node(tree, "integer")).tolist() == [9]
    # every ancestor of a leaf owns the leaf's tokens
    for n in range(1, tree.n_nodes):
        assert set(al.tokens_of(n).tolist()) <= set(al.tokens_of(int(tree.parent[n])).tolist())
    assert pairs(al) == brute_force(tree, start, end)


def test_binding_includes_ancestors_tiny(tiny):
    tree = parse(COUNT)
    start, end, special = tokenize(tiny, COUNT)
    al = align(tree, start, end, special)
    check_structure(al, tree, len(start))
    params = node(tree, "parameters")
    a, b = int(tree.start[params]), int(tree.end[params])
    expected = [t for t in range(len(start)) if start[t] < b and a < end[t] and not special[t]]
    assert al.tokens_of(params).tolist() == expected
    # those tokens cover "(string, character)" and nothing of the code around it but the ':'
    covered = COUNT[start[expected[0]] : end[expected[-1]]]
    assert "(string, character)" in covered
    assert covered.strip() in ("(string, character)", "(string, character):")
    nonspecial = np.flatnonzero(~special & (end > start)).tolist()
    assert al.tokens_of(0).tolist() == nonspecial
    for n in range(1, tree.n_nodes):
        assert set(al.tokens_of(n).tolist()) <= set(al.tokens_of(int(tree.parent[n])).tolist())


# ---------------------------------------------------------------------------------------------- multi-leaf


def test_multi_leaf_token_all_and_first():
    tree = parse(COUNT)
    start, end = pieces_to_spans(COUNT, COUNT_PIECES)
    paren, colon = node(tree, ")"), node(tree, ":")
    params, fn = node(tree, "parameters"), node(tree, "function_definition")
    tok = COUNT_PIECES.index("):")

    default = align(tree, start, end)
    assert default.options.multi_leaf == "all"
    assert tok in default.tokens_of(paren) and tok in default.tokens_of(colon)
    assert bound_nodes(default, tok) == {0, fn, params, paren, colon}

    first = align(tree, start, end, options=AlignOptions(multi_leaf="first"))
    assert tok in first.tokens_of(paren)
    assert tok not in first.tokens_of(colon)
    assert bound_nodes(first, tok) == {0, fn, params, paren}  # the ')' leaf and its ancestors
    # tokens that cover a single leaf are unaffected
    for t in range(len(start)):
        if t != tok:
            assert bound_nodes(first, t) == bound_nodes(default, t)


# ---------------------------------------------------------------------------------------------- whitespace


def test_whitespace_token_enclosing_and_skip_hand_made():
    tree = parse(COUNT)
    start, end = pieces_to_spans(COUNT, COUNT_PIECES)
    ws = COUNT_PIECES.index("\n   ")
    fn = node(tree, "function_definition")
    enclosing = align(tree, start, end)
    assert enclosing.options.whitespace == "enclosing"
    assert bound_nodes(enclosing, ws) == {0, fn}
    skip = align(tree, start, end, options=AlignOptions(whitespace="skip"))
    assert bound_nodes(skip, ws) == set()
    assert bound_nodes(skip, len(COUNT_PIECES) - 1) == set()  # the trailing "\n" too
    # tokens with visible text keep their nodes under "skip"
    for t, piece in enumerate(COUNT_PIECES):
        if piece.strip():
            assert bound_nodes(skip, t) == bound_nodes(enclosing, t)


def test_whitespace_between_statements():
    tree = parse(TWO_STMTS)
    start, end = pieces_to_spans(TWO_STMTS, TWO_PIECES)
    between = 9  # the "\n   " after "y = x"
    assert TWO_PIECES[between] == "\n   "
    block, fn = node(tree, "block"), node(tree, "function_definition")
    enclosing = align(tree, start, end)
    assert bound_nodes(enclosing, between) == {0, fn, block}
    assert not any(tree.is_leaf[n] for n in bound_nodes(enclosing, between))
    skip = align(tree, start, end, options=AlignOptions(whitespace="skip"))
    assert bound_nodes(skip, between) == set()


@pytest.mark.parametrize("source", [NON_ASCII, TABS, CRLF, TWO_STMTS])
def test_whitespace_tokens_tiny(tiny, source):
    tree = parse(source)
    start, end, special = tokenize(tiny, source)
    enclosing = align(tree, start, end, special)
    skip = align(tree, start, end, special, AlignOptions(whitespace="skip"))
    leaves = [n for n in range(tree.n_nodes) if tree.is_leaf[n] and tree.end[n] > tree.start[n]]
    n_outside = 0
    for t in range(len(start)):
        text = source[start[t] : end[t]]
        if not text or text.strip():
            continue
        inside = [n for n in leaves if tree.start[n] <= start[t] and end[t] <= tree.end[n]]
        if inside:  # whitespace that is content (string, comment): bound either way
            assert set(inside) <= bound_nodes(enclosing, t)
            assert bound_nodes(skip, t) == bound_nodes(enclosing, t)
        else:
            n_outside += 1
            got = bound_nodes(enclosing, t)
            assert 0 in got  # the module encloses everything
            assert not any(tree.is_leaf[n] for n in got)
            assert got == {n for n in range(tree.n_nodes)
                           if tree.start[n] < end[t] and start[t] < tree.end[n]}
            assert bound_nodes(skip, t) == set()
    assert n_outside > 0, "the source should have whitespace-only tokens between code"


def test_whitespace_inside_string_is_bound_under_both_policies():
    source = 's = "a  b"\n'
    pieces = ["s", " =", ' "', "a", "  ", "b", '"', "\n"]
    tree = parse(source)
    start, end = pieces_to_spans(source, pieces)
    ws = pieces.index("  ")
    string, content = node(tree, "string"), node(tree, "string_content")
    for opts in (AlignOptions(), AlignOptions(whitespace="skip")):
        al = align(tree, start, end, options=opts)
        assert {string, content} <= bound_nodes(al, ws)
        assert ws in al.tokens_of(string)


def test_whitespace_inside_string_tiny(tiny):
    tree = parse(NON_ASCII)
    start, end, special = tokenize(tiny, NON_ASCII)
    string = node(tree, "string")
    space = int(NON_ASCII.index("o ✓") + 1)
    toks = [t for t in range(len(start)) if start[t] <= space < end[t]]
    assert toks and all(not NON_ASCII[start[t] : end[t]].strip() for t in toks), \
        "the tiny tokenizer should give the space inside the string its own token"
    for opts in (AlignOptions(), AlignOptions(whitespace="skip")):
        al = align(tree, start, end, special, opts)
        for t in toks:
            assert t in al.tokens_of(string)


# ---------------------------------------------------------------------------------------------- zero-width nodes


def test_zero_width_missing_node_hand_made():
    tree = parse(MISSING)
    missing = np.flatnonzero(tree.is_missing)
    assert len(missing) == 1
    m = int(missing[0])
    assert tree.start[m] == tree.end[m] == MISSING.index(":")
    start, end = pieces_to_spans(MISSING, MISSING_PIECES)
    default = align(tree, start, end)
    assert default.options.zero_width == "none"
    assert default.counts()[m] == 0
    nxt = align(tree, start, end, options=AlignOptions(zero_width="next_token"))
    assert nxt.tokens_of(m).tolist() == [MISSING_PIECES.index(":")]  # the token at its position
    # the other nodes keep their tokens
    for n in range(tree.n_nodes):
        if n != m:
            assert nxt.tokens_of(n).tolist() == default.tokens_of(n).tolist()


def test_zero_width_missing_node_tiny(tiny):
    tree = parse(MISSING)
    m = int(np.flatnonzero(tree.is_missing)[0])
    start, end, special = tokenize(tiny, MISSING)
    assert align(tree, start, end, special).counts()[m] == 0
    nxt = align(tree, start, end, special, AlignOptions(zero_width="next_token"))
    toks = nxt.tokens_of(m)
    assert len(toks) == 1
    t = int(toks[0])
    pos = int(tree.start[m])
    assert end[t] > pos, "the token at or after the missing node's position"
    assert all(end[u] <= pos for u in range(t) if not special[u]), "and the first such token"


def test_zero_width_at_end_of_source():
    source = "int x = 1"  # java: MISSING ';' at the very end, after the last token
    tree = parse(source, "java")
    m = int(np.flatnonzero(tree.is_missing)[0])
    assert tree.start[m] == len(source)
    start, end = pieces_to_spans(source, ["int", " x", " =", " 1"])
    assert align(tree, start, end).counts()[m] == 0
    nxt = align(tree, start, end, options=AlignOptions(zero_width="next_token"))
    assert len(nxt.tokens_of(m)) == 1


# ---------------------------------------------------------------------------------------------- special tokens


def test_bos_is_never_bound(tiny_bos):
    for source in (COUNT, NON_ASCII, MISSING):
        tree = parse(source)
        start, end, special = tokenize(tiny_bos, source)
        assert special[0] and start[0] == 0 and end[0] == 0
        for opts in ALL_OPTIONS:
            al = align(tree, start, end, special, opts)
            assert 0 not in set(binding_pairs(al)[1].tolist())
        # the other tokens bind as they do without the BOS (shifted by one)
        plain = align(tree, start[1:], end[1:], special[1:])
        with_bos = align(tree, start, end, special)
        assert pairs(with_bos) == {(n, t + 1) for n, t in pairs(plain)}


def test_special_token_with_a_span_is_never_bound():
    tree = parse(COUNT)
    start, end = pieces_to_spans(COUNT, COUNT_PIECES)
    special = np.zeros(len(start), dtype=bool)
    special[3] = True  # pretend "string" is a special token
    al = align(tree, start, end, special)
    assert 3 not in set(binding_pairs(al)[1].tolist())
    assert al.counts()[node(tree, "identifier", "string")] == 0


# ---------------------------------------------------------------------------------------------- real tokenizer


@pytest.mark.parametrize("source", REAL_SOURCES, ids=lambda s: repr(s)[:20])
def test_tiny_tokenizer_binding(tiny, source):
    tree = parse(source)
    start, end, special = tokenize(tiny, source)
    assert end[-1] == len(source)
    al = align(tree, start, end, special)
    check_structure(al, tree, len(start))
    # every bound token's span overlaps its node's span
    for n, t in pairs(al):
        assert start[t] < tree.end[n] and tree.start[n] < end[t], (tree.type[n], source[start[t]:end[t]])
    # every token with visible text inside a leaf is bound to that leaf
    checked = 0
    for t in range(len(start)):
        cs, ce, ws = core(source, int(start[t]), int(end[t]))
        if special[t] or ws or ce <= cs:
            continue
        for n in range(tree.n_nodes):
            if tree.is_leaf[n] and tree.start[n] <= cs and ce <= tree.end[n] and tree.end[n] > tree.start[n]:
                assert t in al.tokens_of(n), (tree.type[n], tree.text(n), source[start[t]:end[t]])
                checked += 1
    assert checked > 0
    assert pairs(al) == brute_force(tree, start, end, special)


def test_split_multibyte_character_binds_both_halves(tiny):
    tree = parse(NON_ASCII)
    start, end, special = tokenize(tiny, NON_ASCII)
    ident = node(tree, "identifier", "größe")
    al = align(tree, start, end, special)
    expected = [t for t in range(len(start)) if tree.start[ident] <= start[t] and end[t] <= tree.end[ident]]
    # the tokenizer splits ö and ß into byte-level halves that share a character span
    assert len(expected) > len({(int(start[t]), int(end[t])) for t in expected})
    assert set(expected) <= set(al.tokens_of(ident).tolist())


# ---------------------------------------------------------------------------------------------- empty input


def test_empty_source_zero_tokens():
    tree = parse("")
    empty = np.zeros(0, dtype=np.int64)
    for opts in ALL_OPTIONS:
        al = align(tree, empty, empty, np.zeros(0, dtype=bool), opts)
        assert al.n_nodes == 1
        assert al.counts().tolist() == [0]
        assert len(binding_pairs(al)[1]) == 0
        assert al.tokens_of(0).tolist() == []


def test_empty_source_tiny(tiny, tiny_bos):
    tree = parse("")
    for bundle, n_tok in ((tiny, 0), (tiny_bos, 1)):
        start, end, special = tokenize(bundle, "")
        assert len(start) == n_tok
        for opts in ALL_OPTIONS:
            al = align(tree, start, end, special, opts)
            assert al.counts().tolist() == [0]


def test_tokens_but_no_usable_spans():
    tree = parse(COUNT)
    start = np.array([0, 5], dtype=np.int64)
    end = np.array([0, 5], dtype=np.int64)  # empty spans bind to nothing
    al = align(tree, start, end)
    assert np.all(al.counts() == 0)


# ---------------------------------------------------------------------------------------------- fast path vs dense


def _permuted(start, end, special, perm):
    return start[perm], end[perm], special[perm]


@pytest.mark.parametrize("opts", [o for o in ALL_OPTIONS if o.zero_width == "none"], ids=repr)
@pytest.mark.parametrize("source", [COUNT, NON_ASCII, CRLF, TWO_STMTS])
def test_dense_fallback_agrees_with_fast_path(tiny, source, opts):
    tree = parse(source)
    start, end, special = tokenize(tiny, source)
    n = len(start)
    monotone = align(tree, start, end, special, opts)
    if opts == AlignOptions():
        assert pairs(monotone) == brute_force(tree, start, end, special)
    swap = np.arange(n)
    swap[[2, 5]] = swap[[5, 2]]  # swap two tokens' spans
    for perm in (swap, np.arange(n)[::-1].copy()):
        ps, pe, pspec = _permuted(start, end, special, perm)
        assert np.any(np.diff(ps) < 0), "input must be non-monotone to take the dense path"
        dense = align(tree, ps, pe, pspec, opts)
        check_structure(dense, tree, n)
        # map the permuted token indices back to the original ones
        assert {(nd, int(perm[t])) for nd, t in pairs(dense)} == pairs(monotone)


@pytest.mark.parametrize("perm_kind", ["swap", "reverse"])
def test_dense_fallback_zero_width_next_token(perm_kind):
    tree = parse(MISSING)
    m = int(np.flatnonzero(tree.is_missing)[0])
    start, end = pieces_to_spans(MISSING, MISSING_PIECES)
    special = np.zeros(len(start), dtype=bool)
    opts = AlignOptions(zero_width="next_token")
    monotone = align(tree, start, end, special, opts)
    n = len(start)
    perm = np.arange(n)
    if perm_kind == "swap":
        perm[[0, 5]] = perm[[5, 0]]
    else:
        perm = perm[::-1].copy()
    ps, pe, pspec = _permuted(start, end, special, perm)
    dense = align(tree, ps, pe, pspec, opts)
    assert [int(perm[t]) for t in dense.tokens_of(m)] == monotone.tokens_of(m).tolist()
    assert {(nd, int(perm[t])) for nd, t in pairs(dense)} == pairs(monotone)


_SPANS = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 40)), min_size=2, max_size=25)


@settings(max_examples=150, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 12)), max_size=25), tokens=_SPANS)
def test_the_sweep_lists_each_overlapping_pair_once(nodes, tokens):
    """The fallback's sweep against its definition, cell by cell: every (node, token) with ``ns < te`` and
    ``ts < ne`` of a non-empty node, each once, whatever the order, nesting and overlaps of the spans."""
    ns, ne = np.array([a for a, _ in nodes], np.int64), np.array([a + n for a, n in nodes], np.int64)
    ts, te = np.array([a for a, _ in tokens], np.int64), np.array([a + n for a, n in tokens], np.int64)
    node_of, pos = _overlaps(ns, ne, ts, te)
    found = sorted(zip(node_of.tolist(), pos.tolist(), strict=True))
    assert found == [(n, t) for n in range(len(ns)) for t in range(len(ts))
                     if ne[n] > ns[n] and ns[n] < te[t] and ts[t] < ne[n]]


@settings(max_examples=100, deadline=None)
@given(source=st.sampled_from([COUNT, TWO_STMTS, MISSING, CRLF]), tokens=_SPANS,
       special=st.lists(st.booleans(), min_size=25, max_size=25))
def test_out_of_order_overlapping_spans_bind_as_defined(source, tokens, special):
    """Spans no tokenizer in text order gives (overlapping, out of order, spanning several statements) take the
    sweep and bind every node their core overlaps (``multi_leaf='first'``: the nodes holding its first visible
    character), as the dense definition does."""
    tree = parse(source)
    start = np.array([min(a, len(source) - 1) for a, _ in tokens], np.int64)
    end = np.array([min(a + n, len(source)) for a, n in tokens], np.int64)
    spec = np.array(special[: len(start)])
    expected = brute_force(tree, start, end, spec)
    al = align(tree, start, end, spec)
    check_structure(al, tree, len(start))  # each token once per node
    assert pairs(al) == expected
    first = {(n, t) for n, t in expected if tree.start[n] <= core(source, int(start[t]), int(end[t]))[0] < tree.end[n]}
    assert pairs(align(tree, start, end, spec, AlignOptions(multi_leaf="first"))) == first


# ---------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize("kwargs", [{"whitespace": "drop"}, {"multi_leaf": "last"}, {"zero_width": "prev"},
                                    {"whitespace": None}])
def test_invalid_option_raises(kwargs):
    with pytest.raises(ValueError) as err:
        AlignOptions(**kwargs)
    assert next(iter(kwargs)) in str(err.value)


def test_default_options():
    o = AlignOptions()
    assert (o.whitespace, o.multi_leaf, o.zero_width) == ("enclosing", "all", "none")
    tree = parse(COUNT)
    start, end = pieces_to_spans(COUNT, COUNT_PIECES)
    assert align(tree, start, end).options == o
