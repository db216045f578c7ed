"""Class usage from static analysis (BLANCA's U task): which methods code calls on instances of which class.

No code is imported or run: files are parsed with ``ast``. In each scope (every function body, and the module's
own top-level code) a variable assigned from a class call, ``v = ClassName(...)`` (also ``v: T = ClassName(...)``,
``with ClassName(...) as v`` and ``(v := ClassName(...))``), and then used as ``v.method(...)`` records one use of
``method`` on that class; so does ``ClassName(...).method(...)``. ``ClassName`` is a name or a dotted attribute,
resolved through the module's imports (``import a.b as c``, ``from a import B``, relative imports, imports
anywhere in the file) to a dotted name, or to a class defined at the module's top level, or to a built-in class
(``list``, ``dict``). Which resolved names are classes: those in ``known`` (a class catalog's names and aliases)
when given, else the PEP 8 convention (the last part starts with a capital letter) plus the built-in classes.
Methods with a leading underscore are left out. The binding a call sees is the latest assignment above it in the
file (a flow-insensitive reading: both branches of an ``if`` count, the later one wins). In a class, ``self.x``
counts as an instance of ``C`` where every ``self.x = <class call>`` in its methods constructs ``C``, and then
``self.x.method(...)`` is a use. Values passed between functions are not followed (the paper's Graph4Code
data-flow graphs follow them). :func:`scan_usage` reads test suites too: they are client code of the classes,
as the paper's GitHub programs are.

Usage similarity of two classes is the **Jaccard index** of the sets of methods called on them,
``|A & B| / |A | B|`` in [0, 1]. Departure: the paper scores a pair by the Euclidean distance of (shared methods,
classes sharing them) from an "ideal" pair, a number it does not fully specify; Jaccard is a documented, bounded
similarity (its Pearson r with embedding distance is expected to be negative, the paper's positive).

:func:`sample_usage_pairs` takes classes with ``min_methods`` or more methods, forms every pair, and draws with a
seeded ``random.Random`` up to ``per_bin`` pairs from each similarity bin of :data:`USAGE_BINS` (exactly 0, then
(0, .25], (.25, .5], (.5, .75], (.75, 1]): most pairs share no method, and an unbalanced sample would measure
little more than "shares something or not".
"""

from __future__ import annotations

import ast
import bisect
import builtins
import random
import sysconfig
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from asc.errors import InputError
from probes.blanca.classes import ClassCatalog
from probes.blanca.items import ScoredPairItem, split_of
from probes.pyast import child_nodes, gc_paused, walk

__all__ = ["USAGE_BINS", "UsageIndex", "extract_usage", "module_imports", "sample_usage_pairs", "scan_usage",
           "source_files", "usage_items", "usage_similarity"]

USAGE_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)  # bin edges: {0}, (0, .25], (.25, .5], (.5, .75], (.75, 1]
_BUILTIN_CLASSES = frozenset(n for n, v in vars(builtins).items() if isinstance(v, type) and not n.startswith("_"))
_SKIP_DIRS = {"test", "tests", "idle_test", "idlelib", "lib2to3", "turtledemo", "site-packages", "dist-packages",
              "__pycache__"}
_TEST_DIRS = {"test", "tests"}
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class UsageIndex:
    """Per class, the methods called on its instances and how many call sites each has; files read or failed."""

    methods: dict[str, dict[str, int]]
    files: int
    failed: tuple[str, ...] = ()

    def method_sets(self, min_methods: int = 2) -> dict[str, frozenset[str]]:
        """Classes with ``min_methods`` or more distinct methods used, and those methods."""
        return {c: frozenset(m) for c, m in sorted(self.methods.items()) if len(m) >= min_methods}


def module_imports(tree: ast.Module, module: str = "", is_package: bool = False,
                   nodes: list[ast.AST] | None = None) -> dict[str, str]:
    """Local names bound by the file's imports (anywhere in it) to the dotted names they stand for. ``nodes``:
    ``walk(tree)`` (:func:`probes.pyast.walk`) when known."""
    package = module if is_package else module.rpartition(".")[0]
    out: dict[str, str] = {}
    for node in walk(tree) if nodes is None else nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join(p for p in [*parts, *([base] if base else [])] if p)
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return out


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


class _Resolver:
    def __init__(self, tree: ast.Module, module: str, is_package: bool, known: Collection[str] | None,
                 nodes: list[ast.AST]) -> None:
        self.imports = module_imports(tree, module, is_package, nodes)
        self.local = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.module, self.known = module, known

    def cls(self, call: ast.expr) -> str | None:
        """The dotted class name that ``call`` (an ``ast.Call``) constructs, or None."""
        parts = _dotted(call.func) if isinstance(call, ast.Call) else None
        if not parts:
            return None
        head, rest = parts[0], parts[1:]
        if head in self.imports:
            name = ".".join([self.imports[head], *rest])
        elif head in self.local and not rest:
            name = f"{self.module}.{head}" if self.module else head
        elif head in _BUILTIN_CLASSES and not rest:
            name = f"builtins.{head}"
        else:
            return None
        if self.known is not None:
            return name if name in self.known else None
        last = name.rsplit(".", 1)[-1]
        return name if last[:1].isupper() or name.startswith("builtins.") else None


def _scope_nodes(body: Iterable[ast.AST]) -> Iterable[ast.AST]:
    """Every node of ``body``, not descending into nested functions, lambdas and classes."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack += child_nodes(node)


def _events(body: list[ast.stmt], resolve: _Resolver) -> list[tuple[tuple[int, int], str, str, str | None]]:
    """Bindings (``bind``, var, class or None) at the end of their statement, method calls (``call``, var or class,
    method) where they start, in one scope."""
    events: list[tuple[tuple[int, int], str, str, str | None]] = []

    def bind(target: ast.AST, value: ast.expr | None, end: ast.AST) -> None:
        for name in (n for n in walk(target) if isinstance(n, ast.Name)):
            cls = resolve.cls(value) if value is not None and target is name else None
            events.append(((getattr(end, "end_lineno", 0) or 0, getattr(end, "end_col_offset", 0) or 0), "bind",
                           name.id, cls))

    for node in _scope_nodes(body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value, node)
        elif isinstance(node, ast.AnnAssign):
            bind(node.target, node.value, node)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node.value, node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, item.context_expr, item.context_expr)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind(node.target, None, node.target)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.func.attr.startswith("_"):
            receiver, where = node.func.value, (node.lineno, node.col_offset)
            receiver = receiver.value if isinstance(receiver, ast.NamedExpr) else receiver  # (v := C()).m()
            if isinstance(receiver, ast.Name):
                events.append((where, "call", receiver.id, node.func.attr))
            elif (cls := resolve.cls(receiver)) is not None:
                events.append((where, "direct", cls, node.func.attr))
    return sorted(events, key=lambda e: (e[0], e[1] != "call"))


def _self_attributes(cls_nodes: list[ast.AST], resolve: _Resolver) -> dict[str, str]:
    """``self.attr`` of a class (given as its nodes, ``walk(class)``) bound to instances of one class: every
    ``self.attr = C(...)`` in its methods that constructs a class names the same one (other assignments,
    ``self.attr = None``, are ignored)."""
    seen: dict[str, set[str]] = {}
    for node in cls_nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            cls = resolve.cls(node.value)
            for t in _targets(node):
                if cls and _is_self_attribute(t):
                    seen.setdefault(t.attr, set()).add(cls)
    return {attr: next(iter(classes)) for attr, classes in seen.items() if len(classes) == 1}


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def _is_self_attribute(target: ast.AST) -> TypeGuard[ast.Attribute]:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def extract_usage(source: str, module: str = "", is_package: bool = False,
                  known: Collection[str] | None = None) -> dict[str, Counter[str]]:
    """Per class (dotted name), the methods called on its instances in one file, with call-site counts.

    ``module`` is the file's dotted module name (for relative imports and its own classes); ``known`` restricts
    classes to those names. A file that does not parse is an :class:`~asc.errors.InputError`."""
    with gc_paused():  # a large file's tree, among the caller's objects (probes.pyast)
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError) as err:
            raise InputError(f"{module or 'the source'} does not parse as Python ({err})") from None
        return _usage(tree, module, is_package, known)


def _usage(tree: ast.Module, module: str, is_package: bool, known: Collection[str] | None) -> dict[str, Counter[str]]:
    nodes = walk(tree)  # once, in ast.walk's order, for the imports, the scopes and the classes
    resolve = _Resolver(tree, module, is_package, known, nodes)
    scopes = [tree.body] + [n.body for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    out: dict[str, Counter[str]] = {}
    for body in scopes:
        bound: dict[str, str | None] = {}
        for _, kind, name, value in _events(body, resolve):
            if kind == "bind":
                bound[name] = value
            elif kind == "direct":
                out.setdefault(name, Counter())[str(value)] += 1
            elif bound.get(name):
                out.setdefault(str(bound[name]), Counter())[str(value)] += 1
    constructed = sorted(n.lineno for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
                         and any(map(_is_self_attribute, _targets(n))) and resolve.cls(n.value))  # self.x = C(...)
    for cls_node in (n for n in nodes if isinstance(n, ast.ClassDef)):
        j = bisect.bisect_left(constructed, cls_node.lineno)
        if j == len(constructed) or constructed[j] > (cls_node.end_lineno or cls_node.lineno):
            continue  # no self.x = C(...) among its lines: _self_attributes would find none (and the walk is long)
        cls_nodes = walk(cls_node)
        attrs = _self_attributes(cls_nodes, resolve)
        for node in cls_nodes if attrs else ():
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and not node.func.attr.startswith("_") and isinstance(node.func.value, ast.Attribute)
                    and isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "self"
                    and node.func.value.attr in attrs):
                out.setdefault(attrs[node.func.value.attr], Counter())[node.func.attr] += 1
    return out


def source_files(root: str | Path, include_tests: bool = False) -> list[tuple[Path, str, bool]]:
    """``(path, module, is_package)`` of the Python files under ``root``: a package folder (with ``__init__.py``)
    names its modules after itself, any other folder (the standard library's) holds top-level modules. IDLE,
    lib2to3, turtledemo and installed packages are left out, and test folders unless ``include_tests``."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root} is not a folder of Python sources")
    prefix = [root.name] if (root / "__init__.py").exists() else []
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        skip = _SKIP_DIRS - (_TEST_DIRS if include_tests else set())
        if skip & set(rel.parts[:-1]) or rel.stem == "__main__":
            continue
        parts = [*prefix, *rel.parent.parts] + ([] if rel.stem == "__init__" else [rel.stem])
        if parts:
            out.append((path, ".".join(parts), rel.stem == "__init__"))
    return out


def scan_usage(roots: Sequence[str | Path] | None = None, known: Collection[str] | None = None,
               include_tests: bool = True) -> UsageIndex:
    """Usage over every file under ``roots`` (the standard library's source folder when None). Test suites are
    read too unless ``include_tests`` is False: they are client code of the classes, as the paper's GitHub programs
    are (the standard library's ``test`` package nearly triples the classes with two or more methods used)."""
    folders = [Path(sysconfig.get_paths()["stdlib"])] if roots is None else [Path(r) for r in roots]
    with gc_paused():  # one pause for all the files (probes.pyast)
        return _scan(folders, known, include_tests)


def _scan(folders: list[Path], known: Collection[str] | None, include_tests: bool) -> UsageIndex:
    methods: dict[str, Counter[str]] = {}
    failed, files = [], 0
    for folder in folders:
        for path, module, is_package in source_files(folder, include_tests):
            try:
                found = extract_usage(path.read_text(encoding="utf-8"), module, is_package, known)
            except (InputError, OSError, UnicodeDecodeError, RecursionError) as err:
                failed.append(f"{path}: {type(err).__name__}")
                continue
            files += 1
            for cls, counts in found.items():
                methods.setdefault(cls, Counter()).update(counts)
    return UsageIndex({c: dict(sorted(m.items())) for c, m in sorted(methods.items())}, files, tuple(failed))


def usage_similarity(a: Iterable[str], b: Iterable[str]) -> float:
    """The Jaccard index of two method sets (0 when both are empty)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def _bin(value: float) -> int:
    return 0 if value <= USAGE_BINS[0] else next(i for i, edge in enumerate(USAGE_BINS) if value <= edge)


def sample_usage_pairs(sets: dict[str, frozenset[str]], per_bin: int = 200,
                       seed: int = 0) -> list[tuple[str, str, float]]:
    """Every pair of classes, grouped into the :data:`USAGE_BINS` by similarity, up to ``per_bin`` drawn from each
    (all where fewer), seeded; ``(a, b, similarity)`` with ``a < b``."""
    names = sorted(sets)
    bins: dict[int, list[tuple[str, str, float]]] = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sim = usage_similarity(sets[a], sets[b])
            bins.setdefault(_bin(sim), []).append((a, b, sim))
    rng = random.Random(seed)
    out: list[tuple[str, str, float]] = []
    for key in sorted(bins):
        pairs = bins[key]
        out += sorted(pairs if len(pairs) <= per_bin else rng.sample(pairs, per_bin))
    return out


def usage_items(index: UsageIndex, catalog: ClassCatalog, min_methods: int = 2, per_bin: int = 200, seed: int = 0,
                test_share: float = 0.1) -> list[ScoredPairItem]:
    """U items: classes of ``catalog`` with documentation and ``min_methods`` or more used methods (aliases merged
    into canonical names), sampled pairs with their docs and usage similarity."""
    lookup = catalog.lookup()
    merged: dict[str, set[str]] = {}
    for name, methods in index.methods.items():
        if name in lookup and lookup[name].doc:
            merged.setdefault(lookup[name].name, set()).update(methods)
    sets = {c: frozenset(m) for c, m in merged.items() if len(m) >= min_methods}
    docs = {c.name: c.doc for c in catalog.classes}
    items = []
    for a, b, sim in sample_usage_pairs(sets, per_bin, seed):
        ident = f"U/{a}|{b}"
        items.append(ScoredPairItem("U", ident, split_of(ident, test_share), docs[a], docs[b], sim, a, b,
                                    {"shared": sorted(sets[a] & sets[b])}))
    return items
