"""Tree-sitter parsing into a flat node table, with byte AND character spans.

Tree-sitter reports byte offsets into the UTF-8 encoding; tokenizers report character offsets
into the Python string. :func:`byte_to_char` is the one place in the project where one becomes the
other; every other module works in characters (``start``/``end``) and only names byte offsets
``*_byte``. (The authors' ASTxplainer code converted row/column as if columns were characters,
which is wrong on any line with non-ASCII text before the node; checked on tree-sitter 0.26.)

Nodes are numbered in pre-order (a parent before its children, children in source order), so
``parent[i] < i`` for every non-root node and the root is node 0. The root spans the whole source
(tree-sitter would start it after leading blank lines). Syntax errors are data: the
tree keeps ``ERROR`` nodes (``is_error``) and zero-width ``MISSING`` nodes (``is_missing``).

Depth limit: :func:`parse` refuses a tree more than :data:`MAX_AST_DEPTH` (256) levels deep with a one-line
:class:`~asc.errors.TooDeepError`, as soon as its walk reaches that depth (before any array is built, any token
is made or any model runs). One walk (``_preorder``) holds the rule: :func:`parse` builds the node table on it,
:func:`subtree_too_deep` answers on a tree parsed already (the corpus loader asks it of each function of a
file's tree, never parsing the function again) and :func:`too_deep_to_parse` on a text. Real code stays far below it (tree-sitter depths, root = 0, measured on this
project's machine): the deepest file of CPython 3.11's standard library (``statistics.py``) is 29 levels deep,
the deepest stdlib function 26, the deepest HumanEval solution 21; hand-written files of large packages reach
about 100 (sympy's ``polys/tests/test_solvers.py``: 101) and only generated tables go beyond (sympy's
``polyquinticconst.py``: 233, accepted; ``resolvent_lookup.py``: 570, refused). Past the limit the input is a
pathological nesting (``((((...))))``, ``[[[...]]]``, an ``a + b + ...`` chain of hundreds of terms) whose
views would be unreadable anyway. Everything downstream is linear in the nodes and tokens (:mod:`asc.align`);
the limit bounds the one output that grows with tokens x depth, the JSON's per-node token lists (a token is
listed under the nodes that contain its start, at most 257, plus the nodes starting inside it, each node once),
and keeps every figure's columns few.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING

import numpy as np

from asc.errors import InputError, TooDeepError

if TYPE_CHECKING:
    import tree_sitter as ts

__all__ = ["LANGUAGES", "MAX_AST_DEPTH", "SyntaxTree", "parse", "byte_to_char", "encode_source", "get_parser",
           "subtree_too_deep", "too_deep", "too_deep_to_parse"]

#: Languages with a grammar wheel from the tree-sitter org (see docs/method.md: why not tree-sitter-languages).
LANGUAGES = ("python", "java")

#: Deepest syntax tree :func:`parse` accepts (the root is level 0; module doc: why this number).
MAX_AST_DEPTH = 256


@cache
def _language(name: str):
    import tree_sitter as ts

    if name == "python":
        import tree_sitter_python

        capsule = tree_sitter_python.language()
    elif name == "java":
        import tree_sitter_java

        capsule = tree_sitter_java.language()
    else:
        raise InputError(f"unknown language {name!r}; choose one of: {', '.join(LANGUAGES)}")
    return ts.Language(capsule)


def get_parser(language: str) -> ts.Parser:
    """A fresh tree-sitter ``Parser`` (parsers are not thread-safe, languages are)."""
    import tree_sitter as ts

    return ts.Parser(_language(language))


def byte_to_char(source: str) -> np.ndarray:
    """Map every byte offset of ``source.encode('utf-8')`` (0..n_bytes inclusive) to a char offset.

    A byte inside a multi-byte character maps to that character's index. This is the only
    byte->char conversion in the project.
    """
    data = source.encode("utf-8")
    n = len(data)
    if n == len(source):  # pure ASCII: identity
        return np.arange(n + 1, dtype=np.int64)
    # a byte starts a character unless it is a continuation byte 0b10xxxxxx
    arr = np.frombuffer(data, dtype=np.uint8)
    starts = (arr & 0xC0) != 0x80
    char_index = np.cumsum(starts) - 1
    return np.append(char_index, len(source)).astype(np.int64)


@dataclass(frozen=True)
class SyntaxTree:
    """A parsed snippet as parallel arrays, one entry per node (shape ``(N,)`` each).

    ``start``/``end`` are character offsets into ``source`` (``source[start:end]`` is the node's
    text), ``start_byte``/``end_byte`` the same span in UTF-8 bytes. ``parent`` is -1 for the root.
    ``depth`` is 0 for the root. ``named`` is False for anonymous nodes (keywords, punctuation).
    """

    source: str
    language: str
    type: tuple[str, ...]
    named: np.ndarray  # bool (N,)
    start: np.ndarray  # int64 (N,) char offsets
    end: np.ndarray  # int64 (N,)
    start_byte: np.ndarray  # int64 (N,)
    end_byte: np.ndarray  # int64 (N,)
    parent: np.ndarray  # int64 (N,), -1 for the root
    depth: np.ndarray  # int64 (N,)
    is_error: np.ndarray  # bool (N,) ERROR nodes
    is_missing: np.ndarray  # bool (N,) zero-width MISSING nodes inserted by error recovery

    @property
    def n_nodes(self) -> int:
        return len(self.type)

    @property
    def has_error(self) -> bool:
        return bool(self.is_error.any() or self.is_missing.any())

    @property
    def n_levels(self) -> int:
        """Number of AST levels (max depth + 1), a confounder in AsC-Causal."""
        return int(self.depth.max()) + 1 if self.n_nodes else 0

    @property
    def is_leaf(self) -> np.ndarray:
        """bool (N,): nodes with no children (terminals)."""
        has_child = np.zeros(self.n_nodes, dtype=bool)
        has_child[self.parent[self.parent >= 0]] = True
        return ~has_child

    def text(self, i: int, limit: int | None = None) -> str:
        """Node ``i``'s text; with ``limit``, only its first ``limit`` characters (no copy of a long node's text)."""
        start, end = int(self.start[i]), int(self.end[i])
        return self.source[start : end if limit is None else min(end, start + max(0, limit))]

    @cached_property
    def _children_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Children of every node in CSR form (``order[ptr[i]:ptr[i+1]]``, in source order), built once: O(N)."""
        order = np.argsort(self.parent, kind="stable")[1:]  # the root (parent -1) sorts first
        ptr = np.concatenate([[0], np.cumsum(np.bincount(self.parent[order], minlength=self.n_nodes))])
        return order.astype(np.int64), ptr.astype(np.int64)

    def children(self, i: int) -> np.ndarray:
        order, ptr = self._children_index
        return order[ptr[i] : ptr[i + 1]]

    def covering(self, start: int, end: int, named: bool = True) -> int:
        """The deepest node (``named``: named nodes only) whose text contains the characters ``start:end``;
        the root when no smaller one does, -1 for an empty tree."""
        inside = (self.start <= start) & (self.end >= max(end, start))
        if named:
            inside &= self.named | (self.parent < 0)
        idx = np.flatnonzero(inside)
        return int(idx[np.argmax(self.depth[idx])]) if len(idx) else (0 if self.n_nodes else -1)


def encode_source(source: str) -> bytes:
    """UTF-8 bytes of ``source``, or an :class:`InputError` naming the fix (not text, lone surrogates)."""
    if not isinstance(source, str):
        raise InputError("source must be text (str); decode bytes as UTF-8 first")
    try:
        return source.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(f"the text has a character that is not valid Unicode at position {err.start} "
                         "(a lone surrogate); remove it or re-decode the file as UTF-8") from None


def too_deep(depth: int | None = None) -> TooDeepError:
    """The one-line refusal of a tree deeper than :data:`MAX_AST_DEPTH` (``depth``: how deep, when known)."""
    how = f"{depth} levels deep" if depth is not None else f"more than {MAX_AST_DEPTH} levels deep"
    return TooDeepError(f"the code's syntax tree is {how}; at most {MAX_AST_DEPTH} levels are analysed (real code "
                        "stays under about 100): split the deepest nesting, e.g. a long a + b + ... chain or "
                        "many nested brackets, into several statements")


def _preorder(cursor: ts.TreeCursor, limit: int = MAX_AST_DEPTH) -> Iterator[int]:
    """The one walk of a tree: the depth of every node at and below the cursor's node (that node: 0), in
    pre-order, the cursor standing on the node while its depth is yielded; a :class:`TooDeepError` as soon as a
    node is deeper than ``limit`` (before anything is done with it). A cursor walk: no recursion, no node object
    made unless the caller asks ``cursor.node``."""
    depth = 0
    while True:
        yield depth
        if cursor.goto_first_child():
            depth += 1
            if depth > limit:
                raise too_deep()
            continue
        while depth and not cursor.goto_next_sibling():
            cursor.goto_parent()
            depth -= 1
        if not depth:
            return


def subtree_too_deep(node: ts.Node, above: int = 0) -> bool:
    """Whether a syntax tree made of ``node``'s subtree below ``above`` levels (a function extracted from a file
    and parsed alone: ``above=1``, under its module) is deeper than :data:`MAX_AST_DEPTH`, which :func:`parse`
    refuses: the same walk, stopped at the limit, on a tree parsed already."""
    try:
        for _ in _preorder(node.walk(), MAX_AST_DEPTH - above):
            pass
    except TooDeepError:
        return True
    return False


def too_deep_to_parse(source: str, language: str = "python") -> bool:
    """Whether :func:`parse` would refuse ``source`` for its depth (:func:`subtree_too_deep` of its tree), several
    times cheaper than :func:`parse`: no node table is built."""
    return subtree_too_deep(get_parser(language).parse(encode_source(source)).root_node)


def parse(source: str, language: str = "python") -> SyntaxTree:
    """Parse ``source`` with tree-sitter and return the flat node table. Never raises on syntax errors; raises
    :class:`~asc.errors.TooDeepError` for a tree more than :data:`MAX_AST_DEPTH` levels deep (module doc)."""
    data = encode_source(source)
    tree = get_parser(language).parse(data)
    types: list[str] = []
    rows: list[tuple[int, int, int, int, bool, bool, bool]] = []
    cursor = tree.walk()
    ancestors: list[int] = []  # the node indices of the current node's ancestors, root first
    for depth in _preorder(cursor):  # refuses a node deeper than the limit before it is added
        node = cursor.node
        assert node is not None  # a cursor from Tree.walk() always points at a node
        del ancestors[depth:]
        rows.append((node.start_byte, node.end_byte, ancestors[-1] if depth else -1, depth, node.is_named,
                     node.is_error, node.is_missing))
        ancestors.append(len(types))
        types.append(node.type)
    arr = np.array([r[:4] for r in rows], dtype=np.int64).reshape(-1, 4)
    # tree-sitter starts the root after leading blank lines; the root covers the whole snippet so that
    # every token counts for it (the paper binds newline/indent tokens to the enclosing module)
    arr[0, 0], arr[0, 1] = 0, max(int(arr[0, 1]), len(data))
    flags = np.array([r[4:7] for r in rows], dtype=bool).reshape(-1, 3)
    b2c = byte_to_char(source)  # the one byte->char conversion
    return SyntaxTree(
        source=source,
        language=language,
        type=tuple(types),
        named=flags[:, 0],
        start=b2c[arr[:, 0]],
        end=b2c[arr[:, 1]],
        start_byte=arr[:, 0],
        end_byte=arr[:, 1],
        parent=arr[:, 2],
        depth=arr[:, 3],
        is_error=flags[:, 1],
        is_missing=flags[:, 2],
    )
