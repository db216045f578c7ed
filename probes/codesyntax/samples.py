"""CodeSyntax samples: a snippet, its word tokens with character spans, and relation edges between them.

The file layout is the CodeSyntax authors' (``code``, ``tokens``, ``relns``: relation name -> list of
``[head, dep_first, dep_last]`` token indices), plus ``spans`` (character offsets, so a token maps
back to the code). Files without spans (the published ones) get spans by locating each token after
the previous one. Everything read is validated; a bad field raises :class:`asc.errors.InputError`
naming the sample and the field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asc.atomic import write_atomic
from asc.errors import InputError

__all__ = ["RELATIONS", "Edge", "Sample", "read_json", "write_json"]

#: The Python relation types of CodeSyntax (Shen et al., EMNLP 2022), in the authors' order.
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
        """Read one dict of a CodeSyntax-layout file; ``spans`` is optional. Raises InputError when invalid."""
        label = f"sample {index}" if index is not None else "sample"
        if isinstance(d, Mapping) and "id" in d:
            label += f" (id {d['id']!r})"

        def bad(field: str, why: str) -> InputError:
            return InputError(f"{label}: field {field!r}: {why}")

        if not isinstance(d, Mapping):
            raise InputError(f"{label}: expected a JSON object, got {type(d).__name__}")
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
                gm = gap.match(code, pos)
                assert gm is not None  # both gap patterns match the empty string
                p = gm.end()
                if code.startswith(tok, p):
                    start = p
                    break
            if start < 0:
                start = code.find(tok, pos)
        if start < 0:
            raise InputError(f"{label}: field 'tokens[{i}]': token {tok!r} not found in the code after offset {pos}")
        spans.extend([(start, start)] * pending)
        pending = 0
        pos = start + len(tok)
        spans.append((start, pos))
    spans.extend([(pos, pos)] * pending)
    return spans


def write_json(samples: Iterable[Sample], path: str | os.PathLike[str]) -> None:
    """A JSON list of :meth:`Sample.to_json` dicts with an ``id`` (their position), like CodeSyntax."""
    data = [{"id": i, **s.to_json()} for i, s in enumerate(samples)]
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data), encoding="utf-8"))


def read_json(path: str | os.PathLike[str]) -> list[Sample]:
    """Samples of a CodeSyntax-layout JSON file (ours or the published one, which has no spans)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{os.fspath(path)}: cannot read a CodeSyntax JSON file ({err})") from None
    except RecursionError:
        raise InputError(f"{os.fspath(path)}: nested too deeply to be a CodeSyntax JSON file (a list of "
                         "samples)") from None
    if not isinstance(data, list):
        raise InputError(f"{os.fspath(path)}: expected a JSON list of samples, got {type(data).__name__}")
    return [Sample.from_json(d, index=i) for i, d in enumerate(data)]
