"""Class documentation and MRO tree distances (probes.blanca.classes): distances on a small hand-made class tree,
balanced seeded H pairs, and a light scan of two standard-library modules."""

import pytest

from asc.errors import InputError
from probes.blanca.classes import (
    DENIED,
    ClassCatalog,
    ClassDoc,
    ancestor_depths,
    class_distance,
    hierarchy_items,
    hierarchy_pairs,
    sample_hierarchy_pairs,
    scan_classes,
    stdlib_modules,
)


#        Base              Other     (object is not a node)
#       /    \            /     \
#     Mid    Side        /     Leaf2
#     |         \       /
#    Leaf       Mixed(Side, Other)
#     |
#   Deep
class Base:
    """The root of the test tree."""


class Mid(Base):
    """A middle class."""


class Side(Base):
    """A sibling of Mid."""


class Leaf(Mid):
    """A leaf under Mid."""


class Deep(Leaf):
    """Three below Base."""


class Other:
    """An unrelated root."""


class Mixed(Side, Other):
    """Two bases."""


class Leaf2(Other):
    pass  # no docstring of its own


TREE = [Base, Mid, Side, Leaf, Deep, Other, Mixed, Leaf2]


def test_distance_up_the_tree():
    assert class_distance(Mid, Base) == 1 and class_distance(Base, Mid) == 1
    assert class_distance(Leaf, Base) == 2
    assert class_distance(Deep, Base) == 3
    assert class_distance(Deep, Deep) == 0
    assert ancestor_depths(Deep) == {Deep: 0, Leaf: 1, Mid: 2, Base: 3}  # object is no ancestor


def test_distance_through_the_nearest_common_ancestor():
    assert class_distance(Mid, Side) == 2  # Mid -> Base <- Side
    assert class_distance(Leaf, Side) == 3
    assert class_distance(Deep, Mixed) == 5  # Deep -> Leaf -> Mid -> Base <- Side <- Mixed
    assert class_distance(Mixed, Leaf2) == 2  # through Other, the nearer of Mixed's two roots
    assert class_distance(Leaf2, Base) is None  # only object is shared
    assert class_distance(Leaf2, Mid) is None


def _docs(classes) -> list[ClassDoc]:
    return [ClassDoc(f"t.{c.__name__}", c.__doc__ or "", c) for c in classes]


def test_hierarchy_pairs_by_distance_on_the_tree():
    pairs = hierarchy_pairs(_docs(TREE), max_distance=10)
    assert pairs[1] == sorted([("t.Base", "t.Mid"), ("t.Base", "t.Side"), ("t.Leaf", "t.Mid"), ("t.Deep", "t.Leaf"),
                               ("t.Mixed", "t.Side"), ("t.Mixed", "t.Other"), ("t.Leaf2", "t.Other")])
    assert ("t.Deep", "t.Mixed") in pairs[5] and ("t.Leaf2", "t.Mixed") in pairs[2]
    assert not any("t.Leaf2" in p and "t.Base" in p for d in pairs for p in pairs[d])
    assert max(hierarchy_pairs(_docs(TREE), max_distance=3)) == 3


def test_sampling_is_balanced_and_seeded():
    pairs = {1: [(f"a{i}", f"b{i}") for i in range(50)], 2: [(f"c{i}", f"d{i}") for i in range(5)]}
    sample = sample_hierarchy_pairs(pairs, per_distance=10, seed=1)
    assert [d for _, _, d in sample].count(1) == 10 and [d for _, _, d in sample].count(2) == 5  # all of a rare one
    assert sample == sample_hierarchy_pairs(pairs, per_distance=10, seed=1)
    assert sample != sample_hierarchy_pairs(pairs, per_distance=10, seed=2)


def test_hierarchy_items_use_documented_classes_only():
    catalog = ClassCatalog(tuple(_docs(TREE)), ("t",), ())
    items = hierarchy_items(catalog, per_distance=100, seed=0)
    names = {n for it in items for n in (it.name_a, it.name_b)}
    assert "t.Leaf2" not in names and "t.Deep" in names  # Leaf2 has no docstring of its own
    deep_mixed = next(it for it in items if {it.name_a, it.name_b} == {"t.Deep", "t.Mixed"})
    assert deep_mixed.target == 5 and deep_mixed.task == "H"
    assert {deep_mixed.text_a, deep_mixed.text_b} == {"Three below Base.", "Two bases."}


def test_generated_docstrings_are_not_documentation():
    lookup = scan_classes(["ast", "pstats"]).lookup()
    assert lookup["ast.BinOp"].doc == ""  # "BinOp(expr left, operator op, expr right)": a generated signature
    assert lookup["ast.Add"].doc == ""
    assert lookup["pstats.SortKey"].doc == ""  # enum's "An enumeration."
    assert lookup["ast.NodeVisitor"].doc.startswith("A node visitor base class")
    assert lookup["pstats.Stats"].doc.startswith("This class is used for creating reports")


def test_light_stdlib_scan_finds_ordered_dict_under_dict():
    catalog = scan_classes(["collections", "builtins"])
    lookup = catalog.lookup()
    od, d = lookup["collections.OrderedDict"], lookup["builtins.dict"]
    assert od.doc and d.doc and "builtins.dict" == d.name
    assert class_distance(od.cls, d.cls) == 1
    assert class_distance(lookup["collections.Counter"].cls, od.cls) == 2  # Counter -> dict <- OrderedDict
    assert "collections.abc.Mapping" not in lookup  # a module's exports only: collections.abc was not scanned
    assert catalog.modules == ("collections", "builtins") and not catalog.skipped


def test_deny_list_and_failing_modules_are_skipped():
    names = stdlib_modules()
    assert "collections.abc" in names and "json.decoder" in names
    assert not any(n.split(".")[0] in DENIED for n in names)
    assert not any(part.startswith("_") for n in names for part in n.split("."))
    catalog = scan_classes(["collections", "no_such_module_here"])
    assert catalog.modules == ("collections",)
    assert catalog.skipped[0].startswith("no_such_module_here: ModuleNotFoundError")


def test_packages_are_imported_only_when_allowed():
    with pytest.raises(InputError, match="pass import_packages=True"):
        scan_classes([], packages=["numpy"])
    with pytest.raises(InputError, match="no installed package is importable as 'no_such_pkg_xyz'"):
        scan_classes([], packages=["no_such_pkg_xyz"], import_packages=True)
