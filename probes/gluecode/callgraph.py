"""The static call graph of a glueCode item's package, and the corpus's files read and parsed once.

The call graph is static and name-based, and no code is executed: the package is the folder of the target's
file when it holds an ``__init__.py`` (every ``.py`` file directly in it, subfolders not included), else the
file alone (a top-level stdlib module such as ``argparse.py`` is its own package). Every function, method and
class defined in those files (functions nested in functions stay part of their outer function) is indexed with
the names it calls: ``f(...)`` calls ``f``, ``x.y.f(...)`` calls ``f``. A callee is any definition whose name the
target calls; a caller is any function or method that calls the target's name. Calls reached through a name
imported from another package (``math.gcd(...)``, or ``gcd(...)`` after ``from math import gcd``) are not
linked to the package's definitions of that name. This over-approximates (every ``update`` method "is called" by
``d.update(...)``) and misses calls through aliases or ``getattr``; types are not inferred. :class:`CorpusFiles`
reads and parses each file once (share one between tasks).

Departures from the paper: name-based resolution instead of a typed call graph; callers show their signatures
and docstrings, not their bodies.
"""

from __future__ import annotations

import ast
import bisect
import copy
import functools
import logging
import os
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from asc.confined import Refused, builtin_folder, read_file, resolve_roots
from asc.corpus.sources import MAX_SOURCE_BYTES
from asc.errors import CorpusError
from probes.pytokens import line_starts

__all__ = ["MAX_EDGES", "MAX_PER_NAME", "CorpusFiles", "Definition", "ModuleInfo", "PackageIndex", "called_names",
           "ast_noncode_spans", "callgraph_text", "merge_spans", "corpus_root", "module_name", "parse_module"]

log = logging.getLogger(__name__)

MAX_EDGES = 20  # call-graph entries per direction (callees, callers)
MAX_PER_NAME = 3  # definitions shown for one called name (name-based resolution can match several)
_Func = ast.FunctionDef | ast.AsyncFunctionDef


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def ast_noncode_spans(text: str, tree: ast.Module) -> list[tuple[int, int]]:
    """:func:`noncode_spans` of a parsed file, from its ``ast`` (string constants and f-strings) and the ``#``
    outside them: the same spans without tokenizing a large file again."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(lineno: int, col: int) -> int:
        line = lines[lineno - 1]
        return starts[lineno - 1] + (col if line.isascii() else len(line.encode("utf-8")[:col].decode("utf-8", "replace")))

    spans = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)):
            spans.append((offset(node.lineno, node.col_offset), offset(node.end_lineno or node.lineno,
                                                                       node.end_col_offset or 0)))
            continue
        stack.extend(ast.iter_child_nodes(node))
    strings = merge_spans(spans)
    string_starts = [s for s, _ in strings]
    for m in re.finditer(r"#[^\n]*", text):
        j = bisect.bisect_right(string_starts, m.start()) - 1
        if j < 0 or m.start() >= strings[j][1]:
            spans.append(m.span())
    return merge_spans(spans)




@functools.lru_cache(maxsize=4096)  # asked for every function of a file, by every task
def module_name(rel: str) -> str:
    """Dotted module name of a path relative to the corpus root: ``json/decoder.py`` -> ``json.decoder``."""
    parts = Path(rel).with_suffix("").parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or rel


def corpus_root(spec: str) -> Path | None:
    """The folder that a corpus's snippet origins are relative to (as :mod:`asc.corpus.sources` computes them);
    None for corpora without files (``humaneval``, ``.jsonl``)."""
    if spec == "humaneval" or spec.endswith(".jsonl"):
        return None
    if spec in ("stdlib", "algorithms"):
        try:
            folder = builtin_folder(spec)
        except CorpusError:  # algorithms is not installed
            return None
        return folder if spec == "stdlib" or folder is None else folder.parent  # origins: algorithms/...
    path = Path(os.path.expanduser(spec))
    if path.is_dir():
        return path
    if path.is_file() and path.suffix == ".py":
        return path.parent
    return None


# ---------------------------------------------------------------------------------------------- the index
def _call_name(call: ast.Call) -> tuple[str, str] | None:
    """(called name, the leftmost name it is reached through): ``f()`` (f, f), ``m.x.f()`` (f, m), ``a[0].f()``
    (f, '')."""
    if isinstance(call.func, ast.Name):
        return call.func.id, call.func.id
    if isinstance(call.func, ast.Attribute):
        base = call.func.value
        while isinstance(base, ast.Attribute):
            base = base.value
        return call.func.attr, base.id if isinstance(base, ast.Name) else ""
    return None


def called_names(node: ast.AST, external: Collection[str] = ()) -> list[str]:
    """Names called anywhere below ``node`` (``f(...)``: f, ``x.f(...)``: f), each once, in source order. Calls
    through a name in ``external`` (bound by an import from another package: ``math.gcd(...)``, or ``gcd(...)``
    after ``from math import gcd``) are left out: they cannot reach the package."""
    found = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and (named := _call_name(n)) is not None and named[1] not in external:
            found.append((n.lineno, n.col_offset, named[0]))
    return list(dict.fromkeys(name for _, _, name in sorted(found)))


@dataclass(frozen=True)
class Definition:
    """A function, method or class of the package: ``cls`` is the enclosing class of a method ('' otherwise)."""

    name: str
    kind: str  # "function" or "class"
    path: str  # relative to the corpus root
    line: int  # line of the `def`/`class` keyword
    cls: str
    node: ast.AST = field(compare=False, repr=False)
    calls: frozenset[str] = field(default=frozenset(), compare=False, repr=False)


@dataclass
class ModuleInfo:
    """One parsed file: its definitions, every name defined in it, and the names its imports bind, each with
    the imported module and whether that module is local (relative, or in the file's own top-level package)."""

    path: str
    module: str
    text: str
    tree: ast.Module
    definitions: list[Definition]
    defined: set[str]
    imports: dict[str, tuple[str, bool]]
    _noncode: list[tuple[int, int]] | None = field(default=None, repr=False)
    _lines: list[str] | None = field(default=None, repr=False, compare=False)
    _starts: list[int] | None = field(default=None, repr=False, compare=False)

    def external(self) -> set[str]:
        """Names bound by imports from other packages (stdlib, third party)."""
        return {name for name, (_, local) in self.imports.items() if not local}

    def noncode(self) -> list[tuple[int, int]]:
        """The file's strings and comments (:func:`ast_noncode_spans`), computed once."""
        if self._noncode is None:
            self._noncode = ast_noncode_spans(self.text, self.tree)
        return self._noncode

    def lines(self) -> list[str]:
        """The file's lines (split at ``\\n``), split once: every function of the file is located in them."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines

    def line_starts(self) -> list[int]:
        """Where each line starts (:func:`probes.pytokens.line_starts`), computed once."""
        if self._starts is None:
            self._starts = line_starts(self.text)
        return self._starts


@dataclass
class PackageIndex:
    """The definitions of one package (see the module docstring), by name."""

    name: str
    paths: tuple[str, ...]
    by_name: dict[str, list[Definition]]
    _all: list[Definition] | None = field(default=None, repr=False)
    _stubs: dict[Definition, str] = field(default_factory=dict, repr=False, compare=False)

    def definitions(self) -> list[Definition]:
        """Every definition, in file and line order."""
        if self._all is None:
            self._all = sorted((d for ds in self.by_name.values() for d in ds), key=lambda d: (d.path, d.line))
        return self._all

    def stub(self, d: Definition) -> str:
        """The call-graph entry of definition ``d`` (signature and docstring), made once: the items of a package
        show the same callers and callees again and again."""
        if d not in self._stubs:
            self._stubs[d] = _stub(d)
        return self._stubs[d]


def parse_module(text: str, path: str, module: str, own_top: str | None) -> ModuleInfo:
    """Parse one file's text (raises ``SyntaxError``) in one pass: its definitions with the names they call,
    every defined name, the imports. ``own_top``: the top-level package whose imports are local (None: only
    relative imports are). Functions nested in functions are no definitions of their own: their calls count
    for the outer function."""
    tree = ast.parse(text)
    info = ModuleInfo(path, module, text, tree, [], set(), {})
    functions: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, set[tuple[str, str]]]] = []

    def visit(node: ast.AST, cls: str, calls: set[tuple[str, str]] | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                info.defined.add(child.name)
                if calls is not None:  # inside a function: part of it
                    visit(child, cls, calls)
                elif isinstance(child, ast.ClassDef):
                    info.definitions.append(Definition(child.name, "class", path, child.lineno, cls, child))
                    visit(child, child.name, None)
                else:
                    own: set[tuple[str, str]] = set()
                    visit(child, cls, own)
                    functions.append((child, cls, own))
                continue
            if isinstance(child, ast.Call) and calls is not None:
                if (named := _call_name(child)) is not None:
                    calls.add(named)
            elif isinstance(child, ast.Import):
                for a in child.names:
                    top = a.name.split(".")[0]
                    info.imports[a.asname or top] = (a.name if a.asname else top, top == own_top)
            elif isinstance(child, ast.ImportFrom):
                mod = child.module or ""
                local = child.level > 0 or mod.split(".")[0] == own_top
                for a in child.names:
                    if a.name != "*":
                        info.imports[a.asname or a.name] = (f"{mod}.{a.name}".lstrip("."), local)
            visit(child, cls, calls)

    visit(tree, "", None)
    external = info.external()
    for func, cls, calls in functions:
        info.definitions.append(Definition(func.name, "function", path, func.lineno, cls, func,
                                           frozenset(name for name, root in calls if root not in external)))
    return info


class CorpusFiles:
    """Reads, parses and indexes the files of a corpus below ``root`` (None: a corpus without files), once; with
    ``roots`` (:func:`asc.confined.corpus_roots`: a shared server's data folders, or a built-in corpus's own
    folder), a file is read only if what was opened lies inside one of them (:mod:`asc.confined`: checked on the
    opened descriptor, so a link swapped in meanwhile is refused)."""

    def __init__(self, root: Path | None, roots: Sequence[Path] | None = None):
        self.root = root
        self.roots = resolve_roots(roots)
        self.prefix = f"{root.name}." if root is not None and (root / "__init__.py").is_file() else ""
        self._modules: dict[str, ModuleInfo | None] = {}
        self._texts: dict[str, str | None] = {}
        self._packages: dict[str, PackageIndex] = {}
        self._is_package: dict[str, bool] = {}  # folder -> holds __init__.py, looked at once
        self._package_names: dict[str, str] = {}  # file -> package_name(file)

    def module(self, rel: str) -> ModuleInfo | None:
        """The parsed file ``rel`` (relative to the root); None when it cannot be read or parsed."""
        if rel not in self._modules:
            info = None
            text = self.text(rel)
            if text is not None:
                try:
                    module = self.prefix + module_name(rel)
                    info = parse_module(text, rel, module, module.split(".")[0] if self.in_package(rel) else None)
                except (SyntaxError, ValueError, RecursionError) as err:
                    log.info("glueCode contexts: %s does not parse (%s)", rel, err)
            self._modules[rel] = info
        return self._modules[rel]

    def text(self, rel: str) -> str | None:
        """The text of file ``rel``; None when it cannot be read as UTF-8 (the last few are kept)."""
        if rel not in self._texts:
            if len(self._texts) >= 64:
                self._texts.pop(next(iter(self._texts)))
            try:
                self._texts[rel] = (read_file(self.root / rel, self.roots, MAX_SOURCE_BYTES).decode("utf-8")
                                    if self.root is not None else None)
            except (OSError, UnicodeDecodeError, Refused) as err:
                log.info("glueCode contexts: %s cannot be read (%s)", rel, err)
                self._texts[rel] = None
        return self._texts[rel]

    def in_package(self, rel: str) -> bool:
        """Whether the file's folder is a package (holds ``__init__.py``; looked at once per folder)."""
        if self.root is None:
            return False
        folder = rel.rpartition("/")[0]
        if folder not in self._is_package:
            self._is_package[folder] = (self.root / rel).parent.joinpath("__init__.py").is_file()
        return self._is_package[folder]

    def package_paths(self, rel: str) -> tuple[str, ...]:
        """The files of ``rel``'s package: the ``.py`` files of its folder when that is a package, else ``rel``."""
        if self.root is None or not self.in_package(rel):
            return (rel,)
        folder = Path(rel).parent
        names = sorted(p.name for p in (self.root / folder).iterdir() if p.suffix == ".py" and p.is_file())
        return tuple((folder / n).as_posix() for n in names)

    def package_name(self, rel: str) -> str:
        """The dotted name of ``rel``'s package (its folder), or of the module itself when it is in none."""
        if rel not in self._package_names:
            self._package_names[rel] = ((self.prefix + ".".join(Path(rel).parent.parts)).rstrip(".") or rel
                                        if self.in_package(rel) else self.prefix + module_name(rel))
        return self._package_names[rel]

    def index(self, rel: str) -> PackageIndex:
        """The package index of ``rel``'s package (built once per package)."""
        key = self.package_name(rel)
        if key not in self._packages:
            paths = self.package_paths(rel)
            by_name: dict[str, list[Definition]] = {}
            for p in paths:
                info = self.module(p)
                for d in info.definitions if info else ():
                    by_name.setdefault(d.name, []).append(d)
            self._packages[key] = PackageIndex(key, paths, by_name)
        return self._packages[key]


# ---------------------------------------------------------------------------------------------- call graph
def _stub(d: Definition) -> str:
    node = copy.copy(d.node)
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    doc = ast.get_docstring(node, clean=False)
    body: list[ast.stmt] = [ast.Expr(ast.Constant(doc))] if doc is not None else []
    if isinstance(node, ast.ClassDef):
        init = next((m for m in node.body if isinstance(m, _Func) and m.name == "__init__"), None)
        if init is not None:
            body.append(ast.parse(_stub(Definition("__init__", "function", d.path, init.lineno, d.name, init))).body[0])
    body.append(ast.Expr(ast.Constant(...)))
    node.body = body
    return ast.unparse(node)


def _where(d: Definition, target_path: str) -> str:
    place = "in this file" if d.path == target_path else f"in module {module_name(d.path)}"
    return f"# {'method of class ' + d.cls + ', ' if d.cls else ''}{place}"


def callgraph_text(target: _Func, path: str, index: PackageIndex, exclude_callees: Iterable[str] = (),
                   external: Collection[str] = ()) -> str:
    """Signatures and docstrings of what ``target`` (defined in ``path``) calls and of what calls it in
    ``index``; ``exclude_callees``: names left out of the callees (the masked call of the CALL task);
    ``external``: names of the file bound by imports from other packages (see :func:`called_names`). '' when
    the function calls nothing and is called by nothing in its package."""
    excluded = set(exclude_callees)

    def order(ds: Iterable[Definition]) -> list[Definition]:
        return sorted(ds, key=lambda d: (d.path != path, d.path, d.line))

    def is_target(d: Definition) -> bool:
        return d.path == path and d.line == target.lineno

    callees: list[Definition] = []
    for name in called_names(target, external):
        if name not in excluded:
            callees += [d for d in order(index.by_name.get(name, ())) if not is_target(d)][:MAX_PER_NAME]
    callers = order(d for d in index.definitions()
                    if d.kind == "function" and target.name in d.calls and not is_target(d))
    parts = []
    for title, defs in (("what this function calls", callees[:MAX_EDGES]),
                        ("what calls this function", callers[:MAX_EDGES])):
        if defs:
            parts.append(f"# Call graph of package {index.name} (static, by name): {title}\n"
                         + "\n\n".join(f"{_where(d, path)}\n{index.stub(d)}" for d in defs))
    return "\n\n".join(parts)
