"""Python tokens with character spans, f-strings and t-strings merged into one STRING token.

Since Python 3.12 ``tokenize`` splits an f-string into FSTRING_START / MIDDLE / END parts (3.14 adds
t-strings). Both the INSPECT labels (:mod:`probes.inspect.labels`) and the CodeSyntax relations
(:mod:`probes.codesyntax.relations`) treat a whole f-string as one token, as the papers' Python 3.8-era
tokenizers did; this module is the one place that merges them.
"""

from __future__ import annotations

import io
import tokenize
from typing import NamedTuple

__all__ = ["PyToken", "line_starts", "python_tokens"]

# f-strings (3.12+) and t-strings (3.14+): split into parts by tokenize, merged back into one token
_STRING_STARTS = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_STRING_ENDS = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}


class PyToken(NamedTuple):
    kind: int  # tokenize type; a merged f-/t-string is STRING
    string: str  # the token's text: code[start:end], even across lines
    start: int  # character offsets in the source
    end: int
    row: int  # 1-based line, and character column, of the start
    col: int


def line_starts(code: str) -> list[int]:
    """Character offset where each line starts (lines end at "\\n", as ``tokenize`` and ``ast`` count)."""
    starts = [0]
    i = code.find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = code.find("\n", i + 1)
    return starts


def python_tokens(code: str) -> list[PyToken]:
    """Every token ``tokenize`` gives, in order, with f-/t-strings merged; raises ``tokenize.TokenError``
    or ``SyntaxError`` when the code does not tokenize."""
    starts = line_starts(code)
    out: list[PyToken] = []
    depth = 0  # f-string nesting
    first: tuple[int, int, int] = (0, 1, 0)  # start, row, col of the outermost open f-string
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        s = starts[tok.start[0] - 1] + tok.start[1] if tok.start[0] <= len(starts) else len(code)
        if tok.type in _STRING_STARTS:
            if depth == 0:
                first = (s, tok.start[0], tok.start[1])
            depth += 1
            continue
        if tok.type in _STRING_ENDS:
            depth -= 1
            if depth == 0:
                e = s + len(tok.string)
                out.append(PyToken(tokenize.STRING, code[first[0]:e], first[0], e, first[1], first[2]))
            continue
        if not depth:
            out.append(PyToken(tok.type, tok.string, s, s + len(tok.string), tok.start[0], tok.start[1]))
    return out
