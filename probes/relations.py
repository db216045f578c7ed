"""CodeSyntax-style syntactic relations for Python: word tokens plus labelled (head, dependent) edges.

CodeSyntax (Shen et al., EMNLP 2022; ``papers/codesyntax-attention-syntax.txt``; reference.md 5) asks
whether an attention head links the tokens of a syntactic relation. A sample is one snippet, its
*word tokens* and, per relation type, a list of edges ``(head, dep_first, dep_last)``: word-token
indices with ``head < dep_first <= dep_last`` (forward only). The rules below re-implement, in our
own code, what the authors' label generator does (``generating_CodeSyntax/generate_labels_python.py``
in ``dashends/CodeSyntax``, read through the code index), and we write their JSON layout.

Word tokens
-----------
``tokenize.generate_tokens(io.StringIO(code).readline)``: the code is tokenized exactly as given,
so a token's text is ``token.string`` and ``code[start:end] == token`` holds for *every* token,
structural ones included. NEWLINE is ``"\\n"`` (``"\\r\\n"`` for CRLF code, ``""`` at the end of code
without a final newline), INDENT is its whitespace (``"    "``), DEDENT is ``""`` (zero width, at the
start of the next statement): the strings the authors stored. We drop ENCODING, ENDMARKER, NL
(blank lines, line breaks inside brackets) and COMMENT; the authors kept NL, COMMENT and ENDMARKER,
so indices in our files differ from theirs on code with comments or blank lines. Spans are absolute
*character* offsets. ``ast`` columns are UTF-8 *byte* offsets; they are mapped to characters with
:func:`asc.syntax.byte_to_char`. ``ast`` and ``tokenize`` both count lines at ``"\\n"`` (a CRLF line
ends with ``"\\r"`` + ``"\\n"``), so CRLF code needs no conversion; a lone ``"\\r"`` (old Mac line end)
is a line break for ``ast`` but not for ``tokenize`` and is refused. On Python 3.12+ an f-string
(``FSTRING_START ... FSTRING_END``) is merged back into one STRING token, as Python <= 3.11 (and the
authors) tokenized it; relations inside an f-string then collapse onto one token and are dropped.

Node -> tokens (the authors' ``get_idx``)
----------------------------------------
*first token* of a node: the first token ending after the node's start (INDENT/DEDENT before it are
skipped), then opening brackets are stepped over while the next token is not a closing bracket (the
first token of ``[a, b]`` or ``(a, b)`` is ``a``; of ``{}`` it is ``{``). *last token*: the last
token starting before the node's end (never the NEWLINE after a statement), then closing brackets
are stepped back over (the last token of ``f(x)`` is ``x``, of ``f()`` it is ``(``). A list-valued
field (``body``, ``orelse``, ``handlers``, ``args``, ``keywords``, ``comparators``) gives ONE edge
whose dependent runs from the first token of its first element to the last token of its last
element. An edge is kept only if ``head < dep_first <= dep_last``; every other edge is dropped.

Relations (head -> dependent; "first(x)" is x's first token, "span(x)" its first..last tokens)
----------------------------------------------------------------------------------------------
- ``If``: if->else: the ``if`` keyword -> the ``else`` (or ``elif``) keyword between the body and the
  orelse; if->test, if->body; test->body, test->orelse, body->orelse with head first(test) or
  first(body[0]). ``elif`` is an ``If`` nested in ``orelse`` whose first token is the ``elif`` keyword:
  the outer if's orelse span starts at ``elif``, the outer if->else points at ``elif``, and the
  inner ``If`` gets its own edges with the ``elif`` token as its "if" head.
- ``Call``: the head is the LAST token of ``func`` (``findall`` in ``re.findall(p, t)``), as the
  authors did; func->args (all positional/starred args), func->keywords (all keywords),
  args->keywords with head the LAST token of ``args[0]``.
- ``Assign``: first(targets[0]) -> span(value). ``AugAssign``: target -> value. (AnnAssign: none.)
- ``While``: while->test, while->body, test->body. ``For``: for->body, for->target, for->iter,
  target->iter, target->body, iter->body (``orelse`` of loops carries no relation; ``async for`` and
  ``async with`` carry none either, as in the authors' code).
- ``BinOp``: left -> right. ``BoolOp``: values[0] -> values[1] only (``a or b or c``: one edge
  ``a -> b``). ``Compare``: left -> comparators[0]..comparators[-1].
- ``Try``: body->handler (first(body[0]) -> all handlers, each starting at ``except``),
  handler->orelse, handler->finalbody (head first(handlers[0]) = ``except``), body->orelse,
  body->finalbody. ``TryStar`` (``except*``, 3.11+) is labelled as ``Try``.
- ``IfExp`` (``b if t else o``): body->test, test->orelse, body->orelse.
- ``Attribute``: first(value) -> the attribute name (the node's last token, a one-token dependent).
- ``Dict``: one edge per ``key: value`` pair (``**d`` has no key and gives none).
- ``Subscript``: value -> slice. ``Slice``: lower -> upper (only when both are present).
- ``With``: first(items[0].context_expr) -> span(body).
- ``ListComp``/``SetComp``/``GeneratorExp``: elt -> first(generators[0].target)..last(generators[-1]
  .iter) (trailing ``if`` clauses are outside the span); ``DictComp``: key->value, key->generator,
  value->generator. ``comprehension``: target -> iter.
- ``children:parent->child``: first(parent) -> span(child) for every parent/child pair of the AST
  walk where both nodes carry a position (``lineno``): no edge through ``Module``, ``arguments``,
  ``comprehension``, ``withitem``, operators or contexts, and none from or to a ``FunctionDef``/
  ``AsyncFunctionDef``. A function definition contributes only its body: its decorators, default
  values and annotations are not visited at all (the authors' samples were whole functions).

Edges are listed in the authors' order: a pre-order walk, each node's own relations first, then for
each child its children edge followed by the child's subtree. Duplicates are kept, as they were.

Deviations from the authors' generator (all deliberate): NL/COMMENT/ENDMARKER tokens are dropped
(see above); byte columns are converted to characters (they sliced ``str`` with byte offsets, wrong
on non-ASCII lines); node ends come from ``end_lineno``/``end_col_offset`` instead of re-tokenizing
``ast.get_source_segment`` (which stopped early on multi-line expressions and at the end of code
without a final newline); a head may be token 0 (they required ``head > 0``, which never mattered for
snippets starting with ``def``); ``Try:handler->orelse`` spans the whole ``else`` block (they ended
it at ``orelse[0]`` while ``Try:body->orelse`` used ``orelse[-1]``); ``TryStar`` is labelled.

JSON layout
-----------
Theirs: a JSON list of ``{"tokens": [...], "id": i, "code": "...", "relns": {name: [[h, s, e], ...]}}``
with only non-empty relations present. :func:`write_json` writes the same keys plus ``"spans"``;
:func:`read_json` accepts files without ``"spans"`` (it locates each token in the code, in order) and
with relation names outside :data:`RELATIONS` (kept as they are).
"""

from __future__ import annotations

import ast
import bisect
import io
import json
import logging
import os
import re
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asc.errors import InputError
from asc.syntax import byte_to_char

__all__ = [
    "RELATIONS",
    "CodeParseError",
    "Sample",
    "extract",
    "extract_many",
    "read_json",
    "word_tokens",
    "write_json",
]

logger = logging.getLogger(__name__)

#: The Python relation types of CodeSyntax (reference.md 5), in that order.
RELATIONS: tuple[str, ...] = (
    "If:if->else", "If:if->test", "If:if->body", "If:test->body", "If:test->orelse", "If:body->orelse",
    "Call:func->args", "Call:args->keywords", "Call:func->keywords", "Assign:target->value",
    "AugAssign:target->value", "While:while->test", "While:while->body", "While:test->body",
    "For:for->body", "For:for->target", "For:for->iter", "For:target->iter", "For:target->body",
    "For:iter->body", "BinOp:left->right", "BoolOp:value->value", "Compare:left->comparator",
    "Try:body->handler", "Try:handler->orelse", "Try:handler->finalbody", "Try:body->orelse",
    "Try:body->finalbody", "IfExp:body->test", "IfExp:test->orelse", "IfExp:body->orelse",
    "Attribute:value->attr", "Dict:key->value", "Subscript:value->slice", "Slice:lower->upper",
    "With:item->body", "ListComp:elt->generator", "SetComp:elt->generator", "GeneratorExp:elt->generator",
    "DictComp:key->value", "DictComp:key->generator", "DictComp:value->generator",
    "comprehension:target->iter", "children:parent->child",
)  # fmt: skip

Edge = tuple[int, int, int]

_DROPPED = {tokenize.ENCODING, tokenize.ENDMARKER, tokenize.NL, tokenize.COMMENT}
# f-strings (3.12+) and t-strings (3.14+) are split into parts by tokenize; merged back into one token
_STRING_STARTS = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_STRING_ENDS = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LONE_CR = re.compile(r"\r(?!\n)")


class CodeParseError(InputError):
    """The code does not parse (or tokenize) as Python; ``__cause__`` is the original error."""


def _line_starts(code: str) -> list[int]:
    """Character offset where each line starts (lines end at "\\n", as ``tokenize`` and ``ast`` count)."""
    starts = [0]
    i = code.find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = code.find("\n", i + 1)
    return starts


def _check_code(code: str) -> None:
    if not isinstance(code, str):
        raise TypeError(f"code must be str, not {type(code).__name__}")
    m = _LONE_CR.search(code)
    if m:
        line = code.count("\n", 0, m.start()) + 1
        raise CodeParseError(f"line {line}: lone carriage return (old Mac line end); convert line endings to \\n first")


def _raw_tokens(code: str) -> list[tuple[int, str, int, int]]:
    """(type, text, start, end) for every kept token, spans in characters."""
    _check_code(code)
    starts = _line_starts(code)
    out: list[tuple[int, str, int, int]] = []
    depth = 0  # f-string nesting
    fs_start = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            s = starts[tok.start[0] - 1] + tok.start[1] if tok.start[0] <= len(starts) else len(code)
            if tok.type in _STRING_STARTS:
                if depth == 0:
                    fs_start = s
                depth += 1
                continue
            if tok.type in _STRING_ENDS:
                depth -= 1
                if depth == 0:
                    e = s + len(tok.string)
                    out.append((tokenize.STRING, code[fs_start:e], fs_start, e))
                continue
            if depth or tok.type in _DROPPED:
                continue
            e = s + len(tok.string)  # the text of a token is code[s:e], even across lines
            out.append((tok.type, tok.string, s, e))
    except (tokenize.TokenError, SyntaxError) as exc:
        raise CodeParseError(f"cannot tokenize the code: {exc}") from exc
    return out


def word_tokens(code: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    """CodeSyntax word tokens of ``code`` and their character spans (``code[s:e] == token``)."""
    raw = _raw_tokens(code)
    return tuple(t[1] for t in raw), tuple((t[2], t[3]) for t in raw)


class _Labeller:
    """Walks one parsed snippet and collects edges (the rules of the module docstring)."""

    def __init__(self, code: str, tokens: Sequence[str], spans: Sequence[tuple[int, int]]):
        self.tokens = tokens
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]
        data = code.encode("utf-8")
        self.b2c = byte_to_char(code).tolist()
        self.line_bytes = [0] + [m.end() for m in re.finditer(b"\n", data)]
        self.result: dict[str, list[Edge]] = {name: [] for name in RELATIONS}

    def _char(self, lineno: int, col: int) -> int:
        return self.b2c[self.line_bytes[lineno - 1] + col]

    def first(self, node: ast.AST) -> int:
        i = bisect.bisect_right(self.ends, self._char(node.lineno, node.col_offset))
        toks = self.tokens
        while i + 1 < len(toks) and toks[i] in _OPEN and toks[i + 1] not in _CLOSE:
            i += 1
        return i

    def last(self, node: ast.AST) -> int:
        j = bisect.bisect_left(self.starts, self._char(node.end_lineno, node.end_col_offset)) - 1
        while j > 0 and self.tokens[j] in _CLOSE:
            j -= 1
        return j

    def add(self, name: str, head: int, dep_first: int, dep_last: int) -> None:
        if 0 <= head < dep_first <= dep_last:
            self.result[name].append((head, dep_first, dep_last))

    def span(self, name: str, head: int, first_node: ast.AST | None, last_node: ast.AST | None = None) -> None:
        """Edge from token ``head`` to the tokens of ``first_node`` .. ``last_node`` (default: the same)."""
        if first_node is None:
            return
        self.add(name, head, self.first(first_node), self.last(first_node if last_node is None else last_node))

    def walk(self, root: ast.AST) -> dict[str, list[Edge]]:
        stack: list[tuple[ast.AST | None, ast.AST]] = [(None, root)]
        while stack:
            parent, node = stack.pop()
            if parent is not None:
                self.child(parent, node)
            self.rules(node)
            if isinstance(node, _FUNCTIONS):  # only the body, and no children edge (the authors' rule)
                kids: list[tuple[ast.AST | None, ast.AST]] = [(None, stmt) for stmt in node.body]
            else:
                kids = []
                for _, value in ast.iter_fields(node):
                    items = value if isinstance(value, list) else [value]
                    kids.extend((node, item) for item in items if isinstance(item, ast.AST))
            stack.extend(reversed(kids))
        return self.result

    def child(self, parent: ast.AST, child: ast.AST) -> None:
        if (
            hasattr(parent, "lineno")
            and hasattr(child, "lineno")
            and not isinstance(parent, _FUNCTIONS)
            and not isinstance(child, _FUNCTIONS)
        ):
            self.span("children:parent->child", self.first(parent), child)

    def rules(self, node: ast.AST) -> None:
        f = self.first
        if isinstance(node, ast.If):
            head = f(node)
            if node.orelse:  # the else/elif keyword lies between the body and the orelse
                for i in range(self.last(node.body[-1]) + 1, f(node.orelse[0]) + 1):
                    if self.tokens[i] in ("else", "elif"):
                        self.add("If:if->else", head, i, i)
                        break
            self.span("If:if->test", head, node.test)
            self.span("If:if->body", head, node.body[0], node.body[-1])
            self.span("If:test->body", f(node.test), node.body[0], node.body[-1])
            if node.orelse:
                self.span("If:test->orelse", f(node.test), node.orelse[0], node.orelse[-1])
                self.span("If:body->orelse", f(node.body[0]), node.orelse[0], node.orelse[-1])
        elif isinstance(node, ast.Call):
            if node.args:
                self.span("Call:func->args", self.last(node.func), node.args[0], node.args[-1])
                if node.keywords:
                    self.span("Call:args->keywords", self.last(node.args[0]), node.keywords[0], node.keywords[-1])
            if node.keywords:
                self.span("Call:func->keywords", self.last(node.func), node.keywords[0], node.keywords[-1])
        elif isinstance(node, ast.Assign):
            self.span("Assign:target->value", f(node.targets[0]), node.value)
        elif isinstance(node, ast.While):
            self.span("While:while->test", f(node), node.test)
            self.span("While:while->body", f(node), node.body[0], node.body[-1])
            self.span("While:test->body", f(node.test), node.body[0], node.body[-1])
        elif isinstance(node, ast.For):
            head, target, it = f(node), f(node.target), f(node.iter)
            self.span("For:for->body", head, node.body[0], node.body[-1])
            self.span("For:for->target", head, node.target)
            self.span("For:for->iter", head, node.iter)
            self.span("For:target->iter", target, node.iter)
            self.span("For:target->body", target, node.body[0], node.body[-1])
            self.span("For:iter->body", it, node.body[0], node.body[-1])
        elif isinstance(node, ast.BinOp):
            self.span("BinOp:left->right", f(node.left), node.right)
        elif isinstance(node, ast.BoolOp):
            if len(node.values) >= 2:
                self.span("BoolOp:value->value", f(node.values[0]), node.values[1])
        elif isinstance(node, ast.Compare):
            self.span("Compare:left->comparator", f(node.left), node.comparators[0], node.comparators[-1])
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            body = f(node.body[0])
            if node.handlers:
                handler = f(node.handlers[0])
                self.span("Try:body->handler", body, node.handlers[0], node.handlers[-1])
                if node.orelse:
                    self.span("Try:handler->orelse", handler, node.orelse[0], node.orelse[-1])
                if node.finalbody:
                    self.span("Try:handler->finalbody", handler, node.finalbody[0], node.finalbody[-1])
            if node.orelse:
                self.span("Try:body->orelse", body, node.orelse[0], node.orelse[-1])
            if node.finalbody:
                self.span("Try:body->finalbody", body, node.finalbody[0], node.finalbody[-1])
        elif isinstance(node, ast.IfExp):
            self.span("IfExp:body->test", f(node.body), node.test)
            self.span("IfExp:test->orelse", f(node.test), node.orelse)
            self.span("IfExp:body->orelse", f(node.body), node.orelse)
        elif isinstance(node, ast.Attribute):
            attr = self.last(node)
            self.add("Attribute:value->attr", f(node.value), attr, attr)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is not None:
                    self.span("Dict:key->value", f(key), value)
        elif isinstance(node, ast.Subscript):
            self.span("Subscript:value->slice", f(node.value), node.slice)
        elif isinstance(node, ast.Slice):
            if node.lower is not None:
                self.span("Slice:lower->upper", f(node.lower), node.upper)
        elif isinstance(node, ast.AugAssign):
            self.span("AugAssign:target->value", f(node.target), node.value)
        elif isinstance(node, ast.With):
            self.span("With:item->body", f(node.items[0].context_expr), node.body[0], node.body[-1])
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            name = f"{type(node).__name__}:elt->generator"
            self.span(name, f(node.elt), node.generators[0].target, node.generators[-1].iter)
        elif isinstance(node, ast.DictComp):
            gens = node.generators
            self.span("DictComp:key->value", f(node.key), node.value)
            self.span("DictComp:key->generator", f(node.key), gens[0].target, gens[-1].iter)
            self.span("DictComp:value->generator", f(node.value), gens[0].target, gens[-1].iter)
        elif isinstance(node, ast.comprehension):
            self.span("comprehension:target->iter", f(node.target), node.iter)


@dataclass(frozen=True)
class Sample:
    """One labelled snippet. ``relns`` has every name of :data:`RELATIONS` (empty tuple when none)."""

    code: str
    tokens: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    relns: dict[str, tuple[Edge, ...]]

    def to_json(self) -> dict[str, Any]:
        """The authors' layout (plus ``spans``); relations without edges are left out, as they did."""
        return {
            "code": self.code,
            "tokens": list(self.tokens),
            "spans": [list(s) for s in self.spans],
            "relns": {name: [list(e) for e in edges] for name, edges in self.relns.items() if edges},
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], *, index: int | None = None) -> Sample:
        """Read one dict of a CodeSyntax-layout file; ``spans`` is optional. Raises ValueError when invalid."""
        label = f"sample {index}" if index is not None else "sample"
        if isinstance(d, Mapping) and "id" in d:
            label += f" (id {d['id']!r})"

        def bad(field: str, why: str) -> ValueError:
            return ValueError(f"{label}: field {field!r}: {why}")

        if not isinstance(d, Mapping):
            raise ValueError(f"{label}: expected a JSON object, got {type(d).__name__}")
        code, tokens = d.get("code"), d.get("tokens")
        if not isinstance(code, str):
            raise bad("code", "missing or not a string")
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise bad("tokens", "missing or not a list of strings")
        n = len(tokens)
        if d.get("spans") is None:
            spans = _locate(code, tokens, label)
        else:
            raw = d["spans"]
            if not isinstance(raw, list) or len(raw) != n:
                raise bad("spans", f"expected a list of {n} [start, end] pairs")
            spans = []
            for i, sp in enumerate(raw):
                if not (_is_ints(sp, 2) and 0 <= sp[0] <= sp[1] <= len(code)):
                    raise bad(f"spans[{i}]", f"{sp!r} is not a [start, end] pair inside the code")
                if code[sp[0] : sp[1]] != tokens[i]:
                    raise bad(f"spans[{i}]", f"code[{sp[0]}:{sp[1]}] is not the token {tokens[i]!r}")
                spans.append((sp[0], sp[1]))
        relns_in = d.get("relns", {})
        if not isinstance(relns_in, Mapping):
            raise bad("relns", "not an object")
        relns: dict[str, tuple[Edge, ...]] = {name: () for name in RELATIONS}
        for name, edges in relns_in.items():
            if not isinstance(edges, list):
                raise bad(f"relns[{name!r}]", "not a list of [head, dep_first, dep_last]")
            checked = []
            for k, e in enumerate(edges):
                if not (_is_ints(e, 3) and 0 <= e[0] < e[1] <= e[2] < n):
                    raise bad(
                        f"relns[{name!r}][{k}]",
                        f"{e!r} is not [head, dep_first, dep_last] with "
                        f"0 <= head < dep_first <= dep_last < {n} (the number of tokens)",
                    )
                checked.append((e[0], e[1], e[2]))
            relns[name] = tuple(checked)
        return cls(code=code, tokens=tuple(tokens), spans=tuple(spans), relns=relns)


def _is_ints(x: Any, size: int) -> bool:
    return (
        isinstance(x, (list, tuple))
        and len(x) == size
        and all(isinstance(v, int) and not isinstance(v, bool) for v in x)
    )


_GAP = re.compile(r"(?:[ \t\f]|\\\r?\n)*")  # spaces and line continuations between tokens on a line
_GAP_COMMENTS = re.compile(r"(?:\s|\\\r?\n|#[^\r\n]*)*")  # ... plus line breaks and comments (dropped tokens)


def _locate(code: str, tokens: Sequence[str], label: str) -> list[tuple[int, int]]:
    """Spans for tokens read without them: each token is looked for in order after the previous one.

    A token is expected right after spaces (then after blank lines and comments, which our files
    drop); failing that, at its next occurrence. An empty token (DEDENT, ENDMARKER, NEWLINE at the
    end of the code) is placed where the next non-empty token starts, as ``tokenize`` places DEDENT.
    """
    spans: list[tuple[int, int]] = []
    pending = 0  # empty tokens waiting for the next token's start
    pos = 0
    for i, tok in enumerate(tokens):
        if not tok:
            pending += 1
            continue
        if tok.isspace() and "\n" not in tok and "\r" not in tok:  # INDENT: whitespace opening a line
            m = re.compile(r"(?m)^" + re.escape(tok) + r"(?=[^\s#])").search(code, pos)
            start = m.start() if m else code.find(tok, pos)
        else:
            start = -1
            for gap in (_GAP, _GAP_COMMENTS):
                p = gap.match(code, pos).end()
                if code.startswith(tok, p):
                    start = p
                    break
            if start < 0:
                start = code.find(tok, pos)
        if start < 0:
            raise ValueError(f"{label}: field 'tokens[{i}]': token {tok!r} not found in the code after offset {pos}")
        spans.extend([(start, start)] * pending)
        pending = 0
        pos = start + len(tok)
        spans.append((start, pos))
    spans.extend([(pos, pos)] * pending)
    return spans


def extract(code: str) -> Sample:
    """Word tokens and CodeSyntax edges of ``code``. Raises :class:`CodeParseError` (a ValueError)."""
    _check_code(code)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes (3.11)
        where = f"line {exc.lineno}: " if getattr(exc, "lineno", None) else ""
        msg = getattr(exc, "msg", None) or str(exc)
        raise CodeParseError(f"the code does not parse as Python: {where}{msg}") from exc
    tokens, spans = word_tokens(code)
    result = _Labeller(code, tokens, spans).walk(tree)
    return Sample(code=code, tokens=tokens, spans=spans, relns={k: tuple(v) for k, v in result.items()})


def extract_many(codes: Iterable[str], *, skip_errors: bool = True) -> list[Sample]:
    """:func:`extract` over ``codes``; snippets that do not parse are skipped (one warning) or raise."""
    samples: list[Sample] = []
    skipped: list[tuple[int, str]] = []
    total = 0
    for i, code in enumerate(codes):
        total += 1
        try:
            samples.append(extract(code))
        except CodeParseError as exc:
            if not skip_errors:
                raise CodeParseError(f"snippet {i}: {exc}") from exc
            skipped.append((i, str(exc)))
    if skipped:
        first_i, first_msg = skipped[0]
        logger.warning(
            "skipped %d of %d snippets that do not parse (first: snippet %d: %s)",
            len(skipped),
            total,
            first_i,
            first_msg,
        )
    return samples


def write_json(samples: Iterable[Sample], path: str | os.PathLike[str]) -> None:
    """A JSON list of :meth:`Sample.to_json` dicts with an ``id`` (their position), like CodeSyntax."""
    data = [{"id": i, **s.to_json()} for i, s in enumerate(samples)]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


def read_json(path: str | os.PathLike[str]) -> list[Sample]:
    """Samples of a CodeSyntax-layout JSON file (ours or the published one, which has no spans)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{os.fspath(path)}: expected a JSON list of samples, got {type(data).__name__}")
    return [Sample.from_json(d, index=i) for i, d in enumerate(data)]
