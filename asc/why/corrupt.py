"""Corruptions that keep code valid: a snippet changed in a few recorded spans, checked to parse as well as before.

A :class:`Corruption` is the clean ``source``, the ``corrupted`` text and the :class:`Edit` s that turn one into
the other (character offsets in the clean source, sorted, not overlapping). Kinds, and the spec the CLI's
``intervene --corrupt`` takes (:func:`parse_spec`; LINE and COL 1-based as editors show them, COL in characters):

``rename:NAME[:NEW]``
    every identifier node spelled NAME becomes NEW (default: a fresh name, not in the snippet, with as many
    tokens under the model's tokenizer when one is given and such a name is found, else of NAME's shape:
    :mod:`asc.why.rewrites`). Attribute and keyword-argument names spelled NAME are renamed too (the snippet
    alone cannot tell them apart); strings and comments are left as they are.
``operator:LINE:COL[:NEW]``
    the binary operator at LINE:COL becomes NEW or another of its class (the opposite first).
``literal:LINE:COL[:NEW]``
    the literal at LINE:COL becomes NEW or another value of its type (``None`` has none: an error).
``docstring[:LINE]`` / ``comment[:LINE]``
    every docstring (comment) of the snippet, or the one(s) on LINE, removed.

The check (every corruption, :func:`corrupt` and :func:`node_corruptions` alike): the corrupted text is parsed
again and must have no more ERROR or MISSING nodes than the clean one, and, for Python code that Python's own
parser takes (:func:`ast.parse`), Python must take it too (tree-sitter accepts ``None = 1``); a rename, a swap or a literal must also
leave the named nodes' tree unchanged (same types at the same depths in pre-order), so that ``a + b * c`` never
becomes ``a ** b * c`` grouped another way. A user's corruption that fails it is an
:class:`~asc.errors.InputError` naming the fix; an operator tries the next of its class first.

:func:`node_corruptions` neutralizes one node for syntax-aware occlusion: an identifier gets a fresh name at that
one occurrence, an operator its opposite, a literal another value, a comment or docstring is removed and a
statement (a named child of a block or module) becomes ``pass`` (Java: ``;``) and a compound expression (a call,
an attribute, an operation, a display, a comprehension...) ``None`` (Java: ``null``); other nodes (punctuation,
keywords, parameter lists...) and any of these whose result fails the check (``None = 1``) get None.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from asc.errors import InputError
from asc.positions import line_col_at, offset_at
from asc.syntax import SyntaxTree, parse
from asc.why.rewrites import (
    Grammar,
    docstrings,
    fresh_names,
    grammar,
    literal_replacement,
    operator_alternatives,
    operator_nodes,
    removal_edit,
    word_in,
)

__all__ = ["KINDS", "Corruption", "CorruptionSpec", "Edit", "apply_edits", "corrupt", "node_corruptions",
           "parse_spec"]

KINDS = ("rename", "operator", "literal", "docstring", "comment")
_MAX_TRIES = 200  # fresh names tried for one with the snippet's token count
_SPELLING = "rename:NAME, operator:LINE:COL, literal:LINE:COL, docstring or comment"


@dataclass(frozen=True)
class Edit:
    """``source[start:end]`` (character offsets in the clean source), which read ``old``, now reads ``new``."""

    start: int
    end: int
    old: str
    new: str


@dataclass(frozen=True)
class Corruption:
    """A clean snippet, its corrupted text and the edits between them (sorted by ``start``, not overlapping)."""

    kind: str
    description: str
    source: str
    corrupted: str
    edits: tuple[Edit, ...]
    language: str = field(default="python")

    def corrupted_span(self, edit: Edit) -> tuple[int, int]:
        """Where ``edit``'s new text lies in the corrupted text: ``(start, end)``."""
        shift = sum(len(e.new) - len(e.old) for e in self.edits if e.start < edit.start)
        return edit.start + shift, edit.start + shift + len(edit.new)

    def to_dict(self) -> dict:
        """Plain JSON-ready values: kind, description, language and the edits with both spans."""
        return {"kind": self.kind, "description": self.description, "language": self.language,
                "edits": [{"start": e.start, "end": e.end, "old": e.old, "new": e.new,
                           "corrupted_span": list(self.corrupted_span(e))} for e in self.edits]}

    @property
    def first_change(self) -> int | None:
        """The first clean character an edit touches (None: no edit)."""
        return self.edits[0].start if self.edits else None

    def changed_mask(self, n_chars: int | None = None) -> np.ndarray:
        """bool (``n_chars`` or ``len(source)``,): the clean characters an edit replaces."""
        mask = np.zeros(len(self.source) if n_chars is None else n_chars, dtype=bool)
        for e in self.edits:
            mask[e.start:e.end] = True
        return mask

    def map_spans(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Clean character spans ``[start, end)`` (arrays (T,)) moved to the corrupted text: ``(start', end', ok)``,
        ``ok`` False for a span that overlaps an edit (or touches an insertion inside it), whose text changed."""
        start, end = np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64)
        e_start = np.array([e.start for e in self.edits] + [np.iinfo(np.int64).max], dtype=np.int64)
        e_end = np.array([e.end for e in self.edits], dtype=np.int64)
        delta = np.concatenate([[0], np.cumsum([len(e.new) - len(e.old) for e in self.edits], dtype=np.int64)])
        before = np.searchsorted(e_end, start, side="right")  # the edits that end at or before the span starts
        shift = delta[before]
        return start + shift, end + shift, e_start[before] >= end  # the next edit starts at or after its end


@dataclass(frozen=True)
class CorruptionSpec:
    """A parsed ``--corrupt`` value (:func:`parse_spec`); ``line``/``col`` 1-based, ``new`` the replacement."""

    kind: str
    name: str | None = None
    line: int | None = None
    col: int | None = None
    new: str | None = None

    def __str__(self) -> str:
        parts = [self.kind, self.name, None if self.line is None else str(self.line),
                 None if self.col is None else str(self.col), self.new]
        return ":".join(p for p in parts if p is not None)


def _int(text: str, what: str, spec: str) -> int:
    if not text.strip().isdecimal() or int(text) < 1:
        kind = spec.split(":")[0]
        raise InputError(f"{what} {text!r} in --corrupt {spec!r} is not a number from 1 up: write e.g. "
                         + (f"{kind}:3" if kind in {"docstring", "comment"} else f"{kind}:3:9"))
    return int(text)


def _fields(text: str, kind: str, most: int, form: str) -> list[str]:
    """The ``:``-separated fields of spec ``text`` after its ``kind`` (none: ``[]``); an :class:`InputError` naming
    ``form`` for more than ``most`` of them or an empty one."""
    _, sep, rest = text.strip().partition(":")
    fields = rest.split(":") if sep else []
    if len(fields) > most:
        extra = len(fields) - most
        raise InputError(f"--corrupt {text!r} has {extra} extra field{'s' if extra > 1 else ''}: {kind} takes {form}")
    if any(not f.strip() for f in fields):
        raise InputError(f"--corrupt {text!r} has an empty field: write {form}")
    return fields


def parse_spec(text: str) -> CorruptionSpec:
    """``rename:NAME[:NEW]``, ``operator:LINE:COL[:NEW]``, ``literal:LINE:COL[:NEW]``, ``docstring[:LINE]`` or
    ``comment[:LINE]`` (module doc) as a :class:`CorruptionSpec`; an :class:`InputError` naming the forms else: an
    unknown kind, an empty field (``rename:x:``) or one too many (``rename:x:y:z``; a literal's NEW may hold ``:``,
    a string's text)."""
    kind, _, rest = text.strip().partition(":")
    if kind not in KINDS:
        raise InputError(f"unknown corruption {text!r}: write one of {_SPELLING}")
    if kind == "rename":
        if not rest.partition(":")[0].strip():
            raise InputError(f"--corrupt {text!r} names no identifier: write rename:NAME (e.g. rename:count)")
        fields = _fields(text, kind, 2, "rename:NAME or rename:NAME:NEW (e.g. rename:count)")
        return CorruptionSpec(kind, name=fields[0], new=fields[1] if len(fields) == 2 else None)
    if kind in {"operator", "literal"}:
        head = rest.split(":", 2)
        if len(head) < 2:
            raise InputError(f"--corrupt {text!r} needs a position: write {kind}:LINE:COL (1-based, e.g. {kind}:3:9)")
        if kind == "operator":  # no operator holds a ':'; a string literal may
            _fields(text, kind, 3, "operator:LINE:COL or operator:LINE:COL:NEW (e.g. operator:3:9:-)")
        if len(head) == 3 and not head[2]:
            raise InputError(f"--corrupt {text!r} has an empty NEW: write {kind}:{head[0]}:{head[1]} for another "
                             "value of its class, or give NEW")
        return CorruptionSpec(kind, line=_int(head[0], "line", text), col=_int(head[1], "column", text),
                              new=head[2] if len(head) == 3 else None)
    fields = _fields(text, kind, 1, f"{kind} or {kind}:LINE (e.g. {kind}:3)")
    return CorruptionSpec(kind, line=_int(fields[0], "line", text) if fields else None)


def apply_edits(source: str, edits: Sequence[Edit]) -> str:
    """``source`` with ``edits`` (sorted, not overlapping) applied."""
    out, at = [], 0
    for e in edits:
        out += [source[at:e.start], e.new]
        at = e.end
    return "".join([*out, source[at:]])


def _n_errors(tree: SyntaxTree) -> int:
    return int((tree.is_error | tree.is_missing).sum())


_TEXT_PIECES = frozenset({"string_content", "string_fragment", "multiline_string_fragment", "escape_sequence"})
_SAME_TYPE = {"true": "bool", "false": "bool"}


def _skeleton(tree: SyntaxTree) -> tuple[tuple[str, ...], bytes]:
    """The named nodes' types and depths in pre-order, a string's pieces of text left out and True/False one type."""
    named = [i for i in np.flatnonzero(tree.named).tolist() if tree.type[i] not in _TEXT_PIECES]
    return tuple(_SAME_TYPE.get(tree.type[i], tree.type[i]) for i in named), tree.depth[named].tobytes()


@lru_cache(maxsize=16)
def _python_parses(text: str) -> bool:
    """Whether Python's own parser (:func:`ast.parse`) takes ``text`` (stricter than tree-sitter: ``None = 1``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences warn
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    return True


def _problem(tree: SyntaxTree, corrupted: str, same_shape: bool) -> str | None:
    """Why ``corrupted`` fails the check against the clean ``tree`` (module doc), None when it passes."""
    new = parse(corrupted, tree.language)
    if _n_errors(new) > _n_errors(tree):
        return "it would not parse"
    if tree.language == "python" and _python_parses(tree.source) and not _python_parses(corrupted):
        return "Python would not parse it"
    if same_shape and _skeleton(new) != _skeleton(tree):
        return "the code would group differently"
    return None


def _make(tree: SyntaxTree, kind: str, description: str, spans: Sequence[tuple[int, int, str]]) -> Corruption:
    src = tree.source
    edits = tuple(Edit(a, b, src[a:b], new) for a, b, new in sorted(spans) if src[a:b] != new)
    return Corruption(kind, description, src, apply_edits(src, edits), edits, tree.language)


def _token_count(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def _line(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


def _where(source: str, offset: int) -> str:
    """``LINE:COL`` (1-based, as editors show them) of a character offset."""
    line, col = line_col_at(source, offset)
    return f"{line}:{col}"


def _at(tree: SyntaxTree, nodes: list[int], spec: CorruptionSpec, what: str) -> int:
    """The node of ``nodes`` under ``spec``'s LINE:COL, or an InputError listing those on that line."""
    assert spec.line is not None and spec.col is not None
    off = offset_at(tree.source, spec.line, spec.col, f"--corrupt {str(spec)!r}")
    hits = [i for i in nodes if tree.start[i] <= off < tree.end[i]]
    if hits:
        return max(hits, key=lambda i: int(tree.depth[i]))
    here = [i for i in nodes if _line(tree.source, int(tree.start[i])) == spec.line]
    if here:
        listed = ", ".join(f"{tree.text(i, 20)!r} at {_where(tree.source, int(tree.start[i]))}" for i in here[:12])
        raise InputError(f"no {what} at {spec.line}:{spec.col}; on line {spec.line}: {listed}")
    lines = sorted({_line(tree.source, int(tree.start[i])) for i in nodes})
    raise InputError(f"no {what} on line {spec.line}; "
                     + (f"lines with one: {', '.join(map(str, lines[:20]))}" if lines else "the snippet has none"))


def _rename(tree: SyntaxTree, g: Grammar, spec: CorruptionSpec, tokenizer: Any) -> Corruption:
    name = spec.name or ""
    idents = [i for i in range(tree.n_nodes) if tree.type[i] in g.identifiers]
    hits = [i for i in idents if tree.text(i) == name]
    if not hits:
        names = list(dict.fromkeys(tree.text(i) for i in idents))
        raise InputError(f"no identifier {name!r} in the snippet; names present: {', '.join(names[:30]) or 'none'}")
    spans = [(int(tree.start[i]), int(tree.end[i])) for i in hits]
    if spec.new is not None:
        if not spec.new.isidentifier() or spec.new in g.reserved or word_in(spec.new, tree.source):
            raise InputError(f"cannot rename {name!r} to {spec.new!r}: give a valid identifier that is no keyword "
                             "or builtin and not in the snippet yet, or leave NEW out for a fresh name")
        candidates: Iterable[str] = [spec.new]
    else:
        candidates = fresh_names(name, tree.source, g.reserved, tokenizer)
    want = _token_count(tokenizer, tree.source) if tokenizer is not None else None
    best: tuple[int, Corruption] | None = None
    for tried, cand in enumerate(candidates):
        if tried >= _MAX_TRIES and best is not None:
            break
        c = _make(tree, "rename", f"rename {name!r} to {cand!r} ({len(hits)} occurrences)",
                  [(a, b, cand) for a, b in spans])
        if _problem(tree, c.corrupted, same_shape=True) is not None:
            continue
        gap = 0 if want is None else abs(_token_count(tokenizer, c.corrupted) - want)
        if gap == 0:
            return c
        if best is None or gap < best[0]:
            best = (gap, c)
    if best is None:
        raise InputError(f"renaming {name!r} would not leave valid code: give a new name as rename:{name}:NEW")
    c = best[1]
    return Corruption(c.kind, c.description + f"; no fresh name keeps the token count, {best[0]} token(s) off",
                      c.source, c.corrupted, c.edits, c.language)


def _swap(tree: SyntaxTree, g: Grammar, node: int, new: str | None) -> Corruption | None:
    op = tree.type[node]
    where = _where(tree.source, int(tree.start[node]))
    for alt in [new] if new is not None else operator_alternatives(op, g):
        c = _make(tree, "operator", f"operator {op!r} at {where} to {alt!r}",
                  [(int(tree.start[node]), int(tree.end[node]), alt)])
        if alt != op and _problem(tree, c.corrupted, same_shape=True) is None:
            return c
    return None


def _literal(tree: SyntaxTree, g: Grammar, node: int, new: str | None) -> Corruption | None:
    text = tree.text(node)
    alt = new if new is not None else literal_replacement(tree, node, g)
    if alt is None or alt == text:
        return None
    c = _make(tree, "literal", f"literal {text[:40]!r} at {_where(tree.source, int(tree.start[node]))} to "
              f"{alt[:40]!r}", [(int(tree.start[node]), int(tree.end[node]), alt)])
    return c if _problem(tree, c.corrupted, same_shape=True) is None else None


def _removal(tree: SyntaxTree, g: Grammar, kind: str, nodes: list[int]) -> Corruption | None:
    if not nodes:
        return None
    where = ", ".join(_where(tree.source, int(tree.start[i])) for i in nodes[:8])
    c = _make(tree, kind, f"remove {len(nodes)} {kind}{'s' if len(nodes) > 1 else ''} (at {where})",
              [removal_edit(tree, i, g) for i in nodes])
    return c if _problem(tree, c.corrupted, same_shape=False) is None else None


def corrupt(source: str, spec: CorruptionSpec | str, language: str = "python", tokenizer: Any = None) -> Corruption:
    """``source`` corrupted as ``spec`` says (module doc), checked; ``tokenizer``: the model's, so that a fresh name
    keeps the snippet's token count. An :class:`InputError` naming the fix for a bad name, position or spec."""
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    if spec.kind not in KINDS:
        raise InputError(f"unknown corruption kind {spec.kind!r}: write one of {_SPELLING}")
    g = grammar(language)
    tree = parse(source, language)
    if spec.kind == "rename":
        return _rename(tree, g, spec, tokenizer)
    if spec.kind in {"operator", "literal"}:
        if spec.kind == "operator":
            node = _at(tree, operator_nodes(tree, g), spec, "binary operator")
            c = _swap(tree, g, node, spec.new)
        else:
            node = _at(tree, [i for i in range(tree.n_nodes) if tree.type[i] in g.literals], spec, "literal")
            if g.literals[tree.type[node]] == "none":
                raise InputError(f"{tree.text(node)} at {spec.line}:{spec.col} is the only value of its type: "
                                 "corrupt another literal, or give one as literal:LINE:COL:NEW")
            c = _literal(tree, g, node, spec.new)
        if c is None:
            raise InputError(f"no valid replacement for {tree.text(node, 40)!r} at {spec.line}:{spec.col}: "
                             + ("give one that keeps the code valid as " + f"{spec.kind}:{spec.line}:{spec.col}:NEW"
                                if spec.new is None else f"{spec.new!r} would not leave the same valid code"))
        return c
    if spec.kind == "docstring" and language != "python":
        raise InputError(f"{language} has no docstrings: corrupt with comment (documentation comments are comments)")
    found = docstrings(tree) if spec.kind == "docstring" else [i for i in range(tree.n_nodes)
                                                               if tree.type[i] in g.comments]
    nodes = [i for i in found if spec.line is None
             or _line(source, int(tree.start[i])) <= spec.line <= _line(source, int(tree.end[i]))]
    if not nodes:
        lines = sorted({_line(source, int(tree.start[i])) for i in found})
        raise InputError(f"no {spec.kind} {'in the snippet' if spec.line is None else f'on line {spec.line}'}; "
                         + (f"lines with one: {', '.join(map(str, lines[:20]))}" if lines else
                            f"choose another corruption: {_SPELLING}"))
    c = _removal(tree, g, spec.kind, nodes)
    if c is None:
        raise InputError(f"removing the {spec.kind} would not leave valid code; remove it by hand, or corrupt "
                         "something else")
    return c


def _blank(tree: SyntaxTree, node: int, kind: str, new: str) -> Corruption | None:
    """``node``'s text replaced by ``new`` (a statement by ``pass``, an expression by ``None``), when valid."""
    if tree.text(node).strip() == new:
        return None
    c = _make(tree, kind, f"{tree.type[node]} at {_where(tree.source, int(tree.start[node]))} to {new!r}",
              [(int(tree.start[node]), int(tree.end[node]), new)])
    return c if _problem(tree, c.corrupted, same_shape=False) is None else None


def node_corruptions(tree: SyntaxTree, node: int, tokenizer: Any = None) -> Corruption | None:
    """The valid corruption that neutralizes ``node`` of ``tree`` alone (module doc), or None where there is none."""
    g = grammar(tree.language)
    t = tree.type[node]
    parent = int(tree.parent[node])
    if t in g.identifiers:
        name = tree.text(node)
        for cand in fresh_names(name, tree.source, g.reserved, tokenizer, limit=20):
            c = _make(tree, "rename", f"identifier {name!r} at {_where(tree.source, int(tree.start[node]))} to "
                      f"{cand!r}", [(int(tree.start[node]), int(tree.end[node]), cand)])
            if _problem(tree, c.corrupted, same_shape=True) is None:
                return c
        return None
    if not tree.named[node] and parent >= 0 and tree.type[parent] in g.operator_parents and t in g.operators:
        return _swap(tree, g, node, None)
    if t in g.comments:
        return _removal(tree, g, "comment", [node])
    docs = docstrings(tree)
    if node in docs or (parent in docs and t in {"string", "concatenated_string"}):
        return _removal(tree, g, "docstring", [node if node in docs else parent])
    if t in g.literals:
        return _literal(tree, g, node, None)
    if parent >= 0 and tree.named[node] and tree.type[parent] in g.blocks:
        return _blank(tree, node, "statement", g.empty_statement)
    if t in g.expressions:
        return _blank(tree, node, "expression", g.neutral)
    return None
