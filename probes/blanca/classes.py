"""Class documentation and the class hierarchy for BLANCA's H task (and the class texts of U), from the Python
standard library and, when asked, from an installed package.

- :func:`scan_classes` imports modules and collects their public classes: the names a module exports (its
  ``__all__``, or its names without a leading underscore), classes only, each under one canonical dotted name
  (``__module__.__qualname__`` where that module is public, else the shortest public path it was found under;
  the others are kept as ``aliases``), as the paper aliases classes to their runtime name. The documentation is
  ``inspect.getdoc`` of the class when the class defines its own docstring; an inherited docstring is not used
  (it would make a subclass look like its base by construction), so such classes have ``doc == ""``, as have
  classes whose docstring Python generated: a one-line bare signature such as ``BinOp(expr left, operator op,
  expr right)`` (``ast`` nodes, named tuples, dataclasses) or enum's ``"An enumeration."`` (:data:`GENERATED_DOCS`).
- Importing runs a module's top-level code. Standard-library modules are imported with warnings silenced and
  their output swallowed, behind a deny list (:data:`DENIED`: ``antigravity`` opens a browser, ``this`` prints,
  ``idlelib``/``tkinter``/``turtle`` want a display, ``test`` and ``lib2to3`` are large or write caches,
  ``encodings`` holds a hundred near-identical codec classes) and a ``try``/``except`` that records and skips
  any module that fails. An installed package is imported only when the caller names it in ``packages`` *and*
  passes ``import_packages=True`` (what a ``--package NAME`` option should map to); nothing is downloaded.
- :func:`class_distance` is the tree distance of the paper's H task: the length of the shortest path between two
  classes through a common ancestor, ``min over common ancestors C of depth(a, C) + depth(b, C)``, where
  ``depth(x, C)`` counts base-class edges from ``x`` up to ``C`` and ``object`` is not an ancestor (the paper
  adds no edge to ``object`` either). A class is at distance 1 from its direct base; two classes with no common
  ancestor but ``object`` have no distance (None) and form no H pair. Departures: the paper takes all-pairs
  shortest paths in the *undirected* graph of one module, so two bases of one subclass (co-parents of a mixin)
  are linked through it; we link classes through ancestors only, and across the whole scan (a standard-library
  exception is near ``Exception`` wherever it is defined). Virtual subclasses (``ABC.register``) are not edges.
- :func:`hierarchy_pairs` computes the distance of every pair of documented classes up to ``max_distance``
  (the paper keeps 1 to 10); :func:`sample_hierarchy_pairs` draws, with a seeded ``random.Random``, up to
  ``per_distance`` pairs at each distance (all of them where there are fewer), so that the sample is balanced
  over distances instead of dominated by distances 3-4 as all pairs are; :func:`hierarchy_items` turns them into
  H items (train/test by a stable hash of the pair, 90/10 as in the paper).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import random
import re
import site
import sys
import sysconfig
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from asc.errors import InputError
from probes.blanca.items import ScoredPairItem, split_of

__all__ = ["DENIED", "GENERATED_DOCS", "ClassCatalog", "ClassDoc", "ancestor_depths", "class_distance", "hierarchy_items",
           "hierarchy_pairs", "import_modules", "package_modules", "sample_hierarchy_pairs", "scan_classes",
           "stdlib_modules"]

DENIED = ("antigravity", "this", "idlelib", "turtledemo", "tkinter", "turtle", "test", "lib2to3", "distutils",
          "encodings", "pydoc_data", "readline", "rlcompleter", "xxlimited", "xxsubtype", "msilib", "winreg",
          "winsound", "msvcrt")
GENERATED_DOCS = ("An enumeration.",)  # what enum gives a member-less docstring-less Enum subclass in 3.11
_SKIP_PARTS = {"test", "tests", "idle_test", "__main__"}


@dataclass(frozen=True)
class ClassDoc:
    """A public class: canonical dotted ``name``, own documentation (``""`` if none), the class, other names."""

    name: str
    doc: str
    cls: type
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClassCatalog:
    """The classes of a scan, and the modules it imported or skipped (``"name: why"``)."""

    classes: tuple[ClassDoc, ...]
    modules: tuple[str, ...]
    skipped: tuple[str, ...]

    def documented(self) -> list[ClassDoc]:
        """The classes with their own documentation, by name."""
        return [c for c in self.classes if c.doc]

    def lookup(self) -> dict[str, ClassDoc]:
        """Every canonical name and alias to its class."""
        return {name: c for c in self.classes for name in (c.name, *c.aliases)}

    def of_packages(self, packages: Collection[str]) -> ClassCatalog:
        """The classes defined in ``packages`` (the top-level name of the class's ``__module__``): a named package's
        own classes, without the standard library's it re-exports or subclasses."""
        own = tuple(c for c in self.classes if str(c.cls.__module__).split(".")[0] in packages)
        return ClassCatalog(own, self.modules, self.skipped)


def _public(dotted: str) -> bool:
    return all(part and not part.startswith("_") for part in dotted.split("."))


def _walk(top: str, folders: Sequence[str]) -> list[str]:
    """Public submodule names of package ``top`` from its folders, read from the file system (nothing imported)."""
    out = []
    for folder in folders:
        root = Path(folder)
        for path in sorted(root.rglob("*")):
            if path.suffix not in (".py", ".so", ".pyd") or not (path.parent / "__init__.py").exists():
                continue
            parts = [*path.relative_to(root).parent.parts, path.name.split(".")[0]]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and not _SKIP_PARTS & set(parts) and _public(".".join(parts)):
                out.append(".".join([top, *parts]))
    return out


def stdlib_modules(deny: Sequence[str] = DENIED) -> list[str]:
    """The public standard-library modules and submodules of this Python, minus ``deny`` (and their submodules)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    names = {n for n in sys.stdlib_module_names if _public(n)}
    for top in sorted(names):
        if (root / top / "__init__.py").exists():
            names.update(_walk(top, [str(root / top)]))
    return sorted(n for n in names if n.split(".")[0] not in deny)


def _installed(location: str) -> bool:
    """Whether ``location`` lies in this environment's installed packages or standard library (never the working
    folder, which ``python -m`` puts first on ``sys.path``)."""
    if not location:
        return False
    keys = ("purelib", "platlib", "stdlib", "platstdlib")
    roots = {sysconfig.get_paths()[k] for k in keys} | set(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        roots.add(site.getusersitepackages())
    where = Path(location).resolve()
    return any(where.is_relative_to(Path(r).resolve()) for r in roots if r)


def package_modules(package: str) -> list[str]:
    """The public modules of an installed package, found on disk without importing it."""
    if "." in package or not package.isidentifier():
        raise InputError(f"package {package!r}: give the top-level import name of an installed package (e.g. sqlalchemy)")
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise InputError(f"no installed package is importable as {package!r}; install it in this environment first")
    outside = [loc for loc in (list(spec.submodule_search_locations or []) or [spec.origin or ""]) if not _installed(loc)]
    if outside:
        raise InputError(f"{package!r} is found at {outside[0]}, not among the installed packages (a file of the "
                         "working folder or a corpus shadows it, and importing it would run it): install the package "
                         "(pip install), or run from another folder")
    return [package, *_walk(package, list(spec.submodule_search_locations or []))]


def import_modules(names: Sequence[str]) -> tuple[dict[str, ModuleType], list[str]]:
    """Import each module with warnings off and output swallowed; failures are skipped as ``"name: why"``."""
    modules, skipped = {}, []
    for name in names:
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                modules[name] = importlib.import_module(name)
        except (Exception, SystemExit) as err:  # a module that cannot be imported here is left out
            skipped.append(f"{name}: {type(err).__name__}: {err}".splitlines()[0][:200])
    return modules, skipped


def _own_doc(cls: type) -> str:
    """The class's own docstring (``inspect.getdoc``), or "" when it has none or one Python generated."""
    doc = cls.__dict__.get("__doc__")
    text = (inspect.getdoc(cls) or "") if isinstance(doc, str) and doc.strip() else ""
    signature = "\n" not in text and re.fullmatch(rf"{re.escape(cls.__name__)}(\(.*\))?", text)
    return "" if text in GENERATED_DOCS or signature else text


def scan_classes(modules: Sequence[str] | None = None, packages: Sequence[str] = (),
                 import_packages: bool = False) -> ClassCatalog:
    """Public classes of ``modules`` (all of :func:`stdlib_modules` when None) and of ``packages``.

    Importing a package runs its code, so ``packages`` needs ``import_packages=True``; the classes of a package
    are those defined in it (or in the standard library), not what it re-exports from other packages."""
    if packages and not import_packages:
        raise InputError(f"scanning {', '.join(packages)} imports its modules (their top-level code runs); "
                         "pass import_packages=True to allow it")
    names = list(stdlib_modules() if modules is None else modules)
    origins = set(sys.stdlib_module_names)
    for package in packages:
        names += package_modules(package)
        origins.add(package)
    imported, skipped = import_modules(list(dict.fromkeys(names)))
    found: dict[int, tuple[type, list[str]]] = {}
    for modname, module in imported.items():
        exported = getattr(module, "__all__", None)
        keys = exported if isinstance(exported, (list, tuple)) else [k for k in vars(module) if not k.startswith("_")]
        for key in keys:
            obj = getattr(module, str(key), None)
            if (isinstance(obj, type) and not str(key).startswith("_")
                    and str(getattr(obj, "__module__", "")).split(".")[0] in origins):
                found.setdefault(id(obj), (obj, []))[1].append(f"{modname}.{key}")
    classes = []
    for cls, paths in found.values():
        own = f"{cls.__module__}.{cls.__qualname__}"
        name = own if _public(own) and "<" not in own else min(paths, key=lambda p: (len(p), p))
        aliases = tuple(sorted(set(paths) - {name}))
        classes.append(ClassDoc(name, _own_doc(cls), cls, aliases))
    classes.sort(key=lambda c: c.name)
    return ClassCatalog(tuple(classes), tuple(imported), tuple(skipped))


def ancestor_depths(cls: type) -> dict[type, int]:
    """``cls`` (depth 0) and each of its ancestors but ``object``, with the fewest base-class edges up to it."""
    depths = {cls: 0}
    frontier = [cls]
    while frontier:
        nxt = []
        for c in frontier:
            for base in c.__bases__:
                if base is not object and base not in depths:
                    depths[base] = depths[c] + 1
                    nxt.append(base)
        frontier = nxt
    return depths


def class_distance(a: type, b: type) -> int | None:
    """Path length between two classes through their nearest common ancestor (``object`` excluded); 0 for the
    same class, None when only ``object`` is shared."""
    da, db = ancestor_depths(a), ancestor_depths(b)
    common = da.keys() & db.keys()
    return min(da[c] + db[c] for c in common) if common else None


def hierarchy_pairs(classes: Sequence[ClassDoc], max_distance: int = 10) -> dict[int, list[tuple[str, str]]]:
    """All pairs of distinct classes (names in sorted order) at each distance 1..``max_distance``."""
    index: dict[type, list[tuple[int, int]]] = {}
    for i, c in enumerate(classes):
        for ancestor, depth in ancestor_depths(c.cls).items():
            index.setdefault(ancestor, []).append((i, depth))
    best: dict[tuple[int, int], int] = {}
    for members in index.values():
        for x, (i, di) in enumerate(members):
            for j, dj in members[x + 1:]:
                key = (min(i, j), max(i, j))
                if i != j and di + dj <= max_distance and di + dj < best.get(key, max_distance + 1):
                    best[key] = di + dj
    out: dict[int, list[tuple[str, str]]] = {}
    for (i, j), d in best.items():
        a, b = sorted((classes[i].name, classes[j].name))
        out.setdefault(d, []).append((a, b))
    return {d: sorted(out[d]) for d in sorted(out)}


def sample_hierarchy_pairs(pairs: dict[int, list[tuple[str, str]]], per_distance: int = 200,
                           seed: int = 0) -> list[tuple[str, str, int]]:
    """Up to ``per_distance`` pairs drawn at each distance (all where fewer), seeded; ``(a, b, distance)``."""
    rng = random.Random(seed)
    out = []
    for d in sorted(pairs):
        chosen = pairs[d] if len(pairs[d]) <= per_distance else rng.sample(pairs[d], per_distance)
        out += [(a, b, d) for a, b in sorted(chosen)]
    return out


def hierarchy_items(catalog: ClassCatalog, per_distance: int = 200, max_distance: int = 10, seed: int = 0,
                    test_share: float = 0.1) -> list[ScoredPairItem]:
    """H items from the documented classes of a scan: balanced over distances, two class docs and the distance."""
    documented = catalog.documented()
    docs = {c.name: c.doc for c in documented}
    sampled = sample_hierarchy_pairs(hierarchy_pairs(documented, max_distance), per_distance, seed)
    items = []
    for a, b, d in sampled:
        ident = f"H/{a}|{b}"
        items.append(ScoredPairItem("H", ident, split_of(ident, test_share), docs[a], docs[b], float(d), a, b))
    return items
