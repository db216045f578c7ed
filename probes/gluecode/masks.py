"""Where a glueCode item can mask a function: operator sites (OPS), call sites with their kind (CALL) and
whether a name is worth predicting (NAME). Pure functions over one function's source and ``ast``.

Every site is a character span of the function found with ``ast`` (positions converted from UTF-8 columns) and
checked against the text: an operator must be the only thing between its operands besides whitespace,
parentheses, line continuations and comments; a called name must stand at its node's start (``f``) or end
(``x.f``). So a site is never inside a string or comment; nodes inside f-strings are left out (their positions are
unreliable before Python 3.12).

* Operators (the paper's 12 classes, :data:`~probes.gluecode.items.OPERATORS`): binary ``+ - * / %`` (ast
  ``BinOp``: unary minus, ``//``, ``**`` and augmented assignments such as ``+=`` are not sites), the
  comparisons ``== != < > <= >=`` (each operator of a chain such as ``a < b <= c`` is a site), and ``=`` of
  plain assignment statements only (``ast.Assign``; each ``=`` of ``a = b = 0``; keyword arguments, defaults,
  annotated assignments and ``:=`` are not sites). :func:`still_parses` says which of the 12 operators keep the
  function parseable in place of the masked one.
* Calls: every ``ast.Call`` whose callee is a name ``f(...)`` or an attribute ``x.f(...)``; the masked token is
  ``f`` (constructors of classes are calls too, ``super()`` is a builtin's call; dunder names such as
  ``super().__init__`` are left out). Its kind, by name (no types inferred; see :func:`call_kind`): ``local``
  when defined in the same file, package or project, ``api`` when a builtin, a method of a builtin type, or
  imported from elsewhere (stdlib or third party); calls of parameters and local variables and names that cannot
  be resolved are not sites.
* Names: function names of at least :data:`MIN_NAME` characters, not dunder methods (the paper kept a few short
  names to round its set to a million; we keep none).
"""

from __future__ import annotations

import ast
import bisect
import builtins
from dataclasses import dataclass

from probes.gluecode.callgraph import ModuleInfo, PackageIndex
from probes.gluecode.items import OPERATORS
from probes.inspect.labels import unique_variables
from probes.pyast import child_nodes

__all__ = ["BUILTIN_METHODS", "MIN_NAME", "Site", "call_kind", "call_sites", "name_ok", "operator_sites",
           "still_parses"]

MIN_NAME = 4
BUILTIN_METHODS = frozenset(a for t in (str, bytes, bytearray, list, dict, set, frozenset, tuple, int, float, complex)
                            for a in dir(t) if not a.startswith("_"))
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">="}
_Func = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Site:
    """A maskable spot: ``start:end`` characters of the function, its text ``label``; for calls ``kind``
    (api/local) and ``where`` (builtin, builtin-method, import, file, package, project)."""

    start: int
    end: int
    label: str
    row: int  # 1-based line and character column in the function
    col: int
    kind: str = ""
    where: str = ""


class _Positions:
    """ast positions (line, byte column) as character offsets of one source."""

    def __init__(self, source: str):
        self.source = source
        self.lines = source.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + (col if line.isascii() else
                                          len(line.encode("utf-8")[:col].decode("utf-8", "replace")))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def operator(self, lo: int, hi: int, op: str) -> int | None:
        """Where ``op`` stands between two operands (``lo``: end of the left one, ``hi``: start of the right):
        the gap may hold only whitespace, parentheses, line continuations, comments and ``op`` once."""
        src, i, found = self.source, lo, None
        while i < hi:
            ch = src[i]
            if ch in " \t\f\r\n\\()":
                i += 1
            elif ch == "#":
                nl = src.find("\n", i, hi)
                i = hi if nl < 0 else nl
            elif found is None and src.startswith(op, i) and i + len(op) <= hi:
                found, i = i, i + len(op)
            else:
                return None
        return found

    def site(self, start: int, text: str, **kw: str) -> Site:
        row = bisect.bisect_right(self.starts, start) - 1
        return Site(start, start + len(text), text, row + 1, start - self.starts[row], **kw)


def _nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes below ``func``, f-strings' insides left out (their positions are unreliable before 3.12)."""
    out, stack = [], [func]
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, ast.JoinedStr):
            stack += child_nodes(node)
    return out


def _parse(source: str) -> _Func | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return tree.body[0] if tree.body and isinstance(tree.body[0], _Func) else None


def operator_sites(source: str, func: _Func | None = None) -> list[Site]:
    """Every masked-operator site of the function, in source order (see the module docstring)."""
    func = _parse(source) if func is None else func
    if func is None:
        return []
    pos = _Positions(source)
    pairs: list[tuple[ast.AST, ast.AST, str]] = []
    for node in _nodes(func):
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            pairs.append((node.left, node.right, _BINOPS[type(node.op)]))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            pairs += [(a, b, _CMPOPS[type(op)]) for a, b, op in zip(sides, sides[1:], node.ops) if type(op) in _CMPOPS]
        elif isinstance(node, ast.Assign):
            sides = [*node.targets, node.value]
            pairs += [(a, b, "=") for a, b in zip(sides, sides[1:])]
    sites = []
    for left, right, text in pairs:
        at = pos.operator(pos.end(left), pos.start(right), text)
        if at is not None:
            sites.append(pos.site(at, text))
    return sorted(set(sites), key=lambda s: s.start)


def still_parses(source: str, start: int, end: int) -> list[str]:
    """The operators of :data:`OPERATORS` that, put at ``start:end`` of ``source``, leave it parseable."""
    out = []
    for op in OPERATORS:
        try:
            ast.parse(source[:start] + op + source[end:])
        except (SyntaxError, ValueError):
            continue
        out.append(op)
    return out


def name_ok(name: str) -> bool:
    """Whether a function name is a NAME target: at least :data:`MIN_NAME` characters and not a dunder."""
    return len(name) >= MIN_NAME and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def call_kind(call: ast.Call, variables: set[str], module: ModuleInfo,
              index: PackageIndex | None) -> tuple[str, str] | None:
    """(kind, where) of a call by name, or None when it cannot be told (a parameter or variable, an attribute of
    an unknown object that is neither defined in the package nor a builtin type's method).

    ``f(...)``: a local variable -> None; defined (def/class) in the file -> local/file; imported -> local/project
    when the import is relative or from the file's own top-level package, else api/import; a builtin -> api/
    builtin; defined elsewhere in the package -> local/package. ``x.f(...)``: ``x`` (the leftmost name) imported
    -> as the import; a builtin type (``str.join``) -> api/builtin; ``self.f``/``cls.f``/``super().f`` -> local
    when ``f`` is defined in the file or package, else None; otherwise local when ``f`` is defined in the package
    and is no builtin type's method, api/builtin-method when it is one and not defined in the package."""
    defined_pkg = set(index.by_name) if index is not None else set()
    if isinstance(call.func, ast.Name):
        name = call.func.id
        if name in variables:
            return None
        if name in module.defined:
            return "local", "file"
        if name in module.imports:
            return ("local", "project") if module.imports[name][1] else ("api", "import")
        if hasattr(builtins, name):
            return "api", "builtin"
        return ("local", "package") if name in defined_pkg else None
    assert isinstance(call.func, ast.Attribute)
    name, base, root = call.func.attr, call.func.value, _root(call.func.value)
    local_where = "file" if name in module.defined else "package" if name in defined_pkg else ""
    if isinstance(root, ast.Name) and root.id not in variables:
        if root.id in module.imports and root.id not in module.defined:
            return ("local", "project") if module.imports[root.id][1] else ("api", "import")
        if isinstance(getattr(builtins, root.id, None), type) and root.id not in module.defined:
            return "api", "builtin"
    is_super = isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "super"
    if (isinstance(base, ast.Name) and base.id in ("self", "cls")) or is_super:
        return ("local", local_where) if local_where else None
    if local_where and name not in BUILTIN_METHODS:
        return "local", local_where
    if name in BUILTIN_METHODS and not local_where:
        return "api", "builtin-method"
    return None


def call_sites(source: str, module: ModuleInfo, index: PackageIndex | None,
               func: _Func | None = None) -> list[Site]:
    """Every call site of the function whose kind :func:`call_kind` can tell, in source order. ``module``: the
    function's file (for a corpus without files, the function parsed as a module); ``index``: its package."""
    func = _parse(source) if func is None else func
    if func is None:
        return []
    pos = _Positions(source)
    variables = unique_variables(func)
    sites = []
    for node in _nodes(func):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name):
            name = node.func.id
            at = pos.start(node.func)
        elif isinstance(node.func, ast.Attribute):
            name = node.func.attr
            at = pos.end(node.func) - len(name)
        else:
            continue
        if source[at:at + len(name)] != name or (name.startswith("__") and name.endswith("__")):
            continue
        kind = call_kind(node, variables, module, index)
        if kind is not None:
            sites.append(pos.site(at, name, kind=kind[0], where=kind[1]))
    return sorted(sites, key=lambda s: s.start)
