"""The three context levels of a glueCode item, and masking across them (paper sections 2.4 and B).

For a corpus function (an :class:`~asc.corpus.sources.Snippet` with its origin file and line):

* ``function``: the function's source as the corpus gives it (dedented).
* ``file``: the whole file it comes from, as on disk. For snippets without a file (``humaneval``, ``.jsonl``)
  the file context is the snippet itself.
* ``callgraph``: signatures and docstrings of the functions, methods and classes the target calls, and of the
  functions and methods that call it, in its package; :meth:`probes.gluecode.items.Item.context` puts the file
  after it. Each entry is a stub made with ``ast.unparse`` (decorators, signature, docstring, ``...``), under a
  comment saying whether it lives in the same file or which module; a class the target calls shows its
  ``__init__`` signature. Entries in the same file come first, then by module and line; at most
  :data:`MAX_PER_NAME` definitions per called name and :data:`MAX_EDGES` entries per direction.

The call graph and the corpus's files are :mod:`probes.gluecode.callgraph`.

Masking: :func:`mask_name` replaces every identifier token equal to a name (never a substring of another
identifier, never inside strings, f-strings or comments, so a name in a docstring or ``__all__`` stays visible:
:func:`name_visible` tells; with ``strings=True`` whole-word occurrences there are masked too). Strings and comments
are found by ``tokenize`` (:func:`noncode_spans`) or, for a parsed file, from its ``ast`` (:func:`ast_noncode_spans`,
the same words, without tokenizing a large file per item). :func:`mask_span` replaces one span; :func:`mask_contexts`
applies either to all three texts, mapping a span of the function onto the file through the function's place there
(:func:`locate_function`). Long contexts are not cut here: the evaluator cuts them to the model's window.

Departures from the paper: name-based resolution instead of a typed call graph; callers show their signatures
and docstrings, not their bodies (callers in the same file are in the file context with the name masked).
"""

from __future__ import annotations

import ast
import bisect
import copy
import keyword
import logging
import re
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from asc.errors import InputError
from probes.gluecode.callgraph import CorpusFiles, callgraph_text, merge_spans
from probes.gluecode.items import MASK
from probes.pytokens import line_starts, python_tokens

__all__ = ["FunctionContexts", "build_contexts", "locate_function", "mask_contexts", "mask_name",
           "mask_span", "name_visible", "noncode_spans"]

log = logging.getLogger(__name__)

_Func = ast.FunctionDef | ast.AsyncFunctionDef


# ---------------------------------------------------------------------------------------------- masking
def mask_span(text: str, start: int, end: int, replacement: str = MASK) -> str:
    """``text`` with the characters ``start:end`` replaced by :data:`MASK`."""
    if not 0 <= start < end <= len(text):
        raise InputError(f"mask_span: span {start}:{end} is not inside the text of {len(text)} characters")
    return text[:start] + replacement + text[end:]


def noncode_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the strings (an f-string whole) and comments of ``text``, by ``tokenize``, sorted and
    disjoint; raises :class:`InputError` when the text does not tokenize as Python."""
    try:
        toks = python_tokens(text)
    except (tokenize.TokenError, SyntaxError) as err:
        raise InputError(f"the text does not tokenize as Python ({err}); mask a span instead") from None
    return merge_spans([(t.start, t.end) for t in toks if t.kind in (tokenize.STRING, tokenize.COMMENT)])


_WORD_CHAR = re.compile(r"\w")


def _whole_words(text: str, name: str) -> Iterator[int]:
    """Where ``name`` stands as a whole word in ``text``, left to right: the starts of the matches of
    ``(?<!\\w)name(?!\\w)`` (``re.finditer``'s), found with ``str.find`` and the two neighbours checked, which is many
    times faster than the regex on a whole file (it tries the lookbehind at every character)."""
    if not name:
        yield from (m.start() for m in re.finditer(r"(?<!\w)(?!\w)", text))
        return
    n, start = len(name), 0
    while (i := text.find(name, start)) >= 0:
        if (i == 0 or not _WORD_CHAR.match(text, i - 1)) and not _WORD_CHAR.match(text, i + n):
            yield i
            start = i + n
        else:
            start = i + 1


def mask_name(text: str, name: str, replacement: str = MASK,
              noncode: list[tuple[int, int]] | None = None, strings: bool = False) -> str:
    """``text`` with every identifier token ``name`` replaced by :data:`MASK` (never a substring of another
    identifier, never in strings or comments). ``noncode``: the text's :func:`noncode_spans` when known (e.g.
    :func:`ast_noncode_spans`); else they are computed, and a text that does not tokenize as Python raises
    :class:`InputError`. ``strings``: also mask ``name`` where it stands as a whole word in strings and comments
    (docstrings, doctests, ``__all__``)."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise InputError(f"mask_name: {name!r} is not an identifier; give a function or method name")
    spans = [] if strings else noncode_spans(text) if noncode is None else noncode
    span_starts = [s for s, _ in spans]
    out, pos = [], 0
    for at in _whole_words(text, name):
        j = bisect.bisect_right(span_starts, at) - 1
        if j >= 0 and at < spans[j][1]:
            continue
        out += [text[pos:at], replacement]
        pos = at + len(name)
    out.append(text[pos:])
    return "".join(out)


def name_visible(text: str, name: str) -> bool:
    """Whether ``name`` still occurs in ``text`` as a whole word (after :func:`mask_name`: in a string or
    comment, e.g. a docstring or ``__all__``)."""
    return next(_whole_words(text, name), None) is not None


@dataclass(frozen=True)
class FunctionContexts:
    """The three texts of one function. ``line``: the 1-based line of the function's first line in ``file``;
    ``margin``: the indentation (characters) removed from each function line there."""

    function: str
    file: str = ""
    callgraph: str = ""
    line: int = 1
    margin: int = 0
    file_noncode: list[tuple[int, int]] | None = field(default=None, compare=False, repr=False)
    file_starts: list[int] | None = field(default=None, compare=False, repr=False)  # line_starts(file) when known

    def file_offset(self, offset: int) -> int:
        """The character offset in ``file`` of character ``offset`` of ``function``."""
        row = self.function.count("\n", 0, offset)
        col = offset - (self.function.rfind("\n", 0, offset) + 1)
        starts = line_starts(self.file) if self.file_starts is None else self.file_starts
        return starts[self.line - 1 + row] + self.margin + col


def mask_contexts(ctx: FunctionContexts, *, name: str | None = None, span: tuple[int, int] | None = None,
                  strings: bool = False) -> FunctionContexts:
    """Mask every identifier ``name`` in the three texts (with ``strings``, in strings and comments too, see
    :func:`mask_name`), or one ``span`` of the function (and the same spot of the file; the call graph holds
    other functions only and is kept)."""
    if (name is None) == (span is None):
        raise InputError("mask_contexts: give either a name or a span")
    if name is not None:
        return replace(ctx, function=mask_name(ctx.function, name, strings=strings),
                       file=mask_name(ctx.file, name, noncode=ctx.file_noncode, strings=strings) if ctx.file else "",
                       callgraph=mask_name(ctx.callgraph, name, strings=strings) if ctx.callgraph else "",
                       file_noncode=None, file_starts=None)
    assert span is not None
    start, end = span
    file = ctx.file
    if file:
        if ctx.file_starts is None:
            ctx = replace(ctx, file_starts=line_starts(file))  # once for both ends
        fs, fe = ctx.file_offset(start), ctx.file_offset(end)
        if file[fs:fe] != ctx.function[start:end]:
            raise InputError(f"mask_contexts: the span {start}:{end} does not map onto the file; locate the "
                             "function again (locate_function)")
        file = mask_span(file, fs, fe)
    return replace(ctx, function=mask_span(ctx.function, start, end), file=file, file_noncode=None, file_starts=None)


# ---------------------------------------------------------------------------------------------- text helpers
def locate_function(function: str, file_text: str, line: int, file_lines: list[str] | None = None) -> int | None:
    """The indentation margin (characters) of ``function`` found at 1-based ``line`` of ``file_text``: every
    non-blank function line must equal the file line minus its first ``margin`` characters. None otherwise.
    ``file_lines``: ``file_text.split("\\n")`` when known (:meth:`~probes.gluecode.callgraph.ModuleInfo.lines`)."""
    f_lines = function.split("\n")
    file_lines = file_text.split("\n") if file_lines is None else file_lines
    if line < 1 or line - 1 + len(f_lines) - 1 > len(file_lines):
        return None
    first = file_lines[line - 1]
    margin = len(first) - len(f_lines[0])
    if margin < 0 or first[margin:] != f_lines[0] or first[:margin].strip():
        return None
    for i, fl in enumerate(f_lines[1:], 1):
        if not fl.strip():
            continue
        full = file_lines[line - 1 + i]
        if full[:margin].strip() or (full[margin:] != fl and full[margin:].rstrip() != fl):
            return None
    return margin


def build_contexts(function: str, path: str, line: int, files: CorpusFiles | None, *,
                   callgraph: bool = True, exclude_callees: Iterable[str] = (),
                   for_names: bool = False) -> FunctionContexts | None:
    """The contexts of a function found at ``line`` of file ``path`` (relative to ``files.root``). Without files
    (``files`` None or no root) the file context is the function itself and there is no call graph. None when the
    file cannot be read or parsed, or the function is not found at that line. ``for_names``: keep the file's
    strings and comments for a fast :func:`mask_contexts` by name."""
    if files is None or files.root is None or not path:
        return FunctionContexts(function, function, "", 1, 0)
    info = files.module(path)
    if info is None:
        return None
    margin = locate_function(function, info.text, line, info.lines())
    if margin is None:
        return None
    text = ""
    if callgraph:
        target = next((d.node for d in info.definitions if d.line == line and isinstance(d.node, _Func)), None)
        if target is None:  # e.g. a function defined inside an `if` the index does not visit
            tree = ast.parse(function)
            target = tree.body[0] if tree.body and isinstance(tree.body[0], _Func) else None
            if target is not None:
                target = copy.copy(target)
                target.lineno = line
        if isinstance(target, _Func):
            text = callgraph_text(target, path, files.index(path), exclude_callees, info.external())
    return FunctionContexts(function, info.text, text, line, margin, info.noncode() if for_names else None,
                            info.line_starts())
