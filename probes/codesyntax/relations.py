"""CodeSyntax-style syntactic relations for Python: word tokens plus labelled (head, dependent) edges.

CodeSyntax (Shen et al., EMNLP 2022) asks
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
import logging
import re
import tokenize
from collections.abc import Iterable, Sequence
from typing import Protocol, cast

from asc.errors import InputError
from asc.syntax import byte_to_char
from probes.codesyntax.samples import RELATIONS, Edge, Sample
from probes.pytokens import python_tokens

__all__ = ["CodeParseError", "extract", "extract_many", "word_tokens"]

logger = logging.getLogger(__name__)

_DROPPED = {tokenize.ENCODING, tokenize.ENDMARKER, tokenize.NL, tokenize.COMMENT}
_OPEN = frozenset("([{")
_CLOSE = frozenset(")]}")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Located(Protocol):
    """A node with source positions (statements, expressions, handlers, keywords...); ``ast.parse`` sets all four."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int
_LONE_CR = re.compile(r"\r(?!\n)")


class CodeParseError(InputError):
    """The code does not parse (or tokenize) as Python; ``__cause__`` is the original error."""


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
    try:
        return [(t.kind, t.string, t.start, t.end) for t in python_tokens(code) if t.kind not in _DROPPED]
    except (tokenize.TokenError, SyntaxError) as exc:
        raise CodeParseError(f"cannot tokenize the code: {exc}") from exc


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
        loc = cast(_Located, node)  # callers pass located nodes only
        i = bisect.bisect_right(self.ends, self._char(loc.lineno, loc.col_offset))
        toks = self.tokens
        while i + 1 < len(toks) and toks[i] in _OPEN and toks[i + 1] not in _CLOSE:
            i += 1
        return i

    def last(self, node: ast.AST) -> int:
        loc = cast(_Located, node)  # callers pass located nodes only
        j = bisect.bisect_left(self.starts, self._char(loc.end_lineno, loc.end_col_offset)) - 1
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
        elif isinstance(node, (ast.Try, ast.TryStar)):
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


def extract(code: str) -> Sample:
    """Word tokens and CodeSyntax edges of ``code``. Raises :class:`CodeParseError` (a ValueError)."""
    _check_code(code)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes (3.11)
        lineno = getattr(exc, "lineno", None)
        where = f"line {lineno}: " if lineno else ""
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
