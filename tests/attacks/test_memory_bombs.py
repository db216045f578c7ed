"""Memory bombs (issue 28, part 3): pasted code nested so deep that explaining it grew with the square of the
depth. ``x = (((...1...)))`` with 30,000 parentheses was killed by the kernel at 23.5 GB, 60 KB of nested ``[``
did the same, and a 120 KB ``x = 1+1+...`` chain asked numpy for 26.8 GiB: every token was bound once per
ancestor (tokens x depth pairs).

Each reproduction runs as the user ran it, ``python -m asc explain FILE --model tiny-random`` in a subprocess
whose address space is capped (``RLIMIT_AS``), so a regression fails here instead of taking the machine down:
the CLI must exit 2 with one line naming the depth limit. In process: the refusal comes before any model call;
the inspector page shows it as an error line; the corpus loader skips such snippets; the deepest accepted input
is explained in memory linear in its tokens (traced allocations, not timings: time is ``make bench``'s
``bench_limits``). Hypothesis builds deep and wide trees: explaining one either succeeds with an output that
agrees with the paper's definition, or raises :class:`~asc.errors.TooDeepError`, nothing else.
"""

from __future__ import annotations

import json
import logging
import math
import os
import resource
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from asc.align import AlignOptions, align
from asc.errors import InputError, TooDeepError
from asc.explain import check_source, explain, explain_scored
from asc.scores import TokenScores
from asc.syntax import MAX_AST_DEPTH, get_parser, parse
from asc.viz import tree_figure, tree_layout
from tests.helpers import ROOT

ADDRESS_SPACE = 4 * 1024**3  # the CLI's cap: far above what explaining 60 KB needs, far below the bombs

BOMBS = {  # the reproductions, byte for byte
    "nested parens 30000": "x = " + "(" * 30_000 + "1" + ")" * 30_000 + "\n",
    "nested brackets 60 KB": "x = " + "[" * 30_000 + "]" * 30_000 + "\n",
    "binary chain 120 KB": "x = " + "+".join(["1"] * 60_000) + "\n",
}


def _tree_depth(source: str) -> int:
    """The tree's depth (root = 0) by a plain tree-sitter walk: no limit, no asc code."""
    cursor = get_parser("python").parse(source.encode("utf-8")).walk()
    depth = deepest = 0
    while True:
        if cursor.goto_first_child():
            depth += 1
            deepest = max(deepest, depth)
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return deepest
            depth -= 1


def _cap_address_space() -> None:  # preexec_fn: runs in the child before python starts
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# ------------------------------------------------------------------------------------------ the reproductions


@pytest.mark.slow  # a subprocess each (a second when refused; the old code ran until the cap stopped it)
@pytest.mark.parametrize("name", list(BOMBS))
def test_the_cli_refuses_the_bomb_in_one_line(tmp_path, name):
    path = tmp_path / "n.py"
    path.write_text(BOMBS[name])
    out = subprocess.run([sys.executable, "-m", "asc", "explain", str(path), "--model", "tiny-random"],
                         capture_output=True, timeout=600, cwd=ROOT, preexec_fn=_cap_address_space,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)})
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2, (out.returncode, err[-500:])
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-500:]
    assert f"at most {MAX_AST_DEPTH} levels" in err and "split the deepest nesting" in err


@pytest.mark.parametrize("name", list(BOMBS))
def test_the_refusal_comes_before_any_model_call(tiny, monkeypatch, name):
    explain_module = sys.modules["asc.explain"]  # the module (``asc.explain`` is also the function)

    def no_model(*args, **kwargs):
        raise AssertionError("the model ran on a refused input")

    monkeypatch.setattr(explain_module, "score_texts", no_model)
    with pytest.raises(TooDeepError) as err:
        check_source(BOMBS[name], "python")
    assert isinstance(err.value, InputError) and "\n" not in str(err.value)
    with pytest.raises(TooDeepError):
        explain(tiny, BOMBS[name])


def test_the_inspector_shows_the_refusal_as_an_error_line(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.pages.helpers import TINY, button, page

    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(page("inspect"), default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    # 600 levels: refused now; the old code explained it (1,200 tokens x 600 ancestors) and drew both trees
    at.text_area(key="code").set_value("x = " + "(" * 600 + "1" + ")" * 600 + "\n").run()
    button(at, "Explain").click().run()
    assert not at.exception
    assert [e.value for e in at.error if f"at most {MAX_AST_DEPTH} levels" in e.value]


def test_the_corpus_loader_skips_a_too_deep_snippet(tmp_path, caplog):
    from asc.corpus.sources import load_corpus

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": i, "code": code}) for i, code in (
        ("ok", "def f(x):\n    return (x + 1)\n"), ("deep", BOMBS["nested parens 30000"]))))
    with caplog.at_level(logging.WARNING):
        snippets = load_corpus(str(corpus))
    assert [s.id for s in snippets] == ["ok"]
    assert any("deep" in r.getMessage() and str(MAX_AST_DEPTH) in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------------------------------ the deepest accepted


def _deepest_wide(chars: int = 60_000) -> str:
    """The deepest accepted nesting around one long flat list, ``chars`` long: the most (node, token) pairs
    an accepted input can have (each list item sits under every one of the parentheses)."""
    k = MAX_AST_DEPTH - 5
    items = (chars - 2 * k - 8) // 3
    return "x = " + "(" * k + "[" + ", ".join(["1"] * items) + "]" + ")" * k + "\n"


def _char_scores(source: str, seed: int = 0) -> TokenScores:
    """One token per character with random probabilities (no model: the allocation measured is AsC-Eval's)."""
    n = len(source)
    rng = np.random.default_rng(seed)
    return TokenScores(source=source, ids=np.zeros(n, np.int64), start=np.arange(n), end=np.arange(n) + 1,
                       special=np.zeros(n, bool), prob=rng.random(n), logprob=np.zeros(n), entropy=np.zeros(n),
                       rank=np.ones(n, np.int64), top_ids=np.zeros((n, 5), np.int64), top_probs=np.zeros((n, 5)),
                       top_text=(("",) * 5,) * n)


def test_the_deepest_accepted_input_is_explained_in_memory_linear_in_its_tokens():
    source = _deepest_wide()
    assert _tree_depth(source) <= MAX_AST_DEPTH
    scores = _char_scores(source)
    tree = parse(source)
    n = len(source)
    tracemalloc.start()
    try:
        ex = explain_scored({"name": "chars"}, scores, tree=tree)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    pairs = int(ex.alignment.counts().sum())
    assert pairs > 100 * n  # each token is bound to hundreds of nodes...
    assert peak < 2 * pairs  # ...yet a quarter of one int64 per pair is never reached (the old code: several)
    # spot-check the values against the definition: the median over the (one-character) tokens a node overlaps
    for node in np.linspace(0, tree.n_nodes - 1, 40).astype(int):
        a, b = tree.start[node], tree.end[node]
        want = float(np.median(scores.prob[a:b])) if b > a else math.nan
        assert ex.values[node] == pytest.approx(want, nan_ok=True)


# ------------------------------------------------------------------------------------------ deep and wide trees

WRAPS = ("({})", "[{}]", "-{}", "f({})", "{} + 1", "1 * {}", "not {}", "{{{}}}", "({},)", "a[{}]", "lambda: {}")
ATOMS = ("1", "x", "'s'", "2.5", "None", "y.z")


@st.composite
def deep_code(draw) -> str:
    """An assignment whose right side repeats a few wrappers up to a few hundred levels (around the limit)."""
    pattern = draw(st.lists(st.sampled_from(WRAPS), min_size=1, max_size=3))
    expr = draw(st.sampled_from(ATOMS))
    for _ in range(draw(st.one_of(st.integers(0, 30), st.integers(80, 300)))):  # shallow, or near the limit
        for wrap in pattern:
            expr = wrap.format(expr)
    return f"x = {expr}\n"


@st.composite
def wide_code(draw) -> str:
    """A flat list, tuple, call, chain or block of many items (few levels, many nodes per level)."""
    items = draw(st.lists(st.sampled_from(ATOMS), min_size=0, max_size=400))
    form = draw(st.sampled_from(["[{}]", "({},)", "f({})", "chain", "lines"]))
    if form == "chain":
        return "x = " + " + ".join(items or ["1"]) + "\n"
    if form == "lines":
        return "".join(f"v{i} = {a}\n" for i, a in enumerate(items)) or "pass\n"
    return "x = " + form.format(", ".join(items)) + "\n"


CODE = st.one_of(deep_code(), wide_code(), st.tuples(deep_code(), wide_code()).map("".join))
FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])


def _bound_spans(al, start: np.ndarray, end: np.ndarray) -> list[tuple[int, int, int]]:
    """Every (node, token start, token end) the alignment binds, sorted: tokens with equal spans are
    interchangeable (which of two equal ones a zero-width node takes depends on their order)."""
    return sorted((node, int(start[t]), int(end[t])) for node in range(al.n_nodes) for t in al.tokens_of(node))


@FAST
@given(source=CODE)
@example(source="x = " + "(" * (MAX_AST_DEPTH - 3) + "1" + ")" * (MAX_AST_DEPTH - 3) + "\n")  # the deepest accepted
@example(source="x = " + "(" * (MAX_AST_DEPTH - 2) + "1" + ")" * (MAX_AST_DEPTH - 2) + "\n")  # one level more
def test_explaining_a_deep_or_wide_tree_agrees_with_the_definition_or_is_refused(tiny, source):
    try:
        ex = explain(tiny, source)
    except TooDeepError as err:
        assert _tree_depth(source) > MAX_AST_DEPTH
        assert f"at most {MAX_AST_DEPTH} levels" in str(err) and "\n" not in str(err)
        return
    tree, al, s = ex.tree, ex.alignment, ex.scores
    assert tree.n_levels - 1 == _tree_depth(source) <= MAX_AST_DEPTH
    assert len(al.order) <= s.n_tokens  # stored once per token, however deep
    cs, ce = _core_spans(source, s.start, s.end)
    usable = ~s.special & (ce > cs)
    for node in range(tree.n_nodes):
        a, b = tree.start[node], tree.end[node]
        # the paper's binding: every usable token whose text (surrounding whitespace aside) overlaps the node
        want = np.flatnonzero(usable & (cs < b) & (ce > a)) if b > a else np.zeros(0, np.int64)
        assert al.tokens_of(node).tolist() == want.tolist()
        probs = s.prob[want]
        probs = probs[~np.isnan(probs)]
        assert ex.values[node] == pytest.approx(float(np.median(probs)) if len(probs) else math.nan, nan_ok=True)
    payload = ex.to_dict()
    assert len(payload["bindings"]) < 2 * s.n_tokens, "the JSON grows with tokens + nodes, not tokens x depth"
    assert [payload["bindings"][slice(*n["token_slice"])] for n in payload["nodes"]] == [
        al.tokens_of(i).tolist() for i in range(tree.n_nodes)]
    for view in ("partial", "complete"):  # the inspector's figures: no recursion, every node drawn once
        fig = tree_figure(ex, view, collapse_unary=True)
        drawn = [int(n) for t in fig.data if t.name in ("value", "no tokens") and t.customdata is not None
                 for n in t.customdata]
        assert len(drawn) == len(set(drawn)) == tree_layout(tree, view, None, True).n_boxes


def _core_spans(source: str, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token spans without their surrounding whitespace (whitespace-only tokens keep theirs)."""
    cs, ce = start.copy(), end.copy()
    for i, (a, b) in enumerate(zip(start.tolist(), end.tolist())):
        text = source[a:b]
        if text.strip():
            cs[i] = a + len(text) - len(text.lstrip())
            ce[i] = b - (len(text) - len(text.rstrip()))
    return cs, ce


@st.composite
def tokenized(draw) -> tuple[str, np.ndarray, np.ndarray]:
    """Code and a tokenization: a cut every 1 to 8 characters plus random ones (so whitespace-only pieces and
    pieces spanning several leaves), about one piece in ten split again into two tokens with the same span
    (as a byte-level tokenizer splits a multi-byte character)."""
    source = draw(st.one_of(deep_code(), wide_code()))
    n = len(source)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    step = draw(st.integers(1, 8))
    cuts = np.unique(np.concatenate([np.arange(0, n, step), rng.integers(0, n, size=n // 4 + 1), [n]]))
    start, end = cuts[:-1].astype(np.int64), cuts[1:].astype(np.int64)
    repeat = 1 + (rng.random(len(start)) < 0.1)
    return source, np.repeat(start, repeat), np.repeat(end, repeat)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tokenized(), options=st.builds(AlignOptions, whitespace=st.sampled_from(["enclosing", "skip"]),
                                           multi_leaf=st.sampled_from(["all", "first"]),
                                           zero_width=st.sampled_from(["none", "next_token"])))
def test_the_range_alignment_equals_the_pairwise_test(case, options):
    """The binding of monotone tokens (ranges, linear) equals the pairwise overlap test that non-monotone tokens
    take (the old definition, blockwise), under every option, on deep and wide trees."""
    source, start, end = case
    try:
        tree = parse(source)
    except TooDeepError:
        assert _tree_depth(source) > MAX_AST_DEPTH
        return
    ranges = align(tree, start, end, options=options)
    reverse = np.arange(len(start))[::-1].copy()  # reversed order: non-monotone spans, the pairwise path
    pairwise = align(tree, start[reverse], end[reverse], options=options)
    assert _bound_spans(pairwise, start[reverse], end[reverse]) == _bound_spans(ranges, start, end)
    assert len(ranges.order) <= len(start) + int((tree.end == tree.start).sum())


def test_token_spans_out_of_order_that_each_cover_the_text_are_refused_before_listing_pairs():
    """Non-monotone token spans take the pairwise path, which lists every (node, token) binding; it tested every
    node x token cell (89k nodes x 60k tokens: 5e9 tests) and, given spans that each cover most of the text,
    listed nodes x tokens bindings. It now sorts (tokens + nodes) and refuses more bindings than tokens lying
    in one leaf each can make, before listing one."""
    source = "a = 1\n" * 2_000  # 8,001 nodes
    tree = parse(source)
    n = 3_000
    start = np.arange(n, dtype=np.int64)[::-1] % 4  # out of order, each token nearly the whole text
    end = np.full(n, len(source) - 1, dtype=np.int64)
    with pytest.raises(InputError, match="neither in order nor token-sized"):
        align(tree, start, end)
    ordinary = np.arange(len(source), dtype=np.int64)[::-1].copy()  # out of order, one character each: bound
    al = align(tree, ordinary, ordinary + 1)
    assert int(al.counts()[0]) == len(source) and len(al.order) <= len(source) * (MAX_AST_DEPTH + 1)
