"""probes.pytokens: Python tokens with character spans, an f-string (however nested) merged into one STRING.

The merging of FSTRING_START ... FSTRING_END parts is checked on this interpreter's tokens and, for
the token stream of Python 3.12+ (which splits f-strings), on a replayed stream of such parts.
"""

from __future__ import annotations

import tokenize

import pytest

from probes import pytokens
from probes.pytokens import PyToken, python_tokens

N, OP, S, NL, END = tokenize.NAME, tokenize.OP, tokenize.STRING, tokenize.NEWLINE, tokenize.ENDMARKER


def _kinds_and_strings(code):
    return [(t.kind, t.string) for t in python_tokens(code)]


@pytest.mark.parametrize("code", [
    'x = f"a{b}c" + 1\n',
    "y = f\"{f'{x}'}!\" \n",
    's = f"""a\n{b:>{w}}\n"""\nz\n',
    'é = "ü" + rf"\\d{n}"\n',
    'a = 1\r\nb = f"{a!r}"\r\n',
    "def f(x):\n    '''Doc.'''\n    return x  # c\n",
])
def test_spans_are_the_tokens_text_in_order(code):
    toks = python_tokens(code)
    assert toks[-1].kind == END and toks[-1].start == toks[-1].end == len(code)
    lines = code.split("\n")
    prev = 0
    for t in toks:
        assert code[t.start:t.end] == t.string
        assert prev <= t.start <= t.end
        prev = t.end
        # row and column locate the start (characters, not bytes)
        assert sum(len(line) + 1 for line in lines[:t.row - 1]) + t.col == t.start
    assert not [t for t in toks if t.kind not in (S, N, OP, NL, END, tokenize.NUMBER, tokenize.COMMENT,
                                                   tokenize.INDENT, tokenize.DEDENT, tokenize.NL)]


def test_fstring_is_one_string_token_with_exact_span():
    toks = python_tokens('x = f"a{b}c" + 1\n')
    assert [(t.kind, t.string, t.start, t.end, t.row, t.col) for t in toks] == [
        (N, "x", 0, 1, 1, 0), (OP, "=", 2, 3, 1, 2), (S, 'f"a{b}c"', 4, 12, 1, 4), (OP, "+", 13, 14, 1, 13),
        (tokenize.NUMBER, "1", 15, 16, 1, 15), (NL, "\n", 16, 17, 1, 16), (END, "", 17, 17, 2, 0)]


def test_nested_and_multiline_fstrings_are_one_token():
    assert _kinds_and_strings("y = f\"{f'{x}'}!\"\n")[2] == (S, "f\"{f'{x}'}!\"")
    code = 'call(f"""\n  {a}\n""", 2)\n'
    toks = python_tokens(code)
    string = next(t for t in toks if t.kind == S)
    assert string.string == 'f"""\n  {a}\n"""' and (string.start, string.end) == (5, 19)
    assert (string.row, string.col) == (1, 5)
    after = toks[toks.index(string) + 1]
    assert (after.string, after.row, after.start) == (",", 3, 19)


def test_non_ascii_offsets_are_characters():
    toks = python_tokens('größe = "naïve ✓"\n')
    assert [(t.string, t.start, t.end) for t in toks[:3]] == [("größe", 0, 5), ("=", 6, 7), ('"naïve ✓"', 8, 17)]


@pytest.mark.parametrize("code, error", [
    ('s = """abc\n', tokenize.TokenError),  # EOF in a multi-line string
    ("x = (\n", tokenize.TokenError),  # EOF in a multi-line statement
    ("if x:\n  a\n b\n", SyntaxError),  # an unindent to no outer level (IndentationError)
])
def test_code_that_does_not_tokenize_raises(code, error):
    with pytest.raises(error):
        python_tokens(code)


# ------------------------------------------------------------------------------------------ 3.12+ token streams

FSTART, FMID, FEND = 9001, 9002, 9003  # stand-ins for tokenize.FSTRING_START / _MIDDLE / _END


def _replay(monkeypatch, stream):
    """Make python_tokens read ``stream`` (type, string, (row, col) start, (row, col) end) as tokenize's output."""
    infos = [tokenize.TokenInfo(k, s, a, b, "") for k, s, a, b in stream]
    monkeypatch.setattr(pytokens, "_STRING_STARTS", {FSTART})
    monkeypatch.setattr(pytokens, "_STRING_ENDS", {FEND})
    monkeypatch.setattr(pytokens.tokenize, "generate_tokens", lambda readline: iter(infos))


def test_split_fstring_parts_are_merged(monkeypatch):
    code = 'x = f"a{b}c"\n'
    _replay(monkeypatch, [
        (N, "x", (1, 0), (1, 1)), (OP, "=", (1, 2), (1, 3)), (FSTART, 'f"', (1, 4), (1, 6)),
        (FMID, "a", (1, 6), (1, 7)), (OP, "{", (1, 7), (1, 8)), (N, "b", (1, 8), (1, 9)), (OP, "}", (1, 9), (1, 10)),
        (FMID, "c", (1, 10), (1, 11)), (FEND, '"', (1, 11), (1, 12)), (NL, "\n", (1, 12), (1, 13)),
        (END, "", (2, 0), (2, 0))])
    assert python_tokens(code) == [PyToken(N, "x", 0, 1, 1, 0), PyToken(OP, "=", 2, 3, 1, 2),
                                   PyToken(S, 'f"a{b}c"', 4, 12, 1, 4), PyToken(NL, "\n", 12, 13, 1, 12),
                                   PyToken(END, "", 13, 13, 2, 0)]


def test_nested_split_fstrings_merge_into_the_outermost(monkeypatch):
    code = "f\"{f'{x}'}\"\nz\n"
    _replay(monkeypatch, [
        (FSTART, 'f"', (1, 0), (1, 2)), (OP, "{", (1, 2), (1, 3)), (FSTART, "f'", (1, 3), (1, 5)),
        (OP, "{", (1, 5), (1, 6)), (N, "x", (1, 6), (1, 7)), (OP, "}", (1, 7), (1, 8)), (FEND, "'", (1, 8), (1, 9)),
        (OP, "}", (1, 9), (1, 10)), (FEND, '"', (1, 10), (1, 11)), (NL, "\n", (1, 11), (1, 12)),
        (N, "z", (2, 0), (2, 1)), (NL, "\n", (2, 1), (2, 2)), (END, "", (3, 0), (3, 0))])
    toks = python_tokens(code)
    assert [(t.kind, t.string, t.start, t.end) for t in toks] == [
        (S, "f\"{f'{x}'}\"", 0, 11), (NL, "\n", 11, 12), (N, "z", 12, 13), (NL, "\n", 13, 14), (END, "", 14, 14)]


def test_split_multiline_fstring_spans_lines(monkeypatch):
    code = 's = f"""a\n{b}\n"""\n'
    _replay(monkeypatch, [
        (N, "s", (1, 0), (1, 1)), (OP, "=", (1, 2), (1, 3)), (FSTART, 'f"""', (1, 4), (1, 8)),
        (FMID, "a\n", (1, 8), (2, 0)), (OP, "{", (2, 0), (2, 1)), (N, "b", (2, 1), (2, 2)), (OP, "}", (2, 2), (2, 3)),
        (FMID, "\n", (2, 3), (3, 0)), (FEND, '"""', (3, 0), (3, 3)), (NL, "\n", (3, 3), (3, 4)),
        (END, "", (4, 0), (4, 0))])
    string = python_tokens(code)[2]
    assert string == PyToken(S, 'f"""a\n{b}\n"""', 4, 17, 1, 4) and code[4:17] == string.string
