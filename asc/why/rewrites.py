"""The text rules behind :mod:`asc.why.corrupt`: which nodes each corruption touches and what it writes there.

Per language (:class:`Grammar`): the identifier node types, the node types whose anonymous child is a binary
operator, the literal types, the comment types and the keywords a fresh name must avoid. The rules, each a pure
function of a parsed :class:`~asc.syntax.SyntaxTree` (checking that the result parses is the caller's job):

- Fresh names (:func:`fresh_names`): candidates in a fixed order, none of them a keyword, a builtin or a word
  already in the snippet (identifiers, strings and comments alike). Without a tokenizer the candidates keep the
  name's shape: each lower-case letter becomes another lower-case letter, upper-case likewise, digits stay digits,
  underscores stay, so the length is the same. With a tokenizer, words of its vocabulary joined in the name's
  style (snake_case, camelCase, Capitalized) come first; :mod:`asc.why.corrupt` keeps the first candidate that
  gives the corrupted snippet as many tokens as the clean one.
- Operators (:func:`operator_alternatives`): swapped within their class only (arithmetic, comparison,
  membership, identity, boolean, bitwise, augmented assignment), the opposite first (``+`` -> ``-``, ``<`` ->
  ``>``, ``==`` -> ``!=``, ``and`` -> ``or``, ``in`` -> ``not in``), then the rest of the class in order.
- Literals (:func:`literal_replacement`): an integer changes its last digit to the next digit of its base
  (``0x1F`` -> ``0x10``, ``41`` -> ``42``, ``9`` -> ``0``; a run of zeros like ``00`` becomes ``10``), a float the
  last digit of its mantissa (``2.5e3`` -> ``2.6e3``), a string keeps its prefix, quotes, escapes and
  interpolations and rotates the letters of its text by 13 and its digits by 5 (an empty string gets an ``x``),
  ``True``/``False`` swap. ``None`` (``null``) stays: it is the only value of its type, so there is no other
  literal to put there, and asking for it is an error that says so.
- Removals (:func:`removal_edit`): a comment or docstring alone on its lines goes with its whole lines; a
  trailing comment goes with the blanks before it (a single space stays where it separated two tokens); a
  docstring that is the only statement of its body becomes ``pass`` (Java: the comment is removed like any
  other; Java has no docstrings).
"""

from __future__ import annotations

import builtins
import keyword
import random
import re
import weakref
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.errors import InputError
from asc.syntax import SyntaxTree

__all__ = ["GRAMMARS", "Grammar", "docstrings", "fresh_names", "grammar", "literal_replacement", "operator_alternatives",
           "operator_nodes", "removal_edit", "word_in"]

_OPERATOR_CLASSES: dict[str, tuple[str, ...]] = {
    "arithmetic": ("+", "-", "*", "/", "//", "%", "**", "@"),
    "comparison": ("<", ">", "<=", ">=", "==", "!="),
    "membership": ("in", "not in"),
    "identity": ("is", "is not"),
    "boolean": ("and", "or", "&&", "||"),
    "bitwise": ("&", "|", "^", "<<", ">>", ">>>"),
    "augmented": ("+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", "<<=", ">>=", ">>>="),
}
#: The opposite tried first; other members of the class follow in the class's order.
_OPPOSITE = {"+": "-", "-": "+", "*": "/", "/": "*", "//": "%", "%": "//", "**": "*", "@": "*", "<": ">", ">": "<",
             "<=": ">=", ">=": "<=", "==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not",
             "is not": "is", "and": "or", "or": "and", "&&": "||", "||": "&&", "&": "|", "|": "&", "^": "&",
             "<<": ">>", ">>": "<<", ">>>": "<<", "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "//=": "%=",
             "%=": "//=", "**=": "*=", "@=": "*=", "&=": "|=", "|=": "&=", "^=": "&=", "<<=": ">>=", ">>=": "<<=",
             ">>>=": "<<="}
_CLASS_OF = {op: name for name, ops in _OPERATOR_CLASSES.items() for op in ops}

_JAVA_KEYWORDS = frozenset(
    "abstract assert boolean break byte case catch char class const continue default do double else enum extends "
    "final finally float for goto if implements import instanceof int interface long native new package private "
    "protected public return short static strictfp super switch synchronized this throw throws transient try void "
    "volatile while true false null var record yield sealed permits".split())


@dataclass(frozen=True)
class Grammar:
    """What the corruptions need to know of one language's tree-sitter grammar (module doc)."""

    identifiers: frozenset[str]
    operator_parents: frozenset[str]  # node types whose anonymous operator child may be swapped
    operators: frozenset[str]  # the operators the language has
    literals: dict[str, str]  # node type -> "int" | "float" | "string" | "char" | "bool" | "none"
    comments: frozenset[str]
    reserved: frozenset[str]  # keywords and builtins a fresh name must not be
    blocks: frozenset[str]  # node types whose named children are statements
    empty_statement: str  # what stands for a removed statement that must leave one
    expressions: frozenset[str]  # compound expressions occlusion may replace by ``neutral``
    neutral: str  # the expression with no content: None / null


GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        identifiers=frozenset({"identifier"}),
        operator_parents=frozenset({"binary_operator", "comparison_operator", "boolean_operator",
                                    "augmented_assignment"}),
        operators=frozenset(op for op in _CLASS_OF if op not in {"&&", "||", ">>>", ">>>="}),
        literals={"integer": "int", "float": "float", "string": "string", "true": "bool", "false": "bool",
                  "none": "none"},
        comments=frozenset({"comment"}),
        reserved=frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins)),
        blocks=frozenset({"module", "block"}),
        empty_statement="pass",
        expressions=frozenset({"call", "attribute", "subscript", "binary_operator", "unary_operator",
                               "comparison_operator", "boolean_operator", "not_operator", "parenthesized_expression",
                               "list", "tuple", "dictionary", "set", "list_comprehension", "dictionary_comprehension",
                               "set_comprehension", "generator_expression", "conditional_expression", "lambda",
                               "await", "concatenated_string"}),
        neutral="None",
    ),
    "java": Grammar(
        identifiers=frozenset({"identifier", "type_identifier"}),
        operator_parents=frozenset({"binary_expression", "assignment_expression"}),
        operators=frozenset(op for op in _CLASS_OF if op not in {"//", "**", "@", "in", "not in", "is", "is not", "and",
                                                                   "or", "//=", "**=", "@="}),
        literals={"decimal_integer_literal": "int", "hex_integer_literal": "int", "octal_integer_literal": "int",
                  "binary_integer_literal": "int", "decimal_floating_point_literal": "float",
                  "hex_floating_point_literal": "float", "string_literal": "string", "character_literal": "char",
                  "true": "bool", "false": "bool", "null_literal": "none"},
        comments=frozenset({"line_comment", "block_comment"}),
        reserved=_JAVA_KEYWORDS | frozenset({"String", "Object", "System", "Math", "Integer", "List", "Map"}),
        blocks=frozenset({"program", "block", "class_body", "constructor_body"}),
        empty_statement=";",
        expressions=frozenset({"method_invocation", "field_access", "array_access", "binary_expression",
                               "unary_expression", "parenthesized_expression", "object_creation_expression",
                               "array_creation_expression", "lambda_expression", "ternary_expression",
                               "cast_expression", "instanceof_expression"}),
        neutral="null",
    ),
}


def grammar(language: str) -> Grammar:
    """The :class:`Grammar` of ``language``, or an :class:`InputError` listing those known."""
    if language not in GRAMMARS:
        raise InputError(f"corruptions know no language {language!r}; choose one of: {', '.join(GRAMMARS)}")
    return GRAMMARS[language]


def word_in(word: str, text: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole word (not inside a longer identifier)."""
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


# ---------------------------------------------------------------------------------------------------- fresh names


def _shaped(name: str, rng: random.Random) -> str:
    """``name`` with every letter and digit drawn again, case, digits and underscores kept (length unchanged)."""
    out = []
    for ch in name:
        if "a" <= ch <= "z":
            out.append(rng.choice([c for c in "abcdefghijklmnopqrstuvwxyz" if c != ch]))
        elif "A" <= ch <= "Z":
            out.append(rng.choice([c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c != ch]))
        elif ch.isdigit() and ch.isascii():
            out.append(rng.choice([c for c in "0123456789" if c != ch]))
        else:
            out.append(ch)
    return "".join(out)


_WORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _vocabulary_words(tokenizer: Any) -> list[str]:
    """Lower-case ASCII words of 3-10 letters that the tokenizer has as a token both alone and after a space
    (computed once per tokenizer)."""
    words = _WORDS.get(tokenizer)
    if words is None:
        from asc.scores import vocab_text

        table = vocab_text(tokenizer)
        spaced = {t[1:] for t in table if t.startswith(" ")}
        words = sorted(w for w in set(table) if 3 <= len(w) <= 10 and w.isascii() and w.isalpha() and w.islower()
                       and w in spaced)
        _WORDS[tokenizer] = words
    return words


def _styled(name: str, words: list[str]) -> str:
    """``words`` joined in the style of ``name``: snake_case, camelCase, Capitalized or plain (leading and
    trailing underscores kept)."""
    core = name.strip("_")
    lead, trail = name[: len(name) - len(name.lstrip("_"))], name[len(name.rstrip("_")):]
    if "_" in core:
        body = "_".join(w.upper() if core.isupper() else w for w in words)
    elif core[:1].isupper():
        body = "".join(w.capitalize() for w in words)
    elif any(c.isupper() for c in core):
        body = words[0] + "".join(w.capitalize() for w in words[1:])
    else:
        body = "".join(words)
    return lead + body + trail


def _parts(name: str) -> int:
    core = name.strip("_")
    return max(1, len([p for p in re.split(r"_|(?<=[a-z0-9])(?=[A-Z])", core) if p]))


def fresh_names(name: str, source: str, reserved: frozenset[str], tokenizer: Any = None,
                limit: int = 400) -> Iterator[str]:
    """Candidate new names for ``name`` (module doc), each a valid identifier absent from ``source`` and from
    ``reserved``, in a fixed order (seeded by the name): vocabulary words first when a ``tokenizer`` is given,
    then names of ``name``'s shape, then ``name`` with a number appended."""
    rng = random.Random(zlib.crc32(name.encode("utf-8")))
    seen: set[str] = set()

    def ok(cand: str) -> bool:
        if cand in seen or not cand.isidentifier() or cand in reserved or word_in(cand, source):
            return False
        seen.add(cand)
        return True

    if tokenizer is not None:
        words = _vocabulary_words(tokenizer)
        if words:
            n = _parts(name)
            for k in range(limit // 2):
                cand = _styled(name, [rng.choice(words) for _ in range(max(1, n + (k % 3) - 1 if k >= 50 else n))])
                if ok(cand):
                    yield cand
    if any(c.isalnum() for c in name):
        for _ in range(limit):
            cand = _shaped(name, rng)
            if ok(cand):
                yield cand
    for k in range(1, limit):
        cand = f"{name}{k}"
        if ok(cand):
            yield cand


# ------------------------------------------------------------------------------------------------------ operators


def operator_nodes(tree: SyntaxTree, g: Grammar) -> list[int]:
    """The binary operators of ``tree`` that may be swapped: anonymous children of an operator expression whose
    text is an operator of the language (so ``=`` of an assignment and the ``not`` inside ``not in`` are not)."""
    parents = tree.parent
    return [i for i in range(1, tree.n_nodes)
            if not tree.named[i] and tree.type[int(parents[i])] in g.operator_parents and tree.type[i] in g.operators]


def operator_alternatives(op: str, g: Grammar) -> list[str]:
    """The operators ``op`` may become, the opposite first, then the rest of its class in order."""
    cls = _CLASS_OF.get(op)
    if cls is None:
        return []
    rest = [o for o in _OPERATOR_CLASSES[cls] if o != op and o in g.operators]
    first = _OPPOSITE.get(op)
    return ([first] if first in rest else []) + [o for o in rest if o != first]


# ------------------------------------------------------------------------------------------------------- literals

_HEX = "0123456789abcdef"
_STRING_TEXT = frozenset({"string_content", "string_fragment", "multiline_string_fragment"})
_NOT_TEXT = frozenset({"escape_sequence", "interpolation", "escape_interpolation"})


def _next_digit(text: str, positions: range, base: int) -> str:
    """``text`` with its rightmost digit of ``base`` among ``positions`` moved to the next digit (cyclic)."""
    for p in reversed(positions):
        ch = text[p]
        d = _HEX.find(ch.lower())
        if 0 <= d < base and ch != "_":
            new = _HEX[(d + 1) % base]
            return text[:p] + (new.upper() if ch.isupper() else new) + text[p + 1:]
    return text


def _number(text: str, node_type: str, kind: str) -> str:
    lower = text.lower()
    base, start = 10, 0
    if lower.startswith(("0x", "0o", "0b")):
        base, start = {"x": 16, "o": 8, "b": 2}[lower[1]], 2
    elif node_type == "octal_integer_literal":
        base = 8
    end = len(text)
    if kind == "float":  # the mantissa: before an exponent marker
        marker = "p" if base == 16 else "e"
        end = lower.find(marker, start) if marker in lower[start:] else end
    elif base == 10 and kind == "int" and node_type == "integer":
        digits = text.replace("_", "").rstrip("jJlL")
        if len(digits) > 1 and set(digits) == {"0"}:  # Python refuses 01: 00 becomes 10
            return "1" + text[1:]
    return _next_digit(text, range(start, end), base)


def _rotate(ch: str) -> str:
    if "a" <= ch <= "z":
        return chr((ord(ch) - 97 + 13) % 26 + 97)
    if "A" <= ch <= "Z":
        return chr((ord(ch) - 65 + 13) % 26 + 65)
    if "0" <= ch <= "9":
        return chr((ord(ch) - 48 + 5) % 10 + 48)
    return ch


def _string_text_spans(tree: SyntaxTree, node: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of a string literal's own text (no prefix, quotes, escapes or interpolations), and where an
    empty string's text would go (after the opening quote, the literal's first child)."""
    lo, hi = int(tree.start[node]), int(tree.end[node])
    keep = np.zeros(hi - lo, dtype=bool)
    cut = np.zeros(hi - lo, dtype=bool)
    stack = [int(c) for c in tree.children(node)]
    while stack:
        c = stack.pop()
        span = slice(int(tree.start[c]) - lo, int(tree.end[c]) - lo)
        if tree.type[c] in _STRING_TEXT:
            keep[span] = True
        elif tree.type[c] in _NOT_TEXT:
            cut[span] = True
            continue
        stack += [int(k) for k in tree.children(c)]
    keep &= ~cut
    edges = np.flatnonzero(np.diff(np.concatenate([[0], keep.astype(np.int8), [0]])))
    spans = [(lo + int(a), lo + int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
    kids = tree.children(node)
    return spans, int(tree.end[kids[0]]) if len(kids) else lo + 1


def _string(tree: SyntaxTree, node: int, kind: str) -> str:
    text = tree.text(node)
    lo = int(tree.start[node])
    if kind == "char":  # a Java character literal is a leaf: 'a'
        inner = text[1:-1]
        if len(inner) == 1 and inner.isascii() and inner.isalnum():
            return "'" + _rotate(inner) + "'"
        return "'x'" if inner != "x" else "'y'"
    spans, opening = _string_text_spans(tree, node)
    chars = list(text)
    for a, b in spans:
        for p in range(a, b):
            chars[p - lo] = _rotate(chars[p - lo])
    new = "".join(chars)
    if new == text:  # nothing to rotate (empty, or only blanks and punctuation): add an x to its text
        at = (spans[0][0] if spans else opening) - lo
        new = text[:at] + "x" + text[at:]
    return new


def literal_replacement(tree: SyntaxTree, node: int, g: Grammar) -> str | None:
    """The text that replaces literal ``node`` (module doc); None for ``None``/``null``, which has no other value."""
    kind = g.literals[tree.type[node]]
    text = tree.text(node)
    if kind == "none":
        return None
    if kind == "bool":
        return {"True": "False", "False": "True", "true": "false", "false": "true"}[text]
    if kind in {"int", "float"}:
        return _number(text, tree.type[node], kind)
    return _string(tree, node, kind)


# ------------------------------------------------------------------------------------------------------- removals


def docstrings(tree: SyntaxTree) -> list[int]:
    """Python docstrings: the expression statements made of one string that come first in a module or in the
    body of a function or class (comments before them do not count)."""
    if tree.language != "python":
        return []
    out = []
    for i in range(tree.n_nodes):
        if tree.type[i] != "expression_statement":
            continue
        kids = [int(c) for c in tree.children(i)]
        if len(kids) != 1 or tree.type[kids[0]] not in {"string", "concatenated_string"}:
            continue
        p = int(tree.parent[i])
        if tree.type[p] == "block" and tree.type[int(tree.parent[p])] not in {"function_definition",
                                                                                "class_definition"}:
            continue
        if tree.type[p] not in {"block", "module"}:
            continue
        first = next((int(c) for c in tree.children(p) if tree.named[c] and tree.type[c] != "comment"), -1)
        if first == i:
            out.append(i)
    return out


def _line_bounds(source: str, start: int, end: int) -> tuple[int, int]:
    """Start of ``start``'s line and the end of ``end``'s line, newline included."""
    lo = source.rfind("\n", 0, start) + 1
    nl = source.find("\n", end)
    return lo, len(source) if nl < 0 else nl + 1


def removal_edit(tree: SyntaxTree, node: int, g: Grammar) -> tuple[int, int, str]:
    """``(start, end, new)``: the span to replace and its replacement that remove comment or docstring ``node``
    (module doc)."""
    src = tree.source
    start, end = int(tree.start[node]), int(tree.end[node])
    lo, hi = _line_bounds(src, start, end)
    alone = not src[lo:start].strip() and not src[end:hi].strip()
    if tree.type[node] not in g.comments:  # a docstring statement
        block = int(tree.parent[node])
        others = [c for c in tree.children(block) if tree.named[c] and int(c) != node and tree.type[c] not in g.comments]
        if not others and tree.type[block] != "module":
            return start, end, g.empty_statement
        return (lo, hi, "") if alone else (start, end, g.empty_statement)
    if alone:
        return lo, hi, ""
    before = len(src[:start].rstrip(" \t"))
    joins = before > 0 and not src[before - 1].isspace() and end < len(src) and not src[end].isspace()
    return before, end, " " if joins else ""
