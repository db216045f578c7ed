"""McCabe cyclomatic complexity from the tree-sitter tree, counted the way lizard counts it.

AsC-Causal controls for the cyclomatic complexity of each snippet, as the paper's authors did with
lizard. Running lizard on every snippet at analysis time cost about 0.55 ms a snippet (55 s for
100,000 snippets on the 2-core reference machine); this module gives the same number from the
tree-sitter parse the app already makes, about 10 times faster from source text and cheaper still
from a tree that is already parsed.

What lizard 1.24 counts (read from ``lizard_languages/``, checked by ``tests/asc/test_complexity.py``
against lizard itself on every HumanEval function and on stdlib and algorithms functions):

* **The function**: the first function in lizard's ``function_list``, i.e. the first function to
  *end*, not the first to start: a function with a nested function reports the nested one, as
  lizard does. NaN when lizard finds no function (a one-line ``def f(): return 1`` has no indented
  body, so lizard never closes it and lists nothing).
* **Python**: 1 + one per token ``if``, ``elif``, ``for``, ``while``, ``except``, ``finally``,
  ``and``, ``or`` and the soft keyword ``case``, wherever it occurs outside strings and comments:
  conditional expressions, comprehension ``for``/``if``, f-string interpolations and default
  values of the signature included; ``else``, ``with``, ``assert``, ``lambda`` and ``match`` add
  nothing. Lizard finds function bodies by *indentation of physical lines*, not by the grammar,
  and this module replays that walk exactly on the tree's tokens: a function starts at its name
  (conditions of its decorators belong to the enclosing function), its body is pushed at the first
  deeper line and ends at the first line indented less, *including continuation lines inside
  brackets* (a call argument written at column 0 ends the function for lizard, which then loses
  the rest of its body) except lines starting with ``)``; backslash continuations and the lines of
  multi-line strings are not line starts; a tab counts as 8 spaces. A one-line nested ``def``
  never gets a body, so lizard keeps counting the enclosing function's later conditions for it and
  reports it when the enclosing one ends: replayed too.
* **Java**: 1 + one per ``if``, ``for``, ``while`` (do-while too), ``catch``, ``&&``, ``||``,
  ``case`` and ``?`` in the method's body (lizard resets the count to 1 at the body's ``{``, so
  annotations and parameters add nothing); a ``?`` that lizard's tokenizer swallows into a
  generic-looking token (``<? extends T>``, ``<?>``; and ``a < b ? x > y``) adds nothing, checked
  with lizard's own pattern. Functions are methods and constructors with a body, including those
  of anonymous and local classes (the one that ends first wins, as in lizard); lambdas are not.

Known differences (documented and tested, none seen in the corpora above):

* Java: an anonymous or local class *without methods* but with field declarations inside the
  method makes lizard mistake the field's identifiers for function names; it then reports a
  phantom function whose count starts at that field. Here the method is counted whole.
* Python: tokens inside a multi-line f-string interpolation (Python 3.12 syntax) are never line
  starts here; lizard's re-tokenization may treat them as such. Lizard's own tokenizer errors on
  nested same-quote f-strings (3.12) are not replayed.
* A snippet that does not parse follows tree-sitter's error recovery, not lizard's token stream.
"""

from __future__ import annotations

import math
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from asc.errors import InputError
from asc.syntax import LANGUAGES, SyntaxTree, encode_source, get_parser

if TYPE_CHECKING:
    import tree_sitter as ts

__all__ = ["CONDITIONS", "complexity_of_tree", "complexity_of_source", "complexity_column"]

#: Tokens that add one to the complexity (lizard's condition sets for each language).
CONDITIONS: dict[str, frozenset[str]] = {
    "python": frozenset({"if", "elif", "for", "while", "except", "finally", "and", "or", "case"}),
    "java": frozenset({"if", "for", "while", "catch", "&&", "||", "case", "?"}),
}
_JAVA_FUNCTIONS = {"method_declaration": "block", "constructor_declaration": "constructor_body"}
# lizard's tokenizer: a '<' starting this pattern is one token (a generic), '?' inside included
_LIZARD_GENERIC = re.compile(rb"<(?=(?:[^<>?]*\?)+[^<>]*>)(?:[\w\s,.?]|(?:extends))+>")
_SPACE = frozenset(b" \t\r\x0b\x0c")  # lizard's [^\S\n] for ASCII text
_TAB, _NEWLINE, _HASH, _BACKSLASH, _CLOSE, _QUESTION = map(ord, "\t\n#\\)?")
_GLOBAL = -1
_LINE, _COND, _NAME, _SIGNATURE_END = range(4)  # events at one position run in this order, as in lizard


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise InputError(f"unknown language {language!r}; choose one of: {', '.join(LANGUAGES)}")


# ---------------------------------------------------------------------------------------------------------------
# Python: lizard's indentation walk, replayed on line starts, condition tokens and function names


def _merged(spans: Iterable[tuple[int, int]]) -> tuple[list[int], list[int]]:
    starts: list[int] = []
    ends: list[int] = []
    for s, e in sorted(spans):
        if ends and s < ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def _line_starts(data: bytes, strings: Iterable[tuple[int, int]],
                 comments: dict[int, int]) -> list[tuple[int, int, int, int]]:
    """(position, _LINE, indentation, flags) for every token lizard sees first on a line; flags: 1 when the
    token is ``)``, 2 when the token before it (comments left out) ends with ``)``."""
    s_starts, s_ends = _merged(strings)
    out = []
    n = len(data)
    p = -1  # the start of the text behaves as a newline
    while True:
        if p >= 0:
            k = bisect_right(s_starts, p) - 1
            inside_string = k >= 0 and p < s_ends[k]
            continued = p > 0 and data[p - 1] == _BACKSLASH and p not in comments  # "\\\n" is no newline
            if inside_string or continued:
                p = data.find(b"\n", p + 1)
                if p < 0:
                    break
                continue
        q, indent = p + 1, 0
        while q < n and data[q] in _SPACE:
            indent += 8 if data[q] == _TAB else 1
            q += 1
        if q < n and data[q] != _NEWLINE and data[q] != _HASH:
            j = p
            while j >= 0 and (data[j] in _SPACE or data[j] == _NEWLINE or j + 1 in comments):
                j = comments[j + 1] - 1 if j + 1 in comments else j - 1
            out.append((q, _LINE, indent, int(data[q] == _CLOSE) | (2 if j >= 0 and data[j] == _CLOSE else 0)))
        p = data.find(b"\n", p + 1)
        if p < 0:
            break
    return out


def _python_walk(data: bytes, conditions: Iterable[int], functions: Sequence[tuple[int, int]],
                 strings: Iterable[tuple[int, int]], comments: dict[int, int]) -> float:
    """Replay lizard's Python reader; ``functions`` are (name start, parameters' ')' start) in source order."""
    events: list[tuple[int, int, int, int]] = _line_starts(data, strings, comments)
    events += [(p, _COND, 0, 0) for p in conditions]
    for f, (name, close) in enumerate(functions):
        events.append((name, _NAME, f, 0))
        events.append((close, _SIGNATURE_END, f, 0))
    events.sort()
    ccn = [1] * len(functions)
    closed = [False] * len(functions)
    indents = [0]
    stack: list[int | None] = []  # nestings: a function, or None for a bare block
    pending: int | None = None
    current = _GLOBAL

    def pop() -> int | None:  # FileInfoBuilder.pop_nesting: the function that ends, if one does
        nonlocal pending, current
        pending = None
        if stack and stack.pop() is not None:
            ended = current  # lizard ends its *current* function, which is not always the popped one
            current = next((x for x in reversed(stack) if x is not None), _GLOBAL)
            return ended
        return None

    def set_nesting(spaces: int, closing: bool) -> int | None:
        nonlocal pending
        while indents[-1] > spaces and not closing:
            indents.pop()
            ended = pop()
            if ended is not None and ended != _GLOBAL:
                return ended
        if indents[-1] < spaces:
            indents.append(spaces)
            stack.append(pending)
            pending = None
        return None

    for _, kind, a, b in events:
        if kind == _LINE:
            # lizard adjusts nesting only when its current function's long name ends with ')': at the global
            # level, after the parameters, or inside them right after a ')' (then it closes a function early)
            if current == _GLOBAL or closed[current] or b & 2:
                ended = set_nesting(a, bool(b & 1))
                if ended is not None:
                    return float(ccn[ended])
        elif kind == _COND:
            if current != _GLOBAL:
                ccn[current] += 1
        elif kind == _NAME:
            current = pending = a
        else:
            closed[a] = True
    ended = set_nesting(0, False)  # end of text: every nesting closes
    return float(ccn[ended]) if ended is not None else math.nan


# ---------------------------------------------------------------------------------------------------------------
# Java: the method (or constructor) that ends first, conditions in its body


def _java_count(data: bytes, conditions: Iterable[int], bodies: Sequence[tuple[int, int]]) -> float:
    if not bodies:
        return math.nan
    start, end = min(bodies, key=lambda b: (b[1], b[0]))
    n = 1
    for p in conditions:
        if start <= p < end:
            if data[p] == _QUESTION:
                lt = data.rfind(b"<", start, p)
                m = _LIZARD_GENERIC.match(data, lt) if lt >= 0 else None
                if m is not None and m.end() > p:
                    continue  # inside one of lizard's generic tokens
            n += 1
    return float(n)


# ---------------------------------------------------------------------------------------------------------------
# public functions


def complexity_of_tree(tree: SyntaxTree) -> float:
    """Lizard's cyclomatic complexity of the snippet's first function, from a tree of :func:`asc.syntax.parse`.

    NaN when lizard would find no function. The same number as :func:`complexity_of_source` on the
    tree's source (module docstring: what counts, and the known differences from lizard)."""
    _check_language(tree.language)
    data = tree.source.encode("utf-8")
    conds = CONDITIONS[tree.language]
    types, named = tree.type, tree.named
    starts, ends, parent = tree.start_byte, tree.end_byte, tree.parent
    positions = [int(starts[i]) for i, t in enumerate(types) if t in conds and not named[i]]

    def children(i: int) -> list[int]:
        return [int(c) for c in np.flatnonzero(parent == i)]

    if tree.language == "java":
        bodies = []
        for i, t in enumerate(types):
            if t in _JAVA_FUNCTIONS:
                body = [c for c in children(i) if types[c] == _JAVA_FUNCTIONS[t]]
                if body:
                    bodies.append((int(starts[body[0]]), int(ends[body[0]])))
        return _java_count(data, positions, bodies)
    functions = []
    for i, t in enumerate(types):
        if t == "function_definition":
            kids = children(i)
            name = next((c for c in kids if types[c] == "identifier"), None)
            params = next((c for c in kids if types[c] == "parameters"), None)
            if name is not None and params is not None:
                functions.append((int(starts[name]), int(ends[params]) - 1))
    strings = [(int(starts[i]), int(ends[i])) for i, t in enumerate(types) if t == "string"]
    comments = {int(ends[i]): int(starts[i]) for i, t in enumerate(types) if t == "comment"}
    return _python_walk(data, positions, functions, strings, comments)


_QUERIES = {
    "python": """
        ["if" "elif" "for" "while" "except" "finally" "and" "or" "case"] @cond
        (function_definition name: (identifier) @name parameters: (parameters) @params)
        (string) @string
        (comment) @comment
    """,
    "java": """
        ["if" "for" "while" "catch" "&&" "||" "case" "?"] @cond
        (method_declaration body: (block) @body)
        (constructor_declaration body: (constructor_body) @body)
    """,
}
_local = threading.local()  # tree-sitter parsers are not thread-safe: one per thread and language


def _tools(language: str) -> tuple[ts.Parser, ts.QueryCursor]:
    tools = getattr(_local, "tools", None)
    if tools is None:
        tools = _local.tools = {}
    if language not in tools:
        import tree_sitter as ts

        parser = get_parser(language)
        assert parser.language is not None
        tools[language] = (parser, ts.QueryCursor(ts.Query(parser.language, _QUERIES[language])))
    return tools[language]


def complexity_of_source(source: str, language: str = "python") -> float:
    """Lizard's cyclomatic complexity of the first function in ``source`` (NaN when there is none).

    Parses with tree-sitter and queries only the tokens that matter, without building the full node
    table: about 10 times faster than lizard."""
    _check_language(language)
    data = encode_source(source)
    parser, cursor = _tools(language)
    caps = cursor.captures(parser.parse(data).root_node)
    conds = [n.start_byte for n in caps.get("cond", ())]
    if language == "java":
        return _java_count(data, conds, [(n.start_byte, n.end_byte) for n in caps.get("body", ())])
    names = sorted(n.start_byte for n in caps.get("name", ()))
    closes = sorted(n.end_byte - 1 for n in caps.get("params", ()))
    strings = [(n.start_byte, n.end_byte) for n in caps.get("string", ())]
    comments = {n.end_byte: n.start_byte for n in caps.get("comment", ())}
    return _python_walk(data, conds, list(zip(names, closes)), strings, comments)


def complexity_column(sources: Sequence[str], languages: Sequence[str] | str = "python") -> np.ndarray:
    """float (N,): :func:`complexity_of_source` of each snippet, each distinct (source, language) computed once."""
    langs = [languages] * len(sources) if isinstance(languages, str) else list(languages)
    if len(langs) != len(sources):
        raise InputError(f"{len(sources)} sources but {len(langs)} languages: give one language per source")
    seen: dict[tuple[str, str], float] = {}
    out = np.empty(len(sources), dtype=float)
    for k, key in enumerate(zip(sources, langs)):
        value = seen.get(key)
        if value is None:
            value = seen[key] = complexity_of_source(*key)
        out[k] = value
    return out
